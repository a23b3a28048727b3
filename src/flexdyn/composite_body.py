"""Composite-body inertias, the recursive mass matrix and composite-body forward dynamics
(Jain & Rodriguez Sec IV, Lemma 1, Eqs 46–50)."""

from __future__ import annotations

import numpy as np

from .chain import Model
from .linalg import cholesky_solve
from .newton_euler import rnea
from .terms import PositionTerms, VelocityTerms

__all__ = ["composite_inertias", "crba", "composite_forward_dynamics"]


def composite_inertias(model: Model, pos: PositionTerms) -> list:
    """Composite-body inertias ``R(i)`` ((m+6) × (m+6)), Eq 47, for trees.

    ``R(i) = M_m(i) + Σ_c Φ(i, c) R(c) Φ*(i, c)`` — only the 6 × 6 rigid block of
    ``R(c)`` propagates because the first block column of ``Φ(i, c)`` is zero.
    """
    R = [np.array(M) for M in pos.M_m]
    for i in reversed(range(model.n_bodies)):  # tip-to-base
        p = int(model.parent[i])
        if p >= 0:
            m = int(model.n_modes[i])
            AP = pos.A[i] @ pos.phi[i]
            R[p] = R[p] + AP @ R[i][m:, m:] @ AP.T
    return R


def crba(model: Model, pos: PositionTerms) -> np.ndarray:
    """Mass matrix ``M`` (nu × nu) by the composite-body recursion, Eq 50 (trees).

    For each body ``i``: ``X = R(i) ℋ*(i)``, ``M(i, i) = ℋ(i) X``; then along the ancestor
    path ``X ← Φ(j, ·) X``, ``M(j, i) = ℋ(j) X``.  Blocks of bodies on different
    branches are zero.
    """
    R = composite_inertias(model, pos)
    M = np.zeros((model.nu, model.nu), dtype=np.result_type(*R, *pos.Hcal, float))
    for i in range(model.n_bodies):
        si = model.u_slice(i)
        X = R[i] @ pos.Hcal[i].T
        M[si, si] = pos.Hcal[i] @ X
        j, k = int(model.parent[i]), i
        while j >= 0:
            mk = int(model.n_modes[k])
            X = pos.A[k] @ (pos.phi[k] @ X[mk:])
            sj = model.u_slice(j)
            M[sj, si] = pos.Hcal[j] @ X
            M[si, sj] = M[sj, si].T
            j, k = int(model.parent[j]), j
    return M


def composite_forward_dynamics(model: Model, pos: PositionTerms, vel: VelocityTerms,
                               tau: np.ndarray, f_ext: np.ndarray | None = None) -> np.ndarray:
    """Composite-body forward dynamics, Eq 46: ``M u̇ = τ − C`` solved by Cholesky;
    ``tau`` (nu,) or (nu, k), result shaped alike."""
    M = crba(model, pos)
    C = rnea(model, pos, vel, np.zeros(model.nu), f_ext)
    rhs = tau - (C if np.ndim(tau) == 1 else C[:, None])
    return cholesky_solve(M, rhs)
