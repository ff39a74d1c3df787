"""RMS paper (Psychas & Ghaderi, IEEE/ACM ToN 2018): RMS and its variants, RMS+JSQ, MaxWeight."""
