"""Wall time of ``fd.simulate`` with scipy's integrators on three flexible problems.

For each problem the script runs, in one process and one after the other,

* a reference: ``DOP853`` with ``rtol = 1e-12``, ``atol = 1e-14``;
* ``DOP853``, ``Radau``, ``BDF`` and ``LSODA`` (``integrator=``) at ``simulate``'s default
  tolerances of the state norm (``rtol = 1e-8``, ``atol = 1e-10``) and at a looser setting
  (``rtol = 1e-6``, ``atol = 1e-8``),
* the compiled ``integrator="generalized-alpha"`` (ρ∞ = 0.9) at fixed steps of 1 ms (Exudyn's)
  and 0.2 ms and with adaptive steps at the default and the looser tolerances, and the
  compiled ``integrator="gauss-legendre"`` at 4, 2 and 1 ms and the compiled
  ``integrator="radau-iia"`` with adaptive steps at both tolerances in the state norm and at
  those and rtol 1e-5 in the displacement norm (``error_norm``), each with the modal and
  with the exact iteration matrix (``iteration_matrix``; their own table: wall time, steps,
  rejected tries, Newton iterations, factorizations, errors),

and ``simulate`` with its defaults (``integrator="auto"``; the arm's sine torque and the
spin-up torque are functions of time, ``fd.of_time``), and prints one table per problem: wall
time (``SimulationResult.wall_time``: the integration
alone), ``result.nfev`` (scipy's count), all right-hand-side calls (counted by a subclass of
the scipy solver that wraps ``fun``; Radau, BDF and LSODA get their Jacobian from ``simulate``
as one batched engine call, counted in njev), Jacobian evaluations, LU factorizations, and the
errors of the problem's outputs against the reference.  It also prints the cost of one
right-hand side from Python, ``fd.rhs(model)(t, x, tau)``, against one ``fd.forward_dynamics``
call.

Problems:

1. the 5-beam steel chain of ``bench_engine.py`` (1 m beams, 5 cm square, 4 cantilever modes,
   revolute joints alternating z/y, gravity −z), released at rest from the straight
   configuration, 1 s; output: the inertial position of the last beam's tip node.  Side by side:
   Exudyn's flexible 5-body chain from ``../shared/anchors/exudyn_bench.py`` (optional: skipped
   when exudyn or the anchor script is missing), its wall time per simulated second, the modal
   frequencies of both beam models, flexdyn on the anchor's planar configuration (all
   joints about z, gravity −y), and problem 1 with ``simulate``'s defaults (its integrator,
   tip error and time against Exudyn's);
2. the Damaren–Sharf spin-up beam, ``fd.models.spinup_beam(n_axial=1)`` driven by
   ``fd.models.spinup_torque(model)``, 20 s; outputs: the hub angle and the tip deflection at
   the end;
3. a planar 3-link aluminium arm (tubes Ø60×3, Ø50×2.5, Ø40×2 mm; 1.0 / 0.8 / 0.5 m; 2
   in-plane cantilever modes per link, 1 % damping; 0.5 kg motor hubs; 1.5 kg payload), sine
   joint torques of 20 / 8 / 2 N m over 2 s then coasting, 3 s; outputs: the joint angles at the
   end and the largest elastic tip deflection;
4. closed loop (``closed_loop``): problems 2 and 1 under PD laws ``tau(t, q, u)`` with
   ``simulate``'s defaults, beside their open-loop runs and the spin-up's law on DOP853; and
   a loop closure, the flexible slider-crank of ``examples/06_flexible_slider_crank.py``
   under its motor ``tau(t, q, u)``, 1 s, beside DOP853 (``"auto"``'s choice for a closed
   chain before the compiled integrators solved closures), at the default fidelity and the
   ruthless one.

``--quick`` shortens every span (the whole script then runs in seconds once numba's cache is
warm, for CI); the full mode takes a few minutes.

Usage::

    python benchmarks/bench_simulate.py [--quick] [--no-exudyn]
        [--problems chain,spinup,arm] [--integrators DOP853,Radau,BDF,LSODA]
        [--no-galpha] [--exudyn-anchor PATH]

(``--integrators ""`` runs no scipy integrator besides the reference.)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.integrate  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import STEEL, steel_chain  # noqa: E402
from flexdyn_bench.timing import per_call, user_environment  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn.beam import beam_modes  # noqa: E402

INTEGRATORS = ("DOP853", "Radau", "BDF", "LSODA")
#: the runs of the compiled integrators: label, integrator and options
GALPHA = (("generalized-alpha, h = 1 ms", "generalized-alpha", {"h": 1e-3}),
          ("generalized-alpha, h = 0.2 ms", "generalized-alpha", {"h": 2e-4}),
          ("generalized-alpha, adaptive, rtol 1e-8 (default)", "generalized-alpha", {}),
          ("generalized-alpha, adaptive, rtol 1e-6", "generalized-alpha",
           {"rtol": 1e-6, "atol": 1e-8}),
          ("gauss-legendre, h = 4 ms", "gauss-legendre", {"h": 4e-3}),
          ("gauss-legendre, h = 2 ms", "gauss-legendre", {"h": 2e-3}),
          ("gauss-legendre, h = 1 ms", "gauss-legendre", {"h": 1e-3}),
          ("radau-iia, adaptive, rtol 1e-8", "radau-iia", {}),
          ("radau-iia, adaptive, rtol 1e-6", "radau-iia", {"rtol": 1e-6, "atol": 1e-8}),
          ("radau-iia, displacement norm, rtol 1e-8", "radau-iia",
           {"error_norm": "displacement"}),
          ("radau-iia, displacement norm, rtol 1e-6", "radau-iia",
           {"rtol": 1e-6, "atol": 1e-8, "error_norm": "displacement"}),
          ("radau-iia, displacement norm, rtol 1e-5", "radau-iia",
           {"rtol": 1e-5, "atol": 1e-7, "error_norm": "displacement"}))
SETTINGS = (("default", 1e-8, 1e-10), ("loose", 1e-6, 1e-8))
REFERENCE = ("DOP853", 1e-12, 1e-14)
ANCHOR = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "exudyn_bench.py"
#: Euler–Bernoulli cantilever eigenvalues (β L) of the first two bending modes
BETA_L = (1.8751040687, 4.6940911330)


# ---------------------------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------------------------
@dataclass
class Problem:
    name: str
    model: fd.Model
    t1: float
    outputs: Callable[[fd.SimulationResult], dict[str, np.ndarray]]
    tau: Callable | None = None
    t_eval: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def chain_problem(t1: float) -> Problem:
    model = steel_chain()

    def outputs(r: fd.SimulationResult) -> dict[str, np.ndarray]:
        return {"tip position (m)": r.tip_position("link4")[-1]}

    return Problem("5-beam steel chain", model, t1, outputs, t_eval=np.array([t1]))


def spinup_problem(t1: float) -> Problem:
    model = fd.models.spinup_beam(n_axial=1)  # the paper's basis, as docs/ shows
    tau = fd.models.spinup_torque(model)

    def outputs(r: fd.SimulationResult) -> dict[str, np.ndarray]:
        return {"hub angle (rad)": r.joint("beam")[0][-1, 0],
                "tip deflection (m)": r.deflection("beam")[-1]}

    return Problem("Damaren-Sharf spin-up beam", model, t1, outputs, tau=tau,
                   t_eval=np.array([t1]))


ARM_TUBES = ((0.060, 0.003, 1.0), (0.050, 0.0025, 0.8), (0.040, 0.002, 0.5))  # D, wall, L (m)
ARM_TORQUES = np.array([20.0, 8.0, 2.0])  # N m
ARM_PERIOD = 2.0  # s: one sine period of torque, then coasting
ALUMINIUM = {"E": 70e9, "rho": 2700.0}
ARM_ELEMENTS = 10


def aluminium_arm() -> fd.Model:
    """Three aluminium tubes on revolute joints about z, each joint at the previous tube's tip
    node, in-plane bending only (``EI_z``: deflection along the body y axis), 2 cantilever modes
    and 1 % modal damping per link; a rigid motor hub (0.5 kg, 1e-3 kg m² about z) at each
    joint, on the driven link's frame; a rigid 1.5 kg payload fixed at the last tip node.
    Gravity is −z, normal to the plane of motion: it loads only the joints (no work, no
    deflection), so the motion is that of a gravity-free planar arm."""
    E, rho = ALUMINIUM["E"], ALUMINIUM["rho"]
    hub = {"mass": 0.5, "inertia": [[5e-4, 0.0, 0.0], [0.0, 5e-4, 0.0], [0.0, 0.0, 1e-3]]}
    bodies = []
    for i, (D, wall, length) in enumerate(ARM_TUBES):
        d = D - 2.0 * wall
        area, second_moment = np.pi / 4.0 * (D**2 - d**2), np.pi / 64.0 * (D**4 - d**4)
        beam = beam_modes(length, rho * area, EI_z=E * second_moment, n_elements=ARM_ELEMENTS,
                          n_modes=2, damping_ratio=0.01)
        bodies.append({"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
                       "joint": {"type": "revolute", "axis": [0.0, 0.0, 1.0], "child_node": 0,
                                 "parent_node": None if i == 0 else ARM_ELEMENTS},
                       "rigid": hub, "flex": beam.to_flex_dict()})
    bodies.append({"name": "payload", "parent": "link2",
                   "joint": {"type": "fixed", "parent_node": ARM_ELEMENTS},
                   "rigid": {"mass": 1.5, "inertia": np.diag([1e-3, 1e-3, 1e-3]).tolist()}})
    return fd.Model.from_dict({"name": "aluminium arm", "gravity": [0.0, 0.0, -9.81],
                               "bodies": bodies})


def arm_problem(t1: float) -> Problem:
    model = aluminium_arm()
    slots = model.u_start[:3].copy()
    rigid = np.ones(model.nq, dtype=bool)
    for i in range(3):  # the modal coordinates
        rigid[int(model.q_start[i] + model.nq_joint[i]):model.q_slice(i).stop] = False

    @fd.of_time
    def tau(t: float) -> np.ndarray:
        out = np.zeros(model.nu)
        if t < ARM_PERIOD:
            out[slots] = ARM_TORQUES * np.sin(2.0 * np.pi * t / ARM_PERIOD)
        return out

    def outputs(r: fd.SimulationResult) -> dict[str, np.ndarray]:
        # elastic tip deflection: deformed tip minus the tip of the same joint angles, undeformed
        undeformed = fd.SimulationResult(t=r.t, q=np.where(rigid, r.q, 0.0), u=r.u, model=model)
        deflection = np.linalg.norm(r.tip_position("link2") - undeformed.tip_position("link2"),
                                    axis=1)
        return {"joint angles (rad)": r.q[-1, model.q_start[:3]],
                "max tip deflection (m)": np.max(deflection)}

    return Problem("3-link aluminium arm", model, t1, outputs, tau=tau,
                   t_eval=np.linspace(0.0, t1, int(round(t1 / 0.005)) + 1))


# ---------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------
def counting(solver: str) -> type:
    """The scipy solver ``solver`` with every call of the right-hand side counted
    (``.calls``; Radau, BDF and LSODA get their Jacobian from ``simulate``, one batched
    engine call each, not counted here), its steps counted (``.steps``, accepted and
    rejected tries of ``step()``) and its last instance kept (``.last``)."""
    base = getattr(scipy.integrate, solver)

    class Counted(base):
        calls = 0
        steps = 0
        last = None

        def __init__(self, fun, *args, **kwargs):
            def counted(t, y):
                Counted.calls += 1
                return fun(t, y)

            super().__init__(counted, *args, **kwargs)
            Counted.last = self

        def step(self):
            Counted.steps += 1
            return super().step()

    Counted.__name__ = Counted.__qualname__ = solver
    return Counted


@dataclass
class Run:
    integrator: str
    label: str
    wall: float
    nfev: int
    calls: int
    steps: int
    njev: int
    nlu: int
    outputs: dict[str, np.ndarray] | None
    failure: str = ""


def run(problem: Problem, integrator: str, label: str, rtol: float, atol: float) -> Run:
    cls = counting(integrator)
    name = integrator
    t0 = time.perf_counter()
    try:
        r = fd.simulate(problem.model, t_span=(0.0, problem.t1), tau=problem.tau,
                        integrator=fd.ScipyIVP(cls, rtol=rtol, atol=atol),
                        t_eval=problem.t_eval)
    except fd.SimulationError as exc:
        s = cls.last
        return Run(name, label, time.perf_counter() - t0, int(s.nfev), cls.calls, cls.steps,
                   int(getattr(s, "njev", 0)), int(getattr(s, "nlu", 0)), None,
                   f"failed at t = {exc.t:.4g} s: {exc.solver_message}")
    s = cls.last
    return Run(name, label, r.wall_time, r.nfev, cls.calls, cls.steps, int(getattr(s, "njev", 0)),
               int(getattr(s, "nlu", 0)), problem.outputs(r))


def _setting(r: fd.SimulationResult) -> str:
    """The integrator, error norm and tolerances of a run, from its ``settings``."""
    s = r.settings
    return (f"{s['integrator']}, {s['error_norm'] or 'state'} norm, rtol {s['rtol']:g}, "
            f"atol {s['atol']:g}")


def default_line(problem: Problem, ref: Run) -> fd.SimulationResult:
    """``simulate`` with its defaults (``integrator="auto"``), printed: the integrator it
    chose, its tolerances, wall time and the errors of the problem's outputs; returns the
    run."""
    r = fd.simulate(problem.model, t_span=(0.0, problem.t1), tau=problem.tau,
                    t_eval=problem.t_eval)
    errors = ", ".join(f"{k.split(' (')[0]} {_fmt(np.max(np.abs(v - ref.outputs[k])))}"
                       for k, v in problem.outputs(r).items())
    print(f"simulate's defaults: {_setting(r)}: wall {r.wall_time:.3f} s; errors: {errors}",
          flush=True)
    return r


def galpha_table(problem: Problem, ref: Run) -> None:
    """The compiled integrators (generalized-α with ρ∞ = 0.9, Gauss–Legendre, Radau IIA) at
    the settings of :data:`GALPHA`, each with the modal and the exact iteration matrix
    (``iteration_matrix``) one after the other: wall time, their counts (from
    ``result.message``) and the errors against the reference."""
    keys = list(ref.outputs)
    print(f"\ncompiled integrators on the {problem.name}:")
    print("| setting | matrix | wall (s) | steps | rejected | Newton iterations | "
          "factorizations | " + " | ".join(f"err {k.split(' (')[0]}" for k in keys) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * (5 + len(keys))) + "|")
    for label, integrator, options in GALPHA:
        for matrix in ("modal", "exact"):
            chosen = fd.simulation.INTEGRATORS[integrator](**options, iteration_matrix=matrix)
            try:
                r = fd.simulate(problem.model, t_span=(0.0, problem.t1), tau=problem.tau,
                                t_eval=problem.t_eval, integrator=chosen)
            except fd.SimulationError as exc:
                print(f"| {label} | {matrix} | failed at t = {exc.t:.4g} s: "
                      f"{exc.solver_message} |")
                continue
            counts = [int(v) for v in re.findall(r"(\d+) (?:steps|rejected|Newton|factor)",
                                                 r.message)]
            out = problem.outputs(r)
            errs = [f"{np.max(np.abs(np.asarray(out[k]) - ref.outputs[k])):.1e}" for k in keys]
            print("| " + " | ".join([label, matrix, f"{r.wall_time:.3f}", *map(str, counts),
                                     *errs]) + " |", flush=True)


def _fmt(value: np.ndarray) -> str:
    a = np.atleast_1d(np.asarray(value, dtype=float))
    return "[" + ", ".join(f"{v:+.9g}" for v in a) + "]" if a.size > 1 else f"{a[0]:+.9g}"


def print_table(problem: Problem, ref: Run, runs: list[Run]) -> None:
    keys = list(ref.outputs)
    print(f"\nreference ({REFERENCE[0]}, rtol {REFERENCE[1]:g}, atol {REFERENCE[2]:g}): wall "
          f"{ref.wall:.2f} s, nfev {ref.nfev}")
    for k in keys:
        print(f"  {k}: {_fmt(ref.outputs[k])}")
    errs = [f"err {k.split(' (')[0]}" for k in keys]
    head = ("| integrator | tolerances | wall (s) | nfev | rhs calls | µs/call | steps | njev | "
            "nlu | " + " | ".join(errs) + " |")
    print(head)
    print("|" + "|".join(["---"] * 2 + ["---:"] * (7 + len(keys))) + "|")
    tol = {label: f"rtol {rtol:g}, atol {atol:g}" for label, rtol, atol in SETTINGS}
    for r in runs:
        cells = [r.integrator, tol[r.label], f"{r.wall:.2f}", str(r.nfev), str(r.calls),
                 f"{1e6 * r.wall / max(r.calls, 1):.0f}", str(r.steps), str(r.njev), str(r.nlu)]
        if r.outputs is None:
            cells += [r.failure] + [""] * (len(keys) - 1)
        else:
            for k in keys:
                d = np.atleast_1d(np.asarray(r.outputs[k]) - np.asarray(ref.outputs[k]))
                cells.append(f"{np.max(np.abs(d)):.1e}")
        print("| " + " | ".join(cells) + " |", flush=True)


def rhs_cost(problem: Problem, x: np.ndarray, min_time: float) -> None:
    """Per call: ``fd.rhs(model)(t, x, tau)`` (the problem's tau, and a constant array) vs
    ``fd.forward_dynamics``."""
    model = problem.model
    q, u = x[:model.nq], x[model.nq:model.nq + model.nu]
    tau_array = np.zeros(model.nu) if problem.tau is None else problem.tau(0.3, q, u)
    f = fd.rhs(model)
    t_fd = per_call(lambda: fd.forward_dynamics(model, q, u, tau_array), min_time)
    t_arr = per_call(lambda: f(0.3, x[:model.nq + model.nu], tau_array), min_time)
    line = (f"one right-hand side ({model.nq + model.nu} states, {model.nu} dof), per call from "
            f"Python: fd.forward_dynamics {1e6 * t_fd:.1f} µs, fd.rhs(model)(t, x, tau array) "
            f"{1e6 * t_arr:.1f} µs")
    if problem.tau is not None:
        t_fn = per_call(lambda: f(0.3, x[:model.nq + model.nu], problem.tau), min_time)
        line += f", with the problem's tau callable {1e6 * t_fn:.1f} µs"
    print(line)


def largest_eigenvalue(problem: Problem) -> float:
    """Largest ``|λ|`` (rad/s) of the Jacobian ``∂ẋ/∂x`` at rest in the initial configuration
    (central differences of ``fd.rhs``): the frequency that limits an explicit step."""
    model = problem.model
    f = fd.rhs(model)
    x0 = np.concatenate([model.neutral_configuration(), np.zeros(model.nu)])
    tau = None if problem.tau is None else problem.tau(0.0, x0[:model.nq], x0[model.nq:])
    J = np.empty((x0.size, x0.size))
    for j in range(x0.size):
        h = 1e-6 * max(1.0, abs(x0[j]))
        xp, xm = x0.copy(), x0.copy()
        xp[j] += h
        xm[j] -= h
        J[:, j] = (f(0.0, xp, tau) - f(0.0, xm, tau)) / (2.0 * h)
    return float(np.max(np.abs(np.linalg.eigvals(J))))


def bench(problem: Problem, min_time: float, integrators: tuple[str, ...] = INTEGRATORS,
          galpha: bool = True) -> tuple[Run, list[Run], fd.SimulationResult]:
    model = problem.model
    print(f"\n=== {problem.name}: {model.n_bodies} bodies, nq = {model.nq}, nu = {model.nu}, "
          f"{problem.t1:g} s simulated ===")
    for note in problem.notes:
        print(note)
    freqs = fd.models.modal_frequencies(model)
    print("modal frequencies, body frame held fixed (Hz): " + "; ".join(
        f"{b.name} " + ", ".join(f"{v:.1f}" for v in f)
        for b, f in zip(model.bodies, freqs, strict=True) if f.size))
    t0 = time.perf_counter()  # numba: load the cached machine code (or compile it)
    fd.simulate(model, t_span=(0.0, 1e-4), tau=problem.tau)
    fd.rhs(model)(0.0, np.zeros(model.nq + model.nu))
    fd.forward_dynamics(model, model.neutral_configuration(), np.zeros(model.nu),
                        np.zeros(model.nu))
    print(f"warm-up (numba cache load or compile) {time.perf_counter() - t0:.1f} s")
    ref = run(problem, *REFERENCE[:1], "reference", *REFERENCE[1:])
    if ref.outputs is None:
        raise RuntimeError(f"the reference run failed: {ref.failure}")
    runs = [run(problem, integ, label, rtol, atol)
            for label, rtol, atol in SETTINGS for integ in integrators]
    print_table(problem, ref, runs)
    default = default_line(problem, ref)
    if galpha:
        for matrix in ("modal", "exact"):  # compile (or load) before the timed runs
            fd.simulate(model, t_span=(0.0, 1e-3), tau=problem.tau,
                        integrator=fd.GeneralizedAlpha(iteration_matrix=matrix))
        galpha_table(problem, ref)
    lam = largest_eigenvalue(problem)
    steps = ", ".join(f"{r.label} {problem.t1 / r.steps * lam:.1f}" for r in runs
                      if r.integrator == "DOP853")
    print(f"largest |eigenvalue| of the Jacobian at rest, initial configuration: {lam:.0f} rad/s "
          f"({lam / (2.0 * np.pi):.0f} Hz); DOP853's mean step times it: {steps}")
    state = fd.simulate(model, t_span=(0.0, min(problem.t1, 0.05)), tau=problem.tau)
    rhs_cost(problem, np.concatenate([state.q[-1], state.u[-1]]), min_time)
    return ref, runs, default


# ---------------------------------------------------------------------------------------------
# Exudyn, side by side with the steel chain
# ---------------------------------------------------------------------------------------------
def load_anchor(path: Path, quick: bool):
    """Import the anchor script as a module (it parses its own arguments on import)."""
    spec = importlib.util.spec_from_file_location("exudyn_bench", path)
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    sys.argv = [str(path)] + (["--quick"] if quick else [])
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def planar_steel_chain() -> fd.Model:
    """The steel chain in the anchor's configuration: every joint about z, gravity −y."""
    d = steel_chain().to_dict()
    d["gravity"] = [0.0, -9.81, 0.0]
    for body in d["bodies"]:
        body["joint"]["axis"] = [0.0, 0.0, 1.0]
    return fd.Model.from_dict(d)


_FRESH_FLEXDYN = """
import time
start = time.perf_counter()
import flexdyn as fd
fd.simulate(fd.load_model({model!r}), t_span=(0.0, {t1!r}), t_eval=[{t1!r}])
print(time.perf_counter() - start)
"""
_FRESH_EXUDYN = """
import importlib.util, sys, time
start = time.perf_counter()
spec = importlib.util.spec_from_file_location("exudyn_bench", {anchor!r})
anchor = importlib.util.module_from_spec(spec)
sys.argv = [{anchor!r}, "--quick"]
spec.loader.exec_module(anchor)
anchor.T_END = {t1!r}
fem, cms, root, tip = anchor.beam_cms(4, anchor.beam_fem())
anchor.time_solve(lambda m: anchor.build_flexible_chain(m, cms, root, tip, 5),
                  anchor.exu.DynamicSolverType.GeneralizedAlpha)
print(time.perf_counter() - start)
"""


def fresh_process_seconds(code: str, repeat: int = 3) -> float:
    """Seconds from a new process's start to the end of ``code``, which prints them (best
    of ``repeat``), in a user's environment (:func:`flexdyn_bench.timing.user_environment`)."""
    return min(float(subprocess.run([sys.executable, "-c", code], env=user_environment(),
                                    check=True, capture_output=True, text=True).stdout)
               for _ in range(repeat))


def exudyn_side_by_side(path: Path, quick: bool, chain_ref: Run, chain_runs: list[Run],
                        chain_default: fd.SimulationResult, t1: float) -> None:
    """Exudyn's 5-body chain (anchor script), timed as the anchor times it (fixed h = 1 ms,
    ``SolveDynamic`` alone; ``t1`` simulated seconds instead of 1 s with ``--quick``), flexdyn
    on the same planar load case, flexdyn's chain of problem 1 with ``simulate``'s defaults
    (``chain_default``, problem 1's run) and with Gauss–Legendre (their tip errors against
    ``chain_ref``), and the modal frequencies of the two beam models."""
    print("\n--- Exudyn, flexible 5-body chain (../shared/anchors/exudyn_bench.py) ---")
    try:
        import exudyn  # noqa: F401
    except ImportError:
        print("exudyn is not installed: skipping (pip install exudyn)")
        return
    if not path.is_file():
        print(f"anchor script {path} not found: skipping (--exudyn-anchor PATH)")
        return
    anchor = load_anchor(path, quick)
    anchor.REPEATS = 1 if quick else 3
    if quick:
        anchor.T_END = t1
    t0 = time.perf_counter()
    mesh = anchor.beam_fem()
    fem, cms, root, tip = anchor.beam_cms(4, mesh)
    setup = time.perf_counter() - t0
    wall, mbs = anchor.time_solve(lambda m: anchor.build_flexible_chain(m, cms, root, tip, 5),
                                  anchor.exu.DynamicSolverType.GeneralizedAlpha)
    R = mbs.GetNodeOutput(0, anchor.exu.OutputVariableType.RotationMatrix).reshape(3, 3)
    it = mbs.sys["dynamicSolver"].it
    f_exu = fem.GetEigenFrequenciesHz()
    print(f"exudyn {anchor.exu.__version__}: mesh + Craig-Bampton modes {setup:.1f} s; "
          f"{mbs.systemData.ODE2Size()} ODE2 coordinates + {mbs.systemData.AEsize()} constraint "
          f"equations; generalized-alpha, h = {anchor.H:g} s, {it.numberOfSteps} steps, "
          f"{it.newtonStepsCount / it.numberOfSteps:.1f} Newton iterations/step, "
          f"{it.newtonJacobiCount} Jacobians")
    print(f"  SolveDynamic wall time per simulated second: {wall / anchor.T_END:.3f} s (median of "
          f"{anchor.REPEATS}); first body's frame angle at {anchor.T_END:g} s "
          f"{np.arctan2(R[1, 0], R[0, 0]):+.4f} rad")

    # flexdyn on the anchor's planar configuration, for a like-for-like load case
    planar = Problem("planar steel chain", planar_steel_chain(), anchor.T_END,
                     lambda r: {"first joint angle (rad)": r.q[-1, 0]},
                     t_eval=np.array([anchor.T_END]))
    fd.simulate(planar.model, t_span=(0.0, 1e-4))
    for integ in ("DOP853", "LSODA"):
        r = run(planar, integ, "default", *SETTINGS[0][1:])
        angle = (f"first joint angle {_fmt(r.outputs['first joint angle (rad)'])} rad"
                 if r.outputs is not None else r.failure)
        print(f"  flexdyn, same planar load case (joints about z, gravity -y), {integ} at rtol "
              f"1e-8: {r.wall / anchor.T_END:.3f} s per simulated second ({r.calls} rhs calls); "
              f"{angle}", flush=True)
    r = fd.simulate(planar.model, t_span=(0.0, anchor.T_END), t_eval=planar.t_eval,
                    integrator=fd.GeneralizedAlpha(h=anchor.H))
    print(f"  flexdyn, same planar load case, generalized-alpha (compiled) at Exudyn's fixed "
          f"h = {anchor.H:g} s, rho_inf 0.9: {r.wall_time / anchor.T_END:.3f} s per simulated "
          f"second; first joint angle {_fmt(r.q[-1, 0])} rad ({r.message})", flush=True)
    for r in chain_runs:
        if r.label == "default" and r.outputs is not None:
            print(f"  flexdyn, spatial chain of problem 1, {r.integrator} at rtol 1e-8: "
                  f"{r.wall / t1:.3f} s per simulated second")
    gauss = fd.simulate(chain_default.model, t_span=(0.0, t1), t_eval=[t1],
                        integrator=fd.GaussLegendre(h=4e-3))
    for label, r in ((f"simulate's defaults: {_setting(chain_default)}", chain_default),
                     (f"gauss-legendre (compiled) at h = {gauss.settings['h']:g} s", gauss)):
        per_second = r.wall_time / t1
        error = np.max(np.abs(r.tip_position("link4")[-1]
                              - chain_ref.outputs["tip position (m)"]))
        print(f"  flexdyn, spatial chain of problem 1, {label}: {per_second:.3f} s per "
              f"simulated second, {per_second / (wall / anchor.T_END):.3f} of Exudyn's; tip "
              f"error {error:.1e} m", flush=True)

    with tempfile.TemporaryDirectory() as where:
        model = str(Path(where) / "steel_chain.json")
        fd.save_model(chain_default.model, model)
        fresh = fresh_process_seconds(_FRESH_FLEXDYN.format(model=model, t1=t1))
    fresh_exu = fresh_process_seconds(_FRESH_EXUDYN.format(anchor=str(path), t1=anchor.T_END))
    print(f"  in a fresh process, from its start (best of 3): Exudyn (import, mesh, "
          f"Craig-Bampton modes, chain, SolveDynamic) {fresh_exu / anchor.T_END:.3f} s per "
          f"simulated second; flexdyn (import, model file, the engine's cached machine code, "
          f"simulate's defaults on the spatial chain) {fresh / t1:.3f} s, "
          f"{(fresh / t1) / (fresh_exu / anchor.T_END):.3f} of Exudyn's fresh process, "
          f"{(fresh / t1) / (wall / anchor.T_END):.3f} of its SolveDynamic alone", flush=True)

    a, E, rho = STEEL["side"], STEEL["E"], STEEL["rho"]
    f_eb = [(bl**2 / (2.0 * np.pi)) * np.sqrt(E * a**4 / 12.0 / (rho * a * a)) for bl in BETA_L]
    f_fd = fd.models.modal_frequencies(steel_chain())[0]
    print("  modal frequencies of one beam, root clamped (Hz):")
    print("    flexdyn  (Euler-Bernoulli, 6 lumped-mass elements, bending in y and z): "
          + ", ".join(f"{v:.1f}" for v in f_fd))
    print("    Exudyn   (480 linear tets, 567 dof, Craig-Bampton, 4 eigenmodes):       "
          + ", ".join(f"{v:.1f}" for v in f_exu[:4]))
    print("    analytic (Euler-Bernoulli cantilever, 1st and 2nd bending, each in y and z): "
          + ", ".join(f"{v:.1f}" for v in f_eb))


# ---------------------------------------------------------------------------------------------
def slider_crank() -> tuple[fd.Model, np.ndarray, np.ndarray, Callable]:
    """The flexible slider-crank of ``examples/06_flexible_slider_crank.py`` (a crank, an
    aluminium rod of two cantilever modes, a slider on a prismatic joint, a ``pin`` loop
    closure), assembled at a crank angle of zero, and its motor ``tau(t, q, u)`` (1.5 N m
    fading out over 0.3 s)."""
    crank, length, z = 0.15, 0.30, [0, 0, 1]
    rod = beam_modes(length, 2700.0 * 6e-5, EI_z=7e10 * 1.2e-10, n_elements=8, n_modes=2,
                     damping_ratio=0.01)
    model = (fd.ModelBuilder("slider-crank")
             .add_body("crank", None, joint={"type": "revolute", "axis": z},
                       rigid={"mass": 0.5, "com": [crank / 2, 0, 0],
                              "inertia": np.diag([1e-5, 1e-3, 1e-3])})
             .add_body("rod", "crank", flex=rod.to_flex_dict(),
                       joint={"type": "revolute", "axis": z,
                              "placement": {"translation": [crank, 0, 0]}})
             .add_body("slider", None, joint={"type": "prismatic", "axis": [1, 0, 0]},
                       rigid={"mass": 0.3, "com": [0, 0, 0], "inertia": np.eye(3) * 1e-4})
             .add_constraint("wrist", "pin", "rod", "slider", node=8, other_point=[0, 0, 0],
                             axis=z)
             .build())
    guess = model.neutral_configuration()
    guess[model.q_slice(model.body_index("slider")).start] = 0.4
    q0, u0 = fd.assemble(model, guess, fixed=["crank"])

    def motor(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(model.nu)
        out[0] = 1.5 * max(0.0, 1.0 - t / 0.3)
        return out

    return model, q0, u0, motor


def closed_loop(t_spin: float, t_chain: float, t_crank: float) -> None:
    """State feedback ``tau(t, q, u)``, prescribed motion and a loop closure with
    ``simulate``'s defaults: the spin-up beam under a PD law on the hub tracking the profile
    (with the rigid feed-forward) and with the hub's motion prescribed by the profile, each
    beside the same problem on DOP853 at the default tolerances (what ``"auto"`` chose for
    both before the compiled integrators took them), and the open-loop ``fd.of_time`` torque;
    the steel chain under a PD law holding every joint at its start (against gravity) beside
    its constant torque run, and under a force at its tip node that follows the tip's frame
    (``f_nodes``) beside DOP853, which ``"auto"`` chose for nodal loads before the compiled
    integrators took them; the flexible slider-crank
    (:func:`slider_crank`) beside DOP853, which ``"auto"`` chose for a loop closure before the
    compiled integrators solved them (with the ruthless fidelity: before its closures ran on
    the engine).
    Each with its tip error (the slider's position) against DOP853 at rtol 1e-12."""
    print("\n## closed loop and prescribed motion with simulate's defaults")
    print("| problem | run | integrator | wall (s) | steps / nfev | error of the tip (m) |")
    print("|---|---|---|---:|---:|---:|")
    spin = fd.models.spinup_beam(n_axial=1)
    open_loop = fd.models.spinup_torque(spin)
    inertia = open_loop.rigid_inertia

    def pd_hub(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        theta, rate, accel = fd.models.spinup_profile(t)
        out = np.zeros(spin.nu)
        out[0] = inertia * (accel + 4.0 * (theta - q[0]) + 4.0 * (rate - u[0]))
        return out

    chain = steel_chain()
    joints = [int(chain.u_start[i]) for i in range(chain.n_bodies)]
    kp, kd = 2e3, 2e2

    def pd_chain(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(chain.nu)
        out[joints] = -kp * q[joints] - kd * u[joints]
        return out

    constant = np.zeros(chain.nu)
    follower = {"f_nodes": {(chain.names[-1], -1): [0.0, 0.0, 0.0, 0.0, 5.0, 0.0]}}
    drive = {"prescribed": {"beam": fd.models.spinup_profile}}
    cases = (("spin-up beam", spin, t_spin, lambda r: r.deflection("beam")[-1],
              (("PD on the hub", {"tau": pd_hub}, fd.Auto()),
               ("PD on the hub", {"tau": pd_hub}, fd.ScipyIVP("DOP853")),
               ("open loop (of_time)", {"tau": open_loop}, fd.Auto()),
               ("hub motion prescribed", drive, fd.Auto()),
               ("hub motion prescribed", drive, fd.ScipyIVP("DOP853")))),
             ("5-beam steel chain", chain, t_chain, lambda r: r.tip_position("link4")[-1],
              (("PD on every joint", {"tau": pd_chain}, fd.Auto()),
               ("constant torque", {"tau": constant}, fd.Auto()),
               ("tip force in the tip's frame (f_nodes)", follower, fd.Auto()),
               ("tip force in the tip's frame (f_nodes)", follower, fd.ScipyIVP("DOP853")))))
    crank, q0, u0, motor = slider_crank()
    slider = crank.q_slice(crank.body_index("slider")).start
    crank_loads = {"q0": q0, "u0": u0, "tau": motor}
    ruthless = crank_loads | {"fidelity": "ruthless"}
    cases += (("flexible slider-crank (loop closure)", crank, t_crank,
               lambda r: r.q[-1, slider],
               (("motor tau(t, q, u)", crank_loads, fd.Auto()),
                ("motor tau(t, q, u)", crank_loads, fd.ScipyIVP("DOP853")),
                ("motor, ruthless fidelity", ruthless, fd.Auto()),
                ("motor, ruthless fidelity", ruthless, fd.ScipyIVP("DOP853")))),)
    for name, model, t1, tip, runs in cases:
        for label, loads, integrator in runs:
            ref = fd.simulate(model, t_span=(0.0, t1), t_eval=[t1], **loads,
                              integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
            fd.simulate(model, t_span=(0.0, min(t1, 0.01)), **loads,
                        integrator=integrator)  # compile and load outside the timing
            res = fd.simulate(model, t_span=(0.0, t1), t_eval=[t1], **loads,
                              integrator=integrator)
            match = re.search(r"(\d+) steps", res.message)
            count = match.group(1) if match else str(res.nfev)
            print(f"| {name}, {t1:g} s | {label} | {res.settings['integrator']} | "
                  f"{res.wall_time:.3f} | {count} | "
                  f"{np.max(np.abs(tip(res) - tip(ref))):.1e} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short spans, for CI (seconds)")
    ap.add_argument("--no-exudyn", action="store_true", help="skip the Exudyn comparison")
    ap.add_argument("--problems", default="chain,spinup,arm,closed-loop",
                    help="comma-separated subset of chain, spinup, arm, closed-loop "
                         "(default all)")
    ap.add_argument("--integrators", default=",".join(INTEGRATORS),
                    help=f"comma-separated subset of {', '.join(INTEGRATORS)} (default all)")
    ap.add_argument("--no-galpha", action="store_true",
                    help="skip the compiled generalized-alpha rows")
    ap.add_argument("--exudyn-anchor", type=Path, default=ANCHOR,
                    help=f"path of exudyn_bench.py (default {ANCHOR})")
    args = ap.parse_args()
    spans = (0.05, 1.0, 0.2) if args.quick else (1.0, 20.0, 3.0)
    min_time = 0.01 if args.quick else 0.1
    print(f"flexdyn {fd.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} cores"
          f"{' (--quick: shortened spans)' if args.quick else ''}")
    print("wall = SimulationResult.wall_time (the integration alone); nfev = result.nfev "
          "(scipy's count); rhs calls = every call of the right-hand side (the implicit "
          "integrators' Jacobians are one batched engine call each, counted in njev); "
          "errors = max |value - reference| of each output")

    problems = args.problems.split(",")
    integrators = tuple(name for name in args.integrators.split(",") if name)
    for name in problems:
        if name not in ("chain", "spinup", "arm", "closed-loop"):
            ap.error(f"unknown problem {name!r}")
    for name in integrators:
        if name not in INTEGRATORS:
            ap.error(f"unknown integrator {name!r}")
    if "chain" in problems:
        chain = chain_problem(spans[0])
        chain_ref, chain_runs, chain_default = bench(chain, min_time, integrators,
                                                     not args.no_galpha)
        if not args.no_exudyn:
            exudyn_side_by_side(args.exudyn_anchor, args.quick, chain_ref, chain_runs,
                                chain_default, spans[0])
    if "spinup" in problems:
        bench(spinup_problem(spans[1]), min_time, integrators, not args.no_galpha)
    if "arm" in problems:
        arm = arm_problem(spans[2])
        arm.notes.append("gravity -z is normal to the plane of motion (no work, no deflection); "
                         f"torques {ARM_TORQUES.tolist()} N m x sin(2 pi t / {ARM_PERIOD:g} s) "
                         f"for t < {ARM_PERIOD:g} s, then 0")
        bench(arm, min_time, integrators, not args.no_galpha)
    if "closed-loop" in problems:
        closed_loop(spans[1], spans[0], min(1.0, spans[2]))


if __name__ == "__main__":
    main()
