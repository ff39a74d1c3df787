"""Loading a model folder never runs code it carries: a pickle whose ``__reduce__`` writes a marker file
(and one calling ``os.system``) is planted in every file a model folder has -- each pickled entry of
``model.zip``'s ``data``, each ``.pth`` member, the normalisation statistics, ``model.json`` -- and the
load either fails with a clear error or loads safely; the marker is never created."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("stable_baselines3", reason="needs the train extra")

from clustergym.cli import app
from clustergym.errors import ConfigError
from clustergym.learned.model_agent import REBUILT, load_model_agent
from clustergym.training.train import train

pytestmark = pytest.mark.usefixtures("quiet_warnings")
TINY = {"horizon": 3.0, "algo.n_steps": 64, "algo.batch_size": 32, "algo.n_epochs": 1}


class _Touch:
    """Unpickling this creates ``path``."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


class _System:
    """Unpickling this runs a shell command creating ``path``."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def _payload(marker: Path, kind: str) -> bytes:
    return pickle.dumps(_Touch(marker) if kind == "touch" else _System(marker))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Tiny runs: an equivariant masked PPO (no observation statistics) and an mlp PPO (with them)."""
    base = tmp_path_factory.mktemp("payload-models")
    eq, mlp = base / "eq", base / "mlp"
    train("ec2", "maskable-ppo", timesteps=64, n_envs=1, out=eq, verbose=False, hidden=8, num_servers=4, **TINY)
    train("ec2", "ppo", policy="mlp", timesteps=64, n_envs=1, out=mlp, verbose=False, hidden=8, num_servers=4, **TINY)
    return {"equivariant": eq, "mlp": mlp}


def _rewrite_zip(path: Path, member: str, data: bytes) -> None:
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    entries[member] = data
    with zipfile.ZipFile(path, "w") as z:
        for n, b in entries.items():
            z.writestr(n, b)


def _plant_data(path: Path, key: str, payload: bytes) -> None:
    """``key`` of the zip's ``data`` JSON becomes a serialized entry holding ``payload``."""
    with zipfile.ZipFile(path) as z:
        data = json.loads(z.read("data"))
    data[key] = {":type:": "<class 'object'>", ":serialized:": base64.b64encode(payload).decode()}
    _rewrite_zip(path, "data", json.dumps(data).encode())


def _load_without_running(folder: Path, marker: Path) -> None:
    """Load ``folder`` as an agent: a clear ConfigError or a model; the marker must not exist."""
    try:
        agent = load_model_agent(folder)
    except ConfigError as e:
        assert str(folder) in str(e)
    else:
        assert agent.policy is not None
    assert not marker.exists(), "a payload ran"


def _case(runs: dict[str, Path], tmp_path: Path, policy: str) -> tuple[Path, Path]:
    folder = tmp_path / "model"
    shutil.copytree(runs[policy], folder)
    (folder / "model.json").write_text(
        json.dumps({k: v for k, v in json.loads((folder / "model.json").read_text()).items() if k != "sha256"})
    )  # no digests: the payload must be stopped by the formats themselves, not by a checksum
    return folder, tmp_path / "marker"


DATA_KEYS = sorted({*REBUILT, "policy_kwargs", "learning_rate", "some_new_object"})


@pytest.mark.parametrize("kind", ["touch", "system"])
@pytest.mark.parametrize("key", DATA_KEYS)
def test_no_pickled_data_entry_runs(runs, tmp_path, key, kind):
    folder, marker = _case(runs, tmp_path, "equivariant")
    _plant_data(folder / "model.zip", key, _payload(marker, kind))
    _load_without_running(folder, marker)


@pytest.mark.parametrize("member", ["policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"])
def test_no_pth_member_runs(runs, tmp_path, member):
    folder, marker = _case(runs, tmp_path, "equivariant")
    _rewrite_zip(folder / "model.zip", member, _payload(marker, "touch"))
    _load_without_running(folder, marker)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["vecnormalize.npz", "vecnormalize.pkl"])
def test_no_normalisation_file_runs(runs, tmp_path, name):
    folder, marker = _case(runs, tmp_path, "mlp")
    (folder / "vecnormalize.npz").unlink()
    if name.endswith(".npz"):  # an npz whose member is a pickled object array
        import numpy as np

        arr = np.empty(1, dtype=object)
        arr[0] = _Touch(marker)
        np.savez(folder / name, clip_obs=arr)
    else:
        (folder / name).write_bytes(_payload(marker, "touch"))
    with pytest.raises(ConfigError, match="vecnormalize"):
        load_model_agent(folder)
    assert not marker.exists()


def test_model_json_with_a_pickle_is_a_clear_error(runs, tmp_path):
    folder, marker = _case(runs, tmp_path, "equivariant")
    (folder / "model.json").write_bytes(_payload(marker, "touch"))
    with pytest.raises(ConfigError, match="model.json: damaged metadata"):
        load_model_agent(folder)
    assert not marker.exists()


def test_the_cli_refuses_a_planted_model_with_exit_2(runs, tmp_path):
    folder, marker = _case(runs, tmp_path, "equivariant")
    _plant_data(folder / "model.zip", "some_new_object", _payload(marker, "system"))
    res = CliRunner().invoke(app, ["run", "ec2", "--agent", str(folder), "--set", "num_servers=4", "--json"])
    assert res.exit_code == 2, res.stdout
    assert "pickled objects clustergym does not rebuild" in json.loads(res.stdout)["error"]["message"]
    assert not marker.exists()


def test_an_mlp_model_without_its_statistics_is_refused(runs, tmp_path):
    folder, _ = _case(runs, tmp_path, "mlp")
    (folder / "vecnormalize.npz").unlink()
    with pytest.raises(ConfigError, match="without its normalisation statistics"):
        load_model_agent(folder)


def test_a_changed_file_is_refused_by_its_digest(runs, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(runs["mlp"], folder)
    assert set(json.loads((folder / "model.json").read_text())["sha256"]) >= {"model.zip", "vecnormalize.npz"}
    load_model_agent(folder)  # as saved: loads
    import numpy as np

    with np.load(folder / "vecnormalize.npz") as z:
        arrays = dict(z)
    np.savez(folder / "vecnormalize.npz", **{**arrays, "clip_obs": np.asarray(3.0)})
    with pytest.raises(ConfigError, match="vecnormalize.npz: its SHA-256 does not match"):
        load_model_agent(folder)


def test_the_payloads_do_run_when_unpickled(tmp_path):
    """The control: the planted bytes are live payloads (plain SB3 ``load`` would run them)."""
    import cloudpickle

    for i, kind in enumerate(("touch", "system")):
        marker = tmp_path / f"marker{i}"
        cloudpickle.loads(_payload(marker, kind))
        assert marker.exists()
