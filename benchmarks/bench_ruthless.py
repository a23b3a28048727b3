"""Measured cost of the ruthless articulated-body (AB) and composite-body (CB) forward dynamics
against the operation counts of Jain & Rodriguez (1992), Sec. VII and Fig. 2.

The paper's setting: a serial chain of N = 10 flexible bodies (uniform free-free beams from
:func:`flexdyn.beam.beam_modes`, each attached at the previous link's last node) on 1-dof
revolute hinges, every body with the same number of modes n_m = 1 … 10, ruthless
linearization.  For each n_m it prints the best per-call time of

* the numpy tier (the reference): ``flexdyn.forward_dynamics(model, q, u, tau, method,
  fidelity="ruthless", backend="reference")`` with ``method="articulated-split"`` (AB,
  Eqs 63–64) and ``"composite"`` (CB, Eqs 45–50);
* the compiled engine, ``Engine(model, "ruthless").forward_dynamics(q, u, tau, None, method)``
  (:class:`flexdyn.engine.Engine`): the same two algorithms and, for comparison, the
  articulated-body algorithm without the split (Eq 58, ``"articulated"``), every per-call step
  in compiled code;
* a dense ``np.linalg.solve(M, ·)`` of the mass matrix alone (LAPACK, given ``M``);

the measured time ratios CB/AB next to the paper's flop ratio (``fig2_table`` of
``benchmarks/flexdyn_bench/costs.py``)
and whether the engine reaches the paper's "over a factor of 7" at n_m = 10
(PASS/FAIL).  It then times ``D_f⁻¹`` formed explicitly (``indirect_min_modes=99``) and by
Eq B3 (``indirect_min_modes=1``) for n_m = 1 … 12 — in the numpy tier the split factors
(Eq 63, :func:`flexdyn.articulated_body.articulated_body_inertias_split` on the position terms
of the body models of ``RuthlessModel(model, rule)``), in the engine the whole AB call of
``Engine(model, "ruthless", indirect_min_modes=rule)`` — and prints the measured crossover
(the paper switches at n_m = 8), and a breakdown of the engine's CB time at the largest
n_m.

Times are the minimum over repeats of the mean of a short batch of calls
(``time.perf_counter``), after a warm-up call (JIT compilation excluded).  BLAS is pinned to one
thread unless ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` are set.

Usage::

    python benchmarks/bench_ruthless.py [--quick] [--plot FILE.png] [--bodies 10]
        [--max-modes 10] [--max-modes-crossover 12] [--modes 5 10]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

try:
    import flexdyn as fd
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import flexdyn as fd

from flexdyn_bench.costs import (  # noqa: E402  (benchmarks/ is the script's folder)
    articulated_body_cost,
    composite_body_cost,
    fig2_table,
)

from flexdyn.articulated_body import articulated_body_inertias_split  # noqa: E402
from flexdyn.beam import beam_modes  # noqa: E402
from flexdyn.engine import Engine, algebra  # noqa: E402
from flexdyn.ruthless import RuthlessModel  # noqa: E402
from flexdyn.terms import position_terms  # noqa: E402

#: the paper's claim at 10 modes per body (Sec. VII.B): "over a factor of 7"
PAPER_FACTOR = 7.0


def _load_fig2_module():
    """``benchmarks/fig2_cost_model.py`` as a module (for ``plot_fig2``)."""
    path = Path(__file__).resolve().with_name("fig2_cost_model.py")
    spec = importlib.util.spec_from_file_location("fig2_cost_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def beam_chain(n_modes: int, n_bodies: int = 10, n_elements: int = 12) -> fd.Model:
    """Serial chain of ``n_bodies`` uniform free-free beams (1 m, 2 kg/m, bending in both
    planes, axial and torsion) with ``n_modes`` modes each, on revolute hinges about
    alternating z and y axes, each attached at the previous beam's last node; gravity on."""
    bm = beam_modes(1.0, 2.0, EI_y=30.0, EI_z=20.0, EA=2.0e3, GJ=8.0,
                    polar_inertia_per_length=0.01, n_elements=n_elements, n_modes=n_modes,
                    boundary="free-free", damping_ratio=0.01)
    flex = bm.to_flex_dict()
    last = bm.n_nodes - 1
    bodies = []
    for i in range(n_bodies):
        bodies.append({
            "name": f"link{i}",
            "parent": None if i == 0 else f"link{i - 1}",
            "joint": {"type": "revolute",
                      "axis": [0.0, 0.0, 1.0] if i % 2 == 0 else [0.0, 1.0, 0.0],
                      "parent_node": None if i == 0 else last},
            "flex": flex,
        })
    return fd.Model.from_dict({"name": f"beam-chain-{n_bodies}x{n_modes}",
                               "gravity": [0.0, 0.0, -9.81], "bodies": bodies})


def random_state(model: fd.Model, rng: np.random.Generator):
    """Hinge angles in [−π, π], modal coordinates in [−0.01, 0.01], speeds ~ N(0, 1)."""
    q = np.zeros(model.nq)
    for i in range(model.n_bodies):
        s = int(model.q_start[i])
        q[s] = rng.uniform(-np.pi, np.pi)
        m = int(model.n_modes[i])
        q[s + 1:s + 1 + m] = rng.uniform(-0.01, 0.01, size=m)
    return q, rng.normal(size=model.nu), rng.normal(size=model.nu)


def best_time(f: Callable[..., object], args: tuple, repeats: int, batch_s: float) -> float:
    """Minimum over ``repeats`` of the mean time per call ``f(*args)`` of a batch lasting
    ~``batch_s`` (after one warm-up call)."""
    f(*args)  # warm-up
    t0 = time.perf_counter()
    f(*args)
    one = time.perf_counter() - t0
    number = max(1, int(batch_s / max(one, 1e-7)))
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            f(*args)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _copy2(M: np.ndarray, b: np.ndarray):
    return M.copy(), b.copy()


def _chol_copy(M: np.ndarray, b: np.ndarray, x: np.ndarray):
    return algebra.cholesky_solve(M.copy(), b.copy(), x)


def _ab(model: fd.Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Ruthless articulated-body forward dynamics (Eqs 63–64) through the front door."""
    return fd.forward_dynamics(model, q, u, tau, method="articulated-split", fidelity="ruthless",
                               backend="reference")


def _cb(model: fd.Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Ruthless composite-body forward dynamics (Eqs 45–50) through the front door."""
    return fd.forward_dynamics(model, q, u, tau, method="composite", fidelity="ruthless",
                               backend="reference")


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def crossover(modes: Sequence[int], explicit: Sequence[float], indirect: Sequence[float]):
    """Smallest n_m from which the indirect form is faster at every larger n_m measured."""
    best = None
    for m, te, ti in zip(reversed(modes), reversed(explicit), reversed(indirect),
                          strict=True):
        if ti < te:
            best = m
        else:
            break
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter batches")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="overlay the measured time ratios on the Fig. 2 flop curves")
    parser.add_argument("--bodies", type=int, default=10, help="number of bodies N (10)")
    parser.add_argument("--max-modes", type=int, default=10, help="largest n_m (10)")
    parser.add_argument("--modes", type=int, nargs="+",
                        help="these n_m instead of 1 … --max-modes")
    parser.add_argument("--max-modes-crossover", type=int, default=12,
                        help="largest n_m of the D_f⁻¹ crossover scan (12; 0: no scan)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # numba performance hints
    repeats, batch = (15, 2e-3) if args.quick else (100, 2e-3)
    numpy_repeats = 5 if args.quick else 15

    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}, "
          f"numba {sys.modules['numba'].__version__}")
    N = args.bodies
    modes = args.modes or list(range(1, args.max_modes + 1))
    flop = {r.n_modes: r for r in fig2_table(n_bodies=N, modes=modes)}
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    small = beam_chain(2, 2)
    q0, z = small.neutral_configuration(), np.zeros(small.nu)
    warm = Engine(small, "ruthless")
    for method in METHODS:
        warm.forward_dynamics(q0, z, z, None, method)
    warm.mass_matrix(q0)
    warm.inverse_dynamics(q0, z, z)
    print(f"engine compilation / cache load: {time.perf_counter() - t0:.1f} s (excluded)")

    print()
    print(f"Forward dynamics per call, N = {N} free-free beams on revolute hinges, ruthless "
          "linearization (µs); engine: split = AB of Eqs 63–64, AB = Eq 58 without the split")
    head = (f"{'n_m':>3} {'nu':>4} | {'numpy AB':>9} {'numpy CB':>9} {'CB/AB':>6} | "
            f"{'eng. split':>10} {'eng. AB':>8} {'eng. CB':>8} {'CB/split':>8} | "
            f"{'solve(M)':>9} | {'flop CB/AB':>10} | {'diff numpy AB':>13} {'diff eng.':>9}")
    print(head)
    print("-" * len(head))
    rows = []
    for m in modes:
        model = beam_chain(m, N)
        q, u, tau = random_state(model, rng)
        t_nab = best_time(_ab, (model, q, u, tau), numpy_repeats, 0.02)
        t_ncb = best_time(_cb, (model, q, u, tau), numpy_repeats, 0.02)
        ref = _cb(model, q, u, tau)
        diff_np = _rel(_ab(model, q, u, tau), ref)
        engine = Engine(model, "ruthless")
        t = {method: best_time(engine.forward_dynamics, (q, u, tau, None, method), repeats,
                               batch) for method in METHODS}
        M = engine.mass_matrix(q)
        t_solve = best_time(np.linalg.solve, (M, tau), repeats, batch)
        diff = max(_rel(engine.forward_dynamics(q, u, tau, None, method), ref)
                   for method in METHODS)
        row = (m, model.nu, t_nab, t_ncb, t["articulated-split"], t["composite"], t_solve,
               flop[m].ratio, diff_np, diff, t["articulated"])
        rows.append(row)
        print(f"{m:>3} {model.nu:>4} | {t_nab * 1e6:>9.1f} {t_ncb * 1e6:>9.1f} "
              f"{t_ncb / t_nab:>6.2f} | {row[4] * 1e6:>10.1f} {row[10] * 1e6:>8.1f} "
              f"{row[5] * 1e6:>8.1f} {row[5] / row[4]:>8.2f} | {t_solve * 1e6:>9.1f} | "
              f"{flop[m].ratio:>10.2f} | {diff_np:>13.1e} {diff:>9.1e}", flush=True)

    last = rows[-1]
    print("(diff: max relative difference of u̇ from the numpy composite-body result; both tiers "
          "use the default indirect_min_modes)")
    print()
    ratio = last[5] / last[4]
    verdict = "PASS" if ratio >= PAPER_FACTOR else "FAIL"
    print(f"{verdict}: engine CB/AB (split) time ratio at n_m = {last[0]} is {ratio:.2f} "
          f"(paper: flop ratio {last[7]:.2f}, 'over a factor of {PAPER_FACTOR:g}' at n_m = 10)")
    print(f"numpy tier CB/AB time ratio at n_m = {last[0]}: {last[3] / last[2]:.2f} "
          "(per-call Python overhead dominates both)")

    # -- explicit vs indirect D_f⁻¹ ------------------------------------------------------------
    cmodes = list(range(1, args.max_modes_crossover + 1))
    if cmodes:
        _crossover_scan(cmodes, N, rng, repeats, numpy_repeats, batch)

    # -- where the engine's time goes ------------------------------------------------------------
    m = modes[-1]
    model = beam_chain(m, N)
    engine = Engine(model, "ruthless")
    q, u, tau = random_state(model, rng)
    M = engine.mass_matrix(q)
    z = np.zeros(model.nu)
    t_ab = best_time(engine.forward_dynamics, (q, u, tau, None, "articulated-split"), repeats,
                     batch)
    t_cb = best_time(engine.forward_dynamics, (q, u, tau, None, "composite"), repeats, batch)
    t_m = best_time(engine.mass_matrix, (q,), repeats, batch)
    t_c = best_time(engine.inverse_dynamics, (q, u, z), repeats, batch)
    t_copy = best_time(_copy2, (M, tau), repeats, batch)
    t_chol = best_time(_chol_copy, (M, tau, np.empty(model.nu)), repeats, batch) - t_copy
    chain = [m] * N
    ab_flops = articulated_body_cost(chain).flops
    cb_flops = composite_body_cost(chain).flops
    nu = model.nu
    chol_flops = nu**3 / 3 + 2 * nu**2
    print()
    print(f"Engine at n_m = {m} (nu = {nu}): time and achieved rate on the paper's flop counts")
    print(f"  AB forward dynamics (split) {t_ab * 1e6:8.1f} µs  {ab_flops:>9,.0f} flops "
          f"{ab_flops / t_ab / 1e9:5.2f} GFlop/s")
    print(f"  CB forward dynamics         {t_cb * 1e6:8.1f} µs  {cb_flops:>9,.0f} flops "
          f"{cb_flops / t_cb / 1e9:5.2f} GFlop/s")
    print(f"    mass matrix (Eqs 47-50)   {t_m * 1e6:8.1f} µs")
    print(f"    bias, Newton-Euler        {t_c * 1e6:8.1f} µs")
    print(f"    Cholesky solve            {t_chol * 1e6:8.1f} µs  {chol_flops:>9,.0f} flops "
          f"{chol_flops / t_chol / 1e9:5.2f} GFlop/s")
    print(f"  (np.linalg.solve(M, .), LU, from Python: {last[6] * 1e6:.1f} µs)")

    if args.plot:
        fig2 = _load_fig2_module()
        measured = {"numpy tier": ([r[0] for r in rows], [r[3] / r[2] for r in rows]),
                    "engine": ([r[0] for r in rows], [r[5] / r[4] for r in rows])}
        fig2.plot_fig2(list(flop.values()), measured=measured, path=args.plot, n_bodies=N)
        print(f"\nplot written to {args.plot}")
    return 0


#: the engine's forward-dynamics methods timed per n_m
METHODS = ("articulated-split", "articulated", "composite")


def _crossover_scan(cmodes: list[int], N: int, rng: np.random.Generator, repeats: int,
                    numpy_repeats: int, batch: float) -> None:
    """Explicit vs Eq B3 ``D_f⁻¹`` for each n_m of ``cmodes``, both tiers, and the measured
    crossovers."""
    print()
    print("D_f⁻¹ explicit (Cholesky, indirect_min_modes=99) vs Eq B3 (indirect_min_modes=1), µs")
    print("  numpy tier: articulated_body_inertias_split on the position terms of "
          "RuthlessModel(model, rule).consts; engine: the whole AB (split) call of "
          "Engine(model, 'ruthless', rule), which differs only in this step")
    head = (f"{'n_m':>3} | {'numpy expl.':>11} {'numpy B3':>9} | "
            f"{'eng. expl.':>10} {'eng. B3':>8}")
    print(head)
    print("-" * len(head))
    ne, ni, ce, ci = [], [], [], []
    for m in cmodes:
        model = beam_chain(m, N)
        q, u, tau = random_state(model, rng)
        for rule, numpy_times, engine_times in ((99, ne, ce), (1, ni, ci)):
            pos = position_terms(model, q, RuthlessModel(model, rule).consts, "ruthless")
            numpy_times.append(best_time(articulated_body_inertias_split, (model, pos),
                                         numpy_repeats, 0.02))
            engine = Engine(model, "ruthless", rule)
            engine_times.append(best_time(engine.forward_dynamics,
                                          (q, u, tau, None, "articulated-split"), repeats,
                                          batch))
        print(f"{m:>3} | {ne[-1] * 1e6:>11.1f} {ni[-1] * 1e6:>9.1f} | "
              f"{ce[-1] * 1e6:>10.2f} {ci[-1] * 1e6:>8.2f}", flush=True)
    for tier, te, ti in (("numpy", ne, ni), ("engine", ce, ci)):
        c = crossover(cmodes, te, ti)
        where = (f"Eq B3 is faster from n_m = {c} on" if c is not None
                 else f"Eq B3 is not faster at n_m = {cmodes[-1]}")
        print(f"measured crossover, {tier}: {where} (paper: explicit for n_m <= 7, "
              "Eq B3 from 8)")


if __name__ == "__main__":
    raise SystemExit(main())
