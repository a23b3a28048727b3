"""Per-call timing and the environment of fresh processes, shared by the benchmark scripts."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], min_time: float = 0.05, repeat: int = 5) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` batches, each lasting at least
    ``min_time`` seconds (after one warm-up call)."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 > min_time:
            break
        n *= 2
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def user_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child timed as a user's process, with ``extra``:
    ``PYTHONDONTWRITEBYTECODE`` left out, so that the child reads (and writes) Python's
    bytecode cache as an installed package does instead of compiling every module's source
    (a tenth of a second and more of a fresh process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env
