"""LoTES paper (Tran et al., J. Scheduling 2018): LoTES, its greedy dispatch, Tetris."""
