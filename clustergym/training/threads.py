"""Torch threads that never oversubscribe the cores: the learner gets the cores the environment workers leave.

On a 2-core machine, 2 torch threads beside a busy environment process slowed a training run from
thousands of steps per second to 13 (the threads spin waiting for each other while the cores are
taken).  :func:`torch_thread_budget` gives the learner ``cores - env_workers`` threads (at least 1),
and a request for more is cut to that with a warning (a
:class:`~clustergym.training.run_folder.TrainingWarning`: one ``warning:`` line from ``clustergym train``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from clustergym.runner.cells import available_workers
from clustergym.training.run_folder import TrainingWarning
from clustergym.validation import settings

__all__ = ["env_workers", "no_distribution_checks", "set_torch_threads", "torch_thread_budget"]


def env_workers(n_envs: int, vec_env: str) -> int:
    """Processes stepping environments beside the learner: ``n_envs`` with ``vec_env="subproc"`` (and more
    than one env), else 0 (in-process environments run between the learner's computations, not beside them)."""
    return n_envs if vec_env == "subproc" and n_envs > 1 else 0


def torch_thread_budget(requested: int | None, workers: int = 0, cores: int | None = None) -> int:
    """Torch CPU threads for a learner beside ``workers`` environment processes on ``cores`` cores
    (default: the cores this process may use): ``requested`` (``None``: all that are left), never more
    than ``max(1, cores - workers)``; asking for more warns (``TrainingWarning``) and gets that many."""
    cores = available_workers() if cores is None else cores
    left = max(1, cores - workers)
    if requested is None:
        return left
    requested = settings.number(requested, "torch_threads", lo=1, integer=True)
    if requested > left:
        warnings.warn(
            f"torch_threads={requested} on {cores} cores with {workers} environment workers would oversubscribe "
            f"the cores: using {left}",
            TrainingWarning,
            stacklevel=2,
        )
        return left
    return requested


def set_torch_threads(requested: int | None, workers: int = 0) -> int:
    """Set torch's CPU threads to :func:`torch_thread_budget` and return the number set."""
    import torch

    n = torch_thread_budget(requested, workers)
    torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def no_distribution_checks() -> Iterator[None]:
    """Within the block, torch distributions skip their argument checks (``validate_args``), then the
    previous default is restored.

    SB3/sb3-contrib build a ``MaskableCategorical`` (a ``torch.distributions.Categorical``) at every
    rollout forward pass and every minibatch; with Python's default (checks on) each construction checks
    that the logits are finite and each ``log_prob`` that the actions are in the support.  The checks only
    raise, never change a value, so a run with them off computes the same numbers: about 0.13 ms of a
    0.45 ms forward pass of the mlp policy on 16 envs (docs/performance.md, the rollout round).
    """
    from torch.distributions import Distribution

    before = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)
