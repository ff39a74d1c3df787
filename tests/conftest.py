"""Shared pytest fixtures."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture
def quiet_warnings():
    """Silence library warnings (SB3, Gymnasium) for the test; a module opts in with
    ``pytestmark = pytest.mark.usefixtures("quiet_warnings")``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
