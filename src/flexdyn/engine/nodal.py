"""Rodriguez's filter and smoother for nodal bodies, compiled (the engine's version of
:mod:`flexdyn.nodal`, step for step; the equations are in that module's docstring).

A model of rigid and nodal bodies is packed into a :class:`NodalPacked` of plain arrays: per
body a row of :data:`NODAL_INT_FIELDS` and its joint, placement and inertia data, per free
node its undeformed position and spatial inertia, and the elastic forces as one sparse
(CSR) stiffness and damping over every node coordinate of the model (block diagonal by
body), so that ``K u`` costs O(nodes).  :func:`nodal_forward` computes the node-wise terms,
the Riccati factors (Eqs 9.1–9.9), the inward filter (9.10–9.18) and the outward smoother
(9.19–9.26) in one call; its status is −1, or the index of the body whose articulated
inertia (``d_j`` of a node, or ``D``) is singular.  Inputs are validated by the caller
(:func:`flexdyn.dynamics.forward_dynamics`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse

from ..chain import Model
from ..linalg import SingularInertiaError
from ..nodal import check_nodal_model, nodal_forward_dynamics, nodal_terms
from ..spatial import Transform
from ..terms import DEFAULT_FIDELITY, deformed_nodes
from .kernels import (
    _PRODUCT,
    _UNIVERSAL,
    _block_end,
    _compose3,
    _cross_force,
    _cross_motion,
    _inertia_scale,
    _joint,
    _joint_rate,
    _motion_to_parent,
    _phi,
    _product_rate,
    _spd_inverse,
    _tip_frame,
    _tip_rate,
)

__all__ = ["NODAL_INT_FIELDS", "NodalEngine", "NodalPacked", "nodal_forward", "pack_nodal"]

_E = numba.njit(cache=True, nogil=True)

#: columns of the per-body table: parent, joint speeds and coordinates, start of the joint's
#: q and u, joint kernel code, first free node and number of free nodes, the parent's free
#: node the body hangs from (−1: a point fixed in the parent's frame, or the ground), the
#: tip-kinematics code
NODAL_INT_FIELDS = ("parent", "nj", "nqj", "qs", "us", "jcode", "fs", "nf", "slot", "tk")
(_PARENT, _NJ, _NQJ, _QS, _US, _JCODE, _FS, _NF, _SLOT, _TK) = range(10)


class NodalPacked(NamedTuple):
    """The packed model of :func:`nodal_forward` (``n`` bodies, ``F`` free nodes)."""

    ints: np.ndarray  #: (n, 10) int — :data:`NODAL_INT_FIELDS`
    jparam: np.ndarray  #: (n, k) — joint kernel parameters
    place_R: np.ndarray  #: (n, 3, 3) — joint placement in the parent's attach frame
    place_p: np.ndarray  #: (n, 3)
    T_Jc_R: np.ndarray  #: (n, 3, 3) — pose of F in J_c (through the body's attach node)
    T_Jc_p: np.ndarray  #: (n, 3)
    X_joint: np.ndarray  #: (n, 6, 6) — twists from J_c to F
    A: np.ndarray  #: (n, 6, 6) — X_nᵀ of the fixed parent point the body hangs from
    M_F: np.ndarray  #: (n, 6, 6) — inertia fixed in F (rigid part, non-deforming nodes)
    l0: np.ndarray  #: (F, 3) — undeformed positions of the free nodes
    M_s: np.ndarray  #: (F, 6, 6) — their spatial inertias (node frame)
    u_index: np.ndarray  #: (F,) int — index in u of each free node's first coordinate
    K_ptr: np.ndarray  #: CSR of the stiffness over the node coordinates (6F × 6F)
    K_idx: np.ndarray
    K_val: np.ndarray
    C_ptr: np.ndarray  #: CSR of the damping
    C_idx: np.ndarray
    C_val: np.ndarray
    gravity: np.ndarray  #: (3,)


def _fixed_point(model: Model, i: int, j: int | None) -> Transform:
    """Pose in ``F_i`` of a point that does not deform: node ``j`` at rest (None: the frame)."""
    return Transform.identity() if j is None else Transform(np.eye(3),
                                                            model.bodies[i].nodes[j])


def pack_nodal(model: Model) -> NodalPacked:
    """Pack a model of rigid and nodal bodies (:func:`flexdyn.nodal.check_nodal_model`)."""
    check_nodal_model(model)
    n = model.n_bodies
    free = [b.free_nodes for b in model.bodies]
    starts = np.concatenate([[0], np.cumsum([f.size for f in free])]).astype(np.int64)
    ints = np.zeros((n, len(NODAL_INT_FIELDS)), dtype=np.int64)
    f = {k: np.zeros((n, *s)) for k, s in (("jparam", model.joints[0].engine_params().shape),
                                            ("place_R", (3, 3)), ("place_p", (3,)),
                                            ("T_Jc_R", (3, 3)), ("T_Jc_p", (3,)),
                                            ("X_joint", (6, 6)), ("A", (6, 6)),
                                            ("M_F", (6, 6)))}
    for i, (body, joint) in enumerate(zip(model.bodies, model.joints, strict=True)):
        p, pn = int(model.parent[i]), model.parent_node[i]
        T_Jc = model.child_placement[i].compose(_fixed_point(model, i,
                                                             model.child_node[i]).inverse())
        f["jparam"][i] = joint.engine_params()
        f["place_R"][i], f["place_p"][i] = model.placement[i].R, model.placement[i].p
        f["T_Jc_R"][i], f["T_Jc_p"][i] = T_Jc.R, T_Jc.p
        f["X_joint"][i] = T_Jc.inverse().motion_to_parent()
        slot = -1
        f["A"][i] = np.eye(6)
        if p >= 0:
            pfree = free[p].tolist()
            if pn in pfree:
                slot = int(starts[p]) + pfree.index(pn)
            else:
                f["A"][i] = _fixed_point(model, p, pn).inverse().motion_to_parent().T
        M_F = body.M_rigid.copy()
        for j in sorted(set(range(body.n_nodes)) - set(free[i].tolist())):
            X = _fixed_point(model, i, j).inverse().motion_to_parent()
            M_F += X.T @ body.M_s[j] @ X
        f["M_F"][i] = M_F
        ints[i] = (p, joint.nu, joint.nq, model.q_start[i], model.u_start[i], joint.code,
                   starts[i], free[i].size, slot, body.rotation.code)
    u_index = np.concatenate([np.zeros(0, dtype=np.int64)] + [
        model.u_start[i] + model.nu_joint[i] + 6 * np.arange(free[i].size)
        for i in range(n)]).astype(np.int64)
    K, C = (scipy.sparse.block_diag([scipy.sparse.csr_array(getattr(b, name))
                                     for b in model.bodies], format="csr")
            for name in ("K", "C"))  # only the nonzeros: a banded K costs O(nodes)
    return NodalPacked(
        ints=ints, **f,
        l0=np.concatenate([np.zeros((0, 3))] + [b.nodes[fr] for b, fr in
                                                zip(model.bodies, free, strict=True)]),
        M_s=np.concatenate([np.zeros((0, 6, 6))] + [b.M_s[fr] for b, fr in
                                                    zip(model.bodies, free, strict=True)]),
        u_index=u_index,
        K_ptr=K.indptr.astype(np.int64), K_idx=K.indices.astype(np.int64),
        K_val=K.data.astype(float),
        C_ptr=C.indptr.astype(np.int64), C_idx=C.indices.astype(np.int64),
        C_val=C.data.astype(float),
        gravity=np.array(model.gravity, dtype=float))


@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _csr_product(ptr, idx, val, x, out):
    """``out = A x`` for a CSR matrix ``A``."""
    for r in range(ptr.shape[0] - 1):
        s = 0.0
        for t in range(ptr[r], ptr[r + 1]):
            s += val[t] * x[idx[t]]
        out[r] = s


@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _sandwich(E, p, out, T):
    """``out = Eᵀ p E`` (6 × 6); ``T`` scratch."""
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += p[r, k] * E[k, c]
            T[r, c] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += E[k, r] * T[k, c]
            out[r, c] = s


@_E
def nodal_forward(pk, deformed, q, u, tau, fext, udot):
    """``u̇`` of Rodriguez's filter and smoother into ``udot`` (nu,): −1, or the index of a
    body with a singular articulated inertia (``q`` with unit quaternions, every input
    finite)."""
    ints = pk.ints
    n = ints.shape[0]
    nF = pk.l0.shape[0]
    # per free node
    R = np.zeros((nF, 3, 3))
    E = np.zeros((nF, 6, 6))
    X = np.zeros((nF, 6, 6))
    Vs = np.zeros((nF, 6))
    kappa = np.zeros((nF, 6))
    bias = np.zeros((nF, 6))
    p_art = pk.M_s.copy()  # p_j, the children added in the tip-to-base sweep (9.2)
    z = np.zeros((nF, 6))  # the children's Z⁺ (9.11), then z_j
    d_inv = np.zeros((nF, 6, 6))
    gain = np.zeros((nF, 6, 6))
    e_plus = np.zeros((nF, 6))
    a_node = np.zeros((nF, 6))
    # per body
    phi = np.zeros((n, 6, 6))
    H = np.zeros((n, 6, 6))
    V = np.zeros((n, 6))
    a_V = np.zeros((n, 6))
    b_F = np.zeros((n, 6))
    P = pk.M_F.copy()  # M_F plus the children hanging from fixed points
    Z = np.zeros((n, 6))
    D_inv = np.zeros((n, 6, 6))
    G = np.zeros((n, 6, 6))
    P_plus = np.zeros((n, 6, 6))
    E_plus = np.zeros((n, 6))
    A_F = np.zeros((n, 6))
    # scratch
    elastic = np.zeros(pk.K_ptr.shape[0] - 1)
    damping = np.zeros(pk.C_ptr.shape[0] - 1)
    x_nodes = np.zeros(pk.K_ptr.shape[0] - 1)
    v_nodes = np.zeros(pk.K_ptr.shape[0] - 1)
    for g in range(nF):
        s = pk.u_index[g]
        for c in range(6):
            v_nodes[6 * g + c] = u[s + c]
    Rj, R1, R2, Rs = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3))
    pj, p1, p2 = np.zeros(3), np.zeros(3), np.zeros(3)
    S = np.zeros((6, 6))
    Et = np.zeros((6, 3))
    eye3 = np.eye(3)
    T6, T6b, L6, Dm = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6))
    v6, w6, t6, r6 = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    theta, thd = np.zeros(3), np.zeros(3)
    # ---- node-wise terms, base to tip (nodal_terms) ----
    for k in range(n):
        nj, nqj, qs, us = ints[k, _NJ], ints[k, _NQJ], ints[k, _QS], ints[k, _US]
        fs, nf, code = ints[k, _FS], ints[k, _NF], ints[k, _JCODE]
        qn = q[qs + nqj:]
        for a in range(nf):
            for c in range(6):
                x_nodes[6 * (fs + a) + c] = qn[6 * a + c]
        _joint(code, pk.jparam[k], q[qs:qs + nqj], Rj, pj, S, R1, R2)
        _compose3(pk.place_R[k], pk.place_p[k], Rj, pj, R1, p1)
        _compose3(R1, p1, pk.T_Jc_R[k], pk.T_Jc_p[k], R2, p2)
        _phi(R2, p2, phi[k])
        for r in range(nj):  # H = (X_joint S)ᵀ
            for c in range(6):
                s = 0.0
                for t in range(6):
                    s += pk.X_joint[k, c, t] * S[t, r]
                H[k, r, c] = s
        par, slot = ints[k, _PARENT], ints[k, _SLOT]
        if par < 0:
            v6[:] = 0.0
        elif slot >= 0:
            v6[:] = Vs[slot]
        else:
            for c in range(6):  # X_n V_F(parent) = Aᵀ V_F
                s = 0.0
                for t in range(6):
                    s += pk.A[k, t, c] * V[par, t]
                v6[c] = s
        beta = u[us:us + nj]
        for c in range(6):  # V = φᵀ V_t + Hᵀ β
            s = 0.0
            for t in range(6):
                s += phi[k, t, c] * v6[t]
            hb = 0.0
            for r in range(nj):
                hb += H[k, r, c] * beta[r]
            V[k, c] = s + hb
            w6[c] = hb
        _cross_motion(V[k], w6, a_V[k], False)  # a_V = V × Hᵀβ (+ X Ḣ*β)
        if code == _UNIVERSAL or (code == _PRODUCT and _block_end(pk.jparam[k], 0, nj) < nj):
            t6[:] = 0.0
            if code == _UNIVERSAL:
                _joint_rate(code, pk.jparam[k], q[qs:qs + nqj], beta, t6, Rs)
            else:
                _product_rate(pk.jparam[k], S, beta, nj, t6, Rs)
            for c in range(6):
                s = 0.0
                for t in range(6):
                    s += pk.X_joint[k, c, t] * t6[t]
                a_V[k, c] += s
        for c in range(6):
            s = 0.0
            for t in range(6):
                s += pk.M_F[k, c, t] * V[k, t]
            t6[c] = s
        _cross_force(V[k], t6, b_F[k], False)
        for a in range(nf):
            g = fs + a
            ua = qn[6 * a:6 * a + 6]
            ud = u[pk.u_index[g]:pk.u_index[g] + 6]
            if deformed:
                for c in range(3):
                    theta[c] = ua[c]
                _tip_frame(ints[k, _TK], theta, eye3, 3, R[g], Et)
                for r in range(3):
                    pj[r] = pk.l0[g, r] + ua[3 + r]
            else:
                for r in range(3):
                    for c in range(3):
                        R[g, r, c] = 1.0 if r == c else 0.0
                        Et[r, c] = R[g, r, c]
                    pj[r] = pk.l0[g, r]
            E[g, :, :] = 0.0
            for r in range(3):
                for c in range(3):
                    E[g, r, c] = Et[r, c]
                    E[g, 3 + r, 3 + c] = R[g, c, r]
            # X = φ*(F, j) = [[Rᵀ, 0], [−Rᵀ p̃, Rᵀ]]: the motion map of the inverse pose
            for r in range(3):
                for c in range(3):
                    R1[r, c] = R[g, c, r]
                p1[r] = -(R[g, 0, r] * pj[0] + R[g, 1, r] * pj[1] + R[g, 2, r] * pj[2])
            _motion_to_parent(R1, p1, X[g])
            for c in range(6):  # w = E u̇ (product rates), V_s = X V + w
                s = 0.0
                if deformed:
                    for t in range(6):
                        s += E[g, c, t] * ud[t]
                w6[c] = s
                s2 = s
                for t in range(6):
                    s2 += X[g, c, t] * V[k, t]
                Vs[g, c] = s2
            # κ = Ė u̇ + V_s × w,  Ė u̇ = [J̇ θ̇; −w_r × w_t]
            t6[:] = 0.0
            if deformed:
                for c in range(3):
                    thd[c] = ud[c]
                _tip_rate(ints[k, _TK], theta, thd, t6, Rs)
                t6[3] = -(w6[1] * w6[5] - w6[2] * w6[4])
                t6[4] = -(w6[2] * w6[3] - w6[0] * w6[5])
                t6[5] = -(w6[0] * w6[4] - w6[1] * w6[3])
            _cross_motion(Vs[g], w6, t6, True)
            kappa[g, :] = t6
            for c in range(6):
                s = 0.0
                for t in range(6):
                    s += pk.M_s[g, c, t] * Vs[g, t]
                r6[c] = s
            _cross_force(Vs[g], r6, bias[g], False)
    _csr_product(pk.K_ptr, pk.K_idx, pk.K_val, x_nodes, elastic)
    _csr_product(pk.C_ptr, pk.C_idx, pk.C_val, v_nodes, damping)
    # ---- Riccati equation and inward filter, tip to base (9.1–9.18) ----
    for k in range(n - 1, -1, -1):
        nj, us, fs, nf = ints[k, _NJ], ints[k, _US], ints[k, _FS], ints[k, _NF]
        for a in range(nf):
            g = fs + a
            pg, Eg, Xg = p_art[g], E[g], X[g]
            for c in range(6):  # z = p κ + b + Σ φ Z⁺(c)  (9.11)
                s = 0.0
                for t in range(6):
                    s += pg[c, t] * kappa[g, t]
                z[g, c] += s + bias[g, c]
            _sandwich(Eg, pg, Dm, T6)  # d = Eᵀ p E  (9.3)
            scale = 0.0
            for r in range(6):
                for c in range(6):
                    scale = max(scale, abs(pg[r, c]))
            emax = 0.0
            for c in range(6):
                s = 0.0
                for r in range(6):
                    s += Eg[r, c] * Eg[r, c]
                emax = max(emax, s)
            if not _spd_inverse(Dm, scale * emax, L6, d_inv[g]):
                return k
            for r in range(6):  # pE, g = pE d⁻¹  (9.4)
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += pg[r, t] * Eg[t, c]
                    T6[r, c] = s
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += T6[r, t] * d_inv[g, t, c]
                    gain[g, r, c] = s
            for r in range(6):  # p⁺ = p − g (pE)ᵀ  (9.5)
                for c in range(6):
                    s = pg[r, c]
                    for t in range(6):
                        s -= gain[g, r, t] * T6[c, t]
                    T6b[r, c] = s
            base = pk.u_index[g]
            for c in range(6):  # e = τ − (K u + C u̇) − Eᵀ z  (9.12)
                s = tau[base + c] - elastic[6 * g + c] - damping[6 * g + c]
                for t in range(6):
                    s -= Eg[t, c] * z[g, t]
                v6[c] = s
            for c in range(6):  # e⁺ = d⁻¹ e, z⁺ = z + g e  (9.13, 9.14)
                s = 0.0
                s2 = z[g, c]
                for t in range(6):
                    s += d_inv[g, c, t] * v6[t]
                    s2 += gain[g, c, t] * v6[t]
                e_plus[g, c] = s
                w6[c] = s2
            for r in range(6):  # P += Xᵀ p⁺ X, Z += Xᵀ z⁺  (9.6, 9.15)
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += T6b[r, t] * Xg[t, c]
                    T6[r, c] = s
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += Xg[t, r] * T6[t, c]
                    P[k, r, c] += s
                s = 0.0
                for t in range(6):
                    s += Xg[t, r] * w6[t]
                Z[k, r] += s
        for r in range(6):  # symmetrize; Z += b_F − f_ext + P a_V
            for c in range(r + 1, 6):
                m = 0.5 * (P[k, r, c] + P[k, c, r])
                P[k, r, c] = m
                P[k, c, r] = m
        for r in range(6):
            s = b_F[k, r] - fext[k, r]
            for t in range(6):
                s += P[k, r, t] * a_V[k, t]
            Z[k, r] += s
        # the joint (9.7–9.9, 9.16–9.18)
        for r in range(6):
            for c in range(nj):
                s = 0.0
                for t in range(6):
                    s += P[k, r, t] * H[k, c, t]
                T6[r, c] = s  # P Hᵀ
        for r in range(nj):
            for c in range(nj):
                s = 0.0
                for t in range(6):
                    s += H[k, r, t] * T6[t, c]
                Dm[r, c] = s
        if nj > 0 and not _spd_inverse(Dm[:nj, :nj], _inertia_scale(P[k], H[k, :nj]),
                                       L6[:nj, :nj], D_inv[k, :nj, :nj]):
            return k
        for r in range(6):
            for c in range(nj):
                s = 0.0
                for t in range(nj):
                    s += T6[r, t] * D_inv[k, t, c]
                G[k, r, c] = s
        for r in range(6):
            for c in range(6):
                s = P[k, r, c]
                for t in range(nj):
                    s -= G[k, r, t] * T6[c, t]
                P_plus[k, r, c] = s
        for r in range(nj):
            s = tau[us + r]
            for t in range(6):
                s -= H[k, r, t] * Z[k, t]
            v6[r] = s
        for r in range(nj):
            s = 0.0
            for t in range(nj):
                s += D_inv[k, r, t] * v6[t]
            E_plus[k, r] = s
        for r in range(6):
            s = Z[k, r]
            for t in range(nj):
                s += G[k, r, t] * v6[t]
            w6[r] = s  # Z⁺
        par, slot = ints[k, _PARENT], ints[k, _SLOT]
        if par >= 0:  # hand Γ = φ P⁺ φᵀ and φ Z⁺ to the node or frame the body hangs from
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += phi[k, r, t] * P_plus[k, t, c]
                    T6[r, c] = s
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for t in range(6):
                        s += T6[r, t] * phi[k, c, t]
                    T6b[r, c] = s
                s = 0.0
                for t in range(6):
                    s += phi[k, r, t] * w6[t]
                r6[r] = s
            if slot >= 0:
                for r in range(6):
                    for c in range(6):
                        p_art[slot, r, c] += T6b[r, c]
                    z[slot, r] += r6[r]
            else:
                Ak = pk.A[k]
                for r in range(6):
                    for c in range(6):
                        s = 0.0
                        for t in range(6):
                            s += Ak[r, t] * T6b[t, c]
                        T6[r, c] = s
                for r in range(6):
                    for c in range(6):
                        s = 0.0
                        for t in range(6):
                            s += T6[r, t] * Ak[c, t]
                        P[par, r, c] += s
                    s = 0.0
                    for t in range(6):
                        s += Ak[r, t] * r6[t]
                    Z[par, r] += s
    # ---- outward smoother (9.19–9.26) ----
    for k in range(n):
        nj, us, fs, nf = ints[k, _NJ], ints[k, _US], ints[k, _FS], ints[k, _NF]
        par, slot = ints[k, _PARENT], ints[k, _SLOT]
        if par < 0:
            for c in range(3):
                v6[c] = 0.0
                v6[3 + c] = -pk.gravity[c]
        elif slot >= 0:
            v6[:] = a_node[slot]
        else:
            for c in range(6):
                s = 0.0
                for t in range(6):
                    s += pk.A[k, t, c] * A_F[par, t]
                v6[c] = s
        for c in range(6):  # A⁺ = φᵀ A_t
            s = 0.0
            for t in range(6):
                s += phi[k, t, c] * v6[t]
            w6[c] = s
        for r in range(nj):  # θ̈ = E⁺ − Gᵀ A⁺  (9.20)
            s = E_plus[k, r]
            for t in range(6):
                s -= G[k, t, r] * w6[t]
            udot[us + r] = s
        for c in range(6):  # A = A⁺ + Hᵀ θ̈ + a_V  (9.21)
            s = w6[c] + a_V[k, c]
            for r in range(nj):
                s += H[k, r, c] * udot[us + r]
            A_F[k, c] = s
        for a in range(nf):
            g = fs + a
            for c in range(6):  # a⁺ = X A  (9.22, 9.23)
                s = 0.0
                for t in range(6):
                    s += X[g, c, t] * A_F[k, t]
                t6[c] = s
            base = pk.u_index[g]
            for c in range(6):  # ü = e⁺ − gᵀ a⁺  (9.24)
                s = e_plus[g, c]
                for t in range(6):
                    s -= gain[g, t, c] * t6[t]
                udot[base + c] = s
            for c in range(6):  # a = a⁺ + E ü + κ  (9.25)
                s = t6[c] + kappa[g, c]
                for t in range(6):
                    s += E[g, c, t] * udot[base + t]
                a_node[g, c] = s
    return -1


class NodalEngine:
    """The compiled :func:`nodal_forward` of a model of rigid and nodal bodies for one
    fidelity (its node kinematics: :func:`flexdyn.terms.deformed_nodes`), packed once."""

    def __init__(self, model: Model, fidelity: str = DEFAULT_FIDELITY):
        self.model = model
        self.fidelity = fidelity
        self.deformed = deformed_nodes(fidelity)
        self.packed = pack_nodal(model)
        self._zero_wrenches = np.zeros((model.n_bodies, 6))

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "nodal") -> np.ndarray:
        """``u̇`` (nu,) of validated real inputs (``q`` with unit quaternions)."""
        udot = np.empty(self.model.nu)
        status = nodal_forward(self.packed, self.deformed, np.asarray(q, dtype=float),
                               np.asarray(u, dtype=float), np.asarray(tau, dtype=float),
                               self._zero_wrenches if f_ext is None
                               else np.ascontiguousarray(f_ext, dtype=float), udot)
        if status >= 0:  # the reference names the node or joint
            nodal_forward_dynamics(self.model, nodal_terms(self.model, q, u, self.fidelity),
                                   tau, f_ext)
            raise SingularInertiaError(
                f"an articulated inertia (d of a node, or D) of body {status} "
                f"{self.model.names[status]!r} is singular or not positive definite (a node "
                "without rotary inertia, or a degree of freedom without inertia?)")
        return udot
