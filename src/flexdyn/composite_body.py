"""Composite-body inertias, the recursive mass matrix and composite-body forward dynamics
(Jain & Rodriguez Sec IV, Lemma 1, Eqs 46–50)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .chain import Kinematics, Model, state_terms
from .newton_euler import check_external_forces, rnea

__all__ = [
    "composite_inertias",
    "crba",
    "mass_matrix",
    "forward_dynamics",
    "composite_forward_dynamics",
    "solve_mass_matrix",
    "FORWARD_METHODS",
]

FORWARD_METHODS = ("articulated", "articulated-split", "composite")


def composite_inertias(model: Model, kin: Kinematics) -> list:
    """Composite-body inertias ``R(i)`` ((m+6) × (m+6)), Eq 47, for trees.

    ``R(i) = M_m(i) + Σ_c Φ(i, c) R(c) Φ*(i, c)`` — only the 6 × 6 rigid block of
    ``R(c)`` propagates because the first block column of ``Φ(i, c)`` is zero.
    """
    n = model.n_bodies
    R = [M.copy() for M in kin.M_m]
    for i in reversed(range(n)):  # tip-to-base
        p = int(model.parent[i])
        if p >= 0:
            m = int(model.n_modes[i])
            AP = kin.A[i] @ kin.phi[i]
            R[p] += AP @ R[i][m:, m:] @ AP.T
    return R


def crba(model: Model, kin: Kinematics) -> np.ndarray:
    """Mass matrix ``M`` (nu × nu) by the composite-body recursion, Eq 50 (trees).

    For each body ``i``: ``X = R(i) ℋ*(i)``, ``M(i, i) = ℋ(i) X``; then along the ancestor
    path ``X ← Φ(j, ·) X``, ``M(j, i) = ℋ(j) X``.  Blocks of bodies on different
    branches are zero.
    """
    R = composite_inertias(model, kin)
    M = np.zeros((model.nu, model.nu), dtype=R[0].dtype if R else float)
    for i in range(model.n_bodies):
        si = model.u_slice(i)
        X = R[i] @ kin.Hcal[i].T
        M[si, si] = kin.Hcal[i] @ X
        j, k = int(model.parent[i]), i
        while j >= 0:
            mk = int(model.n_modes[k])
            X = kin.A[k] @ (kin.phi[k] @ X[mk:])
            sj = model.u_slice(j)
            M[sj, si] = kin.Hcal[j] @ X
            M[si, sj] = M[sj, si].T
            j, k = int(model.parent[j]), j
    return M


def mass_matrix(model: Model, q: np.ndarray, fidelity: str = "full") -> np.ndarray:
    """System mass matrix ``M(q)`` (nu × nu), Eqs 43, 49–50.

    Parameters
    ----------
    q : (nq,) coordinates in the layout of ``model-format.md``.
    fidelity : ``"full"`` or ``"ruthless"``.
    """
    return crba(model, state_terms(model, q, None, fidelity)[0])


def composite_forward_dynamics(model: Model, kin: Kinematics, vel, tau: np.ndarray,
                               f_ext: np.ndarray | None = None) -> np.ndarray:
    """Composite-body forward dynamics, Eq 46: ``M u̇ = τ − C`` solved by Cholesky."""
    M = crba(model, kin)
    C = rnea(model, kin, vel, np.zeros(model.nu), f_ext)
    return solve_mass_matrix(M, tau - C)


def solve_mass_matrix(M: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve ``M x = rhs`` by Cholesky (Eq 46); ``ValueError`` if ``M`` is singular (a
    squared pivot below ``1e-15`` of its largest diagonal entry) or not positive definite."""
    if M.shape[0] == 0:
        return rhs
    try:
        c = scipy.linalg.cho_factor(M, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        c = None
    if c is None or np.min(np.abs(np.diag(c[0]))) ** 2 <= 1e-15 * np.max(np.abs(np.diag(M))):
        raise ValueError(
            "mass matrix is singular or not positive definite (a degree of freedom without "
            "inertia?)"
        )
    return scipy.linalg.cho_solve(c, rhs, check_finite=False)


def forward_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None,
                     method: str = "articulated", fidelity: str = "full",
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Generalized accelerations ``u̇`` (nu,) with ``M(q) u̇ + C(q, u) = τ``.

    Parameters
    ----------
    q : (nq,), u : (nu,), tau : (nu,) or None (zero) — layout of ``model-format.md``.
    method : ``"articulated"`` (O(N) articulated-body algorithm, Eq 58), ``"articulated-split"``
        (flexible/hinge split, Eqs 62–64) or ``"composite"`` (Eq 46).
    fidelity : ``"full"`` or ``"ruthless"``.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.
    """
    if method not in FORWARD_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {FORWARD_METHODS}")
    tau = np.zeros(model.nu) if tau is None else np.asarray(tau, dtype=float)
    model.check_state(q, u, tau=tau)
    f_ext = check_external_forces(model, f_ext)
    kin, vel = state_terms(model, q, u, fidelity)
    if method == "composite":
        return composite_forward_dynamics(model, kin, vel, tau, f_ext)
    from .articulated_body import articulated_forward_dynamics

    factors = None
    if method == "articulated-split" and fidelity == "ruthless":
        from .ruthless import ruthless_model

        factors = ruthless_model(model).split_factors(kin)  # Eq B3 where cheaper
    return articulated_forward_dynamics(model, kin, vel, tau, f_ext,
                                        split=(method == "articulated-split"), factors=factors)
