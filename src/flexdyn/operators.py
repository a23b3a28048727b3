"""Dense spatial operators of Section II as matrices — the executable specification.

Blocks are ordered by body index (parents before children), so ``E_Φ`` and ``Φ`` are block
*upper* triangular here (the paper's tip-to-base numbering makes them lower triangular).
Slow and obviously right; used by the tests to check Eq 43 and Lemma 1 (Eq 48).
"""

from __future__ import annotations

import numpy as np

from .chain import Kinematics, Model

__all__ = ["modal_offsets", "E_Phi", "Phi", "Hcal", "M_m", "mass_matrix_dense"]


def modal_offsets(model: Model) -> np.ndarray:
    """Start of each body's block in the stacked modal vectors (n_bodies + 1,)."""
    return np.concatenate([[0], np.cumsum(model.n_modes + 6)])


def E_Phi(model: Model, kin: Kinematics) -> np.ndarray:
    """``E_Φ`` (Eq 18): block ``(p, i)`` is ``Φ(p, i)`` for each body ``i`` with parent ``p``."""
    o = modal_offsets(model)
    E = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        p = int(model.parent[i])
        if p >= 0:
            E[o[p]:o[p + 1], o[i]:o[i + 1]] = kin.Phi(i)
    return E


def Phi(model: Model, kin: Kinematics) -> np.ndarray:
    """``Φ = (I − E_Φ)⁻¹`` (Eq 19)."""
    E = E_Phi(model, kin)
    return np.linalg.inv(np.eye(E.shape[0]) - E)


def Hcal(model: Model, kin: Kinematics) -> np.ndarray:
    """``ℋ = diag{ℋ(i)}`` (nu × Σ(n_m + 6))."""
    o = modal_offsets(model)
    H = np.zeros((model.nu, o[-1]))
    for i in range(model.n_bodies):
        H[model.u_slice(i), o[i]:o[i + 1]] = kin.Hcal[i]
    return H


def M_m(model: Model, kin: Kinematics) -> np.ndarray:
    """``M_m = diag{M_m(i)}``."""
    o = modal_offsets(model)
    M = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        M[o[i]:o[i + 1], o[i]:o[i + 1]] = kin.M_m[i]
    return M


def mass_matrix_dense(model: Model, kin: Kinematics) -> np.ndarray:
    """``M = ℋ Φ M_m Φ* ℋ*`` (Eq 43)."""
    H, P = Hcal(model, kin), Phi(model, kin)
    return H @ P @ M_m(model, kin) @ P.T @ H.T
