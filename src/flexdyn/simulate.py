"""Time integration of flexdyn models and the resulting histories.

:func:`simulate` integrates ``M(q) u̇ + C(q, u) = τ`` together with the kinematic equation
``q̇ = Γ(q) u`` (``model.qdot``) with :func:`scipy.integrate.solve_ivp` on the state
``x = [q; u]`` (layout of ``model-format.md``; see :func:`~flexdyn.chain.state_layout`).

On the default ``backend="engine"`` each right-hand side is one call of the compiled state
derivative (:func:`flexdyn.engine.kernels.derivative_articulated`, or ``_composite``):
forward dynamics, ``q̇ = Γ(q) u`` and the energy-balance integrands below together; only
state-dependent forces ``tau(t, q, u)`` / ``f_ext(t, q, u)`` are evaluated in Python.  The
``"articulated-split"`` method and ``backend="reference"`` evaluate the same quantities
step by step.  The same derivative is a C function for simulators outside Python
(:mod:`flexdyn.engine.ccall`).

Quaternions
-----------
The quaternions of ``spherical`` and ``free`` joints are integrated as plain coordinates,
but every right-hand-side evaluation first scales them to unit length, so the dynamics and
``q̇`` always see a rotation and a drift of the integrated norm never feeds back into the
solution.  The stored output ``SimulationResult.q`` is normalised the same way.

Energy balance
--------------
The work of the applied forces is integrated with the motion: the ODE state is augmented
with ``W_τ = ∫ sat(τ)·u dt`` (``τ`` within the joints' torque limits), the work of the
external wrenches ``W_ext = ∫ Σ f_ext(i)·V(i) dt`` and the energy dissipated by modal
damping and the joint dampers, friction and limits, ``D = ∫ (Σ η̇ᵀ C η̇ + D_J) dt``
(:mod:`flexdyn.joint_forces`), so these integrals are as accurate as the state itself.
:attr:`~flexdyn.results.SimulationResult.energy_balance_error` is the percentage
energy-balance error of Damaren & Sharf (1995), Eq 30,
``e_E(t) = 100 (E(t) − E(0) − W(t) + D(t)) / |E_peak|`` with ``W = W_τ + W_ext`` and
``E_peak`` the largest ``|E|`` over the run (energies of the simulated body model, see
``SimulationResult.energy_fidelity``), and
:attr:`~flexdyn.results.SimulationResult.energy_balance_rms` its RMS over the samples (Eq 32;
sample on a uniform grid, e.g. ``t_eval=np.linspace(t0, t1, 1000)``, to match the paper).

Closed chains
-------------
For a model with loop closures (``model.constraints``) each right-hand side adds the
closure forces to the tree's accelerations (Jain & Rodriguez Sec VIII; on the engine one
compiled call, :func:`flexdyn.engine.closure.closed_derivative`, else
:func:`flexdyn.dynamics.closed_chain`) with Baumgarte's stabilization
``g̈ + 2ω ġ + ω² g = 0`` (critically damped, ``ω = closure_rate``): any drift of the
closures decays at the rate ``ω`` instead of growing.  Its terms vanish on the closure
manifold, it works with every integrator (with dense output, events and implicit methods
alike, which a projection of the state after each step would not: scipy's solvers keep
derivative histories that a projected state would contradict) and it costs nothing beyond
the closure terms already computed.  The result reports the residuals ``g`` at every
sample (``closure_drift``) and the closure forces (``constraint_forces``).  The initial
state must satisfy the closures
(:func:`flexdyn.assemble` makes it so); ``simulate`` says by how much it does not.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.integrate
import scipy.optimize
import threadpoolctl

from .chain import Model, state_layout
from .closure import ClosureError
from .dynamics import (
    BACKENDS,
    FORWARD_METHODS,
    cached_engine,
    check_external_forces,
    closed_chain,
    closed_hybrid,
    closure_residuals,
    closures_on_engine,
    forward_dynamics,
    hybrid_dynamics,
    is_entry_array,
    nodal_loads,
    on_engine,
    stabilized_forward_dynamics,
    tree_forward_dynamics,
)
from .engine import DERIVATIVE_METHODS, galpha, kernels
from .engine.closure import SINGULAR
from .integrators import FIXED_STEP
from .joint_forces import joint_dissipation, motor_torques
from .loads import TimeFunction
from .modal import highest_frequency
from .outputs import Outputs
from .results import SimulationError, SimulationResult
from .stability import STABILITY_TABLEAUX, step_limit
from .terms import DEFAULT_FIDELITY, check_fidelity, modal_velocities, state_terms

__all__ = ["DEFAULT_TOLERANCES", "PrescribedMotion", "StiffnessWarning", "Stepper",
           "auto_integrator", "pack_state", "rhs", "simulate", "unpack_state"]

_N_EXTRA = 3  # augmented state: W_τ, W_ext, D
_INTEGRATORS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
#: :func:`simulate`'s default integrator: chosen per problem by :func:`auto_integrator`
AUTO = "auto"
#: :func:`simulate`'s default ``(rtol, atol)`` by error norm: in displacements (Radau IIA's
#: ``error_norm="displacement"``) the errors lie near the tolerance, in the state norm of
#: the scipy integrators and the other compiled ones orders of magnitude below it; ``atol``
#: is the floor of the coordinates near zero, the modal ones among them, where 1e-7 took
#: half the steps of 1e-8 at the same tip error on the 5-beam chain
#: (``docs/simulation-performance.md``)
DEFAULT_TOLERANCES = {"state": (1e-8, 1e-10), "displacement": (1e-6, 1e-7)}
#: the compiled generalized-α integrator of :mod:`flexdyn.engine.galpha`
GENERALIZED_ALPHA = "generalized-alpha"
#: the compiled integrators (:data:`flexdyn.engine.galpha.SCHEMES`): generalized-α, the
#: fourth-order Gauss–Legendre and the fifth-order Radau IIA collocation, each a compiled
#: time loop
COMPILED_INTEGRATORS = tuple(galpha.SCHEMES)
#: the compiled integrators of :class:`Stepper`: the collocation methods are one-step
#: methods, so restarting them every macro step (the inputs change there) costs no
#: accuracy, unlike generalized-α's auxiliary acceleration
GAUSS_LEGENDRE, RADAU_IIA = "gauss-legendre", "radau-iia"
#: Baumgarte's rate ``ω`` (1/s) of the closure stabilization by default
CLOSURE_RATE = 10.0
#: the largest closure residual of an initial state: ``max |g|`` (m, rad) and ``max |J u|``
#: relative to ``max(1, max |u|)``
CLOSURE_TOL = 1e-8


class _RhsFailure(Exception):
    """Raised inside the right-hand side to stop the solver; turned into SimulationError."""

    def __init__(self, t: float, message: str):
        super().__init__(message)
        self.t = t
        self.message = message


# ----------------------------------------------------------------------------------------------
# state vector
# ----------------------------------------------------------------------------------------------
def pack_state(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``x = [q; u]`` (nq + nu,)."""
    q, u = np.asarray(q, dtype=float), np.asarray(u, dtype=float)
    if q.ndim != 1 or u.ndim != 1:
        raise ValueError(f"q and u must be 1-D, got shapes {q.shape} and {u.shape}")
    return np.concatenate([q, u])


def unpack_state(model: Model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split ``x = [q; u]`` into ``(q, u)`` (views of ``x``)."""
    x = np.asarray(x)
    n = model.nq + model.nu
    if x.shape != (n,):
        raise ValueError(f"x has shape {x.shape}, expected ({n},) = nq + nu for model "
                         f"{model.name!r}")
    return x[:model.nq], x[model.nq:]


# ----------------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------------
def _check_choice(value: str, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {tuple(choices)}")


def _vector(value: Any, n: int, name: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of {n} numbers, got {value!r}") from None
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({n},)")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values at indices "
                         f"{np.flatnonzero(~np.isfinite(a)).tolist()}")
    return a


def _all_finite(a: np.ndarray) -> bool:
    """Whether every entry of ``a`` (real or complex) is finite.  It runs at every
    right-hand side, where the method call is cheaper than ``np.all(np.isfinite(a))``."""
    return bool(np.isfinite(a).all())


def _load_kind(value: Any) -> str | None:
    """How a load was given, for ``SimulationResult.settings``: None, ``"constant"``,
    ``"function of time"`` (:class:`flexdyn.loads.TimeFunction`) or ``"callable"``."""
    if value is None:
        return None
    if isinstance(value, TimeFunction):
        return "function of time"
    return "callable" if callable(value) else "constant"


def _forcing(value: Any, shape: tuple[int, ...], name: str):
    """Return ``g(t, q, u)`` for None / a constant array / a callable; shape-checked."""
    if value is None:
        return None
    if callable(value):
        fn = value

        def g(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
            a = fn(t, q, u)
            if type(a) is not np.ndarray or a.dtype != np.float64:
                a = np.asarray(a)
                a = a.astype(np.result_type(a, float), copy=False)
            if a.shape != shape:
                raise ValueError(f"{name}(t, q, u) returned shape {a.shape} at t = {t:.6g}, "
                                 f"expected {shape}")
            if not _all_finite(a):
                raise _RhsFailure(t, f"{name}(t, q, u) returned non-finite values")
            return a

        return g
    try:
        a = np.array(value)
        a = a.astype(np.result_type(a, float))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be None, a callable or an array of shape {shape}, "
                         f"got {value!r}") from None
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values")
    a.setflags(write=False)
    return lambda t, q, u: a


def _normalized(model: Model, q: np.ndarray) -> np.ndarray:
    return model.normalize_configuration(q) if model.nq != model.nu else q


# ----------------------------------------------------------------------------------------------
# right-hand side
# ----------------------------------------------------------------------------------------------
def _body_twists(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str) -> list:
    """Twists ``V(i)`` (6,) of the body frames in body coordinates (Eq 11)."""
    pos, _ = state_terms(model, q, None, fidelity)
    V_m = modal_velocities(model, pos, u)
    return [V_m[i][int(model.n_modes[i]):] for i in range(model.n_bodies)]


def rhs(model: Model, fidelity: str = DEFAULT_FIDELITY, method: str = "articulated", *,
        f_ext: Any = None, backend: str = "engine",
        closure_rate: float = CLOSURE_RATE) -> Callable[..., np.ndarray]:
    """State derivative for co-simulation: ``f(t, x, tau=None) -> ẋ``.

    Parameters
    ----------
    model : Model
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    method : forward-dynamics method (``"articulated"``, ``"articulated-split"``,
        ``"composite"``).
    f_ext : None, an array (n_bodies, 6) or a callable ``f_ext(t, q, u)`` — external wrenches
        ``[N m; N]`` at the body frame origins, in body coordinates.
    backend : ``"engine"`` (default: one compiled call per evaluation of real inputs for the
        methods of :data:`flexdyn.engine.DERIVATIVE_METHODS`; complex inputs, for
        complex-step derivatives, take the reference) or ``"reference"`` (numpy).
    closure_rate : for a model with loop closures, Baumgarte's rate ``ω`` (1/s, ≥ 0) of the
        closure stabilization (module notes); ignored for a tree.

    Returns
    -------
    f : callable ``f(t, x, tau=None)`` with ``x = [q; u]``
        (see :func:`~flexdyn.chain.state_layout`),
        ``tau`` None, an array (nu,) or a callable ``tau(t, q, u)``; returns
        ``ẋ = [Γ(q) u; u̇]`` (nq + nu,).  Quaternions in ``x`` are normalised before use.
    """
    check_fidelity(fidelity)
    _check_choice(method, tuple(FORWARD_METHODS), "method")
    _check_choice(backend, BACKENDS, "backend")
    fext_fn = _forcing(f_ext, (model.n_bodies, 6), "f_ext")
    rate = _closure_rate(closure_rate)
    derivative = _compiled_derivative(model, fidelity, method, backend, 0, rate)
    engine = (None if derivative is None or fext_fn is not None or model.constraints
              else cached_engine(model, fidelity))
    nx = model.nq + model.nu
    zeros_tau, no_wrenches = np.zeros(model.nu), np.zeros((model.n_bodies, 6))

    def f(t: float, x: np.ndarray, tau: Any = None) -> np.ndarray:
        if engine is not None and is_entry_array(x, nx) and (
                tau is None or is_entry_array(tau, model.nu)):
            # the short way: float64 arrays straight into the compiled derivative; anything
            # it does not accept takes the full way below, which names the problem
            out = np.empty(nx)
            if engine.derivative_status(x, zeros_tau if tau is None else tau, no_wrenches,
                                        method, out) == -1:
                return out
        q, u = unpack_state(model, np.asarray(x))
        q = _normalized(model, q)
        tau_fn = _forcing(tau, (model.nu,), "tau")
        try:
            tau_t = np.zeros(model.nu) if tau_fn is None else tau_fn(t, q, u)
            fe = None if fext_fn is None else fext_fn(t, q, u)
            if derivative is not None and on_engine(backend, q, u, tau_t, fe):
                return derivative(t, np.concatenate([q, u]), tau_t, fe)
        except _RhsFailure as exc:
            raise SimulationError(f"at t = {t:.6g} s: {exc.message}", t, exc.message) from None
        udot = stabilized_forward_dynamics(model, q, u, tau_t, method, fidelity, fe, None,
                                           backend, rate)
        return np.concatenate([model.qdot(q, u), udot])

    return f


def _closure_rate(value: Any) -> float:
    """The checked ``closure_rate`` (a finite number ≥ 0, 1/s)."""
    if not (isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0):
        raise ValueError(f"closure_rate must be a finite number >= 0 (1/s), got {value!r}")
    return float(value)


def _closed(model: Model, t: float, q: np.ndarray, u: np.ndarray, udot_tree: np.ndarray,
            fidelity: str, backend: str, rate: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u̇, λ, g)`` of a closed chain with Baumgarte's ``rate`` (:func:`closed_chain`), ``g``
    the closure residuals; a singular closure at time ``t`` raises ``_RhsFailure``
    with its message."""
    try:
        udot, lam, terms = closed_chain(model, q, u, udot_tree, fidelity, backend, rate)
    except ClosureError as exc:
        raise _RhsFailure(t, str(exc)) from exc
    return udot, lam, terms.g


def _check_closures(model: Model, q0: np.ndarray, u0: np.ndarray, fidelity: str) -> None:
    """``ValueError`` naming each closure that ``(q0, u0)`` violates, and by how much."""
    g, gdot = closure_residuals(model, q0, u0, fidelity)
    vtol = CLOSURE_TOL * max(1.0, float(np.max(np.abs(u0), initial=0.0)))
    k = 0
    bad = []
    for c in model.constraints:
        rows = slice(k, k + c.n_rows)
        k += c.n_rows
        eg, ev = float(np.max(np.abs(g[rows]))), float(np.max(np.abs(gdot[rows])))
        if eg > CLOSURE_TOL or ev > vtol:
            bad.append(f"{c.name!r} by {eg:.3g} (position) and {ev:.3g} (velocity)")
    if bad:
        raise ValueError("q0, u0 violate the loop closures " + "; ".join(bad) + f" (tolerance "
                         f"{CLOSURE_TOL:g}); flexdyn.assemble(model, q0, u0) gives a state "
                         "that satisfies them")


def _compiled_derivative(model: Model, fidelity: str, method: str, backend: str,
                         n_extra: int, rate: float = CLOSURE_RATE) -> Callable | None:
    """``g(t, x, tau, f_ext) -> ẋ`` by one call of the engine's state derivative
    (:func:`flexdyn.engine.kernels.derivative_articulated`; for a closed chain
    :func:`flexdyn.engine.closure.closed_derivative` with Baumgarte's ``rate``) with
    ``n_extra`` (0 or 3) energy-balance integrands after ``[q̇; u̇]``, or None where the engine
    does not run this ``method``/``backend`` (a closed chain: the articulated method with a
    fidelity whose kernels have the deformed node frames).  A non-finite state or result
    raises ``_RhsFailure`` (so do redundant or locked closures, named), a singular
    inertia ``SingularInertiaError``."""
    if backend != "engine" or method not in DERIVATIVE_METHODS:
        return None
    closed = bool(model.constraints)
    if closed and not (method == "articulated" and closures_on_engine(model, fidelity, backend)):
        return None
    engine = cached_engine(model, fidelity)
    nx = model.nq + model.nu
    no_wrenches = np.zeros((model.n_bodies, 6))

    def g(t: float, x: np.ndarray, tau: np.ndarray, f_ext: np.ndarray | None) -> np.ndarray:
        out = np.empty(nx + n_extra)
        tau = np.ascontiguousarray(tau, dtype=float)
        if not tau.flags.writeable:  # a constant τ is kept read-only, a type the entry is
            tau = tau.copy()  # not compiled for (it would compile a second specialization)
        args = (np.ascontiguousarray(x[:nx], dtype=float), tau,
                no_wrenches if f_ext is None else np.ascontiguousarray(f_ext, dtype=float))
        if closed:
            status = engine.closed_derivative_status(*args, rate, out)
            if status == SINGULAR:  # the reference names the closures
                q, u = unpack_state(model, x[:nx])
                _closed(model, t, _normalized(model, q), u, np.zeros(model.nu), fidelity,
                        "reference", rate)
                raise _RhsFailure(t, "the closures are redundant or locked at this state (a "
                                     "pivot of Λ = J M⁻¹ Jᵀ vanishes)")
        else:
            status = engine.derivative_status(*args, method, out)
        if status == kernels.INVALID:
            raise _RhsFailure(t, "the state became non-finite")
        if status == kernels.OVERFLOW:
            raise _RhsFailure(t, "forward dynamics failed: the state derivative is not "
                                 "finite (the arithmetic overflowed)")
        return out

    return g


# ----------------------------------------------------------------------------------------------
# the ODE of simulate: loads, prescribed motion, the augmented state derivative
# ----------------------------------------------------------------------------------------------
def _nodal_forcing(value: Any) -> Callable | None:
    """``g(t, q, u) -> {(body, node): wrench}`` for None / a mapping / a callable (the
    wrenches are checked by :func:`flexdyn.dynamics.nodal_loads`)."""
    if value is None:
        return None
    if callable(value):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("f_nodes must be None, a mapping {(body, node): wrench (6,)} or a "
                         f"callable f_nodes(t, q, u) returning one, got {value!r}")
    loads = dict(value)
    return lambda t, q, u: loads


class PrescribedMotion:
    """Prescribed joint motion of :func:`simulate`: ``{body: f}`` with ``f(t) -> (q_j, u_j,
    u̇_j)`` of that body's joint; :attr:`mask` (nu,) marks the prescribed speeds."""

    def __init__(self, model: Model, prescribed: Any):
        if not isinstance(prescribed, Mapping) or not prescribed:
            raise ValueError("prescribed must be a non-empty mapping {body name: f(t) -> "
                             f"(q_j, u_j, udot_j)}}, got {prescribed!r}")
        self.mask = np.zeros(model.nu, dtype=bool)
        #: per driven body: (name, q slice, u slice, f)
        self.joints: list[tuple[str, slice, slice, Callable]] = []
        for name, f in prescribed.items():
            if name not in model.names:
                raise ValueError(f"prescribed: no body {name!r}; bodies are "
                                 f"{list(model.names)}")
            i = model.body_index(name)
            nqj, nuj = int(model.nq_joint[i]), int(model.nu_joint[i])
            if nuj == 0:
                raise ValueError(f"prescribed[{name!r}]: the joint of body {name!r} is fixed; "
                                 "it has no motion to prescribe")
            if not callable(f):
                raise ValueError(f"prescribed[{name!r}] must be a callable f(t) -> (q_j, u_j, "
                                 f"udot_j), got {f!r}")
            qs, us = int(model.q_start[i]), int(model.u_start[i])
            self.joints.append((name, slice(qs, qs + nqj), slice(us, us + nuj), f))
            self.mask[us:us + nuj] = True
        #: (nq + nu,) the prescribed entries of ``[q; u]``
        self.state_mask = np.concatenate([np.zeros(model.nq, dtype=bool), self.mask])
        for _, qs, _, _ in self.joints:
            self.state_mask[qs] = True

    def impose(self, t: float, q: np.ndarray, u: np.ndarray, at_start: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, u, u̇_K)``: copies of ``q``, ``u`` with the prescribed entries of time ``t``,
        and the prescribed accelerations (nu,) (zero elsewhere).  A function that returns
        the wrong shapes raises ``ValueError``, non-finite values ``_RhsFailure``
        (``ValueError`` ``at_start``), naming the body."""
        q, u = np.array(q, dtype=float), np.array(u, dtype=float)
        udot = np.zeros(u.size)
        for name, qs, us, f in self.joints:
            try:
                qj, uj, aj = f(t)
            except (TypeError, ValueError):
                raise ValueError(f"prescribed[{name!r}](t) must return a triple (q_j, u_j, "
                                 f"udot_j) at t = {t:.6g}") from None
            for what, value, target, part in (("q_j", qj, q, qs), ("u_j", uj, u, us),
                                               ("udot_j", aj, udot, us)):
                a = _motion_part(name, what, value, part.stop - part.start, t)
                if not _all_finite(a):
                    message = f"prescribed[{name!r}](t) returned a non-finite {what}"
                    if at_start:
                        raise ValueError(f"{message} at t = {t:.6g}")
                    raise _RhsFailure(t, message)
                target[part] = a
        return q, u, udot

    def motion(self, t: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
        """The histories ``q`` (nt, nq), ``u`` (nt, nu) with their prescribed entries."""
        q, u = q.copy(), u.copy()
        for k, tk in enumerate(t):
            q[k], u[k], _ = self.impose(float(tk), q[k], u[k])
        return q, u


def _motion_part(name: str, what: str, value: Any, n: int, t: float) -> np.ndarray:
    """One part of a prescribed motion as an array (n,), ``ValueError`` naming it."""
    try:
        a = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"prescribed[{name!r}](t) returned a {what} that is not numeric at "
                         f"t = {t:.6g}: {value!r}") from None
    if a.shape != (n,):
        raise ValueError(f"prescribed[{name!r}](t) returned {what} of shape {a.shape} at "
                         f"t = {t:.6g}, expected ({n},)")
    return a


class _Loads(NamedTuple):
    """The state and applied loads at one time: ``q``, ``u`` with the prescribed entries,
    ``tau`` (nu,) the applied generalized forces, ``f_ext`` (n_bodies, 6) or None the wrenches
    at the body origins (nodal loads' rigid parts included), ``g`` (nu,) or None the nodal
    loads' modal generalized forces, ``udot_known`` (nu,) or None the prescribed
    accelerations."""

    q: np.ndarray
    u: np.ndarray
    tau: np.ndarray
    f_ext: np.ndarray | None
    g: np.ndarray | None
    udot_known: np.ndarray | None


class _Ode:
    """The augmented ODE of :func:`simulate`, ``ẋ = f(t, x)`` with ``x = [q; u; W_τ, W_ext,
    D]`` (module docstring), for the applied loads ``tau_fn``, ``fext_fn``, ``nodes_fn``
    (each ``(t, q, u) -> value`` or None) and the prescribed motion ``drive`` (or None).

    Without prescribed motion, on the engine each evaluation is one compiled call
    (``_compiled_derivative``); prescribed motion takes :func:`hybrid_dynamics`."""

    def __init__(self, model: Model, fidelity: str, method: str, backend: str,
                 tau_fn: Callable | None, fext_fn: Callable | None, nodes_fn: Callable | None,
                 drive: PrescribedMotion | None, closure_rate: float = CLOSURE_RATE):
        self.model, self.fidelity, self.method, self.backend = model, fidelity, method, backend
        self.tau_fn, self.fext_fn, self.nodes_fn, self.drive = tau_fn, fext_fn, nodes_fn, drive
        self.closure_rate = closure_rate
        self.derivative = (None if drive is not None else
                           _compiled_derivative(model, fidelity, method, backend, _N_EXTRA,
                                                closure_rate))
        #: no loads that depend on the state: the compiled derivative alone
        self.unforced = (self.derivative is not None and tau_fn is None and fext_fn is None
                         and nodes_fn is None)
        self.damped = [i for i, b in enumerate(model.bodies) if b.n_modes and np.any(b.C)]
        self.zeros_tau = np.zeros(model.nu)
        #: the solver settings recorded in the results (:attr:`SimulationResult.settings`)
        self.settings: dict[str, Any] | None = None

    def loads(self, t: float, x: np.ndarray) -> _Loads:
        """The state (quaternions normalised, prescribed entries imposed) and the loads at
        ``(t, x)``."""
        model = self.model
        nq, nu = model.nq, model.nu
        if not _all_finite(x):
            raise _RhsFailure(t, "the state became non-finite")
        q, u, udot_known = x[:nq], x[nq:nq + nu], None
        if self.drive is not None:
            q, u, udot_known = self.drive.impose(t, q, u)
        q = _normalized(model, q)
        tau = self.zeros_tau if self.tau_fn is None else self.tau_fn(t, q, u)
        f_ext = None if self.fext_fn is None else self.fext_fn(t, q, u)
        g = None
        if self.nodes_fn is not None:
            pos, _ = state_terms(model, q, None, self.fidelity)
            f_nodes, g = nodal_loads(model, pos, self.nodes_fn(t, q, u))
            f_ext = f_nodes if f_ext is None else f_ext + f_nodes
        return _Loads(q, u, tau, f_ext, g, udot_known)

    def accelerations(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                      f_ext: np.ndarray | None, udot_known: np.ndarray | None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``(u̇, T)``: the accelerations and the generalized forces that act (``tau``, with the
        prescribed joints' loads in their entries); one state or a batch."""
        if self.model.constraints:
            if q.ndim == 1:
                return self.closed_state(0.0, q, u, tau, f_ext, udot_known)[:2]
            rows = [self.closed_state(0.0, *x, f_ext, None if udot_known is None else k)[:2]
                    for *x, k in zip(q, u, tau, udot_known if udot_known is not None
                                     else q, strict=True)]
            return tuple(np.array(part) for part in zip(*rows, strict=True))
        if self.drive is None:
            return forward_dynamics(self.model, q, u, tau, method=self.method,
                                    fidelity=self.fidelity, f_ext=f_ext,
                                    backend=self.backend), tau
        return hybrid_dynamics(self.model, q, u, tau, udot_known, self.drive.mask,
                               fidelity=self.fidelity, f_ext=f_ext, backend=self.backend)

    def __call__(self, t: float, x: np.ndarray) -> np.ndarray:
        """``ẋ`` (nq + nu + 3,)."""
        if self.unforced:
            return _failing(self.derivative, t, x, self.zeros_tau, None)
        model = self.model
        nq, nu = model.nq, model.nu
        s = self.loads(t, x)
        tau = s.tau if s.g is None else s.tau + s.g
        if self.derivative is not None:
            out = _failing(self.derivative, t, x, tau, s.f_ext)
        else:
            try:
                udot, T = self.accelerations(s.q, s.u, tau, s.f_ext, s.udot_known)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                raise _RhsFailure(t, f"forward dynamics failed: {exc}") from exc
            out = np.empty(nq + nu + _N_EXTRA)
            out[:nq] = model.qdot(s.q, s.u)
            out[nq:nq + nu] = udot
            out[nq + nu] = motor_torques(model, T) @ s.u
            out[nq + nu + 1] = (0.0 if s.f_ext is None else sum(
                fi @ Vi for fi, Vi in zip(s.f_ext, _body_twists(model, s.q, s.u, self.fidelity),
                                          strict=True)))
            out[nq + nu + 2] = sum(model.eta_dot(s.u, i) @ model.bodies[i].C
                                   @ model.eta_dot(s.u, i) for i in self.damped
                                   ) + joint_dissipation(model, s.q, s.u)
        if s.g is not None:  # the nodal loads' modal power is external work, not τ's
            p = s.g @ s.u
            out[nq + nu] -= p
            out[nq + nu + 1] += p
        return out

    def closed_state(self, t: float, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None, udot_known: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(u̇, τ, λ, g)`` of a closed chain at one state, with the prescribed motion where
        there is one (:func:`flexdyn.dynamics.closed_hybrid`) and Baumgarte's rate; ``g``
        the closure residuals."""
        if self.drive is None:
            udot, lam, g = self.closed(t, q, u, self.tree(q, u, tau, f_ext))
            return udot, tau, lam, g
        try:
            udot, T, lam, terms = closed_hybrid(self.model, q, u, tau, udot_known,
                                                self.drive.mask, self.fidelity, f_ext, None,
                                                self.backend, self.closure_rate)
        except ClosureError as exc:
            raise _RhsFailure(t, str(exc)) from exc
        return udot, T, lam, terms.g

    def tree(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
             f_ext: np.ndarray | None) -> np.ndarray:
        """The tree's accelerations ``u̇_f`` (closures left out) at one state."""
        return tree_forward_dynamics(self.model, q, u, tau, self.method, self.fidelity, f_ext,
                                     None, self.backend)

    def closed(self, t: float, q: np.ndarray, u: np.ndarray, udot_tree: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(u̇, λ, g)`` of the closed chain from the tree's accelerations
        (``_closed``)."""
        return _closed(self.model, t, q, u, udot_tree, self.fidelity, self.backend,
                       self.closure_rate)

    def histories(self, t: np.ndarray, y: np.ndarray,
                  partial: bool = False) -> dict[str, np.ndarray | None]:
        """The :class:`SimulationResult` histories of the samples ``y`` (nt, nx) at ``t``:
        ``q`` (normalised, prescribed entries imposed), ``u``, ``tau`` (the applied forces;
        at prescribed entries the realised loads), ``udot`` and ``f_ext`` (nt, n_bodies, 6,
        nodal loads' rigid parts included; None without external wrenches).  For the
        ``partial`` result of a failed run, where the accelerations cannot be evaluated at
        every sample: ``udot`` None and the realised loads NaN."""
        model = self.model
        nq, nu = model.nq, model.nu
        q = np.array([_normalized(model, row) for row in y[:, :nq]]).reshape(-1, nq)
        u = np.ascontiguousarray(y[:, nq:nq + nu])
        if self.drive is not None:
            q, u = self.drive.motion(t, q, u)
        try:
            return self._histories(t, q, u)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            if not partial:
                raise
            tau = np.array([self.loads(float(tk), np.concatenate([qk, uk])).tau
                            for tk, qk, uk in zip(t, q, u, strict=True)]).reshape(-1, nu)
            if self.drive is not None:
                tau[:, self.drive.mask] = np.nan
            return {"q": q, "u": u, "tau": tau, "udot": None, "f_ext": None}

    def _histories(self, t: np.ndarray, q: np.ndarray, u: np.ndarray) -> dict:
        """:meth:`histories` once ``q`` and ``u`` are known."""
        model = self.model
        nu = model.nu
        if not t.size:
            empty = {"constraint_forces": np.zeros((0, model.n_constraints)),
                     "closure_drift": np.zeros((0, model.n_constraints))}
            return {"q": q, "u": u, "tau": np.zeros((0, nu)), "udot": np.zeros((0, nu)),
                    "f_ext": None, **(empty if model.constraints else {})}
        rows = []
        for tk, qk, uk in zip(t, q, u, strict=True):
            s = self.loads(float(tk), np.concatenate([qk, uk]))
            tau = s.tau if s.g is None else s.tau + s.g
            closure = None
            if model.constraints:
                udot, T, lam, g = self.closed_state(float(tk), s.q, s.u, tau, s.f_ext,
                                                    s.udot_known)
                closure = (lam, g)
            elif self.derivative is not None:  # the entry the integration compiled
                udot = self.derivative(float(tk), np.concatenate([s.q, s.u]), tau,
                                       s.f_ext)[model.nq:model.nq + nu]
                T = tau
            else:
                udot, T = self.accelerations(s.q, s.u, tau, s.f_ext, s.udot_known)
            rows.append((udot, T if s.g is None else T - s.g, s.f_ext, closure))
        udot, tau, f_ext, closure = zip(*rows, strict=True)
        out = {"q": q, "u": u, "tau": np.array(tau), "udot": np.array(udot),
               "f_ext": None if f_ext[0] is None else np.array(f_ext)}
        if model.constraints:
            out["constraint_forces"], out["closure_drift"] = (np.array(a) for a in
                                                              zip(*closure, strict=True))
        return out


# ----------------------------------------------------------------------------------------------
# simulate
# ----------------------------------------------------------------------------------------------
def simulate(
    model: Model,
    q0: np.ndarray | None = None,
    u0: np.ndarray | None = None,
    t_span: tuple[float, float] = (0.0, 1.0),
    *,
    tau: Any = None,
    fidelity: str = DEFAULT_FIDELITY,
    method: str = "articulated",
    rtol: float | None = None,
    atol: float | None = None,
    t_eval: np.ndarray | None = None,
    integrator: str | type = "auto",
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
    t_span : ``(t0, t1)`` with ``t1 > t0`` (s).
    tau : generalized forces in the layout of ``u``: None (zero), a constant array (nu,),
        a callable ``tau(t, q, u) -> (nu,)`` or a function of time alone,
        :func:`flexdyn.of_time` ``(f)`` with ``f(t) -> (nu,)`` (joint torques/forces; modal
        slots are external modal forces, usually 0).
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    method : ``"articulated"``, ``"articulated-split"`` or ``"composite"`` forward dynamics.
    rtol, atol : solver tolerances (``atol`` also applies to the work integrals, in J);
        default (None): :data:`DEFAULT_TOLERANCES` of the error norm, ``1e-6`` and ``1e-7``
        for ``"radau-iia"`` in displacements (its errors lie near the tolerance), ``1e-8``
        and ``1e-10`` otherwise (the state norm's errors lie below it).
    t_eval : times at which to store the solution (sorted, inside ``t_span``); default: the
        solver's steps.
    integrator : ``"auto"`` (default: :func:`auto_integrator` chooses ``"radau-iia"`` with
        ``error_norm="displacement"`` where it integrates exactly the problem given — a
        model with elastic coordinates whose coordinates are their own rates, the engine
        backend, ``method="articulated"``, ``tau`` and ``f_ext`` none, constant or functions
        of time (:func:`flexdyn.of_time`), no loop closures, prescribed motion or nodal
        loads — and ``"DOP853"`` otherwise; the result's ``settings["integrator"]`` names
        the choice), ``"rk4"`` (classical
        Runge–Kutta with the fixed step ``h``, :class:`flexdyn.integrators.RK4`: the
        integrator of :class:`flexdyn.Stepper`), a
        :func:`scipy.integrate.solve_ivp` method name (``"DOP853"``, ``"RK45"``,
        ``"Radau"``, ``"BDF"``, ``"LSODA"``, …), an ``OdeSolver`` subclass, or
        ``"generalized-alpha"``: the compiled generalized-α method of
        :mod:`flexdyn.engine.galpha` (Chung & Hulbert 1993 in Arnold & Brüls' form), or
        ``"gauss-legendre"``: the compiled two-stage Gauss–Legendre collocation (fourth
        order, A-stable, no numerical damping; fixed steps ``h``), or ``"radau-iia"``: the
        compiled three-stage Radau IIA collocation (fifth order, L-stable: unresolved
        stiff modes are damped; the method, error estimate and step control of scipy's
        ``"Radau"``, adaptive or with a fixed ``h``), for
        models whose coordinates are their own rates (``q̇ = u``: every joint's
        :attr:`~flexdyn.joints.Joint.rates`; others raise ``ValueError``); see
        ``_generalized_alpha`` for their step control, forces and outputs.  They ignore
        ``method`` and need ``backend="engine"``; with ``events`` they are called once per
        step, and the zeros are located on their steps' cubic Hermite interpolation.
    max_step : largest step (s).
    progress : show a progress bar (needs ``tqdm``; silently off without it).
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
    h : ``"generalized-alpha"``: a fixed step (s; the span is cut into
        ``ceil((t1 − t0)/h)`` equal steps, no error control); default None: adaptive steps
        controlled by ``rtol``, ``atol`` (and at most ``max_step``); the same for
        ``"radau-iia"``.  ``"rk4"`` and ``"gauss-legendre"``: their step (required; the span
        is cut the same way).
    rho_inf : ``"generalized-alpha"`` only: the spectral radius ``ρ∞`` at infinite
        ``ω h``, in [0, 1] (default 0.9, as Exudyn's; 1: no numerical damping).
    newton_tol : the compiled integrators: the Newton iteration stops when its
        correction of the accelerations is at most ``newton_tol · max(1, max|u̇|)``
        (default 1e-6); ``"radau-iia"``: when its estimated distance to the solution, in
        the stage states scaled by ``atol + rtol |x|``, is below ``newton_tol`` (default
        ``min(0.03, √rtol)``, at least ``10 ε/rtol``; RADAU5's).
    error_norm : ``"radau-iia"`` only: the norm in which its error estimate and Newton
        corrections are measured (``_generalized_alpha``): ``"state"`` (the default of a
        named ``"radau-iia"``; scipy's ``"Radau"``) or ``"displacement"`` (speeds by the
        displacement they make over a step; ``"auto"``'s choice).
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
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a flexdyn Model, got {type(model).__name__}")
    check_fidelity(fidelity)
    _check_choice(method, tuple(FORWARD_METHODS), "method")
    _check_choice(backend, BACKENDS, "backend")
    nq, nu = model.nq, model.nu
    if (isinstance(q0, tuple) and len(q0) == 2 and nq != 2
            and all(isinstance(v, (int, float)) for v in q0)):
        raise ValueError(f"q0 = {q0!r} has 2 entries, the model {nq}: did you mean "
                         f"t_span={q0!r}? (simulate(model, q0, u0, t_span) — or pass it by "
                         "keyword)")
    q0 = model.neutral_configuration() if q0 is None else _vector(q0, nq, "q0")
    for i, j in enumerate(model.joints):
        if j.quaternion:
            s = int(model.q_start[i])
            if np.linalg.norm(q0[s:s + 4]) < 1e-12:
                raise ValueError(f"q0: the quaternion of body {model.names[i]!r} is zero")
    q0 = _normalized(model, q0)
    u0 = np.zeros(nu) if u0 is None else _vector(u0, nu, "u0")
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair (t0, t1), got {t_span!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise ValueError(f"t_span must be finite with t1 > t0, got {t_span!r}")
    galpha_options = {"h": h, "rho_inf": rho_inf, "newton_tol": newton_tol,
                      "error_norm": error_norm}
    if isinstance(integrator, str) and integrator == AUTO:
        given = [k for k, v in galpha_options.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: options of a chosen integrator; with "
                             f"integrator='auto' name it (e.g. integrator={RADAU_IIA!r})")
        integrator, error_norm = auto_integrator(model, backend=backend, method=method,
                                                 tau=tau, f_ext=f_ext, prescribed=prescribed,
                                                 f_nodes=f_nodes)
        galpha_options["error_norm"] = error_norm
    rtol0, atol0 = DEFAULT_TOLERANCES["displacement" if error_norm == "displacement"
                                      else "state"]
    rtol = rtol0 if rtol is None else rtol
    atol = atol0 if atol is None else atol
    for name, val in (("rtol", rtol), ("atol", atol)):
        if not (isinstance(val, (int, float, np.floating)) and val > 0 and math.isfinite(val)):
            raise ValueError(f"{name} must be a positive number, got {val!r}")
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
    if isinstance(integrator, str):
        _check_choice(integrator, (AUTO, *_INTEGRATORS, *FIXED_STEP, *COMPILED_INTEGRATORS),
                      "integrator")
    elif not (isinstance(integrator, type) and issubclass(integrator, scipy.integrate.OdeSolver)):
        raise ValueError(f"integrator must be one of "
                         f"{(AUTO, *_INTEGRATORS, *FIXED_STEP, *COMPILED_INTEGRATORS)} or a "
                         f"scipy.integrate.OdeSolver subclass, got {integrator!r}")
    fixed = integrator in FIXED_STEP
    if fixed and h is None:
        raise ValueError(f"integrator={integrator!r} needs the step h (s)")
    compiled = integrator in COMPILED_INTEGRATORS
    if not compiled:
        given = [k for k, v in galpha_options.items() if v is not None and not
                 (fixed and k == "h")]
        if given:
            raise ValueError(f"{', '.join(given)}: options of the compiled integrators "
                             f"{COMPILED_INTEGRATORS}, not of {integrator!r}")
    rate = _closure_rate(closure_rate)
    if model.constraints and compiled:
        raise ValueError(f"integrator={integrator!r}: not supported yet for a model with "
                         f"loop closures ({', '.join(c.name for c in model.constraints)})")
    drive = None if prescribed is None else PrescribedMotion(model, prescribed)
    if drive is not None:
        q0, u0, _ = drive.impose(t0, q0, u0, at_start=True)
        q0 = _normalized(model, q0)
    if model.constraints:
        _check_closures(model, q0, u0, fidelity)
    ode = _Ode(model, fidelity, method, backend, _forcing(tau, (nu,), "tau"),
               _forcing(f_ext, (model.n_bodies, 6), "f_ext"), _nodal_forcing(f_nodes), drive,
               rate)
    ode.settings = {
        "integrator": integrator if isinstance(integrator, str) else integrator.__name__,
        "t_span": [t0, t1], "rtol": rtol, "atol": atol,
        "max_step": None if math.isinf(max_step) else max_step, "h": h, "rho_inf": rho_inf,
        "newton_tol": newton_tol, "error_norm": error_norm, "method": method,
        "fidelity": fidelity, "backend": backend,
        "closure_rate": rate, "prescribed": sorted(prescribed) if prescribed else [],
        "tau": _load_kind(tau), "f_ext": _load_kind(f_ext)}
    watch = _Events.of(events, model, t0, np.concatenate([q0, u0]))
    try:  # validate the callables' shapes before integrating
        ode.loads(t0, np.concatenate([q0, u0]))
    except _RhsFailure as exc:
        raise SimulationError(f"simulation failed at t = {t0:.6g} s: {exc.message}",
                              t0, exc.message) from None

    if compiled:
        unsupported = [name for name, value in (("prescribed", prescribed),
                                                ("f_nodes", f_nodes)) if value is not None]
        if unsupported:
            raise ValueError(f"{', '.join(unsupported)}: not supported by "
                             f"integrator={integrator!r}")
        if backend != "engine":
            raise ValueError(f"integrator={integrator!r} runs on backend='engine' only")
        options = _galpha_options(model, integrator, **galpha_options)
        return _generalized_alpha(ode, q0, u0, t0, t1, tau, f_ext, rtol, atol, t_eval,
                                  max_step, progress, events=watch, **options)

    bar = _progress_bar(t0, t1) if progress else None
    t_last = [t0]

    def f(t: float, x: np.ndarray) -> np.ndarray:
        out = ode(t, x)
        if bar is not None and t > t_last[0]:
            bar.update(min(t, t1) - t_last[0])
            t_last[0] = min(t, t1)
        return out

    x0 = np.concatenate([q0, u0, np.zeros(_N_EXTRA)])
    solver_cls = _solver_class(integrator)
    wall = time.perf_counter()
    samples = _Samples(t0, x0, t_eval, watch)
    failure: tuple[float, str, BaseException | None] | None = None
    solver = None
    blas = _single_blas_thread()
    try:
        options = {"h": h} if fixed else {}
        if issubclass(solver_cls, _IMPLICIT):
            options["jac"] = _jacobian(ode)
        solver = solver_cls(f, t0, x0, t1, rtol=rtol, atol=atol, max_step=max_step, **options)
        message = samples.run(solver)
        if solver.status == "failed":
            failure = (float(solver.t), message, None)
    except _RhsFailure as exc:
        failure = (exc.t, exc.message, exc.__cause__)
        t_last = samples.pending_before(exc.t)
        if solver is not None and t_last is not None:
            # the failed step may have spanned samples before the failure: integrate afresh
            # from the last accepted step up to them
            try:
                samples.run(solver_cls(f, solver.t, solver.y, t_last, rtol=rtol, atol=atol,
                                       max_step=max_step, **options), watch=False)
            except _RhsFailure:
                pass
    finally:
        blas.restore_original_limits()
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - wall

    def result(t: np.ndarray, y: np.ndarray) -> SimulationResult:
        return _result(ode, t, y, partial=failure is not None,
                       nfev=0 if solver is None else int(solver.nfev), wall_time=wall,
                       message=("failed" if failure else "a terminal event occurred"
                                if samples.stopped else "the integration reached t1"),
                       **({} if watch is None else watch.results(model)))

    t_out, y_out = samples.arrays(nq + nu + _N_EXTRA)
    if solver is not None and isinstance(integrator, str) and not fixed:
        _warn_if_stiff(model, integrator, q0, fidelity, t0, float(solver.t), samples.steps)
    if failure is not None:
        t_fail, message, cause = failure
        raise SimulationError(f"simulation failed at t = {t_fail:.6g} s: {message}", t_fail,
                              message, partial=result(t_out, y_out)) from cause
    return result(t_out, y_out)


def _result(ode: _Ode, t: np.ndarray, y: np.ndarray, partial: bool = False,
            **stats: Any) -> SimulationResult:
    """The :class:`SimulationResult` of the samples ``y`` (nt × (nq + nu + 3): ``[q; u]`` and
    the work integrals) at the times ``t``, with the histories of :meth:`_Ode.histories`;
    ``stats`` (``nfev``, ``wall_time``, ``message``, the events) passed on."""
    n = ode.model.nq + ode.model.nu
    try:
        histories = ode.histories(t, y, partial)
    except _RhsFailure as exc:
        raise SimulationError(f"at t = {exc.t:.6g} s: {exc.message}", exc.t,
                              exc.message) from None
    return SimulationResult(
        t=t, model=ode.model, fidelity=ode.fidelity, method=ode.method,
        work=y[:, n].copy(), external_work=y[:, n + 1].copy(), dissipation=y[:, n + 2].copy(),
        settings=ode.settings, **histories, **stats)


# ----------------------------------------------------------------------------------------------
# generalized-α
# ----------------------------------------------------------------------------------------------
#: the most Newton iterations of one try of the generalized-α step
_MAX_NEWTON = 8
#: samples per output buffer when every step is recorded (adaptive steps, no ``t_eval``)
_CHUNK = 4096
#: step tries per compiled call while a progress bar is shown
_TRIES_PER_UPDATE = 256


class StiffnessWarning(RuntimeWarning):
    """An explicit integrator's steps were limited by the stability of the stiffest elastic
    mode rather than by accuracy (:func:`simulate`)."""


#: runs shorter than this many steps are not examined for stiffness
STIFF_MIN_STEPS = 500
#: mean steps above this fraction of the stability limit count as limited by it
STIFF_FRACTION = 0.4


def _warn_if_stiff(model: Model, integrator: str, q0: np.ndarray, fidelity: str, t0: float,
                   t_end: float, steps: int) -> None:
    """Warn (:class:`StiffnessWarning`) when an explicit integrator of
    :data:`flexdyn.stability.STABILITY_TABLEAUX` took at least :data:`STIFF_MIN_STEPS`
    accepted steps whose mean is above :data:`STIFF_FRACTION` of the stability limit of the
    highest assembled frequency at ``q0`` (:func:`flexdyn.modal.highest_frequency`; one
    eigenproblem, small beside such a run): steps that cannot grow past that limit,
    whatever the tolerances."""
    if integrator not in STABILITY_TABLEAUX or steps < STIFF_MIN_STEPS:
        return
    try:
        omega = highest_frequency(model, q0, fidelity)
    except ValueError:  # no modal analysis (a degree of freedom without inertia): no advice
        return
    h_mean = (t_end - t0) / steps
    h_stable = step_limit(integrator, np.array([1j * omega]))
    if omega > 0.0 and h_mean >= STIFF_FRACTION * h_stable:
        warnings.warn(
            f"{integrator} took {steps} steps of {h_mean:.2g} s on average: its steps are "
            f"limited by the stability of the stiffest mode ({omega / (2 * np.pi):.4g} Hz; "
            f"stable steps below about {h_stable:.2g} s), not by accuracy.  Use an implicit "
            "integrator (integrator='radau-iia', 'generalized-alpha', or 'gauss-legendre' "
            "with a step h), fewer modes, or a softer model; flexdyn.max_stable_step(model, "
            "integrator) gives the limit at a state",
            StiffnessWarning, stacklevel=3)


def _solver_class(integrator: str | type) -> type:
    """The :class:`scipy.integrate.OdeSolver` of a checked ``integrator``: a fixed-step one
    of :data:`flexdyn.integrators.FIXED_STEP`, a scipy method by name, or the class given."""
    if not isinstance(integrator, str):
        return integrator
    return FIXED_STEP[integrator] if integrator in FIXED_STEP else getattr(scipy.integrate,
                                                                           integrator)


def auto_integrator(model: Model, *, backend: str = "engine", method: str = "articulated",
                    tau: Any = None, f_ext: Any = None,
                    prescribed: Mapping[str, Callable] | None = None,
                    f_nodes: Any = None) -> tuple[str, str | None]:
    """The integrator and error norm that :func:`simulate`'s ``integrator="auto"`` runs:
    ``("radau-iia", "displacement")`` or ``("DOP853", None)``.

    Radau IIA in displacements (``_generalized_alpha``) where it integrates exactly the
    problem given and the problem is stiff:

    * the model has elastic coordinates (its modes make it stiff; a rigid model is not, and
      DOP853's eighth order serves it best);
    * its coordinates are their own rates (``q̇ = u``: no quaternion or quasi-velocity
      joint), and it has no loop closures;
    * ``backend="engine"`` and ``method="articulated"`` (the compiled integrators' forward
      dynamics);
    * ``tau`` and ``f_ext`` are None, constant or functions of time
      (:func:`flexdyn.loads.of_time`): another callable is evaluated there once per try at
      predicted stage states and held during the iteration, so a state feedback's error
      would lie outside the error estimate; it gets DOP853;
    * no ``prescribed`` motion and no ``f_nodes``.

    DOP853 otherwise.  At :data:`DEFAULT_TOLERANCES` the choice puts the tip of the 5-beam
    chain of ``docs/simulation-performance.md`` within 1e-6 m in a fraction of DOP853's
    time; being L-stable, it damps the modes that the tolerance does not resolve rather than
    following them."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a flexdyn Model, got {type(model).__name__}")
    radau = (int(np.sum(model.n_modes)) > 0 and all(j.rates for j in model.joints)
             and not model.constraints and backend == "engine" and method == "articulated"
             and _load_kind(tau) != "callable" and _load_kind(f_ext) != "callable"
             and prescribed is None
             and f_nodes is None)
    return (RADAU_IIA, "displacement") if radau else ("DOP853", None)


def _galpha_options(model: Model, integrator: str, h: Any, rho_inf: Any,
                    newton_tol: Any, error_norm: Any = None) -> dict:
    """The checked options of a compiled integrator (:data:`COMPILED_INTEGRATORS`; defaults
    filled in, and its ``scheme``); ``ValueError`` naming the option, or the quaternion
    joints of a model whose coordinates are not their own rates."""
    joints = [model.names[i] for i, j in enumerate(model.joints) if not j.rates]
    if joints:
        raise ValueError(f"integrator={integrator!r} integrates models whose coordinates "
                         f"are their own rates (q̇ = u); the joints of {joints} are not "
                         "(quaternions or quasi-velocities; use a scipy integrator, e.g. "
                         "'DOP853' or 'Radau')")

    def number(value: Any, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise ValueError(f"{name} must be a number, got {value!r}")
        return float(value)

    if h is not None:
        h = number(h, "h")
        if not (math.isfinite(h) and h > 0.0):
            raise ValueError(f"h must be a positive step size (s), got {h!r}")
    scheme = galpha.SCHEMES[integrator]
    if scheme == galpha.GAUSS_LEGENDRE and h is None:
        raise ValueError(f"integrator={integrator!r} takes fixed steps: give h (s)")
    if scheme != galpha.GENERALIZED_ALPHA and rho_inf is not None:
        raise ValueError(f"rho_inf: an option of integrator={GENERALIZED_ALPHA!r}, not of "
                         f"{integrator!r}")
    rho_inf = 0.9 if rho_inf is None else number(rho_inf, "rho_inf")
    if not 0.0 <= rho_inf <= 1.0:
        raise ValueError(f"rho_inf must lie in [0, 1], got {rho_inf!r}")
    if newton_tol is not None:
        newton_tol = number(newton_tol, "newton_tol")
        if not 0.0 < newton_tol < 1.0:
            raise ValueError(f"newton_tol must lie in (0, 1), got {newton_tol!r}")
    if scheme != galpha.RADAU_IIA and error_norm is not None:
        raise ValueError(f"error_norm: an option of integrator={RADAU_IIA!r}, not of "
                         f"{integrator!r}")
    error_norm = "state" if error_norm is None else error_norm
    _check_choice(error_norm, tuple(galpha.ERROR_NORMS), "error_norm")
    return {"h": h, "rho_inf": rho_inf, "newton_tol": newton_tol,
            "error_norm": galpha.ERROR_NORMS[error_norm], "scheme": scheme}


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
_LOOP_FAILURES = {
    galpha.NEWTON_FAILED: f"the Newton iteration did not converge in {_MAX_NEWTON} iterations "
                          "(a smaller h; generalized-alpha and radau-iia also take adaptive "
                          "steps: h=None)",
    galpha.STEP_TOO_SMALL: "the step size fell below the resolution of t",
    galpha.SINGULAR: "the iteration matrix (M + γ' C + β' K, or a collocation scheme's) is "
                     "singular (a degree of freedom without inertia?)",
    kernels.INVALID: "the state became non-finite (a smaller h; generalized-alpha and "
                     "radau-iia also take adaptive steps: h=None)"}


class _CompiledLoop:
    """The arrays that carry a compiled integrator (:func:`flexdyn.engine.galpha.
    generalized_alpha`) from call to call, set up at ``(q0, u0)`` at ``t0`` for a run to
    ``t1`` with the forces ``tau`` (nu,) and ``f_ext`` (n_bodies, 6) at ``t0`` (the initial
    acceleration and energy-balance integrands come from the compiled state derivative;
    ``_RhsFailure`` if it fails): ``c``, ``ctl``, ``s``, ``y`` (rows ``q, q̇, a, q̈, 0``;
    ``a`` and the last row are ``q⃛`` and ``q⁗`` for the collocation schemes), ``Mk``,
    ``S``, ``Jc``, ``piv``, ``pred`` and ``cnt`` in the layouts of
    :mod:`flexdyn.engine.galpha`.
    ``h`` None: adaptive steps; else ``ceil((t1 − t0)/h)`` equal steps."""

    def __init__(self, model: Model, fidelity: str, q0: np.ndarray, u0: np.ndarray, t0: float,
                 t1: float, tau: np.ndarray, f_ext: np.ndarray, *, scheme: int,
                 h: float | None, rho_inf: float, newton_tol: float | None,
                 error_norm: int, rtol: float, atol: float, max_step: float,
                 record_steps: bool):
        g, nu = galpha, model.nu
        self.engine = cached_engine(model, fidelity)
        xdot0 = _failing(_compiled_derivative(model, fidelity, "articulated", "engine",
                                              _N_EXTRA), t0, np.concatenate([q0, u0]), tau,
                         f_ext)
        self.y = np.zeros((5, nu))
        self.y[0], self.y[1] = q0, u0
        self.y[3] = xdot0[nu:2 * nu]
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
        s[g.P_TAU:g.P_TAU + 3] = xdot0[2 * nu:]
        self.Mk, self.S = np.zeros((nu, nu)), np.zeros((nu, nu))
        #: the stage times of the scheme's forces (:func:`flexdyn.engine.galpha.nodes`)
        self.nodes = g.nodes(scheme)
        k = nu if scheme != g.GENERALIZED_ALPHA else 0
        self.Jc, self.piv = np.zeros((k, k), dtype=complex), np.zeros((2, nu), dtype=np.int64)
        self.pred = np.empty((self.nodes.size, 1 + 2 * nu))
        self.cnt = np.zeros(g.N_COUNTERS, dtype=np.int64)

    def held(self, tau: np.ndarray, f_ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Forces ``tau`` (nu,) and ``f_ext`` (n_bodies, 6) held over a step, in the layout
        :meth:`run` takes: once per stage (:attr:`nodes`)."""
        k = self.nodes.size
        return np.tile(tau, k), np.tile(f_ext, (k, 1))

    def next_forces(self, forces: Callable) -> tuple[np.ndarray, np.ndarray]:
        """The forces of the next try, in the layout :meth:`run` takes:
        ``forces(t, q, u) -> (tau, f_ext)`` at the rows of :attr:`pred` (the compiled
        entry's): the scheme's stage times ``t + c_i h`` (:attr:`nodes`; generalized-α: the
        step's end) and the states predicted there, ``q + c_i h u + ½ (c_i h)² u̇``,
        ``u + c_i h u̇``."""
        nu = self.y.shape[1]
        at = [forces(p[0], p[1:1 + nu], p[1 + nu:]) for p in self.pred]
        return np.concatenate([a[0] for a in at]), np.concatenate([a[1] for a in at])

    def summary(self) -> str:
        """The counts of the run so far, for the result's message."""
        g, cnt = galpha, self.cnt
        name = next(k for k, v in g.SCHEMES.items() if v == self.ctl[g.SCHEME])
        return (f"{name}: {cnt[g.STEPS]} steps, {cnt[g.REJECTED]} rejected tries, "
                f"{cnt[g.ITERATIONS]} Newton iterations, {cnt[g.FACTORIZATIONS]} "
                "factorizations")

    def run(self, times: np.ndarray, tau: np.ndarray, f_ext: np.ndarray, out_t: np.ndarray,
            out_x: np.ndarray) -> int:
        """One call of the compiled entry (its status); the collocation schemes take
        ``tau`` and ``f_ext`` stacked per stage."""
        return galpha.generalized_alpha(*self.engine.packed, self.c, self.ctl, times, tau,
                                        f_ext, self.y, self.s, self.Mk, self.S, self.Jc,
                                        self.piv, out_t, out_x, self.pred, self.cnt)


def _generalized_alpha(ode: _Ode, q0: np.ndarray, u0: np.ndarray, t0: float, t1: float,
                       tau: Any, f_ext: Any, rtol: float, atol: float,
                       t_eval: np.ndarray | None, max_step: float, progress: bool, *,
                       h: float | None, rho_inf: float, newton_tol: float,
                       error_norm: int, scheme: int, events: _Events | None = None
                       ) -> SimulationResult:
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
      the same tolerances), with ``"displacement"`` it measures ``q`` and ``h u`` against
      ``atol + rtol |q|``: an error of the speeds by the displacement it makes over the
      step, as error estimators in structural dynamics measure displacements (Zienkiewicz &
      Xie 1991), and the Newton corrections alike.  In the state norm the speeds of lightly
      damped stiff modes, ``ω`` times their displacements, hold the step short; in
      displacements it follows what those modes move: 2.5–6 times fewer steps at the same
      tolerances on the problems of ``docs/simulation-performance.md``, with errors nearer
      the tolerances (the state norm's lie orders of magnitude below them there); at the
      same error 1.5–1.8 times less time on the 5-beam chain and the arm, about the same
      on the spin-up beam.
    * **Forces.** ``tau`` and ``f_ext`` None or constant arrays: the whole integration is one
      compiled call.  A callable ``tau(t, q, u)`` or ``f_ext(t, q, u)`` is evaluated in
      Python once per step try, at ``t_{n+1}`` and the predicted state
      ``q* = q + h u + ½ h² u̇``, ``u* = u + h u̇`` (exact for forces of ``t`` alone;
      second-order accurate for smooth state feedback), and held during the Newton
      iteration; the compiled entry is then called once per try.  The collocation schemes
      evaluate it at their stage times ``t_n + c_i h`` and the states predicted there
      the same way (their full order for forces of ``t`` alone).
    * **Outputs.** The ``t_eval`` samples by cubic Hermite interpolation on the step
      (``q`` from ``q, u`` at both ends, ``u`` from ``u, u̇``, the work integrals from their
      integrands at both ends; Gauss–Legendre's linearly), or every step.  ``nfev`` counts
      the inverse-dynamics evaluations; the message gives the steps, rejected tries, Newton
      iterations and factorizations of the iteration matrix.
    * **Events.** With ``events`` the compiled entry is called once per accepted step
      (:class:`_CompiledSteps`), and the events are located on that interpolation as with
      the scipy integrators (``_Events``)."""
    model, fidelity, tau_fn, fext_fn = ode.model, ode.fidelity, ode.tau_fn, ode.fext_fn
    nu = model.nu
    forced = callable(tau) or callable(f_ext)
    zeros_tau, no_wrenches = np.zeros(nu), np.zeros((model.n_bodies, 6))

    def forces(t: float, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (zeros_tau if tau_fn is None else np.array(tau_fn(t, q, u), dtype=float),
                no_wrenches if fext_fn is None else np.array(fext_fn(t, q, u), dtype=float))

    def failed(t: float, message: str, partial: SimulationResult | None = None,
               cause: BaseException | None = None) -> SimulationError:
        error = SimulationError(f"simulation failed at t = {t:.6g} s: {message}", t, message,
                                partial=partial)
        error.__cause__ = cause
        return error

    tau_t, fe = forces(t0, q0, u0)
    try:
        loop = _CompiledLoop(model, fidelity, q0, u0, t0, t1, tau_t, fe, scheme=scheme, h=h,
                             rho_inf=rho_inf, newton_tol=newton_tol, error_norm=error_norm,
                             rtol=rtol, atol=atol, max_step=max_step,
                             record_steps=t_eval is None)
    except _RhsFailure as exc:
        raise failed(t0, exc.message, cause=exc.__cause__) from exc.__cause__
    g = galpha
    ctl, s, cnt = loop.ctl, loop.s, loop.cnt
    tau_t, fe = loop.held(tau_t, fe)  # forces that vary are evaluated once paused
    if events is not None:
        return _compiled_with_events(ode, loop, events, t_eval, tau_t, fe,
                                     forces if forced else None, failed, progress)
    times = np.zeros(0) if t_eval is None else np.ascontiguousarray(t_eval)
    n_out = times.size if t_eval is not None else (
        int(ctl[g.N_FIXED]) if h is not None else _CHUNK)
    out_t, out_x = np.empty(n_out), np.empty((n_out, 2 * nu + _N_EXTRA))
    chunks = [] if t_eval is not None else [(np.array([t0]),
                                             np.concatenate([q0, u0, np.zeros(_N_EXTRA)])[None])]
    bar = _progress_bar(t0, t1) if progress else None
    ctl[g.MAX_TRIES] = 0 if forced else _TRIES_PER_UPDATE if bar is not None else -1
    wall = time.perf_counter()
    with _Attempt(bar) as attempt:
        while True:
            status = loop.run(times, tau_t, fe, out_t, out_x)
            if bar is not None:
                bar.update(s[g.T] - t0 - bar.n)
            if status == g.FULL:
                chunks.append((out_t[:cnt[g.N_OUT]].copy(), out_x[:cnt[g.N_OUT]].copy()))
                cnt[g.N_OUT] = 0
            elif status == g.PAUSED:
                if forced:
                    ctl[g.MAX_TRIES] = 1
                    tau_t, fe = loop.next_forces(forces)
            else:
                break
    wall = time.perf_counter() - wall
    failure = attempt.failure
    if failure is None and status != g.FINISHED:
        failure = (float(s[g.T]), _LOOP_FAILURES[status], None)
    chunks.append((out_t[:cnt[g.N_OUT]], out_x[:cnt[g.N_OUT]]))
    t_out = np.concatenate([t for t, _ in chunks])
    y_out = np.concatenate([x for _, x in chunks]).reshape(-1, 2 * nu + _N_EXTRA)
    partial = _result(ode, t_out, y_out, failure is not None, nfev=int(cnt[g.RESIDUALS]),
                      wall_time=wall, message=("failed" if failure else
                                               "the integration reached t1")
                      + f" ({loop.summary()})")
    if failure is not None:
        raise failed(failure[0], failure[1], partial, failure[2]) from failure[2]
    return partial


class _Attempt:
    """The span of a compiled integration loop: a ``_RhsFailure`` raised inside (a force
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
        if isinstance(exc, _RhsFailure):
            self.failure = (exc.t, exc.message, exc.__cause__)
            return True
        return False


class _CompiledSteps(scipy.integrate.OdeSolver):
    """A compiled integrator (:class:`_CompiledLoop`) behind scipy's ``OdeSolver``
    interface, one accepted step per :meth:`step` (its tries inside), so that
    :func:`simulate`'s samples and events (``_Samples``, ``_Events``) apply to it.  The state
    is ``x = [q; u; W_τ, W_ext, D]`` (the loop's ``q, q̇`` and work integrals), the dense
    output is the loop's interpolation on the step
    (:func:`flexdyn.engine.galpha.sample`).  ``forces(t, q, u) -> (tau, f_ext)``: forces
    evaluated before each try (:meth:`_CompiledLoop.next_forces`), or None when the loop's
    are held; ``bar``: a progress bar or None."""

    def __init__(self, loop: _CompiledLoop, x0: np.ndarray, t0: float, t1: float,
                 tau: np.ndarray, f_ext: np.ndarray, forces: Callable | None, bar: Any):
        super().__init__(_no_derivative, t0, x0, t1, vectorized=False)
        g = galpha
        self.loop, self.forces, self.bar = loop, forces, bar
        self.tau, self.f_ext = tau, f_ext
        self.out_t, self.out_x = np.empty(1), np.empty((1, x0.size))
        self.times = np.zeros(0)
        loop.ctl[g.RECORD_STEPS] = 1
        loop.ctl[g.MAX_TRIES] = 0
        loop.run(self.times, tau, f_ext, self.out_t, self.out_x)  # the first predictor
        loop.ctl[g.MAX_TRIES] = 1 if forces is not None else -1
        self.ends: tuple[np.ndarray, ...] = ()  # the last step's (y, s) at both ends

    def _step_impl(self) -> tuple[bool, str | None]:
        g, loop = galpha, self.loop
        y0, s0 = loop.y.copy(), loop.s.copy()
        steps = loop.cnt[g.STEPS]
        while loop.cnt[g.STEPS] == steps:
            loop.cnt[g.N_OUT] = 0
            if self.forces is not None:
                self.tau, self.f_ext = loop.next_forces(self.forces)
            status = loop.run(self.times, self.tau, self.f_ext, self.out_t, self.out_x)
            if status not in (g.FULL, g.PAUSED, g.FINISHED):
                return False, _LOOP_FAILURES[status]
        self.t, self.y = float(loop.s[g.T]), self.out_x[0].copy()
        self.nfev = int(loop.cnt[g.RESIDUALS])
        self.ends = (y0, s0, loop.y.copy(), loop.s.copy())
        if self.bar is not None:
            self.bar.update(self.t - self.t_old)
        return True, None

    def _dense_output_impl(self) -> scipy.integrate.DenseOutput:
        g = galpha
        y0, s0, y1, s1 = self.ends
        w = slice(g.W_TAU, g.W_TAU + 3)
        p = slice(g.P_TAU, g.P_TAU + 3)
        wq = np.array([s0[w], s1[w]])
        # Gauss–Legendre's integrands at the ends are not known: the step's mean at both
        start = s1 if self.loop.ctl[g.SCHEME] == g.GAUSS_LEGENDRE else s0
        pw = np.array([start[p], s1[p]])
        return _StepOutput(self.t_old, self.t, y0, y1, wq, pw)


class _StepOutput(scipy.integrate.DenseOutput):
    """The dense output of one step of :class:`_CompiledSteps`."""

    def __init__(self, t_old: float, t: float, y0: np.ndarray, y1: np.ndarray,
                 wq: np.ndarray, pw: np.ndarray):
        super().__init__(t_old, t)
        self.y0, self.y1, self.wq, self.pw = y0, y1, wq, pw

    def _call_impl(self, t: np.ndarray) -> np.ndarray:
        h = self.t - self.t_old
        theta = np.atleast_1d((t - self.t_old) / h).astype(float)
        out = np.empty((theta.size, 2 * self.y0.shape[1] + _N_EXTRA))
        galpha.sample(self.y0, self.y1, self.wq, self.pw, h, theta, out)
        return out[0] if np.ndim(t) == 0 else out.T


def _no_derivative(t: float, x: np.ndarray) -> np.ndarray:
    """The right-hand side :class:`_CompiledSteps` hands scipy's ``OdeSolver``, which never
    calls it (the compiled loop evaluates its own)."""
    raise NotImplementedError("the compiled integrators evaluate their own residuals")


def _compiled_with_events(ode: _Ode, loop: _CompiledLoop, events: _Events,
                          t_eval: np.ndarray | None, tau: np.ndarray, f_ext: np.ndarray,
                          forces: Callable | None, failed: Callable,
                          progress: bool) -> SimulationResult:
    """:func:`_generalized_alpha` with ``events``: the loop stepped by
    :class:`_CompiledSteps` through ``_Samples``, which records the samples and locates the
    events as for the scipy integrators; ``tau``, ``f_ext`` and ``forces`` as
    :class:`_CompiledSteps` takes them, ``failed(t, message, partial, cause)`` the error to
    raise."""
    g = galpha
    t0, t1 = float(loop.s[g.T]), float(loop.c[g.T_END])
    x0 = np.concatenate([loop.y[0], loop.y[1], np.zeros(_N_EXTRA)])
    bar = _progress_bar(t0, t1) if progress else None
    samples = _Samples(t0, x0, t_eval, events)
    wall = time.perf_counter()
    with _Attempt(bar) as attempt:
        solver = _CompiledSteps(loop, x0, t0, t1, tau, f_ext, forces, bar)
        message = samples.run(solver)
        if solver.status == "failed":
            attempt.failure = (float(solver.t), message, None)
    wall = time.perf_counter() - wall
    failure = attempt.failure
    t_out, y_out = samples.arrays(x0.size)
    outcome = ("failed" if failure else "a terminal event occurred" if samples.stopped
               else "the integration reached t1")
    result = _result(ode, t_out, y_out, failure is not None, nfev=int(loop.cnt[g.RESIDUALS]),
                     wall_time=wall, message=f"{outcome} ({loop.summary()})",
                     **events.results(ode.model))
    if failure is not None:
        raise failed(failure[0], failure[1], result, failure[2]) from failure[2]
    return result


@functools.cache
def _blas_controller() -> threadpoolctl.ThreadpoolController:
    """The process's threadpoolctl controller (it inspects the loaded libraries once)."""
    return threadpoolctl.ThreadpoolController()


def _single_blas_thread():
    """Limit the BLAS libraries (OpenBLAS, MKL, …) to one thread until the returned
    limiter's ``restore_original_limits()`` (threadpoolctl).  The integrators' LU
    factorizations and the reference path's products are of 6 × 6 … 100 × 100 matrices,
    which threads only slow down, badly so on a loaded machine (the spacecraft on the
    reference path: 0.48 s with OpenBLAS's default threads against 0.22 s with one, beside
    one busy process on 2 cores); the engine uses no BLAS.  The user's setting is restored
    when the integration ends."""
    return _blas_controller().limit(limits=1, user_api="blas")


#: integrators of :func:`scipy.integrate.solve_ivp` that take a Jacobian ``jac(t, x)``
_IMPLICIT = (scipy.integrate.Radau, scipy.integrate.BDF, scipy.integrate.LSODA)


def _jacobian(ode: _Ode) -> Callable:
    """``jac(t, x)`` (nx × nx) of the augmented state ``x = [q; u; W_τ, W_ext, D]`` for the
    implicit integrators: the rows of ``u̇`` by forward differences of the accelerations
    (:meth:`_Ode.accelerations`), every coordinate perturbed at once in one batched call (on
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


def _failing(derivative: Callable, t: float, x: np.ndarray, tau: np.ndarray,
             f_ext: np.ndarray | None) -> np.ndarray:
    """``derivative(t, x, tau, f_ext)``, a singular inertia reported as ``_RhsFailure``
    (as the reference path reports it)."""
    try:
        return derivative(t, x, tau, f_ext)
    except ValueError as exc:
        raise _RhsFailure(t, f"forward dynamics failed: {exc}") from exc


class _Events:
    """The events of :func:`simulate`: functions ``g(t, q, u)`` watched after every step,
    their zeros located on the step's dense output and recorded."""

    def __init__(self, functions: list, model: Model, t0: float, x0: np.ndarray):
        self.functions = functions
        self.nq, self.nu = model.nq, model.nu
        self.model = model
        self.terminal = [bool(getattr(g, "terminal", False)) for g in functions]
        self.direction = [float(getattr(g, "direction", 0.0)) for g in functions]
        self.values = self.evaluate(t0, x0)
        self.t: list[list[float]] = [[] for _ in functions]
        self.x: list[list[np.ndarray]] = [[] for _ in functions]

    @classmethod
    def of(cls, events: Any, model: Model, t0: float, x0: np.ndarray) -> _Events | None:
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
        v = self.functions[k](t, _normalized(self.model, x[:self.nq]),
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
        xs = [np.array(x, dtype=float).reshape(-1, nq + nu + _N_EXTRA) for x in self.x]
        return {"t_events": [np.array(t, dtype=float) for t in self.t],
                "q_events": [np.array([_normalized(model, r) for r in x[:, :nq]]).reshape(-1, nq)
                             for x in xs],
                "u_events": [x[:, nq:nq + nu].copy() for x in xs]}


class _Samples:
    """The output samples of an integration: every step (no ``t_eval``) or the ``t_eval``
    times passed so far, from the solver's dense output; ``events`` (or None) watched after
    every step."""

    def __init__(self, t0: float, x0: np.ndarray, t_eval: np.ndarray | None,
                 events: _Events | None = None):
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


def _progress_bar(t0: float, t1: float):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=t1 - t0, unit="s", desc="simulate",
                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]")


# ----------------------------------------------------------------------------------------------
# co-simulation: a stateful stepper
# ----------------------------------------------------------------------------------------------
class Stepper:
    """A model as a co-simulation component: a state advanced by macro steps ``dt`` with
    its inputs held over each step (zero-order hold), and named outputs — the shape of an FMI
    co-simulation slave (:mod:`flexdyn.fmu`).

    Each :meth:`step` integrates the equations of :func:`simulate` (the same augmented state
    with the work integrals of the energy balance, the same prescribed motion) from ``t`` to
    ``t + dt``: with ``integrator="rk4"`` in ``substeps`` classical Runge–Kutta steps
    (:class:`flexdyn.integrators.RK4`, the solver ``simulate(..., integrator="rk4", h=dt /
    substeps)`` runs, so both give the same states to round-off for the same inputs), with
    the compiled ``"gauss-legendre"`` in ``substeps`` fixed steps (fourth order and A-stable:
    for stiff models, at any macro step; models whose coordinates are their own rates,
    without prescribed motion, closures or node wrenches; its Newton iteration stops at
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
        _check_choice(method, tuple(FORWARD_METHODS), "method")
        _check_choice(backend, BACKENDS, "backend")
        _check_choice(integrator, (*FIXED_STEP, *_INTEGRATORS, GAUSS_LEGENDRE, RADAU_IIA),
                      "integrator")
        if not (isinstance(dt, (int, float, np.floating)) and not isinstance(dt, bool)
                and dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive finite number (s), got {dt!r}")
        if not (isinstance(substeps, (int, np.integer)) and substeps >= 1):
            raise ValueError(f"substeps must be a positive integer, got {substeps!r}")
        self.model, self.dt, self.fidelity = model, float(dt), fidelity
        self.t = float(t0)
        self._compiled: dict[str, Any] | None = None
        if integrator in (GAUSS_LEGENDRE, RADAU_IIA):
            refused = [what for what, value in (
                ("prescribed motion", prescribed), ("loop closures", model.constraints),
                ("backend='reference'", backend != "engine")) if value]
            if refused:
                raise ValueError(f"integrator={integrator!r} in a Stepper: not supported with "
                                 f"{', '.join(refused)}")
            self._compiled = _galpha_options(
                model, integrator, self.dt / substeps if integrator == GAUSS_LEGENDRE else None,
                None, None)
        else:
            self._solver = _solver_class(integrator)
        self._options: dict[str, Any] = ({"h": self.dt / substeps} if integrator in FIXED_STEP
                                         else {"rtol": rtol, "atol": atol})
        self._ode_args = (model, fidelity, method, backend)
        self._rate = _closure_rate(closure_rate)
        self._drive = None if prescribed is None else PrescribedMotion(model, prescribed)
        self._odes: dict[tuple[bool, bool], _Ode] = {}
        self._tau = np.zeros(model.nu)
        self._f_ext: np.ndarray | None = None
        self._f_nodes: dict | None = None
        self._outputs = Outputs(model, outputs, fidelity)
        self.output_names: list[str] = self._outputs.names
        self.input_names = [f"tau.{e.name}" for e in state_layout(model)["u"]]
        self._x = np.zeros(model.nq + model.nu + _N_EXTRA)
        self.set_state(model.neutral_configuration() if q0 is None else q0,
                       np.zeros(model.nu) if u0 is None else u0)

    # -- inputs ----------------------------------------------------------------------------
    @property
    def tau(self) -> np.ndarray:
        """Generalized forces (nu,), held over the steps (a copy)."""
        return self._tau.copy()

    @tau.setter
    def tau(self, value: Any) -> None:
        self._tau = _vector(value, self.model.nu, "tau")

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
            _nodal_forcing(value)  # the form
            pos, _ = state_terms(self.model, self.q, None, self.fidelity)
            nodal_loads(self.model, pos, value)  # the keys and wrenches, named
            value = dict(value)
        self._f_nodes = value

    # -- state -----------------------------------------------------------------------------
    def set_state(self, q: Any, u: Any, t: float | None = None) -> None:
        """Replace the state (validated; quaternions normalised) and, if given, the time;
        the work integrals restart from zero."""
        q, u = self.model.check_state(q, u)
        q, u = np.asarray(q, dtype=float), np.asarray(u, dtype=float)
        self._x = np.concatenate([_normalized(self.model, q), u, np.zeros(_N_EXTRA)])
        if t is not None:
            self.t = float(t)

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        nq, nu = self.model.nq, self.model.nu
        q, u = self._x[:nq].copy(), self._x[nq:nq + nu].copy()
        if self._drive is not None:
            q, u, _ = self._drive.impose(self.t, q, u)
        return _normalized(self.model, q), u

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
        W_tau, W_ext, D = self._x[-_N_EXTRA:]
        return {"tau": float(W_tau), "external": float(W_ext), "damping": float(D)}

    def outputs(self) -> np.ndarray:
        """The outputs (:attr:`output_names`) at the current state."""
        return self._outputs(*self._state())

    # -- stepping ----------------------------------------------------------------------------
    def _ode(self) -> _Ode:
        key = (self._f_ext is not None, self._f_nodes is not None)
        if key not in self._odes:
            self._odes[key] = _Ode(
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
                    raise _RhsFailure(float(solver.t), str(message))
        except _RhsFailure as exc:
            raise SimulationError(f"step from t = {self.t:.6g} s failed at t = {exc.t:.6g} s: "
                                  f"{exc.message}", exc.t, exc.message) from exc.__cause__
        self._x, self.t = np.array(solver.y), t1

    def _advance_compiled(self, t1: float) -> None:
        """:meth:`_advance` by the compiled loop, started afresh at the current state and
        inputs (the accelerations from the compiled state derivative) and run to ``t1`` in
        ``ceil((t1 − t)/h)`` equal steps (Radau IIA: adaptive ones); the work integrals go
        on."""
        if self._f_nodes is not None:
            raise ValueError("f_nodes: not supported by the compiled integrators in a Stepper "
                             "(use f_ext, or an adaptive integrator)")
        model, nq, nu = self.model, self.model.nq, self.model.nu
        tau = self._tau
        fe = np.zeros((model.n_bodies, 6)) if self._f_ext is None else self._f_ext
        try:
            loop = _CompiledLoop(model, self.fidelity, self._x[:nq], self._x[nq:nq + nu],
                                 self.t, t1, tau, fe, **self._compiled,
                                 rtol=self._options["rtol"], atol=self._options["atol"],
                                 max_step=math.inf, record_steps=False)
        except _RhsFailure as exc:
            raise SimulationError(f"step from t = {self.t:.6g} s failed: {exc.message}",
                                  exc.t, exc.message) from exc.__cause__
        out_t, out_x = np.empty(1), np.empty((1, 2 * nu + _N_EXTRA))
        status = loop.run(np.array([t1]), *loop.held(tau, fe), out_t, out_x)
        if status != galpha.FINISHED:
            t = float(loop.s[galpha.T])
            raise SimulationError(f"step from t = {self.t:.6g} s failed at t = {t:.6g} s: "
                                  f"{_LOOP_FAILURES[status]}", t, _LOOP_FAILURES[status])
        self._x = np.concatenate([loop.y[0], loop.y[1], self._x[nq + nu:]
                                  + loop.s[galpha.W_TAU:galpha.W_TAU + _N_EXTRA]])
        self.t = t1
