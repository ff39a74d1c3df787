"""Fixtures of the study scripts' tests: each script is loaded as a module from this folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def experiment_script(request):
    """The module ``experiments/<name>.py`` named by the test module's ``SCRIPT`` (scripts are not a package)."""
    path = Path(__file__).resolve().parent / f"{request.module.SCRIPT}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
