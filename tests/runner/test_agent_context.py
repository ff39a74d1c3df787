"""The agent <-> environment contract: agents get an AgentContext, never the env; the runner chooses
the compiled path; ``rule`` is an action mode with injected rules; a predict-only policy runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clustergym.agent_api import Agent, AgentContext, agent_context, make_agent, make_env_for
from clustergym.core import accel
from clustergym.core.commands import Command
from clustergym.envs import make_env
from clustergym.envs.reward import ObjectiveReward
from clustergym.errors import ConfigError
from clustergym.learned.rule_select import RuleDriver
from clustergym.runner import run_episode
from clustergym.runner.episode import compiled_path_allowed, run_compiled
from clustergym.scenarios import make_preset

SC = make_preset("ec2", horizon=20.0)


class _Recorder(Agent):
    """First-Fit over the queue that records the context it was handed."""

    def reset(self, context: AgentContext, seed: int | None = None) -> None:
        super().reset(context, seed)
        self.seen = self.context

    def act(self, observation):
        for job in self.view.queue():
            s = self.view.select_server("first-fit", job)
            if s >= 0:
                return Command.place(job, s)
        return Command.wait()


class _Snoop(_Recorder):
    """A baseline that tries to reach the environment through its context."""

    def act(self, observation):
        return self.context.env.sim  # type: ignore[attr-defined]


def test_an_agent_gets_a_frozen_context_and_no_environment():
    agent = _Recorder()
    row = run_episode(SC, agent, seed=3)
    ctx = agent.seen
    assert isinstance(ctx, AgentContext) and row["started"] > 0
    assert ctx.seed == 3 and ctx.objective == SC.objective and ctx.scenario.name == SC.name
    assert not hasattr(ctx, "env") and not hasattr(agent, "env")
    assert {f.name for f in dataclasses.fields(ctx)}.isdisjoint({"env", "sim", "unwrapped"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.view = None  # type: ignore[misc]
    with pytest.raises(ValueError):  # the view's arrays are read-only
        ctx.view.load[0, 0] = 1.0
    # the generator: the agent's own stream of the seed, a fresh one at each call
    assert (
        ctx.generator().random()
        == ctx.generator().random()
        == np.random.default_rng(np.random.SeedSequence([3, 0xA9E17])).random()
    )


def test_a_baseline_reaching_for_the_env_fails():
    with pytest.raises(AttributeError, match="env"):
        run_episode(SC, _Snoop(), seed=0)


def test_reset_with_an_env_keeps_only_its_context():
    env = make_env_for(SC, _Recorder())
    env.reset(seed=1)
    agent = _Recorder()
    agent.reset(env, seed=1)  # a script's shortcut
    assert isinstance(agent.seen, AgentContext) and agent.seen.seed == 1
    assert all(v is not env and v is not env.unwrapped for v in vars(agent).values())


def test_a_predict_only_policy_runs_unchanged_through_the_runner():
    """An SB3 model maps observations to actions and has no reset: the runner feeds it observations."""

    class PredictOnly:
        def predict(self, observation, state=None, episode_start=None, deterministic=True):
            mask = observation["action_mask"]
            return int(np.flatnonzero(mask)[0]), None  # the first valid action

    row = run_episode(SC, PredictOnly(), seed=0, agent_name="predict-only")
    assert row["agent"] == "predict-only" and row["started"] > 0 and row["steps"] > 0


def _same(a: dict, b: dict) -> None:
    drop = {"wall_seconds", "agent"}
    assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


class _SameAsDefault(ObjectiveReward):
    """The default reward under another type: the runner cannot know it pays the same."""


def test_the_runner_chooses_the_compiled_path_from_the_env_settings():
    agent = make_agent("best-fit", scan=8)
    plain = make_env_for(SC, agent)
    custom = make_env_for(SC, agent, reward_fn=_SameAsDefault(SC.objective))
    skipping = make_env_for(SC, agent, skip_trivial=True)
    assert compiled_path_allowed(plain)
    assert not compiled_path_allowed(custom) and not compiled_path_allowed(skipping)
    assert make_agent("best-fit").compiled_policy() is None  # no scan window: nothing compiled
    assert make_agent("random-fit", scan=8).compiled_policy() is None
    custom.reset(seed=0)
    agent.reset(agent_context(custom, 0), seed=0)
    with accel.forced(True):
        assert run_compiled(agent, custom) is None  # a custom reward_fn turns it off


@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
def test_compiled_and_step_loop_give_identical_results_where_allowed():
    agent = make_agent("best-fit", scan=8)
    env = make_env_for(SC, agent)
    env.reset(seed=2)
    agent.reset(agent_context(env, 2), seed=2)
    with accel.forced(True):
        assert run_compiled(agent, env) is not None  # allowed: it ran
        fast = run_episode(SC, make_agent("best-fit", scan=8), seed=2)
        custom = run_episode(
            SC, make_agent("best-fit", scan=8), seed=2, env_kwargs={"reward_fn": _SameAsDefault(SC.objective)}
        )
    with accel.forced(False):
        loop = run_episode(SC, make_agent("best-fit", scan=8), seed=2)
    _same(fast, loop)
    _same(custom, loop)  # the step loop under the custom reward: the same episode


def _rule_env(**kw):
    names = ["first-fit", "best-fit"]
    driver = RuleDriver([make_agent(n) for n in names], names)
    return make_env(SC, action_mode="rule", rules=driver, observe=True, **kw)


def test_the_rule_mode_with_injected_rules_replays_a_rule_and_skips_epochs_where_all_wait():
    env = _rule_env()
    assert env.action_space.n == 2 and env.skip_trivial
    obs, _ = env.reset(seed=5)
    assert obs["action_mask"].tolist() == [1, 1]
    done, steps = False, 0
    while not done:
        _, _, term, trunc, _ = env.step(1)  # always Best-Fit: its first command, then its next ones
        done, steps = term or trunc, steps + 1
    own = run_episode(SC, "best-fit", seed=5)
    got = env.metrics()
    for key in ("arrivals", "started", "completed", "mean_queue_length", "mean_wait"):
        assert got[key] == own[key], key
    assert steps < own["steps"]  # the epochs where both rules WAIT were skipped


def test_the_rule_mode_needs_injected_rules_and_other_modes_refuse_them():
    with pytest.raises(ConfigError, match="rules"):
        make_env(SC, action_mode="rule")
    with pytest.raises(ConfigError, match="takes no rules"):
        make_env(SC, action_mode="head", rules=RuleDriver([make_agent("first-fit")], ["first-fit"]))


def test_rules_given_as_text_to_an_env_are_a_config_error():
    with pytest.raises(ConfigError, match="RuleSet"):
        make_env(SC, action_mode="rule", rules="first-fit,best-fit")
