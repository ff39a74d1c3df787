"""docs/environments.md stays true: its observation and info tables list exactly the env's keys, in order."""

import re
from pathlib import Path

import numpy as np

from clustergym.core.commands import EventKind
from clustergym.envs import make_env
from clustergym.envs.actions import ACTION_MODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "environments.md"


def _table(section: str) -> list[list[str]]:
    """Rows (cells without backticks) of the first table under the ``## section`` heading."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("|")][2:]
    return [[c.strip().strip("`") for c in r.strip("|").split("|")] for r in rows]


def test_observation_table_lists_every_key_in_the_space_order_with_its_shape():
    env = make_env("ec2", horizon=20, queue_window=4, pair_features=True)  # every key, the optional one too
    obs, _ = env.reset(seed=0)
    rows = _table("Observation keys")
    assert [r[0] for r in rows] == list(env.observation_space.spaces) == list(obs)
    L, R, J, K = 20, 3, 3, 4
    sizes = {
        "L": L,
        "R": R,
        "J": J,
        "K": K,
        "F": R + J + 3,
        "M": obs["action_mask"].shape[0],
        "P": 5,
    }  # P: pair_features=True
    for key, shape, *_ in rows:
        dims = [d for d in shape.split("`")[0].strip("()").split(",") if d.strip()]  # "(5 + F,)", "(M,)`, `int8"
        want = tuple(eval(d, {"__builtins__": {}}, sizes) for d in dims)
        assert obs[key].shape == want, key
        assert obs[key].dtype == (np.int8 if key == "action_mask" else np.float32), key


def test_info_table_lists_every_key_the_env_returns():
    env = make_env("ec2", horizon=5.0, invalid_action="penalize")
    _, info = env.reset(seed=1)
    documented = {r[0] for r in _table("`info` keys")}
    seen = set(info)
    _, _, _, _, info = env.step(-1)  # malformed: not executed, and said why
    seen |= set(info)
    assert info["invalid_action"] and info["invalid_reason"]
    done = False
    while not done:
        _, _, term, trunc, info = env.step(int(np.flatnonzero(env.action_masks())[-1]))
        seen |= set(info)
        done = term or trunc
    assert "metrics" in info
    assert seen == documented


def test_event_kinds_in_the_doc_are_the_kernels():
    row = next(r for r in _table("`info` keys") if r[0] == "event")
    named = set(re.findall(r"`(\w+)`", DOC.read_text(encoding="utf-8").split("| `event` | str |", 1)[1].split("\n")[0]))
    assert named == {k.name.lower() for k in EventKind}, row


def test_action_mode_table_names_every_mode():
    assert [r[0] for r in _table("Action modes")] == list(ACTION_MODES)
