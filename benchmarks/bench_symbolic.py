"""Expression growth and generation time of the symbolic equations of motion
(``docs/symbolic.md``).

For chains of ``N`` links on revolute joints about z (links 1 m long along x, centre of mass
at mid-length, gravity along −y) — rigid, and with the last link flexible (two bending modes
in the plane, Euler 3-2-1 tip kinematics) — it prints the time to derive ``𝓜``, ``𝒞``, ``𝓕``
(:func:`flexdyn.symbolic.symbolic_model`), to make numpy functions of them and to write C,
the operation counts (``sympy.count_ops``) of ``𝓜`` and ``𝒞`` and the length of the C source.

Run ``python benchmarks/bench_symbolic.py`` (``--quick``: N = 1, 2).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import sympy as sp

import flexdyn as fd
from flexdyn.beam import beam_modes
from flexdyn.symbolic import symbolic_model

__all__ = ["chain", "main"]


def chain(n_links: int, flexible: bool) -> fd.Model:
    """``n_links`` links on revolute joints; the last one flexible when ``flexible``."""
    b = fd.ModelBuilder(f"chain{n_links}", gravity=(0.0, -9.81, 0.0),
                        tip_kinematics="euler-321")
    parent = None
    for k in range(n_links):
        joint = {"type": "revolute", "axis": [0, 0, 1],
                 "placement": {"translation": [0.0 if k == 0 else 1.0, 0.0, 0.0]}}
        if flexible and k == n_links - 1:
            flex = beam_modes(1.0, 1.0, EI_z=50.0, n_elements=2, n_modes=2).to_flex_dict()
            b.add_body(f"link{k}", parent, joint=joint, flex=flex)
        else:
            b.add_body(f"link{k}", parent, joint=joint,
                       rigid={"mass": 1.0, "com": [0.5, 0.0, 0.0],
                              "inertia": np.diag([1e-3, 0.08, 0.08])})
        parent = f"link{k}"
    return b.build()


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 1, 2 only")
    args = parser.parse_args(argv)
    sizes = (1, 2) if args.quick else (1, 2, 3, 4, 5)
    print(f"{'links':>5} {'last':>8} {'nu':>3} {'derive':>8} {'numpy':>8} {'C':>8} "
          f"{'ops M':>8} {'ops C':>9} {'C chars':>9}")
    rows = []
    for flexible in (False, True):
        for n in sizes:
            model = chain(n, flexible)
            t0 = time.perf_counter()
            sm = symbolic_model(model)
            t1 = time.perf_counter()
            sm.functions()
            t2 = time.perf_counter()
            source = sm.c_source()
            t3 = time.perf_counter()
            row = {"links": n, "flexible": flexible, "nu": model.nu, "derive": t1 - t0,
                   "numpy": t2 - t1, "c": t3 - t2, "ops_M": int(sp.count_ops(sm.M)),
                   "ops_C": int(sp.count_ops(sm.C)), "c_chars": len(source)}
            rows.append(row)
            print(f"{n:5d} {'flexible' if flexible else 'rigid':>8} {model.nu:3d} "
                  f"{row['derive']:7.2f}s {row['numpy']:7.2f}s {row['c']:7.2f}s "
                  f"{row['ops_M']:8d} {row['ops_C']:9d} {row['c_chars']:9d}", flush=True)
    return rows


if __name__ == "__main__":
    main()
