"""The compiled integrators of :func:`~flexdyn.simulation.simulate` and
:class:`~flexdyn.simulation.Stepper`: generalized-α, Gauss–Legendre and Radau IIA, whose time
loop is the compiled entry :func:`flexdyn.engine.galpha.generalized_alpha`, driven from here
(forces evaluated in Python between tries, samples, events, failures)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..chain import Model
from ..dynamics import cached_engine, constraint_forces, nodal_loads_at
from ..engine import galpha, kernels
from ..results import SimulationError, SimulationResult
from ..spatial import quat_multiply, quat_to_rot
from .loop import Events, Samples, Stopwatch, keep_partial, progress_bar, result_of
from .problem import (
    CLOSURE_RATE,
    N_EXTRA,
    PrescribedMotion,
    Problem,
    RhsFailure,
    compiled_derivative,
    failing,
    load_kind,
)

__all__ = ["LOOP_FAILURES", "CompiledLoop", "compiled_forces", "engine_coordinates",
           "integrate_compiled", "integrator_coordinates", "local_entries"]

#: the most Newton iterations of one try of the generalized-α step
_MAX_NEWTON = 8
#: samples per output buffer when every step is recorded (adaptive steps, no ``t_eval``)
_CHUNK = 4096
#: step tries per compiled call while a progress bar is shown
_TRIES_PER_UPDATE = 256
#: the most tries of one step with forces that depend on the state before the step is cut
#: (:meth:`CompiledLoop.feedback_try`)
_MAX_FEEDBACK = 4
#: the change of a step, in units of its tolerance, that the forces of its own stage states
#: may still make when the step is accepted (:meth:`CompiledLoop.force_error`)
_FEEDBACK_TOL = 0.1


@functools.cache
def _stage_weights(nodes: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(W_q, W_u)`` (k × 3 each) of :meth:`CompiledLoop.stage_states` at the stage times
    ``nodes`` (fractions of the step): ``∫₀ᶜ (c − θ) B(θ) dθ`` and ``∫₀ᶜ B(θ) dθ`` with
    ``B(θ) = [1, θ − 1, ½ (θ − 1)²]``, by the three-point Gauss rule (exact for these
    quadratics times a linear factor)."""
    x, w = np.polynomial.legendre.leggauss(3)
    wq, wu = np.empty((len(nodes), 3)), np.empty((len(nodes), 3))
    for i, c in enumerate(nodes):
        theta, weight = 0.5 * c * (x + 1.0), 0.5 * c * w
        B = np.stack([np.ones(3), theta - 1.0, 0.5 * (theta - 1.0) ** 2], axis=1)
        wq[i], wu[i] = (weight * (c - theta)) @ B, weight @ B
    return wq, wu


def local_entries(model: Model) -> np.ndarray:
    """The entries of ``u`` (nu,) whose integrator coordinates are local, bool: the rotation
    (and, for a free joint, the displacement) of each quaternion joint
    (:mod:`flexdyn.engine.galpha`)."""
    mask = np.zeros(model.nu, dtype=bool)
    for i, joint in enumerate(model.joints):
        if joint.quaternion:
            mask[model.u_start[i]:model.u_start[i] + joint.nu] = True
    return mask


def integrator_coordinates(model: Model, q: np.ndarray) -> np.ndarray:
    """The compiled integrators' coordinates (nu,) of the engine's ``q`` (nq,) taken as the
    reference: ``q`` itself where it is its own rate, zero at the local entries."""
    x = np.zeros(model.nu)
    for i, joint in enumerate(model.joints):
        qs, us, m = int(model.q_start[i]), int(model.u_start[i]), int(model.n_modes[i])
        if not joint.quaternion:
            x[us:us + joint.nu] = q[qs:qs + joint.nq]
        x[us + joint.nu:us + joint.nu + m] = q[qs + joint.nq:qs + joint.nq + m]
    return x


def engine_coordinates(model: Model, qg: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The engine's ``q`` (nq,) of the integrators' coordinates ``x`` (nu,) about the
    reference ``qg`` (nq,): ``Q_g ⊗ exp(ψ)`` and ``p_g + R(Q_g) ρ`` for a quaternion joint
    (``flexdyn.engine.galpha._engine_q``), ``x`` elsewhere."""
    q = np.array(qg, dtype=float)
    for i, joint in enumerate(model.joints):
        qs, us, m = int(model.q_start[i]), int(model.u_start[i]), int(model.n_modes[i])
        if joint.quaternion:
            psi = x[us:us + 3]
            angle = float(np.linalg.norm(psi))
            scale = 0.5 if angle == 0.0 else math.sin(0.5 * angle) / angle
            Q = quat_multiply(qg[qs:qs + 4], np.concatenate([[math.cos(0.5 * angle)],
                                                             scale * psi]))
            q[qs:qs + 4] = Q / np.linalg.norm(Q)
            if joint.nq == 7:
                q[qs + 4:qs + 7] = (qg[qs + 4:qs + 7]
                                    + quat_to_rot(qg[qs:qs + 4]) @ x[us + 3:us + 6])
        else:
            q[qs:qs + joint.nq] = x[us:us + joint.nu]
        q[qs + joint.nq:qs + joint.nq + m] = x[us + joint.nu:us + joint.nu + m]
    return q


def _applied(tau: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The generalized force that acts: ``tau`` plus the nodal loads' modal forces ``g``
    (same shape, or empty: none)."""
    return tau if g.size == 0 else tau + g


def _newton_tol(scheme: int, rtol: float, newton_tol: float | None) -> float:
    """The ``newton_tol`` of a compiled scheme: the one given, else 1e-6 (of the
    accelerations); for Radau IIA, whose iteration stops on the stage states scaled by
    ``atol + rtol |x|``, RADAU5's ``min(0.03, √rtol)`` by default (Hairer & Wanner,
    Sec IV.8), and never below ``10 ε/rtol``, where round-off would stall it."""
    if scheme == galpha.RADAU_IIA:
        return max(10.0 * np.finfo(float).eps / rtol,
                   min(0.03, math.sqrt(rtol)) if newton_tol is None else newton_tol)
    return 1e-6 if newton_tol is None else newton_tol


#: what a failure status of the compiled integrators means
LOOP_FAILURES = {
    galpha.NEWTON_FAILED: f"the Newton iteration did not converge in {_MAX_NEWTON} iterations "
                          "(a smaller h; generalized-alpha and radau-iia also take adaptive "
                          "steps: h=None)",
    galpha.STEP_TOO_SMALL: "the step size fell below the resolution of t",
    galpha.SINGULAR: "the iteration matrix (M + γ' C + β' K, or a collocation scheme's) is "
                     "singular (a degree of freedom without inertia?)",
    kernels.INVALID: "the state became non-finite (a smaller h; generalized-alpha and "
                     "radau-iia also take adaptive steps: h=None)"}


class CompiledLoop:
    """The arrays that carry a compiled integrator
    (:func:`flexdyn.engine.galpha.generalized_alpha`) from call to call, set up at ``(q0, u0)``
    at ``t0`` for a run to ``t1`` with the forces ``tau`` (nu,), ``f_ext`` (n_bodies, 6) and
    ``g_n`` (nu,; empty: none), the nodal loads' modal generalized forces, at ``t0`` (the
    initial acceleration and energy-balance integrands come from the compiled state
    derivative; ``RhsFailure`` if it fails): ``c``, ``ctl``, ``s``, ``y`` (rows ``q, q̇, a, q̈,
    0``; ``a`` and the last row are ``q⃛`` and ``q⁗`` for the collocation schemes; ``q`` the
    integrator's coordinates, local at the quaternion joints), ``qg`` (their reference;
    :attr:`q`: the engine's coordinates of the state), ``Mk``, ``Bk``,
    ``S``, ``Jc``, ``piv``, ``pred`` and ``cnt`` in the layouts of :mod:`flexdyn.engine.galpha`
    (``iteration_matrix``: ``"modal"``, or ``"exact"`` with the blocks ``Bk`` it keeps).
    ``h`` None: adaptive steps; else ``ceil((t1 − t0)/h)`` equal steps.  ``linearize``:
    ``tau`` is a state feedback whose Jacobians the Newton iteration takes
    (:meth:`feedback_try`).  ``drive``: prescribed motion, whose accelerations the loop takes
    at the force times (:meth:`next_forces`).  ``xdot0``: the state derivative at the start
    with its work integrands (``Problem.__call__``), given where the compiled state derivative
    of ``tau`` and ``f_ext`` is not it: with prescribed motion (hybrid dynamics) and with
    nodal loads (``g_n`` applied, its power external work)."""

    def __init__(self, model: Model, fidelity: str, q0: np.ndarray, u0: np.ndarray, t0: float,
                 t1: float, tau: np.ndarray, f_ext: np.ndarray, g_n: np.ndarray, *,
                 scheme: int,
                 h: float | None, rho_inf: float, newton_tol: float | None,
                 error_norm: int, rtol: float, atol: float, max_step: float,
                 record_steps: bool, iteration_matrix: str = "modal",
                 linearize: bool = False,
                 drive: PrescribedMotion | None = None, xdot0: np.ndarray | None = None,
                 closure_rate: float = CLOSURE_RATE):
        g, nq, nu = galpha, model.nq, model.nu
        self.model = model
        #: the entries of ``u`` whose integrator coordinates are local (quaternion joints)
        self.local = local_entries(model)
        self.engine = cached_engine(model, fidelity)
        #: the compiled state derivative ``(t, x, tau, f_ext) -> ẋ`` (with the work integrands)
        self.derivative = compiled_derivative(model, fidelity, "articulated", "engine",
                                              N_EXTRA, closure_rate)
        if xdot0 is None:
            xdot0 = failing(self.derivative, t0, np.concatenate([q0, u0]), tau, f_ext)
        self.qg = np.array(q0, dtype=float)
        self.y = np.zeros((5, nu))
        self.y[0], self.y[1] = integrator_coordinates(model, q0), u0
        self.y[3] = xdot0[nq:nq + nu]
        # generalized-α's auxiliary acceleration, or the collocation schemes' rate of q̈
        # (and in row 4 its second derivative, 0 at the start)
        self.y[2] = self.y[3] if scheme == g.GENERALIZED_ALPHA else 0.0
        self.c = c = np.zeros(g.N_PARAMS)
        c[[g.ALPHA_M, g.ALPHA_F, g.BETA, g.GAMMA]] = g.coefficients(rho_inf)
        c[g.ERROR_CONSTANT] = g.error_constant(rho_inf)
        c[g.RTOL], c[g.ATOL] = rtol, atol
        c[g.NEWTON_TOL] = _newton_tol(scheme, rtol, newton_tol)
        c[g.H_MIN] = 64.0 * np.finfo(float).eps * max(abs(t0), abs(t1))
        c[g.H_MAX], c[g.T_END] = max_step, t1
        c[g.CLOSURE_RATE] = closure_rate
        self.ctl = ctl = np.zeros(g.N_CONTROLS, dtype=np.int64)
        ctl[g.ADAPTIVE] = h is None
        ctl[g.MAX_NEWTON] = _MAX_NEWTON
        ctl[g.RECORD_STEPS] = record_steps
        ctl[g.SCHEME] = scheme
        ctl[g.ERROR_NORM] = error_norm
        ctl[g.MAX_TRIES] = -1
        if h is not None:
            ctl[g.N_FIXED] = max(1, math.ceil((t1 - t0) / h * (1.0 - 1e-12)))
            c[g.H_FIXED] = (t1 - t0) / ctl[g.N_FIXED]
        self.s = s = np.zeros(g.N_SCALARS)
        s[g.T] = s[g.T_START] = t0
        s[g.H] = min(max_step, (t1 - t0) / 100.0)
        s[g.P_TAU:g.P_TAU + 3] = xdot0[nq + nu:]
        self.Mk, self.S = np.zeros((nu, nu)), np.zeros((nu, nu))
        #: the stiffness and damping of the exact iteration matrix, kept with ``Mk`` (None:
        #: the modal matrix, whose compiled loop then holds none of the exact one's code)
        self.Bk = np.zeros((2, nu, nu)) if iteration_matrix == "exact" else None
        #: the stage times of the scheme's forces (:func:`flexdyn.engine.galpha.nodes`)
        self.nodes = g.nodes(scheme)
        #: the weights of :meth:`stage_states` at :attr:`nodes` (``_stage_weights``)
        self.stage_weights = _stage_weights(tuple(self.nodes))
        k = nu if scheme != g.GENERALIZED_ALPHA else 0
        self.Jc, self.piv = np.zeros((k, k), dtype=complex), np.zeros((2, nu), dtype=np.int64)
        #: generalized-α's predictor (None: a collocation scheme, whose compiled loop then
        #: holds no generalized-α step)
        self.base = np.zeros((3, nu)) if scheme == g.GENERALIZED_ALPHA else None
        #: the loop closures' arrays (:class:`flexdyn.engine.galpha.Closures`; None: a tree,
        #: whose compiled loop then holds no closure code)
        self.closures = None
        if model.constraints:  # the first step's multipliers start from those at t0
            self.closures = g.closures(*self.engine.closure_buffers, self.engine.geometry,
                                       self.nodes.size, nu)
            self.closures.lam_n[:] = constraint_forces(model, q0, u0, _applied(tau, g_n),
                                                       fidelity=fidelity, f_ext=f_ext)
        self.pred = np.empty((self.nodes.size, 1 + 2 * nu))
        self.cnt = np.zeros(g.N_COUNTERS, dtype=np.int64)
        #: tries repeated with the forces of the step's own stage states (feedback_try)
        self.feedback_retries = 0
        self.linearize = linearize
        #: ``∂τ/∂q``, ``∂τ/∂q̇`` (2, nu, nu) of a state feedback (feedback_try); empty: none
        self.jf = np.zeros((2, 0, 0))
        self.drive = drive
        #: the prescribed speeds (nu,), 1 where prescribed (empty: none), and their
        #: accelerations at the force times, stacked (k nu,)
        self.pmask = (np.zeros(0, dtype=np.int64) if drive is None
                      else drive.mask.astype(np.int64))
        self.pacc = np.zeros(self.nodes.size * nu)

    def _carried(self) -> tuple[np.ndarray, ...]:
        """The arrays a compiled call advances: restoring copies of them undoes it."""
        cl = self.closures
        closures = () if cl is None else (cl.lam_n, cl.h_n, cl.Jk, cl.Y, cl.Yc, cl.L, cl.Lc,
                                          cl.piv)
        exact = () if self.Bk is None else (self.Bk,)
        return (self.y, self.qg, self.s, self.Mk, *exact, self.S, self.Jc, self.piv, self.pred,
                self.cnt, *closures)

    @property
    def q(self) -> np.ndarray:
        """The engine's coordinates (nq,) of the state (:func:`engine_coordinates`; without
        quaternion joints the integrator's coordinates themselves)."""
        if not self.local.any():
            return self.y[0].copy()
        return engine_coordinates(self.model, self.qg, self.y[0])

    def engine_state(self, x: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
        """``(q, u)`` of a state ``x = [q; u]`` (2 nu,) in the integrator's coordinates about
        ``reference`` (nq,): the engine's coordinates (:func:`engine_coordinates`), which a
        model without quaternion joints shares."""
        nu = self.y.shape[1]
        if not self.local.any():
            return x[:nu], x[nu:]
        return engine_coordinates(self.model, reference, x[:nu]), x[nu:]

    def held(self, tau: np.ndarray, f_ext: np.ndarray, g: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Forces ``tau`` (nu,), ``f_ext`` (n_bodies, 6) and ``g`` (nu,; empty: none) held over
        a step, in the layout :meth:`run` takes: once per stage (:attr:`nodes`)."""
        k = self.nodes.size
        return np.tile(tau, k), np.tile(f_ext, (k, 1)), np.tile(g, k)

    def next_forces(self, forces: Callable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The forces of the next try, in the layout :meth:`run` takes:
        ``forces(t, q, u) -> (tau, f_ext, g)`` at the rows of :attr:`pred` (the compiled
        entry's): the scheme's stage times ``t + c_i h`` (:attr:`nodes`; generalized-α: the
        step's end) and the states predicted there, ``q + c_i h u + ½ (c_i h)² u̇``,
        ``u + c_i h u̇``; with prescribed motion its accelerations at those times too, into
        :attr:`pacc`.  (The predicted local coordinates start from 0 about the state's own
        engine coordinates, :attr:`q`, as the try will.)"""
        reference = self.q
        states = [(p[0], *self.engine_state(p[1:], reference)) for p in self.pred]
        at = [forces(*state) for state in states]
        if self.drive is not None:
            self.pacc[:] = np.concatenate([self.drive.impose(*state)[2] for state in states])
        return tuple(np.concatenate([a[k] for a in at]) for k in range(3))

    def stage_states(self, y0: np.ndarray, t0: float) -> tuple[np.ndarray, np.ndarray]:
        """The stage times (k,) and states ``[q; u]`` (k, 2 nu) of the step just taken from
        ``(t0, y0)`` (the rows of the loop's ``y`` there).  Generalized-α: the step's end.
        The states are in the integrator's coordinates about the step's reference,
        :attr:`qg` after it (:meth:`engine_state`).
        The collocation schemes: their stage states, ``u(t0 + c h) = u0 + h ∫₀ᶜ P``,
        ``q(t0 + c h) = q0 + c h u0 + h² ∫₀ᶜ (c − θ) P``, from the collocation polynomial
        of ``q̈``, ``P(θ) = q̈₁ + (θ − 1) h q⃛₁ + ½ (θ − 1)² h² q⁗₁`` (its value and
        derivatives at the step's end: rows 3, 2 and 4 of ``y``), by a Gauss rule exact for
        these cubics."""
        g, y1, t1 = galpha, self.y, float(self.s[galpha.T])
        if self.ctl[g.SCHEME] == g.GENERALIZED_ALPHA:
            return np.array([t1]), np.concatenate([y1[0], y1[1]])[None]
        y0 = y0.copy()
        y0[0, self.local] = 0.0  # the step's local coordinates start at 0
        h, nu = t1 - t0, y1.shape[1]
        # P(θ) = B(θ) [q̈₁; h q⃛₁; h² q⁗₁] with B(θ) = [1, θ − 1, ½ (θ − 1)²], so each
        # integral is a fixed combination of those three rows (``_stage_weights``)
        wq, wu = self.stage_weights
        Y = np.stack([y1[3], h * y1[2], h * h * y1[4]])
        states = np.empty((self.nodes.size, 2 * nu))
        states[:, :nu] = y0[0] + np.outer(self.nodes * h, y0[1]) + h * h * (wq @ Y)
        states[:, nu:] = y0[1] + h * (wu @ Y)
        return t0 + self.nodes * h, states

    def feedback_jacobian(self, forces: Callable, t: float, x: np.ndarray,
                          reference: np.ndarray) -> np.ndarray:
        """``[∂τ/∂q, ∂τ/∂u]`` (2, nu, nu) of ``forces(t, q, u) -> (tau, f_ext, g)`` at ``t`` and
        ``x = [q; u]`` (the integrator's coordinates about ``reference``, :meth:`engine_state`)
        by forward differences (2 nu evaluations): the iteration matrix's share of a state
        feedback, which only needs to be near (:meth:`feedback_try` checks the forces
        themselves)."""
        nu = self.y.shape[1]
        base = forces(t, *self.engine_state(x, reference))[0]
        jac = np.empty((2, nu, nu))
        for j in range(2 * nu):
            step = math.sqrt(np.finfo(float).eps) * max(1.0, abs(x[j]))
            shifted = x.copy()
            shifted[j] += step
            jac[j // nu, :, j % nu] = (forces(t, *self.engine_state(shifted, reference))[0]
                                       - base) / step
        return jac

    def linearized(self, tau: np.ndarray, points: np.ndarray, states: np.ndarray) -> np.ndarray:
        """The forces the compiled iteration applied at ``states`` (k, 2 nu): ``tau`` (k nu,)
        evaluated at ``points`` (k, 2 nu), linearized with :attr:`jf`
        (``flexdyn.engine.galpha._linearized_forces``)."""
        if self.jf.shape[1] == 0:
            return tau
        nu = self.y.shape[1]
        d = states - points
        return (tau.reshape(-1, nu) + d[:, :nu] @ self.jf[0].T
                + d[:, nu:] @ self.jf[1].T).ravel()

    def force_error(self, tau_s: np.ndarray, f_ext_s: np.ndarray, tau: np.ndarray,
                    f_ext: np.ndarray, t0: float) -> float:
        """The largest change of the step just taken from ``t0`` that forces ``tau_s``,
        ``f_ext_s`` instead of the forces it applied, ``tau``, ``f_ext`` (each per stage, in
        the layout of :meth:`run`), would make, in units of the step's tolerance: the change of
        the accelerations ``Δu̇`` at the step's end (two calls of the state derivative per
        stage) moves ``q`` by about ``h² Δu̇`` and ``u`` by ``h Δu̇``; measured as Radau IIA's
        error estimate is (``atol + rtol |q|``, and the rate scale of
        :data:`flexdyn.engine.galpha.DISPLACEMENT_NORM` for ``u``; ``q`` alone for
        generalized-α's)."""
        g, y1, nu = galpha, self.y, self.y.shape[1]
        h = float(self.s[g.T]) - t0
        x1 = np.concatenate([self.q, y1[1]])  # the state derivative's: engine coordinates
        rtol, atol = float(self.c[g.RTOL]), float(self.c[g.ATOL])
        k = self.nodes.size
        tau_s, tau = tau_s.reshape(k, nu), tau.reshape(k, nu)
        f_ext_s, f_ext = (f.reshape(k, -1, 6) for f in (f_ext_s, f_ext))
        change = np.zeros(nu)  # the largest |Δu̇| over the stages
        for i in range(k):
            if np.array_equal(tau_s[i], tau[i]) and np.array_equal(f_ext_s[i], f_ext[i]):
                continue
            delta = (self.derivative(t0, x1, tau_s[i], f_ext_s[i])[nu:2 * nu]
                     - self.derivative(t0, x1, tau[i], f_ext[i])[nu:2 * nu])
            np.maximum(change, np.abs(delta), out=change)
        error = np.max(h * h * change / (atol + rtol * np.abs(y1[0])))
        if self.ctl[g.SCHEME] == g.RADAU_IIA:
            scale = atol + rtol * np.abs(y1[1])  # the state norm
            if self.ctl[g.ERROR_NORM] == g.DISPLACEMENT_NORM:
                scale = np.where(self.elastic, (atol + rtol * np.abs(y1[0])) / h,
                                 atol / h + rtol * np.abs(y1[1]))
            error = max(error, np.max(h * change / scale))
        return float(error)

    @functools.cached_property
    def elastic(self) -> np.ndarray:
        """(nu,) bool: the speeds that are elastic coordinates' rates (the compiled entry's
        ``elastic``: the displacement norm's scales)."""
        mask = np.zeros(self.model.nu, dtype=bool)
        for i in range(len(self.model.bodies)):
            self.model.eta_dot(mask, i)[:] = True
        return mask

    def feedback_try(self, forces: Callable, times: np.ndarray, out_t: np.ndarray,
                     out_x: np.ndarray) -> int:
        """One step try (:meth:`run` with ``ctl[MAX_TRIES] = 1``; its status) with forces
        ``forces(t, q, u) -> (tau, f_ext, g)`` that depend on the state.  They are evaluated at
        the predicted stage states (:meth:`next_forces`); with :attr:`linearize`, ``tau`` is
        linearized about them inside the Newton iteration (:attr:`jf`, by
        :meth:`feedback_jacobian`), which makes a linear feedback exact at every stage.  Once
        the try is accepted, the forces at its own stage states (:meth:`stage_states`) are
        compared with those it applied: where they would change the step by more than
        ``_FEEDBACK_TOL`` of its tolerance (:meth:`force_error`), the step is undone and
        tried again about its stage states, with a fresh Jacobian, up to
        ``_MAX_FEEDBACK`` times, so that the accepted step is a collocation solution of
        the closed loop, within the error estimate.  Forces that do not settle cut an
        adaptive step to a quarter, as a failed Newton iteration does; with fixed steps the
        last try stands."""
        g = galpha
        tau, f_ext, g_n = self.next_forces(forces)
        points = self.pred[:, 1:].copy()
        if self.linearize and self.jf.shape[1] == 0:
            self.jf = self.feedback_jacobian(forces, self.pred[-1, 0], points[-1], self.q)
        saved = [a.copy() for a in self._carried()]
        y0, t0 = self.y.copy(), float(self.s[g.T])
        for retry in range(_MAX_FEEDBACK):
            steps = self.cnt[g.STEPS]
            status = self.run(times, tau, f_ext, g_n, out_t, out_x)
            if self.cnt[g.STEPS] == steps or status < 0:  # rejected by the error estimate
                return status
            times_s, states = self.stage_states(y0, t0)
            reference = self.qg.copy()  # the step's
            pairs = [forces(t, *self.engine_state(x, reference))
                     for t, x in zip(times_s, states, strict=True)]
            tau_s, f_ext_s, g_s = (np.concatenate([p[k] for p in pairs]) for k in range(3))
            error = self.force_error(_applied(tau_s, g_s), f_ext_s,
                                     _applied(self.linearized(tau, points, states), g_n), f_ext,
                                     t0)
            if error <= _FEEDBACK_TOL or (retry == _MAX_FEEDBACK - 1
                                          and not self.ctl[g.ADAPTIVE]):
                return status
            for a, b in zip(self._carried(), saved, strict=True):
                a[...] = b
            self.pred[:, 1:] = points = states  # the next try's linearization points
            saved = [a.copy() for a in self._carried()]
            tau, f_ext, g_n = tau_s, f_ext_s, g_s
            if self.linearize:
                self.jf = self.feedback_jacobian(forces, times_s[-1], states[-1], reference)
            self.feedback_retries += 1
        self.cnt[g.REJECTED] += 1
        self.s[g.H] *= 0.25
        self.s[g.REJECTED_LAST] = 1.0
        if self.s[g.H] < self.c[g.H_MIN]:
            return g.STEP_TOO_SMALL
        self.ctl[g.MAX_TRIES] = 0  # no try: the predicted states of the shorter step
        self.run(times, tau, f_ext, g_n, out_t, out_x)
        self.ctl[g.MAX_TRIES] = 1
        return g.PAUSED

    def summary(self) -> str:
        """The counts of the run so far, for the result's message."""
        g, cnt = galpha, self.cnt
        name = next(k for k, v in g.SCHEMES.items() if v == self.ctl[g.SCHEME])
        retries = (f", {self.feedback_retries} tries repeated with the stage states' forces"
                   if self.feedback_retries else "")
        return (f"{name}: {cnt[g.STEPS]} steps, {cnt[g.REJECTED]} rejected tries, "
                f"{cnt[g.ITERATIONS]} Newton iterations, {cnt[g.FACTORIZATIONS]} "
                f"factorizations{retries}")

    def run(self, times: np.ndarray, tau: np.ndarray, f_ext: np.ndarray, g: np.ndarray,
            out_t: np.ndarray, out_x: np.ndarray) -> int:
        """One call of the compiled entry (its status); the collocation schemes take
        ``tau``, ``f_ext`` and ``g`` (empty: no nodal loads) stacked per stage."""
        stages = "implicit" if self.Bk is None else "implicit_exact"
        return galpha.generalized_alpha(*self.engine.stage_buffers(stages), self.c,
                                        self.ctl, times, tau, g, f_ext, self.jf, self.pmask,
                                        self.pacc, self.elastic, self.y, self.qg, self.s,
                                        self.Mk, self.Bk, self.S, self.Jc, self.base, self.piv,
                                        self.closures,
                                        out_t, out_x, self.pred, self.cnt)


def compiled_forces(ode: Problem) -> Callable:
    """``forces(t, q, u) -> (tau (nu,), f_ext (n_bodies, 6), g)``: the loads of ``ode`` in
    the form :class:`CompiledLoop` takes them, the nodal loads (``ode.nodes_fn``) as their
    rigid parts in ``f_ext`` and their modal generalized forces ``g`` (nu,; empty without
    nodal loads) (:func:`flexdyn.dynamics.nodal_loads_at`)."""
    model, tau_fn, fext_fn, nodes_fn = ode.model, ode.tau_fn, ode.fext_fn, ode.nodes_fn
    zeros_tau, no_wrenches, no_nodes = (np.zeros(model.nu), np.zeros((model.n_bodies, 6)),
                                        np.zeros(0))

    def forces(t: float, q: np.ndarray, u: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tau = zeros_tau if tau_fn is None else np.array(tau_fn(t, q, u), dtype=float)
        f_ext = no_wrenches if fext_fn is None else np.array(fext_fn(t, q, u), dtype=float)
        if nodes_fn is None:
            return tau, f_ext, no_nodes
        f, g = nodal_loads_at(model, q, nodes_fn(t, q, u), ode.fidelity)
        return tau, f_ext + f, g

    return forces


def integrate_compiled(ode: Problem, q0: np.ndarray, u0: np.ndarray, t0: float, t1: float,
                       tau: Any, f_ext: Any, rtol: float, atol: float,
                       t_eval: np.ndarray | None, max_step: float, progress: bool, *,
                       h: float | None, rho_inf: float, newton_tol: float,
                       error_norm: int, scheme: int, iteration_matrix: str = "modal",
                       events: Events | None = None) -> SimulationResult:
    """:func:`simulate` with a compiled integrator (``integrator="generalized-alpha"``,
    ``"gauss-legendre"`` or ``"radau-iia"``, ``scheme`` its code): the time loop runs in the
    compiled entry :func:`flexdyn.engine.galpha.generalized_alpha`.  The collocation schemes
    integrate the work integrals by their own quadrature at the stages (fourth and fifth
    order).

    * **Steps.** ``h`` given: ``ceil((t1 − t0)/h)`` equal steps, no error control (a Newton
      iteration that does not converge in ``_MAX_NEWTON`` iterations is an error).
      ``h`` None (generalized-α, Radau IIA): adaptive steps, at most ``max_step``.
      Generalized-α estimates the local error of ``q`` from the change of the auxiliary
      acceleration and holds it to ``atol + rtol |q|`` per step (the method is second order,
      so ``rtol`` = 1e-8 takes many more steps than with DOP853; 1e-6 … 1e-4 are its range);
      a try whose Newton iteration fails is retried with a quarter of the step.  Radau IIA
      uses RADAU5's estimate and controller and halves a step whose iteration fails; with
      ``error_norm="state"`` (the default) it measures the estimate of ``q`` and of ``u``
      each against its own ``atol + rtol |x|`` (scipy's ``"Radau"``: about as many steps at
      the same tolerances), with ``"displacement"`` it measures ``q`` against
      ``atol + rtol |q|`` and an error of the speeds by the displacement it makes over the
      step, ``h u``, against ``atol + rtol |q|`` for an elastic coordinate and against the
      joint's own displacement over the step, ``atol + rtol h |u|``, for a joint coordinate,
      as error estimators in structural dynamics measure displacements (Zienkiewicz &
      Xie 1991), and the Newton corrections alike.  In the state norm the speeds of lightly
      damped stiff modes, ``ω`` times their displacements, hold the step short; in
      displacements it follows what those modes move, with errors nearer the tolerances
      (measurements in ``docs/simulation-performance.md``).
    * **Forces.** ``tau`` and ``f_ext`` None or constant arrays: the whole integration is one
      compiled call.  Functions of time (:func:`flexdyn.loads.of_time`) are evaluated in
      Python once per step try, at the scheme's stage times ``t_n + c_i h``
      (generalized-α: ``t_{n+1}``), and held during the Newton iteration; the compiled
      entry is then called once per try.  Other callables ``tau(t, q, u)``,
      ``f_ext(t, q, u)`` (state feedback) are evaluated at the states predicted there,
      ``q* = q + c_i h u + ½ (c_i h)² u̇``, ``u* = u + c_i h u̇``, and, once the try is
      accepted, at its own stage states; ``tau`` is linearized about the predicted states
      inside the Newton iteration, and the step is tried again about its stage states until
      the forces there would move it by less than a tenth of its tolerance
      (:meth:`CompiledLoop.feedback_try`), so that the feedback is inside the error
      estimate.
    * **Prescribed motion** (``ode.drive``): its accelerations are evaluated in Python at the
      force times of each try, like the forces, and taken as the stage accelerations of the
      prescribed speeds, whose rows of the Newton iteration are decoupled; their generalized
      forces are the loads that realise the motion (in the work integrals).  The samples
      carry the prescribed ``q``, ``u`` themselves (``Problem.histories``).
    * **Outputs.** The ``t_eval`` samples by cubic Hermite interpolation on the step
      (``q`` from ``q, u`` at both ends, ``u`` from ``u, u̇``, the work integrals from their
      integrands at both ends; Gauss–Legendre's linearly), or every step.  ``nfev`` counts
      the inverse-dynamics evaluations; the message gives the steps, rejected tries, Newton
      iterations and factorizations of the iteration matrix.
    * **Events.** With ``events`` the compiled entry is called once per accepted step
      (:class:`_CompiledSteps`), and the events are located on that interpolation as
      with the scipy integrators (``Events``)."""
    model, nq, nu, drive = ode.model, ode.model.nq, ode.model.nu, ode.drive
    # nodal loads act in their nodes' frames, which move with the state: a feedback
    nodal = ode.nodes_fn is not None
    forced = callable(tau) or callable(f_ext) or drive is not None or nodal  # per try
    feedback = "callable" in (load_kind(tau), load_kind(f_ext)) or nodal  # of the state
    forces = compiled_forces(ode)

    def failed(t: float, message: str, partial: SimulationResult | None = None,
               cause: BaseException | None = None) -> SimulationError:
        error = SimulationError(f"simulation failed at t = {t:.6g} s: {message}", t, message,
                                partial=partial)
        error.__cause__ = cause
        return error

    tau_t, fe, g_t = forces(t0, q0, u0)
    try:
        xdot0 = (None if drive is None and not nodal
                 else ode(t0, np.concatenate([q0, u0, np.zeros(N_EXTRA)])))
        loop = CompiledLoop(model, ode.fidelity, q0, u0, t0, t1, tau_t, fe, g_t, scheme=scheme,
                            h=h, rho_inf=rho_inf, newton_tol=newton_tol, error_norm=error_norm,
                            rtol=rtol, atol=atol, max_step=max_step,
                            record_steps=t_eval is None, iteration_matrix=iteration_matrix,
                            linearize=load_kind(tau) == "callable", drive=drive, xdot0=xdot0,
                            closure_rate=ode.closure_rate)
    except RhsFailure as exc:
        raise failed(t0, exc.message, cause=exc.__cause__) from exc.__cause__
    g = galpha
    ctl, s, cnt = loop.ctl, loop.s, loop.cnt
    held = loop.held(tau_t, fe, g_t)  # forces that vary are evaluated once paused
    if events is not None:
        return _compiled_with_events(ode, loop, events, t_eval, held,
                                     forces if forced else None, feedback, failed, progress)
    times = np.zeros(0) if t_eval is None else np.ascontiguousarray(t_eval)
    n_out = times.size if t_eval is not None else (
        int(ctl[g.N_FIXED]) if h is not None else _CHUNK)
    out_t, out_x = np.empty(n_out), np.empty((n_out, nq + nu + N_EXTRA))
    chunks = [] if t_eval is not None else [(np.array([t0]),
                                             np.concatenate([q0, u0, np.zeros(N_EXTRA)])[None])]
    bar = progress_bar(t0, t1) if progress else None
    ctl[g.MAX_TRIES] = 0 if forced else _TRIES_PER_UPDATE if bar is not None else -1
    clock = Stopwatch()

    def result(message: str) -> SimulationResult:
        done = [*chunks, (out_t[:cnt[g.N_OUT]], out_x[:cnt[g.N_OUT]])]
        t_out = np.concatenate([t for t, _ in done])
        y_out = np.concatenate([x for _, x in done]).reshape(-1, nq + nu + N_EXTRA)
        return result_of(ode, t_out, y_out, message == "failed", nfev=int(cnt[g.RESIDUALS]),
                         message=f"{message} ({loop.summary()})", **clock.stats())

    try:
        with _Attempt(bar) as attempt:
            while True:
                status = (loop.feedback_try(forces, times, out_t, out_x)
                          if feedback and ctl[g.MAX_TRIES] == 1
                          else loop.run(times, *held, out_t, out_x))
                if bar is not None:
                    bar.update(s[g.T] - t0 - bar.n)
                if status == g.FULL:
                    chunks.append((out_t[:cnt[g.N_OUT]].copy(), out_x[:cnt[g.N_OUT]].copy()))
                    cnt[g.N_OUT] = 0
                elif status == g.PAUSED:
                    if forced:
                        ctl[g.MAX_TRIES] = 1
                        if not feedback:
                            held = loop.next_forces(forces)
                else:
                    break
    except BaseException as exc:  # a user's callable failed, or KeyboardInterrupt
        keep_partial(exc, lambda: result("failed"))
        raise
    failure = attempt.failure
    if failure is None and status != g.FINISHED:
        failure = (float(s[g.T]), LOOP_FAILURES[status], None)
    if failure is not None:
        raise failed(failure[0], failure[1], result("failed"), failure[2]) from failure[2]
    return result("the integration reached t1")


class _Attempt:
    """The span of a compiled integration loop: a ``RhsFailure`` raised inside (a force
    callable failed) is kept as :attr:`failure`, ``(t, message, cause)``, instead of
    propagating, and the progress bar ``bar`` (or None) is closed."""

    def __init__(self, bar: Any):
        self.bar = bar
        self.failure: tuple[float, str, BaseException | None] | None = None

    def __enter__(self) -> _Attempt:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> bool:
        if self.bar is not None:
            self.bar.close()
        if isinstance(exc, RhsFailure):
            self.failure = (exc.t, exc.message, exc.__cause__)
            return True
        return False


class _CompiledSteps:
    """A compiled integrator (:class:`CompiledLoop`) behind the part of scipy's
    ``OdeSolver`` interface that :func:`simulate`'s samples and events (``Samples``,
    ``Events``) use (``status``, ``t_old``, ``t``, ``y``, :meth:`step`,
    :meth:`dense_output`), one accepted step per :meth:`step` (its tries inside); without
    ``OdeSolver`` itself, so that a compiled run does not import :mod:`scipy.integrate`.  The state
    is ``x = [q; u; W_τ, W_ext, D]`` (the loop's ``q, q̇`` and work integrals), the dense
    output is the loop's interpolation on the step
    (:func:`flexdyn.engine.galpha.sample`).  ``held``: the forces ``(tau, f_ext, g)`` in the
    layout of :meth:`CompiledLoop.run`; ``forces(t, q, u) -> (tau, f_ext, g)``: forces
    evaluated before each try (:meth:`CompiledLoop.next_forces`), or None when the loop's
    are held; ``feedback``: they depend on the state (each try by
    :meth:`CompiledLoop.feedback_try`); ``bar``: a progress bar or None."""

    def __init__(self, loop: CompiledLoop, x0: np.ndarray, t0: float, t1: float,
                 held: tuple[np.ndarray, ...], forces: Callable | None, feedback: bool,
                 bar: Any):
        g = galpha
        self.status, self.t_old, self.t, self.t1, self.y = "running", None, t0, t1, x0
        self.loop, self.forces, self.feedback, self.bar = loop, forces, feedback, bar
        self.held = held
        self.out_t, self.out_x = np.empty(1), np.empty((1, x0.size))
        self.times = np.zeros(0)
        loop.ctl[g.RECORD_STEPS] = 1
        loop.ctl[g.MAX_TRIES] = 0
        loop.run(self.times, *held, self.out_t, self.out_x)  # the first predictor
        loop.ctl[g.MAX_TRIES] = 1 if forces is not None else -1
        self.ends: tuple[np.ndarray, ...] = ()  # the last step's (y, s) at both ends

    def step(self) -> str | None:
        """One accepted step (``status`` "failed" and the message if it fails, "finished"
        when it reaches ``t1``)."""
        t = self.t
        message = self._step()
        if message is not None:
            self.status = "failed"
            return message
        self.t_old = t
        if self.t >= self.t1:
            self.status = "finished"
        return None

    def _step(self) -> str | None:
        g, loop, t0 = galpha, self.loop, self.t
        y0, s0 = loop.y.copy(), loop.s.copy()
        y0[0, loop.local] = 0.0  # the step starts its local coordinates at 0
        steps = loop.cnt[g.STEPS]
        while loop.cnt[g.STEPS] == steps:
            loop.cnt[g.N_OUT] = 0
            if self.feedback:
                status = loop.feedback_try(self.forces, self.times, self.out_t, self.out_x)
            else:
                if self.forces is not None:
                    self.held = loop.next_forces(self.forces)
                status = loop.run(self.times, *self.held, self.out_t, self.out_x)
            if status not in (g.FULL, g.PAUSED, g.FINISHED):
                return LOOP_FAILURES[status]
        self.t, self.y = float(loop.s[g.T]), self.out_x[0].copy()
        self.nfev = int(loop.cnt[g.RESIDUALS])
        self.ends = (y0, s0, loop.y.copy(), loop.s.copy(), loop.qg.copy())
        if self.bar is not None:
            self.bar.update(self.t - t0)
        return None

    def dense_output(self) -> _StepOutput:
        """The interpolation on the last step."""
        g = galpha
        y0, s0, y1, s1, qg = self.ends
        w = slice(g.W_TAU, g.W_TAU + 3)
        p = slice(g.P_TAU, g.P_TAU + 3)
        wq = np.array([s0[w], s1[w]])
        # Gauss–Legendre's integrands at the ends are not known: the step's mean at both
        start = s1 if self.loop.ctl[g.SCHEME] == g.GAUSS_LEGENDRE else s0
        pw = np.array([start[p], s1[p]])
        return _StepOutput(self.t_old, self.t, y0, y1, wq, pw, self.loop.engine.packed, qg)


class _StepOutput:
    """The dense output of one step of :class:`_CompiledSteps`, called as scipy's
    ``DenseOutput`` is, at a time or an array of times (``packed`` the engine's buffers,
    ``qg`` the reference of the step's local coordinates)."""

    def __init__(self, t_old: float, t: float, y0: np.ndarray, y1: np.ndarray,
                 wq: np.ndarray, pw: np.ndarray, packed: tuple, qg: np.ndarray):
        self.t_old, self.t = t_old, t
        self.y0, self.y1, self.wq, self.pw = y0, y1, wq, pw
        self.packed, self.qg = packed, qg

    def __call__(self, t: float | np.ndarray) -> np.ndarray:
        h = self.t - self.t_old
        theta = np.atleast_1d((t - self.t_old) / h).astype(float)
        out = np.empty((theta.size, self.qg.size + self.y0.shape[1] + N_EXTRA))
        galpha.sample(*self.packed, self.qg, self.y0, self.y1, self.wq, self.pw, h, theta, out)
        return out[0] if np.ndim(t) == 0 else out.T


def _compiled_with_events(ode: Problem, loop: CompiledLoop, events: Events,
                          t_eval: np.ndarray | None, held: tuple[np.ndarray, ...],
                          forces: Callable | None, feedback: bool, failed: Callable,
                          progress: bool) -> SimulationResult:
    """:func:`integrate_compiled` with ``events``: the loop stepped by
    :class:`_CompiledSteps` through ``Samples``, which records the samples and locates the
    events as for the scipy integrators; ``held`` and ``forces`` as
    :class:`_CompiledSteps` takes them (and ``feedback``), ``failed(t, message, partial,
    cause)`` the error to raise."""
    g = galpha
    t0, t1 = float(loop.s[g.T]), float(loop.c[g.T_END])
    x0 = np.concatenate([loop.q, loop.y[1], np.zeros(N_EXTRA)])
    bar = progress_bar(t0, t1) if progress else None
    samples = Samples(t0, x0, t_eval, events)
    clock = Stopwatch()

    def result(outcome: str) -> SimulationResult:
        t_out, y_out = samples.arrays(x0.size)
        return result_of(ode, t_out, y_out, outcome == "failed",
                         nfev=int(loop.cnt[g.RESIDUALS]), message=f"{outcome} ({loop.summary()})",
                         **clock.stats(), **events.results(ode.model))

    try:
        with _Attempt(bar) as attempt:
            solver = _CompiledSteps(loop, x0, t0, t1, held, forces, feedback, bar)
            message = samples.run(solver)
            if solver.status == "failed":
                attempt.failure = (float(solver.t), message, None)
    except BaseException as exc:  # a user's callable failed, or KeyboardInterrupt
        keep_partial(exc, lambda: result("failed"))
        raise
    failure = attempt.failure
    if failure is not None:
        raise failed(failure[0], failure[1], result("failed"), failure[2]) from failure[2]
    return result("a terminal event occurred" if samples.stopped
                  else "the integration reached t1")
