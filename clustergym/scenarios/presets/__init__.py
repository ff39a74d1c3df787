"""Every built-in preset, registered in one place (as Gymnasium registers its environments).

One module per paper family holds the builders; each line below names a preset, its builder by
import path (imported when the preset is first built or described) and a one-line description.
The Gymnasium ids ``clustergym/<name>-v0`` and ``clustergym list`` follow this order.

Papers (one name per paper, the same in every layer: ``scenarios/presets/<paper>.py`` (the paper's
trace setup included),
``baselines/<paper>/``, ``theory/<paper>.py``, ``reproduce/<paper>.py``):

* ``rms`` -- Psychas & Ghaderi, "Randomized algorithms for scheduling multi-resource jobs in the
  cloud", IEEE/ACM Trans. Networking 2018;
* ``bfjs`` -- Psychas & Ghaderi, "High-throughput bin packing: scheduling jobs with random resource
  demands in clusters" (BF-J/S and VQS), IEEE/ACM Trans. Networking 2021;
* ``autoscale`` -- Psychas & Ghaderi, "A theory of auto-scaling for resource reservation in cloud
  services", Stochastic Systems 2022;
* ``lotes`` -- Tran, Padmanabhan, Zhang, Li, Down & Beck, "Multi-stage resource-aware scheduling for data centers with
  heterogeneous servers", J. Scheduling 2018;
* ``mris`` -- Fan & Liang, "Online non-preemptive multi-resource scheduling for weighted completion
  time on multiple machines", ICPP 2024.

What each paper leaves open, and how clustergym resolves it: ``docs/papers/<paper>.md``.
"""

from __future__ import annotations

from clustergym.scenarios.registry import register_preset

_P = "clustergym.scenarios.presets"

# the RMS paper (§VII-A synthetic EC2 setting; §III and Fig. 1b, the Best-Fit trap)
register_preset(
    "ec2", f"{_P}.rms:ec2", "RMS Table I: 3 EC2 VM types on L servers at traffic intensity zeta (RMS §VII-A)"
)
register_preset(
    "bf-trap",
    f"{_P}.rms:bf_trap",
    "RMS Fig. 1b: sizes 2 and 5 on capacity-10 servers, where Best-Fit is unstable (RMS §III)",
)
# the BF-J/S paper (§VII-A synthetic simulations)
register_preset(
    "two-sizes", f"{_P}.bfjs:two_sizes", "BF-J/S E1/E2: one server, two job sizes, slotted time (BF-J/S §VII-A)"
)
register_preset(
    "uniform-sizes",
    f"{_P}.bfjs:uniform_sizes",
    "BF-J/S E3: uniform sizes on L unit servers, slotted time (BF-J/S §VII-A)",
)
# the auto-scaling paper (Sec. 3 static optimization, Sec. 7.1 synthetic traffic)
register_preset(
    "autoscale-4vm",
    f"{_P}.autoscale:autoscale_4vm",
    "Auto-scaling 4-VM instance: admit or reject with rewards (auto-scaling Sec. 7.1)",
)
register_preset(
    "autoscale-intro",
    f"{_P}.autoscale:autoscale_intro",
    "Auto-scaling intro example: (0.6,0.6) reward 4 vs (0.7,0.1)+(0.1,0.7) reward 3+3 (auto-scaling Sec. 1)",
)
register_preset(
    "autoscale-example1",
    f"{_P}.autoscale:autoscale_example1",
    "Auto-scaling Example 1: server (5,4), types (2,1) reward 10, (1,2) reward 1 (auto-scaling Sec. 3.1)",
)
register_preset(
    "autoscale-worst-case",
    f"{_P}.autoscale:autoscale_worst_case",
    "Auto-scaling worst-case family W_n: greedy/LP ratio 1-(1-1/n)^n (cf. auto-scaling Prop. 3)",
)
# LoTES (Sec. 5.3 Google classes and machine configurations, Sec. 5.4 generated workloads)
register_preset(
    "lotes-table",
    f"{_P}.lotes:lotes_table",
    "LoTES Tables 1-2: 10 machine configurations x 4 Google classes at load x lambda* (LoTES Sec. 5.3)",
)
register_preset(
    "lotes-phi",
    f"{_P}.lotes:lotes_phi",
    "LoTES generated classes with requirement spread Phi at 0.97 lambda* (LoTES Sec. 5.4.2)",
)
register_preset(
    "lotes-omega",
    f"{_P}.lotes:lotes_omega",
    "LoTES machine-dependent rates with spread Omega at 0.90/0.95 lambda* (LoTES Sec. 5.4.3)",
)
# MRIS (Sec. 4 Lemma 4.1, Sec. 7 trace-driven evaluation)
register_preset(
    "mris-lemma41",
    f"{_P}.mris:mris_lemma41",
    "MRIS Lemma 4.1 adversarial instance: PQ/Tetris/BF-EXEC 4224, MRIS 256, OPT 161.5 (MRIS Sec. 4)",
)
register_preset(
    "mris-patience",
    f"{_P}.mris:mris_patience",
    "MRIS Figure 7 'patience' instance: one long blocking job, 2499 small jobs just after (MRIS Sec. 7.5.4)",
)
register_preset(
    "mris-poisson",
    f"{_P}.mris:mris_poisson",
    "MRIS model, stochastic: Poisson arrivals, 2 weight classes, log-normal processing times, M machines "
    "(MRIS Sec. 3, Sec. 7)",
)
register_preset(
    "mris-alibaba",
    f"{_P}.mris:mris_alibaba",
    "MRIS trace-driven weighted scenario: Alibaba GPU v2023 pods, weight from QoS (Azure substitute)",
    needs_traces=True,
)
# the papers' trace setups, each in its paper's module
register_preset(
    "rms-google",
    f"{_P}.rms:rms_google",
    "RMS Google trace: non-production completed tasks, 10 power-of-1/2 types, 1000 unit servers (RMS §VII-B)",
    needs_traces=True,
)
register_preset(
    "bfjs-google",
    f"{_P}.bfjs:bfjs_google",
    "BF-J/S Google trace: completed tasks, demand max(cpu, mem), 100 ms slots, 1000 unit servers (BF-J/S §VII-B)",
    needs_traces=True,
)
register_preset(
    "lotes-google",
    f"{_P}.lotes:lotes_google",
    "LoTES Google trace: all attempts, Table-1 machine configurations, k-means classes (LoTES Sec. 5.3)",
    needs_traces=True,
)
register_preset(
    "autoscale-google",
    f"{_P}.autoscale:autoscale_google",
    "Auto-scaling Google trace: loss system, reward size x 1/3/9 by priority (auto-scaling Sec. 7.2)",
    needs_traces=True,
)
# real traces outside the papers
register_preset(
    "alibaba-gpu",
    f"{_P}.traces:alibaba_gpu",
    "Alibaba GPU v2023 pods (CPU, memory, GPU) on 1,523 heterogeneous nodes",
    needs_traces=True,
)
register_preset(
    "azure-vms",
    f"{_P}.traces:azure_vms",
    "Azure V1 VMs (2017): a random thinned day of the trace per seed, flavours as types, on L hosts",
    needs_traces=True,
)
register_preset(
    "google-tasks",
    f"{_P}.traces:google_tasks",
    "Google 2011 tasks (CPU, memory): a random thinned 4-hour window of the trace per seed, on 12 unit servers",
    needs_traces=True,
)
register_preset(
    "google-bf-replay",
    f"{_P}.traces:google_bf_replay",
    "Google 2011 completed tasks (CPU, memory) on 420 unit servers: the performance benchmark's Best-Fit replay",
    needs_traces=True,
)
