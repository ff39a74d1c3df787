"""Torch threads never oversubscribe the cores: the learner gets the cores the environment workers leave."""

from __future__ import annotations

import pytest

from clustergym.errors import ConfigError
from clustergym.training.threads import env_workers, set_torch_threads, torch_thread_budget


def test_the_budget_is_the_cores_left_after_the_env_workers():
    assert torch_thread_budget(None, workers=0, cores=8) == 8
    assert torch_thread_budget(None, workers=6, cores=8) == 2
    assert torch_thread_budget(None, workers=16, cores=2) == 1  # never below one
    assert torch_thread_budget(2, workers=0, cores=8) == 2


def test_asking_for_more_warns_and_gets_the_cores_left():
    with pytest.warns(UserWarning, match="oversubscribe"):
        assert torch_thread_budget(2, workers=2, cores=2) == 1
    with pytest.warns(UserWarning, match="torch_threads=4 on 2 cores"):
        assert torch_thread_budget(4, workers=0, cores=2) == 2


def test_bad_thread_counts_are_config_errors():
    with pytest.raises(ConfigError, match="torch_threads"):
        torch_thread_budget(0, cores=2)


def test_env_workers_are_subprocesses_only():
    assert env_workers(4, "subproc") == 4
    assert env_workers(1, "subproc") == 0  # SB3 steps a single env in-process
    assert env_workers(16, "dummy") == env_workers(16, "batched") == 0


def test_set_torch_threads_sets_torch():
    import torch

    before = torch.get_num_threads()
    try:
        n = set_torch_threads(1)
        assert n == torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("policy", ["mlp", "equivariant"])
def test_no_distribution_checks_trains_the_same_weights(policy):
    """Skipping torch's distribution checks changes no number: same seed, same weights after a short
    MaskablePPO run (batched envs, as `clustergym train`), and the previous default is restored."""
    import torch
    from torch.distributions import Distribution

    from clustergym.training.threads import no_distribution_checks
    from clustergym.training.throughput import TrainingConfig, _learner

    cfg = TrainingConfig("tiny", policy=policy, n_envs=2, vec_env="batched", n_steps=32, batch_size=32, n_epochs=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        weights = []
        for off in (False, True):
            model, venv = _learner(cfg, seed=3)
            start = {k: v.clone() for k, v in model.policy.state_dict().items()}
            before = Distribution._validate_args
            if off:
                with no_distribution_checks():
                    assert Distribution._validate_args is False
                    model.learn(128)
            else:
                model.learn(128)
            assert Distribution._validate_args == before
            venv.close()
            weights.append({k: v.clone() for k, v in model.policy.state_dict().items()})
            assert any(not torch.equal(start[k], v) for k, v in weights[-1].items())  # it did learn
    finally:
        torch.set_num_threads(threads)
    assert weights[0].keys() == weights[1].keys()
    for k in weights[0]:
        assert torch.equal(weights[0][k], weights[1][k]), k
