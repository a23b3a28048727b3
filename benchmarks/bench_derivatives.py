"""Derivatives of the dynamics, side by side in one run: their cost against one forward
dynamics call, against Pinocchio's ``computeABADerivatives``, and ``linearize`` before and
after (complex steps through the reference tier against the compiled derivatives).

* the steel 5-beam chain (``bench_engine.steel_chain``: 25 dof), full and exact fidelity:
  ``dyn.forward_dynamics_derivatives(q, u, τ)`` per call on the bound interface against
  ``dyn.forward_dynamics(q, u, τ)`` (target: at most 8×), and the largest block error
  against complex steps of the reference tier (``fd.linearize(derivative="complex-step")``,
  relative within each joint and modal block; target 1e-9);
* rigid revolute chains (``bench_pinocchio.revolute_chain``: random unaligned axes, rotated
  placements, off-axis centres of mass) N = 7, 20, 50: flexdyn's derivatives against
  ``pinocchio.computeABADerivatives`` (target: at most 2×; needs the optional ``pin``);
* ``fd.linearize`` of the steel chain, ``derivative="complex-step"`` (the former default)
  against the default (target: at least 20× faster).

Usage::

    python benchmarks/bench_derivatives.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import steel_chain  # noqa: E402
from bench_pinocchio import pin, revolute_chain, to_pinocchio  # noqa: E402
from flexdyn_bench.timing import per_call  # noqa: E402

import flexdyn as fd  # noqa: E402


def block_error(got: np.ndarray, ref: np.ndarray, model: fd.Model) -> float:
    """The largest error of a (joint or modal) × (joint or modal) block of ``got`` relative
    to the block's largest entry of ``ref`` (at least 1e-3 of the whole matrix's)."""
    blocks = []
    for i in range(model.n_bodies):
        us, nj, m = int(model.u_start[i]), int(model.nu_joint[i]), int(model.n_modes[i])
        blocks += [r for r in (range(us, us + nj), range(us + nj, us + nj + m)) if len(r)]
    floor = 1e-3 * max(float(np.abs(ref).max()), 1e-3)
    return max(float(np.abs(got[np.ix_(a, b)] - ref[np.ix_(a, b)]).max())
               / max(float(np.abs(ref[np.ix_(a, b)]).max()), floor)
               for a in blocks for b in blocks)


def _state(model: fd.Model, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    q = model.neutral_configuration()
    q += 0.05 * rng.normal(size=model.nq)
    return q, rng.normal(size=model.nu), rng.normal(size=model.nu)


def steel_rows(min_time: float) -> list[dict]:
    """The steel chain, per fidelity: derivative and forward-dynamics times, their ratio and
    the largest block error against the reference tier's complex steps."""
    model, rows = steel_chain(), []
    q, u, tau = _state(model, np.random.default_rng(0))
    nu = model.nu
    for fidelity in ("full", "exact"):
        dyn = fd.bind(model, fidelity=fidelity)
        got = dyn.forward_dynamics_derivatives(q, u, tau)
        lin = fd.linearize(model, q, u, tau, fidelity=fidelity, derivative="complex-step")
        error = max(block_error(got.d_q, lin.A[nu:, :nu], model),
                    block_error(got.d_u, lin.A[nu:, nu:], model),
                    block_error(got.d_tau, lin.B[nu:], model))
        t_d = per_call(lambda d=dyn: d.forward_dynamics_derivatives(q, u, tau), min_time)
        t_f = per_call(lambda d=dyn: d.forward_dynamics(q, u, tau), min_time)
        rows.append({"fidelity": fidelity, "derivatives": t_d, "forward": t_f,
                     "ratio": t_d / t_f, "error": error})
    return rows


def rigid_row(n: int, min_time: float) -> dict:
    """The rigid revolute chain of ``n`` links: flexdyn's forward-dynamics derivatives
    against Pinocchio's ``computeABADerivatives`` (time, ratio, block error)."""
    d = revolute_chain(n, np.random.default_rng(n))
    model = fd.Model.from_dict({"format": "flexdyn-model", "version": 1, **d})
    q, u, tau = _state(model, np.random.default_rng(1))
    dyn = fd.bind(model)
    t_fd = per_call(lambda: dyn.forward_dynamics_derivatives(q, u, tau), min_time)
    row = {"n": n, "flexdyn": t_fd, "pinocchio": float("nan"), "ratio": float("nan"),
           "error": float("nan")}
    if pin is None:
        return row
    pmodel = to_pinocchio(d)
    pdata = pmodel.createData()
    t_pin = per_call(lambda: pin.computeABADerivatives(pmodel, pdata, q, u, tau), min_time)
    got = dyn.forward_dynamics_derivatives(q, u, tau)
    pin.computeABADerivatives(pmodel, pdata, q, u, tau)
    return row | {"pinocchio": t_pin, "ratio": t_fd / t_pin,
                  "error": max(block_error(got.d_q, pdata.ddq_dq, model),
                               block_error(got.d_u, pdata.ddq_dv, model))}


#: a follower load on the steel chain's last tip node (N, in the node's frame)
TIP_LOAD = {("link4", -1): np.array([0.0, 0.0, 0.0, 0.0, 20.0, -50.0])}


def linearize_row(f_nodes: dict | None = None) -> dict:
    """``fd.linearize`` of the steel chain (with the nodal loads ``f_nodes``): complex steps
    against the compiled default."""
    model = steel_chain()
    q, u, tau = _state(model, np.random.default_rng(2))
    # compiled and loaded before timing
    fd.linearize(model, q, u, tau, f_nodes=f_nodes, derivative="compiled")
    times = {}
    for derivative in ("complex-step", "compiled"):
        start = time.perf_counter()
        fd.linearize(model, q, u, tau, f_nodes=f_nodes, derivative=derivative)
        times[derivative] = time.perf_counter() - start
    return {**times, "speedup": times["complex-step"] / times["compiled"]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="N = 7 only, shorter timing (used by the tests)")
    args = parser.parse_args(argv)
    min_time = 0.01 if args.quick else 0.2
    print(f"flexdyn {fd.__version__}, Pinocchio {getattr(pin, '__version__', 'absent')}, "
          f"load average {os.getloadavg()[0]:.2f}")
    result = {"steel": steel_rows(min_time),
              "rigid": [rigid_row(n, min_time) for n in ((7,) if args.quick else (7, 20, 50))],
              "linearize": linearize_row(), "linearize, tip load": linearize_row(TIP_LOAD)}
    print("steel 5-beam chain (25 dof), per call on the bound interface")
    print(f"{'fidelity':>9} {'derivatives µs':>15} {'forward µs':>11} {'ratio':>7} "
          f"{'block error':>12}")
    for r in result["steel"]:
        print(f"{r['fidelity']:>9} {1e6 * r['derivatives']:15.1f} {1e6 * r['forward']:11.1f} "
              f"{r['ratio']:7.1f} {r['error']:12.1e}")
    print("target: ratio <= 8, block error <= 1e-9")
    print("rigid revolute chains: forward_dynamics_derivatives / computeABADerivatives")
    print(f"{'N':>4} {'flexdyn µs':>11} {'Pinocchio µs':>13} {'ratio':>7} {'block error':>12}")
    for r in result["rigid"]:
        print(f"{r['n']:4d} {1e6 * r['flexdyn']:11.1f} {1e6 * r['pinocchio']:13.1f} "
              f"{r['ratio']:7.1f} {r['error']:12.1e}")
    print("target: ratio <= 2")
    for key, target in (("linearize", " (target >= 20x)"), ("linearize, tip load", "")):
        r = result[key]
        print(f"{key}, steel chain: complex-step {1e3 * r['complex-step']:.1f} ms, compiled "
              f"{1e3 * r['compiled']:.1f} ms: {r['speedup']:.0f}x{target}")
    return result


if __name__ == "__main__":
    main()
