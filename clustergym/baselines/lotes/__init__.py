"""LoTES paper (Tran, Araujo & Beck, J. Scheduling 2018): LoTES, its greedy dispatch, Tetris."""
