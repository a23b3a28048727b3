"""Shared pytest configuration: markers and fixtures."""

from __future__ import annotations

import warnings

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long-running test (deselect with -m 'not slow')"
    )


@pytest.fixture
def quiet_numba():
    """Silence numba's performance hints (and other warnings) during a test; modules that
    compile engine entries use it for every test (``pytestmark``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=Warning)
        yield
