"""Hybrid dynamics: some generalized accelerations prescribed, the others free
(Jain & Rodriguez end of Sec III; Featherstone's hybrid articulated-body algorithm; Banerjee &
Lemak's prescribed motion with internal loads).

With ``χ(i)`` split into free entries ``F`` (generalized force ``T_F`` given) and prescribed
ones ``K`` (acceleration ``χ̇_K`` given), the articulated-body recursion eliminates only the
free rows ``ℋ_F`` of ``ℋ(i)`` (:func:`~flexdyn.articulated_body.articulated_body_inertias`
with ``rows``), and the known accelerations enter the filter like the velocity-product
accelerations ``a_m``.  Tip-to-base filter::

    z(i)  = Σ_c Φ(i, c) z⁺(c) + P(i) (a_m(i) + ℋ_K* χ̇_K(i)) + b_m(i) + K_m ϑ(i)
    ε(i)  = T_F(i) − ℋ_F(i) z(i),   ν(i) = D⁻¹(i) ε(i),   z⁺(i) = z(i) + G(i) ε(i)

base-to-tip smoother::

    α⁺(i) = Φ*(p, i) α(p),   χ̇_F(i) = ν(i) − G*(i) α⁺(i),
    α(i)  = α⁺(i) + ℋ_F* χ̇_F(i) + ℋ_K* χ̇_K(i) + a_m(i),
    f(i)  = P(i) α(i) + Σ_c Φ(i, c) z⁺(c) + b_m(i) + K_m ϑ(i),    T(i) = ℋ(i) f(i)

where ``f(i)`` — the force on body ``i``'s subtree through its joint (Eq 36) — follows from
the articulated-body relation ``f(c) = P⁺(c) Φ*(i, c) α(i) + z⁺(c)`` of each child; ``T_K``
are the loads that realise the prescribed motion.  All free: Eq 58; all prescribed: Eq 44.
"""

from __future__ import annotations

import numpy as np

from .articulated_body import articulated_body_inertias
from .chain import Model
from .terms import PositionTerms, VelocityTerms

__all__ = ["hybrid_dynamics"]


def hybrid_dynamics(model: Model, pos: PositionTerms, vel: VelocityTerms, tau: np.ndarray,
                    udot_known: np.ndarray, free: np.ndarray,
                    f_ext: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(u̇, T)`` (nu,) each: the free accelerations and the prescribed loads (see the
    module docstring).

    Parameters
    ----------
    pos, vel : position and velocity terms.
    tau : (nu,) generalized forces; read where ``free``.
    udot_known : (nu,) accelerations; read where not ``free``.
    free : (nu,) bool — True where the force is given and the acceleration unknown.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.

    Returns
    -------
    u̇ : (nu,) with the prescribed entries of ``udot_known``;  T : (nu,) with the free entries
    of ``tau`` and the loads that realise the prescribed accelerations.
    """
    n = model.n_bodies
    free_rows = [np.flatnonzero(free[model.u_slice(i)]) for i in range(n)]
    known_rows = [np.flatnonzero(~free[model.u_slice(i)]) for i in range(n)]
    factors = articulated_body_inertias(model, pos, free_rows)
    dtype = np.result_type(tau, udot_known, *pos.Hcal, *pos.phi, *pos.M_m, *vel.a_m, *vel.b_m,
                           *vel.elastic, float, *(() if f_ext is None else (f_ext,)))
    zplus: list = [None] * n
    innov: list = [None] * n
    w: list = [None] * n  # Σ_c Φ z⁺(c) + b_m + K_m ϑ
    for i in reversed(range(n)):  # tip-to-base filter
        m = int(model.n_modes[i])
        s = model.u_slice(i)
        H_F, H_K = pos.Hcal[i][free_rows[i]], pos.Hcal[i][known_rows[i]]
        w[i] = vel.bias_force(model, i, f_ext).astype(dtype)
        for c in model.children[i]:
            w[i] = w[i] + pos.A[c] @ (pos.phi[c] @ zplus[c])
        z = w[i] + factors.P[i] @ (vel.a_m[i] + H_K.T @ udot_known[s][known_rows[i]])
        eps = tau[s][free_rows[i]] - H_F @ z
        innov[i] = factors.D_inv[i] @ eps
        zplus[i] = (z + factors.G[i] @ eps)[m:]
    udot = np.array(udot_known, dtype=dtype)
    T = np.array(tau, dtype=dtype)
    alpha: list = [None] * n
    a_ground = np.concatenate([np.zeros(3), -model.gravity])
    for i in range(n):  # base-to-tip smoother
        m = int(model.n_modes[i])
        s = model.u_slice(i)
        p = int(model.parent[i])
        a_plus = np.zeros(m + 6, dtype=dtype)
        a_plus[m:] = pos.phi[i].T @ (pos.A[i].T @ alpha[p] if p >= 0 else a_ground)
        chi_dot = udot[s]
        chi_dot[free_rows[i]] = innov[i] - factors.G[i].T @ a_plus
        alpha[i] = a_plus + pos.Hcal[i].T @ chi_dot + vel.a_m[i]
        f = factors.P[i] @ alpha[i] + w[i]
        T[s.start + known_rows[i]] = pos.Hcal[i][known_rows[i]] @ f
    return udot, T
