"""Innovations factorization, mass-matrix inverse and articulated-body forward dynamics
(Jain & Rodriguez Secs V–VI, Lemmas 2–5, Eqs 51–64; trees per Sec VIII).

Two forms of the articulated-body quantities are implemented:

* :func:`articulated_body_inertias` — Eq 51: all degrees of freedom of a body
  (``χ(i) = [β; η̇]``) are processed together with ``D(i) = ℋ(i) P(i) ℋ*(i)``;
* :func:`articulated_body_inertias_split` — Eqs 62–63: each body is processed as a
  flexible step (``D_f``, ``g``) followed by a hinge step on a massless fictitious body
  (``D_R``, ``G_R``), and only the 6 × 6 ``P_R⁺`` is carried to the parent.

Both depend on ``q`` only and can be reused for many right-hand sides.  Tip-to-base sweeps
run ``for i in reversed(range(n))`` and sum children into ``parent[i]``; base-to-tip sweeps
run ``for i in range(n)``.  All sweeps accept a single right-hand side (nu,) or a block of
them (nu, k).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .chain import Kinematics, Model, Velocities, compute_kinematics
from .newton_euler import modal_bias_force, rnea

__all__ = [
    "ArticulatedFactors",
    "SplitFactors",
    "articulated_body_inertias",
    "articulated_body_inertias_split",
    "articulated_forward_dynamics",
    "innovations_factors",
    "apply_mass_matrix",
    "apply_mass_matrix_inverse",
    "apply_innovations_factor",
    "apply_innovations_factor_inverse",
    "mass_matrix_inverse",
]


def _inertia_scale(P: np.ndarray, H: np.ndarray) -> float:
    """``max|P| · max_r ‖H_r‖²``: the size a ``D = H P Hᵀ`` of a body has when it is not
    singular (used to recognise a singular ``D`` that round-off made slightly positive)."""
    if H.size == 0:
        return 0.0
    return float(np.max(np.abs(P))) * float(np.max(np.sum(np.abs(H) ** 2, axis=1)))


def _spd_inverse(D: np.ndarray, model: Model, i: int, what: str,
                 scale: float = 0.0) -> np.ndarray:
    """Inverse of a symmetric positive definite ``D`` from its Cholesky factor (LAPACK
    ``potrf``/``potri``); ``ValueError`` naming the body if ``D`` is singular or indefinite.

    ``D`` counts as singular when a squared Cholesky pivot is below ``1e-13`` times its
    largest diagonal entry or below ``1e-14 · scale`` (see :func:`_inertia_scale`)."""
    n = D.shape[0]
    if n == 0:
        return D
    tol = max(1e-13 * float(np.max(np.abs(np.diag(D.real)))), 1e-14 * scale,
              np.finfo(float).tiny)
    potrf, potri = scipy.linalg.lapack.get_lapack_funcs(("potrf", "potri"), (D,))
    L, info = potrf(D, lower=1, clean=0)
    if info != 0 or np.min(np.abs(np.diag(L))) ** 2 <= tol:
        raise ValueError(
            f"articulated inertia {what} of body {i} {model.names[i]!r} is singular or not "
            "positive definite (a degree of freedom without inertia, e.g. a massless body "
            "on its joint?)"
        )
    Dinv, info = potri(L, lower=1)
    Dinv = np.tril(Dinv)
    return Dinv + np.tril(Dinv, -1).T


def _sym(A: np.ndarray) -> np.ndarray:
    """Symmetric part ``(A + Aᵀ)/2`` — articulated inertias are symmetric in exact
    arithmetic; removing the rounding asymmetry keeps it from growing along the chain."""
    return 0.5 * (A + A.T)


@dataclass(frozen=True, eq=False)
class ArticulatedFactors:
    """Articulated-body quantities of Eq 51 (one entry per body ``i``).

    Attributes
    ----------
    P : list of (m+6, m+6) — articulated-body inertia ``P(i)``.
    D : list of (nχ, nχ) — ``D(i) = ℋ P ℋ*`` with ``nχ = nu_joint + m``.
    D_inv : list of (nχ, nχ) — ``D(i)⁻¹`` (from the Cholesky factor).
    G : list of (m+6, nχ) — Kalman gain ``G(i) = P ℋ* D⁻¹``.
    tau_bar : list of (m+6, m+6) — ``τ̄(i) = I − G ℋ``.
    P_plus : list of (m+6, m+6) — ``P⁺(i) = τ̄(i) P(i)``.
    """

    P: list
    D: list
    D_inv: list
    G: list
    tau_bar: list
    P_plus: list

    def K(self, kin: Kinematics, i: int) -> np.ndarray:
        """``K(p, i) = Φ(p, i) G(i)`` ((m_p+6) × nχ)."""
        return kin.Phi(i) @ self.G[i]

    def Psi(self, kin: Kinematics, i: int) -> np.ndarray:
        """``Ψ(p, i) = Φ(p, i) τ̄(i)`` ((m_p+6) × (m+6))."""
        return kin.Phi(i) @ self.tau_bar[i]


def _child_inertia(kin: Kinematics, i: int, P_plus_R: np.ndarray) -> np.ndarray:
    """``Φ(p, i) P⁺(i) Φ*(p, i) = A(i) φ(i) P_R⁺(i) φ*(i) A*(i)`` (only the rigid block of
    ``P⁺(i)`` reaches the parent)."""
    AP = kin.A[i] @ kin.phi[i]
    return AP @ P_plus_R @ AP.T


def articulated_body_inertias(model: Model, kin: Kinematics) -> ArticulatedFactors:
    """Articulated-body quantities ``P, D, G, τ̄, P⁺`` of Eq 51, tip-to-base over a tree."""
    n = model.n_bodies
    P = [M.copy() for M in kin.M_m]
    D, D_inv, G, tau_bar, P_plus = ([None] * n for _ in range(5))
    for i in reversed(range(n)):  # tip-to-base
        m = int(model.n_modes[i])
        H = kin.Hcal[i]
        PH = P[i] @ H.T
        D[i] = H @ PH
        D_inv[i] = _spd_inverse(D[i], model, i, "D", _inertia_scale(P[i], H))
        G[i] = PH @ D_inv[i]
        tau_bar[i] = np.eye(m + 6) - G[i] @ H
        P_plus[i] = _sym(tau_bar[i] @ P[i])
        p = int(model.parent[i])
        if p >= 0:
            P[p] += _child_inertia(kin, i, P_plus[i][m:, m:])
    return ArticulatedFactors(P=P, D=D, D_inv=D_inv, G=G, tau_bar=tau_bar, P_plus=P_plus)


@dataclass(frozen=True, eq=False)
class SplitFactors:
    """Articulated-body quantities of the flexible/hinge split, Eq 63.

    Attributes
    ----------
    P : list of (m+6, m+6) — ``P(i) = Σ_c A Γ(c) A* + M_m(i)``.
    Df_inv : list of (m, m) — ``D_f(i)⁻¹``, ``D_f = ℋ_f P ℋ_f*``.
    g : list of (6, m) — ``g = μ D_f⁻¹`` with ``μ = [P^{rf}, P^{rr}] ℋ_f*``.
    P_R : list of (6, 6) — ``P_R = P^{rr} − g μ*``.
    DR_inv : list of (nu_j, nu_j) — ``D_R⁻¹``, ``D_R = H_F P_R H_F*``.
    G_R : list of (6, nu_j) — ``G_R = P_R H_F* D_R⁻¹``.
    P_R_plus : list of (6, 6) — ``P_R⁺ = τ̄_R P_R``, ``τ̄_R = I − G_R H_F``.
    """

    P: list
    Df_inv: list
    g: list
    P_R: list
    DR_inv: list
    G_R: list
    P_R_plus: list


def articulated_body_inertias_split(model: Model, kin: Kinematics) -> SplitFactors:
    """Articulated-body quantities with flexible and hinge steps separated (Eqs 62–63)."""
    n = model.n_bodies
    P = [M.copy() for M in kin.M_m]
    Df_inv, g, P_R, DR_inv, G_R, P_R_plus = ([None] * n for _ in range(6))
    for i in reversed(range(n)):  # tip-to-base
        m, nu = int(model.n_modes[i]), int(model.nu_joint[i])
        H = kin.Hcal[i]
        Hf, H_F = H[nu:], H[:nu, m:]  # ℋ_f (m × (m+6)), H_F (nu × 6)
        # flexible step
        mu = P[i][m:] @ Hf.T  # μ = [P^{rf}, P^{rr}] ℋ_f*   (6 × m)
        scale = _inertia_scale(P[i], H)
        Df_inv[i] = _spd_inverse(Hf @ P[i] @ Hf.T, model, i, "D_f", scale)
        g[i] = mu @ Df_inv[i]
        P_R[i] = _sym(P[i][m:, m:] - g[i] @ mu.T)
        # hinge step
        PH = P_R[i] @ H_F.T
        DR_inv[i] = _spd_inverse(H_F @ PH, model, i, "D_R", scale)
        G_R[i] = PH @ DR_inv[i]
        P_R_plus[i] = _sym(P_R[i] - G_R[i] @ PH.T)  # τ̄_R P_R
        p = int(model.parent[i])
        if p >= 0:
            P[p] += _child_inertia(kin, i, P_R_plus[i])  # A Γ A*,  Γ = φ P_R⁺ φ*
    return SplitFactors(P=P, Df_inv=Df_inv, g=g, P_R=P_R, DR_inv=DR_inv, G_R=G_R,
                        P_R_plus=P_R_plus)


def _bias_forces_modal(model: Model, kin: Kinematics, vel: Velocities | None,
                       f_ext: np.ndarray | None, i: int, k: int | None) -> np.ndarray:
    """``b_m(i) + K_m ϑ(i)`` (plus damping, minus external wrench); zero without ``vel``.

    Shape (m+6,) or (m+6, k) to match a block of right-hand sides."""
    m = int(model.n_modes[i])
    shape = (m + 6,) if k is None else (m + 6, k)
    if vel is None:
        return np.zeros(shape)
    b = modal_bias_force(model, kin, vel, f_ext, i)
    return b if k is None else np.broadcast_to(b[:, None], shape).copy()


def articulated_forward_dynamics(model: Model, kin: Kinematics, vel: Velocities | None,
                                 tau: np.ndarray, f_ext: np.ndarray | None = None,
                                 split: bool = False, factors=None,
                                 gravity: bool = True) -> np.ndarray:
    """Articulated-body forward dynamics, Eq 58 (or Eq 64 with ``split=True``).

    Tip-to-base filter::

        z(i)  = Σ_c Φ(i, c) z⁺(c) + P(i) a_m(i) + b_m(i) + K_m ϑ(i)
        ε(i)  = T(i) − ℋ(i) z(i),   ν(i) = D⁻¹(i) ε(i),   z⁺(i) = z(i) + G(i) ε(i)

    base-to-tip smoother::

        α⁺(i) = Φ*(p, i) α_m(p),   χ̇(i) = ν(i) − G*(i) α⁺(i),
        α_m(i) = α⁺(i) + ℋ*(i) χ̇(i) + a_m(i)

    Parameters
    ----------
    kin : position terms; vel : velocity terms, or None for zero velocity-dependent,
        elastic and external forces (then, with ``gravity=False``, this applies ``M⁻¹``).
    tau : (nu,) or (nu, k) generalized forces.
    factors : precomputed :class:`ArticulatedFactors` / :class:`SplitFactors` (optional).
    gravity : include the model's gravity (as the acceleration ``[0; −g]`` of the ground).

    Returns
    -------
    u̇ : array shaped like ``tau``.
    """
    n = model.n_bodies
    tau = np.asarray(tau, dtype=float)
    k = None if tau.ndim == 1 else tau.shape[1]
    if factors is None:
        factors = (articulated_body_inertias_split if split else articulated_body_inertias)(
            model, kin)
    zplus: list = [None] * n
    nu_: list = [None] * n
    for i in reversed(range(n)):  # tip-to-base filter
        m = int(model.n_modes[i])
        z = _bias_forces_modal(model, kin, vel, f_ext, i, k)
        for c in model.children[i]:
            zc = kin.A[c] @ (kin.phi[c] @ zplus[c])
            z = z + zc
        T = tau[model.u_slice(i)]
        if split:
            nj = int(model.nu_joint[i])
            H = kin.Hcal[i]
            eps_f = T[nj:] - H[nj:] @ z  # T_f − ℋ_f z
            nu_f = factors.Df_inv[i] @ eps_f
            z_R = z[m:] + factors.g[i] @ eps_f
            if vel is not None:
                a_R = vel.a_m[i][m:]
                z_R = z_R + (factors.P_R[i] @ a_R if k is None else (factors.P_R[i] @ a_R)[:, None])
            eps_R = T[:nj] - H[:nj, m:] @ z_R
            nu_R = factors.DR_inv[i] @ eps_R
            zplus[i] = z_R + factors.G_R[i] @ eps_R
            nu_[i] = (nu_R, nu_f)
        else:
            if vel is not None:
                Pa = factors.P[i] @ vel.a_m[i]
                z = z + (Pa if k is None else Pa[:, None])
            eps = T - kin.Hcal[i] @ z
            nu_[i] = factors.D_inv[i] @ eps
            zplus[i] = (z + factors.G[i] @ eps)[m:]
    udot = np.zeros_like(tau)
    alpha: list = [None] * n
    g0 = np.concatenate([np.zeros(3), -model.gravity]) if gravity else np.zeros(6)
    a_ground = g0 if k is None else np.repeat(g0[:, None], k, axis=1)
    for i in range(n):  # base-to-tip smoother
        m = int(model.n_modes[i])
        p = int(model.parent[i])
        a_R = kin.phi[i].T @ (kin.A[i].T @ alpha[p] if p >= 0 else a_ground)
        if vel is not None:
            am = vel.a_m[i][m:]
            am = am if k is None else am[:, None]
        else:
            am = 0.0
        if split:
            nj = int(model.nu_joint[i])
            nu_R, nu_f = nu_[i]
            beta_dot = nu_R - factors.G_R[i].T @ a_R
            a_R = a_R + kin.Hcal[i][:nj, m:].T @ beta_dot + am
            eta_ddot = nu_f - factors.g[i].T @ a_R
            chi_dot = np.concatenate([beta_dot, eta_ddot])
            a = np.concatenate([eta_ddot, a_R + kin.Q[i] @ eta_ddot])
        else:
            a_plus = np.concatenate([np.zeros((m,) + a_R.shape[1:]), a_R])
            chi_dot = nu_[i] - factors.G[i].T @ a_plus
            a = a_plus + kin.Hcal[i].T @ chi_dot
            a[m:] = a[m:] + am
        udot[model.u_slice(i)] = chi_dot
        alpha[i] = a
    return udot


def innovations_factors(model: Model, q: np.ndarray, fidelity: str = "full") -> tuple:
    """Innovations factors at ``q``: ``(kin, factors)`` with ``D, G, τ̄, P`` per body and the
    methods ``factors.K(kin, i)`` = ``K(p, i)`` and ``factors.Psi(kin, i)`` = ``Ψ(p, i)``."""
    kin = compute_kinematics(model, q, fidelity)
    return kin, articulated_body_inertias(model, kin)


def apply_mass_matrix_inverse(model: Model, kin: Kinematics, b: np.ndarray,
                              factors: ArticulatedFactors | None = None) -> np.ndarray:
    """``M⁻¹ b`` by the O(N) sweeps of Lemma 4 (no N × N matrix is formed); b (nu,) or (nu, k)."""
    return articulated_forward_dynamics(model, kin, None, b, factors=factors, gravity=False)


def apply_mass_matrix(model: Model, kin: Kinematics, x: np.ndarray) -> np.ndarray:
    """``M x = ℋ Φ M_m Φ* ℋ* x`` by the two O(N) sweeps of Eq 44 with every bias term
    dropped (Eq 43); x (nu,) or (nu, k)."""
    return rnea(model, kin, None, np.asarray(x, dtype=float), gravity=False)


def _apply_factor(model: Model, kin: Kinematics, factors: ArticulatedFactors, x: np.ndarray,
                  sign: float, carry) -> np.ndarray:
    """Tip-to-base recursion ``y = x + sign · ℋ w`` with
    ``w(i) = Σ_c Φ(i, c) [G(c) x(c) + carry(c, w(c))]``."""
    n = model.n_bodies
    x = np.asarray(x, dtype=float)
    w: list = [None] * n
    y = np.array(x, dtype=float)
    for i in reversed(range(n)):
        m = int(model.n_modes[i])
        wi = np.zeros((m + 6,) + x.shape[1:])
        for c in model.children[i]:
            mc = int(model.n_modes[c])
            s = factors.G[c] @ x[model.u_slice(c)] + carry(c, w[c])
            wi = wi + kin.A[c] @ (kin.phi[c] @ s[mc:])
        w[i] = wi
        y[model.u_slice(i)] += sign * (kin.Hcal[i] @ wi)
    return y


def apply_innovations_factor(model: Model, kin: Kinematics, factors: ArticulatedFactors,
                             x: np.ndarray) -> np.ndarray:
    """``[I + ℋ Φ K] x`` (Lemma 2's lower-triangular factor) by one tip-to-base sweep."""
    return _apply_factor(model, kin, factors, x, 1.0, lambda c, wc: wc)


def apply_innovations_factor_inverse(model: Model, kin: Kinematics, factors: ArticulatedFactors,
                                     x: np.ndarray) -> np.ndarray:
    """``[I − ℋ Ψ K] x = [I + ℋ Φ K]⁻¹ x`` (Lemma 3) by one tip-to-base sweep."""
    return _apply_factor(model, kin, factors, x, -1.0, lambda c, wc: factors.tau_bar[c] @ wc)


def mass_matrix_inverse(model: Model, q: np.ndarray, fidelity: str = "full") -> np.ndarray:
    """``M⁻¹(q)`` (nu × nu) from the innovations factors (Lemma 4), without inverting ``M``:
    the O(N) sweeps applied to the identity block."""
    kin, factors = innovations_factors(model, q, fidelity)
    return apply_mass_matrix_inverse(model, kin, np.eye(model.nu), factors)
