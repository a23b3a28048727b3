"""The run loop of :func:`~flexdyn.simulation.simulate`: a scipy ``OdeSolver`` stepped to the
end, a failure or a terminal event, with the samples, the events, the progress bar and the
failure handling, and the :class:`~flexdyn.results.SimulationResult` assembled from the
samples (also for the compiled integrators of :mod:`~flexdyn.simulation.compiled`)."""

from __future__ import annotations

import functools
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy
import threadpoolctl

from ..chain import Model
from ..engine.notice import compile_seconds
from ..modal import highest_frequency
from ..results import SimulationError, SimulationResult
from .problem import N_EXTRA, Problem, RhsFailure, normalized

__all__ = ["STIFF_FRACTION", "STIFF_MIN_STEPS", "Events", "Samples", "StiffnessWarning",
           "TextProgress", "implicit_jacobian", "integrate_scipy", "keep_partial",
           "progress_bar", "result_of", "single_blas_thread", "warn_if_stiff"]


class Stopwatch:
    """The seconds of a run since the stopwatch was made: :meth:`stats` gives its
    ``wall_time`` less the time the engine spent compiling meanwhile (a first run's compile
    would swell it a hundredfold; :func:`flexdyn.engine.notice.compile_seconds`) and that
    compile time."""

    def __init__(self) -> None:
        self.start, self.compiled = time.perf_counter(), compile_seconds()

    def stats(self) -> dict[str, float]:
        """``{"wall_time": …, "compile_time": …}`` (s) up to now."""
        compiling = compile_seconds() - self.compiled
        return {"wall_time": time.perf_counter() - self.start - compiling,
                "compile_time": compiling}


def result_of(ode: Problem, t: np.ndarray, y: np.ndarray, partial: bool = False,
              compile_time: float = 0.0, **stats: Any) -> SimulationResult:
    """The :class:`SimulationResult` of the samples ``y`` (nt × (nq + nu + 3): ``[q; u]`` and
    the work integrals) at the times ``t``, with the histories of :meth:`Problem.histories`;
    ``stats`` (``nfev``, ``wall_time``, ``message``, the events) passed on, and the seconds
    of compiling during the run (``compile_time``, :class:`Stopwatch`) in its settings."""
    n = ode.model.nq + ode.model.nu
    try:
        histories = ode.histories(t, y, partial)
    except RhsFailure as exc:
        raise SimulationError(f"at t = {exc.t:.6g} s: {exc.message}", exc.t,
                              exc.message) from None
    return SimulationResult(
        t=t, model=ode.model, fidelity=ode.fidelity, method=ode.method,
        work=y[:, n].copy(), external_work=y[:, n + 1].copy(), dissipation=y[:, n + 2].copy(),
        settings={**ode.settings, "compile_time": compile_time}, **histories, **stats)


# ----------------------------------------------------------------------------------------------


class StiffnessWarning(RuntimeWarning):
    """An explicit integrator's steps were limited by the stability of the stiffest elastic
    mode rather than by accuracy (:func:`simulate`)."""


#: runs shorter than this many steps are not examined for stiffness
STIFF_MIN_STEPS = 500
#: mean steps above this fraction of the stability limit count as limited by it
STIFF_FRACTION = 0.4


def stiffness_limit(model: Model, integrator: str, q0: np.ndarray, fidelity: str,
                    held: Sequence[str] = ()) -> tuple[float, float] | None:
    """``(ω, h)``: the highest assembled frequency at ``q0`` (rad/s) with the joints of the
    bodies ``held`` (prescribed motion) locked (:func:`flexdyn.modal.highest_frequency`) and
    the largest step of the explicit ``integrator`` (a key of
    :data:`flexdyn.stability.STABILITY_TABLEAUX`) stable for it (s); None for another
    integrator or where there is no modal analysis (a degree of freedom without inertia)."""
    from ..stability import STABILITY_TABLEAUX, step_limit  # scipy.integrate's tableaux

    if integrator not in STABILITY_TABLEAUX:
        return None
    try:
        omega = highest_frequency(model, q0, fidelity, held)
    except ValueError:
        return None
    return (omega, step_limit(integrator, np.array([1j * omega]))) if omega > 0.0 else None


def _stiffest_mode(omega: float, h_stable: float) -> str:
    return (f"the stiffest mode ({omega / (2 * np.pi):.4g} Hz; stable steps below about "
            f"{h_stable:.2g} s)")


#: what to do about a model too stiff for an explicit integrator
_REMEDY = ("Use an implicit integrator (integrator=flexdyn.RadauIIA(), "
           "flexdyn.GeneralizedAlpha(), or flexdyn.GaussLegendre(h=...)), fewer modes, or a "
           "softer model; flexdyn.max_stable_step(model, integrator) gives the limit at a state")


def warn_if_stiff(model: Model, integrator: str, q0: np.ndarray, fidelity: str, t0: float,
                  t_end: float, steps: int, held: Sequence[str] = ()) -> None:
    """Warn (:class:`StiffnessWarning`) when an explicit integrator of
    :data:`flexdyn.stability.STABILITY_TABLEAUX` took at least :data:`STIFF_MIN_STEPS`
    accepted steps whose mean is above :data:`STIFF_FRACTION` of the stability limit of the
    highest assembled frequency (:func:`stiffness_limit`; one eigenproblem, small beside
    such a run): steps that cannot grow past that limit, whatever the tolerances."""
    if steps < STIFF_MIN_STEPS:
        return
    limit = stiffness_limit(model, integrator, q0, fidelity, held)
    h_mean = (t_end - t0) / steps
    if limit is not None and h_mean >= STIFF_FRACTION * limit[1]:
        warnings.warn(
            f"{integrator} took {steps} steps of {h_mean:.2g} s on average: its steps are "
            f"limited by the stability of {_stiffest_mode(*limit)}, not by "
            f"accuracy.  {_REMEDY}", StiffnessWarning, stacklevel=5)


def diverged(model: Model, integrator: str, q0: np.ndarray, fidelity: str, step: float,
             held: Sequence[str] = ()) -> str:
    """What to add to the message of a failed run of an explicit integrator whose last step
    ``step`` (s) was at or beyond the stability limit of the stiffest mode
    (:func:`stiffness_limit`): the state that failed (a singular inertia, an overflow) is
    then most likely the integrator's divergence, not the model's; else ``""``."""
    limit = stiffness_limit(model, integrator, q0, fidelity, held)
    if limit is None or not step >= limit[1]:
        return ""
    return (f"; {integrator}'s last step, {step:.2g} s, was at or beyond the stability limit "
            f"of {_stiffest_mode(*limit)}, so this failure is most likely the "
            f"explicit integrator diverging.  {_REMEDY}")


def integrate_scipy(ode: Problem, solver_cls: type, options: dict[str, Any], q0: np.ndarray,
                    u0: np.ndarray, t0: float, t1: float, t_eval: np.ndarray | None,
                    max_step: float, progress: bool, watch: Events | None, rtol: float,
                    atol: float, advise: bool) -> SimulationResult:
    """:func:`~flexdyn.simulation.simulate` by the ``OdeSolver`` ``solver_cls`` (with the
    extra ``options``, e.g. a fixed step ``h``; implicit methods get the Jacobian of
    :func:`implicit_jacobian`) from ``(q0, u0)`` at ``t0`` to ``t1``: the samples at ``t_eval`` (or
    every step), the events ``watch``, a progress bar with ``progress``, and with ``advise`` the
    stiffness advice of :func:`warn_if_stiff` after the run (and, whatever ``advise``, that of
    :func:`diverged` in the message of a failure).  A failure of the problem or the
    solver raises :class:`~flexdyn.results.SimulationError` with the samples computed before it
    (``partial``); any other exception, a user's callable's or ``KeyboardInterrupt``, is
    re-raised with them as its attribute ``partial`` (:func:`keep_partial`)."""
    model = ode.model
    nq, nu = model.nq, model.nu
    bar = progress_bar(t0, t1) if progress else None
    t_last = [t0]

    def f(t: float, x: np.ndarray) -> np.ndarray:
        out = ode(t, x)
        if bar is not None and t > t_last[0]:
            bar.update(min(t, t1) - t_last[0])
            t_last[0] = min(t, t1)
        return out

    x0 = np.concatenate([q0, u0, np.zeros(N_EXTRA)])
    clock = Stopwatch()
    samples = Samples(t0, x0, t_eval, watch)
    failure: tuple[float, str, BaseException | None] | None = None
    solver = None

    def result(message: str) -> SimulationResult:
        t_out, y_out = samples.arrays(nq + nu + N_EXTRA)
        return result_of(ode, t_out, y_out, partial=message == "failed",
                         nfev=0 if solver is None else int(solver.nfev),
                         message=message, **clock.stats(),
                         **({} if watch is None else watch.results(model)))

    blas = single_blas_thread()
    try:
        options = dict(options)
        if issubclass(solver_cls, _implicit()):
            options["jac"] = implicit_jacobian(ode)
        solver = solver_cls(f, t0, x0, t1, rtol=rtol, atol=atol, max_step=max_step, **options)
        message = samples.run(solver)
        if solver.status == "failed":
            failure = (float(solver.t), message, None)
    except RhsFailure as exc:
        failure = (exc.t, exc.message, exc.__cause__)
        t_last = samples.pending_before(exc.t)
        if solver is not None and t_last is not None:
            # the failed step may have spanned samples before the failure: integrate afresh
            # from the last accepted step up to them
            try:
                samples.run(solver_cls(f, solver.t, solver.y, t_last, rtol=rtol, atol=atol,
                                       max_step=max_step, **options), watch=False)
            except RhsFailure:
                pass
    except BaseException as exc:  # a user's callable failed, or KeyboardInterrupt
        keep_partial(exc, lambda: result("failed"))
        raise
    finally:
        blas.restore_original_limits()
        if bar is not None:
            bar.close()
    if solver is not None and advise:
        warn_if_stiff(model, ode.settings["integrator"], q0, ode.fidelity, t0, float(solver.t),
                      samples.steps, held=ode.settings["prescribed"])
    if failure is not None:
        t_fail, message, cause = failure
        if solver is not None:
            step = max(getattr(solver, "h_abs", 0.0), getattr(solver, "h_fixed", 0.0),
                       solver.step_size or 0.0)  # the step tried, or the fixed step
            message += diverged(model, ode.settings["integrator"], q0, ode.fidelity,
                                float(step), held=ode.settings["prescribed"])
        raise SimulationError(f"simulation failed at t = {t_fail:.6g} s: {message}", t_fail,
                              message, partial=result("failed")) from cause
    return result("a terminal event occurred" if samples.stopped
                  else "the integration reached t1")


def keep_partial(exc: BaseException, partial: Callable[[], SimulationResult]) -> None:
    """Attach the samples computed before ``exc`` to it as ``exc.partial`` (the
    :class:`~flexdyn.results.SimulationResult` of ``partial()``; None where they cannot be
    evaluated, e.g. when the callable that raised is needed for every sample's loads), so
    that a run stopped by an exception of a user's callable or by ``KeyboardInterrupt``
    keeps what it computed; :class:`~flexdyn.results.SimulationError` carries its own."""
    if isinstance(exc, SimulationError) or not hasattr(exc, "__dict__"):
        return
    try:
        exc.partial = partial()
    except Exception:  # the loads of the samples fail as the run did: nothing to keep
        exc.partial = None


@functools.cache
def _blas_controller() -> threadpoolctl.ThreadpoolController:
    """The process's threadpoolctl controller (it inspects the loaded libraries once)."""
    return threadpoolctl.ThreadpoolController()


def single_blas_thread() -> Any:
    """Limit the BLAS libraries (OpenBLAS, MKL, …) to one thread until the returned
    limiter's ``restore_original_limits()`` (threadpoolctl).  The integrators' LU
    factorizations and the reference path's products are of 6 × 6 … 100 × 100 matrices,
    which threads only slow down, badly so on a loaded machine (``docs/performance.md``);
    the engine uses no BLAS.  The user's setting is restored when the integration ends."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _implicit() -> tuple[type, ...]:
    """The integrators of :func:`scipy.integrate.solve_ivp` that take a Jacobian
    ``jac(t, x)`` (:mod:`scipy.integrate` imported on first use)."""
    return scipy.integrate.Radau, scipy.integrate.BDF, scipy.integrate.LSODA


def implicit_jacobian(ode: Problem) -> Callable:
    """``jac(t, x)`` (nx × nx) of the augmented state ``x = [q; u; W_τ, W_ext, D]`` for the
    implicit integrators: the rows of ``u̇`` by forward differences of the accelerations
    (:meth:`Problem.accelerations`), every coordinate perturbed at once in one batched call (on
    the engine, one compiled call shared among the cores), the loads of ``ode.loads(t, x)``
    held; the rows of ``q̇ = Γ(q) u``: ``Γ(q)`` for ``u`` (the dependence on ``q`` through the
    quaternions is left out); the rows of the work integrals zero (they do not feed back).
    With prescribed motion the prescribed columns are zero (those entries are imposed).

    The integrators use it only in their Newton iterations, so the approximations cost
    iterations, never accuracy.  It replaces scipy's own finite differences, whose step for a
    column on which ``ẋ`` does not depend (the work integrals, a free joint angle) grows
    tenfold at every Jacobian until it overflows: BDF then failed on the spin-up beam and
    the arm of ``benchmarks/bench_simulate.py``, and Radau would on longer runs."""
    model = ode.model
    nq, nu = model.nq, model.nu
    n = nq + nu
    columns = np.arange(n)

    def jac(t: float, x: np.ndarray) -> np.ndarray:
        s = ode.loads(t, x)
        z = np.concatenate([s.q, s.u])
        h = np.sqrt(np.finfo(float).eps) * np.maximum(np.abs(z), 1.0)
        Z = np.tile(z, (n + 1, 1))
        Z[1 + columns, columns] += h
        tau = s.tau if s.g is None else s.tau + s.g
        udot, _ = ode.accelerations(
            Z[:, :nq], Z[:, nq:], np.tile(tau, (n + 1, 1)), s.f_ext,
            None if s.udot_known is None else np.tile(s.udot_known, (n + 1, 1)))
        J = np.zeros((x.size, x.size))
        J[nq:n, :n] = (udot[1:] - udot[0]).T / h
        J[:nq, nq:n] = model.Gamma(s.q)
        if ode.drive is not None:
            J[:, :n][:, ode.drive.state_mask] = 0.0
        return J

    return jac


class Events:
    """The events of :func:`simulate`: functions ``g(t, q, u)`` watched after every step,
    their zeros located on the step's dense output and recorded."""

    def __init__(self, functions: list, model: Model, t0: float, x0: np.ndarray):
        self.functions = functions
        self.nq, self.nu = model.nq, model.nu
        self.model = model
        self.terminal = [bool(getattr(g, "terminal", False)) for g in functions]
        self.direction = [self.attribute(k, g, "direction", 0.0)
                          for k, g in enumerate(functions)]
        self.values = self.evaluate(t0, x0)
        self.t: list[list[float]] = [[] for _ in functions]
        self.x: list[list[np.ndarray]] = [[] for _ in functions]

    @staticmethod
    def attribute(k: int, g: Callable, name: str, default: float) -> float:
        """The number ``g.<name>`` of event ``k`` (``default`` if absent); ``ValueError``
        naming the event and the attribute for anything but a finite number."""
        value = getattr(g, name, default)
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
            raise ValueError(f"events[{k}].{name} must be a number (> 0: rising zeros only, "
                             f"< 0: falling, 0: both), got {value!r}")
        return float(value)

    @classmethod
    def of(cls, events: Any, model: Model, t0: float, x0: np.ndarray) -> Events | None:
        """The watched events, or None; ``ValueError`` naming ``events`` for anything but
        callables or a function that does not return a finite number at the start."""
        if events is None:
            return None
        functions = [events] if callable(events) else list(events) if isinstance(
            events, (list, tuple)) else None
        if not functions or not all(callable(g) for g in functions):
            raise ValueError("events must be a callable event(t, q, u) -> float or a "
                             f"non-empty sequence of them, got {events!r}")
        return cls(functions, model, t0, x0)

    def evaluate(self, t: float, x: np.ndarray) -> np.ndarray:
        """Every event function at ``(t, x)``."""
        return np.array([self.value(k, t, x) for k in range(len(self.functions))])

    def value(self, k: int, t: float, x: np.ndarray) -> float:
        """Event ``k`` at ``(t, x)`` (quaternions normalised); ``ValueError`` naming it when it
        does not return a finite number."""
        v = self.functions[k](t, normalized(self.model, x[:self.nq]),
                              x[self.nq:self.nq + self.nu])
        try:
            v = float(v)
        except (TypeError, ValueError):
            v = math.nan
        if not math.isfinite(v):
            raise ValueError(f"events[{k}](t, q, u) returned {v!r} at t = {t:.6g}; "
                             "an event function returns a finite number")
        return v

    def after_step(self, solver) -> float | None:
        """Record the zeros in the step just taken; the time of the first terminal one, or
        None."""
        new = self.evaluate(solver.t, solver.y)
        old, self.values = self.values, new
        up = (old < 0) & (new >= 0)
        down = (old > 0) & (new <= 0)
        hits = [k for k, d in enumerate(self.direction)
                if (up[k] and d >= 0) or (down[k] and d <= 0)]
        if not hits:
            return None
        dense = solver.dense_output()
        roots = sorted((self.root(k, dense, solver.t_old, solver.t), k) for k in hits)
        for t_root, k in roots:
            x = dense(t_root)
            self.t[k].append(t_root)
            self.x[k].append(x)
            if self.terminal[k]:
                return t_root
        return None

    def root(self, k: int, dense, t_a: float, t_b: float) -> float:
        """The zero of event ``k`` between ``t_a`` and ``t_b`` on the dense output."""

        def h(t: float) -> float:
            return self.value(k, t, dense(t))

        if h(t_b) == 0.0:
            return float(t_b)
        return float(scipy.optimize.brentq(h, t_a, t_b, xtol=4 * np.finfo(float).eps * max(
            abs(t_a), abs(t_b), 1e-300), rtol=4 * np.finfo(float).eps))

    def results(self, model: Model) -> dict:
        """``t_events``, ``q_events``, ``u_events`` for :class:`SimulationResult`."""
        nq, nu = model.nq, model.nu
        xs = [np.array(x, dtype=float).reshape(-1, nq + nu + N_EXTRA) for x in self.x]
        return {"t_events": [np.array(t, dtype=float) for t in self.t],
                "q_events": [np.array([normalized(model, r) for r in x[:, :nq]]).reshape(-1, nq)
                             for x in xs],
                "u_events": [x[:, nq:nq + nu].copy() for x in xs]}


class Samples:
    """The output samples of an integration: every step (no ``t_eval``) or the ``t_eval``
    times passed so far, from the solver's dense output; ``events`` (or None) watched after
    every step."""

    def __init__(self, t0: float, x0: np.ndarray, t_eval: np.ndarray | None,
                 events: Events | None = None):
        self.t_eval = t_eval
        self.events = events
        self.stopped = False  # by a terminal event
        self.t: list[float] = []
        self.y: list[np.ndarray] = []
        if t_eval is None:
            self.t.append(t0)
            self.y.append(x0)
        self.next = 0  # index of the next t_eval sample
        self.steps = 0  # accepted steps

    def run(self, solver, watch: bool = True) -> str:
        """Step ``solver`` to its end, its failure or a terminal event, recording the samples
        (and, with ``watch``, the events); returns the message of the failed step ("" otherwise)."""
        while solver.status == "running":
            message = solver.step()
            if solver.status == "failed":
                return str(message)
            self.steps += 1
            stop = self.events.after_step(solver) if watch and self.events else None
            self.add(solver, stop)
            if stop is not None:
                self.stopped = True
                return ""
        return ""

    def pending_before(self, t: float) -> float | None:
        """The last ``t_eval`` sample not yet recorded that lies before ``t``, or None."""
        if self.t_eval is None:
            return None
        pending = self.t_eval[self.next:]
        pending = pending[pending < t]
        return float(pending[-1]) if pending.size else None

    def add(self, solver, until: float | None = None) -> None:
        """Record the samples of the step just taken (``solver.t_old`` to ``solver.t``, or
        to ``until`` inside it)."""
        if self.t_eval is None:
            if until is None:
                self.t.append(float(solver.t))
                self.y.append(np.array(solver.y))
            else:
                self.t.append(until)
                self.y.append(solver.dense_output()(until))
            return
        end = np.searchsorted(self.t_eval, solver.t if until is None else until, side="right")
        if end > self.next:
            times = self.t_eval[self.next:end]
            self.t.extend(times.tolist())
            self.y.extend(np.atleast_2d(solver.dense_output()(times).T))
            self.next = int(end)

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(t (nt,), y (nt, n))``."""
        return np.array(self.t, dtype=float), np.array(self.y, dtype=float).reshape(-1, n)


def progress_bar(t0: float, t1: float) -> Any:
    """A progress bar over the simulated time ``t0 … t1`` (s) on standard error: tqdm's
    (the ``plot`` extra) where it is installed, else :class:`TextProgress`."""
    try:
        from tqdm import tqdm
    except ImportError:
        return TextProgress(t1 - t0)
    return tqdm(total=t1 - t0, unit="s", desc="simulate",
                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]")


class TextProgress:
    """The plain-text progress bar of :func:`progress_bar` without tqdm: one line on standard
    error at every tenth of the ``total`` simulated time (s) and at the end, with the wall
    time so far; :meth:`update` and :attr:`n` as tqdm's."""

    def __init__(self, total: float):
        self.total, self.n, self.shown = total, 0.0, 0
        self.start = time.perf_counter()

    def update(self, dt: float) -> None:
        """Advance by ``dt`` simulated seconds."""
        self.n += dt
        tenths = min(10, int(10.0 * self.n / self.total + 1e-9))
        if tenths > self.shown:
            self.shown = tenths
            print(f"simulate: {10 * tenths:3d} % ({self.n:.3g}/{self.total:.3g} s, "
                  f"{time.perf_counter() - self.start:.1f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to release (tqdm's interface)."""
