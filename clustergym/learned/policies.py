"""Policies for Stable-Baselines3 on clustergym's observations and action modes.

Two policies:

* ``mlp``: SB3's own ``MlpPolicy`` on the flattened observation
  (:class:`clustergym.envs.FlattenObservation`).  The simple reference; its
  input size depends on the number of servers ``L``.
* ``equivariant``: :class:`EquivariantPolicy` / :class:`EquivariantMaskablePolicy`,
  a permutation-equivariant actor-critic on the ``Dict`` observation.  One
  shared network embeds each server, one embeds each queued job, and one
  shared MLP scores every (job slot, server) pair; a "wait" logit comes from
  the global context and the critic reads only pooled (mean over servers and
  jobs) embeddings.  No parameter depends on ``L`` or on the queue window
  ``K``, so weights trained on 20 servers load into the policy for 50 or 1000
  servers (:func:`transfer_policy`).

Logit layout (the action modes of :mod:`clustergym.envs.actions`):

========== ===================== ===========================================
mode       logits                job scored against the L servers
========== ===================== ===========================================
``head``   ``(B, L + 1)``        the head of the queue window (row 0)
``slot``   ``(B, K * L + 1)``    every window row ``k`` (index ``k * L + l``)
``admit``  ``(B, L + 1)``        the arriving job (``obs["event"][5:]``)
``rule``   ``(B, N)``            none: one logit per rule, a linear head on
                                 the global context (:mod:`.rule_select`)
========== ===================== ===========================================

The last logit is WAIT (head, slot) or REJECT (admit); in ``rule`` mode every logit is a rule.  Invalid actions get
``-1e8`` from ``obs["action_mask"]`` inside the network, so plain PPO/A2C
never samples them; MaskablePPO masks the same way through ``action_masks()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from clustergym.errors import require_extra

# The policies subclass SB3's, so their imports cannot wait for a function: without the training
# extra, importing this module names it (MissingExtraError) instead of failing on torch.
require_extra(("torch", "stable_baselines3", "sb3_contrib"), "train", "the learned policies")

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn

from clustergym.errors import ConfigError
from clustergym.validation import settings

__all__ = [
    "PairScorer",
    "EquivariantPolicy",
    "EquivariantMaskablePolicy",
    "DictPassThrough",
    "transfer_policy",
    "EQUIVARIANT_MODES",
    "MASKED_LOGIT",
]

#: action modes the equivariant policy speaks
EQUIVARIANT_MODES = ("head", "slot", "admit", "rule")
#: logit given to invalid actions (the value MaskablePPO uses)
MASKED_LOGIT = -1e8
#: number of event kinds before the event job's features in ``obs["event"]``
_EVENT_KINDS = 5


def _shape(space: spaces.Dict, key: str) -> tuple[int, ...]:
    """The shape of the observation entry ``key`` (a ``Box``)."""
    shape = space[key].shape
    if shape is None:
        raise ConfigError("policy", f"the observation's {key!r} has no shape: not clustergym's observation")
    return shape


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, n_out), nn.Tanh())


class PairScorer(nn.Module):
    """The equivariant actor-critic network.

    Input: the observation dict as float tensors of batch size ``B``.
    Output of :meth:`forward`: ``(logits, value)`` with logits ``(B, n_actions)``
    laid out as the action mode's ``Discrete`` space and value ``(B, 1)``.

    Features (all counts through ``log1p``; free capacity and demands are
    fractions of capacity):

    * server ``l``: ``free[l]`` (R), ``running[l]``, ``dummies[l]`` (J each),
      ``event_server[l]`` (1);
    * job ``k``: ``queue_jobs[k]`` (F = R + J + 3);
    * pair ``(k, l)``: server and job embeddings, the global context, the
      free capacity left on ``l`` after placing ``k`` (R), and, when the observation has them
      (the env argument ``pair_features=True``), the baselines' scores of the pair
      ``obs["pair_scores"]`` (fit, Best-Fit's score and choice, First-Fit's choice, the tightest
      free fraction left: :data:`clustergym.envs.observation.PAIR_FEATURES`), the rows of the
      scored jobs (window rows ``0..K-1``, the event's job at row ``K``);
    * global: ``queue_counts``, ``arrival_rates / L`` (per server, so size-free),
      ``time``, ``event``, the fill of the queue window, and the mean server
      and job embeddings.

    ``use_time=False`` leaves out ``obs["time"]`` (elapsed / horizon): the
    objectives are long-run averages, and a policy that reads the fraction of a
    50-unit training episode misbehaves on a 500-unit evaluation.
    ``server_ids=True`` adds a learned embedding of each server's index to its embedding (zero at
    initialisation, so it changes nothing until learning moves it): the policy can then learn what
    the observation does not show about a server, such as its speed for each job type (LoTES's
    machines), as the ``mlp`` policy can by position.  It ties the policy to the task's number of
    servers and their order (no transfer to another ``L``).
    ``work_conserving`` masks WAIT whenever a job can start (the policy then
    only chooses which job goes where, as Best-Fit does); not for ``admit``,
    where REJECT is a real choice.  ``wait_bias`` initialises the WAIT/REJECT logit's bias (a random policy
    that waits at every other step lets the queue explode before it learns).
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_mode: str,
        hidden: int = 64,
        wait_bias: float = -2.0,
        work_conserving: bool = False,
        use_time: bool = True,
        server_ids: bool = False,
        pool_types: bool = False,
    ):
        super().__init__()
        self.work_conserving = bool(work_conserving)
        self.use_time = bool(use_time)
        if action_mode not in EQUIVARIANT_MODES:
            raise ConfigError(
                "action_mode", f"the equivariant policy speaks {list(EQUIVARIANT_MODES)}, got {action_mode!r}"
            )
        self.action_mode = action_mode
        R = _shape(observation_space, "free")[1]
        J = _shape(observation_space, "running")[1]
        F = _shape(observation_space, "queue_jobs")[1]
        E = _shape(observation_space, "event")[0]
        self.R, self.J = R, J
        self.pool_types = bool(pool_types)
        if self.pool_types:  # what the network reads (_pooled): one pooled count per input, no one-hot type
            J, F, E = 1, F - J, E - J
        self.server_net = _mlp(R + 2 * J + 1, hidden, hidden)
        self.server_ids = bool(server_ids)
        if self.server_ids:  # (L, H), zero: an identity the policy learns (see the class docstring)
            self.server_embed = nn.Parameter(th.zeros(_shape(observation_space, "free")[0], hidden))
        self.job_net = _mlp(F, hidden, hidden)
        self.global_net = _mlp(2 * J + int(self.use_time) + E + 1 + 2 * hidden, hidden, hidden)
        # first layer of the pair MLP, split by input so that broadcasting replaces a (B, K, L, 3H + R) concat
        self.pair_server = nn.Linear(hidden, hidden)
        self.pair_job = nn.Linear(hidden, hidden, bias=False)
        self.pair_global = nn.Linear(hidden, hidden, bias=False)
        self.pair_residual = nn.Linear(R, hidden, bias=False)
        # the baselines' scores of each pair (obs["pair_scores"], when the env shows them): sized by the
        # number of scores only, so the weights still transfer to other L and K
        self.has_pair_scores = "pair_scores" in observation_space.spaces
        if self.has_pair_scores:
            self.pair_scores = nn.Linear(_shape(observation_space, "pair_scores")[-1], hidden, bias=False)
        self.pair_out = nn.Sequential(nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.wait_head = nn.Linear(hidden, 1)
        if action_mode == "rule":  # one logit per rule (N = the size of the rule mask), from the context
            self.rule_head = nn.Linear(hidden, _shape(observation_space, "action_mask")[0])
        # start near work-conserving: WAIT (REJECT in admit mode) is unlikely until learning says otherwise
        nn.init.constant_(self.wait_head.bias, wait_bias)
        self.value_head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        # SB3's ActorCriticPolicy reads these
        self.latent_dim_pi = 0  # set per call (the logits' size is the action space's)
        self.latent_dim_vf = 1

    def _pooled(self, obs: dict[str, th.Tensor]) -> dict[str, th.Tensor]:
        """``obs`` as ``pool_types`` reads it: per-type inputs summed over the ``J`` types (last axis kept,
        of size 1), the one-hot type (columns ``R .. R+J-1`` of a job's features) dropped."""
        R, J = self.R, self.J
        out = dict(obs)
        for key in ("running", "dummies", "queue_counts", "arrival_rates"):
            out[key] = obs[key].sum(dim=-1, keepdim=True)
        jobs = obs["queue_jobs"]
        out["queue_jobs"] = th.cat([jobs[..., :R], jobs[..., R + J :]], dim=-1)
        ev, e0 = obs["event"], _EVENT_KINDS + R
        out["event"] = th.cat([ev[..., :e0], ev[..., e0 + J :]], dim=-1)
        return out

    def _context(self, obs: dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
        """Server embeddings (B, L, H), scored jobs' features (B, K', F), their embeddings, and context (B, H)."""
        if self.pool_types:
            obs = self._pooled(obs)
        free = obs["free"]
        L = free.shape[1]
        servers = th.cat(
            [free, th.log1p(obs["running"]), th.log1p(obs["dummies"]), obs["event_server"].unsqueeze(-1)], dim=-1
        )
        h_s = self.server_net(servers)  # (B, L, H)
        if self.server_ids:
            h_s = h_s + self.server_embed
        jobs = obs["queue_jobs"]
        qmask = obs["queue_mask"].unsqueeze(-1)  # (B, K, 1)
        h_all = self.job_net(th.log1p(jobs))  # (B, K, H)
        n_jobs = qmask.sum(dim=1)
        h_jobs = (h_all * qmask).sum(dim=1) / n_jobs.clamp(min=1.0)  # masked mean (B, H)
        parts = [th.log1p(obs["queue_counts"]), th.log1p(obs["arrival_rates"] / L)]
        if self.use_time:
            parts.append(obs["time"])
        parts += [th.log1p(obs["event"]), th.log1p(n_jobs), h_s.mean(dim=1), h_jobs]
        glob = th.cat(parts, dim=-1)
        g = self.global_net(glob)  # (B, H)
        if self.action_mode in ("head", "rule"):
            scored = jobs[:, :1]
            h_j = h_all[:, :1]
        elif self.action_mode == "slot":
            scored, h_j = jobs, h_all
        else:  # admit: the arriving job is the event's job
            scored = obs["event"][:, _EVENT_KINDS:].unsqueeze(1)
            h_j = self.job_net(th.log1p(scored))
        return h_s, scored, h_j, g

    def forward(self, obs: dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor]:
        h_s, scored, h_j, g = self._context(obs)
        if self.action_mode == "rule":
            logits = self.rule_head(g)
            logits = th.where(obs["action_mask"] > 0.5, logits, th.full_like(logits, MASKED_LOGIT))
            return logits, self.value_head(g)
        B = h_s.shape[0]
        residual = obs["free"].unsqueeze(1) - scored[..., : self.R].unsqueeze(2)  # (B, K', L, R)
        pre = (
            self.pair_server(h_s).unsqueeze(1)
            + self.pair_job(h_j).unsqueeze(2)
            + self.pair_global(g)[:, None, None, :]
            + self.pair_residual(residual)
        )
        if self.has_pair_scores:  # the scored jobs' rows: (B, K', L, P)
            ps = obs["pair_scores"]
            K = obs["queue_mask"].shape[1]
            rows = ps[:, :K] if self.action_mode == "slot" else ps[:, K:] if self.action_mode == "admit" else ps[:, :1]
            pre = pre + self.pair_scores(rows)
        pair = self.pair_out(pre).squeeze(-1).reshape(B, -1)  # (B, K' * L): k * L + l
        logits = th.cat([pair, self.wait_head(g)], dim=1)
        mask = obs["action_mask"] > 0.5
        if self.work_conserving:
            can_start = mask[:, :-1].any(dim=1)
            mask = th.cat([mask[:, :-1], mask[:, -1:] & ~can_start.unsqueeze(1)], dim=1)
        logits = th.where(mask, logits, th.full_like(logits, MASKED_LOGIT))
        return logits, self.value_head(g)

    # SB3's mlp_extractor protocol
    def forward_actor(self, obs: dict[str, th.Tensor]) -> th.Tensor:
        return self.forward(obs)[0]

    def forward_critic(self, obs: dict[str, th.Tensor]) -> th.Tensor:
        _, _, _, g = self._context(obs)
        return self.value_head(g)


class DictPassThrough(BaseFeaturesExtractor):
    """Hands the (float) observation dict through unchanged: :class:`PairScorer` does the feature work."""

    def __init__(self, observation_space: gym.Space):
        super().__init__(observation_space, features_dim=1)

    def forward(self, observations: Any) -> Any:
        return observations


class _EquivariantMixin:
    """Replaces SB3's MLP extractor and linear heads by a :class:`PairScorer`."""

    if TYPE_CHECKING:  # what it uses of the SB3 actor-critic policy it is mixed into (declared as SB3 does)
        observation_space: spaces.Space
        optimizer_class: type[th.optim.Optimizer]
        optimizer_kwargs: dict[str, Any]
        optimizer: th.optim.Optimizer
        mlp_extractor: MlpExtractor
        action_net: nn.Module
        value_net: nn.Linear

        def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Any,
        action_mode: str = "head",
        hidden: int = 64,
        work_conserving: bool = False,
        wait_bias: float = -2.0,
        use_time: bool = True,
        server_ids: bool = False,
        pool_types: bool = False,
        **kwargs: Any,
    ):
        if not isinstance(observation_space, spaces.Dict) or "queue_jobs" not in observation_space.spaces:
            raise ConfigError(
                "policy", "the equivariant policy needs clustergym's Dict observation (do not flatten it)"
            )
        if not isinstance(action_space, spaces.Discrete):
            raise ConfigError("policy", f"the equivariant policy needs a Discrete action space, got {action_space}")
        self.work_conserving = settings.boolean(work_conserving, "policy.work_conserving")
        self.wait_bias = settings.number(wait_bias, "policy.wait_bias")
        self.use_time = settings.boolean(use_time, "policy.use_time")
        self.server_ids = settings.boolean(server_ids, "policy.server_ids")
        self.pool_types = settings.boolean(pool_types, "policy.pool_types")
        if self.work_conserving and action_mode == "rule":
            raise ConfigError("policy.work_conserving", "the rule mode has no WAIT to forbid: it chooses among rules")
        if self.work_conserving and action_mode == "admit":
            raise ConfigError(
                "policy.work_conserving",
                "admission ('admit' mode) has no WAIT to forbid: REJECT is the choice being learned",
            )
        self.action_mode = action_mode
        self.hidden = hidden
        kwargs.setdefault("features_extractor_class", DictPassThrough)
        kwargs.setdefault("ortho_init", False)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)  # type: ignore[call-arg]

    def _build_mlp_extractor(self) -> None:
        space = self.observation_space
        assert isinstance(space, spaces.Dict)  # checked by __init__
        # SB3 uses its extractor through forward_actor, forward_critic and latent_dim_pi/vf only
        self.mlp_extractor = PairScorer(  # type: ignore[assignment]
            space,
            self.action_mode,
            self.hidden,
            wait_bias=self.wait_bias,
            work_conserving=self.work_conserving,
            use_time=self.use_time,
            server_ids=self.server_ids,
            pool_types=self.pool_types,
        )

    def _build(self, lr_schedule: Any) -> None:
        self._build_mlp_extractor()
        self.action_net = nn.Identity()  # the extractor's actor output is already the logits
        self.value_net = nn.Identity()  # type: ignore[assignment]  # the critic's output is already the value
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore
            **self.optimizer_kwargs,
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()  # type: ignore[misc]
        data.update(
            action_mode=self.action_mode,
            hidden=self.hidden,
            work_conserving=self.work_conserving,
            wait_bias=self.wait_bias,
            use_time=self.use_time,
            server_ids=self.server_ids,
            pool_types=self.pool_types,
        )
        return data


class EquivariantPolicy(_EquivariantMixin, ActorCriticPolicy):
    """Permutation-equivariant actor-critic for ``PPO``/``A2C`` (masks applied inside the network)."""


class EquivariantMaskablePolicy(_EquivariantMixin, MaskableActorCriticPolicy):
    """Permutation-equivariant actor-critic for ``sb3_contrib.MaskablePPO``."""


def transfer_policy(policy: BasePolicy, observation_space: spaces.Space, action_space: spaces.Space) -> BasePolicy:
    """The same weights in a policy built for other spaces (another number of servers or queue window).

    Works for the equivariant policies, whose parameters do not depend on ``L``
    or ``K``; raises :class:`ConfigError` for a policy whose parameter shapes do (the ``mlp``
    policy, and an equivariant one with ``server_ids`` on another number of servers).
    """
    if observation_space == policy.observation_space and action_space == policy.action_space:
        return policy
    if not isinstance(policy, _EquivariantMixin):
        raise ConfigError(
            "agent",
            f"this model's policy ({type(policy).__name__}) has inputs sized for "
            f"{policy.observation_space} and cannot run on other spaces; "
            "train with --policy equivariant to transfer across cluster sizes",
        )
    trained_space = policy.observation_space
    if not isinstance(trained_space, spaces.Dict) or not isinstance(observation_space, spaces.Dict):
        raise ConfigError("agent", "the equivariant policy reads clustergym's Dict observation (do not flatten it)")
    data = policy._get_constructor_parameters()
    had, has = ("pair_scores" in space.spaces for space in (trained_space, observation_space))
    if had != has:
        trained, here = ("with", "without") if had else ("without", "with")
        raise ConfigError(
            "agent",
            f"this model was trained {trained} the pair scores in its observation (env argument "
            f"pair_features) and this env is {here} them: run it with pair_features={str(had).lower()}",
        )
    trained_L, L = _shape(trained_space, "free")[0], _shape(observation_space, "free")[0]
    if data.get("server_ids") and L != trained_L:
        raise ConfigError(
            "agent",
            f"this model learned an identity for each of its {trained_L} "
            f"servers (policy.server_ids) and cannot run on {L}",
        )
    data.update(observation_space=observation_space, action_space=action_space)
    new = type(policy)(**data)
    try:
        new.load_state_dict(policy.state_dict())
    except RuntimeError as e:  # torch: "size mismatch for ...": weights sized by the number of resources
        first = str(e).strip().splitlines()[-1].strip()
        types = "" if data.get("pool_types") else " (policy.pool_types=true frees the weights from the job types)"
        raise ConfigError(
            "agent",
            f"this model was trained on a cluster of another shape (resources or job "
            f"types) and its weights do not fit this one{types}: {first}",
        ) from None
    new.set_training_mode(False)
    return new


def masked_logits(policy: Any, obs: Any, mask: np.ndarray) -> np.ndarray:
    """``(n_actions,)`` scores of an SB3 policy for one (numpy) observation, invalid actions at ``MASKED_LOGIT``.

    Actor-critic policies give the actor's logits (before the softmax: the same
    argmax and the same softmax as their distribution); DQN's gives Q-values.
    """
    with th.inference_mode():
        tensor, _ = policy.obs_to_tensor(obs)
        if hasattr(policy, "q_net"):
            scores = policy.q_net(tensor)
        else:
            features = policy.extract_features(tensor)
            if isinstance(features, tuple):  # separate actor and critic extractors
                features = features[0]
            scores = policy.action_net(policy.mlp_extractor.forward_actor(features))
    out = scores.reshape(-1).cpu().numpy().astype(np.float64)
    out[~mask] = MASKED_LOGIT
    return out
