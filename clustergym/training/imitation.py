"""Behaviour-cloning warm start: imitate a rule-based agent before reinforcement learning.

In the rule mode (``--set action_mode=rule``, :mod:`clustergym.learned.rule_select`) the teacher is
one of the rules and its action is that rule's index at every decision.

``clustergym train SCENARIO --warm-start best-fit-admit`` runs the named
baseline (the *teacher*) in a training environment for ``--warm-start-steps``
decisions, records ``(observation, action)`` pairs in the action mode being
trained (:meth:`clustergym.envs.actions.ActionMode.encode` maps the teacher's
command to that mode's integer action), and fits the policy to them before PPO
starts.  Read top to bottom:

1. :func:`collect_demonstrations` -- the teacher's decisions and the rewards
   between them, on training seeds (never the evaluation seeds);
2. :func:`return_scale` -- the scale VecNormalize will divide rewards by, from
   the same running discounted return it tracks, so that the critic's targets
   here and PPO's normalised rewards afterwards agree;
3. :func:`clone` -- minibatch Adam on the actor's cross-entropy with the
   teacher's action plus the critic's squared error to the discounted,
   scaled return-to-go (samples in the last ``3 / (1 - gamma)`` decisions of an
   episode, whose returns the horizon truncates, train the actor only).

Without a warm start, PPO begins from a random policy; on problems where a
rule is already good (Best-Fit packing, LP admission), the first thousands of
steps go to rediscovering it.  With one, PPO starts at the teacher's level and
its updates are improvements on that rule (or not: the evaluation says).
Only the equivariant policy is supported: it reads the raw observation, so no
observation statistics need to be learnt first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from clustergym.core.commands import Cmd, Command
from clustergym.errors import ConfigError

__all__ = ["Demonstrations", "collect_demonstrations", "equivalent_command", "return_scale", "clone"]


@dataclass
class Demonstrations:
    """A teacher's decisions: ``obs[key]`` of shape ``(N, *space.shape)``, ``actions (N,)`` (-1 where
    the action mode cannot express the teacher's decision: it ran, and is not imitated),
    ``rewards (N,)`` (reward after each decision, raw units), ``episode_end (N,)`` (True at the
    last decision of an episode) and ``teacher``'s name."""

    obs: dict[str, np.ndarray]
    actions: np.ndarray
    rewards: np.ndarray
    episode_end: np.ndarray
    teacher: str

    def __len__(self) -> int:
        return int(self.actions.size)


def teacher_params(teacher: str, action_mode: str, queue_window: int) -> dict[str, Any]:
    """The teacher's variant whose choices the action mode can express.

    A greedy packing rule (``best-fit``, ``first-fit``, ...; an agent with a ``scan`` window) picks
    among every queued job; ``head`` places the oldest job only and ``slot`` one of the first
    ``queue_window``, so the teacher scans that many jobs (``scan=1``: the oldest job on its
    best server, else WAIT).  Other teachers run as they are; one that issues a command the mode
    cannot express stops the warm start with a :class:`ConfigError` naming it.
    """
    from clustergym.agent_api import make_agent

    scan = {"head": 1, "slot": queue_window}.get(action_mode)
    if scan is None:
        return {}
    try:
        make_agent(teacher, scan=scan)
    except ConfigError:  # no scan window: the teacher as it is
        return {}
    return {"scan": scan}


def equivalent_command(env: Any, command: Command) -> Command:
    """``command`` with its job replaced by the first job the action mode can address whose features
    equal it in everything but the time waited (same type, demand and weight, and same work in a
    clairvoyant scenario), or ``command`` itself.

    A rule that scans the whole queue (a priority rule, or one that skips jobs) may choose a job
    beyond the queue window that the ``head`` and ``slot`` modes address.  When a job like it waits
    in the window, placing that one is the same choice of *what* to place and where, so the decision
    is imitated with that job as its label, while the teacher's own command is the one that runs
    (:func:`collect_demonstrations`): its trajectory stays its own, and so does any record it keeps of
    the queue (BF-J/S mirrors the queue by job id).  A rule that takes the *oldest* job of a type
    (MaxWeight) never needs this: its job is in the window whenever any of that type is; its other
    picks are the ones :func:`collect_demonstrations` runs without imitating.
    """
    if command.kind != Cmd.PLACE or command.job < 0:
        return command
    jobs = env.sim.jobs
    j = int(command.job)
    clairvoyant = bool(env.scenario.clairvoyant)
    window = env.mode.window()
    if env.action_mode == "head":
        window = window[:1]
    for k in window:
        if (
            jobs.type[k] == jobs.type[j]
            and jobs.weight[k] == jobs.weight[j]
            and np.array_equal(jobs.demand[k], jobs.demand[j])
            and (not clairvoyant or jobs.work[k] == jobs.work[j])
        ):
            return Command.place(int(k), int(command.server))
    return command


def collect_demonstrations(
    env: Any, teacher: str, steps: int, seed: int, params: dict[str, Any] | None = None
) -> Demonstrations:
    """Run ``teacher`` (a registered agent name, with ``params``) for ``steps`` decisions of ``env``
    (a clustergym env with a ``Discrete`` action mode, unflattened observation), episodes seeded
    ``seed``, ``seed + 1``, ...  :func:`teacher_params` gives the variant the mode can express.

    Raises:
        ConfigError: the teacher cannot run on the scenario, or issues a command the action
            mode cannot express (e.g. a dummy job, or a job outside the queue window).
    """
    from clustergym.agent_api import agent_context, make_agent

    rules = _rules_of(env)
    if rules is not None:
        return _rule_demonstrations(env, rules, teacher, steps, seed)
    base = env.unwrapped
    agent = make_agent(teacher, **(params or {}))
    req = agent.requirements_for(base.scenario)
    if base.scenario.queueing not in req.queueing:
        raise ConfigError(
            "warm_start",
            f"teacher {teacher!r} works with queueing {list(req.queueing)}, the scenario is {base.scenario.queueing!r}",
        )

    def choose(obs: Any) -> tuple[int, Any]:
        command = agent.act(obs)
        action = base.mode.encode(command)
        if action is None:
            action = base.mode.encode(equivalent_command(base, command))
            if action is not None:  # imitated as the job like it in the window; the teacher's own command runs
                return action, command
        if action is None and command.kind == Cmd.PLACE:
            # a job the mode cannot address (beyond the window, none like it inside): the teacher's own
            # command runs (its trajectory stays its own), the decision is not imitated (action -1)
            return -1, command
        if action is None:
            raise ConfigError(
                "warm_start",
                f"teacher {teacher!r} issued {command}, which the "
                f"{base.action_mode!r} action mode cannot express (only placements of jobs beyond "
                "the queue window are run without being imitated); teachers that fit: the greedy "
                "rules (best-fit, first-fit, random-fit: scanned to the queue window) and priority "
                "rules (mwr, pq) in head and slot modes, best-fit-admit and first-fit-admit in "
                "admit mode",
            )
        return action, action

    demos = _record(env, teacher, choose, lambda s: agent.reset(agent_context(env, s), seed=s), steps, seed)
    if (demos.actions < 0).all():
        raise ConfigError(
            "warm_start",
            f"teacher {teacher!r} placed only jobs the {base.action_mode!r} action mode cannot address "
            "(beyond its queue window): nothing to imitate; raise queue_window or choose another teacher",
        )
    return demos


def _record(
    env: Any,
    teacher: str,
    choose: Callable[[Any], tuple[int, Any]],
    on_reset: Callable[[int], None],
    steps: int,
    seed: int,
) -> Demonstrations:
    """``steps`` decisions of ``env``, episodes seeded ``seed``, ``seed + 1``, ...: ``choose(obs)`` gives
    the recorded action and what is stepped with; ``on_reset(seed)`` follows every reset.

    ``env`` may show epochs where WAIT is the only valid action (``skip_trivial=False``: a teacher
    that keeps records across epochs, such as BF-J/S's mirror of the queue, must see every epoch it
    asks for).  The teacher acts at those too, but they are not recorded: the policy never sees them
    (it trains with ``skip_trivial``); their rewards join the recorded decision before them, as the
    env would have paid them in that decision's step."""
    keys = list(env.observation_space.spaces)  # as the policy sees them (a suite task's wrapper changes them)
    obs_rows: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    actions, rewards, ends = [], [], []
    episode, recorded = 0, False  # recorded: a decision of this episode is recorded
    obs, _ = env.reset(seed=seed)
    on_reset(seed)
    while len(actions) < steps:
        action, step_with = choose(obs)
        choice = int(np.count_nonzero(obs["action_mask"])) > 1
        if choice:
            for k in keys:
                obs_rows[k].append(np.asarray(obs[k], dtype=np.float32))
        obs, reward, terminated, truncated, _ = env.step(step_with)
        end = bool(terminated or truncated)
        if choice:
            actions.append(action)
            rewards.append(float(reward))
            ends.append(end)
            recorded = True
        elif recorded:  # a trivial epoch: its reward and its end belong to the decision before it
            rewards[-1] += float(reward)
            ends[-1] = ends[-1] or end
        if end:
            episode, recorded = episode + 1, False
            obs, _ = env.reset(seed=seed + episode)
            on_reset(seed + episode)
    ends[-1] = True
    return Demonstrations(
        {k: np.stack(v) for k, v in obs_rows.items()},
        np.asarray(actions, dtype=np.int64),
        np.asarray(rewards),
        np.asarray(ends),
        teacher,
    )


def _rules_of(env: Any) -> list[str] | None:
    """The rules of a rule-mode env (a :class:`~clustergym.learned.rule_select.RuleSelectEnv` in the
    wrapper chain), else ``None``."""
    from clustergym.learned.rule_select import RuleSelectEnv

    e = env
    while e is not None:
        if isinstance(e, RuleSelectEnv):
            return e.rules
        e = getattr(e, "env", None)
    return None


def _rule_demonstrations(env: Any, rules: list[str], teacher: str, steps: int, seed: int) -> Demonstrations:
    """In the rule mode the teacher is one of the rules, and its action at every decision is its index."""
    if teacher not in rules:
        raise ConfigError("warm_start", f"in the rule mode the teacher is one of the rules {rules}; {teacher!r} is not")
    action = rules.index(teacher)
    return _record(env, teacher, lambda obs: (action, action), lambda s: None, steps, seed)


def _running_returns(rewards: np.ndarray, ends: np.ndarray, gamma: float) -> np.ndarray:
    """VecNormalize's ``returns``: ``R_t = gamma R_{t-1} + r_t``, reset after an episode's end."""
    out = np.empty_like(rewards)
    acc = 0.0
    for t, r in enumerate(rewards):
        acc = acc * gamma + r
        out[t] = acc
        if ends[t]:
            acc = 0.0
    return out


def return_scale(demos: Demonstrations, gamma: float) -> tuple[np.ndarray, float]:
    """``(running discounted returns, 1 / sqrt(var + 1e-8))``: what VecNormalize's reward
    normalisation tracks, and the factor it will divide rewards by once it has seen them."""
    running = _running_returns(demos.rewards, demos.episode_end, gamma)
    return running, float(1.0 / np.sqrt(running.var() + 1e-8))


def _returns_to_go(rewards: np.ndarray, ends: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Discounted return-to-go within each episode, and a mask of the samples far enough from
    the episode's end (``3 / (1 - gamma)`` decisions) for the truncated sum to be accurate."""
    g = np.empty_like(rewards)
    acc = 0.0
    to_end = np.empty(rewards.size, dtype=np.int64)
    left = 0
    for t in range(rewards.size - 1, -1, -1):
        if ends[t]:
            acc, left = 0.0, 0
        acc = rewards[t] + gamma * acc
        g[t] = acc
        to_end[t] = left
        left += 1
    tail = int(3.0 / max(1.0 - gamma, 1e-6))
    return g, to_end >= tail


def clone(
    policy: Any,
    demos: Demonstrations,
    *,
    gamma: float,
    scale: float,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Fit ``policy`` (an equivariant SB3 policy) to the demonstrations; return the final
    ``{"accuracy", "actor_loss", "critic_loss", "samples", "critic_samples", "dropped"}``
    (``critic_samples`` is 0 when every episode is shorter than ``3 / (1 - gamma)`` decisions:
    the critic is then left to PPO).

    Teacher actions the policy masks (WAIT under ``policy.work_conserving`` while a job can
    start), and decisions the action mode cannot express (action ``-1``, counted in
    ``inexpressible``), are dropped from the actor loss and counted in ``dropped``; their rewards
    still count in the critic's returns.
    """
    import torch as th

    from clustergym.learned.policies import MASKED_LOGIT

    net = policy.mlp_extractor
    obs = {k: th.as_tensor(v) for k, v in demos.obs.items()}
    actions = th.as_tensor(demos.actions)
    g, far = _returns_to_go(demos.rewards, demos.episode_end, gamma)
    targets = th.as_tensor(g * scale, dtype=th.float32)
    critic_mask = th.as_tensor(far)
    with th.no_grad():
        logits, _ = net(obs)
    imitated = actions >= 0  # -1: a teacher decision the action mode cannot express (not imitated)
    actions = actions.clamp(min=0)
    allowed = imitated & (logits.gather(1, actions[:, None]).squeeze(1) > MASKED_LOGIT / 2)
    n = len(demos)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    gen = th.Generator().manual_seed(seed)
    policy.set_training_mode(True)
    for _ in range(epochs):
        perm = th.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = perm[start : start + batch_size]
            batch = {k: v[idx] for k, v in obs.items()}
            logits, value = net(batch)
            ok = allowed[idx]
            actor = th.nn.functional.cross_entropy(logits[ok], actions[idx][ok]) if ok.any() else logits.sum() * 0.0
            cm = critic_mask[idx]
            critic = ((value.squeeze(1) - targets[idx]) ** 2)[cm].mean() if cm.any() else value.sum() * 0.0
            optimizer.zero_grad()
            (actor + 0.5 * critic).backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
    policy.set_training_mode(False)
    with th.no_grad():
        correct, a_loss, c_loss = 0, 0.0, 0.0
        for start in range(0, n, 4096):
            sl = slice(start, start + 4096)
            logits, value = net({k: v[sl] for k, v in obs.items()})
            ok = allowed[sl]
            correct += int((logits.argmax(1)[ok] == actions[sl][ok]).sum())
            if ok.any():
                a_loss += float(th.nn.functional.cross_entropy(logits[ok], actions[sl][ok], reduction="sum"))
            cm = critic_mask[sl]
            c_loss += float((((value.squeeze(1) - targets[sl]) ** 2)[cm]).sum())
    kept = int(allowed.sum())
    return {
        "accuracy": correct / max(kept, 1),
        "actor_loss": a_loss / max(kept, 1),
        "critic_loss": c_loss / max(int(critic_mask.sum()), 1),
        "samples": float(n),
        "critic_samples": float(critic_mask.sum()),
        "dropped": float(n - kept),
        "inexpressible": float(n - int(imitated.sum())),
    }
