"""BF-J/S paper (Psychas & Ghaderi, high-throughput bin packing): BF-J, BF-S, BF-J/S, FIFO-FF, VQS, VQS-BF."""
