"""Alternative generalized speeds (Banerjee & Lemak): an exact change of speeds ``u = W(q) v``.

flexdyn's own speeds ``u`` are, per body, the joint speeds ``β`` (relative rates; for
spherical and free joints the angular (and linear) velocity of ``J_c`` relative to ``J_p`` in
``J_c`` coordinates) followed by the modal rates ``η̇``.  Banerjee & Lemak build their
recursion on two other choices; this module offers them as a linear, invertible change of
speeds at every configuration, ``v = W⁻¹(q) u``, on top of the unchanged recursions:

``"default"``
    ``v = u``.
``"hooke"`` (Banerjee & Lemak Eq 4, after Mitiguy & Kane)
    for every joint whose motion subspace is purely rotational (revolute, universal/Hooke,
    spherical, Euler, rotational joint maps), the joint's speeds are the components of the
    **absolute** angular velocity ``ω_c`` of the child's joint frame ``J_c`` on the joint's
    current axes (the columns ``h_k`` of ``H*``, in ``J_c``)::

        v_j = H_ωᵀ ω_c = H_ωᵀ (ω_t + H_ω β),

    with ``ω_t`` the angular velocity of the parent's attach node — the parent's angular
    velocity plus its elastic rotation rate at the hinge, ``ω^{c(j)} + Σ φ_i^{c(j)} q̇_i``.
    For orthonormal axes (a universal joint with perpendicular axes, a spherical joint) this
    is Eq 4, ``ω_c = ω_t·(U − h₁h₁ − h₂h₂) + v₁h₁ + v₂h₂``: the attach node's rotation rate
    (rigid and elastic) along the hinge axes is absorbed into the joint speeds, and for a
    spherical joint the speeds are the body components of the angular velocity.  Joints
    with a translational part (free, prismatic, planar, …) and modal rates keep flexdyn's
    speeds.
``"deleuterio-barfoot"`` (Banerjee & Lemak Eqs 1–2, after D'Eleuterio & Barfoot)
    for every flexible body the modal speeds are
    ``w = η̇ + N(η) ω``, ``N(η) = [G₁η, G₂η, G₃η]`` (n_m × 3), with ``ω`` the angular
    velocity of the body frame ``F`` in ``F`` coordinates and::

        G_k = M_ηη⁻¹ Σ_j m_j Π_t(j)ᵀ ẽ_k Π_t(j)

    (``M_ηη`` the modal block of ``M_m⁰``, Eq 23, which is ``Σ_j m_j Π_t(j)ᵀ Π_t(j)`` when
    the nodes carry no rotary inertia): Eq 2, ``M_ηη (w − η̇) = Σ_j m_j Π_t(j)ᵀ (ω × Π_t(j) η)``,
    i.e. ``Π_t w`` is ``Π_t η̇`` plus the mass-weighted projection of ``ω × (deformation)``
    on the mode shapes.  Joint speeds keep flexdyn's.

When ``∂M/∂q = 0`` in the D'Eleuterio–Barfoot speeds: the translational velocity of node
``j`` in ``F`` is ``v + ω × l0_j + Π_t(j) w + r_j`` with the residual
``r_j = ω × Π_t(j) η − Π_t(j) N(η) ω``.  The mass matrix of one free body whose frame is
its joint frame (a ``free`` joint, ``child_node`` null) is constant when ``r = 0`` for all
``(ω, η)`` and no node rotary inertia sees the elastic rotations (and, but for special
cancellations, only then), i.e.

* the span of ``Π_t`` is closed under ``ω×`` applied node by node (it is ``R³ ⊗ U``: the
  modes come as three copies of scalar node shapes ``U``, one per axis — e.g. the full
  nodal basis), and
* every node with a rotary inertia has ``Π_r(j) = 0`` (or ``J_j = 0``).

Otherwise ``r`` is the part of ``ω × (deformation)`` outside the modes' span and ``M`` varies
to first order in ``η`` (``docs/generalized-speeds.md`` gives the size on a beam).

The equations in ``v`` (``Ẇ v = −W (d/dt W⁻¹) u``)::

    M_v = Wᵀ M W,    C_v = Wᵀ (C + M Ẇ v),    M_v v̇ + C_v = Wᵀ τ,
    v̇ = W⁻¹ u̇ + (d/dt W⁻¹) u   with u̇ flexdyn's forward dynamics at (q, u = W v, τ).

``τ`` stays the generalized force of flexdyn's speeds (its power ``τᵀu = (Wᵀτ)ᵀ v``).
``W⁻¹`` is assembled from the angular-velocity Jacobians of the velocity recursion (Eq 11)
on the deformed geometry of the model (:func:`flexdyn.terms.geometry_terms`), and its rate
``(d/dt W⁻¹) u`` by one complex step of ``W⁻¹`` along ``q̇`` (exact to round-off), so the
speeds are an exact change of variables for every fidelity and method.  The per-state
functions here take real states; :func:`mass_matrix` and :func:`speed_map` also take
complex ``q`` (complex-step derivatives).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .body import Body, require_lumped_mass
from .chain import Model
from .dynamics import bias_forces as _bias_forces
from .dynamics import forward_dynamics as _forward_dynamics
from .dynamics import mass_matrix as _mass_matrix
from .simulation import rhs as _rhs
from .spatial import skew
from .terms import (
    DEFAULT_FIDELITY,
    PositionTerms,
    body_models,
    geometry_terms,
    modal_velocities,
    position_terms,
)

__all__ = ["SPEEDS", "DEleuterioBarfootSpeeds", "DefaultSpeeds", "HookeSpeeds", "Speeds",
           "bias_forces", "forward_dynamics", "from_speeds", "mass_matrix", "rhs", "speed_map",
           "to_speeds"]

_H = 1e-30  #: complex step of the rate of W⁻¹


# ----------------------------------------------------------------------------------------------
# speed choices
# ----------------------------------------------------------------------------------------------
class Speeds:
    """A choice of generalized speeds ``v = W⁻¹(q) u`` (subclasses: the registry ``SPEEDS``).

    A choice overwrites rows of ``W⁻¹`` (identity elsewhere) in :meth:`fill`, from the
    position terms and the angular velocities of the body frames per unit ``u``.
    """

    name: ClassVar[str] = ""

    def applies(self, model: Model) -> bool:
        """Whether any row of ``W⁻¹`` can differ from the identity on ``model``."""
        return False

    def fill(self, model: Model, pos: PositionTerms, Jw: list, Winv: np.ndarray) -> None:
        """Overwrite rows of ``Winv`` (nu × nu, identity on entry).

        Parameters
        ----------
        pos : position terms on the deformed geometry at ``q``.
        Jw : list of (3, nu) — angular velocity of ``F_i`` in ``F_i`` coordinates per unit
            ``u`` (rad/s per unit speed).
        """


class DefaultSpeeds(Speeds):
    """flexdyn's speeds, ``v = u``."""

    name = "default"


class HookeSpeeds(Speeds):
    """Banerjee & Lemak Eq 4: rotational joints' speeds ``v_j = H_ωᵀ ω_c`` (module notes)."""

    name = "hooke"

    def applies(self, model: Model) -> bool:
        return any(j.nu and not np.any(j.motion_subspace(j.neutral())[3:])
                   for j in model.joints)

    def fill(self, model: Model, pos: PositionTerms, Jw: list, Winv: np.ndarray) -> None:
        for i in range(model.n_bodies):
            S, nj = pos.S[i], int(model.nu_joint[i])
            if nj == 0 or np.any(S[3:] != 0):
                continue
            # ω of J_c in J_c coordinates: R_{F←Jc}ᵀ (ω_F − Q_ω η̇)  (F_i moves with η̇ when the
            # body hangs on its own node)
            m, s = int(model.n_modes[i]), int(model.u_start[i])
            J = Jw[i].copy()
            J[:, s + nj:s + nj + m] -= pos.Q[i][:3]
            Winv[s:s + nj] = S[:3].T @ (pos.T_joint[i].R.T @ J)


_G_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def modal_rotation_maps(body: Body) -> np.ndarray:
    """``G_k`` (3, n_m, n_m) of the D'Eleuterio–Barfoot speeds (module notes, Eq 2):
    ``G_k = M_ηη⁻¹ Σ_j m_j Π_t(j)ᵀ ẽ_k Π_t(j)`` (dimensionless), cached per body."""
    if body not in _G_CACHE:
        require_lumped_mass((body,), "the D'Eleuterio–Barfoot speeds")
        m = body.n_modes
        C = np.stack([np.einsum("j,jai,ab,jbl->il", body.node_masses, body.Pi_t, skew(e),
                                body.Pi_t) for e in np.eye(3)])
        G = np.linalg.solve(body.M_m0[:m, :m], C)
        G.setflags(write=False)
        _G_CACHE[body] = G
    return _G_CACHE[body]


class DEleuterioBarfootSpeeds(Speeds):
    """Banerjee & Lemak Eqs 1–2: modal speeds ``w = η̇ + N(η) ω`` (module notes)."""

    name = "deleuterio-barfoot"

    def applies(self, model: Model) -> bool:
        return bool(np.any(model.n_modes))

    def fill(self, model: Model, pos: PositionTerms, Jw: list, Winv: np.ndarray) -> None:
        for i, body in enumerate(model.bodies):
            m = int(model.n_modes[i])
            if m == 0:
                continue
            s = int(model.u_start[i] + model.nu_joint[i])
            N = np.einsum("kil,l->ik", modal_rotation_maps(body), pos.eta[i])  # (m, 3)
            Winv[s:s + m] = Winv[s:s + m] + N @ Jw[i]


#: The speed choices by name.
SPEEDS: dict[str, Speeds] = {c.name: c() for c in (DefaultSpeeds, HookeSpeeds,
                                                    DEleuterioBarfootSpeeds)}


def _choice(speeds: str) -> Speeds:
    if not isinstance(speeds, str) or speeds not in SPEEDS:
        raise ValueError(f"unknown speeds {speeds!r}; expected one of {tuple(SPEEDS)}")
    return SPEEDS[speeds]


# ----------------------------------------------------------------------------------------------
# the map
# ----------------------------------------------------------------------------------------------
def _inverse_map(model: Model, q: np.ndarray, choice: Speeds, fidelity: str) -> np.ndarray:
    dtype = np.result_type(q, float)
    Winv = np.eye(model.nu, dtype=dtype)
    if not choice.applies(model):
        return Winv
    pos = geometry_terms(position_terms(model, q, body_models(model, fidelity), fidelity))
    V_m = modal_velocities(model, pos, np.eye(model.nu, dtype=dtype))
    Jw = [V_m[i][int(model.n_modes[i]):int(model.n_modes[i]) + 3]
          for i in range(model.n_bodies)]
    choice.fill(model, pos, Jw, Winv)
    return Winv


def speed_map(model: Model, q: np.ndarray, speeds: str = "default",
              fidelity: str = DEFAULT_FIDELITY) -> tuple[np.ndarray, np.ndarray]:
    """``W(q)`` and ``W⁻¹(q)`` (nu × nu each) of ``u = W v`` for a choice of speeds.

    Parameters
    ----------
    q : (nq,) coordinates (real or complex).
    speeds : a key of :data:`SPEEDS`.
    fidelity : body model whose (deformed) geometry defines the kinematics.
    """
    choice = _choice(speeds)
    q, _ = model.check_state(q)
    Winv = _inverse_map(model, q, choice, fidelity)
    return np.linalg.solve(Winv, np.eye(model.nu, dtype=Winv.dtype)), Winv


def to_speeds(model: Model, q: np.ndarray, u: np.ndarray, speeds: str,
              fidelity: str = DEFAULT_FIDELITY) -> np.ndarray:
    """``v = W⁻¹(q) u`` (nu,) from flexdyn's speeds ``u`` (nu,)."""
    q, u = model.check_state(q, u)
    return _inverse_map(model, q, _choice(speeds), fidelity) @ u


def from_speeds(model: Model, q: np.ndarray, v: np.ndarray, speeds: str,
                fidelity: str = DEFAULT_FIDELITY) -> np.ndarray:
    """``u = W(q) v`` (nu,) from the speeds ``v`` (nu,) of a choice."""
    q, v = model.check_state(q, v)
    return np.linalg.solve(_inverse_map(model, q, _choice(speeds), fidelity), v)


def _rate(model: Model, q: np.ndarray, u: np.ndarray, choice: Speeds,
          fidelity: str) -> np.ndarray:
    """``(d/dt W⁻¹) u`` (nu,) along ``q̇ = Γ(q) u``, by one complex step (real ``q``, ``u``)."""
    if not choice.applies(model):
        return np.zeros(model.nu)
    qc = q + 1j * _H * model.qdot(q, u)
    return (_inverse_map(model, qc, choice, fidelity) @ u).imag / _H


# ----------------------------------------------------------------------------------------------
# equations in v
# ----------------------------------------------------------------------------------------------
def mass_matrix(model: Model, q: np.ndarray, speeds: str = "default",
                fidelity: str = DEFAULT_FIDELITY, backend: str = "engine") -> np.ndarray:
    """``M_v = Wᵀ M W`` (nu × nu): the mass matrix in the speeds ``v`` (real or complex ``q``;
    complex ``q`` takes the reference backend)."""
    W, _ = speed_map(model, q, speeds, fidelity)
    return W.T @ _mass_matrix(model, q, fidelity, backend) @ W


def bias_forces(model: Model, q: np.ndarray, v: np.ndarray, speeds: str = "default",
                fidelity: str = DEFAULT_FIDELITY, backend: str = "engine") -> np.ndarray:
    """``C_v = Wᵀ (C + M Ẇ v)`` (nu,), so that ``M_v v̇ + C_v = Wᵀ τ``; ``C`` is
    :func:`flexdyn.bias_forces` (gravity, velocity products, elastic and damping forces)."""
    choice = _choice(speeds)
    q, v = model.check_state(q, v)
    Winv = _inverse_map(model, q, choice, fidelity)
    W = np.linalg.solve(Winv, np.eye(model.nu))
    u = W @ v
    Wdot_v = -W @ _rate(model, q, u, choice, fidelity)
    C = _bias_forces(model, q, u, fidelity, backend=backend)
    return W.T @ (C + _mass_matrix(model, q, fidelity, backend) @ Wdot_v)


def forward_dynamics(model: Model, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
                     speeds: str = "default", method: str = "articulated",
                     fidelity: str = DEFAULT_FIDELITY, backend: str = "engine") -> np.ndarray:
    """``v̇`` (nu,) in the speeds ``v``: ``v̇ = W⁻¹ u̇ + (d/dt W⁻¹) u`` with ``u = W v`` and
    ``u̇`` :func:`flexdyn.forward_dynamics` at ``(q, u, τ)``.

    Parameters
    ----------
    q : (nq,);  v : (nu,) speeds of the choice ``speeds`` (real).
    tau : (nu,) or None — generalized forces of flexdyn's speeds (N m, N, modal forces).
    method, fidelity, backend : as for :func:`flexdyn.forward_dynamics`.
    """
    choice = _choice(speeds)
    if not choice.applies(model):  # W = I
        return _forward_dynamics(model, q, v, tau, method=method, fidelity=fidelity,
                                 backend=backend)
    q, v = model.check_state(q, v)
    Winv = _inverse_map(model, q, choice, fidelity)
    u = np.linalg.solve(Winv, v)
    return _vdot(model, q, u, Winv, tau, choice, method, fidelity, backend)


def _vdot(model: Model, q: np.ndarray, u: np.ndarray, Winv: np.ndarray, tau: Any,
          choice: Speeds, method: str, fidelity: str, backend: str) -> np.ndarray:
    """``v̇ = W⁻¹ u̇ + (d/dt W⁻¹) u`` (nu,) at ``(q, u = W v)`` with ``u̇`` flexdyn's."""
    udot = _forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity,
                             backend=backend)
    return Winv @ udot + _rate(model, q, u, choice, fidelity)


def rhs(model: Model, speeds: str = "default", fidelity: str = DEFAULT_FIDELITY,
        method: str = "articulated", backend: str = "engine"
        ) -> Callable[..., np.ndarray]:
    """State derivative in the speeds of a choice: ``f(t, x, tau=None) -> ẋ`` with
    ``x = [q; v]`` (nq + nu,) and ``ẋ = [Γ(q) W(q) v; v̇]``; ``tau`` None, an array (nu,) or
    a callable ``tau(t, q, u)`` of flexdyn's speeds ``u``.  Quaternions are normalised
    before use.  Start from ``x0 = [q0; to_speeds(model, q0, u0, speeds)]`` and read
    ``u = from_speeds(model, q, v, speeds)`` back."""
    choice = _choice(speeds)
    if not choice.applies(model):  # W = I: flexdyn's own (compiled) state derivative
        return _rhs(model, fidelity, method, backend=backend)
    nq = model.nq

    def f(t: float, x: np.ndarray, tau: Any = None) -> np.ndarray:
        q = np.asarray(x[:nq])
        q, v = model.check_state(model.normalize_configuration(q) if nq != model.nu else q,
                                 x[nq:])
        Winv = _inverse_map(model, q, choice, fidelity)
        u = np.linalg.solve(Winv, v)
        tau_t = tau(t, q, u) if callable(tau) else tau
        return np.concatenate([model.qdot(q, u), _vdot(model, q, u, Winv, tau_t, choice,
                                                        method, fidelity, backend)])

    return f
