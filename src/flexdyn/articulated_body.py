"""Innovations factorization, mass-matrix inverse and articulated-body forward dynamics
(Jain & Rodriguez Secs V–VI, Lemmas 2–5, Eqs 51–64; trees per Sec VIII).

Two forms of the articulated-body quantities are implemented:

* :func:`articulated_body_inertias` — Eq 51: all degrees of freedom of a body
  (``χ(i) = [β; η̇]``) are processed together with ``D(i) = ℋ(i) P(i) ℋ*(i)``;
* :func:`articulated_body_inertias_split` — Eqs 62–63: each body is processed as a
  flexible step (``D_f``, ``g``; ``D_f⁻¹`` supplied by the body model, e.g. Eq B3 for the
  ruthless model) followed by a hinge step on a massless fictitious body (``D_R``, ``G_R``),
  and only the 6 × 6 ``P_R⁺`` is carried to the parent.

Both depend on ``q`` only and can be reused for many right-hand sides; each has its own
forward-dynamics sweep pair (:func:`articulated_forward_dynamics`, Eq 58, and
:func:`articulated_forward_dynamics_split`, Eq 64).  Tip-to-base sweeps run
``for i in reversed(range(n))`` and sum children into ``parent[i]``; base-to-tip sweeps run
``for i in range(n)``.  The sweeps work on blocks of right-hand sides (nu, k); the entry
points also take a single one (nu,).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chain import Model
from .linalg import as_columns, inertia_scale, spd_inverse, sym
from .newton_euler import rnea
from .terms import PositionTerms, VelocityTerms

__all__ = [
    "ArticulatedFactors",
    "SplitFactors",
    "articulated_body_inertias",
    "articulated_body_inertias_split",
    "articulated_forward_dynamics",
    "articulated_forward_dynamics_split",
    "apply_mass_matrix",
    "apply_mass_matrix_inverse",
    "apply_innovations_factor",
    "apply_innovations_factor_inverse",
]


def _what(model: Model, name: str, i: int) -> str:
    return f"articulated inertia {name} of body {i} {model.names[i]!r}"


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

    def K(self, pos: PositionTerms, i: int) -> np.ndarray:
        """``K(p, i) = Φ(p, i) G(i)`` ((m_p+6) × nχ)."""
        return pos.Phi(i) @ self.G[i]

    def Psi(self, pos: PositionTerms, i: int) -> np.ndarray:
        """``Ψ(p, i) = Φ(p, i) τ̄(i)`` ((m_p+6) × (m+6))."""
        return pos.Phi(i) @ self.tau_bar[i]


def _child_inertia(pos: PositionTerms, i: int, P_plus_R: np.ndarray) -> np.ndarray:
    """``Φ(p, i) P⁺(i) Φ*(p, i) = A(i) φ(i) P_R⁺(i) φ*(i) A*(i)`` (only the rigid block of
    ``P⁺(i)`` reaches the parent)."""
    AP = pos.A[i] @ pos.phi[i]
    return AP @ P_plus_R @ AP.T


def articulated_body_inertias(model: Model, pos: PositionTerms,
                              rows: list | None = None) -> ArticulatedFactors:
    """Articulated-body quantities ``P, D, G, τ̄, P⁺`` of Eq 51, tip-to-base over a tree.

    ``rows`` (optional): per body, the indices of the degrees of freedom of ``χ(i)`` (rows of
    ``ℋ(i)``) that the recursion eliminates; the others are kept in the articulated inertia
    (their accelerations are prescribed: hybrid dynamics).  Default: all of them (Eq 51);
    ``D``, ``D_inv`` and ``G`` are then over the listed rows only."""
    n = model.n_bodies
    maps = pos.Hcal if rows is None else [H[r] for H, r in zip(pos.Hcal, rows, strict=True)]
    P = [np.array(M) for M in pos.M_m]
    D, D_inv, G, tau_bar, P_plus = ([None] * n for _ in range(5))
    for i in reversed(range(n)):  # tip-to-base
        m = int(model.n_modes[i])
        H = maps[i]
        PH = P[i] @ H.T
        D[i] = H @ PH
        D_inv[i] = spd_inverse(D[i], _what(model, "D", i), inertia_scale(P[i], H))
        G[i] = PH @ D_inv[i]
        tau_bar[i] = np.eye(m + 6) - G[i] @ H
        P_plus[i] = sym(tau_bar[i] @ P[i])
        p = int(model.parent[i])
        if p >= 0:
            P[p] = P[p] + _child_inertia(pos, i, P_plus[i][m:, m:])
    return ArticulatedFactors(P=P, D=D, D_inv=D_inv, G=G, tau_bar=tau_bar, P_plus=P_plus)


@dataclass(frozen=True, eq=False)
class SplitFactors:
    """Articulated-body quantities of the flexible/hinge split, Eq 63.

    Attributes
    ----------
    P : list of (m+6, m+6) or None — ``P(i) = Σ_c A Γ(c) A* + M_m(i)`` (None where the body
        model's flexible step does not form it, e.g. the ruthless one).
    Df_inv : list of (m, m) — ``D_f(i)⁻¹``, ``D_f = ℋ_f P ℋ_f*`` (from the body model).
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


def articulated_body_inertias_split(model: Model, pos: PositionTerms) -> SplitFactors:
    """Articulated-body quantities with flexible and hinge steps separated (Eqs 62–63).

    The flexible step is the body model's (``flexible_step``: ``P``, ``μ``, ``D_f⁻¹`` from
    ``M_m`` and the children's ``Γ(c) = φ(c) P_R⁺(c) φ*(c)``, explicitly or by Eq B3); then
    ``g = μ D_f⁻¹``, ``P_R = P^{rr} − g μ*`` and the hinge step on ``P_R``."""
    n = model.n_bodies
    children: list = [[] for _ in range(n)]
    P, Df_inv, g, P_R, DR_inv, G_R, P_R_plus = ([None] * n for _ in range(7))
    for i in reversed(range(n)):  # tip-to-base
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        H = pos.Hcal[i]
        Hf, H_F = H[nj:], H[:nj, m:]  # ℋ_f (m × (m+6)), H_F (nu × 6)
        # flexible step
        step = pos.body_models[i].flexible_step(pos.M_m[i], Hf, children[i],
                                                f"of body {i} {model.names[i]!r}")
        P[i], Df_inv[i] = step.P, step.Df_inv
        g[i] = step.mu @ step.Df_inv
        P_R[i] = sym(step.P_rr - g[i] @ step.mu.T)
        # hinge step
        PH = P_R[i] @ H_F.T
        DR_inv[i] = spd_inverse(H_F @ PH, _what(model, "D_R", i),
                                inertia_scale(step.P_rr, H_F))
        G_R[i] = PH @ DR_inv[i]
        P_R_plus[i] = sym(P_R[i] - G_R[i] @ PH.T)  # τ̄_R P_R
        p = int(model.parent[i])
        if p >= 0:  # Γ(i) at the parent's attach node; children in increasing order
            children[p].insert(0, (pos.A[i], pos.phi[i] @ P_R_plus[i] @ pos.phi[i].T))
    return SplitFactors(P=P, Df_inv=Df_inv, g=g, P_R=P_R, DR_inv=DR_inv, G_R=G_R,
                        P_R_plus=P_R_plus)


def _ground_acceleration(model: Model, gravity: bool) -> np.ndarray:
    """``[0; −g]`` (6, 1), the fictitious acceleration of the ground that adds gravity."""
    return np.concatenate([np.zeros(3), -model.gravity if gravity else np.zeros(3)])[:, None]


def articulated_forward_dynamics(model: Model, pos: PositionTerms, vel: VelocityTerms,
                                 tau: np.ndarray, f_ext: np.ndarray | None = None,
                                 factors: ArticulatedFactors | None = None,
                                 gravity: bool = True) -> np.ndarray:
    """Articulated-body forward dynamics, Eq 58.

    Tip-to-base filter::

        z(i)  = Σ_c Φ(i, c) z⁺(c) + P(i) a_m(i) + b_m(i) + K_m ϑ(i)
        ε(i)  = T(i) − ℋ(i) z(i),   ν(i) = D⁻¹(i) ε(i),   z⁺(i) = z(i) + G(i) ε(i)

    base-to-tip smoother::

        α⁺(i) = Φ*(p, i) α_m(p),   χ̇(i) = ν(i) − G*(i) α⁺(i),
        α_m(i) = α⁺(i) + ℋ*(i) χ̇(i) + a_m(i)

    Parameters
    ----------
    pos, vel : position and velocity terms (``VelocityTerms.zero(model)`` with
        ``gravity=False`` applies ``M⁻¹``, Lemma 4).
    tau : (nu,) or (nu, k) generalized forces.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.
    factors : precomputed :class:`ArticulatedFactors` (optional; q only, reusable).
    gravity : include the model's gravity (as the acceleration ``[0; −g]`` of the ground).

    Returns
    -------
    u̇ : array shaped like ``tau``.
    """
    n = model.n_bodies
    T, vector = as_columns(tau)
    if factors is None:
        factors = articulated_body_inertias(model, pos)
    zplus: list = [None] * n
    innov: list = [None] * n
    for i in reversed(range(n)):  # tip-to-base filter
        m = int(model.n_modes[i])
        z = (vel.bias_force(model, i, f_ext) + factors.P[i] @ vel.a_m[i])[:, None]
        for c in model.children[i]:
            z = z + pos.A[c] @ (pos.phi[c] @ zplus[c])
        eps = T[model.u_slice(i)] - pos.Hcal[i] @ z
        innov[i] = factors.D_inv[i] @ eps
        zplus[i] = (z + factors.G[i] @ eps)[m:]
    udot = np.zeros(T.shape, dtype=np.result_type(T, *innov, float))
    alpha: list = [None] * n
    a_ground = _ground_acceleration(model, gravity)
    for i in range(n):  # base-to-tip smoother
        m = int(model.n_modes[i])
        p = int(model.parent[i])
        a_R = pos.phi[i].T @ (pos.A[i].T @ alpha[p] if p >= 0 else a_ground)
        a_plus = np.concatenate([np.zeros((m, a_R.shape[1]), dtype=a_R.dtype), a_R])
        chi_dot = innov[i] - factors.G[i].T @ a_plus
        a = a_plus + pos.Hcal[i].T @ chi_dot
        a[m:] = a[m:] + vel.a_m[i][m:, None]
        udot[model.u_slice(i)] = chi_dot
        alpha[i] = a
    return udot[:, 0] if vector else udot


def articulated_forward_dynamics_split(model: Model, pos: PositionTerms, vel: VelocityTerms,
                                       tau: np.ndarray, f_ext: np.ndarray | None = None,
                                       factors: SplitFactors | None = None,
                                       gravity: bool = True) -> np.ndarray:
    """Articulated-body forward dynamics with the flexible/hinge split, Eq 64.

    Tip-to-base filter, per body a flexible then a hinge step::

        z(i)   = Σ_c Φ(i, c) z⁺(c) + b_m(i) + K_m ϑ(i)
        ε_f    = T_f − ℋ_f z,        ν_f = D_f⁻¹ ε_f,    z_R = z^r + g ε_f + P_R a_m^r
        ε_R    = T_R − H_F z_R,      ν_R = D_R⁻¹ ε_R,    z⁺(i) = z_R + G_R ε_R

    base-to-tip smoother::

        a_R = φ*(i) A*(i) α(p),   β̇ = ν_R − G_R* a_R,   a_R ← a_R + H_F* β̇ + a_m^r,
        η̈ = ν_f − g* a_R,         α(i) = [η̈; a_R + Q η̈]

    Parameters and result as :func:`articulated_forward_dynamics` (``factors``:
    :class:`SplitFactors`).
    """
    n = model.n_bodies
    T, vector = as_columns(tau)
    if factors is None:
        factors = articulated_body_inertias_split(model, pos)
    zplus: list = [None] * n
    innov: list = [None] * n
    for i in reversed(range(n)):  # tip-to-base filter
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        H = pos.Hcal[i]
        z = vel.bias_force(model, i, f_ext)[:, None]
        for c in model.children[i]:
            z = z + pos.A[c] @ (pos.phi[c] @ zplus[c])
        Ti = T[model.u_slice(i)]
        eps_f = Ti[nj:] - H[nj:] @ z  # T_f − ℋ_f z
        nu_f = factors.Df_inv[i] @ eps_f
        z_R = z[m:] + factors.g[i] @ eps_f + (factors.P_R[i] @ vel.a_m[i][m:])[:, None]
        eps_R = Ti[:nj] - H[:nj, m:] @ z_R
        nu_R = factors.DR_inv[i] @ eps_R
        zplus[i] = z_R + factors.G_R[i] @ eps_R
        innov[i] = (nu_R, nu_f)
    udot = np.zeros(T.shape, dtype=np.result_type(T, *(x for pair in innov for x in pair),
                                                  float))
    alpha: list = [None] * n
    a_ground = _ground_acceleration(model, gravity)
    for i in range(n):  # base-to-tip smoother
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        p = int(model.parent[i])
        a_R = pos.phi[i].T @ (pos.A[i].T @ alpha[p] if p >= 0 else a_ground)
        nu_R, nu_f = innov[i]
        beta_dot = nu_R - factors.G_R[i].T @ a_R
        a_R = a_R + pos.Hcal[i][:nj, m:].T @ beta_dot + vel.a_m[i][m:, None]
        eta_ddot = nu_f - factors.g[i].T @ a_R
        udot[model.u_slice(i)] = np.concatenate([beta_dot, eta_ddot])
        alpha[i] = np.concatenate([eta_ddot, a_R + pos.Q[i] @ eta_ddot])
    return udot[:, 0] if vector else udot


def apply_mass_matrix_inverse(model: Model, pos: PositionTerms, b: np.ndarray,
                              factors: ArticulatedFactors | None = None) -> np.ndarray:
    """``M⁻¹ b`` by the O(N) sweeps of Lemma 4 (no N × N matrix is formed); b (nu,) or (nu, k)."""
    return articulated_forward_dynamics(model, pos, VelocityTerms.zero(model), b,
                                        factors=factors, gravity=False)


def apply_mass_matrix(model: Model, pos: PositionTerms, x: np.ndarray) -> np.ndarray:
    """``M x = ℋ Φ M_m Φ* ℋ* x`` by the two O(N) sweeps of Eq 44 with every bias term
    dropped (Eq 43); x (nu,) or (nu, k)."""
    return rnea(model, pos, VelocityTerms.zero(model), x, gravity=False)


def _apply_factor(model: Model, pos: PositionTerms, factors: ArticulatedFactors,
                  x: np.ndarray, sign: float, carry) -> np.ndarray:
    """Tip-to-base recursion ``y = x + sign · ℋ w`` with
    ``w(i) = Σ_c Φ(i, c) [G(c) x(c) + carry(c, w(c))]``; x (nu, k)."""
    n = model.n_bodies
    w: list = [None] * n
    y = np.array(x, dtype=np.result_type(x, float))
    for i in reversed(range(n)):
        m = int(model.n_modes[i])
        wi = np.zeros((m + 6, x.shape[1]), dtype=y.dtype)
        for c in model.children[i]:
            mc = int(model.n_modes[c])
            s = factors.G[c] @ x[model.u_slice(c)] + carry(c, w[c])
            wi = wi + pos.A[c] @ (pos.phi[c] @ s[mc:])
        w[i] = wi
        y[model.u_slice(i)] += sign * (pos.Hcal[i] @ wi)
    return y


def apply_innovations_factor(model: Model, pos: PositionTerms, factors: ArticulatedFactors,
                             x: np.ndarray) -> np.ndarray:
    """``[I + ℋ Φ K] x`` (Lemma 2's lower-triangular factor) by one tip-to-base sweep;
    x (nu,) or (nu, k)."""
    X, vector = as_columns(x)
    y = _apply_factor(model, pos, factors, X, 1.0, lambda c, wc: wc)
    return y[:, 0] if vector else y


def apply_innovations_factor_inverse(model: Model, pos: PositionTerms,
                                     factors: ArticulatedFactors, x: np.ndarray) -> np.ndarray:
    """``[I − ℋ Ψ K] x = [I + ℋ Φ K]⁻¹ x`` (Lemma 3) by one tip-to-base sweep;
    x (nu,) or (nu, k)."""
    X, vector = as_columns(x)
    y = _apply_factor(model, pos, factors, X, -1.0, lambda c, wc: factors.tau_bar[c] @ wc)
    return y[:, 0] if vector else y
