"""Gymnasium environments over the simulation kernel."""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

from clustergym.core.commands import Cmd, Command, EventKind
from clustergym.core.objectives import objective_metric
from clustergym.core.simulator import EpochConfig, Simulator
from clustergym.core.view import ClusterView
from clustergym.envs.actions import ActionMode, RuleMode, RuleSet, make_action_mode
from clustergym.envs.context import agent_context
from clustergym.envs.observation import ObservationBuilder
from clustergym.envs.reward import RewardFn, make_reward_fn
from clustergym.envs.viewer import render_rgb, render_text
from clustergym.errors import ConfigError, InvalidCommandError, ScenarioError
from clustergym.scenarios.spec import Scenario
from clustergym.validation import settings

__all__ = ["ClusterEnv", "AdmissionEnv"]

_KIND_NAMES = {k: k.name.lower() for k in EventKind}  # info["event"]


class ClusterEnv(gym.Env):
    """Multi-resource cluster scheduling with queues.

    Jobs with vector demands arrive over continuous time and wait in a queue
    (one central queue, or per-server local queues with routing at arrival);
    the agent starts them, without preemption, on servers where they fit.  The
    environment stops at *decision epochs* (arrivals, completions, agent clock
    ticks, requested wake-ups: configurable).  At an epoch the agent issues
    commands, one per ``step``, until it issues WAIT, which advances time.

    ## Action Space

    Set by ``action_mode`` (:mod:`clustergym.envs.actions`): ``head``
    (``Discrete(L + 1)``: server for the oldest queued job, or WAIT), ``slot``
    (``Discrete(K * L + 1)``: (queue slot, server) pairs, or WAIT), ``command``
    (``MultiDiscrete``: the full command set).  Valid actions are flagged in
    ``obs["action_mask"]`` and by ``action_masks()`` (for MaskablePPO).  Any
    mode also accepts a :class:`~clustergym.core.commands.Command` (rule-based
    agents name jobs by id).

    ## Observation Space

    A ``Dict`` of fixed shapes: free capacity per server, running and dummy
    counts per server and type, queue counts and a window of the first ``K``
    queued jobs with a mask, the epoch's event, arrival-rate estimates,
    elapsed time and the action mask (:mod:`clustergym.envs.observation`).
    Gymnasium's ``FlattenObservation`` flattens it (keys in the space's order).

    ## Rewards

    The integral of the scenario's objective rate over the time advanced by
    the step: ``-∫ queue length dt`` (objective ``queue``), ``-∫ jobs in system``,
    ``-∫ weighted jobs in system``, or ``+∫ reward rate`` (loss systems), times
    ``reward_scale``.  With scale 1 the episode return equals the paper metric
    times the horizon.  Commands that do not advance time earn 0; an invalid
    command earns ``invalid_penalty`` when ``invalid_action="penalize"``.
    For the ``reward`` objective, ``reward_timing="start"`` instead pays each
    job's whole reward, rate x service time, when it starts, and
    ``reward_timing="expected"`` its expected reward, rate x its type's mean
    service time (see Arguments).

    ## Starting State

    Empty servers and queues at time 0; the first observation is the first
    epoch at which a choice exists (with ``skip_trivial``).

    ## Episode End

    Truncation at the scenario horizon.  Termination when a finite workload
    (a trace) is exhausted and the system has drained, or when the number of
    waiting jobs exceeds ``queue_cap`` (``info["unstable"]`` is then True).

    ## Arguments

    * ``scenario``: a preset name (``clustergym list``), a path to a YAML/JSON
      scenario file, a dict in the file format, or a
      :class:`~clustergym.scenarios.spec.Scenario`; extra keyword arguments are
      the preset's parameters (e.g. ``zeta=0.9``).
    * ``action_mode``: ``head``, ``slot``, ``admit``, ``command`` or ``rule`` (default
      ``head`` for central queues, ``admit`` for loss systems, ``command`` for
      local queues).
    * ``rules``: the rules of the ``rule`` mode (a :class:`~clustergym.envs.actions.RuleSet`,
      e.g. :class:`~clustergym.learned.rule_select.RuleDriver`); reset with the env.
    * ``queue_window``: ``K``, the queue jobs shown (and addressable by ``slot``).
    * ``epochs``: extra decision epochs (an ``EpochConfig`` or dict), merged
      with the scenario's.
    * ``horizon``: override the scenario's horizon.
    * ``invalid_action``: what an invalid action does -- a command the state does not allow, or an
      action outside the action space (negative, out of range, not an integer, a boolean, an array
      of the wrong shape), which is never decoded nor executed.  ``"penalize"``: nothing happens,
      the step earns ``invalid_penalty``, ``info["invalid_action"] = True`` and
      ``info["invalid_reason"]`` says why; time moves on only after ``max_invalid_per_epoch``
      invalid actions in one epoch.  ``"wait"``: as ``"penalize"``, and the action then acts as WAIT
      (time moves on), so algorithms without masks (PPO, DQN, A2C) train and evaluate without
      stalling.  ``"raise"``: :class:`~clustergym.errors.InvalidCommandError` with the reason.
    * ``invalid_penalty``: the reward of an invalid action (default -1).
    * ``skip_trivial``: skip epochs where WAIT is the only valid action (default
      True except in ``command`` mode).
    * ``reward_scale``: multiplies every reward.
    * ``reward_timing``: ``"integral"`` (default: the reward rate earned over
      the time each step advances) or ``"start"`` (objective ``reward`` only: a
      job's reward rate times its service time, paid in the step that admits or
      starts it).  Both have the same expected return in steady state, but
      ``"start"`` credits an admission to the decision that made it, where the
      integral spreads it over the next hundreds of decisions, mixed with every
      other job's.  ``"expected"`` (objective ``reward`` only) pays, in the
      same step, the job's reward rate times its type's *mean* service time on
      that server (mean work / speed): the same expected return, without the
      noise of the drawn service time, which no decision influences.  A
      training signal: the metrics, and the evaluation of a trained agent, are
      the same.
    * ``reward_fn``: a :class:`~clustergym.envs.reward.RewardFn` (any callable of the simulator
      giving the return so far); each step pays its increment.  Default: the scenario's
      objective with ``reward_scale`` and ``reward_timing``.
    * ``pair_features``: add ``obs["pair_scores"]``, ``(K + 1, L, 5)``: for each window job and the
      event's job, and each server, whether it fits, Best-Fit's score, Best-Fit's and First-Fit's
      choices and the free fraction left (:mod:`clustergym.envs.observation`).  Off by default: the
      observation, and the suite tasks', stay as they were.  ``"speed"``: those five and a sixth,
      ``(K + 1, L, 6)``, the server's speed for the job's type estimated from the episode's
      completions (:class:`clustergym.core.estimates.SpeedEstimate`; heterogeneous machines, LoTES).
    * ``validate``: check every kernel invariant after every event (slow).
    * ``observe``: build observations (default).  ``False`` is the fast path for
      rule-based agents that read the state through ``env.view`` and never the
      observation: ``reset``/``step`` then return ``None`` as the observation.
    * ``render_mode``: ``"ansi"`` or ``"human"`` (text), or ``"rgb_array"``: an ``(H, 320, 3)`` ``uint8``
      frame of each server's used capacity per resource, the queue (window and count), the event and
      the time (:func:`clustergym.envs.viewer.render_rgb`), what ``RecordVideo`` records.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        scenario: str | dict | Scenario = "ec2",
        *,
        action_mode: str | None = None,
        queue_window: int = 8,
        epochs: EpochConfig | dict | None = None,
        horizon: float | None = None,
        invalid_action: Literal["penalize", "wait", "raise"] = "penalize",
        invalid_penalty: float = -1.0,
        max_invalid_per_epoch: int = 1000,
        skip_trivial: bool | None = None,
        reward_scale: float = 1.0,
        reward_timing: Literal["integral", "start", "expected"] = "integral",
        reward_fn: RewardFn | None = None,
        rules: RuleSet | None = None,
        pair_features: bool | str = False,
        validate: bool = False,
        observe: bool = True,
        render_mode: str | None = None,
        **scenario_params: Any,
    ):
        from clustergym.scenarios import resolve_scenario

        self.scenario = resolve_scenario(scenario, **scenario_params).with_horizon(horizon)
        if isinstance(epochs, dict):
            try:
                epochs = EpochConfig(**epochs)
            except TypeError as e:
                raise ScenarioError("epochs", str(e)) from None
        queue_window = settings.number(queue_window, "queue_window", lo=1, integer=True)
        settings.choice(invalid_action, "invalid_action", ("penalize", "wait", "raise"))
        if render_mode is not None:
            settings.choice(render_mode, "render_mode", self.metadata["render_modes"])
        self.sim: Simulator = self.scenario.make_simulator(epochs, validate=validate)
        self.mode: ActionMode = make_action_mode(action_mode, self.sim, queue_window, rules)
        self.action_mode = self.mode.name
        self.queue_window = queue_window
        self.skip_trivial = (
            self.mode.skippable if skip_trivial is None else settings.boolean(skip_trivial, "skip_trivial")
        )
        self.invalid_action = invalid_action
        self.invalid_penalty = settings.number(invalid_penalty, "invalid_penalty")  # finite
        self.max_invalid_per_epoch = settings.number(max_invalid_per_epoch, "max_invalid_per_epoch", lo=1, integer=True)
        self.reward_scale = settings.number(reward_scale, "reward_scale", lo=0.0, lo_open=True)
        self.render_mode = render_mode
        self.observe = settings.boolean(observe, "observe")
        self.objective = self.scenario.objective
        self.reward_timing = reward_timing
        if reward_fn is None:
            reward_fn = make_reward_fn(self.objective, timing=reward_timing, scale=self.reward_scale)
        elif not callable(reward_fn):
            raise ConfigError("reward_fn", f"expected a RewardFn (a callable of the simulator), got {reward_fn!r}")
        self.reward_fn = reward_fn
        self.obs_builder = ObservationBuilder(
            self.sim, queue_window, self.mode.mask_size, self.scenario.clairvoyant, pair_features=pair_features
        )
        #: ``False``, ``True`` or ``"speed"``, as given (:func:`~clustergym.envs.observation.pair_feature_names`)
        self.pair_features: bool | str = pair_features if self.obs_builder.pair_features else False
        self.observation_space = self.obs_builder.space
        self.action_space = self.mode.space
        self.view = ClusterView(self.sim, clairvoyant=self.scenario.clairvoyant)
        self._mask: np.ndarray | None = None
        self._carry = 0.0
        self._invalid_in_epoch = 0
        self._end_reported = False

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode (the kernel seeded with ``seed``); ``options`` must be empty: the env
        takes none (a key given there would otherwise be ignored without a word).

        Raises:
            ConfigError: ``options`` holds a key.
        """
        if options:
            keys = ", ".join(map(repr, options)) if isinstance(options, dict) else repr(options)
            raise ConfigError("options", f"reset(options=...) takes no options here, got {keys}")
        super().reset(seed=seed)
        kernel_seed = seed
        if kernel_seed is None:
            # draw the kernel seed from the env's own generator so that unseeded resets differ
            kernel_seed = int(self.np_random.integers(2**63 - 1))
        self.sim.reset(kernel_seed)
        self.mode.reset(agent_context(self, seed), seed)  # the rule mode's rules seed as agents do
        self._mask = None
        self._invalid_in_epoch = 0
        self._end_reported = False
        area0 = self._area()
        if self.skip_trivial and self._only_wait():
            self._advance_to_choice()
        self._carry = self._area() - area0  # reward of time skipped before the first choice
        return self._observation(), self._info()

    def step(self, action):
        sim = self.sim
        if not sim._seeded:
            raise ResetNeeded("step() called before reset(); call reset(seed=...) first")
        t_start = sim.now
        if sim.done:
            if self._end_reported:
                raise RuntimeError("step() called after the episode ended; call reset()")
            # the episode ended during reset() (no decision epoch before the end): report it now
            self._end_reported = True
            reward, self._carry = self._carry, 0.0
            info = self._info()
            info["dt"] = 0.0
            info["invalid_action"] = False
            info["metrics"] = self.metrics()
            return self._observation(), float(reward), bool(sim.terminated), bool(sim.truncated), info
        is_cmd = isinstance(action, Command)
        # an action outside the action space (negative, out of range, not an integer, wrong shape)
        # is never decoded: divmod and list indexing would execute it somewhere else
        reason = None if is_cmd else self.mode.malformed(action)
        cmd = action if is_cmd else (None if reason is not None else self.mode.decode(action))
        reward = self._carry
        self._carry = 0.0
        if cmd is not None and cmd.kind == Cmd.WAIT:
            reward += self._advance_to_choice()
        elif cmd is not None:
            proven = not is_cmd and self._mask is not None and self.mode.mask_proves_valid(action, self._mask)
            reason = None if proven else sim.check(cmd)
            if reason is None:
                before = self._area()
                sim.execute(cmd)
                self._mask = None
                reward += self._area() - before  # 0 unless the command started a job under reward_timing="start"
                if self.skip_trivial and self._only_wait():
                    reward += self._advance_to_choice()
        invalid = reason is not None
        if invalid:
            what = str(cmd) if cmd is not None else f"action {action!r}"
            if self.invalid_action == "raise":
                raise InvalidCommandError(f"{what} at t={sim.now:g}: {reason}")
            reward += self.invalid_penalty
            self._invalid_in_epoch += 1
            if self.invalid_action == "wait" or self._invalid_in_epoch >= self.max_invalid_per_epoch:
                reward += self._advance_to_choice()  # time moves on (and never loops forever on invalid actions)
        info = self._info()
        info["dt"] = sim.now - t_start
        info["invalid_action"] = invalid
        if reason is not None:
            info["invalid_reason"] = reason
        if sim.done:
            self._end_reported = True
            info["metrics"] = self.metrics()
        return self._observation(), float(reward), bool(sim.terminated), bool(sim.truncated), info

    def drive_rule(self, rules: RuleSet, *, until: float, seed: int | None) -> tuple[int, Any, float, dict[str, Any]]:
        """Let the first of the injected ``rules`` act at every epoch, trivial ones included, while the
        clock is at or before ``until`` and the episode runs (a suite task's warm start: its commands
        are not steps of the episode); then, with ``skip_trivial``, advance to the first epoch with a
        choice.  The rules are driven through the ``rule`` action mode and reset here with the seed.

        Returns:
            ``(steps, obs, reward, info)``: the env steps taken (0: nothing happened; ``obs`` and
            ``info`` are then ``None`` and ``{}``), the last observation and info, and the rewards
            of those steps summed in order.
        """
        driver = RuleMode(self.sim, self.queue_window, rules)
        driver.reset(agent_context(self, seed), seed)
        sim, skip = self.sim, self.skip_trivial
        steps, obs, total, info = 0, None, 0.0, {}
        self.skip_trivial = False  # the rule sees every epoch
        try:
            while not sim.done and sim.now <= until:
                obs, reward, _, _, info = self.step(driver.decode(0))
                total += reward
                steps += 1
        finally:
            self.skip_trivial = skip
        if skip and not sim.done and self.mode.only_wait(self.action_masks()):
            obs, reward, _, _, info = self.step(Command.wait())  # on to the first epoch with a choice
            total += reward
            steps += 1
        return steps, obs, total, info

    def action_masks(self) -> np.ndarray:
        """Bool mask of valid actions of the action mode (MaskablePPO calls this)."""
        if self._mask is None:
            self._mask = self.mode.mask()
        return self._mask

    def render(self):
        """The state: an RGB frame (``rgb_array``), or text (``ansi``; ``human`` prints it); ``None``
        when the env was made without a render mode (Gymnasium's convention)."""
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return render_rgb(self.view, self.queue_window)
        text = render_text(self.sim)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ------------------------------------------------------------------ helpers
    def metrics(self) -> dict[str, Any]:
        """The episode's metrics so far (``clustergym run`` fields)."""
        out = self.sim.summary()
        out["objective"] = self.objective
        out["objective_metric"] = objective_metric(self.objective)
        return out

    def _area(self) -> float:
        """The return so far, whose increments the steps pay (the reward function's value)."""
        return self.reward_fn(self.sim)

    def _advance_to_choice(self) -> float:
        """WAIT: advance to the next epoch (skipping trivial ones); return the reward earned."""
        before = self._area()
        sim = self.sim
        while True:
            ev = sim.advance()
            self._mask = None
            self._invalid_in_epoch = 0
            if ev is None or not self.skip_trivial or not self._only_wait():
                break
        return self._area() - before

    def _only_wait(self) -> bool:
        """Whether WAIT is the only valid action now (without building the mask when that is clear)."""
        if self._mask is None and self.mode.nothing_to_decide():
            return True
        return self.mode.only_wait(self.action_masks())

    def _obs(self) -> dict[str, np.ndarray] | None:
        """The environment's own observation now (:attr:`observation_space`'s)."""
        return self.obs_builder.build_raw(self.action_masks()) if self.observe else None

    def _observation(self) -> dict[str, np.ndarray] | None:
        """The observation ``reset`` and ``step`` return: the environment's own, or the scaled one once a
        suite task's wrapper has asked the builder for it (``obs_builder.use_scaling``)."""
        return self.obs_builder.build(self.action_masks()) if self.observe else None

    def _info(self) -> dict[str, Any]:
        ev = self.sim.event
        return {
            "time": self.sim.now,
            "event": _KIND_NAMES[ev.kind],
            "event_job": ev.job,
            "event_server": ev.server,
            "unstable": self.sim.unstable,
        }


class AdmissionEnv(ClusterEnv):
    """Admission control in a loss system with rewards (the auto-scaling paper's model, Sec. 2).

    Each arriving job must be admitted to a server where it fits, or rejected;
    there is no queue.  A job earns its reward rate while in service.

    ## Action Space

    ``admit`` mode: ``Discrete(L + 1)``; ``a < L`` admits the arriving job to
    server ``a``, ``a = L`` rejects it.  ``command`` mode adds reservation
    slots (RESERVE/RELEASE), and ``Command`` objects add MIGRATE and PREEMPT.

    ## Observation Space

    As :class:`ClusterEnv`; the arriving job is in ``event``.

    ## Rewards

    ``+∫ Σ reward rates of jobs in service dt`` over the advanced time, so the
    return over an episode is the reward rate times the horizon.

    ## Starting State

    Empty servers at time 0.

    ## Episode End

    Truncation at the horizon; termination when a finite trace is exhausted.

    ## Arguments

    As :class:`ClusterEnv`; the default scenario is ``autoscale-4vm`` and the
    scenario must be a loss system (``queueing: loss``).
    """

    def __init__(self, scenario: str | dict | Scenario = "autoscale-4vm", **kwargs: Any):
        super().__init__(scenario, **kwargs)
        if self.scenario.queueing != "loss":
            raise ScenarioError(
                "queueing",
                f"AdmissionEnv needs a loss scenario, {self.scenario.name!r} is "
                f"{self.scenario.queueing!r}; use ClusterEnv",
            )
