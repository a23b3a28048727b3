"""Shared pytest configuration: markers."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long-running test (deselect with -m 'not slow')"
    )
