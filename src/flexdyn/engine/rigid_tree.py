"""Rigid trees on one-dof joints: the same terms, filter and smoother with ``ℋ(i) = h``
(one row) in three fused sweeps of fixed-size loops (:func:`is_rigid_tree`), inlined into
the helpers of their entries (:mod:`flexdyn.engine.kernels`), which count no references:
called, each sweep would copy the headers of the packed model's and the workspace's views."""

from __future__ import annotations

import numpy as np

from .algebra import compose3, copy, cross_force, cross_motion, mv6, pose_congruence
from .articulated_body import (
    rigid_one_dof_acceleration,
    rigid_one_dof_step,
)
from .forces import applied_forces
from .jit import inlined
from .joint_kernels import joint_kernel
from .layout import (
    AT,
    JCODE,
    KIND,
    N_HEADER,
    N_INT_FIELDS,
    NJ,
    PARENT,
    PRISMATIC,
    QS,
    REVOLUTE,
    SCREW,
    US,
)
from .newton_euler import gravity_acceleration
from .pack import HEAD_OFFSETS, RIGID
from .tip import node_twist, node_wrench

__all__ = ["RIGID_TREE_JOINTS", "is_rigid_tree", "rigid_tree_accelerations",
           "rigid_tree_forward_dynamics", "rigid_tree_inertias", "rigid_tree_pose",
           "rigid_tree_terms"]


#: joint kernels whose motion subspace ``S`` is one constant column in ``J_c``
RIGID_TREE_JOINTS = (REVOLUTE, PRISMATIC, SCREW)


def is_rigid_tree(ib: np.ndarray) -> bool:
    """Whether the packed model ``ib`` is a tree of rigid bodies (the body kernel
    :data:`flexdyn.engine.pack.RIGID`) on revolute, prismatic or screw joints, each attached
    to its parent's body frame (``at`` = 1): the class that
    :func:`~flexdyn.engine.kernels.forward_rigid_tree` and its siblings serve."""
    n = int(ib[0])
    start = N_HEADER + HEAD_OFFSETS
    ints = ib[start:start + n * N_INT_FIELDS].reshape(n, N_INT_FIELDS)
    return bool(n > 0 and np.all(ints[:, KIND] == RIGID) and np.all(ints[:, NJ] == 1)
                and np.all(np.isin(ints[:, JCODE], RIGID_TREE_JOINTS))
                and np.all((ints[:, PARENT] < 0) | (ints[:, AT] == 1)))


@inlined
def rigid_tree_pose(pm, i, q, R, p, S, h, Rj, pj, R1, p1, R2):
    """The pose ``(R, p)`` of body ``i``'s frame ``F_i`` in its parent's frame (placement ∘
    joint(θ) ∘ ``T_Jc``, Eqs 12–17, the joint by its kernel ``joint_kernel``, its motion
    subspace into ``S`` (6 × 6)) and the joint's axis in ``F_i``, ``h = X_joint S`` (6,), of
    a rigid tree on one-dof joints; ``Rj``, ``R1``, ``R2`` (3 × 3), ``pj``, ``p1`` (3,)
    scratch."""
    qs = pm.ints[i, QS]
    joint_kernel(pm.ints[i, JCODE], pm.jparam[i], q[qs:qs + 1], Rj, pj, S, R1, R2)
    compose3(pm.place_R[i], pm.place_p[i], Rj, pj, R1, p1)
    compose3(R1, p1, pm.T_Jc_R[i], pm.T_Jc_p[i], R, p)
    X = pm.X_joint0[i]
    for r in range(6):
        h[r] = (X[r, 0] * S[0, 0] + X[r, 1] * S[1, 0] + X[r, 2] * S[2, 0]
                + X[r, 3] * S[3, 0] + X[r, 4] * S[4, 0] + X[r, 5] * S[5, 0])


@inlined
def rigid_tree_terms(pm, w, q, u, fext):
    """The position and velocity terms of a rigid tree on one-dof joints in one sweep, base
    to tip, into the fields of the general sweeps (:func:`~flexdyn.engine.terms.position_terms`,
    :func:`~flexdyn.engine.terms.velocity_terms`) that the filter and smoother read: the pose ``(R,
    p)`` of ``F_i`` in its parent's frame (``R_phi``, ``p_phi``), from which the sweeps apply
    ``φ(i)`` (its 6 × 6 matrix is not formed), ``S`` and ``ℋ(i) = h = X_joint S``
    (:func:`rigid_tree_pose`);
    Eq 11 ``V(i) = φ*(i) V(p) + h β`` with ``φ*(i) V = [Rᵀ ω; Rᵀ (v + ω × p)]``; Eq 25
    ``a(i) = V(i) × h β``; Eq 37 ``b(i) = V ×* M V − f_ext(i)``; and the filter's start
    ``P(i) = M(i)``, ``z(i) = 0``."""
    ints = pm.ints
    Rj, R1, R2, pj, p1 = w.t_33[0], w.t_33[1], w.t_33[2], w.t_3[0], w.t_3[1]
    hb, MV = w.t_6[1], w.t_6[2]
    for i in range(ints.shape[0]):
        us, pa = ints[i, US], ints[i, PARENT]
        R, p, h, X, V = w.R_phi[i], w.p_phi[i], w.Hcal[i, 0], pm.X_joint0[i], w.V_m[i]
        rigid_tree_pose(pm, i, q, R, p, w.S[i], h, Rj, pj, R1, p1, R2)
        if pa >= 0:  # φ*(i) V(p): a node's twist without modes (m = 0)
            node_twist(R, p, X, 0, hb, w.V_m[pa], V)
        else:
            V[:] = 0.0
        beta = u[us]
        for r in range(6):
            hb[r] = h[r] * beta
            V[r] += hb[r]
        cross_motion(V, hb, w.a_m[i], False)
        M = pm.M_m0[i]
        mv6(M, V, MV, False)
        b = w.bias[i]
        cross_force(V, MV, b, False)
        for r in range(6):
            b[r] -= fext[i, r]
        copy(M, w.P[i])
        w.z[i] = 0.0


@inlined
def rigid_tree_inertias(pm, w, tau):
    """Eq 51 and the filter of a rigid tree on one-dof joints, tip to base, after
    :func:`rigid_tree_terms` (:func:`~flexdyn.engine.articulated_body.articulated_inertias` with
    every body taking ``rigid_one_dof_step``): the index of the first body whose ``D`` is singular,
    or −1."""
    ints = pm.ints
    zp, Pr, PH = w.t_6[3], w.t_66[0], w.t_6[4]
    for i in range(ints.shape[0] - 1, -1, -1):
        if not rigid_one_dof_step(w.P[i], w.Hcal[i, 0], w.a_m[i], w.bias[i],
                                  tau[ints[i, US]], w.z[i], w.G[i, :, 0], w.innov[i, :1],
                                  PH, zp, Pr):
            return i
        pa = ints[i, PARENT]
        if pa >= 0:
            R, p = w.R_phi[i], w.p_phi[i]
            node_wrench(R, p, Pr, 0, zp, w.z[pa])  # z(p) += φ(i) z⁺(i) (no modes: m = 0)
            pose_congruence(R, p, Pr, w.P[pa], w.t_33)
    return -1


@inlined
def rigid_tree_accelerations(pm, w, udot):
    """Eq 58 of a rigid tree on one-dof joints, base to tip
    (:func:`~flexdyn.engine.articulated_body.articulated_accelerations` with every body taking
    ``rigid_one_dof_acceleration``)."""
    ints = pm.ints
    a_g = w.t_6[2]
    gravity_acceleration(pm, a_g)
    for i in range(ints.shape[0]):
        pa, al = ints[i, PARENT], w.alpha[i]
        node_twist(w.R_phi[i], w.p_phi[i], pm.X_joint0[i], 0, al,
                   a_g if pa < 0 else w.alpha[pa], al)  # φ*(i) α(p): no modes (m = 0)
        udot[ints[i, US]] = rigid_one_dof_acceleration(w.G[i, :, 0], w.Hcal[i, 0], w.a_m[i],
                                                       w.innov[i, 0], al)


@inlined
def rigid_tree_forward_dynamics(pm, w, q, u, tau, fext, udot):
    """:func:`~flexdyn.engine.kernels.articulated_forward_dynamics` of a rigid tree on one-dof
    joints (:func:`is_rigid_tree`): the same statuses and results to round-off."""
    rigid_tree_terms(pm, w, q, u, fext)
    status = rigid_tree_inertias(pm, w, applied_forces(pm, w, q, u, tau))
    if status < 0:
        rigid_tree_accelerations(pm, w, udot)
    return status
