"""Auto-scaling paper (Psychas & Ghaderi, Stochastic Systems): DRA, static GPA/LP reservations, admission rules."""
