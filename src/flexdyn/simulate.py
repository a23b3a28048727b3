"""Time integration of flexdyn models and the resulting histories.

:func:`simulate` integrates ``M(q) u̇ + C(q, u) = τ`` together with the kinematic equation
``q̇ = Γ(q) u`` (``model.qdot``) with :func:`scipy.integrate.solve_ivp` on the state
``x = [q; u]`` (layout of ``model-format.md``; see :func:`state_layout`).

Quaternions
-----------
The quaternions of ``spherical`` and ``free`` joints are integrated as plain coordinates,
but every right-hand-side evaluation first scales them to unit length, so the dynamics and
``q̇`` always see a rotation and a drift of the integrated norm never feeds back into the
solution.  The stored output ``SimulationResult.q`` is normalised the same way.

Energy balance
--------------
The work of the applied forces is integrated with the motion: the ODE state is augmented
with ``W_τ = ∫ τ·u dt``, the work of the external wrenches ``W_ext = ∫ Σ f_ext(i)·V(i) dt``
and the energy dissipated by modal damping ``D = ∫ Σ η̇ᵀ C η̇ dt``, so these integrals are
as accurate as the state itself.  :attr:`SimulationResult.energy_balance_error` is the
percentage energy-balance error of Damaren & Sharf (1995), Eq 30,
``e_E(t) = 100 (E(t) − E(0) − W(t) + D(t)) / |E_peak|`` with ``W = W_τ + W_ext`` and
``E_peak`` the largest ``|E|`` over the run (energies of the simulated body model, see
``SimulationResult.energy_fidelity``), and
:attr:`SimulationResult.energy_balance_rms` its RMS over the samples (Eq 32; sample on a
uniform grid, e.g. ``t_eval=np.linspace(t0, t1, 1000)``, to match the paper).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.integrate

from .chain import FIDELITIES, Model, compute_kinematics, modal_velocities
from .composite_body import FORWARD_METHODS, forward_dynamics
from .energy import energies, momentum
from .spatial import Transform

__all__ = [
    "SimulationError",
    "SimulationResult",
    "StateEntry",
    "pack_state",
    "rhs",
    "simulate",
    "state_layout",
    "unpack_state",
]

_N_EXTRA = 3  # augmented state: W_τ, W_ext, D
_INTEGRATORS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")


class SimulationError(RuntimeError):
    """The integration failed (solver failure or non-finite state/forces).

    Attributes
    ----------
    t : float — the time reached when it failed (s).
    solver_message : str — the solver's (or the failed check's) message.
    """

    def __init__(self, message: str, t: float, solver_message: str = ""):
        super().__init__(message)
        self.t = float(t)
        self.solver_message = solver_message or message


class _RhsFailure(Exception):
    """Raised inside the right-hand side to stop the solver; turned into SimulationError."""

    def __init__(self, t: float, message: str):
        super().__init__(message)
        self.t = t
        self.message = message


# ----------------------------------------------------------------------------------------------
# state layout
# ----------------------------------------------------------------------------------------------
class StateEntry(NamedTuple):
    """One entry of ``q`` or ``u``: ``name`` (``"body.component"``), ``kind``, ``body`` (body
    name) and ``index`` (position in ``q`` or ``u``)."""

    name: str
    kind: str
    body: str
    index: int


_JOINT_COMPONENTS: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    "fixed": ([], []),
    "revolute": ([("theta", "angle")], [("theta_dot", "angular_rate")]),
    "prismatic": ([("d", "displacement")], [("d_dot", "rate")]),
    "screw": ([("theta", "angle")], [("theta_dot", "angular_rate")]),
    "cylindrical": ([("theta", "angle"), ("d", "displacement")],
                    [("theta_dot", "angular_rate"), ("d_dot", "rate")]),
    "universal": ([("theta1", "angle"), ("theta2", "angle")],
                  [("theta1_dot", "angular_rate"), ("theta2_dot", "angular_rate")]),
    "spherical": ([(c, "quaternion") for c in ("qw", "qx", "qy", "qz")],
                  [(c, "angular_velocity") for c in ("wx", "wy", "wz")]),
    "free": ([(c, "quaternion") for c in ("qw", "qx", "qy", "qz")]
             + [(c, "position") for c in ("x", "y", "z")],
             [(c, "angular_velocity") for c in ("wx", "wy", "wz")]
             + [(c, "linear_velocity") for c in ("vx", "vy", "vz")]),
}


def state_layout(model: Model) -> dict[str, list[StateEntry]]:
    """Describe every entry of ``q`` and ``u``.

    Returns
    -------
    dict with keys ``"q"`` (nq entries) and ``"u"`` (nu entries) of :class:`StateEntry`
    ``(name, kind, body, index)``.  Kinds: ``angle``, ``displacement``, ``quaternion``
    (``[w, x, y, z]``), ``position``, ``modal`` (``η``) for ``q``; ``angular_rate``,
    ``rate``, ``angular_velocity``, ``linear_velocity`` (in the joint's moving frame) and
    ``modal_rate`` (``η̇``) for ``u``.  Names are ``"<body>.<component>"``, e.g.
    ``"link1.theta"``, ``"link1.eta[0]"``, ``"hub.wx"``.
    """
    out: dict[str, list[StateEntry]] = {"q": [], "u": []}
    for i, (bname, joint) in enumerate(zip(model.names, model.joints, strict=True)):
        qc, uc = _JOINT_COMPONENTS[joint.type]
        m = int(model.n_modes[i])
        qs, us = int(model.q_start[i]), int(model.u_start[i])
        for k, (c, kind) in enumerate(qc):
            out["q"].append(StateEntry(f"{bname}.{c}", kind, bname, qs + k))
        for k in range(m):
            out["q"].append(StateEntry(f"{bname}.eta[{k}]", "modal", bname, qs + len(qc) + k))
        for k, (c, kind) in enumerate(uc):
            out["u"].append(StateEntry(f"{bname}.{c}", kind, bname, us + k))
        for k in range(m):
            out["u"].append(
                StateEntry(f"{bname}.eta_dot[{k}]", "modal_rate", bname, us + len(uc) + k))
    return out


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


def _forcing(value: Any, shape: tuple[int, ...], name: str):
    """Return ``g(t, q, u)`` for None / a constant array / a callable; shape-checked."""
    if value is None:
        return None
    if callable(value):
        fn = value

        def g(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
            a = np.asarray(fn(t, q, u), dtype=float)
            if a.shape != shape:
                raise ValueError(f"{name}(t, q, u) returned shape {a.shape} at t = {t:.6g}, "
                                 f"expected {shape}")
            if not np.all(np.isfinite(a)):
                raise _RhsFailure(t, f"{name}(t, q, u) returned non-finite values")
            return a

        return g
    try:
        a = np.array(value, dtype=float)
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
    kin = compute_kinematics(model, q, fidelity)
    V_m = modal_velocities(model, kin, u)
    return [V_m[i][int(model.n_modes[i]):] for i in range(model.n_bodies)]


def rhs(model: Model, fidelity: str = "full", method: str = "articulated", *,
        f_ext: Any = None) -> Callable[..., np.ndarray]:
    """State derivative for co-simulation: ``f(t, x, tau=None) -> ẋ``.

    Parameters
    ----------
    model : Model
    fidelity : ``"full"`` or ``"ruthless"``.
    method : forward-dynamics method (``"articulated"``, ``"articulated-split"``,
        ``"composite"``).
    f_ext : None, an array (n_bodies, 6) or a callable ``f_ext(t, q, u)`` — external wrenches
        ``[N m; N]`` at the body frame origins, in body coordinates.

    Returns
    -------
    f : callable ``f(t, x, tau=None)`` with ``x = [q; u]`` (see :func:`state_layout`),
        ``tau`` None, an array (nu,) or a callable ``tau(t, q, u)``; returns
        ``ẋ = [Γ(q) u; u̇]`` (nq + nu,).  Quaternions in ``x`` are normalised before use.
    """
    _check_choice(fidelity, FIDELITIES, "fidelity")
    _check_choice(method, FORWARD_METHODS, "method")
    fext_fn = _forcing(f_ext, (model.n_bodies, 6), "f_ext")

    def f(t: float, x: np.ndarray, tau: Any = None) -> np.ndarray:
        q, u = unpack_state(model, np.asarray(x, dtype=float))
        q = _normalized(model, q)
        tau_fn = _forcing(tau, (model.nu,), "tau")
        try:
            tau_t = np.zeros(model.nu) if tau_fn is None else tau_fn(t, q, u)
            fe = None if fext_fn is None else fext_fn(t, q, u)
        except _RhsFailure as exc:
            raise SimulationError(f"at t = {t:.6g} s: {exc.message}", t, exc.message) from None
        udot = forward_dynamics(model, q, u, tau_t, method=method, fidelity=fidelity, f_ext=fe)
        return np.concatenate([model.qdot(q, u), udot])

    return f


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
    fidelity: str = "full",
    method: str = "articulated",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    t_eval: np.ndarray | None = None,
    integrator: str | type = "DOP853",
    max_step: float = math.inf,
    progress: bool = False,
    f_ext: Any = None,
) -> SimulationResult:
    """Integrate the equations of motion of ``model`` from ``(q0, u0)`` over ``t_span``.

    Parameters
    ----------
    model : Model
    q0 : (nq,) initial coordinates; default ``model.neutral_configuration()``.  Quaternions
        are normalised.
    u0 : (nu,) initial speeds; default zero.
    t_span : ``(t0, t1)`` with ``t1 > t0`` (s).
    tau : generalized forces in the layout of ``u``: None (zero), a constant array (nu,) or
        a callable ``tau(t, q, u) -> (nu,)`` (joint torques/forces; modal slots are external
        modal forces, usually 0).
    fidelity : ``"full"`` or ``"ruthless"`` body model.
    method : ``"articulated"``, ``"articulated-split"`` or ``"composite"`` forward dynamics.
    rtol, atol : solver tolerances (``atol`` also applies to the work integrals, in J).
    t_eval : times at which to store the solution (sorted, inside ``t_span``); default: the
        solver's steps.
    integrator : a :func:`scipy.integrate.solve_ivp` method name (``"DOP853"``, ``"RK45"``,
        ``"Radau"``, ``"BDF"``, ``"LSODA"``, …) or an ``OdeSolver`` subclass.
    max_step : largest step (s).
    progress : show a progress bar (needs ``tqdm``; silently off without it).
    f_ext : None, an array (n_bodies, 6) or a callable ``f_ext(t, q, u)`` — external wrenches
        ``[N m; N]`` at the body frame origins, in body coordinates.

    Returns
    -------
    SimulationResult

    Raises
    ------
    ValueError
        For arguments of the wrong shape or value (the message names the argument), including
        a ``tau``/``f_ext`` callable that returns the wrong shape.
    SimulationError
        If the solver fails or the state or forces become non-finite; ``.t`` is the time
        reached and ``.solver_message`` the solver's message.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a flexdyn Model, got {type(model).__name__}")
    _check_choice(fidelity, FIDELITIES, "fidelity")
    _check_choice(method, FORWARD_METHODS, "method")
    nq, nu = model.nq, model.nu
    q0 = model.neutral_configuration() if q0 is None else _vector(q0, nq, "q0")
    for i, j in enumerate(model.joints):
        if j.type in ("spherical", "free"):
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
    for name, val in (("rtol", rtol), ("atol", atol)):
        if not (isinstance(val, (int, float, np.floating)) and val > 0 and math.isfinite(val)):
            raise ValueError(f"{name} must be a positive number, got {val!r}")
    if not (max_step > 0):
        raise ValueError(f"max_step must be positive, got {max_step!r}")
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float)
        if t_eval.ndim != 1 or t_eval.size == 0 or not np.all(np.isfinite(t_eval)):
            raise ValueError("t_eval must be a non-empty 1-D array of finite times")
        if np.any(np.diff(t_eval) <= 0):
            raise ValueError("t_eval must be strictly increasing")
        if t_eval[0] < t0 or t_eval[-1] > t1:
            raise ValueError(f"t_eval must lie within t_span = ({t0}, {t1})")
    if isinstance(integrator, str):
        _check_choice(integrator, _INTEGRATORS, "integrator")
    tau_fn = _forcing(tau, (nu,), "tau")
    fext_fn = _forcing(f_ext, (model.n_bodies, 6), "f_ext")
    try:  # validate the callables' shapes before integrating
        if tau_fn is not None:
            tau_fn(t0, q0, u0)
        if fext_fn is not None:
            fext_fn(t0, q0, u0)
    except _RhsFailure as exc:
        raise SimulationError(f"simulation failed at t = {t0:.6g} s: {exc.message}",
                              t0, exc.message) from None

    damped = [i for i, b in enumerate(model.bodies) if b.n_modes and np.any(b.C)]
    zeros_tau = np.zeros(nu)
    bar = _progress_bar(t0, t1) if progress else None
    t_last = [t0]

    def f(t: float, x: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(x)):
            raise _RhsFailure(t, "the state became non-finite")
        q = _normalized(model, x[:nq])
        u = x[nq:nq + nu]
        tau_t = zeros_tau if tau_fn is None else tau_fn(t, q, u)
        fe = None if fext_fn is None else fext_fn(t, q, u)
        try:
            udot = forward_dynamics(model, q, u, tau_t, method=method, fidelity=fidelity,
                                    f_ext=fe)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            raise _RhsFailure(t, f"forward dynamics failed: {exc}") from exc
        out = np.empty(nq + nu + _N_EXTRA)
        out[:nq] = model.qdot(q, u)
        out[nq:nq + nu] = udot
        out[nq + nu] = tau_t @ u
        p_ext = 0.0
        if fe is not None:
            for fi, Vi in zip(fe, _body_twists(model, q, u, fidelity), strict=True):
                p_ext += fi @ Vi
        out[nq + nu + 1] = p_ext
        p_d = 0.0
        for i in damped:
            ed = model.eta_dot(u, i)
            p_d += ed @ model.bodies[i].C @ ed
        out[nq + nu + 2] = p_d
        if bar is not None and t > t_last[0]:
            bar.update(min(t, t1) - t_last[0])
            t_last[0] = min(t, t1)
        return out

    x0 = np.concatenate([q0, u0, np.zeros(_N_EXTRA)])
    wall = time.perf_counter()
    try:
        sol = scipy.integrate.solve_ivp(f, (t0, t1), x0, method=integrator, t_eval=t_eval,
                                        rtol=rtol, atol=atol, max_step=max_step)
    except _RhsFailure as exc:
        raise SimulationError(f"simulation failed at t = {exc.t:.6g} s: {exc.message}",
                              exc.t, exc.message) from exc.__cause__
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - wall
    if sol.status < 0 or not sol.success:
        t_fail = float(sol.t[-1]) if sol.t.size else t0
        raise SimulationError(f"integration failed at t = {t_fail:.6g} s: {sol.message}",
                              t_fail, str(sol.message))
    y = sol.y.T
    q = np.array([_normalized(model, row) for row in y[:, :nq]]) if nq != nu else y[:, :nq]
    u = y[:, nq:nq + nu]
    if tau_fn is None:
        tau_hist = np.zeros((sol.t.size, nu))
    else:
        try:
            tau_hist = np.array([tau_fn(t, qk, uk)
                                 for t, qk, uk in zip(sol.t, q, u, strict=True)])
        except _RhsFailure as exc:
            raise SimulationError(f"at t = {exc.t:.6g} s: {exc.message}", exc.t,
                                  exc.message) from None
    return SimulationResult(
        t=sol.t, q=q, u=np.ascontiguousarray(u), model=model, fidelity=fidelity, method=method,
        work=y[:, nq + nu].copy(), external_work=y[:, nq + nu + 1].copy(),
        dissipation=y[:, nq + nu + 2].copy(), tau=tau_hist, nfev=int(sol.nfev),
        wall_time=wall, message=str(sol.message),
    )


def _rotation_vectors(quat: np.ndarray) -> np.ndarray:
    """Rotation vectors (n, 3) of unit quaternions ``[w, x, y, z]`` (n, 4), angles in [0, π]."""
    q = np.where(quat[:, :1] < 0, -quat, quat)
    s = np.linalg.norm(q[:, 1:], axis=1)
    angle = 2.0 * np.arctan2(s, q[:, 0])
    scale = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return q[:, 1:] * scale[:, None]


def _progress_bar(t0: float, t1: float):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=t1 - t0, unit="s", desc="simulate",
                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]")


# ----------------------------------------------------------------------------------------------
# result
# ----------------------------------------------------------------------------------------------
@dataclass(eq=False)
class SimulationResult:
    """Histories of a simulation (``nt`` samples).

    Attributes
    ----------
    t : (nt,) times (s).
    q : (nt, nq) coordinates (unit quaternions), u : (nt, nu) speeds.
    model : the simulated Model.
    fidelity, method : the body model and forward-dynamics method used.
    work : (nt,) work done by ``τ`` since ``t[0]``, ``∫ τ·u dt`` (J), integrated with the state.
    external_work : (nt,) work of ``f_ext`` (J).
    dissipation : (nt,) energy dissipated by modal damping (J).
    tau : (nt, nu) the applied generalized forces at the samples.
    energy_fidelity : body model used to evaluate energies and momentum; default: the
        simulated ``fidelity`` (each model is checked against its own energy, as Damaren &
        Sharf do).  Set ``"full"`` to measure a ruthless run against the exact energy.
    nfev, wall_time, message : solver statistics (right-hand-side evaluations, seconds,
        solver message).
    """

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    model: Model
    fidelity: str = "full"
    method: str = "articulated"
    work: np.ndarray | None = None
    external_work: np.ndarray | None = None
    dissipation: np.ndarray | None = None
    tau: np.ndarray | None = None
    energy_fidelity: str | None = None
    nfev: int = 0
    wall_time: float = 0.0
    message: str = ""

    def __post_init__(self) -> None:
        if self.energy_fidelity is None:
            self.energy_fidelity = self.fidelity
        _check_choice(self.fidelity, FIDELITIES, "fidelity")
        _check_choice(self.energy_fidelity, FIDELITIES, "energy_fidelity")
        self.t = np.asarray(self.t, dtype=float)
        nt = self.t.size
        self.q = np.asarray(self.q, dtype=float).reshape(nt, self.model.nq)
        self.u = np.asarray(self.u, dtype=float).reshape(nt, self.model.nu)
        for name in ("work", "external_work", "dissipation"):
            v = getattr(self, name)
            setattr(self, name, np.zeros(nt) if v is None else np.asarray(v, float).reshape(nt))
        self.tau = (np.zeros((nt, self.model.nu)) if self.tau is None
                    else np.asarray(self.tau, float).reshape(nt, self.model.nu))

    def __len__(self) -> int:
        return int(self.t.size)

    # -- energy ------------------------------------------------------------------------------
    def _energies(self) -> np.ndarray:
        """(nt, 2) kinetic and potential energy for the current ``energy_fidelity``
        (computed once per fidelity)."""
        fid = self.energy_fidelity
        _check_choice(fid, FIDELITIES, "energy_fidelity")
        cache = self.__dict__.setdefault("_energy_cache", {})
        if fid not in cache:
            out = np.empty((len(self), 2))
            for k, (q, u) in enumerate(zip(self.q, self.u, strict=True)):
                out[k] = energies(self.model, q, u, fid)
            cache[fid] = out
        return cache[fid]

    @property
    def kinetic_energy(self) -> np.ndarray:
        """(nt,) kinetic energy ``½ uᵀ M u`` (J)."""
        return self._energies()[:, 0].copy()

    @property
    def potential_energy(self) -> np.ndarray:
        """(nt,) elastic plus gravitational energy (J)."""
        return self._energies()[:, 1].copy()

    @property
    def total_energy(self) -> np.ndarray:
        """(nt,) ``E = T + V`` (J)."""
        return self._energies().sum(axis=1)

    @property
    def energy_balance_error(self) -> np.ndarray:
        """(nt,) percentage energy-balance error ``e_E`` (Damaren & Sharf Eq 30).

        ``e_E = 100 (E − E(t0) − W_τ − W_ext + D) / max|E|``; with no initial energy, no
        external wrenches and no damping this is the paper's ``(E − W)/|E_peak| × 100 %``.
        """
        E = self.total_energy
        peak = float(np.max(np.abs(E))) if E.size else 0.0
        num = E - E[0] - self.work - self.external_work + self.dissipation
        return 100.0 * num / max(peak, np.finfo(float).tiny)

    @property
    def energy_balance_rms(self) -> float:
        """RMS of :attr:`energy_balance_error` over the samples, ``e_E,RMS`` (Eq 32), %."""
        e = self.energy_balance_error
        return float(np.sqrt(np.mean(e**2))) if e.size else 0.0

    def momentum(self) -> np.ndarray:
        """(nt, 6) total spatial momentum ``[angular about the origin; linear]`` in inertial
        coordinates (see :func:`flexdyn.energy.momentum`)."""
        return np.array([momentum(self.model, q, u, self.energy_fidelity)
                         for q, u in zip(self.q, self.u, strict=True)])

    # -- accessors ---------------------------------------------------------------------------
    def joint(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(q, u)`` histories of body ``name``'s joint, shapes (nt, nq_j) and (nt, nu_j)."""
        i = self.model.body_index(name)
        qs, us = int(self.model.q_start[i]), int(self.model.u_start[i])
        return (self.q[:, qs:qs + int(self.model.nq_joint[i])],
                self.u[:, us:us + int(self.model.nu_joint[i])])

    def modes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(η, η̇)`` histories of body ``name``, shapes (nt, m) each."""
        i = self.model.body_index(name)
        m = int(self.model.n_modes[i])
        qs = int(self.model.q_start[i] + self.model.nq_joint[i])
        us = int(self.model.u_start[i] + self.model.nu_joint[i])
        return self.q[:, qs:qs + m], self.u[:, us:us + m]

    def body_pose(self, name: str, k: int) -> Transform:
        """Pose of body ``name``'s frame in the inertial frame at sample ``k``."""
        i = self.model.body_index(name)
        return compute_kinematics(self.model, self.q[k], self.fidelity).pose[i]

    def _node(self, name: str, node: int) -> tuple[int, int]:
        i = self.model.body_index(name)
        n = self.model.bodies[i].n_nodes
        if n == 0:
            raise ValueError(f"body {name!r} has no nodes")
        if not -n <= node < n:
            raise IndexError(f"node {node} out of range for body {name!r} with {n} nodes")
        return i, node % n

    def deflection(self, name: str, node: int = -1) -> np.ndarray:
        """(nt, 3) elastic displacement ``Π_t(node) η`` of a node in its body frame (m)."""
        i, j = self._node(name, node)
        eta, _ = self.modes(name)
        return eta @ self.model.bodies[i].Pi_t[j].T

    def tip_position(self, name: str, node: int = -1) -> np.ndarray:
        """(nt, 3) inertial position of node ``node`` (default the last) of body ``name``,
        deformed: ``pose · (l0 + Π_t η)`` (m)."""
        i, j = self._node(name, node)
        body = self.model.bodies[i]
        local = body.nodes[j] + self.deflection(name, node)
        out = np.empty((len(self), 3))
        for k, q in enumerate(self.q):
            out[k] = compute_kinematics(self.model, q, self.fidelity).pose[i].apply(local[k])
        return out

    def max_tip_deflection(self) -> dict[str, float]:
        """Largest ``|Π_t η|`` of each flexible body's last node over the run (m)."""
        return {b.name: float(np.max(np.linalg.norm(self.deflection(b.name), axis=1)))
                for b in self.model.bodies if b.n_modes and b.n_nodes}

    # -- output ------------------------------------------------------------------------------
    def _columns(self) -> tuple[list[str], np.ndarray]:
        lay = state_layout(self.model)
        names = (["t"] + ["q:" + e.name for e in lay["q"]] + ["u:" + e.name for e in lay["u"]]
                 + ["tau:" + e.name for e in lay["u"]]
                 + ["work", "external_work", "dissipation", "kinetic_energy",
                    "potential_energy", "total_energy", "energy_balance_error_pct"])
        data = np.column_stack([self.t, self.q, self.u, self.tau, self.work, self.external_work,
                                self.dissipation, self.kinetic_energy, self.potential_energy,
                                self.total_energy, self.energy_balance_error])
        return names, data

    def to_csv(self, path: str | Path) -> None:
        """Write one row per sample: ``t``, ``q``, ``u``, ``τ``, work, energies and ``e_E``;
        the header names the columns (``q:<body>.<component>``, see :func:`state_layout`)."""
        names, data = self._columns()
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(names)
            for row in data:
                w.writerow([repr(float(v)) for v in row])

    def to_npz(self, path: str | Path) -> None:
        """Save the histories, energies and the model (as model-file JSON) to ``.npz``;
        read back with :meth:`from_npz`."""
        np.savez_compressed(
            path, t=self.t, q=self.q, u=self.u, tau=self.tau, work=self.work,
            external_work=self.external_work, dissipation=self.dissipation,
            kinetic_energy=self.kinetic_energy, potential_energy=self.potential_energy,
            total_energy=self.total_energy, energy_balance_error=self.energy_balance_error,
            fidelity=np.array(self.fidelity), method=np.array(self.method),
            energy_fidelity=np.array(self.energy_fidelity),
            model=np.array(json.dumps(self.model.to_dict())),
        )

    @classmethod
    def from_npz(cls, path: str | Path) -> SimulationResult:
        """Load a result written by :meth:`to_npz`."""
        with np.load(path, allow_pickle=False) as d:
            model = Model.from_dict(json.loads(str(d["model"])))
            return cls(t=d["t"], q=d["q"], u=d["u"], model=model, fidelity=str(d["fidelity"]),
                       method=str(d["method"]), work=d["work"],
                       external_work=d["external_work"], dissipation=d["dissipation"],
                       tau=d["tau"], energy_fidelity=str(d["energy_fidelity"]))

    def plot(self, path: str | Path | None = None):
        """Plot joint coordinates (quaternions left out), modal coordinates and ``e_E``.

        Returns the matplotlib ``Figure``; saves it to ``path`` when given.  Needs matplotlib
        (``pip install 'flexdyn[plot]'``).
        """
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ImportError(
                "SimulationResult.plot needs matplotlib; install the 'plot' extra: "
                "pip install 'flexdyn[plot]'"
            ) from None
        lay = state_layout(self.model)
        fig = Figure(figsize=(8, 8), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        for e in lay["q"]:
            if e.kind in ("angle", "displacement", "position"):
                ax1.plot(self.t, self.q[:, e.index], label=e.name)
            elif e.kind == "modal":
                ax2.plot(self.t, self.q[:, e.index], label=e.name)
            elif e.name.endswith(".qw"):  # a quaternion: plot its rotation vector
                rv = _rotation_vectors(self.q[:, e.index:e.index + 4])
                for c in range(3):
                    ax1.plot(self.t, rv[:, c], label=f"{e.body}.rot_{'xyz'[c]}")
        ax1.set_ylabel("joint coordinates\n(rad, m)")
        ax2.set_ylabel("modal coordinates η")
        ax3.plot(self.t, self.energy_balance_error, color="k")
        ax3.set_ylabel("energy balance\nerror e_E (%)")
        ax3.set_xlabel("t (s)")
        for ax in (ax1, ax2):
            if ax.lines:
                ax.legend(fontsize="small", ncols=2, loc="best")
        fig.suptitle(f"{self.model.name} ({self.fidelity}, {self.method})")
        if path is not None:
            fig.savefig(path, dpi=120)
        return fig
