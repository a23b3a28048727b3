"""Cost per forward-dynamics call of a nodal body as its number of nodes grows
(``docs/nodal-bodies.md``).

The model is a slender boom (aluminium-like, 20 m, ``n`` nodes, ``n − 1`` frame elements,
:func:`flexdyn.beam.nodal_beam`) clamped to a hub on a revolute joint, at a deformed,
moving state.  For each ``n`` it times, side by side in this process (best of repeats):

* ``nodal``: Rodriguez's filter and smoother (``method="nodal"``), O(n);
* ``modal``: the same boom as a modal body with as many modes as nodal coordinates
  (``6(n − 1)``: the identity basis), through the compiled articulated-body algorithm;
* ``dense``: the mass matrix and bias of the compiled engine and one Cholesky solve;
* ``10 modes``: the boom as a modal body with its 10 lowest modes (compiled articulated),
  the usual reduced model: a different, cheaper system, for scale.

``modal`` and ``dense`` are skipped above ``--dense-limit`` nodes (their cost grows like
``n³``).  The
scaling line prints ``t(10 n) / t(n)`` of the nodal method (≤ 11 for O(n)).

Run ``python benchmarks/bench_nodal.py`` (``--quick``: 10 and 30 nodes, few repeats; used by
the test suite).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import scipy.linalg

import flexdyn as fd
from flexdyn.beam import beam_modes, nodal_beam

__all__ = ["boom", "main", "time_call"]

NODES = (10, 30, 100, 300, 1000)


#: the boom's section (SI): 20 m, 0.5 kg/m
SECTION = {"EI_y": 60.0, "EI_z": 80.0, "EA": 1.0e6, "GJ": 40.0,
           "polar_inertia_per_length": 1.0e-4}
#: modes of the truncated modal boom of the last column
TRUNCATED_MODES = 10


def boom(n_nodes: int, n_modes: int | None = None) -> fd.Model:
    """A hub on a revolute joint carrying a clamped 20 m boom of ``n_nodes`` nodes: a nodal
    body, or with ``n_modes`` a modal body with the lowest modes of the same elements."""
    flex = (nodal_beam(20.0, 0.5, **SECTION, n_elements=n_nodes - 1, stiffness_damping=1e-3)
            if n_modes is None else
            beam_modes(20.0, 0.5, **SECTION, n_elements=n_nodes - 1,
                       n_modes=n_modes).to_flex_dict())
    return (fd.ModelBuilder(f"boom{n_nodes}", gravity=(0.0, 0.0, 0.0))
            .add_body("hub", joint={"type": "revolute", "axis": [0, 0, 1]},
                      rigid={"mass": 50.0, "inertia": np.eye(3) * 10.0})
            .add_body("boom", "hub", joint={"type": "fixed"}, flex=flex).build())


def state(model: fd.Model, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = 1e-3 * rng.normal(size=model.nq)
    u = 1e-2 * rng.normal(size=model.nu)
    q[0], u[0] = 0.3, 0.2
    return q, u, np.zeros(model.nu)


def time_call(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of ``fn()`` over ``repeats`` (s), after one warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def dense_solve(model: fd.Model, q, u, tau) -> np.ndarray:
    """``M⁻¹ (τ − C)`` from the engine's mass matrix and bias and one Cholesky solve."""
    M = fd.mass_matrix(model, q)
    C = fd.bias_forces(model, q, u)
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(M), tau - C)


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 and 30 nodes, few repeats")
    parser.add_argument("--dense-limit", type=int, default=100,
                        help="largest node count for the modal and dense columns")
    args = parser.parse_args(argv)
    nodes = NODES[:2] if args.quick else NODES
    repeats = 3 if args.quick else 20
    print(f"{'nodes':>6} {'dofs':>6} {'nodal':>11} {'modal':>11} {'dense':>11} "
          f"{'10 modes':>11} {'modal/nodal':>12} {'dense/nodal':>12} {'max |Δu̇|':>10}")
    out: dict[int, dict[str, float]] = {}
    for n in nodes:
        model = boom(n)
        q, u, tau = state(model)
        row = {"nodal": time_call(lambda m=model, q=q, u=u: fd.forward_dynamics(
            m, q, u, method="nodal"), repeats)}
        a = fd.forward_dynamics(model, q, u, method="nodal")
        diff = np.nan
        if n <= args.dense_limit:
            row["modal"] = time_call(lambda m=model, q=q, u=u: fd.forward_dynamics(m, q, u),
                                     repeats)
            row["dense"] = time_call(lambda m=model, q=q, u=u, t=tau: dense_solve(m, q, u, t),
                                     max(1, repeats // 4))
            diff = float(np.max(np.abs(fd.forward_dynamics(model, q, u) - a))
                         / np.max(np.abs(a)))
        row["diff"] = diff
        truncated = boom(n, min(TRUNCATED_MODES, 6 * (n - 1)))
        q_t, u_t, _ = state(truncated)
        row["10 modes"] = time_call(lambda m=truncated, q=q_t, u=u_t: fd.forward_dynamics(
            m, q, u), repeats)
        out[n] = row

        def fmt(key: str, row=row) -> str:
            return f"{row[key] * 1e3:9.3f}ms" if key in row else f"{'—':>11}"

        def ratio(key: str, row=row) -> str:
            return f"{row[key] / row['nodal']:12.2f}" if key in row else f"{'—':>12}"

        print(f"{n:6d} {model.nu:6d} {fmt('nodal')} {fmt('modal')} {fmt('dense')} "
              f"{fmt('10 modes')} {ratio('modal')} {ratio('dense')} {diff:10.1e}", flush=True)
    for n in nodes:
        if 10 * n in out:
            print(f"scaling of the nodal method: t({10 * n}) / t({n}) = "
                  f"{out[10 * n]['nodal'] / out[n]['nodal']:.2f} (O(n): ≤ 11)")
    return out


if __name__ == "__main__":
    main()
