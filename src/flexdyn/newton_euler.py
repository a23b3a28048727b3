"""Recursive Newton–Euler inverse dynamics (Jain & Rodriguez Sec III, Eqs 44–45).

The generalized forces of a state ``(q, u)`` and accelerations ``u̇`` follow from one
base-to-tip sweep of modal accelerations and one tip-to-base sweep of modal forces
(:func:`modal_forces`; their rigid part is what each joint transmits, :func:`joint_wrenches`)::

    α_m(i) = Φ*(p, i) α_m(p) + ℋ*(i) χ̇(i) + a_m(i)                 (Eq 24)
    f_m(i) = Σ_c Φ(i, c) f_m(c) + M_m(i) α_m(i) + b_m(i) + K_m ϑ(i)  (Eq 36)
    T(i)   = ℋ(i) f_m(i)                                              (Eq 41)

Gravity enters as a fictitious acceleration ``[0; −g]`` of the inertial frame.  Modal
damping ``C_m η̇`` is added to the elastic force ``K_m η``; external spatial forces act
at each body frame origin.
"""

from __future__ import annotations

import numpy as np

from .chain import Model
from .linalg import as_columns
from .terms import PositionTerms, VelocityTerms

__all__ = ["joint_wrenches", "modal_accelerations", "modal_forces", "rnea"]


def modal_accelerations(model: Model, pos: PositionTerms, vel: VelocityTerms,
                        udot: np.ndarray, gravity: bool = True) -> list:
    """The base-to-tip sweep of Eq 24 on a block of accelerations ``udot`` (nu, k): the modal
    accelerations ``α_m(i) = Φ*(p, i) α_m(p) + ℋ*(i) u̇(i) + a_m(i)`` ((m + 6) × k), ``[η̈; V̇]``
    with ``V̇`` the rate of ``F_i``'s twist components; the ground accelerates by ``−g`` where
    ``gravity`` (so that gravity acts on every body)."""
    n = model.n_bodies
    alpha: list = [None] * n
    a_ground = np.concatenate([np.zeros(3), -model.gravity if gravity else np.zeros(3)])
    for i in range(n):
        m = int(model.n_modes[i])
        p = int(model.parent[i])
        a_t = pos.A[i].T @ alpha[p] if p >= 0 else a_ground[:, None]
        a_V = pos.phi[i].T @ a_t + vel.a_m[i][m:, None]
        a = pos.Hcal[i].T @ udot[model.u_slice(i)]
        a = a.astype(np.result_type(a, a_V), copy=False)
        a[m:] += a_V
        alpha[i] = a
    return alpha


def modal_forces(model: Model, pos: PositionTerms, vel: VelocityTerms, udot: np.ndarray,
                 f_ext: np.ndarray | None = None, gravity: bool = True) -> list:
    """The two sweeps of Eq 44 on a block of accelerations ``udot`` (nu, k): the modal forces
    ``f_m(i)`` ((m + 6) × k) of Eq 36, base-to-tip accelerations then tip-to-base forces.

    ``f_m(i) = [f_η; f_V]``: ``f_V`` (the last 6 rows) is the spatial force that body ``i``'s
    parent exerts on body ``i``'s subtree through the joint, at the origin of ``F_i`` in
    ``F_i`` coordinates; ``f_η`` are the modal forces.
    """
    n = model.n_bodies
    alpha = modal_accelerations(model, pos, vel, udot, gravity)
    f = [pos.M_m[i] @ alpha[i] + vel.bias_force(model, i, f_ext)[:, None]  # Eq 36
         for i in range(n)]
    for i in reversed(range(n)):  # tip-to-base, Eq 36
        p = int(model.parent[i])
        if p >= 0:
            f[p] = f[p] + pos.A[i] @ (pos.phi[i] @ f[i][int(model.n_modes[i]):])
    return f


def rnea(model: Model, pos: PositionTerms, vel: VelocityTerms, udot: np.ndarray,
         f_ext: np.ndarray | None = None, gravity: bool = True) -> np.ndarray:
    """Newton–Euler inverse dynamics on the per-state terms (Eq 44, trees per Sec VIII):
    ``T(i) = ℋ(i) f_m(i)`` (Eq 41) from :func:`modal_forces`.

    Parameters
    ----------
    pos, vel : position and velocity terms (:mod:`flexdyn.terms`); with
        ``VelocityTerms.zero(model)`` and ``gravity=False`` the result is ``M u̇`` (Eq 43).
    udot : (nu,) generalized accelerations, or (nu, k) for k right-hand sides.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.
    gravity : include the model's gravity.

    Returns
    -------
    T : (nu,) or (nu, k) generalized forces with ``M u̇ + C = T``.
    """
    X, vector = as_columns(udot)
    f = modal_forces(model, pos, vel, X, f_ext, gravity)
    T = np.zeros((model.nu, X.shape[1]), dtype=np.result_type(*f, float))
    for i in range(model.n_bodies):  # Eq 41
        T[model.u_slice(i)] = pos.Hcal[i] @ f[i]
    return T[:, 0] if vector else T


def joint_wrenches(model: Model, pos: PositionTerms, f: list) -> np.ndarray:
    """The spatial force ``[moment; force]`` (n_bodies, 6) that each joint transmits from the
    parent to the child, in the child's joint frame ``J_c`` about its origin:
    ``X_{i←J_c}ᵀ f_V(i)`` with ``f_V(i)`` the last 6 rows of the modal force ``f_m(i)``
    (:func:`modal_forces`, one column)."""
    return np.array([pos.X_joint[i].T @ f[i][int(model.n_modes[i]):, 0]
                     for i in range(model.n_bodies)]).reshape(model.n_bodies, 6)
