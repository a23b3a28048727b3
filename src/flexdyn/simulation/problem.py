"""The problem :func:`~flexdyn.simulation.simulate` integrates: the state ``x = [q; u]`` and
its derivative with the applied loads, prescribed motion and loop closures, on the bound
interface of :mod:`flexdyn.dynamics` (one compiled call per evaluation where the engine runs
the problem), augmented with the work integrals of the energy balance (package notes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..chain import Model
from ..closure import ClosureError
from ..dynamics import (
    BACKENDS,
    FORWARD_METHODS,
    cached_engine,
    closed_chain,
    closed_hybrid,
    closure_residuals,
    forward_dynamics,
    hybrid_dynamics,
    is_entry_array,
    nodal_loads_at,
    on_engine,
    stabilized_forward_dynamics,
    tree_forward_dynamics,
)
from ..engine import DERIVATIVE_METHODS, kernels
from ..engine.closure import SINGULAR
from ..joint_forces import joint_dissipation, motor_torques
from ..joints import SINGULARITY_TOL
from ..loads import TimeFunction
from ..results import SimulationError
from ..terms import DEFAULT_FIDELITY, check_fidelity, modal_velocities, state_terms

__all__ = ["BATCHED_SAMPLES", "CLOSURE_RATE", "CLOSURE_TOL", "N_EXTRA", "ConstantLoad", "Loads",
           "PrescribedMotion", "Problem", "RhsFailure", "all_finite", "check_choice",
           "check_closures", "checked_closure_rate", "compiled_derivative", "failing", "forcing",
           "load_kind", "nodal_forcing", "normalized", "pack_state", "rhs", "unpack_state",
           "vector"]

#: the work integrals after ``[q; u]`` in the augmented state: ``W_τ``, ``W_ext``, ``D``
N_EXTRA = 3
#: Baumgarte's rate ``ω`` (1/s) of the closure stabilization by default
CLOSURE_RATE = 10.0
#: samples from which a run's accelerations are computed in one batched call (an entry of its
#: own, compiled on first use) rather than by the state derivative the run compiled, one
#: call per sample (a few milliseconds for fewer samples)
BATCHED_SAMPLES = 4096
#: the largest closure residual of an initial state: ``max |g|`` (m, rad) and ``max |J u|``
#: relative to ``max(1, max |u|)``
CLOSURE_TOL = 1e-8


class RhsFailure(Exception):
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
def check_choice(value: str, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {tuple(choices)}")


def vector(value: Any, n: int, name: str) -> np.ndarray:
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


def all_finite(a: np.ndarray) -> bool:
    """Whether every entry of ``a`` (real or complex) is finite.  It runs at every
    right-hand side, where the method call is cheaper than ``np.all(np.isfinite(a))``."""
    return bool(np.isfinite(a).all())


def load_kind(value: Any) -> str | None:
    """How a load was given, for ``SimulationResult.settings``: None, ``"constant"``,
    ``"function of time"`` (:class:`flexdyn.loads.TimeFunction`) or ``"callable"``."""
    if value is None:
        return None
    if isinstance(value, TimeFunction):
        return "function of time"
    return "callable" if callable(value) else "constant"


def forcing(value: Any, shape: tuple[int, ...], name: str):
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
            if not all_finite(a):
                raise RhsFailure(t, f"{name}(t, q, u) returned non-finite values")
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
    return ConstantLoad(a)


class ConstantLoad:
    """A load given as a constant array: ``g(t, q, u)`` returns :attr:`value` (read-only),
    so that the samples of a run take it without calling it per sample."""

    def __init__(self, value: np.ndarray):
        self.value = value

    def __call__(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.value


def normalized(model: Model, q: np.ndarray) -> np.ndarray:
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
    check_choice(method, tuple(FORWARD_METHODS), "method")
    check_choice(backend, BACKENDS, "backend")
    fext_fn = forcing(f_ext, (model.n_bodies, 6), "f_ext")
    rate = checked_closure_rate(closure_rate)
    derivative = compiled_derivative(model, fidelity, method, backend, 0, rate)
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
        q = normalized(model, q)
        tau_fn = forcing(tau, (model.nu,), "tau")
        try:
            tau_t = np.zeros(model.nu) if tau_fn is None else tau_fn(t, q, u)
            fe = None if fext_fn is None else fext_fn(t, q, u)
            if derivative is not None and on_engine(backend, q, u, tau_t, fe):
                return derivative(t, np.concatenate([q, u]), tau_t, fe)
        except RhsFailure as exc:
            raise SimulationError(f"at t = {t:.6g} s: {exc.message}", t, exc.message) from None
        udot = stabilized_forward_dynamics(model, q, u, tau_t, method, fidelity, fe, None,
                                           backend, rate)
        return np.concatenate([model.qdot(q, u), udot])

    return f


def checked_closure_rate(value: Any) -> float:
    """The checked ``closure_rate`` (a finite number ≥ 0, 1/s)."""
    if not (isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0):
        raise ValueError(f"closure_rate must be a finite number >= 0 (1/s), got {value!r}")
    return float(value)


def _closed(model: Model, t: float, q: np.ndarray, u: np.ndarray, udot_tree: np.ndarray,
            fidelity: str, backend: str, rate: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u̇, λ, g)`` of a closed chain with Baumgarte's ``rate`` (:func:`closed_chain`), ``g``
    the closure residuals; a singular closure at time ``t`` raises ``RhsFailure``
    with its message."""
    try:
        udot, lam, terms = closed_chain(model, q, u, udot_tree, fidelity, backend, rate)
    except ClosureError as exc:
        raise RhsFailure(t, str(exc)) from exc
    return udot, lam, terms.g


def check_closures(model: Model, q0: np.ndarray, u0: np.ndarray, fidelity: str) -> None:
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


def compiled_derivative(model: Model, fidelity: str, method: str, backend: str,
                        n_extra: int, rate: float = CLOSURE_RATE) -> Callable | None:
    """``g(t, x, tau, f_ext) -> ẋ`` by one call of the engine's state derivative
    (:func:`flexdyn.engine.kernels.derivative_articulated`; for a closed chain
    :func:`flexdyn.engine.closure.closed_derivative` with Baumgarte's ``rate``) with
    ``n_extra`` (0 or 3) energy-balance integrands after ``[q̇; u̇]``, or None where the engine
    does not run this ``method``/``backend`` (a closed chain: the articulated method only).
    A non-finite state or result raises ``RhsFailure`` (so do redundant or locked closures,
    named), a singular inertia ``SingularInertiaError``."""
    if backend != "engine" or method not in DERIVATIVE_METHODS:
        return None
    closed = bool(model.constraints)
    if closed and method != "articulated":
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
                _closed(model, t, normalized(model, q), u, np.zeros(model.nu), fidelity,
                        "reference", rate)
                raise RhsFailure(t, "the closures are redundant or locked at this state (a "
                                    "pivot of Λ = J M⁻¹ Jᵀ vanishes)")
        else:
            status = engine.derivative_status(*args, method, out)
        if status == kernels.INVALID:
            raise RhsFailure(t, "the state became non-finite")
        if status == kernels.OVERFLOW:
            raise RhsFailure(t, "forward dynamics failed: the state derivative is not "
                                f"finite ({_overflow_cause(model, x[:model.nq])})")
        return out

    return g


def _overflow_cause(model: Model, q: np.ndarray) -> str:
    """Why a state derivative overflowed at ``q``: the joints at a singularity of their
    coordinates (``μ(q) < SINGULARITY_TOL``, e.g. Euler angles at gimbal lock, where
    ``q̇ = Γ(q) u`` has no finite value), named, else an overflow of the arithmetic."""
    locked = []
    for i, joint in enumerate(model.joints):
        if hasattr(joint, "singularity"):
            s = int(model.q_start[i])
            if joint.singularity(q[s:s + joint.nq]) < SINGULARITY_TOL:
                locked.append(model.names[i])
    if locked:
        return (f"the joint coordinates of {', '.join(map(repr, locked))} are at a "
                "singularity, where q̇ = Γ(q) u is not defined (e.g. Euler angles at gimbal "
                "lock): choose a joint with quaternion coordinates")
    return "the arithmetic overflowed"


# ----------------------------------------------------------------------------------------------
# the ODE of simulate: loads, prescribed motion, the augmented state derivative
# ----------------------------------------------------------------------------------------------
def nodal_forcing(value: Any) -> Callable | None:
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
        the wrong shapes raises ``ValueError``, non-finite values ``RhsFailure``
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
                if not all_finite(a):
                    message = f"prescribed[{name!r}](t) returned a non-finite {what}"
                    if at_start:
                        raise ValueError(f"{message} at t = {t:.6g}")
                    raise RhsFailure(t, message)
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


class Loads(NamedTuple):
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


class Problem:
    """The augmented ODE of :func:`simulate`, ``ẋ = f(t, x)`` with ``x = [q; u; W_τ, W_ext,
    D]`` (module docstring), for the applied loads ``tau_fn``, ``fext_fn``, ``nodes_fn``
    (each ``(t, q, u) -> value`` or None) and the prescribed motion ``drive`` (or None).

    Without prescribed motion, on the engine each evaluation is one compiled call
    (``compiled_derivative``); prescribed motion takes :func:`flexdyn.hybrid_dynamics`."""

    def __init__(self, model: Model, fidelity: str, method: str, backend: str,
                 tau_fn: Callable | None, fext_fn: Callable | None, nodes_fn: Callable | None,
                 drive: PrescribedMotion | None, closure_rate: float = CLOSURE_RATE):
        self.model, self.fidelity, self.method, self.backend = model, fidelity, method, backend
        self.tau_fn, self.fext_fn, self.nodes_fn, self.drive = tau_fn, fext_fn, nodes_fn, drive
        self.closure_rate = closure_rate
        self.derivative = (None if drive is not None else
                           compiled_derivative(model, fidelity, method, backend, N_EXTRA,
                                               closure_rate))
        #: no loads that depend on the state: the compiled derivative alone
        self.unforced = (self.derivative is not None and tau_fn is None and fext_fn is None
                         and nodes_fn is None)
        self.damped = [i for i, b in enumerate(model.bodies) if b.n_modes and np.any(b.C)]
        self.zeros_tau = np.zeros(model.nu)
        #: the solver settings recorded in the results
        #: (:attr:`flexdyn.results.SimulationResult.settings`)
        self.settings: dict[str, Any] | None = None

    def loads(self, t: float, x: np.ndarray) -> Loads:
        """The state (quaternions normalised, prescribed entries imposed) and the loads at
        ``(t, x)``."""
        model = self.model
        nq, nu = model.nq, model.nu
        if not all_finite(x):
            raise RhsFailure(t, "the state became non-finite")
        q, u, udot_known = x[:nq], x[nq:nq + nu], None
        if self.drive is not None:
            q, u, udot_known = self.drive.impose(t, q, u)
        q = normalized(model, q)
        tau = self.zeros_tau if self.tau_fn is None else self.tau_fn(t, q, u)
        f_ext = None if self.fext_fn is None else self.fext_fn(t, q, u)
        g = None
        if self.nodes_fn is not None:
            f_nodes, g = nodal_loads_at(model, q, self.nodes_fn(t, q, u), self.fidelity)
            f_ext = f_nodes if f_ext is None else f_ext + f_nodes
        return Loads(q, u, tau, f_ext, g, udot_known)

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
            return failing(self.derivative, t, x, self.zeros_tau, None)
        model = self.model
        nq, nu = model.nq, model.nu
        s = self.loads(t, x)
        tau = s.tau if s.g is None else s.tau + s.g
        if self.derivative is not None:
            out = failing(self.derivative, t, x, tau, s.f_ext)
        else:
            try:
                udot, T = self.accelerations(s.q, s.u, tau, s.f_ext, s.udot_known)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                raise RhsFailure(t, f"forward dynamics failed: {exc}") from exc
            out = np.empty(nq + nu + N_EXTRA)
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
            raise RhsFailure(t, str(exc)) from exc
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
        ``partial`` result of a failed run, where the accelerations or loads cannot be
        evaluated at every sample: ``udot`` None, the realised loads NaN and the applied ones
        NaN where they fail (:meth:`applied`)."""
        model = self.model
        nq, nu = model.nq, model.nu
        q = (y[:, :nq].copy() if nq == nu else
             np.array([normalized(model, row) for row in y[:, :nq]]).reshape(-1, nq))
        u = np.ascontiguousarray(y[:, nq:nq + nu])
        if self.drive is not None:
            q, u = self.drive.motion(t, q, u)
        try:
            return self._histories(t, q, u)
        except Exception:  # a failed run's samples: the loads may fail as the run did
            if not partial:
                raise
            tau = np.array([self.applied(float(tk), qk, uk)
                            for tk, qk, uk in zip(t, q, u, strict=True)]).reshape(-1, nu)
            if self.drive is not None:
                tau[:, self.drive.mask] = np.nan
            return {"q": q, "u": u, "tau": tau, "udot": None, "f_ext": None}

    def applied(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The applied forces ``tau`` (nu,) at one sample of a failed run, NaN where they
        cannot be evaluated."""
        try:
            return self.loads(t, np.concatenate([q, u])).tau
        except Exception:
            return np.full(self.model.nu, np.nan)

    def _histories(self, t: np.ndarray, q: np.ndarray, u: np.ndarray) -> dict:
        """:meth:`histories` once ``q`` and ``u`` are known."""
        model = self.model
        nu = model.nu
        if not t.size:
            empty = {"constraint_forces": np.zeros((0, model.n_constraints)),
                     "closure_drift": np.zeros((0, model.n_constraints))}
            return {"q": q, "u": u, "tau": np.zeros((0, nu)), "udot": np.zeros((0, nu)),
                    "f_ext": None, **(empty if model.constraints else {})}
        if t.size >= BATCHED_SAMPLES and not (model.constraints or self.drive is not None
                                              or self.nodes_fn is not None):
            # the tree's accelerations at every sample in one batched call
            tau = self.sampled(self.tau_fn, t, q, u, (nu,))
            f_ext = (None if self.fext_fn is None else
                     self.sampled(self.fext_fn, t, q, u, (model.n_bodies, 6)))
            udot = forward_dynamics(model, q, u, tau, method=self.method,
                                    fidelity=self.fidelity, f_ext=f_ext, backend=self.backend)
            return {"q": q, "u": u, "tau": tau, "udot": udot, "f_ext": f_ext}
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


    @staticmethod
    def sampled(load: Callable | None, t: np.ndarray, q: np.ndarray, u: np.ndarray,
                shape: tuple[int, ...]) -> np.ndarray:
        """A load at every sample, ``(nt, *shape)``: zero for None, a constant's value repeated,
        else the callable's value per sample."""
        if load is None:
            return np.zeros((t.size, *shape))
        if isinstance(load, ConstantLoad):
            return np.repeat(load.value[None], t.size, axis=0)
        return np.array([load(float(tk), qk, uk) for tk, qk, uk in zip(t, q, u, strict=True)],
                        dtype=float).reshape(t.size, *shape)


def failing(derivative: Callable, t: float, x: np.ndarray, tau: np.ndarray,
            f_ext: np.ndarray | None) -> np.ndarray:
    """``derivative(t, x, tau, f_ext)``, a singular inertia reported as ``RhsFailure``
    (as the reference path reports it)."""
    try:
        return derivative(t, x, tau, f_ext)
    except ValueError as exc:
        raise RhsFailure(t, f"forward dynamics failed: {exc}") from exc
