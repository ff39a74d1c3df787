"""The papers' algorithms as agents, one module per algorithm family.

Installed as ``clustergym.baselines`` (the top-level folder ``baselines/`` is
mapped there by ``pyproject.toml``), so it never clashes with other
distributions named ``baselines``.  Importing this package imports every
module in it, which registers its agents in :data:`clustergym.agent_api.AGENTS`
(and its paper claims in :data:`clustergym.reproduce.CLAIMS`): a new algorithm
family is one new module, with nothing to edit elsewhere.

* :mod:`.greedy` -- work-conserving First-Fit, Best-Fit, Random-Fit (rms.md §3.1–3.2)
  and their admit-all versions for loss systems;
* :mod:`.rms` -- RMS (Algorithm 1), its variants RF/BF/AD/RF-AD+/less-wasteful and
  RMS+JSQ (Algorithm 2) (rms.md §2);
* :mod:`.maxweight` -- MaxWeight Refresh and MaxWeight Stop, reconstructed (rms.md §3.3–3.4);
* :mod:`.rms_reproduce` -- the RMS paper's claims for ``clustergym reproduce`` (rms.md §4.9);
* :mod:`.random_policy` -- the masked random policy.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
