"""Gymnasium's and Stable-Baselines3's standard idioms on clustergym's ids: the ``rgb_array`` render
on every id, ``make_vec_env`` (which asks for ``rgb_array``), ``SubprocVecEnv``, ``evaluate_policy``,
``VecVideoRecorder`` and ``RecordVideo``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import clustergym  # registers the ids
from clustergym.envs.registration import register_envs
from clustergym.envs.viewer import FRAME_WIDTH, MAX_ROWS, frame_height
from clustergym.suite import SUITE_IDS
from clustergym.traces.paths import TraceNotFoundError

# the presets replaying real traces draw as the others (one environment class) and take tens of
# seconds to load; the suite's trace task stands for them
ALL_IDS = [i for i in register_envs() + SUITE_IDS if not any(w in i for w in ("google", "alibaba", "azure"))] + [
    "clustergym/azure-vms-v1"
]


def _make(env_id: str, **kwargs):
    try:
        return gym.make(env_id, render_mode="rgb_array", **kwargs)
    except TraceNotFoundError as e:
        pytest.skip(f"{env_id} needs the real traces: {e}")


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_rgb_array_render_on_every_id(env_id):
    env = _make(env_id)
    env.reset(seed=0)
    frame = env.render()
    view = env.unwrapped.view
    assert frame.dtype == np.uint8
    assert frame.shape == (frame_height(view.num_servers, view.num_resources), FRAME_WIDTH, 3)
    env.step(env.action_space.sample())
    assert env.render().shape == frame.shape  # one frame size per env: a video's frames
    env.close()


def _server_rows(env, frame: np.ndarray) -> np.ndarray:
    """The part of the frame below the queue: the server rows."""
    view = env.unwrapped.view
    rows = frame_height(min(view.num_servers, MAX_ROWS), view.num_resources) - frame_height(0, view.num_resources)
    return frame[frame.shape[0] - rows - 4 :]


def test_a_placement_changes_the_server_rows_and_a_wait_the_time():
    env = _make("clustergym/rms-trap-v1")
    obs, _ = env.reset(seed=1)
    before = env.render()
    mask = obs["action_mask"].astype(bool)
    server = int(np.flatnonzero(mask[:-1])[0])  # a valid placement of the head job (head mode: L + 1 actions)
    obs, *_ = env.step(server)
    after = env.render()
    assert not np.array_equal(_server_rows(env, before), _server_rows(env, after))
    assert np.array_equal(before[:12], after[:12]) or env.unwrapped.sim.now > 0  # the header moves with time only
    t = env.unwrapped.sim.now
    while env.unwrapped.sim.now == t:
        obs, *_ = env.step(env.action_space.n - 1)  # WAIT
    assert not np.array_equal(after[:12], env.render()[:12])  # the header shows the new time


def test_no_render_mode_renders_nothing():
    env = gym.make("clustergym/rms-trap-v1")
    env.reset(seed=0)
    assert env.render() is None


sb3 = pytest.importorskip("stable_baselines3")


def test_make_vec_env_and_evaluate_policy_on_a_suite_id():
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    venv = make_vec_env("clustergym/rms-trap-v1", n_envs=2, seed=0)  # asks for render_mode="rgb_array"
    model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    images = venv.get_images()
    assert len(images) == 2 and images[0].ndim == 3
    short = make_vec_env("clustergym/rms-trap-v1", n_envs=1, seed=0, env_kwargs={"max_episode_steps": 50})
    mean, std = evaluate_policy(model, short, n_eval_episodes=2)
    assert np.isfinite(mean) and mean <= 0.0  # a queue-length objective: returns are negative integrals
    venv.close()


SUBPROC_SCRIPT = """
import numpy as np
import clustergym  # registers the ids; SubprocVecEnv's forkserver imports this script in its workers
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

if __name__ == "__main__":
    venv = make_vec_env("clustergym/mris-poisson-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    venv.reset()
    for _ in range(5):
        obs, rewards, dones, infos = venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
    assert rewards.shape == (2,) and "score" in infos[0] and obs["action_mask"].shape[0] == 2
    print(venv.get_images()[0].shape)
    venv.close()
"""


def test_subproc_vec_env_steps_a_suite_id(tmp_path):
    """As a user's script runs it (pytest's own process is not a script SubprocVecEnv's workers import)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(SUBPROC_SCRIPT)
    root = str(Path(clustergym.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith(", 320, 3)")


def _placement_trajectory(env, steps: int = 12) -> None:
    """Reset on seed 1, place the head job at once (a placement changes the server rows), then take
    ``steps`` random actions."""
    obs, _ = env.reset(seed=1)
    env.step(int(np.flatnonzero(obs["action_mask"][:-1])[0]))
    for _ in range(steps):
        env.step(env.action_space.sample())


def _assert_frames_of(env, frames: list[np.ndarray], lossless: bool) -> None:
    """Frames read back from a recording of :func:`_placement_trajectory`: the render's shape, even
    sides (4:2:0 video), and the placement (frame 0 to frame 1) changes the server rows: exactly,
    or by more than a lossy codec's noise."""
    view = env.unwrapped.view
    shape = (frame_height(view.num_servers, view.num_resources), FRAME_WIDTH, 3)
    assert len(frames) >= 3 and all(f.shape == shape for f in frames) and shape[0] % 2 == 0
    before, after = (_server_rows(env, f).astype(int) for f in frames[:2])
    assert np.abs(after - before).max() > (0 if lossless else 60)


def test_rendered_frames_write_and_read_back_without_moviepy(tmp_path):
    """What runs where moviepy is not installed (CI): Gymnasium's ``RenderCollection`` captures the
    ``rgb_array`` frames after reset and each step, as ``RecordVideo`` does, and Pillow writes them as
    an animated PNG (lossless); the frames read back are the rendered ones."""
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (pip install -e '.[dev]')")
    from PIL import ImageSequence

    env = gym.wrappers.RenderCollection(_make("clustergym/rms-trap-v1"))
    _placement_trajectory(env)
    rendered = env.render()
    first, *rest = (Image.fromarray(f) for f in rendered)
    first.save(tmp_path / "episode.png", save_all=True, append_images=rest, duration=250)
    with Image.open(tmp_path / "episode.png") as video:
        frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(video)]
    # the encoder merges a frame equal to the one before it (a step that changed nothing drawn)
    distinct = [f for i, f in enumerate(rendered) if i == 0 or not np.array_equal(f, rendered[i - 1])]
    assert len(frames) == len(distinct) and all(np.array_equal(a, b) for a, b in zip(frames, distinct))
    _assert_frames_of(env, frames, lossless=True)
    env.close()


# RecordVideo and VecVideoRecorder write with moviepy: the `video` extra (in `dev`), moviepy 1.0.3,
# because moviepy 2.x caps Pillow below 12 (docs/environments.md, "Rendering and the standard tools")
NO_MOVIEPY = pytest.mark.skipif(
    importlib.util.find_spec("moviepy") is None,
    reason="RecordVideo and VecVideoRecorder need moviepy (pip install 'clustergym[video]'), not installed here: "
    "test_rendered_frames_write_and_read_back_without_moviepy records the same frames",
)


def _read_back(path: Path) -> list[np.ndarray]:
    import imageio.v2 as imageio  # with imageio-ffmpeg: what moviepy itself writes with

    with imageio.get_reader(str(path), format="ffmpeg") as reader:
        return [np.asarray(frame) for frame in reader]


@NO_MOVIEPY
def test_vec_video_recorder_writes_a_video_whose_frames_read_back(tmp_path):
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecVideoRecorder

    venv = make_vec_env("clustergym/autoscale-syn4-v1", n_envs=1, seed=0)
    rec = VecVideoRecorder(venv, str(tmp_path), record_video_trigger=lambda step: step == 0, video_length=20)
    rec.reset()
    for _ in range(25):
        rec.step(np.array([venv.action_space.sample()]))
    rec.close()
    frames = _read_back(sorted(tmp_path.glob("*.mp4"))[0])
    view = venv.envs[0].unwrapped.view
    assert frames[0].shape == (frame_height(view.num_servers, view.num_resources), FRAME_WIDTH, 3)
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])


@NO_MOVIEPY
def test_record_video_writes_a_video_whose_frames_read_back(tmp_path):
    env = gym.wrappers.RecordVideo(_make("clustergym/rms-trap-v1"), str(tmp_path / "videos"))
    _placement_trajectory(env)
    env.close()
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 1
    _assert_frames_of(env, _read_back(videos[0]), lossless=False)
