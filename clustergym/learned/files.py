"""The files of a model folder in formats that hold data only: nothing in them is executed on loading.

A run folder of ``clustergym train`` holds::

    model.zip            the SB3 model: its ``data`` entry is JSON (its pickled entries are never
                         unpickled: :func:`clustergym.learned.model_agent.load_sb3_safely` rebuilds
                         them), its ``*.pth`` tensors are read with ``torch.load(weights_only=True)``
    model.json           the run's settings, and ``sha256``: the digest of each file above and below
    vecnormalize.npz     the VecNormalize statistics as plain arrays (:func:`save_vecnormalize`)
    checkpoints/         rl_model_<N>_steps.zip, rl_model_vecnormalize_<N>_steps.npz

``vecnormalize.npz`` holds the arrays ``obs_rms.mean``, ``obs_rms.var``, ``obs_rms.count`` (only when
observations are normalised: the ``mlp`` policy's flat observation, ``(D,)``, ``(D,)``, ``()``),
``ret_rms.mean``, ``ret_rms.var``, ``ret_rms.count`` (the running discounted return, all ``()``)
and the scalars ``clip_obs``, ``clip_reward``, ``gamma``, ``epsilon``, ``norm_obs``, ``norm_reward``.
It is read with ``numpy.load(allow_pickle=False)``: an object array in it is refused, not unpickled.

Folders saved before this format carry ``vecnormalize.pkl``, a pickle: loading one would run
whatever it holds, so it is refused; :func:`convert_legacy_folder` (``clustergym convert-model
FOLDER --trust-pickle``) unpickles it once, on the user's word that the folder is trusted, and
writes the ``.npz`` beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clustergym.errors import ConfigError

__all__ = [
    "DIGESTS_KEY",
    "LEGACY_VECNORM_SUFFIX",
    "VecNormStats",
    "convert_legacy_folder",
    "file_digest",
    "load_vecnormalize",
    "read_vecnormalize",
    "record_digests",
    "save_vecnormalize",
    "verify_digests",
]

#: ``model.json``'s key of the files' SHA-256 digests (file name relative to the run folder -> hex)
DIGESTS_KEY = "sha256"
#: the suffix of the statistics of folders saved before the ``.npz`` format (pickles: never loaded)
LEGACY_VECNORM_SUFFIX = ".pkl"
_SCALARS = ("clip_obs", "clip_reward", "gamma", "epsilon")
_FLAGS = ("norm_obs", "norm_reward")


@dataclass(frozen=True)
class VecNormStats:
    """VecNormalize's statistics as plain values.

    Attributes:
        obs_mean, obs_var: ``(D,)`` running mean and variance of the (flat) observation; ``None``
            when observations are not normalised.
        obs_count: the number of observations they average (a float, as SB3 keeps it).
        ret_mean, ret_var, ret_count: the running discounted return's statistics (scalars).
        clip_obs, clip_reward, gamma, epsilon: VecNormalize's settings.
        norm_obs, norm_reward: which of the two it normalises.
    """

    obs_mean: np.ndarray | None
    obs_var: np.ndarray | None
    obs_count: float
    ret_mean: float
    ret_var: float
    ret_count: float
    clip_obs: float
    clip_reward: float
    gamma: float
    epsilon: float
    norm_obs: bool
    norm_reward: bool

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``x`` ``(D,)`` normalised as VecNormalize does (float32); unchanged without observation statistics."""
        if not self.norm_obs or self.obs_mean is None or self.obs_var is None:
            return x
        z = (x - self.obs_mean) / np.sqrt(self.obs_var + self.epsilon)
        return np.clip(z, -self.clip_obs, self.clip_obs).astype(np.float32)


def _replace_atomically(path: Path, data: bytes) -> None:
    """``data`` into ``path`` by a temporary file renamed over it: never half a file, never through a
    symlink (the rename replaces the link itself)."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_vecnormalize(venv: Any, path: str | Path) -> Path:
    """Write a ``VecNormalize``'s statistics to ``path`` (``.npz``, the module docstring's arrays).

    Raises:
        ValueError: ``venv`` normalises a ``Dict`` observation (one statistic per key): clustergym
            normalises only the ``mlp`` policy's flat observation.
    """
    import io

    path = Path(path)
    arrays: dict[str, np.ndarray] = {k: np.asarray(float(getattr(venv, k))) for k in _SCALARS}
    arrays.update({k: np.asarray(bool(getattr(venv, k))) for k in _FLAGS})
    for key in ("ret_rms",) + (("obs_rms",) if venv.norm_obs else ()):
        rms = getattr(venv, key)
        if isinstance(rms, dict):
            raise ValueError("save_vecnormalize: per-key statistics of a Dict observation are not supported")
        arrays.update(
            {
                f"{key}.mean": np.asarray(rms.mean, dtype=np.float64),
                f"{key}.var": np.asarray(rms.var, dtype=np.float64),
                f"{key}.count": np.asarray(float(rms.count)),
            }
        )
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    _replace_atomically(path, buf.getvalue())
    return path


def _scalar(z: Any, key: str, path: Path) -> float:
    a = z[key]
    if a.shape != () or a.dtype.kind not in "fiub":
        raise ConfigError("agent", f"{path}: {key} is not a number (shape {a.shape}, dtype {a.dtype})")
    return float(a)


def read_vecnormalize(path: str | Path) -> VecNormStats:
    """The statistics in ``path`` (a ``vecnormalize.npz``), read without unpickling anything.

    Raises:
        ConfigError: a legacy pickle (``.pkl``: refused, see :func:`convert_legacy_folder`), not an
            ``.npz`` of these arrays, damaged, holding object arrays, or arrays of mismatched shapes;
            the message names the file.
    """
    path = Path(path)
    if path.suffix == LEGACY_VECNORM_SUFFIX:
        raise ConfigError("agent", legacy_message(path))
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in (*_SCALARS, *_FLAGS, "ret_rms.mean", "ret_rms.var", "ret_rms.count") if k not in z]
            if missing:
                raise ConfigError("agent", f"{path}: not VecNormalize statistics (no {', '.join(missing)})")
            vals = {
                k: _scalar(z, k, path) for k in (*_SCALARS, *_FLAGS, "ret_rms.mean", "ret_rms.var", "ret_rms.count")
            }
            obs_mean = obs_var = None
            obs_count = 0.0
            if vals["norm_obs"]:
                if not all(f"obs_rms.{k}" in z for k in ("mean", "var", "count")):
                    raise ConfigError("agent", f"{path}: norm_obs is set but obs_rms.mean/var/count are missing")
                obs_mean, obs_var = (np.asarray(z[f"obs_rms.{k}"], dtype=np.float64) for k in ("mean", "var"))
                obs_count = _scalar(z, "obs_rms.count", path)
                if obs_mean.ndim != 1 or obs_mean.shape != obs_var.shape:
                    raise ConfigError(
                        "agent", f"{path}: obs_rms.mean {obs_mean.shape} and obs_rms.var {obs_var.shape} differ"
                    )
    except ConfigError:
        raise
    except Exception as e:  # not a zip, a damaged member, an object array (pickle refused), ...
        raise ConfigError("agent", f"{path}: damaged normalisation statistics ({type(e).__name__}: {e})") from None
    return VecNormStats(
        obs_mean,
        obs_var,
        obs_count,
        vals["ret_rms.mean"],
        vals["ret_rms.var"],
        vals["ret_rms.count"],
        vals["clip_obs"],
        vals["clip_reward"],
        vals["gamma"],
        vals["epsilon"],
        bool(vals["norm_obs"]),
        bool(vals["norm_reward"]),
    )


def load_vecnormalize(path: str | Path, venv: Any) -> Any:
    """A ``VecNormalize`` around ``venv`` with the statistics of ``path`` (the ``.npz`` of
    :func:`save_vecnormalize`); ``training`` is left on, as SB3's ``VecNormalize.load`` leaves it.

    Raises:
        ConfigError: the file is not such statistics (:func:`read_vecnormalize`), or its observation
            statistics do not fit ``venv``'s observation space.
    """
    from stable_baselines3.common.vec_env import VecNormalize

    s = read_vecnormalize(path)
    vn = VecNormalize(
        venv,
        norm_obs=s.norm_obs,
        norm_reward=s.norm_reward,
        clip_obs=s.clip_obs,
        clip_reward=s.clip_reward,
        gamma=s.gamma,
        epsilon=s.epsilon,
    )
    if s.norm_obs:
        assert s.obs_mean is not None and s.obs_var is not None
        obs_rms: Any = vn.obs_rms
        if tuple(obs_rms.mean.shape) != s.obs_mean.shape:
            raise ConfigError(
                "agent",
                f"{path}: statistics of observations of shape {s.obs_mean.shape}, "
                f"the env's are {tuple(obs_rms.mean.shape)}",
            )
        obs_rms.mean, obs_rms.var, obs_rms.count = s.obs_mean.copy(), s.obs_var.copy(), s.obs_count
    vn.ret_rms.mean, vn.ret_rms.var, vn.ret_rms.count = np.float64(s.ret_mean), np.float64(s.ret_var), s.ret_count
    return vn


# ---------------------------------------------------------------------------------------- digests
def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _digested(run_dir: Path) -> list[Path]:
    """The files a load may read: the model, its statistics and the checkpoints (no ``model.json``,
    which holds the digests, and no README or ``eval.csv``, which are never loaded)."""
    names = [run_dir / n for n in ("model.zip", "vecnormalize.npz")]
    ckpt = run_dir / "checkpoints"
    more = sorted(p for p in ckpt.iterdir() if p.suffix in (".zip", ".npz")) if ckpt.is_dir() else []
    return [p for p in [*names, *more] if p.is_file() and not p.is_symlink()]


def record_digests(run_dir: str | Path, meta_name: str = "model.json") -> dict[str, str]:
    """Record in ``run_dir/model.json`` (key ``sha256``) the SHA-256 of each file a load may read
    (``model.zip``, ``vecnormalize.npz``, ``checkpoints/*.zip|*.npz``); returns that table
    (relative POSIX path -> hex digest).  ``model.json`` is rewritten by temp-and-rename.

    Raises:
        ConfigError: ``run_dir`` has no ``model.json``, or it is not a JSON object.
    """
    run_dir = Path(run_dir)
    meta_path = run_dir / meta_name
    meta = _read_meta(meta_path)
    table = {p.relative_to(run_dir).as_posix(): file_digest(p) for p in _digested(run_dir)}
    meta[DIGESTS_KEY] = table
    _replace_atomically(meta_path, (json.dumps(meta, indent=2) + "\n").encode())
    return table


def _read_meta(meta_path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("agent", f"{meta_path}: no such file") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError("agent", f"{meta_path}: damaged metadata, not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise ConfigError("agent", f"{meta_path}: damaged metadata, expected a JSON object")
    return meta


def verify_digests(meta_path: str | Path, files: Iterable[str | Path], meta: dict[str, Any] | None = None) -> None:
    """Check ``files`` against the digests ``model.json`` (``meta_path``; ``meta``: its parsed
    content, if already read) records, before any of them is read.

    A file the table lists must have that digest; a file it does not list (a checkpoint of a run
    that was interrupted before it recorded them) and a ``model.json`` without a table (saved before
    digests) are not checked.  The digests catch damaged or edited files; they are no signature:
    whoever edits a file can edit ``model.json`` too (safety from code comes from the formats).

    Raises:
        ConfigError: a digest mismatch (the message names the file), or a malformed table.
    """
    meta_path = Path(meta_path)
    meta = _read_meta(meta_path) if meta is None else meta
    table = meta.get(DIGESTS_KEY)
    if table is None:
        return
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ConfigError("agent", f"{meta_path}: {DIGESTS_KEY} must map file names to hex digests")
    root = meta_path.parent.resolve()
    for f in files:
        p = Path(f).resolve()
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            continue
        want = table.get(rel)
        if want is not None and file_digest(p) != want.lower():
            raise ConfigError(
                "agent",
                f"{f}: its SHA-256 does not match the one {meta_path} records: the file was changed or "
                "damaged after training; use the folder as it was saved",
            )


# ---------------------------------------------------------------------------------------- legacy pickles
def legacy_message(path: Path) -> str:
    """Why a legacy ``vecnormalize*.pkl`` is refused, and the explicit way to convert it."""
    folder = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    return (
        f"{path}: normalisation statistics saved as a pickle, which clustergym does not load (unpickling "
        f"runs whatever code the file holds); if you trust where {folder} comes from, convert it once with "
        f"`clustergym convert-model {folder} --trust-pickle` (this runs the pickle)"
    )


def convert_legacy_folder(folder: str | Path) -> list[Path]:
    """Convert every ``vecnormalize*.pkl`` of a trusted model folder (and its ``checkpoints/``) to
    ``.npz``, remove the pickles and record the folder's digests; returns the files written.

    This UNPICKLES the files: it runs whatever code they hold.  Call it only on folders you trust
    (``clustergym convert-model FOLDER --trust-pickle``).

    Raises:
        ConfigError: no ``model.json`` in ``folder``, or a pickle that is not VecNormalize statistics.
    """
    import pickle

    folder = Path(folder)
    if not (folder / "model.json").is_file():
        raise ConfigError("folder", f"{folder}: not a model folder (no model.json)")
    written = []
    pickles = sorted(folder.glob("vecnormalize*.pkl")) + sorted(folder.glob("checkpoints/*vecnormalize*.pkl"))
    for pkl in pickles:
        try:
            with open(pkl, "rb") as f:
                venv = pickle.load(f)  # the user vouched for this folder (--trust-pickle)
            npz = save_vecnormalize(venv, pkl.with_suffix(".npz"))
        except Exception as e:
            raise ConfigError("folder", f"{pkl}: not VecNormalize statistics ({type(e).__name__}: {e})") from None
        pkl.unlink()
        written.append(npz)
    record_digests(folder)
    return written
