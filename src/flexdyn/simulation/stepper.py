"""A model as a co-simulation component: :class:`Stepper`, advanced by macro steps with its
inputs held (the shape of an FMI co-simulation slave, :mod:`flexdyn.fmu`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..chain import Model, state_layout
from ..dynamics import (
    BACKENDS,
    FORWARD_METHODS,
    check_external_forces,
    nodal_loads_at,
)
from ..engine import galpha
from ..outputs import Outputs
from ..results import SimulationError
from ..terms import DEFAULT_FIDELITY, check_fidelity
from .compiled import LOOP_FAILURES, CompiledLoop, compiled_forces
from .options import RK4, SCIPY_METHODS, CompiledIntegrator, GaussLegendre, RadauIIA, ScipyIVP
from .problem import (
    CLOSURE_RATE,
    N_EXTRA,
    PrescribedMotion,
    Problem,
    RhsFailure,
    check_choice,
    checked_closure_rate,
    nodal_forcing,
    normalized,
    vector,
)

__all__ = ["STEPPER_INTEGRATORS", "Stepper"]

#: the integrators of :class:`Stepper` by name: the compiled collocation methods are
#: one-step methods, so restarting them every macro step (the inputs change there) costs no
#: accuracy, unlike generalized-α's auxiliary acceleration
STEPPER_INTEGRATORS = (RK4.name, GaussLegendre.name, RadauIIA.name, *SCIPY_METHODS)


class Stepper:
    """A model as a co-simulation component: a state advanced by macro steps ``dt`` with
    its inputs held over each step (zero-order hold), and named outputs — the shape of an FMI
    co-simulation slave (:mod:`flexdyn.fmu`).

    Each :meth:`step` integrates the equations of :func:`~flexdyn.simulate` (the same
    augmented state with the work integrals of the energy balance, the same prescribed
    motion) from ``t`` to ``t + dt``: with ``integrator="rk4"`` in ``substeps`` classical
    Runge–Kutta steps (:class:`flexdyn.integrators.ClassicalRungeKutta`, the solver
    ``simulate(..., integrator=flexdyn.RK4(h=dt / substeps))`` runs, so both give the same
    states to round-off for the same inputs), with
    the compiled ``"gauss-legendre"`` in ``substeps`` fixed steps (fourth order and A-stable:
    for stiff models, at any macro step; models whose coordinates are their own rates or
    quaternions, without prescribed motion, with their loop closures, as in
    :func:`~flexdyn.simulate`; its Newton iteration stops at
    ``newton_tol`` = 1e-6 relative to the accelerations), with the compiled ``"radau-iia"``
    (the same models; L-stable, adaptive steps at ``rtol``, ``atol`` restarted every macro
    step), or with an adaptive :func:`scipy.integrate.solve_ivp` method restarted every
    macro step.

    Parameters
    ----------
    model : Model;  dt : macro step (s, > 0).
    integrator : ``"rk4"`` (default), ``"gauss-legendre"``, ``"radau-iia"`` or a
        :func:`scipy.integrate.solve_ivp` method name.
    substeps : fixed steps per macro step (``"rk4"`` and ``"gauss-legendre"``).
    q0, u0, t0 : the initial state (default: neutral, at rest, 0 s).
    fidelity, method, backend, prescribed, closure_rate : as for :func:`simulate`.
    rtol, atol : tolerances of an adaptive integrator.
    outputs : output names (:class:`flexdyn.outputs.Outputs`): joint coordinates and speeds,
        body positions and rotations, node positions and deflections.

    Inputs (attributes, held until changed): ``tau`` (nu,) generalized forces in the layout
    of ``u`` (:attr:`input_names` ``"tau.<speed name>"``, settable one by one with
    :meth:`set_input`), ``f_ext`` (n_bodies, 6) or None body-frame wrenches, ``f_nodes``
    ``{(body, node): wrench (6,)}`` or None node wrenches (node frames).
    """

    def __init__(self, model: Model, dt: float, *, integrator: str = "rk4", substeps: int = 1,
                 q0: Any = None, u0: Any = None, t0: float = 0.0,
                 fidelity: str = DEFAULT_FIDELITY, method: str = "articulated",
                 backend: str = "engine", prescribed: Mapping[str, Callable] | None = None,
                 closure_rate: float = CLOSURE_RATE, rtol: float = 1e-8, atol: float = 1e-10,
                 outputs: Sequence[str] = ()):
        check_fidelity(fidelity)
        check_choice(method, tuple(FORWARD_METHODS), "method")
        check_choice(backend, BACKENDS, "backend")
        check_choice(integrator, STEPPER_INTEGRATORS, "integrator")
        if not (isinstance(dt, (int, float, np.floating)) and not isinstance(dt, bool)
                and dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive finite number (s), got {dt!r}")
        if not (isinstance(substeps, (int, np.integer)) and substeps >= 1):
            raise ValueError(f"substeps must be a positive integer, got {substeps!r}")
        self.model, self.dt, self.fidelity = model, float(dt), fidelity
        self.t = float(t0)
        h = self.dt / substeps
        options = (RK4(h=h) if integrator == RK4.name else
                   GaussLegendre(h=h) if integrator == GaussLegendre.name else
                   RadauIIA(rtol=rtol, atol=atol) if integrator == RadauIIA.name else
                   ScipyIVP(integrator, rtol=rtol, atol=atol))
        self._tolerances = {"rtol": rtol, "atol": atol}
        self._compiled: dict[str, Any] | None = None
        if isinstance(options, CompiledIntegrator):
            refused = [what for what, value in (
                ("prescribed motion", prescribed),
                ("backend='reference'", backend != "engine")) if value]
            if refused:
                raise ValueError(f"integrator={integrator!r} in a Stepper: not supported with "
                                 f"{', '.join(refused)}")
            options.check_model(model)
            self._compiled = options.loop_options()
        else:
            self._solver, self._options = options.solver()
            if not isinstance(options, RK4):
                self._options = dict(self._tolerances)
        self._ode_args = (model, fidelity, method, backend)
        self._rate = checked_closure_rate(closure_rate)
        self._drive = None if prescribed is None else PrescribedMotion(model, prescribed)
        self._odes: dict[tuple[bool, bool], Problem] = {}
        self._tau = np.zeros(model.nu)
        self._f_ext: np.ndarray | None = None
        self._f_nodes: dict | None = None
        self._outputs = Outputs(model, outputs, fidelity)
        self.output_names: list[str] = self._outputs.names
        self.input_names = [f"tau.{e.name}" for e in state_layout(model)["u"]]
        self._x = np.zeros(model.nq + model.nu + N_EXTRA)
        self.set_state(model.neutral_configuration() if q0 is None else q0,
                       np.zeros(model.nu) if u0 is None else u0)

    # -- inputs ----------------------------------------------------------------------------
    @property
    def tau(self) -> np.ndarray:
        """Generalized forces (nu,), held over the steps (a copy)."""
        return self._tau.copy()

    @tau.setter
    def tau(self, value: Any) -> None:
        self._tau = vector(value, self.model.nu, "tau")

    def set_input(self, name: str, value: float) -> None:
        """Set one entry of ``tau`` by its name in :attr:`input_names`."""
        if name not in self.input_names:
            raise ValueError(f"unknown input {name!r}; inputs are {self.input_names}")
        if not math.isfinite(value):
            raise ValueError(f"input {name!r} must be finite, got {value!r}")
        self._tau[self.input_names.index(name)] = float(value)

    @property
    def f_ext(self) -> np.ndarray | None:
        """Wrenches (n_bodies, 6) at the body frames, body coordinates, or None."""
        return None if self._f_ext is None else self._f_ext.copy()

    @f_ext.setter
    def f_ext(self, value: Any) -> None:
        f = check_external_forces(self.model, value)
        self._f_ext = None if f is None else np.array(f, dtype=float)

    @property
    def f_nodes(self) -> dict | None:
        """Node wrenches ``{(body, node): wrench (6,)}`` (node frames), or None."""
        return None if self._f_nodes is None else dict(self._f_nodes)

    @f_nodes.setter
    def f_nodes(self, value: Mapping | None) -> None:
        if value is not None:
            nodal_forcing(value)  # the form
            nodal_loads_at(self.model, self.q, value, self.fidelity)  # the keys and wrenches
            value = dict(value)
        self._f_nodes = value

    # -- state -----------------------------------------------------------------------------
    def set_state(self, q: Any, u: Any, t: float | None = None) -> None:
        """Replace the state (validated; quaternions normalised) and, if given, the time;
        the work integrals restart from zero."""
        q, u = self.model.check_state(q, u)
        q, u = np.asarray(q, dtype=float), np.asarray(u, dtype=float)
        self._x = np.concatenate([normalized(self.model, q), u, np.zeros(N_EXTRA)])
        if t is not None:
            self.t = float(t)

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        nq, nu = self.model.nq, self.model.nu
        q, u = self._x[:nq].copy(), self._x[nq:nq + nu].copy()
        if self._drive is not None:
            q, u, _ = self._drive.impose(self.t, q, u)
        return normalized(self.model, q), u

    @property
    def q(self) -> np.ndarray:
        """Coordinates (nq,) at :attr:`t` (prescribed entries imposed)."""
        return self._state()[0]

    @property
    def u(self) -> np.ndarray:
        """Speeds (nu,) at :attr:`t` (prescribed entries imposed)."""
        return self._state()[1]

    @property
    def work(self) -> dict[str, float]:
        """Work integrals since the start or the last :meth:`set_state` (J): of ``tau``
        (``"tau"``), of the external and node wrenches (``"external"``), dissipated by modal
        damping (``"damping"``)."""
        W_tau, W_ext, D = self._x[-N_EXTRA:]
        return {"tau": float(W_tau), "external": float(W_ext), "damping": float(D)}

    def outputs(self) -> np.ndarray:
        """The outputs (:attr:`output_names`) at the current state."""
        return self._outputs(*self._state())

    # -- stepping ----------------------------------------------------------------------------
    def _ode(self) -> Problem:
        key = (self._f_ext is not None, self._f_nodes is not None)
        if key not in self._odes:
            self._odes[key] = Problem(
                *self._ode_args, lambda t, q, u: self._tau,
                (lambda t, q, u: self._f_ext) if key[0] else None,
                (lambda t, q, u: self._f_nodes) if key[1] else None, self._drive, self._rate)
        return self._odes[key]

    def step(self, n: int = 1) -> None:
        """Advance ``n`` (a positive integer) macro steps ``dt``.  :class:`SimulationError`
        if the dynamics fail (the state stays at the start of the failed macro step);
        ``ValueError`` for any other ``n`` (``step(0.5)`` would do nothing, ``step(2.9)`` two
        steps) and when ``t + dt`` rounds to ``t`` (the time would no longer advance)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer (macro steps), got {n!r}; "
                             "advance(duration) takes a time")
        for _ in range(int(n)):
            self._advance(self.t + self.dt)

    def advance(self, duration: float) -> None:
        """Advance by ``duration`` (s, > 0) with the inputs held: RK4 in
        ``ceil(duration / h)`` equal steps of at most ``h = dt / substeps`` (ending exactly
        on ``t + duration``), or the adaptive integrator over the interval — what a
        co-simulation master's communication step needs when it is not a multiple of
        ``dt``."""
        if not (isinstance(duration, (int, float, np.floating)) and duration > 0
                and math.isfinite(duration)):
            raise ValueError(f"duration must be a positive finite number (s), got {duration!r}")
        self._advance(self.t + float(duration))

    def _advance(self, t1: float) -> None:
        if not t1 > self.t:
            raise ValueError(f"t = {self.t!r} s: a step of {t1 - self.t!r} s does not advance "
                             "the time in double precision (start at a smaller t0)")
        if self._compiled is not None:
            self._advance_compiled(t1)
            return
        try:
            solver = self._solver(self._ode(), self.t, self._x, t1, **self._options)
            while solver.status == "running":
                message = solver.step()
                if solver.status == "failed":
                    raise RhsFailure(float(solver.t), str(message))
        except RhsFailure as exc:
            raise SimulationError(f"step from t = {self.t:.6g} s failed at t = {exc.t:.6g} s: "
                                  f"{exc.message}", exc.t, exc.message) from exc.__cause__
        self._x, self.t = np.array(solver.y), t1

    def _advance_compiled(self, t1: float) -> None:
        """:meth:`_advance` by the compiled loop, started afresh at the current state and
        inputs (the accelerations from the compiled state derivative) and run to ``t1`` in
        ``ceil((t1 − t)/h)`` equal steps (Radau IIA: adaptive ones); the work integrals go
        on.  Node wrenches, which act in the moving node frames, are evaluated at each step's
        stage states (``CompiledLoop.feedback_try``)."""
        model, nq, nu = self.model, self.model.nq, self.model.nu
        q0, u0 = self._x[:nq], self._x[nq:nq + nu]
        ode = self._ode()
        forces = compiled_forces(ode)
        nodal = self._f_nodes is not None
        out_t, out_x, times = np.empty(1), np.empty((1, nq + nu + N_EXTRA)), np.array([t1])
        try:
            loads = forces(self.t, normalized(model, q0), u0)
            loop = CompiledLoop(model, self.fidelity, q0, u0, self.t, t1, *loads,
                                **self._compiled, **self._tolerances, max_step=math.inf,
                                record_steps=False, closure_rate=self._rate,
                                xdot0=ode(self.t, self._x) if nodal else None)
            loop.ctl[galpha.MAX_TRIES] = 0 if nodal else -1  # with node wrenches: a predictor
            status = loop.run(times, *loop.held(*loads), out_t, out_x)
            loop.ctl[galpha.MAX_TRIES] = 1
            while nodal and status == galpha.PAUSED:
                status = loop.feedback_try(forces, times, out_t, out_x)
        except RhsFailure as exc:
            raise SimulationError(f"step from t = {self.t:.6g} s failed at t = {exc.t:.6g} s: "
                                  f"{exc.message}", exc.t, exc.message) from exc.__cause__
        if status != galpha.FINISHED:
            t = float(loop.s[galpha.T])
            raise SimulationError(f"step from t = {self.t:.6g} s failed at t = {t:.6g} s: "
                                  f"{LOOP_FAILURES[status]}", t, LOOP_FAILURES[status])
        self._x = np.concatenate([loop.q, loop.y[1], self._x[nq + nu:]
                                  + loop.s[galpha.W_TAU:galpha.W_TAU + N_EXTRA]])
        self.t = t1
