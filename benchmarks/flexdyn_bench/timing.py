"""Per-call timing shared by the benchmark scripts."""

from __future__ import annotations

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
