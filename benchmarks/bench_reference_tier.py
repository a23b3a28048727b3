"""Per-call time of the reference (numpy) tier, side by side with another source tree.

Times the public per-state functions on a rigid revolute chain (N = 10), a flexible chain
(5 beam links, 4 modes each) and the built-in spacecraft, for both fidelities and the three
forward-dynamics methods, and — with ``--baseline DIR`` — the same calls on the flexdyn of the
source tree ``DIR`` (e.g. a ``git worktree`` of an earlier commit), printing the ratios
``time(this tree) / time(baseline)``.  Both trees run in fresh subprocesses, alternating, and
each time is the minimum over the rounds (machines are noisy: compare ratios from one run).

Usage::

    python benchmarks/bench_reference_tier.py [--baseline DIR] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported

HERE = Path(__file__).resolve().parent


def _cases(quick: bool):
    """``{name: callable}`` of the timed calls (imports flexdyn from ``sys.path``)."""
    import numpy as np
    from bench_forward_dynamics import REFERENCE, flexible_chain, random_state

    import flexdyn as fd

    rng = np.random.default_rng(0)
    models = {"rigid10": flexible_chain(10, 0), "flex5x4": flexible_chain(5, 4)}
    if not quick:
        models["spacecraft"] = fd.models.spacecraft()
    calls = {}
    for mname, model in models.items():
        q, u, tau = random_state(model, rng)
        if model.nq != model.nu:  # unit quaternions
            q = model.normalize_configuration(q)
        for fid in ("full", "ruthless"):
            for method in ("articulated", "articulated-split", "composite"):
                calls[f"{mname} fd {method} {fid}"] = (
                    lambda m=model, q=q, u=u, t=tau, me=method, f=fid:
                    fd.forward_dynamics(m, q, u, t, method=me, fidelity=f, **REFERENCE))
            calls[f"{mname} inverse_dynamics {fid}"] = (
                lambda m=model, q=q, u=u, t=tau, f=fid:
                fd.inverse_dynamics(m, q, u, t, f, **REFERENCE))
            calls[f"{mname} mass_matrix {fid}"] = (
                lambda m=model, q=q, f=fid: fd.mass_matrix(m, q, f, **REFERENCE))
    return calls


def measure(quick: bool) -> dict[str, float]:
    """Seconds per call of every case (best of 5 batches of >= 20 ms)."""
    from flexdyn_bench.timing import per_call

    return {name: per_call(fn, min_time=0.02) for name, fn in _cases(quick).items()}


def _run_tree(src: Path, quick: bool) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--src", str(src)]
    if quick:
        cmd.append("--quick")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, help="source tree to compare with (its src/)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="two models only")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.json:  # child process: time one tree
        sys.path.insert(0, str(args.src))
        sys.path.insert(1, str(HERE))
        print(json.dumps(measure(args.quick)))
        return 0
    this = HERE.parent / "src"
    trees = {"this": this} | ({"baseline": args.baseline / "src"} if args.baseline else {})
    best: dict[str, dict[str, float]] = {k: {} for k in trees}
    for _ in range(args.rounds):
        for key, src in trees.items():
            for case, t in _run_tree(src, args.quick).items():
                best[key][case] = min(best[key].get(case, float("inf")), t)
    print(f"{'case':<44} {'this (µs)':>11}" + (f" {'baseline':>11} {'ratio':>7}"
                                                  if args.baseline else ""))
    ratios = []
    for case, t in best["this"].items():
        line = f"{case:<44} {1e6 * t:>11.1f}"
        if args.baseline:
            b = best["baseline"][case]
            ratios.append(t / b)
            line += f" {1e6 * b:>11.1f} {t / b:>7.3f}"
        print(line)
    if ratios:
        import statistics

        print(f"ratio this/baseline: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f} over {len(ratios)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
