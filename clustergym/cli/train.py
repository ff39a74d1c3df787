"""``clustergym train``: train an RL agent into a model file that runs anywhere an agent name does."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import typer

from clustergym.cli._common import err, out, print_json
from clustergym.cli.values import parse_pairs, parse_stage

# the options whose help takes several lines
_SCENARIO = typer.Argument(None, help="preset name, scenario file or suite task (not needed with --resume)")

_TIMESTEPS = typer.Option(
    None, "--timesteps", help="total env steps (default 100000; with --resume: the run's own total)"
)

_OUT_DIR = typer.Option(
    None,
    "--out",
    help="a new or empty folder (default runs/train): model.zip, model.json, checkpoints/, tb/, eval.csv",
)

_OVERWRITE = typer.Option(
    False,
    "--overwrite",
    help="--out may hold an earlier run: its files are replaced; with --resume: go back to an earlier checkpoint",
)

_ENVS = typer.Option(
    None, "--envs", help="envs per rollout (default: 16 in-process, the available cores with --vec-env subproc)"
)

_VEC_ENV = typer.Option(
    "batched",
    "--vec-env",
    help="batched (default: in-process, the envs stepped as one batch with array operations; "
    "action_mode=rule runs as dummy), dummy (SB3's DummyVecEnv, one env at a time) or subproc "
    "(a process per env); all give the same trajectories",
)

_EVAL_HORIZON = typer.Option(None, "--eval-horizon", help="evaluation episode length (default: the training horizon)")

_RESUME = typer.Option(
    None,
    "--resume",
    help="continue a run: its folder (its latest point) or one of its checkpoints; its whole configuration "
    "(total steps, --set settings, evaluations, stages) is restored from its model.json; an earlier "
    "checkpoint of a run that went further needs --overwrite (its later work is removed)",
)

_SET = typer.Option(
    [],
    "--set",
    help="scenario parameter k=v; env: action_mode (head, slot, admit, rule), rules (rule mode: "
    "comma-separated agents), queue_window, horizon, reward_scale; algo.<name>=v for the algorithm; "
    "policy.work_conserving=true, policy.server_ids=true, policy.pool_types=true; semi_markov=true|T (gamma per T of simulated time)",
)

_WARM_START = typer.Option(
    None, "--warm-start", help="baseline to imitate before RL (behaviour cloning), e.g. best-fit"
)

_DECODING = typer.Option(
    "two-level",
    "--decoding",
    help="how the model acts when evaluated: two-level (WAIT against all placements, then the best "
    "placement), argmax, or sample (a seeded draw: a stochastic policy)",
)

_STAGE = typer.Option(
    [],
    "--stage",
    help="curriculum stage STEPS:key=value[,key=value] (repeatable, in order): STEPS steps with those scenario "
    "parameters changed (e.g. 100000:load=1.5, 50000:num_servers=10), then the rest of --timesteps on the "
    "scenario or task itself",
)

_SEEDS = typer.Option(
    None,
    "--seeds",
    help="a sweep: one run per seed (0-4, 0,3,7 or 0-2,10), each in OUT/s<seed> (OUT default runs/train), "
    "the models of `--seed S` runs; --resume OUT continues the sweep",
)

_WORKERS = typer.Option(
    None, "--workers", help="with --seeds: runs trained at once on local processes (default: the available cores)"
)

_RAY = typer.Option(
    None,
    "--ray",
    help="with --seeds: one Ray task per run ('auto', HOST:PORT or ray://HOST:PORT); OUT must be on a "
    "filesystem every node mounts (docs/distributed.md)",
)

_CPU_BUDGET = typer.Option(
    None,
    "--cpu-budget",
    help="CPU seconds the whole run may take, every process of it (model.json's cpu_seconds_total): once "
    "spent, the run ends at the next policy update and that policy is the model; --resume may give another",
)

_TORCH_THREADS = typer.Option(
    1,
    "--torch-threads",
    help="the learner's torch CPU threads (default 1; more make the equivariant policy's update faster on idle "
    "cores, cut with a warning to the cores the env processes leave; the weights then depend on the count)",
)

_JSON_OUT = typer.Option(
    False, "--json", help="print one JSON document: the model's path and its model.json (no progress on stdout)"
)


def train_cmd(
    scenario: str | None = _SCENARIO,
    algo: str | None = typer.Option(None, "--algo", help="ppo, maskable-ppo (default), dqn or a2c"),
    timesteps: int | None = _TIMESTEPS,
    out_dir: Path | None = _OUT_DIR,
    overwrite: bool = _OVERWRITE,
    policy: str | None = typer.Option(None, "--policy", help="mlp (flattened observation) or equivariant (default)"),
    envs: int | None = _ENVS,
    vec_env: str = _VEC_ENV,
    seed: int | None = typer.Option(None, "--seed", help="default 0 (a resumed run: its own)"),
    eval_agents: str = typer.Option("", "--eval-agents", help="comma-separated baselines evaluated beside the policy"),
    eval_every: int = typer.Option(0, "--eval-every", help="steps between evaluations (0: only at the end)"),
    eval_seeds: int = typer.Option(3, "--eval-seeds", help="evaluation seeds 0..N-1"),
    eval_horizon: float | None = _EVAL_HORIZON,
    resume: Path | None = _RESUME,
    set_: list[str] = _SET,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bar"),
    warm_start: str | None = _WARM_START,
    decoding: str = _DECODING,
    warm_start_steps: int = typer.Option(20_000, "--warm-start-steps", help="teacher decisions recorded"),
    warm_start_epochs: int = typer.Option(10, "--warm-start-epochs", help="passes over the teacher's decisions"),
    stage: list[str] = _STAGE,
    seeds: str | None = _SEEDS,
    workers: int | None = _WORKERS,
    ray_address: str | None = _RAY,
    cpu_budget: float | None = _CPU_BUDGET,
    torch_threads: int = _TORCH_THREADS,
    json_out: bool = _JSON_OUT,
) -> None:
    """Train an RL agent; the saved OUT/model.zip (or OUT itself) runs anywhere an agent name does.

    With --seeds, a sweep: one run per seed, each in OUT/s<seed>, in parallel (--workers) or on Ray (--ray).
    """
    from clustergym.errors import require_extra

    require_extra(("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm"), "train", "clustergym train")
    from clustergym.training.curriculum import Stage
    from clustergym.training.sweep import is_sweep
    from clustergym.training.train import TrainConfig, describe_run, train

    sweep = seeds is not None or (resume is not None and is_sweep(resume))
    _check_sweep_options(sweep, seed, workers, ray_address)

    config = TrainConfig(
        scenario=scenario,
        algo=algo or "maskable-ppo",
        policy=policy or "equivariant",
        timesteps=timesteps,
        n_envs=envs,
        vec_env=vec_env,
        seed=seed or 0,
        params=parse_pairs(set_),
        decoding=decoding,
        eval_agents=tuple(a.strip() for a in eval_agents.split(",") if a.strip()),
        eval_every=eval_every,
        eval_seeds=tuple(range(eval_seeds)),
        eval_horizon=eval_horizon,
        curriculum=tuple(Stage(*parse_stage(text)) for text in stage),
        warm_start=warm_start,
        warm_start_steps=warm_start_steps,
        warm_start_epochs=warm_start_epochs,
        cpu_budget=cpu_budget,
        torch_threads=torch_threads,
        out=None if sweep else out_dir,
        overwrite=overwrite,
        resume=resume,
        progress_bar=progress and not json_out and not sweep,
        verbose=not json_out and not sweep,
    )
    if sweep:
        _sweep(config, seeds, out_dir, resume, workers, ray_address, json_out)
        return
    with _warnings_on_stderr():
        path = train(config)
    if json_out:
        print_json({"model": str(path), "metadata": json.loads((path.parent / "model.json").read_text())})
        return
    out.print(describe_run(path.parent), highlight=False)


def _check_sweep_options(sweep: bool, seed: int | None, workers: int | None, ray_address: str | None) -> None:
    """``--workers`` and ``--ray`` run the runs of a sweep; ``--seed`` is one run's."""
    from clustergym.errors import ConfigError

    if not sweep and (workers is not None or ray_address is not None):
        raise ConfigError("--workers" if workers is not None else "--ray", "runs the runs of a sweep: add --seeds")
    if sweep and seed is not None:
        raise ConfigError("--seed", "a sweep trains one run per seed of --seeds: drop --seed")


def _sweep(
    config: Any,
    seeds: str | None,
    out_dir: Path | None,
    resume: Path | None,
    workers: int | None,
    ray: str | None,
    json_out: bool,
) -> None:
    """``--seeds``: the sweep (:func:`clustergym.training.sweep.train_sweep`), a line per run as it ends."""
    from clustergym.errors import ConfigError
    from clustergym.training.sweep import train_sweep

    if resume is not None and out_dir is not None and out_dir.resolve() != resume.resolve():
        raise ConfigError("--out", f"--resume {resume} continues that sweep; --out {out_dir} is another folder")
    folder = resume if resume is not None else (out_dir or Path("runs/train"))

    def said(r: dict[str, Any]) -> None:
        if not json_out:
            err.print(f"seed {r['seed']}: {r['status']}, {r['timesteps']:,} steps -> {r['model']}", highlight=False)

    with _warnings_on_stderr():
        runs = train_sweep(
            config,  # its resume (a sweep's folder) is not a run's: train_sweep reads the sweep's record
            seeds,
            folder,
            workers=workers,
            ray=ray,
            resume=resume is not None,
            overwrite=config.overwrite,
            on_run=said,
        )
    if json_out:
        print_json({"sweep": str(folder), "runs": runs})
        return
    folders = " ".join(str(Path(r["model"]).parent) for r in runs)
    out.print(f"{len(runs)} runs in {folder}; score them together: clustergym benchmark {folders}", highlight=False)


def _warnings_on_stderr() -> contextlib.AbstractContextManager[None]:
    """A training warning (:class:`~clustergym.training.run_folder.TrainingWarning`: steps taken
    other than asked, evaluations removed) as one ``warning:`` line on stderr, without a source line."""
    from clustergym.training.run_folder import training_warnings_as_lines

    def write(message: str) -> None:
        err.print("[bold yellow]warning:[/] ", end="", markup=True)
        err.print(message, markup=False, highlight=False)

    return training_warnings_as_lines(write)
