"""The papers' algorithms as agents, one module per algorithm family.

Installed as ``clustergym.baselines`` (the top-level folder ``baselines/`` is
mapped there by ``pyproject.toml``), so it never clashes with other
distributions named ``baselines``.  Importing this package registers every
agent in :data:`clustergym.agent_api.AGENTS`.

* :mod:`.greedy` -- work-conserving First-Fit, Best-Fit, Random-Fit (rms.md §3.1–3.2)
  and their admit-all versions for loss systems;
* :mod:`.random_policy` -- the masked random policy.
"""

from clustergym.baselines import greedy, random_policy  # noqa: F401  (registration)
