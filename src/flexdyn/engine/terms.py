"""The per-state terms (:func:`flexdyn.terms.position_terms`,
:func:`flexdyn.terms.velocity_terms`; Eqs 11–17, 23, 25, 37): the body kernels of the rigid,
full and ruthless models fill the workspace's blocks for the generic sweeps."""

from __future__ import annotations

from .algebra import (
    compose3,
    copy,
    cross_force,
    cross_motion,
    motion_to_parent,
    mtv,
    mv,
    phi_matrix,
)
from .jit import helper, inlined
from .joint_kernels import block_end, joint_kernel, joint_kernel_rate, product_rate
from .layout import (
    AT,
    CN,
    GS,
    JCODE,
    KIND,
    MI,
    MODES,
    NJ,
    NN,
    NQJ,
    PARENT,
    PN,
    PRODUCT,
    QS,
    TK,
    UNIVERSAL,
    US,
)
from .pack import EXACT, FULL, RUTHLESS
from .tip import node_frame, node_twist, node_twist_rate, node_wrench

__all__ = ["body_bias", "body_position_terms", "body_rates", "body_velocity", "from_parent",
           "geometric_tangent", "joint_rate_term", "massless_node", "modal_velocities",
           "parent_attach_map", "position_terms", "rates_in_products", "rotate_node_twist",
           "strain_energy", "to_parent", "velocity_fields", "velocity_terms"]


@inlined
def position_terms(pm, q, w):
    """Eqs 12–17 and 23 for every body, base to tip (:func:`flexdyn.terms.position_terms`),
    into ``w``: node frames (fR, fp, fE, fth), φ and its pose (R_phi, p_phi), A, ℋ, M_m, Q,
    X_joint, the pose of each body's own attach node (R_nc, p_nc) and of its parent's
    (R_t, p_t), and the joint subspaces S."""
    ints = pm.ints
    copy(pm.M_m0, w.M_m)  # the constant terms, in bulk; the full kernel overwrites its own
    copy(pm.X_joint0, w.X_joint)
    copy(pm.Q0, w.Q)
    copy(pm.A0, w.A)
    copy(pm.T_t_R, w.R_t)
    copy(pm.T_t_p, w.p_t)
    for i in range(ints.shape[0]):
        body_position_terms(pm, q, w, i, True, True)
        parent_attach_map(pm, w, i)


@inlined
def body_position_terms(pm, q, w, i, frames, mass):
    """Body ``i``'s part of :func:`position_terms` (Eqs 12–17 and 23), what depends on its
    own coordinates in ``q`` (nq,), joint and modes: with the full model its node frames
    (``frames`` False: those in ``w`` hold), ``M_m`` ((m + 6) × (m + 6); ``mass`` False:
    it holds), ``Q`` (6 × m), ``X_joint`` (6 × 6) and own attach node; φ (6 × 6), its pose,
    ``S`` (6 × n_j) and ℋ ((n_j + m) × (m + 6)).  The constant terms are in ``w``
    already."""
    ints = pm.ints
    Rj, R1 = w.t_33[0], w.t_33[1]
    pj, p1 = w.t_3[0], w.t_3[1]
    m, nj, kind = ints[i, MODES], ints[i, NJ], ints[i, KIND]
    R2, p2 = w.R_phi[i], w.p_phi[i]
    qs, nqj = ints[i, QS], ints[i, NQJ]
    R_Jc, p_Jc = w.t_66[0, :3, :3], w.t_66[0, 3, :3]  # of the workspace's type
    if kind == FULL:
        if frames:
            _full_node_frames(pm, i, q[qs + nqj:qs + nqj + m], w)
        if mass:
            _full_body_mass(pm, i, q[qs + nqj:qs + nqj + m], w)
        _full_joint_side(pm, i, w, R_Jc, p_Jc)
    else:
        copy(pm.T_Jc_R[i], R_Jc)
        copy(pm.T_Jc_p[i], p_Jc)
    # T_parent = placement ∘ joint(q) ∘ T_Jc,i;  φ(i) = T_parent.phi()
    joint_kernel(ints[i, JCODE], pm.jparam[i], q[qs:qs + nqj], Rj, pj, w.S[i], R1, R2)
    compose3(pm.place_R[i], pm.place_p[i], Rj, pj, R1, p1)
    compose3(R1, p1, R_Jc, p_Jc, R2, p2)
    phi_matrix(R2, p2, w.phi[i])
    # ℋ(i) = [[0, H_F], [I, Qᵀ]],  H_F* = X S
    H, X, S = w.Hcal[i], w.X_joint[i], w.S[i]
    H[:nj + m, :m] = 0.0
    for r in range(nj):
        for c in range(6):
            s = 0.0
            for t in range(6):
                s += X[c, t] * S[t, r]
            H[r, m + c] = s
    for k in range(m):
        H[nj + k, k] = 1.0
        for c in range(6):
            H[nj + k, m + c] = w.Q[i, c, k]


@inlined
def parent_attach_map(pm, w, i):
    """``A(i) = [E_tᵀ; φ(p, t_i)]`` ((m_p + 6) × 6, of Eqs 12–17) and the pose of the attach
    node ``t_i`` of body ``i`` on a full parent, which move with the parent's modes; nothing
    for another parent (its constant ``A(i)`` is in ``w`` already)."""
    pa = pm.ints[i, PARENT]
    if pa >= 0:
        if pm.ints[pa, KIND] == FULL and pm.ints[i, PN] >= 0:
            _full_attach_map(pm, i, pa, w)


@inlined
def _full_node_frames(pm, i, eta, w):
    """The full model's node frames at ``η``."""
    for j in range(pm.ints[i, NN]):
        node_frame(pm.ints[i, TK], pm.Pi_r[i, j], pm.Pi_t[i, j], pm.l0[i, j], eta,
                   pm.ints[i, MODES], w.fR[i, j], w.fp[i, j], w.fE[i, j], w.fth[i, j])


@inlined
def _full_body_mass(pm, i, eta, w):
    """The full model's Eq 23 (``M_m``) from its node frames in ``w`` (and its inertia
    invariants at ``η``)."""
    m, nn = pm.ints[i, MODES], pm.ints[i, NN]
    _modal_mass(m, nn, pm.node_m[i], pm.node_I[i], pm.M_rigid[i], w.fR[i], w.fp[i],
                w.fE[i], w.t_X[:6, :m], w.M_m[i])
    if pm.ints[i, MI] == 1:
        _invariant_mass(m, eta, pm.inv0[i], pm.inv1[i], pm.inv2[i], w.M_m[i])


@helper
def _invariant_mass(m, eta, I0, I1, I2, out):
    """``out += I0 + Sᵀ A1 + A1ᵀ S + Sᵀ A2 S``: a consistent mass's ``M_m(η)``
    (:meth:`flexdyn.body.InertiaInvariants.modal_mass`), ``A1 = Σ_k η_k I1_k``,
    ``A2 = Σ_kl η_k η_l I2_kl``, ``S`` the rows of ``ω``."""
    s = m + 6
    for r in range(s):
        for c in range(s):
            out[r, c] += I0[r, c]
    for a in range(3):
        for c in range(s):
            x = 0.0
            for k in range(m):
                x += eta[k] * I1[k, a, c]
            out[m + a, c] += x
            out[c, m + a] += x
        for b in range(3):
            x = 0.0
            for k in range(m):
                for j in range(m):
                    x += eta[k] * eta[j] * I2[k, j, a, b]
            out[m + a, m + b] += x


@helper
def rotate_node_twist(R, p, x, out):
    """``out = X_nc x = [R x_r; p × R x_r + R x_t]`` (6,): a twist in node frame ``(R, p)``
    expressed in the body frame (``X_nc = [[R, 0], [p̃ R, R]]``)."""
    for r in range(3):
        out[r] = R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]
    for r in range(3):
        out[3 + r] = R[r, 0] * x[3] + R[r, 1] * x[4] + R[r, 2] * x[5]
    out[3] += p[1] * out[2] - p[2] * out[1]
    out[4] += p[2] * out[0] - p[0] * out[2]
    out[5] += p[0] * out[1] - p[1] * out[0]


@inlined
def _full_joint_side(pm, i, w, R_Jc, p_Jc):
    """F_i in J_c (``child_placement ∘ T_nc⁻¹``), ``X`` (twists J_c → F_i) and
    ``Q = −X_nc E_c`` of the full model."""
    m, cn = pm.ints[i, MODES], pm.ints[i, CN]
    R_nc, p_nc = w.R_nc[i], w.p_nc[i]
    if cn >= 0:
        copy(w.fR[i, cn], R_nc)
        copy(w.fp[i, cn], p_nc)
    else:
        R_nc[:, :] = 0.0
        p_nc[:] = 0.0
        for r in range(3):
            R_nc[r, r] = 1.0
    cR, cp = pm.cplace_R[i], pm.cplace_p[i]
    for r in range(3):
        for c in range(3):
            R_Jc[r, c] = cR[r, 0] * R_nc[c, 0] + cR[r, 1] * R_nc[c, 1] + cR[r, 2] * R_nc[c, 2]
    for r in range(3):
        p_Jc[r] = cp[r] - (R_Jc[r, 0] * p_nc[0] + R_Jc[r, 1] * p_nc[1] + R_Jc[r, 2] * p_nc[2])
    p_F = w.t_3[0]  # origin of J_c in F_i: −R_Jcᵀ p_Jc
    for r in range(3):
        p_F[r] = -(R_Jc[0, r] * p_Jc[0] + R_Jc[1, r] * p_Jc[1] + R_Jc[2, r] * p_Jc[2])
    motion_to_parent(R_Jc.T, p_F, w.X_joint[i])
    if cn >= 0:
        E, col = w.fE[i, cn], w.t_6[4]
        for k in range(m):
            rotate_node_twist(R_nc, p_nc, E[:, k], col)
            for r in range(6):
                w.Q[i, r, k] = -col[r]


@inlined
def _full_attach_map(pm, i, pa, w):
    """``A(i) = [E_tᵀ; φ(p, t_i)]`` of a full parent's attach node, and its pose."""
    mp, pn = pm.ints[pa, MODES], pm.ints[i, PN]
    A = w.A[i]
    for r in range(mp):
        for c in range(6):
            A[r, c] = w.fE[pa, pn, c, r]
    phi_matrix(w.fR[pa, pn], w.fp[pa, pn], A[mp:mp + 6])
    copy(w.fR[pa, pn], w.R_t[i])
    copy(w.fp[pa, pn], w.p_t[i])


@helper
def _modal_mass(m, nn, node_m, node_I, M_rigid, fR, fp, fE, ME, out):
    """Eq 23: ``M_m = Σ_j B_jᵀ M_s(j) B_j + [[0, 0], [0, M_rigid]]`` with
    ``B_j = [E_j, φ*(k, j)]`` and ``M_s(j) = diag(I_j, m_j 1)``, by blocks: ``E_jᵀ M_s E_j``,
    ``φ(k, j) M_s E_j`` and the node's rigid inertia
    ``[[R I Rᵀ + m (|p|² 1 − p pᵀ), m p̃], [−m p̃, m 1]]``; ``ME`` (6 × m) scratch."""
    s = m + 6
    out[:s, :s] = 0.0
    for j in range(nn):
        if massless_node(node_m, node_I, j):
            continue
        R, p, E, I, mj = fR[j], fp[j], fE[j], node_I[j], node_m[j]
        for k in range(m):
            for r in range(3):
                ME[r, k] = I[r, 0] * E[0, k] + I[r, 1] * E[1, k] + I[r, 2] * E[2, k]
                ME[3 + r, k] = mj * E[3 + r, k]
            for c in range(k, m):
                x = 0.0
                for r in range(6):
                    x += E[r, c] * ME[r, k]
                out[k, c] += x
            node_wrench(R, p, E, 0, ME[:, k], out[k, m:s])
        p0, p1, p2 = p[0], p[1], p[2]
        pp = p0 * p0 + p1 * p1 + p2 * p2
        for r in range(3):
            T0 = R[r, 0] * I[0, 0] + R[r, 1] * I[1, 0] + R[r, 2] * I[2, 0]
            T1 = R[r, 0] * I[0, 1] + R[r, 1] * I[1, 1] + R[r, 2] * I[2, 1]
            T2 = R[r, 0] * I[0, 2] + R[r, 1] * I[1, 2] + R[r, 2] * I[2, 2]
            for c in range(r, 3):
                out[m + r, m + c] += (T0 * R[c, 0] + T1 * R[c, 1] + T2 * R[c, 2]
                                      - mj * p[r] * p[c])
            out[m + r, m + r] += mj * pp
            out[m + 3 + r, m + 3 + r] += mj
        out[m, m + 4] -= mj * p2
        out[m, m + 5] += mj * p1
        out[m + 1, m + 3] += mj * p2
        out[m + 1, m + 5] -= mj * p0
        out[m + 2, m + 3] -= mj * p1
        out[m + 2, m + 4] += mj * p0
    for r in range(6):
        for c in range(r, 6):
            out[m + r, m + c] += M_rigid[r, c]
    for r in range(s):
        for c in range(r + 1, s):
            out[c, r] = out[r, c]


@helper
def massless_node(node_m, node_I, j):
    """Whether node ``j`` carries no inertia (an attachment point, or a node of a body whose
    mass is its inertia invariants): no mass and a zero diagonal of its positive
    semi-definite rotary inertia."""
    I = node_I[j]  # noqa: E741
    return node_m[j] == 0.0 and I[0, 0] == 0.0 and I[1, 1] == 0.0 and I[2, 2] == 0.0


# The helpers called per body take plain arrays: passing the packed model or the workspace
# (tuples of dozens of arrays) into a call that is not inlined copies all their headers.
@helper
def from_parent(ints, A, i, X, out):
    """``out = Aᵀ(i) X(p)`` (6,): the twist or acceleration of the parent's attach frame."""
    pa = ints[i, PARENT]
    mp = ints[pa, MODES]
    if ints[i, AT] == 1:
        for r in range(6):
            out[r] = X[pa, mp + r]
    else:
        mtv(A[i, :mp + 6], X[pa, :mp + 6], out, False)


@helper
def to_parent(ints, A, phi, i, f6, Y, t):
    """``Y(p) += A(i) φ(i) f6``: a wrench at F_i into the parent's modal forces; ``t`` (6,)
    scratch."""
    pa = ints[i, PARENT]
    mp = ints[pa, MODES]
    mv(phi[i], f6, t, False)
    if ints[i, AT] == 1:
        for r in range(6):
            Y[pa, mp + r] += t[r]
    else:
        mv(A[i, :mp + 6], t, Y[pa, :mp + 6], True)


@inlined
def modal_velocities(ints, Hcal, phi, A, u, Vm, t):
    """Eq 11 for every body, base to tip (:func:`body_velocity`)."""
    for i in range(ints.shape[0]):
        body_velocity(ints, Hcal, phi, A, u, Vm, i, t)


@inlined
def body_velocity(ints, Hcal, phi, A, u, Vm, i, t):
    """Eq 11: ``V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i)`` into ``Vm[i]`` from ``u`` (nu,) and
    the parent's ``Vm[p]``; ``t`` (6,) scratch."""
    m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
    mtv(Hcal[i, :nj + m, :m + 6], u[us:us + nj + m], Vm[i, :m + 6], False)
    if ints[i, PARENT] >= 0:
        from_parent(ints, A, i, Vm, t)
        mtv(phi[i], t, Vm[i, m:m + 6], True)


@inlined
def velocity_terms(pm, q, u, fext, w):
    """Eqs 11, 25, 37 and the elastic forces (:func:`flexdyn.terms.velocity_terms`) into
    ``w.V_m``, ``w.a_m`` and ``w.bias = b_m + [K η + C η̇; 0] − [0; f_ext]``; the ruthless
    kernel lets no modal rate into the velocity products (Eq B1)."""
    V_nl = w.V_nl if velocity_fields(pm, u, w) else w.V_m
    for i in range(pm.ints.shape[0]):
        body_rates(pm, q, w, V_nl, i)
        body_bias(pm, q, u, fext, w, V_nl, i)


@inlined
def velocity_fields(pm, u, w):
    """Eq 11's ``w.V_m`` (n × (M + 6)) from ``u`` (nu,), and the rates in the velocity
    products ``w.u_nl`` (nu,): ``u`` less the modal rates of ruthless bodies, whose
    velocities ``w.V_nl`` it fills where there are such bodies.  Returns whether there are
    (the products then read ``w.V_nl``, else ``w.V_m``)."""
    ints = pm.ints
    modal_velocities(ints, w.Hcal, w.phi, w.A, u, w.V_m, w.t_6[0])
    ruthless = rates_in_products(ints, u, w.u_nl)
    if ruthless:
        modal_velocities(ints, w.Hcal, w.phi, w.A, w.u_nl, w.V_nl, w.t_6[0])
    return ruthless


@inlined
def rates_in_products(ints, u, u_nl):
    """``u_nl = u`` (nu,) less the modal rates of ruthless bodies (Eq B1 lets none into the
    velocity products); returns whether there are such bodies."""
    copy(u, u_nl)
    ruthless = False
    for i in range(ints.shape[0]):
        if ints[i, KIND] == RUTHLESS and ints[i, MODES] > 0:
            s = ints[i, US] + ints[i, NJ]
            u_nl[s:s + ints[i, MODES]] = 0.0
            ruthless = True
    return ruthless


@inlined
def body_rates(pm, q, w, V_nl, i):
    """``w.a_m[i]`` (its first m + 6 entries: zero modal rows, then rad/s² and m/s²): body
    ``i``'s velocity-dependent acceleration of Eq 25, from the joint's rates
    (``(V − Q η̇) × H_F* β + X Ḣ* β``) and, with the full model, the moving attach nodes'
    (its parent's and its own)."""
    ints = pm.ints
    HFb, tmp, V_rel = w.t_6[0], w.t_6[1], w.t_6[2]
    m, nj, us, kind = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, KIND]
    beta = w.u_nl[us:us + nj]
    etad = w.u_nl[us + nj:us + nj + m]
    V = V_nl[i, m:m + 6]
    w.a_m[i] = 0.0
    aV = w.a_m[i, m:m + 6]
    pa, pn = ints[i, PARENT], ints[i, PN]
    if pa >= 0 and pn >= 0 and ints[pa, KIND] == FULL and ints[pa, MODES] > 0:
        _full_parent_rate(pm, w, i, V_nl, aV)
    if nj > 0:  # (V − Q η̇) × H_F* β  +  X Ḣ* β
        H = w.Hcal[i]
        for c in range(6):
            s = 0.0
            for r in range(nj):
                s += H[r, m + c] * beta[r]
            HFb[c] = s
            s = V[c]
            for k in range(m):
                s -= w.Q[i, c, k] * etad[k]
            V_rel[c] = s
        cross_motion(V_rel, HFb, aV, True)
        if joint_rate_term(pm, q, w, i, beta, tmp):
            mv(w.X_joint[i], tmp, aV, True)
    if kind == FULL and ints[i, CN] >= 0 and m > 0:
        _full_own_rate(pm, w, i, etad, V, aV)


@inlined
def joint_rate_term(pm, q, w, i, beta, out):
    """``out = Ḣ* β`` (6,) of body ``i``'s joint in its frame ``J_c`` (the term ``X Ḣ* β`` of
    Eq 25 before ``X``) at its coordinates in ``q`` and rates ``beta`` (n_j,); returns False,
    ``out`` unwritten, where it is zero (every joint but universal joints and products with
    a block of more than one factor)."""
    ints = pm.ints
    code, nj, qs = ints[i, JCODE], ints[i, NJ], ints[i, QS]
    if not (code == UNIVERSAL or (code == PRODUCT and block_end(pm.jparam[i], 0, nj) < nj)):
        return False
    out[:] = 0.0
    if code == UNIVERSAL:
        joint_kernel_rate(code, pm.jparam[i], q[qs:qs + ints[i, NQJ]], beta, out, w.t_33[0])
    else:
        product_rate(pm.jparam[i], w.S[i], beta, nj, out, w.t_33[0])
    return True


@inlined
def body_bias(pm, q, u, fext, w, V_nl, i):
    """``w.bias[i] = b_m + [K η + C η̇ (+ the geometric force); 0] − [0; f_ext]`` (its first
    m + 6 entries: modal forces, then the wrench in N m, N) of body ``i`` (Eq 37 and the
    elastic forces), ``q`` (nq,), ``u`` (nu,), ``fext`` (n × 6): a function of its own
    ``η``, ``η̇`` and twist ``V_nl[i]`` alone."""
    ints = pm.ints
    m, nj, us, kind = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, KIND]
    qs, nqj = ints[i, QS], ints[i, NQJ]
    etad = w.u_nl[us + nj:us + nj + m]
    V = V_nl[i, m:m + 6]
    w.bias[i] = 0.0
    if kind == FULL:
        _full_modal_bias(ints[i, TK], m, ints[i, NN], pm.node_m[i], pm.node_I[i],
                         pm.M_rigid[i], pm.Pi_r[i], w.fR[i], w.fp[i], w.fE[i], w.fth[i],
                         etad, V, w.t_6[4:8], w.t_tip, w.bias[i])
        if ints[i, MI] == 1:
            _invariant_bias(m, q[qs + nqj:qs + nqj + m], etad, V, pm.inv0[i], pm.inv1[i],
                            pm.inv2[i], w.t_X[:6], w.t_6[4], w.bias[i])
    else:
        _modal_bias(kind, m, pm.M_m0[i], pm.B_quad[i], V, w.t_6[3], w.bias[i])
    eta = q[qs + nqj:qs + nqj + m]
    etad_true = u[us + nj:us + nj + m]
    b = w.bias[i]
    for r in range(m):
        s = b[r]
        for k in range(m):
            s += pm.K[i, r, k] * eta[k] + pm.C[i, r, k] * etad_true[k]
        b[r] = s
    if ints[i, GS] > 0:
        _geometric_force(pm, i, m, eta, b)
    for r in range(6):
        b[m + r] -= fext[i, r]


@inlined
def _geometric_force(pm, i, m, eta, b):
    """``b[:m] += rows · (K1(η) η / 2 [+ K2(η, η) η / 6 for the exact model])``: the geometric
    part of Damaren & Sharf's Eq 20 (:mod:`flexdyn.stiffening`)."""
    K1, K2, rows = pm.K1[i], pm.K2[i], pm.gs_rows[i]
    exact = pm.ints[i, GS] == EXACT
    for r in range(m):
        if rows[r] == 0.0:
            continue
        s = 0.0
        for j in range(m):
            for k in range(m):
                ejk = eta[j] * eta[k]
                t = 0.5 * K1[r, j, k]
                if exact:
                    for c in range(m):
                        t += K2[r, j, k, c] * eta[c] / 6.0
                s += t * ejk
        b[r] += s


@inlined
def geometric_tangent(pm, i, m, eta, out):
    """``out[r, l] += ∂/∂η_l`` of ``_geometric_force``'s term (m × m):
    ``rows_r (K1_rlk + K1_rkl) η_k / 2``, for the exact model plus
    ``rows_r (K2_rljk + K2_rjlk + K2_rjkl) η_j η_k / 6`` (the tangent stiffness of Damaren &
    Sharf's Eq 20 less ``K0``)."""
    K1, K2, rows = pm.K1[i], pm.K2[i], pm.gs_rows[i]
    exact = pm.ints[i, GS] == EXACT
    for r in range(m):
        if rows[r] == 0.0:
            continue
        for c in range(m):
            t = 0.0
            for k in range(m):
                t += 0.5 * (K1[r, c, k] + K1[r, k, c]) * eta[k]
                if exact:
                    for j in range(m):
                        t += ((K2[r, c, j, k] + K2[r, j, c, k] + K2[r, j, k, c])
                              * eta[j] * eta[k] / 6.0)
            out[r, c] += rows[r] * t


@helper
def strain_energy(pm, i, m, eta):
    """``½ ηᵀ K η`` of body ``i`` with the geometric terms of its model: ``+ K1·η³/3!`` for
    the consistent and exact models, ``+ K2·η⁴/4!`` for the exact one."""
    K = pm.K[i]
    energy = 0.0
    for r in range(m):
        for c in range(m):
            energy += 0.5 * eta[r] * K[r, c] * eta[c]
    if pm.ints[i, GS] > 0:
        exact = pm.ints[i, GS] == EXACT
        for r in range(m):
            for j in range(m):
                for k in range(m):
                    e3 = eta[r] * eta[j] * eta[k]
                    energy += pm.K1[i, r, j, k] * e3 / 6.0
                    if exact:
                        for c in range(m):
                            energy += pm.K2[i, r, j, k, c] * e3 * eta[c] / 24.0
    return energy


@inlined
def _full_parent_rate(pm, w, i, V_nl, aV):
    """``aV += φᵀ(Ė_t η̇_p + V_t × E_t η̇_p)`` for a body on a full parent's node."""
    pa, pn = pm.ints[i, PARENT], pm.ints[i, PN]
    mp = pm.ints[pa, MODES]
    s = pm.ints[pa, US] + pm.ints[pa, NJ]
    V_t, w_t, eps = w.t_6[4], w.t_6[5], w.t_6[6]
    mtv(w.A[i, :mp + 6], V_nl[pa, :mp + 6], V_t, False)
    node_twist_rate(pm.ints[pa, TK], w.fth[pa, pn], pm.Pi_r[pa, pn], w.fE[pa, pn],
                    w.u_nl[s:s + mp], mp, eps, w_t, w.t_tip)
    cross_motion(V_t, w_t, eps, True)
    mtv(w.phi[i], eps, aV, True)


@inlined
def _full_own_rate(pm, w, i, etad, V, aV):
    """``aV += V × Q η̇ − X_nc Ė_c η̇`` of a full body on its own attach node."""
    m, cn = pm.ints[i, MODES], pm.ints[i, CN]
    eps, w_c, Xe, Qe = w.t_6[4], w.t_6[5], w.t_6[6], w.t_6[7]
    node_twist_rate(pm.ints[i, TK], w.fth[i, cn], pm.Pi_r[i, cn], w.fE[i, cn], etad, m,
                    eps, w_c, w.t_tip)
    rotate_node_twist(w.R_nc[i], w.p_nc[i], eps, Xe)
    mv(w.Q[i, :, :m], etad, Qe, False)
    cross_motion(V, Qe, aV, True)
    for r in range(6):
        aV[r] -= Xe[r]


@helper
def _modal_bias(kind, m, M_m0, B_quad, V, MV, out):
    """``b_m`` (Eq 37) of the rigid and ruthless body kernels into ``out`` (zero on entry):
    ``V ×* M V``, or ``[Vᵀ B_μ V; V ×* M⁰_rr V]`` (Eq B1); ``MV`` (6,) scratch."""
    if kind == RUTHLESS:
        for k in range(m):
            B = B_quad[k]
            s = 0.0
            for r in range(6):
                for c in range(6):
                    s += V[r] * B[r, c] * V[c]
            out[k] = s
    mv(M_m0[m:m + 6, m:m + 6], V, MV, False)
    cross_force(V, MV, out[m:m + 6], False)


@helper
def _invariant_bias(m, eta, etad, V, I0, I1, I2, DA, h, out):
    """``out += Ṁ_m V_m − [∂T/∂η; 0] + [0; V ×* (M_m V_m)_V]`` of a consistent mass
    (:meth:`flexdyn.body.InertiaInvariants.modal_bias`): with ``D_k = I1_k + Σ_l η_l I2_kl``
    (the last on the ``ω`` columns) and ``D̄ = Σ_k η̇_k D_k``, ``out += D̄ᵀ ω``, its ``ω``
    rows ``+= D̄ V_m``, its modal rows ``−= ω · D_k V_m``; ``DA`` (6, m + 6) scratch (``D̄``,
    then ``A1 = Σ_k η_k I1_k``), ``h`` (6,) scratch."""
    s = m + 6
    DA[:, :s] = 0.0
    for k in range(m):
        dw = 0.0  # ω · D_k V_m
        for a in range(3):
            x = 0.0
            for c in range(m):
                x += I1[k, a, c] * etad[c]
                DA[a, c] += etad[k] * I1[k, a, c]
                DA[3 + a, c] += eta[k] * I1[k, a, c]
            for c in range(6):
                e = I1[k, a, m + c]
                DA[3 + a, m + c] += eta[k] * e
                if c < 3:
                    for j in range(m):
                        e += eta[j] * I2[k, j, a, c]
                x += e * V[c]
                DA[a, m + c] += etad[k] * e
            dw += V[a] * x
        out[k] -= dw
    for c in range(s):
        out[c] += DA[0, c] * V[0] + DA[1, c] * V[1] + DA[2, c] * V[2]
    for a in range(3):
        x = 0.0
        for c in range(m):
            x += DA[a, c] * etad[c]
        for c in range(6):
            x += DA[a, m + c] * V[c]
        out[m + a] += x
    # h = (M_m(η) V_m)_V: I0's rows, A1 on the ω rows and columns, A2 ω
    for r in range(6):
        x = 0.0
        for c in range(m):
            x += I0[m + r, c] * etad[c]
        for c in range(6):
            x += I0[m + r, m + c] * V[c]
        x += DA[3, m + r] * V[0] + DA[4, m + r] * V[1] + DA[5, m + r] * V[2]
        h[r] = x
    for a in range(3):
        x = 0.0
        for c in range(m):
            x += DA[3 + a, c] * etad[c]
        for c in range(6):
            x += DA[3 + a, m + c] * V[c]
        for b in range(3):
            A2 = 0.0
            for k in range(m):
                for j in range(m):
                    A2 += eta[k] * eta[j] * I2[k, j, a, b]
            x += A2 * V[b]
        h[a] += x
    cross_force(V, h, out[m:s], True)


@helper
def _full_modal_bias(tk, m, nn, node_m, node_I, M_rigid, Pi_r, fR, fp, fE, fth, etad, V, t,
                     t_tip, out):
    """The full model's ``b_m``: ``V ×* M_rigid V`` plus ``Σ_j B_jᵀ (M_s a_j + V_j ×* M_s V_j)``
    over the nodes, with the node twist ``V_j = B_j [η̇; V]`` and its velocity-dependent
    acceleration ``a_j = Ė_j η̇ + V_j × E_j η̇`` (tip kinematics ``tk``); ``t`` (4, 6) and
    ``t_tip`` (4, 3) scratch."""
    Vs, acc, wj, y = t[0], t[1], t[2], t[3]
    mv(M_rigid, V, y, False)
    cross_force(V, y, out[m:m + 6], False)
    for j in range(nn):
        if massless_node(node_m, node_I, j):
            continue
        R, p, E = fR[j], fp[j], fE[j]
        node_twist(R, p, E, m, etad, V, Vs)
        node_twist_rate(tk, fth[j], Pi_r[j], E, etad, m, acc, wj, t_tip)
        cross_motion(Vs, wj, acc, True)
        I, mj = node_I[j], node_m[j]
        for r in range(3):  # M_s V_j, then y = M_s a_j + V_j ×* M_s V_j
            wj[r] = I[r, 0] * Vs[0] + I[r, 1] * Vs[1] + I[r, 2] * Vs[2]
            wj[3 + r] = mj * Vs[3 + r]
        cross_force(Vs, wj, y, False)
        for r in range(3):
            y[r] += I[r, 0] * acc[0] + I[r, 1] * acc[1] + I[r, 2] * acc[2]
            y[3 + r] += mj * acc[3 + r]
        node_wrench(R, p, E, m, y, out)
