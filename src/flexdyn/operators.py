"""Dense spatial operators of Section II as matrices — the executable specification.

Blocks are ordered by body index (parents before children), so ``E_Φ`` and ``Φ`` are block
*upper* triangular here (the paper's tip-to-base numbering makes them lower triangular).
Slow and obviously right; used by the tests to check Eq 43 and Lemma 1 (Eq 48), and, with
the articulated-body quantities of Eqs 51–53, the innovations factorization (Lemmas 2–4) and
the forward-dynamics expression of Lemma 5.

Shapes: ``nu`` is the number of generalized speeds and ``N̄ = Σ_i (n_m(i) + 6)`` the size of
the stacked modal vectors (blocks at :func:`modal_offsets`).
"""

from __future__ import annotations

import numpy as np

from .articulated_body import ArticulatedFactors
from .chain import Model
from .terms import PositionTerms

__all__ = [
    "modal_offsets",
    "E_Phi",
    "Phi",
    "Hcal",
    "M_m",
    "mass_matrix_dense",
    "P_dense",
    "D_dense",
    "G_dense",
    "K_dense",
    "tau_bar_dense",
    "E_Psi",
    "Psi",
]


def modal_offsets(model: Model) -> np.ndarray:
    """Start of each body's block in the stacked modal vectors (n_bodies + 1,)."""
    return np.concatenate([[0], np.cumsum(model.n_modes + 6)])


def E_Phi(model: Model, kin: PositionTerms) -> np.ndarray:
    """``E_Φ`` (Eq 18): block ``(p, i)`` is ``Φ(p, i)`` for each body ``i`` with parent ``p``."""
    o = modal_offsets(model)
    E = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        p = int(model.parent[i])
        if p >= 0:
            E[o[p]:o[p + 1], o[i]:o[i + 1]] = kin.Phi(i)
    return E


def Phi(model: Model, kin: PositionTerms) -> np.ndarray:
    """``Φ = (I − E_Φ)⁻¹`` (Eq 19)."""
    E = E_Phi(model, kin)
    return np.linalg.inv(np.eye(E.shape[0]) - E)


def Hcal(model: Model, kin: PositionTerms) -> np.ndarray:
    """``ℋ = diag{ℋ(i)}`` (nu × Σ(n_m + 6))."""
    o = modal_offsets(model)
    H = np.zeros((model.nu, o[-1]))
    for i in range(model.n_bodies):
        H[model.u_slice(i), o[i]:o[i + 1]] = kin.Hcal[i]
    return H


def M_m(model: Model, kin: PositionTerms) -> np.ndarray:
    """``M_m = diag{M_m(i)}``."""
    o = modal_offsets(model)
    M = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        M[o[i]:o[i + 1], o[i]:o[i + 1]] = kin.M_m[i]
    return M


def mass_matrix_dense(model: Model, kin: PositionTerms) -> np.ndarray:
    """``M = ℋ Φ M_m Φ* ℋ*`` (Eq 43)."""
    H, P = Hcal(model, kin), Phi(model, kin)
    return H @ P @ M_m(model, kin) @ P.T @ H.T


# ----------------------------------------------------------------------------------------------
# Articulated-body operators (Eqs 51–53) from per-body factors
# ----------------------------------------------------------------------------------------------
def _block_diag_modal(model: Model, blocks: list) -> np.ndarray:
    """``diag{blocks[i]}`` with each block at the modal offsets (N̄ × N̄)."""
    o = modal_offsets(model)
    out = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        out[o[i]:o[i + 1], o[i]:o[i + 1]] = blocks[i]
    return out


def P_dense(model: Model, factors: ArticulatedFactors) -> np.ndarray:
    """``P = diag{P(i)}`` (N̄ × N̄), the articulated-body inertias of Eq 51."""
    return _block_diag_modal(model, factors.P)


def D_dense(model: Model, factors: ArticulatedFactors) -> np.ndarray:
    """``D = ℋ P ℋ* = diag{D(i)}`` (nu × nu), Eq 52."""
    D = np.zeros((model.nu, model.nu))
    for i in range(model.n_bodies):
        s = model.u_slice(i)
        D[s, s] = factors.D[i]
    return D


def G_dense(model: Model, factors: ArticulatedFactors) -> np.ndarray:
    """``G = P ℋ* D⁻¹ = diag{G(i)}`` (N̄ × nu), the Kalman gains of Eq 52."""
    o = modal_offsets(model)
    G = np.zeros((o[-1], model.nu))
    for i in range(model.n_bodies):
        G[o[i]:o[i + 1], model.u_slice(i)] = factors.G[i]
    return G


def K_dense(model: Model, kin: PositionTerms, factors: ArticulatedFactors) -> np.ndarray:
    """``K = E_Φ G`` (N̄ × nu), Eq 52: block ``(p, i)`` is ``K(p, i) = Φ(p, i) G(i)`` for each
    body ``i`` with parent ``p``, all other blocks zero (block strictly upper triangular here)."""
    return E_Phi(model, kin) @ G_dense(model, factors)


def tau_bar_dense(model: Model, factors: ArticulatedFactors) -> np.ndarray:
    """``τ̄ = I − G ℋ = diag{τ̄(i)}`` (N̄ × N̄), Eq 52."""
    return _block_diag_modal(model, factors.tau_bar)


def E_Psi(model: Model, kin: PositionTerms, factors: ArticulatedFactors) -> np.ndarray:
    """``E_Ψ = E_Φ τ̄`` (N̄ × N̄), Eq 52: block ``(p, i)`` is ``Ψ(p, i) = Φ(p, i) τ̄(i)``."""
    return E_Phi(model, kin) @ tau_bar_dense(model, factors)


def Psi(model: Model, kin: PositionTerms, factors: ArticulatedFactors) -> np.ndarray:
    """``Ψ = (I − E_Ψ)⁻¹`` (N̄ × N̄), Eq 53: block ``(j, i)`` is ``Ψ(j, i)``, the product of
    the ``Ψ(parent, child)`` along the path from ``i`` up to its ancestor ``j`` (identity on
    the diagonal, zero unless ``j`` is ``i`` or an ancestor of ``i``)."""
    E = E_Psi(model, kin, factors)
    return np.linalg.inv(np.eye(E.shape[0]) - E)
