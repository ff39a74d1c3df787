"""The papers' algorithms as agents, one subpackage per paper, registered in one place.

Each line below names an agent and its class by import path (imported when the agent is first
made); ``clustergym list`` and ``make_agent`` read this registry.  A new agent is its class in
``baselines/<paper>/`` plus one line here.

* :mod:`.greedy` (cross-paper) -- work-conserving First-Fit, Best-Fit, Random-Fit and their admit-all
  versions for loss systems; :mod:`.random_policy` -- the masked random policy;
* :mod:`.rms` -- RMS (Psychas & Ghaderi 2018, Algorithm 1), its variants and RMS+JSQ (Algorithm 2),
  and MaxWeight Refresh / Stop (reconstructed from §I-A; docs/papers/rms.md#maxweight);
* :mod:`.bfjs` -- BF-J, BF-S, BF-J/S, FIFO-FF in slotted time, and VQS / VQS-BF (Psychas & Ghaderi,
  "High-throughput bin packing", ToN 2021);
* :mod:`.autoscale` -- DRA and its variants, the static GPA/LP reservations, power-of-d and trunk
  reservation (Psychas & Ghaderi, "A theory of auto-scaling");
* :mod:`.lotes` -- LoTES, its greedy dispatch and Tetris (Tran et al., J. Scheduling 2018);
* :mod:`.mris` -- MRIS, the priority queues PQ-<key> and CA-PQ, Tetris and BF-EXEC (Fan & Liang,
  ICPP 2024).

Each paper's page under ``docs/papers/`` lists its agents with the paper sections they implement, and
every choice the paper leaves open.
"""

from __future__ import annotations

from clustergym.agent_api import register_agent

_B = "clustergym.baselines"

# cross-paper
register_agent("first-fit", f"{_B}.greedy:FirstFit")
register_agent("best-fit", f"{_B}.greedy:BestFit")
register_agent("random-fit", f"{_B}.greedy:RandomFit")
register_agent("best-fit-admit", f"{_B}.greedy:BestFitAdmit")
register_agent("first-fit-admit", f"{_B}.greedy:FirstFitAdmit")
register_agent("random", f"{_B}.random_policy:RandomMasked")

# RMS paper
register_agent("rms", f"{_B}.rms.rms:RMS")
register_agent("rms-less-wasteful", f"{_B}.rms.rms:RMSLessWasteful")
register_agent("rms-rf", f"{_B}.rms.rms:RMSRF")
register_agent("rms-bf", f"{_B}.rms.rms:RMSBF")
register_agent("rms-ad", f"{_B}.rms.rms:RMSAD")
register_agent("rms-rf-ad", f"{_B}.rms.rms:RMSRFAD")
register_agent("rms-bf-ad", f"{_B}.rms.rms:RMSBFAD")
register_agent("rms-rf-ad-plus", f"{_B}.rms.rms:RMSRFADPlus")
register_agent("rms-jsq", f"{_B}.rms.rms:RMSJSQ")
register_agent("mwr", f"{_B}.rms.maxweight:MaxWeightRefresh")
register_agent("mws", f"{_B}.rms.maxweight:MaxWeightStop")

# BF-J/S paper
register_agent("bf-j", f"{_B}.bfjs.bfjs:BFJ")
register_agent("bf-s", f"{_B}.bfjs.bfjs:BFS")
register_agent("bf-js", f"{_B}.bfjs.bfjs:BFJS")
register_agent("fifo-ff", f"{_B}.bfjs.bfjs:FIFOFF")
register_agent("vqs", f"{_B}.bfjs.vqs:VQS")
register_agent("vqs-bf", f"{_B}.bfjs.vqs:VQSBF")

# auto-scaling paper
register_agent("dra", f"{_B}.autoscale.dra:DRA")
register_agent("dra-preemption", f"{_B}.autoscale.dra:DRAPreemption")
register_agent("dra-no-migration", f"{_B}.autoscale.dra:DRANoMigration")
register_agent("gpa-static", f"{_B}.autoscale.gpa:GPAStatic")
register_agent("lp-static", f"{_B}.autoscale.gpa:LPStatic")
register_agent("power-of-d", f"{_B}.autoscale.admission:PowerOfD")
register_agent("trunk-reservation", f"{_B}.autoscale.admission:TrunkReservation")

# LoTES paper
register_agent("lotes", f"{_B}.lotes.lotes:LoTES")
register_agent("lotes-greedy", f"{_B}.lotes.lotes_greedy:LotesGreedy")
register_agent("tetris", f"{_B}.lotes.tetris:TetrisTran")

# MRIS paper
register_agent("mris", f"{_B}.mris.mris:MRIS")
register_agent("mris-wsvf", f"{_B}.mris.mris:MRISWSVF")
register_agent("mris-greedy", f"{_B}.mris.mris:MRISGreedy")
register_agent("pq", f"{_B}.mris.priority_queue:PriorityQueue")
register_agent("pq-svf", f"{_B}.mris.priority_queue:PQ_SVF")
register_agent("pq-wsvf", f"{_B}.mris.priority_queue:PQ_WSVF")
register_agent("pq-sjf", f"{_B}.mris.priority_queue:PQ_SJF")
register_agent("pq-wsjf", f"{_B}.mris.priority_queue:PQ_WSJF")
register_agent("pq-sdf", f"{_B}.mris.priority_queue:PQ_SDF")
register_agent("pq-wsdf", f"{_B}.mris.priority_queue:PQ_WSDF")
register_agent("pq-erf", f"{_B}.mris.priority_queue:PQ_ERF")
register_agent("ca-pq", f"{_B}.mris.priority_queue:CollectAllPQ")
register_agent("tetris-mris", f"{_B}.mris.tetris:TetrisMRIS")
register_agent("bf-exec", f"{_B}.mris.bf_exec:BFExec")
