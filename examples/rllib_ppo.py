"""PPO with Ray RLlib on a registered clustergym environment, for runs that outgrow one machine.

Stable-Baselines3 (``clustergym train``) trains on one process.  RLlib spreads the
rollouts over Ray workers (``--env-runners``), on this machine or on a cluster
(``--ray-address``); the environment is the same Gymnasium id.  This script uses
RLlib's new API stack: an ``RLModule`` (RLlib's action-masking PPO module, so the
policy only picks valid actions), ``EnvRunner`` s and a ``Learner``.

Install the pieces RLlib needs with ``pip install -e ".[rllib]"`` (see
``pyproject.toml`` for why that extra is not ``ray[rllib]``).  Then::

    python examples/rllib_ppo.py --iterations 50 --env-runners 2
    python examples/rllib_ppo.py --ray-address auto --env-runners 32    # on a Ray cluster

It prints one line per training iteration and, at the end, the mean queue length of
the greedy policy next to Best-Fit's on the same seeds (common random numbers).

This is the plumbing, not a tuned trainer: the hyperparameters are RLlib-style defaults
and nothing here is tuned for scheduling.  Measured on 2 shared cores, 15 iterations of
2,000 steps (``--iterations 15 --env-runners 1 --batch 2000 --minibatch 128 --epochs 5
--horizon 50``, about 3 minutes) leave a policy far worse than Best-Fit (mean queue length
1936 against 0.42 on seeds 1000-1004): an episode of horizon 50 is longer than a batch,
and the policy has not yet learned to place rather than WAIT.  For policies that do
learn on one machine, see ``clustergym train`` (SB3).
``tests/examples/test_rllib_example.py`` runs one tiny iteration.
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import FlattenObservation

import clustergym  # noqa: F401  (registers the clustergym/* environment ids)


# ---------------------------------------------------------------------------------------- environment
class MaskedFlatObservation(gym.ObservationWrapper):
    """``{"observations": the flat float32 vector, "action_mask": 0/1 float32 of shape (n_actions,)}``.

    RLlib's action-masking PPO module reads exactly these two keys: it builds its
    networks on ``observations`` and sets the logits of masked actions to -inf.
    """

    def __init__(self, env: FlattenObservation):
        super().__init__(env)
        n = int(env.action_space.n)  # type: ignore[attr-defined]
        self.observation_space = spaces.Dict({"action_mask": spaces.Box(0.0, 1.0, (n,), np.float32),
                                              "observations": env.observation_space})

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {"action_mask": self.env.get_wrapper_attr("action_masks")().astype(np.float32), "observations": observation}


def make_env(env_config: dict[str, Any]) -> gym.Env:
    """The env RLlib's workers build: ``env_config["env_id"]`` (default ``clustergym/ec2-v0``),
    the other keys passed to ``gymnasium.make`` (preset parameters such as ``zeta``, ``horizon``)."""

    config = dict(env_config)
    env_id = config.pop("env_id", "clustergym/ec2-v0")
    return MaskedFlatObservation(FlattenObservation(gym.make(env_id, **config)))


# ------------------------------------------------------------------------------------------ arguments
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env-id", default="clustergym/ec2-v0", help="a registered clustergym environment id")
    p.add_argument("--zeta", type=float, default=0.9, help="traffic intensity of the ec2 preset")
    p.add_argument("--horizon", type=float, default=200.0, help="simulated time per episode")
    p.add_argument("--iterations", type=int, default=20, help="training iterations (algo.train() calls)")
    p.add_argument("--env-runners", type=int, default=2, help="rollout workers (0: sample in this process)")
    p.add_argument("--batch", type=int, default=4000, help="env steps per training iteration")
    p.add_argument("--minibatch", type=int, default=256)
    p.add_argument("--epochs", type=int, default=10, help="SGD passes over each batch")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-seeds", type=int, default=5, help="evaluation episodes (seeds 1000..)")
    p.add_argument("--ray-address", default=None, help="a running Ray cluster ('auto', HOST:PORT); "
                                                       "default: start a new Ray instance on this machine")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of the Ray instance started here")
    p.add_argument("--checkpoint", default=None, help="save the trained algorithm to this directory")
    return p.parse_args(argv)


# -------------------------------------------------------------------------------------- configuration
def build_config(args: argparse.Namespace) -> Any:
    """A PPO config on the new API stack with RLlib's action-masking RLModule."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env_config = {"env_id": args.env_id, "horizon": args.horizon}
    if args.env_id == "clustergym/ec2-v0":
        env_config["zeta"] = args.zeta
    return (
        PPOConfig()
        .environment("clustergym", env_config=env_config)
        .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=1)
        .training(lr=args.lr, train_batch_size_per_learner=args.batch, minibatch_size=args.minibatch,
                  num_epochs=args.epochs, gamma=0.99)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                                               model_config={"head_fcnet_hiddens": [64, 64]}))
        .debugging(seed=args.seed)
    )


# ----------------------------------------------------------------------------------------- evaluation
def greedy_action(module: Any, obs: dict[str, np.ndarray]) -> int:
    """The most likely valid action of the trained module (masked logits)."""
    import torch
    from ray.rllib.core.columns import Columns

    batch = {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in obs.items()}}
    with torch.no_grad():
        logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    return int(torch.argmax(logits[0]))


def evaluate(module: Any, env_config: dict[str, Any], seeds: list[int]) -> list[float]:
    """Mean queue length of the greedy policy, one episode per seed."""
    out = []
    for seed in seeds:
        env = make_env(env_config)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(greedy_action(module, obs))
            done = terminated or truncated
        out.append(float(env.unwrapped.metrics()["mean_queue_length"]))
    return out


# ---------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, print progress, evaluate against Best-Fit; returns the last iteration's figures."""
    import ray
    from ray.tune.registry import register_env

    from clustergym.runner import run_episode

    args = parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.ray_address or "local", num_cpus=args.num_cpus, include_dashboard=False)
    register_env("clustergym", make_env)

    config = build_config(args)
    algo = config.build_algo()
    last: dict[str, Any] = {}
    for it in range(1, args.iterations + 1):
        result = algo.train()
        runners = result.get("env_runners", {})
        last = {"iteration": it,
                "episode_return_mean": runners.get("episode_return_mean", float("nan")),
                "env_steps": result.get("num_env_steps_sampled_lifetime",
                                        runners.get("num_env_steps_sampled_lifetime", 0))}
        print(f"iteration {it}: mean episode return {last['episode_return_mean']:.3f}, "
              f"env steps {last['env_steps']}")
    if args.checkpoint:
        print("checkpoint:", algo.save(args.checkpoint))

    seeds = list(range(1000, 1000 + args.eval_seeds))
    learned = evaluate(algo.get_module(), config.env_config, seeds)
    preset = args.env_id.removeprefix("clustergym/").removesuffix("-v0")
    params = {"zeta": args.zeta} if preset == "ec2" else {}
    from clustergym.scenarios import resolve_scenario

    sc = resolve_scenario(preset, **params)
    best_fit = [float(run_episode(sc, "best-fit", seed=s, horizon=args.horizon)["mean_queue_length"])
                for s in seeds]
    print(f"mean queue length on seeds {seeds[0]}..{seeds[-1]}: PPO (RLlib) {np.mean(learned):.4g}, "
          f"Best-Fit {np.mean(best_fit):.4g}")
    algo.stop()
    return {**last, "ppo_mean_queue_length": learned, "best_fit_mean_queue_length": best_fit}


if __name__ == "__main__":
    main()
