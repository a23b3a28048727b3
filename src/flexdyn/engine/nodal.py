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

import weakref
from typing import NamedTuple

import numpy as np
import scipy

from ..chain import Model
from ..joint_forces import applied_forces
from ..linalg import SingularInertiaError
from ..nodal import nodal_constants, nodal_forward_dynamics, nodal_terms
from ..terms import DEFAULT_FIDELITY, deformed_nodes
from .algebra import (
    compose3,
    copy,
    cross_force,
    cross_motion,
    mm,
    mmt,
    motion_to_parent,
    mtv,
    mv,
    phi_congruence,
    phi_matrix,
)
from .articulated_body import inertia_scale, spd_inverse
from .jit import entry_point, helper
from .joint_kernels import block_end, joint_kernel, joint_kernel_rate, product_rate
from .layout import PRODUCT, UNIVERSAL
from .tip import tip_frame, tip_rate

__all__ = ["NODAL_INT_FIELDS", "NodalEngine", "NodalPacked", "nodal_forward", "pack_nodal"]


#: columns of the per-body table: parent, joint speeds and coordinates, start of the joint's
#: q and u, joint kernel code, first free node and number of free nodes, the parent's free
#: node the body hangs from (−1: a point fixed in the parent's frame, or the ground), the
#: tip-kinematics code
NODAL_INT_FIELDS = ("parent", "nj", "nqj", "qs", "us", "jcode", "fs", "nf", "slot", "tk")
(PARENT, NJ, NQJ, QS, US, JCODE, _FS, _NF, _SLOT, TK) = range(10)


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
    q_index: np.ndarray  #: (F,) int — index in q of each free node's first coordinate
    u_index: np.ndarray  #: (F,) int — index in u of each free node's first coordinate
    K_ptr: np.ndarray  #: CSR of the stiffness over the node coordinates (6F × 6F)
    K_idx: np.ndarray
    K_val: np.ndarray
    C_ptr: np.ndarray  #: CSR of the damping
    C_idx: np.ndarray
    C_val: np.ndarray
    gravity: np.ndarray  #: (3,)


def pack_nodal(model: Model) -> NodalPacked:
    """Pack a model of rigid and nodal bodies: its :func:`flexdyn.nodal.nodal_constants`,
    joints and free nodes."""
    const = nodal_constants(model)
    n = model.n_bodies
    free = const.free_nodes
    starts = np.concatenate([[0], np.cumsum([f.size for f in free])]).astype(np.int64)
    ints = np.zeros((n, len(NODAL_INT_FIELDS)), dtype=np.int64)
    f = {k: np.zeros((n, *s)) for k, s in (("jparam", model.joints[0].engine_params().shape),
                                            ("place_R", (3, 3)), ("place_p", (3,)),
                                            ("T_Jc_R", (3, 3)), ("T_Jc_p", (3,)))}
    for i, (body, joint) in enumerate(zip(model.bodies, model.joints, strict=True)):
        p, slot = int(model.parent[i]), const.slot[i]
        f["jparam"][i] = joint.engine_params()
        f["place_R"][i], f["place_p"][i] = model.placement[i].R, model.placement[i].p
        f["T_Jc_R"][i], f["T_Jc_p"][i] = const.T_Jc[i].R, const.T_Jc[i].p
        ints[i] = (p, joint.nu, joint.nq, model.q_start[i], model.u_start[i], joint.code,
                   starts[i], free[i].size, starts[p] + slot if slot >= 0 else -1,
                   body.rotation.code)
    q_index, u_index = (np.concatenate([np.zeros(0, dtype=np.int64)] + [
        start[i] + joint_size[i] + 6 * np.arange(free[i].size) for i in range(n)]).astype(
            np.int64) for start, joint_size in ((model.q_start, model.nq_joint),
                                                (model.u_start, model.nu_joint)))
    K, C = (scipy.sparse.block_diag(blocks, format="csr") for blocks in (const.K, const.C))
    return NodalPacked(
        ints=ints, **f, X_joint=np.array(const.X_joint), A=np.array(const.A),
        M_F=np.array(const.M_F),
        l0=np.concatenate([np.zeros((0, 3))] + [b.nodes[fr] for b, fr in
                                                zip(model.bodies, free, strict=True)]),
        M_s=np.concatenate([np.zeros((0, 6, 6))] + [b.M_s[fr] for b, fr in
                                                    zip(model.bodies, free, strict=True)]),
        q_index=q_index, u_index=u_index,
        K_ptr=K.indptr.astype(np.int64), K_idx=K.indices.astype(np.int64),
        K_val=K.data.astype(float),
        C_ptr=C.indptr.astype(np.int64), C_idx=C.indices.astype(np.int64),
        C_val=C.data.astype(float),
        gravity=np.array(model.gravity, dtype=float))


@helper
def _csr_product(ptr, idx, val, x, out):
    """``out = A x`` for a CSR matrix ``A``."""
    for r in range(ptr.shape[0] - 1):
        s = 0.0
        for t in range(ptr[r], ptr[r + 1]):
            s += val[t] * x[idx[t]]
        out[r] = s


@entry_point
def nodal_forward(pk, deformed, q, u, tau, fext, udot):
    """``u̇`` of Rodriguez's filter and smoother into ``udot`` (nu,): −1, or the index of a
    body with a singular articulated inertia (``q`` with unit quaternions, every input
    finite)."""
    ints = pk.ints
    n, nF = ints.shape[0], pk.l0.shape[0]
    # per free node
    R, E, X = np.zeros((nF, 3, 3)), np.zeros((nF, 6, 6)), np.zeros((nF, 6, 6))
    Vs, kappa, bias = np.zeros((nF, 6)), np.zeros((nF, 6)), np.zeros((nF, 6))
    p_art = pk.M_s.copy()  # p_j, the children added in the tip-to-base sweep (9.2)
    z = np.zeros((nF, 6))  # the children's φ Z⁺ (9.11), then z_j
    d_inv, gain = np.zeros((nF, 6, 6)), np.zeros((nF, 6, 6))
    e_plus, a_node = np.zeros((nF, 6)), np.zeros((nF, 6))
    # per body
    phi, H = np.zeros((n, 6, 6)), np.zeros((n, 6, 6))
    V, a_V, b_F = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
    P = pk.M_F.copy()  # M_F plus the children hanging from fixed points
    Z = np.zeros((n, 6))
    D_inv, G, P_plus = np.zeros((n, 6, 6)), np.zeros((n, 6, 6)), np.zeros((n, 6, 6))
    E_plus, A_F = np.zeros((n, 6)), np.zeros((n, 6))
    # the node coordinates and rates, and the elastic force K u + C u̇ (sparse)
    n_el = pk.K_ptr.shape[0] - 1
    x_nodes, v_nodes = np.zeros(n_el), np.zeros(n_el)
    elastic, damping = np.zeros(n_el), np.zeros(n_el)
    for g in range(nF):
        for c in range(6):
            x_nodes[6 * g + c] = q[pk.q_index[g] + c]
            v_nodes[6 * g + c] = u[pk.u_index[g] + c]
    _csr_product(pk.K_ptr, pk.K_idx, pk.K_val, x_nodes, elastic)
    _csr_product(pk.C_ptr, pk.C_idx, pk.C_val, v_nodes, damping)
    # scratch
    Rj, R1, R2, Rs = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3))
    pj, p1, p2 = np.zeros(3), np.zeros(3), np.zeros(3)
    S, Et, eye3 = np.zeros((6, 6)), np.zeros((6, 3)), np.eye(3)
    T6, T6b, L6, Dm = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6))
    v6, w6, t6 = np.zeros(6), np.zeros(6), np.zeros(6)
    theta, ud = np.zeros(3), np.zeros(6)
    # ---- node-wise terms, base to tip (nodal_terms) ----
    for k in range(n):
        nj, nqj, qs, us = ints[k, NJ], ints[k, NQJ], ints[k, QS], ints[k, US]
        code, par, slot = ints[k, JCODE], ints[k, PARENT], ints[k, _SLOT]
        joint_kernel(code, pk.jparam[k], q[qs:qs + nqj], Rj, pj, S, R1, R2)
        compose3(pk.place_R[k], pk.place_p[k], Rj, pj, R1, p1)
        compose3(R1, p1, pk.T_Jc_R[k], pk.T_Jc_p[k], R2, p2)
        phi_matrix(R2, p2, phi[k])
        mm(pk.X_joint[k], S[:, :nj], T6[:, :nj])  # H = (X_joint S)ᵀ
        copy(T6[:, :nj].T, H[k, :nj, :])
        if par < 0:  # V_t: the twist of the point the body hangs from
            v6[:] = 0.0
        elif slot >= 0:
            copy(Vs[slot], v6)
        else:
            mtv(pk.A[k], V[par], v6, False)
        beta = u[us:us + nj]
        mtv(H[k, :nj], beta, w6, False)  # Hᵀ β
        mtv(phi[k], v6, V[k], False)  # V = φᵀ V_t + Hᵀ β
        V[k] += w6
        cross_motion(V[k], w6, a_V[k], False)  # a_V = V × Hᵀβ (+ X Ḣ*β)
        if code == UNIVERSAL or (code == PRODUCT and block_end(pk.jparam[k], 0, nj) < nj):
            t6[:] = 0.0
            if code == UNIVERSAL:
                joint_kernel_rate(code, pk.jparam[k], q[qs:qs + nqj], beta, t6, Rs)
            else:
                product_rate(pk.jparam[k], S, beta, nj, t6, Rs)
            mv(pk.X_joint[k], t6, a_V[k], True)
        mv(pk.M_F[k], V[k], t6, False)
        cross_force(V[k], t6, b_F[k], False)
        for g in range(ints[k, _FS], ints[k, _FS] + ints[k, _NF]):
            ua = q[pk.q_index[g]:pk.q_index[g] + 6]
            for c in range(6):  # the rates in the velocity products
                ud[c] = u[pk.u_index[g] + c] if deformed else 0.0
            if deformed:
                copy(ua[:3], theta)
                tip_frame(ints[k, TK], theta, eye3, 3, R[g], Et)
                for r in range(3):
                    pj[r] = pk.l0[g, r] + ua[3 + r]
            else:
                copy(eye3, R[g])
                copy(eye3, Et[:3, :])
                copy(pk.l0[g], pj)
            E[g, :, :] = 0.0  # E = diag(J, Rᵀ)
            copy(Et[:3, :], E[g, :3, :3])
            copy(R[g].T, E[g, 3:, 3:])
            # X = φ*(F, j): the motion map of the pose of F in the node frame, (Rᵀ, −Rᵀ p)
            copy(R[g].T, R1)
            mv(R1, pj, p1, False)
            p1 *= -1.0
            motion_to_parent(R1, p1, X[g])
            mv(E[g], ud, w6, False)  # w = E u̇, V_s = X V + w
            mv(X[g], V[k], Vs[g], False)
            Vs[g] += w6
            t6[:] = 0.0  # κ = Ė u̇ + V_s × w,  Ė u̇ = [J̇ θ̇; −w_r × w_t]
            if deformed:
                tip_rate(ints[k, TK], theta, ud[:3], t6, Rs)
                t6[3] = -(w6[1] * w6[5] - w6[2] * w6[4])
                t6[4] = -(w6[2] * w6[3] - w6[0] * w6[5])
                t6[5] = -(w6[0] * w6[4] - w6[1] * w6[3])
            cross_motion(Vs[g], w6, t6, True)
            copy(t6, kappa[g])
            mv(pk.M_s[g], Vs[g], v6, False)
            cross_force(Vs[g], v6, bias[g], False)
    # ---- Riccati equation and inward filter, tip to base (9.1–9.18) ----
    for k in range(n - 1, -1, -1):
        nj, us, par, slot = ints[k, NJ], ints[k, US], ints[k, PARENT], ints[k, _SLOT]
        for g in range(ints[k, _FS], ints[k, _FS] + ints[k, _NF]):
            pg, Eg = p_art[g], E[g]
            mv(pg, kappa[g], z[g], True)  # z = p κ + b + Σ φ Z⁺(c)  (9.11)
            z[g] += bias[g]
            Dm[:, :] = 0.0  # d = Eᵀ p E  (9.3)
            phi_congruence(Eg.T, pg, Dm, T6)
            if not spd_inverse(Dm, inertia_scale(pg, Eg.T), L6, d_inv[g]):
                return k
            mm(pg, Eg, T6)  # g = p E d⁻¹  (9.4)
            mm(T6, d_inv[g], gain[g])
            mmt(gain[g], T6, T6b, False)  # p⁺ = p − g (pE)ᵀ  (9.5)
            for r in range(6):
                for c in range(6):
                    T6b[r, c] = pg[r, c] - T6b[r, c]
            mtv(Eg, z[g], v6, False)  # e = τ − (K u + C u̇) − Eᵀ z  (9.12)
            for c in range(6):
                i = 6 * g + c
                v6[c] = tau[pk.u_index[g] + c] - elastic[i] - damping[i] - v6[c]
            mv(d_inv[g], v6, e_plus[g], False)  # e⁺ = d⁻¹ e  (9.13)
            copy(z[g], w6)  # z⁺ = z + g e  (9.14)
            mv(gain[g], v6, w6, True)
            phi_congruence(X[g].T, T6b, P[k], T6)  # P += Xᵀ p⁺ X  (9.6)
            mtv(X[g], w6, Z[k], True)  # Z += Xᵀ z⁺  (9.15)
        for r in range(6):  # symmetrize; Z += b_F − f_ext + P a_V
            for c in range(r + 1, 6):
                P[k, r, c] = P[k, c, r] = 0.5 * (P[k, r, c] + P[k, c, r])
        Z[k] += b_F[k]
        Z[k] -= fext[k]
        mv(P[k], a_V[k], Z[k], True)
        # the joint: D = H P Hᵀ, G = P Hᵀ D⁻¹, P⁺ = P − G (P Hᵀ)ᵀ  (9.7–9.9)
        Hk = H[k, :nj]
        mmt(P[k], Hk, T6[:, :nj], False)  # P Hᵀ
        mm(Hk, T6[:, :nj], Dm[:nj, :nj])
        if nj > 0 and not spd_inverse(Dm[:nj, :nj], inertia_scale(P[k], Hk), L6[:nj, :nj],
                                       D_inv[k, :nj, :nj]):
            return k
        mm(T6[:, :nj], D_inv[k, :nj, :nj], G[k, :, :nj])
        mmt(G[k, :, :nj], T6[:, :nj], P_plus[k], False)
        for r in range(6):
            for c in range(6):
                P_plus[k, r, c] = P[k, r, c] - P_plus[k, r, c]
        mv(Hk, Z[k], v6[:nj], False)  # E = T − H Z, E⁺ = D⁻¹ E, Z⁺ = Z + G E (9.16–9.18)
        for r in range(nj):
            v6[r] = tau[us + r] - v6[r]
        mv(D_inv[k, :nj, :nj], v6[:nj], E_plus[k, :nj], False)
        copy(Z[k], w6)
        mv(G[k, :, :nj], v6[:nj], w6, True)
        if par >= 0:  # hand φ P⁺ φᵀ and φ Z⁺ to the node or frame the body hangs from
            mv(phi[k], w6, t6, False)
            if slot >= 0:
                phi_congruence(phi[k], P_plus[k], p_art[slot], T6)
                z[slot] += t6
            else:
                mm(pk.A[k], phi[k], T6b)
                phi_congruence(T6b, P_plus[k], P[par], T6)
                mv(pk.A[k], t6, Z[par], True)
    # ---- outward smoother (9.19–9.26) ----
    for k in range(n):
        nj, us, par, slot = ints[k, NJ], ints[k, US], ints[k, PARENT], ints[k, _SLOT]
        if par < 0:  # A_t: the ground's [0; −g], a node's a, or a fixed point's X_n A
            v6[:3] = 0.0
            v6[3:] = -pk.gravity
        elif slot >= 0:
            copy(a_node[slot], v6)
        else:
            mtv(pk.A[k], A_F[par], v6, False)
        mtv(phi[k], v6, w6, False)  # A⁺ = φᵀ A_t
        mtv(G[k, :, :nj], w6, t6[:nj], False)  # θ̈ = E⁺ − Gᵀ A⁺  (9.20)
        for r in range(nj):
            udot[us + r] = E_plus[k, r] - t6[r]
        copy(w6, A_F[k])  # A = A⁺ + Hᵀ θ̈ + a_V  (9.21)
        A_F[k] += a_V[k]
        mtv(H[k, :nj], udot[us:us + nj], A_F[k], True)
        for g in range(ints[k, _FS], ints[k, _FS] + ints[k, _NF]):
            mv(X[g], A_F[k], t6, False)  # a⁺ = X A  (9.22, 9.23)
            b = pk.u_index[g]
            mtv(gain[g], t6, v6, False)  # ü = e⁺ − gᵀ a⁺  (9.24)
            for c in range(6):
                udot[b + c] = e_plus[g, c] - v6[c]
            copy(t6, a_node[g])  # a = a⁺ + E ü + κ  (9.25)
            a_node[g] += kappa[g]
            mv(E[g], udot[b:b + 6], a_node[g], True)
    return -1


class NodalEngine:
    """The compiled :func:`nodal_forward` of a model of rigid and nodal bodies for one
    fidelity (its node kinematics: :func:`flexdyn.terms.deformed_nodes`), packed once.  It
    refers to its model weakly, so that a cache keyed by the model does not keep it alive."""

    def __init__(self, model: Model, fidelity: str = DEFAULT_FIDELITY):
        self._model = weakref.ref(model)
        self.fidelity = fidelity
        self.deformed = deformed_nodes(fidelity)
        self.packed = pack_nodal(model)
        self._zero_wrenches = np.zeros((model.n_bodies, 6))

    @property
    def model(self) -> Model:
        """The model (while it lives)."""
        return self._model()

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "nodal") -> np.ndarray:
        """``u̇`` (nu,) of validated real inputs (``q`` with unit quaternions), with the joint
        forces (:func:`flexdyn.joint_forces.applied_forces`)."""
        udot = np.empty(self.model.nu)
        q, u = np.asarray(q, dtype=float), np.asarray(u, dtype=float)
        tau = applied_forces(self.model, q, u, np.asarray(tau, dtype=float))
        status = nodal_forward(self.packed, self.deformed, q, u, tau,
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
