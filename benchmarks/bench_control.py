"""Cost of the control-design interfaces on a three-link aluminium arm
(``docs/control-design.md``): ``flexdyn.linearize`` (exact, complex step through the
reference tier; and ``derivative="central"`` on the engine) beside the central-difference
linearization a user writes by hand (``2 n`` evaluations of the compiled ``rhs``), with the
error of the latter against the exact one;
``modal_analysis``, ``equilibrium`` and ``max_stable_step``.

Run ``python benchmarks/bench_control.py`` (``--quick``: one repeat; used by the tests).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from flexdyn_bench.timing import per_call

import flexdyn as fd


def _arm(n_modes: int) -> fd.Model:
    """Three 0.5 m aluminium tubes (Ø 20 × 2 mm) on revolute joints, gravity on."""
    from flexdyn.beam import beam_modes

    r_o, r_i = 0.01, 0.008
    mu = 2700.0 * math.pi * (r_o**2 - r_i**2)
    EI = 70e9 * math.pi / 4 * (r_o**4 - r_i**4)
    b = fd.ModelBuilder("arm", gravity=(0.0, 0.0, -9.81))
    for k, axis in enumerate(([0, 0, 1], [0, 1, 0], [0, 1, 0])):
        beam = beam_modes(0.5, mu, EI_y=EI, EI_z=EI, n_elements=4, n_modes=n_modes)
        joint = {"type": "revolute", "axis": axis}
        if k:
            joint["parent_node"] = beam.n_nodes - 1
        b.add_body(f"link{k + 1}", f"link{k}" if k else None, joint=joint,
                   flex=beam.to_flex_dict())
    return b.build()


def _central(f, x0: np.ndarray) -> np.ndarray:
    """The hand-written linearization: central differences of ``rhs`` (step 1e-6)."""
    cols = []
    for k in range(x0.size):
        e = np.zeros(x0.size)
        e[k] = 1e-6
        cols.append((f(0.0, x0 + e) - f(0.0, x0 - e)) / 2e-6)
    return np.array(cols).T


def _row(n_modes: int, repeat: int) -> dict:
    model = _arm(n_modes)
    rng = np.random.default_rng(0)
    q = 0.3 * rng.standard_normal(model.nq)
    u = rng.standard_normal(model.nu)
    f = fd.rhs(model)
    x0 = np.concatenate([q, u])
    f(0.0, x0)  # compiled before timing
    A = fd.linearize(model, q, u, derivative="compiled").A  # the default's code, compiled
    links = ["link1", "link2", "link3"]
    return {
        "modes": n_modes, "nx": x0.size,
        "linearize": per_call(lambda: fd.linearize(model, q, u), 0.0, repeat),
        "central": per_call(lambda: _central(f, x0), 0.0, repeat),
        "linearize_central": per_call(lambda: fd.linearize(model, q, u, derivative="central"),
                                      0.0, repeat),
        "fd_error": float(np.max(np.abs(_central(f, x0) - A)) / np.max(np.abs(A))),
        "modal": per_call(lambda: fd.modal_analysis(model, joints="locked"), 0.0, repeat),
        "equilibrium": per_call(lambda: fd.equilibrium(model, held=links), 0.0, repeat),
        "h_rk4": fd.max_stable_step(model, "rk4"),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else 5
    rows = []
    print(f"{'modes':>5} {'nx':>4} {'linearize':>10} {'(central)':>10} {'hand FD':>10} "
          f"{'FD error':>9} {'modal':>8} {'equil.':>8} {'h_max rk4':>10}")
    for n_modes in ((2,) if args.quick else (2, 4, 6)):
        row = _row(n_modes, repeats)
        rows.append(row)
        print(f"{n_modes:>5} {row['nx']:>4} {1e3 * row['linearize']:>8.1f}ms "
              f"{1e3 * row['linearize_central']:>8.1f}ms "
              f"{1e3 * row['central']:>8.1f}ms {row['fd_error']:>9.1e} "
              f"{1e3 * row['modal']:>6.1f}ms {1e3 * row['equilibrium']:>6.1f}ms "
              f"{row['h_rk4']:>9.3g}s")
    return rows


if __name__ == "__main__":
    main()
