"""MRIS paper (Fan et al., ICPP 2024): MRIS, PQ-<key>, CA-PQ, Tetris, BF-EXEC."""
