"""The ``rule`` action mode (clustergym.learned.rule_select): a policy choosing a rule per decision epoch.

The wrapper drives the chosen rule for one epoch; choosing one rule always replays that rule's own
episode; same seed, same trajectory; bad rules are refused naming them; a model trained in the
rule mode is saved and evaluates, by the runner, exactly as through the wrapper.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from clustergym.agent_api import AGENTS, Agent, AgentRequirements, make_agent, register_agent
from clustergym.core.commands import Command
from clustergym.errors import ConfigError
from clustergym.learned.rule_select import (
    RuleSelectEnv,
    default_rules,
    make_rule_select_env,
    parse_rules,
)
from clustergym.runner import Probe, run_episode
from clustergym.scenarios import resolve_scenario
from clustergym.suite import task
from clustergym.suite.env import window_metrics

SEED = 1_000_000  # the suite's first evaluation seed
RULES = ["first-fit", "best-fit", "random-fit"]


def _drive(env, actions) -> tuple[list[float], dict]:
    """Step ``env`` (reset by the caller) with ``actions(step)`` to the end; the rewards and the last info."""
    rewards, done, info, n = [], False, {}, 0
    while not done:
        _, r, term, trunc, info = env.step(actions(n))
        rewards.append(r)
        n += 1
        done = term or trunc
    return rewards, info


def test_spaces_and_default_rules_of_a_task():
    t = task("rms-trap")
    assert default_rules(t) == ["best-fit", "first-fit", "random-fit"]  # epoch-local rules that run on it
    assert default_rules(resolve_scenario("autoscale-4vm")) == [
        "best-fit-admit",
        "first-fit-admit",
        "trunk-reservation",
    ]
    env = make_rule_select_env(t, RULES)
    obs, _ = env.reset(seed=SEED)
    assert env.action_space.n == 3
    assert env.observation_space["action_mask"].shape == (3,)
    assert obs["action_mask"].tolist() == [1, 1, 1] and obs["action_mask"].dtype == np.int8
    assert list(obs) == list(env.observation_space.spaces)
    assert env.observation_space.contains(obs)
    assert env.action_masks().tolist() == [True, True, True]


def test_a_step_drives_the_chosen_rule_for_exactly_one_epoch():
    env = make_rule_select_env(task("rms-trap"), RULES)
    inner = env.unwrapped
    env.reset(seed=SEED)
    placed_some = False
    for step in range(60):
        epoch, started = inner.view.epoch, inner.sim.n_started
        _, _, term, trunc, info = env.step(step % 3)
        assert info["rule"] == RULES[step % 3]
        assert epoch != inner.view.epoch  # the rule's WAIT ended the epoch
        # every command but the closing WAIT started a job (epochs skipped after it start none)
        assert inner.sim.n_started - started == info["commands"] - 1
        placed_some |= info["commands"] > 1
        assert not (term or trunc)
    assert placed_some


def test_always_best_fit_reproduces_best_fits_own_episode_on_rms_trap():
    t = task("rms-trap")
    env = make_rule_select_env(t, RULES)
    env.reset(seed=SEED)
    rewards, info = _drive(env, lambda n: 1)
    row = run_episode(t.scenario(), "best-fit", seed=SEED, env_id=t.id, probes={"task": Probe(window_metrics)})
    assert info["task"]["score"] == row["task"]["score"]
    assert sum(rewards) == pytest.approx(row["return"], rel=1e-12, abs=1e-9)
    assert info["task"]["started"] == row["started"]
    assert len(rewards) < row["steps"]  # one step per epoch with a choice, not per command


def test_always_trunk_reservation_reproduces_its_own_episode_on_autoscale_syn4():
    """Trunk reservation is epoch-local: chosen at every arrival, it replays its own episode (its rejections
    included), and a mix with best-fit-admit gives another."""
    t = task("autoscale-syn4")
    env = make_rule_select_env(t, ["best-fit-admit", "trunk-reservation:g=1"])
    env.reset(seed=SEED)
    rewards, info = _drive(env, lambda n: 1)
    row = run_episode(
        t.scenario(),
        make_agent("trunk-reservation", g=1),
        seed=SEED,
        env_id=t.id,
        probes={"task": Probe(window_metrics)},
    )
    assert info["task"]["score"] == row["task"]["score"]
    assert info["task"]["rejected"] == row["task"]["rejected"] > 0
    assert sum(rewards) == pytest.approx(row["return"], rel=1e-12, abs=1e-9)
    env.reset(seed=SEED)
    _, mixed = _drive(env, lambda n: n % 2)
    assert mixed["task"]["score"] != info["task"]["score"]


def test_same_seed_same_trajectory_and_another_seed_another():
    env = make_rule_select_env(task("rms-trap"), RULES)

    def episode(seed: int) -> list[float]:
        rng = np.random.default_rng(7)
        env.reset(seed=seed)
        return _drive(env, lambda n: int(rng.integers(3)))[0]

    a, b = episode(SEED), episode(SEED)
    assert a == b
    assert episode(SEED + 1) != a


class _OracleRule(Agent):
    """A test rule reading oracle information."""

    epoch_local = True
    requirements = AgentRequirements(uses_oracle=True)

    def act(self, observation):
        return Command.wait()


@pytest.fixture
def oracle_rule():
    register_agent("test-oracle-rule", _OracleRule)
    yield "test-oracle-rule"
    AGENTS.pop("test-oracle-rule")


@pytest.mark.parametrize(
    "rules, scenario, named",
    [
        ("best-fit,no-such-rule", "rms-trap", "no-such-rule"),
        ("best-fit,mwr", "rms-trap", "mwr"),  # keeps its configuration across epochs
        ("best-fit,random", "rms-trap", "random"),  # acts through the action mask
        ("best-fit-admit,best-fit", "autoscale-4vm", "best-fit"),  # central queues only
        ("best-fit,best-fit:bogus=1", "rms-trap", "best-fit:bogus=1"),
        ("best-fit", "rms-trap", "2 or more"),
        ("best-fit,first-fit,best-fit", "rms-trap", "twice"),
    ],
)
def test_bad_rules_raise_config_error_naming_the_rule(rules, scenario, named):
    target = task(scenario) if scenario == "rms-trap" else scenario
    with pytest.raises(ConfigError, match=named) as e:
        make_rule_select_env(target, rules)
    assert e.value.field == "rules"


def test_an_oracle_rule_is_refused_unless_allowed(oracle_rule):
    with pytest.raises(ConfigError, match=f"{oracle_rule}.*oracle"):
        make_rule_select_env(task("rms-trap"), ["best-fit", oracle_rule])
    env = make_rule_select_env(task("rms-trap"), ["best-fit", oracle_rule], allow_oracle=True)
    assert isinstance(env, RuleSelectEnv) and env.uses_oracle


def test_rule_specs_take_scalar_parameters():
    assert parse_rules(" best-fit , best-fit:scan=8 ") == ["best-fit", "best-fit:scan=8"]
    env = make_rule_select_env("bf-trap", ["best-fit", "best-fit:scan=8"], horizon=5.0, num_servers=4)
    assert env.driver.agents[1].scan == 8
    env.reset(seed=0)
    _, info = _drive(env, lambda n: n % 2)
    assert "metrics" in info


# ------------------------------------------------------------------ training and saved models
needs_train = pytest.mark.skipif(importlib.util.find_spec("stable_baselines3") is None, reason="needs the train extra")


@needs_train
def test_the_equivariant_policy_scores_rules_from_the_context_on_any_cluster_size():
    from gymnasium import spaces

    from clustergym.learned.policies import EquivariantMaskablePolicy, masked_logits, transfer_policy

    small = make_rule_select_env("bf-trap", RULES, horizon=5.0, num_servers=4)
    large = make_rule_select_env("bf-trap", RULES, horizon=5.0, num_servers=9)
    policy = EquivariantMaskablePolicy(
        small.observation_space, small.action_space, lambda _: 1e-3, action_mode="rule", use_time=False
    )
    moved = transfer_policy(policy, large.observation_space, spaces.Discrete(3))
    for env, pol in ((small, policy), (large, moved)):
        obs, _ = env.reset(seed=3)
        z = masked_logits(pol, obs, np.ones(3, dtype=bool))
        assert z.shape == (3,) and np.all(np.isfinite(z)) and np.all(z > -1e7)
    with pytest.raises(ConfigError, match="rule"):
        EquivariantMaskablePolicy(
            small.observation_space, small.action_space, lambda _: 1e-3, action_mode="rule", work_conserving=True
        )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny run in the rule mode on rms-trap (mlp policy: its choices mix the rules)."""
    from clustergym.training.train import train

    out = tmp_path_factory.mktemp("rule_run")
    train(
        "rms-trap",
        "ppo",
        timesteps=2048,
        n_envs=2,
        policy="mlp",
        out=out,
        verbose=False,
        action_mode="rule",
        rules="best-fit,first-fit",
        **{"algo.n_steps": 256, "algo.batch_size": 256, "algo.n_epochs": 1},
    )
    return out


@needs_train
@pytest.mark.usefixtures("quiet_warnings")
def test_a_rule_mode_model_records_its_rules_and_scores_as_through_the_wrapper(trained):
    meta = json.loads((trained / "model.json").read_text())
    assert meta["env_kwargs"]["action_mode"] == "rule"
    assert meta["env_kwargs"]["rules"] == ["best-fit", "first-fit"]
    t = task("rms-trap")
    agent = make_agent(str(trained))
    row = run_episode(t.scenario(), agent, seed=SEED, env_id=t.id, probes={"task": Probe(window_metrics)})
    # the same policy choosing through the wrapper
    env = make_rule_select_env(t, meta["env_kwargs"]["rules"])
    obs, _ = env.reset(seed=SEED)
    chooser = make_agent(str(trained))
    chooser.reset(env, seed=SEED)
    chosen = []
    done = False
    while not done:
        i = chooser._choose(obs, True)
        chosen.append(i)
        obs, _, term, trunc, info = env.step(i)
        done = term or trunc
    assert info["task"]["score"] == row["task"]["score"]
    assert set(chosen) == {0, 1}  # both rules were used (else the test would prove less)
    assert not row["uses_oracle"]


@needs_train
@pytest.mark.usefixtures("quiet_warnings")
def test_rule_mode_warm_start_imitates_the_chosen_rule(tmp_path):
    from clustergym.training.train import train

    train(
        "rms-trap",
        timesteps=64,
        n_envs=2,
        out=tmp_path,
        verbose=False,
        action_mode="rule",
        rules="first-fit,best-fit",
        warm_start="best-fit",
        warm_start_steps=200,
        warm_start_epochs=20,
        **{"algo.n_steps": 32, "algo.batch_size": 64, "algo.learning_rate": 1e-9},
    )
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["warm_start"]["accuracy"] == 1.0
    t = task("rms-trap")
    row = run_episode(
        t.scenario(), make_agent(str(tmp_path)), seed=SEED, env_id=t.id, probes={"task": Probe(window_metrics)}
    )
    bf = run_episode(t.scenario(), "best-fit", seed=SEED, env_id=t.id, probes={"task": Probe(window_metrics)})
    assert row["task"]["score"] == bf["task"]["score"]


@needs_train
@pytest.mark.parametrize(
    "sets, extra, message",
    [
        (["action_mode=rule", "rules=best-fit,mwr"], [], "mwr"),
        (["action_mode=rule", "rules=best-fit,first-fit"], ["--warm-start", "random-fit"], "random-fit"),
        (["rules=best-fit,first-fit"], [], "action_mode=rule"),
    ],
)
def test_train_cli_rule_mode_errors_exit_2(tmp_path, sets, extra, message):
    from clustergym.cli import app

    args = ["train", "rms-trap", "--timesteps", "64", "--out", str(tmp_path / "run"), "--no-progress", *extra]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert message in res.output + (res.stderr or "")
