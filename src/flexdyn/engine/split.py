"""The flexible/hinge split of the articulated-body forward dynamics in the compiled engine
(Jain & Rodriguez Eqs 62–64; Eq B3 for the ruthless body model), step for step as the
reference (:func:`flexdyn.articulated_body.articulated_body_inertias_split`,
:func:`flexdyn.articulated_body.articulated_forward_dynamics_split` and the body models'
``flexible_step``).

Per body, tip to base, a **flexible step** eliminates the modal accelerations: the full and
rigid body models form ``P = M_m + Σ_c A(c) Γ(c) A*(c)`` and invert ``D_f = ℋ_f P ℋ_f*`` by
Cholesky; the ruthless model forms only ``P^{rr}`` and ``μ`` from the constants of Eq B4
(``Λ``, ``ζ``, ``Υ``, ``Ω``, packed once by :func:`flexdyn.engine.pack.pack_split`) and
``D_f⁻¹`` as ``Λ`` at a tip, by the push-through form of Eq B3 from ``indirect_min_modes``
modes on, else by Cholesky.  A **hinge step** on the massless fictitious body then
eliminates the joint accelerations (``D_R``, ``G_R``) and passes ``Γ = φ P_R⁺ φ*`` to the
parent.

The entries (:func:`forward_split`, :func:`factors`, :func:`batch`) take the packed model
``(ib, fb)`` and the split's buffers ``(sib, sfb)``; they are compiled on first use only.
The per-state terms, the workspace and the small algebra are those of
:mod:`flexdyn.engine.kernels`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .algebra import copy, lu_factor, lu_substitute, mm, mmt, mtv, mv, pose_congruence
from .articulated_body import inertia_scale, spd_inverse, sub_mv, symmetrize
from .composite_body import child_inertia
from .forces import applied_forces, sub_mtv
from .jit import allocating_helper, entry_point, helper
from .kernels import finite_result, position_velocity_terms, valid_state
from .layout import INVALID, KIND, MODES, NJ, PARENT, US, unpack, view, workspace
from .newton_euler import gravity_acceleration, parent_acceleration
from .pack import RUTHLESS, SPLIT_FIELDS, SPLIT_INT_FIELDS
from .terms import to_parent

# columns of the split's per-body table (pack.SPLIT_INT_FIELDS)
_C0, _NC, _B3, _OM = range(4)
_NO = len(SPLIT_FIELDS) + 1  # offsets in the split's int buffer, after its header entry C
assert SPLIT_INT_FIELDS == ("c0", "nc", "b3", "om") and _NO == 7


class SplitModel(NamedTuple):
    """Views of the split's buffers by name (:data:`flexdyn.engine.pack.SPLIT_FIELDS`);
    ``ints`` holds :data:`~flexdyn.engine.pack.SPLIT_INT_FIELDS` as columns, ``children`` the
    child list."""

    ints: np.ndarray
    children: np.ndarray
    M_rf_Hf: np.ndarray
    D_f0: np.ndarray
    Lambda: np.ndarray
    zeta: np.ndarray
    Upsilon: np.ndarray
    Omega: np.ndarray


@allocating_helper
def unpack_split(ib, sib, sfb):
    """Named views of the split's buffers (sizes ``n``, ``M`` from the packed model's
    ``ib``)."""
    n, M = ib[0], ib[1]
    o = sib[1:1 + _NO]
    t = 1 + _NO + 4 * n
    return SplitModel(
        ints=view(sib, 1 + _NO, (n, 4)),
        children=sib[t:],
        M_rf_Hf=view(sfb, o[0], (n, 6, M)),
        D_f0=view(sfb, o[1], (n, M, M)),
        Lambda=view(sfb, o[2], (n, M, M)),
        zeta=view(sfb, o[3], (n, M, 6)),
        Upsilon=view(sfb, o[4], (n, M, 6)),
        Omega=sfb[o[5]:o[6]],
    )


class SplitWork(NamedTuple):
    """The split's per-call workspace: the factors of Eq 63 (as the reference's
    :class:`~flexdyn.articulated_body.SplitFactors`, padded), the innovations of Eq 64 and
    scratch blocks (``C``: the most children of a body that uses Eq B3)."""

    Df_inv: np.ndarray  # (n, M, M) D_f⁻¹
    g: np.ndarray  # (n, 6, M) g = μ D_f⁻¹
    P_R: np.ndarray  # (n, 6, 6)
    DR_inv: np.ndarray  # (n, 6, 6) D_R⁻¹, nu_j × nu_j
    G_R: np.ndarray  # (n, 6, 6) G_R, 6 × nu_j
    P_R_plus: np.ndarray  # (n, 6, 6)
    Gam: np.ndarray  # (n, 6, 6) Γ = φ P_R⁺ φ* of a child of a ruthless body
    nu_f: np.ndarray  # (n, M) ν_f = D_f⁻¹ ε_f
    nu_R: np.ndarray  # (n, 6) ν_R = D_R⁻¹ ε_R
    t_PH: np.ndarray  # (M+6, M) P ℋ_f*
    t_mu: np.ndarray  # (6, M) μ
    t_Df: np.ndarray  # (M, M) D_f
    t_L: np.ndarray  # (M, M) Cholesky factor
    t_66: np.ndarray  # (5, 6, 6) P^{rr}, products, P_R H_F*, D_R, its factor
    t_EY: np.ndarray  # (M+6, 6) E_t* φ P_R⁺ φᵀ of a child on a node (attach_congruence)
    t_Z: np.ndarray  # (M, 6) ζ Γ
    t_N: np.ndarray  # (6C, 6C) [I + Ω Γ]*
    t_X: np.ndarray  # (6C, M)
    t_v: np.ndarray  # (M,) ε_f
    t_6: np.ndarray  # (5, 6)


@allocating_helper
def split_workspace(ib, sib):
    """One allocation, carved into the fields of :class:`SplitWork`."""
    n, M, k = ib[0], ib[1], 6 * sib[0]
    sizes = (n * M * M, n * 6 * M, n * 36, n * 36, n * 36, n * 36, n * 36, n * M, n * 6,
             (M + 6) * M, 6 * M, M * M, M * M, 5 * 36, (M + 6) * 6, M * 6, k * k, k * M, M, 30)
    o = np.zeros(len(sizes) + 1, dtype=np.int64)
    for j in range(len(sizes)):
        o[j + 1] = o[j] + sizes[j]
    w = np.empty(o[-1])
    return SplitWork(
        view(w, o[0], (n, M, M)), view(w, o[1], (n, 6, M)),
        view(w, o[2], (n, 6, 6)), view(w, o[3], (n, 6, 6)),
        view(w, o[4], (n, 6, 6)), view(w, o[5], (n, 6, 6)),
        view(w, o[6], (n, 6, 6)), view(w, o[7], (n, M)),
        view(w, o[8], (n, 6)), view(w, o[9], (M + 6, M)),
        view(w, o[10], (6, M)), view(w, o[11], (M, M)),
        view(w, o[12], (M, M)), view(w, o[13], (5, 6, 6)),
        view(w, o[14], (M + 6, 6)), view(w, o[15], (M, 6)),
        view(w, o[16], (k, k)), view(w, o[17], (k, M)), w[o[18]:o[19]],
        view(w, o[19], (5, 6)),
    )


# ----------------------------------------------------------------------------------------------
# small algebra the kernels do not have
# ----------------------------------------------------------------------------------------------
@helper
def _sym_difference(A, B, out):
    """``out = sym(A − B) = ((A − B) + (A − B)ᵀ) / 2`` (:func:`flexdyn.linalg.sym`)."""
    for r in range(A.shape[0]):
        out[r, r] = A[r, r] - B[r, r]
        for c in range(r + 1, A.shape[0]):
            t = 0.5 * ((A[r, c] - B[r, c]) + (A[c, r] - B[c, r]))
            out[r, c] = t
            out[c, r] = t


@allocating_helper
def _lu_solve(A, B):
    """``A X = B`` in place (``X`` into ``B``, ``A`` overwritten by its factors) by Gaussian
    elimination with partial pivoting (:func:`~flexdyn.engine.algebra.lu_factor`; LAPACK
    ``gesv``, which ``np.linalg.solve`` calls)."""
    piv = np.empty(A.shape[0], dtype=np.int64)
    lu_factor(A, piv)
    lu_substitute(A, piv, B)


# ----------------------------------------------------------------------------------------------
# the flexible step (Eq 63; Eq B3) and the hinge step (Eq 63), per body, on plain arrays
# ----------------------------------------------------------------------------------------------
@helper
def _flexible_step(P, M_m, Hf, P_rr, mu, PH, Df, L, Df_inv):
    """Eq 63, flexible step of the full and rigid body models (``BodyModel.flexible_step``):
    ``P = M_m + Σ_c A Γ A*`` (the children's part already in ``P``), ``P^{rr}``,
    ``μ = [P^{rf}, P^{rr}] ℋ_f*`` (the rigid rows of ``P ℋ_f*``) and ``D_f⁻¹`` of
    ``D_f = ℋ_f P ℋ_f*`` by Cholesky; False when ``D_f`` is singular."""
    m = Hf.shape[0]
    for r in range(m + 6):
        for c in range(m + 6):
            P[r, c] += M_m[r, c]
    mmt(P, Hf, PH, False)
    mm(Hf, PH, Df)
    copy(P[m:, m:], P_rr)
    copy(PH[m:], mu)
    return spd_inverse(Df, inertia_scale(P, Hf), L, Df_inv)


@helper
def _ruthless_rigid_part(M_rr, M_rf_Hf, A, Gam, zeta, kids, P_rr, mu, AG):
    """Eq 63 for the ruthless model without forming ``P`` (``RuthlessBodyModel
    .flexible_step``): ``P^{rr} = M⁰_rr + Σ_c A_r Γ(c) A_r*`` and
    ``μ = [M⁰_rf, M⁰_rr] ℋ_f* + Σ_c A_r Γ(c) ζ(c)*`` with ``A_r`` the rigid rows of
    ``A(c)``; ``AG`` (6 × 6) scratch."""
    m = mu.shape[1]
    copy(M_rr, P_rr)
    copy(M_rf_Hf, mu)
    for c in kids:
        A_r = A[c, m:m + 6]
        mm(A_r, Gam[c], AG)
        mmt(AG, A_r, P_rr, True)
        mmt(AG, zeta[c, :m], mu, True)


@helper
def _explicit_Df_inverse(D_f0, zeta, Gam, kids, scale, Df, Z, L, Df_inv):
    """``D_f⁻¹ = [Λ⁻¹ + Σ_c ζ(c) Γ(c) ζ(c)*]⁻¹`` by Cholesky (the ruthless model below
    ``indirect_min_modes``); ``Z`` (m × 6) scratch; False when ``D_f`` is singular."""
    m = Df.shape[0]
    copy(D_f0, Df)
    for c in kids:
        mm(zeta[c, :m], Gam[c], Z)
        mmt(Z, zeta[c, :m], Df, True)
    return spd_inverse(Df, scale, L, Df_inv)


@helper
def _push_through(Lambda, Upsilon, Omega, Gam, kids, N, X, Df_inv):
    """Eq B3: ``D_f⁻¹ = Λ − Υ Γ [I + Ω Γ]⁻¹ Υ*`` with ``Γ = diag{Γ(c)}`` (no ``Γ⁻¹``, O(m²)):
    ``X = [I + Ω Γ]⁻* (Υ Γ)*`` by one solve (``N``, ``X`` scratch of 6 n_c rows), then
    ``D_f⁻¹ = sym(Λ − X* Υ*)``; ``Omega`` (6 n_c)² entries, row-major."""
    m, k = Df_inv.shape[0], N.shape[0]
    for l in range(kids.shape[0]):
        G = Gam[kids[l]]
        for a in range(6):
            r = 6 * l + a
            for c in range(k):  # N = (I + Ω Γ)*
                s = 1.0 if r == c else 0.0
                for b in range(6):
                    s += Omega[c * k + 6 * l + b] * G[b, a]
                N[r, c] = s
            for j in range(m):  # X = (Υ Γ)*
                s = 0.0
                for b in range(6):
                    s += Upsilon[kids[l], j, b] * G[b, a]
                X[r, j] = s
    _lu_solve(N, X)
    for r in range(m):
        for c in range(m):
            s = Lambda[r, c]
            for l in range(kids.shape[0]):
                for b in range(6):
                    s -= X[6 * l + b, r] * Upsilon[kids[l], c, b]
            Df_inv[r, c] = s
    symmetrize(Df_inv)


@helper
def _hinge_step(P_rr, mu, Df_inv, H_F, g, P_R, DR_inv, G_R, P_R_plus, T, PH, D_R, L):
    """Eq 63, the hinge step on the massless fictitious body: ``g = μ D_f⁻¹``,
    ``P_R = sym(P^{rr} − g μ*)``, ``D_R = H_F P_R H_F*`` inverted by Cholesky,
    ``G_R = P_R H_F* D_R⁻¹``, ``P_R⁺ = sym(P_R − G_R (P_R H_F*)*)``; ``T``, ``PH``, ``D_R``,
    ``L`` scratch; False when ``D_R`` is singular."""
    mm(mu, Df_inv, g)
    mmt(g, mu, T, False)
    _sym_difference(P_rr, T, P_R)
    mmt(P_R, H_F, PH, False)
    mm(H_F, PH, D_R)
    if not spd_inverse(D_R, inertia_scale(P_rr, H_F), L, DR_inv):
        return False
    mm(PH, DR_inv, G_R)
    mmt(G_R, PH, T, False)
    _sym_difference(P_R, T, P_R_plus)
    return True


# ----------------------------------------------------------------------------------------------
# the sweeps
# ----------------------------------------------------------------------------------------------
@helper
def split_inertias(pm, sm, w, sw):
    """Eqs 62–63 (B3), tip to base: per body the flexible step (its body model's) and the
    hinge step into ``sw``, then ``Γ = φ P_R⁺ φ*`` to a ruthless parent, ``A Γ A*`` into the
    ``P`` of any other; −1, or ``i`` when ``D_f`` of body ``i`` is singular, ``n + i`` when
    its ``D_R`` is."""
    ints, S = pm.ints, sm.ints
    n = ints.shape[0]
    P_rr, T = sw.t_66[0], sw.t_66[1]
    w.P[:] = 0.0  # the children's inertias accumulate here
    for i in range(n - 1, -1, -1):
        m, nj, pa = ints[i, MODES], ints[i, NJ], ints[i, PARENT]
        s = m + 6
        Hf = w.Hcal[i, nj:nj + m, :s]
        mu, Df, L, Df_inv = sw.t_mu[:, :m], sw.t_Df[:m, :m], sw.t_L[:m, :m], sw.Df_inv[i, :m, :m]
        if ints[i, KIND] == RUTHLESS:
            kids = sm.children[S[i, _C0]:S[i, _C0] + S[i, _NC]]
            _ruthless_rigid_part(pm.M_m0[i, m:s, m:s], sm.M_rf_Hf[i, :, :m], w.A, sw.Gam,
                                 sm.zeta, kids, P_rr, mu, T)
            ok = True
            if kids.shape[0] == 0:
                copy(sm.Lambda[i, :m, :m], Df_inv)
            elif S[i, _B3] == 1:
                k = 6 * kids.shape[0]
                _push_through(sm.Lambda[i, :m, :m], sm.Upsilon, sm.Omega[S[i, _OM]:],
                              sw.Gam, kids, sw.t_N[:k, :k], sw.t_X[:k, :m], Df_inv)
            else:
                ok = _explicit_Df_inverse(sm.D_f0[i, :m, :m], sm.zeta, sw.Gam, kids,
                                          inertia_scale(P_rr, Hf), Df, sw.t_Z[:m], L, Df_inv)
        else:
            ok = _flexible_step(w.P[i, :s, :s], w.M_m[i, :s, :s], Hf, P_rr, mu,
                                sw.t_PH[:s, :m], Df, L, Df_inv)
        if not ok:
            return i
        if not _hinge_step(P_rr, mu, Df_inv, w.Hcal[i, :nj, m:s], sw.g[i, :, :m], sw.P_R[i],
                           sw.DR_inv[i, :nj, :nj], sw.G_R[i, :, :nj], sw.P_R_plus[i], T,
                           sw.t_66[2, :, :nj], sw.t_66[3, :nj, :nj], sw.t_66[4, :nj, :nj]):
            return n + i
        if pa >= 0:
            if ints[pa, KIND] == RUTHLESS:
                sw.Gam[i] = 0.0
                pose_congruence(w.R_phi[i], w.p_phi[i], sw.P_R_plus[i], sw.Gam[i], w.t_33)
            else:
                child_inertia(ints, w.A, w.R_t, w.p_t, w.R_phi, w.p_phi, w.P, i,
                               sw.P_R_plus[i], w.t_33, sw.t_66[1], sw.t_EY)
    return -1


@helper
def split_filter(pm, w, sw, tau):
    """Eq 64, tip to base: ``z = Σ_c Φ z⁺(c) + b`` (bias with stiffness, damping and
    ``f_ext``), ``ε_f = T_f − ℋ_f z``, ``ν_f = D_f⁻¹ ε_f``, ``z_R = z^r + g ε_f + P_R a_m^r``,
    ``ε_R = T_R − H_F z_R``, ``ν_R = D_R⁻¹ ε_R`` and ``z⁺ = z_R + G_R ε_R`` to the parent."""
    ints = pm.ints
    eps_f, z_R, t = sw.t_v, sw.t_6[0], sw.t_6[2]
    w.z[:] = 0.0  # the children's forces accumulate here
    for i in range(ints.shape[0] - 1, -1, -1):
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        s = m + 6
        z = w.z[i, :s]
        for r in range(s):
            z[r] += w.bias[i, r]
        ef = eps_f[:m]
        copy(tau[us + nj:us + nj + m], ef)
        sub_mv(w.Hcal[i, nj:nj + m, :s], z, ef)
        mv(sw.Df_inv[i, :m, :m], ef, sw.nu_f[i, :m], False)
        copy(z[m:s], z_R)
        mv(sw.g[i, :, :m], ef, z_R, True)
        mv(sw.P_R[i], w.a_m[i, m:s], z_R, True)
        eps_R = sw.t_6[1, :nj]
        copy(tau[us:us + nj], eps_R)
        sub_mv(w.Hcal[i, :nj, m:s], z_R, eps_R)
        mv(sw.DR_inv[i, :nj, :nj], eps_R, sw.nu_R[i, :nj], False)
        if ints[i, PARENT] >= 0:
            mv(sw.G_R[i, :, :nj], eps_R, z_R, True)
            to_parent(ints, w.A, w.phi, i, z_R, w.z, t)


@helper
def split_smoother(pm, w, sw, udot):
    """Eq 64, base to tip: ``a_R = φ* A* α(p)``, ``β̇ = ν_R − G_R* a_R``,
    ``a_R ← a_R + H_F* β̇ + a_m^r``, ``η̈ = ν_f − g* a_R``, ``α = [η̈; a_R + Q η̈]``, with
    ``β̇``, ``η̈`` into ``udot``."""
    ints = pm.ints
    a_g = sw.t_6[3]
    gravity_acceleration(pm, a_g)
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        s = m + 6
        al = w.alpha[i, :s]
        a_R = al[m:]
        parent_acceleration(ints, w.A, w.phi, w.alpha, i, a_g, a_R, sw.t_6[4])
        beta_dot = udot[us:us + nj]
        copy(sw.nu_R[i, :nj], beta_dot)
        sub_mtv(sw.G_R[i, :, :nj], a_R, beta_dot)
        mtv(w.Hcal[i, :nj, m:s], beta_dot, a_R, True)
        for r in range(6):
            a_R[r] += w.a_m[i, m + r]
        eta_ddot = udot[us + nj:us + nj + m]
        copy(sw.nu_f[i, :m], eta_ddot)
        sub_mtv(sw.g[i, :, :m], a_R, eta_ddot)
        copy(eta_ddot, al[:m])
        mv(w.Q[i, :, :m], eta_ddot, a_R, True)


# ----------------------------------------------------------------------------------------------
# entry points (compiled on first use; all release the GIL)
# ----------------------------------------------------------------------------------------------
@helper
def _forward_split(st, pm, sm, w, sw, q, u, tau, fext, udot):
    """Terms (by the stages of ``st``), then Eqs 62–64 into ``udot``: the status of
    :func:`split_inertias`."""
    position_velocity_terms(st, pm, w, q, u, fext)
    status = split_inertias(pm, sm, w, sw)
    if status < 0:
        split_filter(pm, w, sw, applied_forces(pm, w, q, u, tau))
        split_smoother(pm, w, sw, udot)
    return status


@entry_point
def forward_split(ib, fb, st, sib, sfb, q, u, tau, fext, udot):
    """``_forward_split`` of one state, validated: −1, :data:`~flexdyn.engine.layout.INVALID`,
    :data:`~flexdyn.engine.layout.OVERFLOW`, ``i`` (``D_f`` of body ``i`` singular) or ``n + i``
    (its ``D_R``)."""
    pm, sm = unpack(ib, fb), unpack_split(ib, sib, sfb)
    w, sw = workspace(ib), split_workspace(ib, sib)
    if not valid_state(pm, q, u, tau, fext, w.q_n):
        return INVALID
    status = _forward_split(st, pm, sm, w, sw, w.q_n, u, tau, fext, udot)
    return status if status >= 0 else finite_result(udot)


@entry_point
def factors(ib, fb, st, sib, sfb, q):
    """``(status, w, sw)``: the factors of Eq 63 at ``q`` (in ``sw``; the full and rigid
    bodies' ``P`` in ``w.P``), status as :func:`forward_split`."""
    pm, sm = unpack(ib, fb), unpack_split(ib, sib, sfb)
    w, sw = workspace(ib), split_workspace(ib, sib)
    nu, n = ib[3], ib[0]
    u, fext = np.zeros(nu), np.zeros((n, 6))
    if not valid_state(pm, q, u, u, fext, w.q_n):
        return INVALID, w, sw
    position_velocity_terms(st, pm, w, w.q_n, u, fext)
    return split_inertias(pm, sm, w, sw), w, sw


@entry_point
def batch(ib, fb, st, sib, sfb, t, n_threads, q, u, tau, fext, out, status):
    """``_forward_split`` on the states ``t, t + n_threads, …`` of the leading axis of
    ``q``, ``u``, ``tau``, ``fext`` into ``out`` (B, nu) and ``status`` (B,), in one
    workspace (as :func:`flexdyn.engine.kernels.batch`)."""
    pm, sm = unpack(ib, fb), unpack_split(ib, sib, sfb)
    w, sw = workspace(ib), split_workspace(ib, sib)
    for b in range(t, q.shape[0], n_threads):
        status[b] = _forward_split(st, pm, sm, w, sw, q[b], u[b], tau[b], fext[b], out[b])
