"""Cost of joint forces on the engine (``flexdyn.joint_forces``): forward dynamics of a rigid
revolute chain with and without a ``forces`` block (spring, damper, friction, limits, torque
limit) on every joint, measured side by side in one run.

Run ``python benchmarks/bench_joint_forces.py`` (``--quick``: one repeat).
"""

from __future__ import annotations

import argparse

import numpy as np
from flexdyn_bench.timing import per_call

import flexdyn as fd

FORCES = {"stiffness": 5.0, "damping": 0.1, "coulomb": 0.2, "lower": -2.0, "upper": 2.0,
          "limit_stiffness": 1e3, "torque_limit": 10.0}


def chain(n: int, forces: bool) -> fd.Model:
    """``n`` rigid 0.5 m links on revolute joints about z and y in turn, gravity on."""
    b = fd.ModelBuilder("chain", gravity=(0.0, 0.0, -9.81))
    parent = None
    for i in range(n):
        joint = {"type": "revolute", "axis": [0, 0, 1] if i % 2 == 0 else [0, 1, 0],
                 "placement": {"translation": [0.0 if i == 0 else 0.5, 0.0, 0.0]}}
        if forces:
            joint["forces"] = FORCES
        b.add_body(f"link{i}", parent, joint=joint,
                   rigid={"mass": 1.0, "com": [0.25, 0, 0], "inertia": np.diag([0.01, 0.02, 0.02])})
        parent = f"link{i}"
    return b.build()


def main(argv: list[str] | None = None) -> list[tuple[int, float, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, N = 10 only")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for n in (10,) if args.quick else (10, 50):
        plain, forced = chain(n, False), chain(n, True)
        q, u, tau = (rng.uniform(-1.0, 1.0, n) for _ in range(3))
        repeat = 1 if args.quick else 5
        t_plain, t_forced = (
            per_call(lambda m=m, x=(q, u, tau): fd.forward_dynamics(m, *x), repeat=repeat)
            for m in (plain, forced))
        rows.append((n, t_plain, t_forced))
        print(f"N = {n:3d}: forward_dynamics {t_plain * 1e6:7.2f} µs without joint forces, "
              f"{t_forced * 1e6:7.2f} µs with a forces block on every joint "
              f"({t_forced / t_plain:.3f}×)")
    return rows


if __name__ == "__main__":
    main()
