"""The Coriolis matrix: the velocity terms of the equations of motion as ``C(q, u) u`` with
``Ṁ − 2C`` skew-symmetric (Kwatny & Blankenship Eq 53a's ``𝒞(q, p)``, for control design).

Every mass element of a model — the rigid part of body ``k`` at its frame ``F_k``, and each
node ``j`` of a body in its node frame — is a rigid body with a constant spatial inertia
``M_e`` (in its own frame) and the twist ``V_e = J_e(q) u``: ``J_e`` (6 × nu) is the body
frame's row of the modal velocities (Eq 11) or the node's ``B_j`` (Eq 21) times them.  The
kinetic energy is ``T = ½ Σ V_eᵀ M_e V_e``, so ``M = Σ J_eᵀ M_e J_e`` and the velocity terms
of Kane's equations are ``Σ J_eᵀ (M_e J̇_e u + V_e ×* M_e V_e)``.  With

    B(V) = ½ (crf(V) M + M crm(V)) − ½ X̄(M V),    X̄(h) = [[ñ, f̃], [f̃, 0]] for h = [n; f],

a skew-symmetric matrix with ``B(V) V = V ×* M V`` (``crf = −crmᵀ``; ``X̄(h) V = −V ×* h``),

    C = Σ_e J_eᵀ (M_e J̇_e + B(V_e) J_e)

has ``C u`` = the velocity terms and ``C + Cᵀ = Σ (J̇_eᵀ M_e J_e + J_eᵀ M_e J̇_e) = Ṁ``, for
any generalized speeds (quaternion joints and quasi-velocities included: Poincaré's form).
``J̇_e = (d/dt) J_e`` along ``q̇ = Γ(q) u`` is taken by complex-step differentiation of the
position terms (exact to round-off).

This holds for the body models whose equations are Lagrangian with every node at its
deformed frame (every fidelity but ``"ruthless"``; the stiffened ones add only elastic
forces).  The remaining terms are the elastic, damping and gravity forces:
``M u̇ + C u + (K η + D η̇) + gravity = τ``.
"""

from __future__ import annotations

import numpy as np

from .body import require_lumped_mass
from .chain import Model
from .linalg import COMPLEX_STEP
from .spatial import crf, crm, skew
from .terms import PositionTerms, body_models, deformed_nodes, modal_velocities, position_terms

__all__ = ["coriolis_matrix", "element_jacobians", "skew_gyroscopic"]


def element_jacobians(model: Model, pos: PositionTerms) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(M_e, J_e)`` of every mass element at the configuration of ``pos``: the rigid part of
    each body (``M_rigid``, the frame's twist map) and each node (``M_s(j)``, ``B_j`` times
    the body's modal velocity map), ``J_e`` (6 × nu) with ``V_e = J_e u``."""
    require_lumped_mass(model.bodies, "the Coriolis matrix")
    J_m = modal_velocities(model, pos, np.eye(model.nu))  # per body (m + 6) × nu
    elements = []
    for i, body in enumerate(model.bodies):
        m = int(model.n_modes[i])
        elements.append((body.M_rigid, J_m[i][m:]))
        B = body.node_maps(pos.frames[i])
        elements.extend((body.M_s[j], B[j] @ J_m[i]) for j in range(body.n_nodes))
    return elements


def skew_gyroscopic(M: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``B(V)`` (6 × 6) of the module docstring: skew-symmetric, ``B(V) V = V ×* M V``
    (numpy arrays, or object arrays of sympy expressions: :mod:`flexdyn.symbolic`)."""
    h = M @ V
    X = np.zeros((6, 6), dtype=h.dtype)
    X[:3, :3], X[:3, 3:], X[3:, :3] = skew(h[:3]), skew(h[3:]), skew(h[3:])
    return (crf(V) @ M + M @ crm(V) - X) / 2  # exact halving: sympy object arrays too


def coriolis_matrix(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str) -> np.ndarray:
    """``C(q, u)`` (nu × nu) of the module docstring for validated real ``q`` (unit
    quaternions) and ``u``.  ``ValueError`` for the ruthless fidelity, whose velocity terms
    are not those of a kinetic energy."""
    if not deformed_nodes(fidelity):
        raise ValueError(f"fidelity {fidelity!r} has no Coriolis matrix: its velocity terms are "
                         "not those of a kinetic energy (Appendix B drops the deformation "
                         "rates); use a deformed-geometry fidelity such as 'full'")
    models = body_models(model, fidelity)
    pos = position_terms(model, q, models, fidelity)
    q_step = model.check_state(q + 1j * COMPLEX_STEP * model.qdot(q, u))[0]
    moved = position_terms(model, q_step, models, fidelity)
    C = np.zeros((model.nu, model.nu))
    for (M, J), (_, J_moved) in zip(element_jacobians(model, pos),
                                    element_jacobians(model, moved), strict=True):
        J_dot = J_moved.imag / COMPLEX_STEP
        C += J.T @ (M @ J_dot + skew_gyroscopic(M, J @ u) @ J)
    return C
