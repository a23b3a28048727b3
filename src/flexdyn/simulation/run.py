"""The front door of the simulations: :func:`simulate` checks its arguments, sets up the
:class:`~flexdyn.simulation.problem.Problem` and hands it to the integrator's option object
(:mod:`flexdyn.simulation.options`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..chain import Model
from ..dynamics import BACKENDS, FORWARD_METHODS
from ..results import SimulationError, SimulationResult
from ..terms import DEFAULT_FIDELITY, check_fidelity
from .loop import Events
from .options import AUTO, Auto, Integrator, Span, integrator_options
from .problem import (
    CLOSURE_RATE,
    PrescribedMotion,
    Problem,
    RhsFailure,
    check_choice,
    check_closures,
    checked_closure_rate,
    forcing,
    load_kind,
    nodal_forcing,
    normalized,
    vector,
)

__all__ = ["DEFAULT_SPAN", "simulate"]

#: the span :func:`simulate` integrates when it is given none (s)
DEFAULT_SPAN = (0.0, 1.0)


def simulate(
    model: Model,
    q0: np.ndarray | None = None,
    u0: np.ndarray | None = None,
    t_span: tuple[float, float] | None = None,
    *,
    tau: Any = None,
    fidelity: str = DEFAULT_FIDELITY,
    method: str = "articulated",
    rtol: float | None = None,
    atol: float | None = None,
    t_eval: np.ndarray | None = None,
    integrator: str | type | Integrator | Auto = AUTO,
    max_step: float = math.inf,
    progress: bool = False,
    f_ext: Any = None,
    backend: str = "engine",
    events: Any = None,
    prescribed: Mapping[str, Callable] | None = None,
    f_nodes: Any = None,
    h: float | None = None,
    rho_inf: float | None = None,
    newton_tol: float | None = None,
    error_norm: str | None = None,
    closure_rate: float = CLOSURE_RATE,
) -> SimulationResult:
    """Integrate the equations of motion of ``model`` from ``(q0, u0)`` over ``t_span``.

    Parameters
    ----------
    model : Model
    q0 : (nq,) initial coordinates; default ``model.neutral_configuration()``.  Quaternions
        are normalised.
    u0 : (nu,) initial speeds; default zero.
    t_span : ``(t0, t1)`` with ``t1 > t0`` (s); without it ``(0, 1)``, with a warning
        that says so.
    tau : generalized forces in the layout of ``u``: None (zero), a constant array (nu,),
        a callable ``tau(t, q, u) -> (nu,)`` or a function of time alone,
        :func:`flexdyn.of_time` ``(f)`` with ``f(t) -> (nu,)`` (joint torques/forces; modal
        slots are external modal forces, usually 0).
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    method : ``"articulated"``, ``"articulated-split"`` or ``"composite"`` forward dynamics.
    t_eval : times at which to store the solution (sorted, inside ``t_span``); default: the
        solver's steps.
    integrator : an option object of :mod:`flexdyn.simulation.options` or its name in
        :data:`~flexdyn.simulation.options.INTEGRATORS`: :class:`~flexdyn.Auto` (``"auto"``,
        the default: :func:`~flexdyn.simulation.options.auto_integrator` chooses
        ``RadauIIA(error_norm="displacement")`` where it integrates exactly the problem
        given — a model with elastic coordinates whose coordinates are their own rates or a
        quaternion joint's, the engine backend,
        ``method="articulated"``, and loop closures only with a fidelity
        whose closures run on the engine — and
        ``ScipyIVP("DOP853")`` otherwise; the result's
        ``settings["integrator"]`` names the choice), :class:`~flexdyn.RadauIIA`
        (``"radau-iia"``), :class:`~flexdyn.GaussLegendre` (``"gauss-legendre"``, fixed
        steps), :class:`~flexdyn.GeneralizedAlpha` (``"generalized-alpha"``) — the compiled
        integrators, for models whose coordinates are their own rates (``q̇ = u``: every
        joint's :attr:`~flexdyn.joints.Joint.rates`) or quaternions (``spherical``, ``free``:
        local coordinates, :mod:`flexdyn.engine.galpha`); others raise ``ValueError`` —
        :class:`~flexdyn.RK4` (``"rk4"``, fixed steps: the integrator of
        :class:`flexdyn.Stepper`), :class:`~flexdyn.ScipyIVP` (a
        :func:`scipy.integrate.solve_ivp` method by name, ``"DOP853"``, ``"Radau"``, …, or
        an ``OdeSolver`` subclass).  Each object holds its options (tolerances, steps).
    f_ext : None, an array (n_bodies, 6), a callable ``f_ext(t, q, u)`` or a function of time
        (:func:`flexdyn.of_time`) — external wrenches ``[N m; N]`` at the body frame
        origins, in body coordinates.
    backend : ``"engine"`` (default: each right-hand side, energy-balance integrands
        included, is one compiled call for the methods of
        :data:`flexdyn.engine.DERIVATIVE_METHODS`) or ``"reference"`` (numpy).
    events : None, a callable ``event(t, q, u) -> float`` or a sequence of them, with the
        attributes of :func:`scipy.integrate.solve_ivp`'s events: ``terminal`` (default
        False: record only; True: stop the integration there) and ``direction`` (> 0: only
        zeros where the function increases, < 0: decreases, 0 or absent: both).  A zero is
        located on the integrator's dense output to round-off (Brent's method) and recorded
        in ``SimulationResult.t_events``, ``q_events``, ``u_events``; a terminal one ends
        the samples there (the last sample is the event, or the last ``t_eval`` time
        before it).
    prescribed : None or a mapping ``{body name: f}`` whose ``f(t)`` returns ``(q_j, u_j,
        u̇_j)`` of that body's joint, shapes (nq_j,), (nu_j,), (nu_j,) (floats allowed for
        1-dof joints): the joint follows this motion, everything else (the modes, the other
        joints) responds by :func:`flexdyn.hybrid_dynamics`.  The prescribed entries of
        ``q0``/``u0`` are taken from ``f(t0)`` (and of ``q``, ``u`` at every sample from
        ``f(t)``); ``q_j`` and ``u_j`` should be consistent (``q̇_j = Γ_j(q_j) u_j``) and
        ``u̇_j`` their derivative.  The prescribed entries of ``tau`` are ignored; the
        result's ``tau`` holds there the joint loads that realise the motion, and the energy
        balance includes their work (in ``work``).
    f_nodes : None, a mapping ``{(body, node): wrench (6,)}`` or a callable
        ``f_nodes(t, q, u)`` returning one — wrenches ``[N m; N]`` at nodes of flexible
        bodies, in the node's frame (see :func:`flexdyn.dynamics.nodal_loads`); their work
        is included in ``external_work``.
    rtol, atol, h, rho_inf, newton_tol, error_norm : deprecated: the options of the
        integrator, given to its option object (``integrator=flexdyn.RadauIIA(rtol=1e-8)``;
        ``flexdyn.Auto(rtol=…)`` for the default); still taken here with a
        ``DeprecationWarning`` naming the object to pass.
    closure_rate : for a model with loop closures, Baumgarte's rate ``ω`` (1/s, ≥ 0; 0: no
        stabilization) with which a drift of the closures decays (module notes).  The
        initial state must satisfy the closures to ``CLOSURE_TOL`` (else ``ValueError``
        naming each violated closure and by how much; :func:`flexdyn.assemble`), after the
        prescribed entries are imposed.  With ``prescribed`` the closed chain's hybrid
        dynamics (:func:`flexdyn.dynamics.closed_hybrid`); closed chains are not supported
        with ``"generalized-alpha"``.

    Returns
    -------
    SimulationResult
        For a closed chain also ``constraint_forces`` (nt, n_c) and ``closure_drift``
        (nt, n_c), the residuals ``g`` at the samples.

    Raises
    ------
    ValueError
        For arguments of the wrong shape or value (the message names the argument), including
        a ``tau``/``f_ext`` callable that returns the wrong shape.
    SimulationError
        If the solver fails or the state or forces become non-finite; ``.t`` is the time of
        the failure, ``.solver_message`` the solver's message and ``.partial`` the
        :class:`SimulationResult` of the samples computed before it.
    Exception
        Another exception raised during the run, by a callable of the user's (``tau``,
        ``f_ext``, an event function) or ``KeyboardInterrupt``, propagates with the
        :class:`SimulationResult` of the samples computed before it as its attribute
        ``partial`` (None where they cannot be evaluated).
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a flexdyn Model, got {type(model).__name__}")
    check_fidelity(fidelity)
    check_choice(method, tuple(FORWARD_METHODS), "method")
    check_choice(backend, BACKENDS, "backend")
    nq, nu = model.nq, model.nu
    if (isinstance(q0, tuple) and len(q0) == 2 and nq != 2
            and all(isinstance(v, (int, float)) for v in q0)):
        raise ValueError(f"q0 = {q0!r} has 2 entries, the model {nq}: did you mean "
                         f"t_span={q0!r}? (simulate(model, q0, u0, t_span) — or pass it by "
                         "keyword)")
    q0 = model.neutral_configuration() if q0 is None else vector(q0, nq, "q0")
    for i, j in enumerate(model.joints):
        if j.quaternion:
            s = int(model.q_start[i])
            if np.linalg.norm(q0[s:s + 4]) < 1e-12:
                raise ValueError(f"q0: the quaternion of body {model.names[i]!r} is zero")
    q0 = normalized(model, q0)
    u0 = np.zeros(nu) if u0 is None else vector(u0, nu, "u0")
    if t_span is None:
        warnings.warn(f"simulate: no t_span given; integrating t_span={DEFAULT_SPAN} s",
                      UserWarning, stacklevel=2)
        t_span = DEFAULT_SPAN
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair (t0, t1), got {t_span!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise ValueError(f"t_span must be finite with t1 > t0, got {t_span!r}")
    options = integrator_options(integrator, rtol=rtol, atol=atol, h=h, rho_inf=rho_inf,
                                 newton_tol=newton_tol, error_norm=error_norm)
    if isinstance(options, Auto):
        options = options.choose(model, backend=backend, method=method, f_nodes=f_nodes,
                                 fidelity=fidelity)
    if not (isinstance(max_step, (int, float, np.floating)) and not isinstance(max_step, bool)
            and max_step > 0):
        raise ValueError(f"max_step must be a positive number (s), got {max_step!r}")
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float)
        if t_eval.ndim != 1 or t_eval.size == 0 or not np.all(np.isfinite(t_eval)):
            raise ValueError("t_eval must be a non-empty 1-D array of finite times")
        if np.any(np.diff(t_eval) <= 0):
            raise ValueError("t_eval must be strictly increasing")
        if t_eval[0] < t0 or t_eval[-1] > t1:
            raise ValueError(f"t_eval must lie within t_span = ({t0}, {t1})")
    rate = checked_closure_rate(closure_rate)
    options.check(model, backend=backend, prescribed=prescribed, f_nodes=f_nodes,
                  fidelity=fidelity)
    drive = None if prescribed is None else PrescribedMotion(model, prescribed)
    if drive is not None:
        q0, u0, _ = drive.impose(t0, q0, u0, at_start=True)
        q0 = normalized(model, q0)
    if model.constraints:
        check_closures(model, q0, u0, fidelity)
    ode = Problem(model, fidelity, method, backend, forcing(tau, (nu,), "tau"),
                  forcing(f_ext, (model.n_bodies, 6), "f_ext"), nodal_forcing(f_nodes), drive,
                  rate)
    ode.settings = {
        "t_span": [t0, t1], **options.settings(),
        "max_step": None if math.isinf(max_step) else max_step, "method": method,
        "fidelity": fidelity, "backend": backend,
        "closure_rate": rate, "prescribed": sorted(prescribed) if prescribed else [],
        "tau": load_kind(tau), "f_ext": load_kind(f_ext)}
    watch = Events.of(events, model, t0, np.concatenate([q0, u0]))
    try:  # validate the callables' shapes before integrating
        ode.loads(t0, np.concatenate([q0, u0]))
    except RhsFailure as exc:
        raise SimulationError(f"simulation failed at t = {t0:.6g} s: {exc.message}",
                              t0, exc.message) from None
    return options.integrate(ode, Span(q0, u0, t0, t1, t_eval, max_step, progress, watch, tau,
                                       f_ext))
