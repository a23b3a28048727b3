"""Wall-clock time of the forward-dynamics algorithms on serial chains of flexible links.

Each link is a uniform cantilever beam (``flexdyn.beam.beam_modes``) on a revolute joint
attached at the last node of its parent (axes alternate between z and y so that the chain
is spatial); with 0 modes the links keep their lumped node masses and are rigid.  For each
fidelity, number of bodies N and modes per body n_m the script times, per call,

* ``forward_dynamics(method="articulated")``        — Eq 58 (all dofs of a body together),
* ``forward_dynamics(method="articulated-split")``  — Eqs 62–64 (flexible / hinge split),
* ``forward_dynamics(method="composite")``          — Eq 46 (mass matrix + Cholesky),
* ``mass_matrix`` (forming M, Eqs 49–50), ``inverse_dynamics`` (Eq 44) and
  ``np.linalg.solve(M, b)`` given M,

as the minimum and the median over several repeats (``time.perf_counter``; each repeat
averages enough calls to last a few milliseconds), and marks the fastest of the three
forward-dynamics methods.  All times include the kinematics and velocity sweeps that the
public ``forward_dynamics`` performs.  It then prints the O(N) check
``time(N=160) / time(N=20)`` at 4 modes per body for the articulated methods (target ≤ 10;
an O(N) algorithm gives 8) and a summary of where each method wins.

Usage::

    python benchmarks/bench_forward_dynamics.py [--fidelity full|ruthless|both] [--quick]

BLAS runs single-threaded (``OPENBLAS_NUM_THREADS=1`` etc., unless already set in the
environment), as the recursions do: multi-threaded LAPACK on a busy 2-core machine makes
``solve``/Cholesky times erratic.
"""

from __future__ import annotations

import argparse
import inspect
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported

import numpy as np  # noqa: E402

try:
    import flexdyn as fd  # noqa: E402
    from flexdyn.beam import beam_modes  # noqa: E402
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import flexdyn as fd
    from flexdyn.beam import beam_modes
try:  # the state terms exactly as forward_dynamics computes them
    from flexdyn.terms import state_terms  # noqa: E402
except ImportError:
    state_terms = None
#: run the numpy reference where the per-state functions also have a compiled backend
REFERENCE = ({"backend": "reference"}
             if "backend" in inspect.signature(fd.forward_dynamics).parameters else {})

METHODS = ("articulated", "articulated-split", "composite")
SHORT = {"articulated": "ABA", "articulated-split": "ABA-split", "composite": "composite"}
BODIES = (5, 10, 20, 40, 80)
MODES = (0, 2, 5, 10)
SCALING = (20, 160, 4)  # N_small, N_large, modes per body
SCALING_TARGET = 10.0
FAILED = (float("inf"), float("inf"))  # a method that raised instead of returning


# ---------------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------------
def flexible_chain(n_bodies: int, n_modes: int, n_elements: int = 6) -> fd.Model:
    """Serial chain of ``n_bodies`` cantilever beam links with ``n_modes`` modes each."""
    beam = beam_modes(1.0, 2.0, EI_y=60.0, EI_z=50.0, n_elements=n_elements,
                      n_modes=max(n_modes, 1), damping_ratio=0.01)
    flex = beam.to_flex_dict()
    if n_modes == 0:  # rigid link: the nodes stay as point masses and attachment points
        for key in ("modes", "stiffness", "damping"):
            del flex[key]
    bodies = []
    for i in range(n_bodies):
        axis = [0.0, 0.0, 1.0] if i % 2 == 0 else [0.0, 1.0, 0.0]
        joint = {"type": "revolute", "axis": axis, "child_node": 0,
                 "parent_node": None if i == 0 else n_elements}
        bodies.append({"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
                       "joint": joint, "flex": flex})
    return fd.Model.from_dict({"name": f"chain N={n_bodies} n_m={n_modes}",
                               "gravity": [0.0, 0.0, -9.81], "bodies": bodies})


def random_state(model: fd.Model, rng: np.random.Generator):
    """``(q, u, tau)`` with joint angles in ±1 rad and small modal coordinates."""
    q = model.neutral_configuration()
    for i in range(model.n_bodies):
        s = model.q_slice(i)
        q[s] = rng.uniform(-1.0, 1.0, size=s.stop - s.start)
        q[s.start + int(model.nq_joint[i]):s.stop] *= 0.05
    return q, rng.normal(size=model.nu), rng.normal(size=model.nu)


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------
def _batch_size(fn: Callable[[], object], min_time: float) -> int:
    """Number of calls that makes one timed batch last at least ``min_time`` seconds."""
    fn()  # warm up
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return number
        number = max(2 * number, int(number * 1.2 * min_time / max(dt, 1e-9)))


def time_calls(fns: dict[str, Callable[[], object]], repeats: int,
               min_time: float) -> dict[str, tuple[float, float]]:
    """``(min, median)`` seconds per call of each function over ``repeats`` batches.

    The batches of the different functions are interleaved (round robin), so that a burst of
    load from other processes hits all of them alike rather than one."""
    numbers = {k: _batch_size(fn, min_time) for k, fn in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(numbers[k]):
                fn()
            samples[k].append((time.perf_counter() - t0) / numbers[k])
    return {k: (min(v), statistics.median(v)) for k, v in samples.items()}


def _state_terms(model: fd.Model, q: np.ndarray, u: np.ndarray, fidelity: str):
    """The position and velocity terms that ``forward_dynamics`` computes first."""
    if state_terms is not None:
        return state_terms(model, q, u, fidelity)
    kin = fd.compute_kinematics(model, q, fidelity)
    return kin, fd.compute_velocities(model, kin, u)


def measure(n_bodies: int, n_modes: int, fidelity: str, repeats: int, min_time: float) -> dict:
    """Times (and failures) of the forward-dynamics methods, the state terms, forming ``M``
    and solving with it, for one chain."""
    model = flexible_chain(n_bodies, n_modes)
    q, u, tau = random_state(model, np.random.default_rng(n_bodies * 100 + n_modes))
    out: dict = {"nu": model.nu, "errors": []}
    fns: dict[str, Callable[[], object]] = {}
    udot = {}
    for method in METHODS:
        def call(m=method):
            return fd.forward_dynamics(model, q, u, tau, method=m, fidelity=fidelity,
                                       **REFERENCE)
        try:
            udot[method] = call()
        except ValueError as err:  # reported in the table instead of a time
            out[method] = FAILED
            out["errors"].append(f"{SHORT[method]}: {err}")
            continue
        fns[method] = call
    if "articulated" in udot and "articulated-split" in udot:
        a, b = udot["articulated"], udot["articulated-split"]
        out["diff"] = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    M = fd.mass_matrix(model, q, fidelity, **REFERENCE)
    fns["kin+vel"] = lambda: _state_terms(model, q, u, fidelity)
    fns["form M"] = lambda: fd.mass_matrix(model, q, fidelity, **REFERENCE)
    fns["inverse dyn."] = lambda: fd.inverse_dynamics(model, q, u, tau, fidelity, **REFERENCE)
    fns["solve(M, b)"] = lambda: np.linalg.solve(M, tau)
    out.update(time_calls(fns, repeats, min_time))
    return out


def fmt(t: tuple[float, float]) -> str:
    """``min / median`` in milliseconds."""
    if t == FAILED:
        return "ValueError"
    return f"{1e3 * t[0]:.3g} / {1e3 * t[1]:.3g}"


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------
def run_table(fidelity: str, bodies, modes, repeats: int, min_time: float) -> dict:
    """Print the timing table of one fidelity; return the measurements by ``(N, n_m)``."""
    extra = ["kin+vel", "form M", "inverse dyn.", "solve(M, b)"]
    cols = [SHORT[m] for m in METHODS] + extra + ["ABA vs split"]
    print(f"\n### fidelity = {fidelity!r}: ms per call, min / median of {repeats} repeats\n")
    print("| N | n_m | nu | " + " | ".join(cols) + " | fastest FD |")
    print("|" + "---:|" * (3 + len(cols)) + ":---|")
    results = {}
    errors: list[str] = []
    for n_m in modes:
        for N in bodies:
            r = measure(N, n_m, fidelity, repeats, min_time)
            results[N, n_m] = r
            best = min(METHODS, key=lambda m: r[m][0])
            cells = []
            for m in METHODS:
                cell = fmt(r[m])
                cells.append(f"**{cell}**" if m == best else cell)
            cells += [fmt(r[k]) for k in extra]
            cells.append(f"{r['diff']:.1e}" if "diff" in r else "–")
            print(f"| {N} | {n_m} | {r['nu']} | " + " | ".join(cells)
                  + f" | {SHORT[best]} |", flush=True)
            errors += [f"N = {N}, n_m = {n_m}: {e}" for e in r["errors"]]
    print("\nColumns: ABA = articulated (Eq 58), ABA-split = articulated-split (Eqs 62–64), "
          "composite (Eq 46) — each a full `forward_dynamics` call; kin+vel = the position and "
          "velocity terms that every call computes first; form M = `mass_matrix`; "
          "inverse dyn. = `inverse_dynamics` (Eq 44); "
          "solve(M, b) = `np.linalg.solve` given M; ABA vs split = "
          "max |u̇_ABA − u̇_split| / max |u̇_split|.")
    if errors:
        print("\nErrors (ValueError instead of a result):\n")
        print("\n".join("- " + e for e in errors))
    return results


def crossover(results: dict, bodies, modes) -> list[str]:
    """One line per n_m: where the articulated methods (the faster of the two variants that
    returned) and the composite one win, and the crossover ``N``."""
    lines = []
    for n_m in modes:
        rows = [results[N, n_m] for N in bodies]
        aba = [min(r["articulated"][0], r["articulated-split"][0]) for r in rows]
        comp = [r["composite"][0] for r in rows]
        wins = [a < c for a, c in zip(aba, comp, strict=True)]
        ratio = ", ".join(f"{N}: {c / a:.2f}" if np.isfinite(a) else f"{N}: (ValueError)"
                          for N, a, c in zip(bodies, aba, comp, strict=True))
        n0 = next((bodies[k] for k in range(len(bodies)) if all(wins[k:])), None)
        failed = [N for N, a in zip(bodies, aba, strict=True) if not np.isfinite(a)]
        if n0 is None:
            where = f"composite fastest up to N = {bodies[-1]} (no crossover measured)"
            if failed:
                where += f"; both articulated variants raise ValueError at N = {failed}"
        elif n0 == bodies[0]:
            where = f"articulated fastest at every N ({bodies[0]}–{bodies[-1]})"
        else:
            exceptions = [N for N, w in zip(bodies, wins, strict=True) if w and N < n0]
            where = (f"crossover at N = {n0}: articulated fastest for N >= {n0}, composite "
                     f"below" + (f" (except N = {exceptions})" if exceptions else ""))
        lines.append(f"n_m = {n_m:2d}: {where}; composite / articulated time by N: {ratio}")
    return lines


def scaling(fidelity: str, repeats: int, min_time: float) -> list[str]:
    """``time(N_large) / time(N_small)`` of the articulated methods, the two sizes timed
    interleaved (so that both see the same load) with twice the usual repeats."""
    n_small, n_large, n_m = SCALING
    fns: dict = {}
    errors: dict[str, str] = {}
    for N in (n_small, n_large):
        model = flexible_chain(N, n_m)
        q, u, tau = random_state(model, np.random.default_rng(N * 100 + n_m))
        for method in METHODS[:2]:
            def call(model=model, q=q, u=u, tau=tau, m=method):
                return fd.forward_dynamics(model, q, u, tau, method=m, fidelity=fidelity,
                                           **REFERENCE)
            try:
                call()
            except ValueError as err:
                errors[method] = f"N = {N}: {err}"
                continue
            fns[method, N] = call
    times = time_calls(fns, 2 * repeats, min_time)
    lines = []
    head = f"time(N={n_large}) / time(N={n_small}) at n_m = {n_m}:"
    for m in METHODS[:2]:
        if m in errors:
            lines.append(f"{SHORT[m]:>9}: {head} not measured, ValueError at {errors[m]}  FAIL")
            continue
        large, small = times[m, n_large][0], times[m, n_small][0]
        ratio = large / small
        verdict = "PASS" if ratio <= SCALING_TARGET else "FAIL"
        lines.append(f"{SHORT[m]:>9}: {head} {1e3 * large:.3g} ms / {1e3 * small:.3g} ms = "
                     f"{ratio:.2f}  (target <= {SCALING_TARGET:g}, O(N) gives "
                     f"{n_large / n_small:g})  {verdict}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fidelity", choices=("full", "ruthless", "both"), default="both")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: fewer sizes, fewer and shorter repeats")
    ap.add_argument("--repeats", type=int, default=None, help="repeats per measurement")
    ap.add_argument("--min-time", type=float, default=None,
                    help="minimum seconds per timed batch of calls")
    args = ap.parse_args(argv)
    fidelities = fd.FIDELITIES if args.fidelity == "both" else (args.fidelity,)
    if args.quick:
        bodies, modes, repeats, min_time = (5, 10), (0, 2), 3, 0.002
    else:
        bodies, modes, repeats, min_time = BODIES, MODES, 7, 0.02
    repeats = args.repeats or repeats
    min_time = args.min_time or min_time
    print(f"flexdyn {fd.__version__}, numpy {np.__version__}, Python {platform.python_version()}"
          f", {platform.machine()} with {os.cpu_count()} CPUs, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"command: python benchmarks/bench_forward_dynamics.py {' '.join(sys.argv[1:])}")
    summary = []
    for fidelity in fidelities:
        results = run_table(fidelity, bodies, modes, repeats, min_time)
        summary.append(f"[{fidelity}]")
        summary += ["  " + s for s in crossover(results, list(bodies), modes)]
        best = {k: min(r[m][0] for m in METHODS) for k, r in results.items()}
        solve = max(results[k]["solve(M, b)"][0] / best[k] for k in results)
        state = [results[k]["kin+vel"][0] / best[k] for k in results]
        summary.append(f"  given M, solve(M, b) costs at most {100 * solve:.2g} % of the fastest "
                       "forward-dynamics call (forming M is what costs)")
        summary.append(f"  the state terms (kin+vel) are {100 * min(state):.0f}–"
                       f"{100 * max(state):.0f} % of the fastest forward-dynamics call")
        failed = sorted(k for k, r in results.items() if FAILED in (r[m] for m in METHODS))
        if failed:
            summary.append(f"  ValueError at (N, n_m) = {failed} (see the errors above)")
        summary += ["  " + s for s in scaling(fidelity, repeats, min_time)]
    print("\nSummary")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
