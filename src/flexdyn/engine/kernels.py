"""Compiled kernels of the engine (numba, ``cache=True``): joint kernels by code, body kernels
by kind (rigid, full, ruthless) filling the per-state blocks, and generic sweeps that do not
know which body kernel filled them.  Every array is padded (see :mod:`flexdyn.engine.pack`);
a modal-size block of body ``i`` occupies ``[:m_i + 6]`` with the modal entries first.

The equations are those of the reference tier, step for step: position terms
(:func:`flexdyn.terms.position_terms`), velocity terms (:func:`flexdyn.terms.velocity_terms`,
Eqs 11, 25, 37), Newton–Euler (Eq 44), the composite-body mass matrix (Eqs 47, 50) and the
articulated-body forward dynamics (Eqs 51, 58).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import overload

from ..linalg import MASS_MATRIX_RTOL, PIVOT_FLOOR, PIVOT_RTOL
from ..scalar_kernels import quat_rot
from .pack import FULL, RIGID, RUTHLESS

_J = numba.njit(cache=True)
# integer columns of PackedModel.ints (pack.INT_FIELDS)
_PARENT, _M, _NJ, _NQJ, _QS, _US, _JCODE, _KIND, _CN, _PN, _NN = range(11)
_FIXED, _REVOLUTE, _PRISMATIC, _SCREW, _CYLINDRICAL, _UNIVERSAL, _SPHERICAL, _FREE = range(8)


# ----------------------------------------------------------------------------------------------
# small algebra
# ----------------------------------------------------------------------------------------------
def _mul(a, b):
    """``a @ b`` for the small blocks of the engine, by plain loops (no BLAS call: on blocks
    of 6 to 20 entries a call costs ~15× the arithmetic, and results do not depend on BLAS
    threads); any strides, so slices and transposes need no copies."""
    return a @ b


@overload(_mul)
def _mul_loops(a, b):
    if a.ndim == 2 and b.ndim == 2:
        def mm(a, b):
            n, k = a.shape
            m = b.shape[1]
            out = np.zeros((n, m))
            for i in range(n):
                for t in range(k):
                    x = a[i, t]
                    for j in range(m):
                        out[i, j] += x * b[t, j]
            return out
        return mm
    if a.ndim == 2 and b.ndim == 1:
        def mv(a, b):
            n, k = a.shape
            out = np.zeros(n)
            for i in range(n):
                s = 0.0
                for t in range(k):
                    s += a[i, t] * b[t]
                out[i] = s
            return out
        return mv
    if a.ndim == 1 and b.ndim == 1:
        def vv(a, b):
            s = 0.0
            for t in range(a.shape[0]):
                s += a[t] * b[t]
            return s
        return vv
    return None


@_J
def _skew(v, out):
    out[0, 0] = 0.0
    out[0, 1] = -v[2]
    out[0, 2] = v[1]
    out[1, 0] = v[2]
    out[1, 1] = 0.0
    out[1, 2] = -v[0]
    out[2, 0] = -v[1]
    out[2, 1] = v[0]
    out[2, 2] = 0.0


@_J
def _cross3(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@_J
def _crm(V, W, out):
    """``out = V × W`` (twists)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = W[0], W[1], W[2], W[3], W[4], W[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + v1 * a2 - v2 * a1
    out[4] = w2 * b0 - w0 * b2 + v2 * a0 - v0 * a2
    out[5] = w0 * b1 - w1 * b0 + v0 * a1 - v1 * a0


@_J
def _crf(V, f, out):
    """``out = V ×* f`` (twist, wrench)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


@_J
def _phi(R, p, out):
    """``φ = [[R, p̃ R], [0, R]]`` (moves forces from the frame to its parent)."""
    out[:] = 0.0
    px = np.empty((3, 3))
    _skew(p, px)
    out[:3, :3] = R
    out[3:, 3:] = R
    out[:3, 3:] = _mul(px, R)


@_J
def _motion_to_parent(R, p, out):
    """``[[R, 0], [p̃ R, R]]`` (moves twists from the frame to its parent)."""
    out[:] = 0.0
    px = np.empty((3, 3))
    _skew(p, px)
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = _mul(px, R)


# ----------------------------------------------------------------------------------------------
# SO(3) maps (spatial.so3_maps): power series for |θ|² < 1, closed forms beyond
# ----------------------------------------------------------------------------------------------
@_J
def _so3_coefficients(s):
    """``a, b, c`` and their derivatives in ``s = |θ|²`` (see spatial._exp_coefficients)."""
    if s < 1.0:
        out = np.zeros(6)
        for off in range(3):
            fact = 1.0
            for k in range(1, off + 2):
                fact *= k
            term = 1.0 / fact  # k = 0
            total, dtotal, sk = term, 0.0, 1.0
            for k in range(1, 12):
                fact *= (2 * k + off + 1) * (2 * k + off)
                sign = -1.0 if k % 2 else 1.0
                dtotal += sign * k * sk / fact
                sk *= s
                total += sign * sk / fact
            out[off] = total
            out[3 + off] = dtotal
        return out[0], out[1], out[2], out[3], out[4], out[5]
    t = math.sqrt(s)
    sn, co = math.sin(t), math.cos(t)
    a = sn / t
    b = (1.0 - co) / s
    c = (t - sn) / (s * t)
    return a, b, c, (co - a) / (2.0 * s), (a - 2.0 * b) / (2.0 * s), (b - 3.0 * c) / (2.0 * s)


@_J
def _node_frame(Pi_r, Pi_t, l0, eta, m, R, p, E, theta):
    """Node frame at ``η``: ``θ = Π_r η``, ``R = exp(θ̃)``, ``p = l0 + Π_t η``,
    ``E = [J_r(θ) Π_r; Rᵀ Π_t]`` (6 × m)."""
    for r in range(3):
        th = 0.0
        pr = l0[r]
        for k in range(m):
            th += Pi_r[r, k] * eta[k]
            pr += Pi_t[r, k] * eta[k]
        theta[r] = th
        p[r] = pr
    s = theta[0] ** 2 + theta[1] ** 2 + theta[2] ** 2
    a, b, c, _, _, _ = _so3_coefficients(s)
    K = np.empty((3, 3))
    _skew(theta, K)
    K2 = _mul(K, K)
    Jr = np.empty((3, 3))
    for r in range(3):
        for q in range(3):
            e = 1.0 if r == q else 0.0
            R[r, q] = e + a * K[r, q] + b * K2[r, q]
            Jr[r, q] = e - b * K[r, q] + c * K2[r, q]
    E[:, :] = 0.0
    for r in range(3):
        for k in range(m):
            s1 = 0.0
            s2 = 0.0
            for q in range(3):
                s1 += Jr[r, q] * Pi_r[q, k]
                s2 += R[q, r] * Pi_t[q, k]
            E[r, k] = s1
            E[3 + r, k] = s2


@_J
def _node_twist_rate(theta, Pi_r, E, etad, m, out):
    """``Ė_j η̇ = [J̇_r(θ) θ̇; −(E_r η̇) × (E_t η̇)]`` with ``θ̇ = Π_r η̇`` (Body.node_twist_rate)."""
    th_d = np.zeros(3)
    w = np.zeros(6)
    for r in range(3):
        for k in range(m):
            th_d[r] += Pi_r[r, k] * etad[k]
    for r in range(6):
        for k in range(m):
            w[r] += E[r, k] * etad[k]
    s = theta[0] ** 2 + theta[1] ** 2 + theta[2] ** 2
    _, b, c, _, db, dc = _so3_coefficients(s)
    K = np.empty((3, 3))
    Kd = np.empty((3, 3))
    _skew(theta, K)
    _skew(th_d, Kd)
    dt2 = 2.0 * (theta[0] * th_d[0] + theta[1] * th_d[1] + theta[2] * th_d[2])
    Jrd = -(db * dt2) * K - b * Kd + dc * dt2 * _mul(K, K) + c * (_mul(Kd, K) + _mul(K, Kd))
    top = _mul(Jrd, th_d)
    cr = np.empty(3)
    _cross3(w[:3], w[3:], cr)
    for r in range(3):
        out[r] = top[r]
        out[3 + r] = -cr[r]


@_J
def _node_map(R, p, E, m, B):
    """``B_j = [E_j, φ*(k, j)]`` (6 × (m+6)): node twist from ``[η̇; V]``."""
    B[:, :] = 0.0
    B[:, :m] = E[:, :m]
    px = np.empty((3, 3))
    _skew(p, px)
    Rt = R.T
    B[:3, m:m + 3] = Rt
    B[3:, m + 3:m + 6] = Rt
    B[3:, m:m + 3] = -_mul(Rt, px)


# ----------------------------------------------------------------------------------------------
# joint kernels by code
# ----------------------------------------------------------------------------------------------
@_J
def _axis_angle(ax, th, R):
    """``exp(th ã)`` for a unit axis ``ax``."""
    s, c1 = math.sin(th), 1.0 - math.cos(th)
    K = np.empty((3, 3))
    _skew(ax, K)
    K2 = _mul(K, K)
    for r in range(3):
        for q in range(3):
            R[r, q] = (1.0 if r == q else 0.0) + s * K[r, q] + c1 * K2[r, q]


_quat_rot = _J(quat_rot)


@_J
def _joint(code, jp, qj, R, p, S):
    """Transform ``(R, p)`` of ``J_c`` in ``J_p`` and motion subspace ``S`` (6 × nu_j)."""
    R[:, :] = 0.0
    for r in range(3):
        R[r, r] = 1.0
    p[:] = 0.0
    S[:, :] = 0.0
    ax = jp[:3]
    if code == _REVOLUTE or code == _SCREW or code == _CYLINDRICAL:
        _axis_angle(ax, qj[0], R)
        S[:3, 0] = ax
        if code == _SCREW:
            p[:] = jp[6] * qj[0] * ax
            S[3:, 0] = jp[6] * ax
        elif code == _CYLINDRICAL:
            p[:] = qj[1] * ax
            S[3:, 1] = ax
    elif code == _PRISMATIC:
        p[:] = qj[0] * ax
        S[3:, 0] = ax
    elif code == _UNIVERSAL:
        R1 = np.empty((3, 3))
        R2 = np.empty((3, 3))
        _axis_angle(jp[:3], qj[0], R1)
        _axis_angle(jp[3:6], qj[1], R2)
        R[:, :] = _mul(R1, R2)
        S[:3, 0] = _mul(R2.T, jp[:3])
        S[:3, 1] = jp[3:6]
    elif code == _SPHERICAL or code == _FREE:
        _quat_rot(qj[0], qj[1], qj[2], qj[3], R)
        for r in range(3):
            S[r, r] = 1.0
        if code == _FREE:
            p[:] = qj[4:7]
            for r in range(3):
                S[3 + r, 3 + r] = 1.0


@_J
def _joint_rate(code, jp, qj, beta, out):
    """``Ḣ* β`` (6,): non-zero for the universal joint only."""
    out[:] = 0.0
    if code == _UNIVERSAL:
        R2 = np.empty((3, 3))
        _axis_angle(jp[3:6], qj[1], R2)
        a = _mul(R2.T, jp[:3])
        c = np.empty(3)
        _cross3(a, jp[3:6], c)
        out[:3] = beta[0] * beta[1] * c


# ----------------------------------------------------------------------------------------------
# per-state terms (terms.position_terms, terms.velocity_terms)
# ----------------------------------------------------------------------------------------------
@_J
def _workspace(pm):
    """Position-term arrays: node frames (R, p, E, θ), φ, A, ℋ, M_m, Q, X_joint and the
    pose of each body's own attach node (R_nc, p_nc)."""
    n, N = pm.l0.shape[0], pm.l0.shape[1]
    M = pm.K.shape[1]
    return (np.zeros((n, N, 3, 3)), np.zeros((n, N, 3)), np.zeros((n, N, 6, M)),
            np.zeros((n, N, 3)), np.zeros((n, 6, 6)), np.zeros((n, M + 6, 6)),
            np.zeros((n, M + 6, M + 6)), np.zeros((n, M + 6, M + 6)), np.zeros((n, 6, M)),
            np.zeros((n, 6, 6)), np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 6, 6)))


@_J
def position_terms(pm, q):
    """Eqs 12–17 and 23 for every body, base to tip (:func:`flexdyn.terms.position_terms`).

    Returns ``(fR, fp, fE, fth, phi, A, Hcal, M_m, Q, X_joint, R_nc, p_nc, S)``."""
    fR, fp, fE, fth, phi, A, Hcal, Mm, Q, Xj, Rnc, pnc, S = _workspace(pm)
    ints = pm.ints
    n = ints.shape[0]
    Rj = np.empty((3, 3))
    pj = np.empty(3)
    for i in range(n):
        m, nj, kind = ints[i, _M], ints[i, _NJ], ints[i, _KIND]
        qs, nqj, cn = ints[i, _QS], ints[i, _NQJ], ints[i, _CN]
        eta = q[qs + nqj:qs + nqj + m]
        if kind == FULL:  # node frames and Eq 23 at η
            for j in range(ints[i, _NN]):
                _node_frame(pm.Pi_r[i, j], pm.Pi_t[i, j], pm.l0[i, j], eta, m, fR[i, j],
                            fp[i, j], fE[i, j], fth[i, j])
            _modal_mass(pm, i, fR[i], fp[i], fE[i], Mm[i])
            if cn >= 0:
                Rnc[i] = fR[i, cn]
                pnc[i] = fp[i, cn]
            else:
                for r in range(3):
                    Rnc[i, r, r] = 1.0
            # F_i in J_c: child_placement ∘ T_nc⁻¹; X = twists J_c → F_i; Q = −X_nc E_c
            R_Jc = _mul(pm.cplace_R[i], Rnc[i].T)
            p_Jc = pm.cplace_p[i] - _mul(R_Jc, pnc[i])
            _motion_to_parent(R_Jc.T, -_mul(R_Jc.T, p_Jc), Xj[i])
            if cn >= 0:
                Xnc = np.empty((6, 6))
                _motion_to_parent(Rnc[i], pnc[i], Xnc)
                Q[i, :, :m] = -_mul(Xnc, fE[i, cn, :, :m])
        else:
            Mm[i] = pm.M_m0[i]
            R_Jc = pm.T_Jc_R[i]
            p_Jc = pm.T_Jc_p[i]
            Xj[i] = pm.X_joint0[i]
            Q[i] = pm.Q0[i]
        # T_parent = placement ∘ joint(q) ∘ T_Jc,i;  φ(i) = T_parent.phi()
        _joint(ints[i, _JCODE], pm.jparam[i], q[qs:qs + nqj], Rj, pj, S[i])
        R1 = _mul(pm.place_R[i], Rj)
        p1 = _mul(pm.place_R[i], pj) + pm.place_p[i]
        _phi(_mul(R1, R_Jc), _mul(R1, p_Jc) + p1, phi[i])
        # ℋ(i) = [[0, H_F], [I, Qᵀ]],  H_F* = X S
        HF = _mul(Xj[i], S[i, :, :nj])
        for r in range(nj):
            for c in range(6):
                Hcal[i, r, m + c] = HF[c, r]
        for k in range(m):
            Hcal[i, nj + k, k] = 1.0
            for c in range(6):
                Hcal[i, nj + k, m + c] = Q[i, c, k]
        # A(i) = [E_tᵀ; φ(p, t_i)] of the parent's attach node
        pa = ints[i, _PARENT]
        if pa >= 0:
            if ints[pa, _KIND] == FULL:
                mp, pn = ints[pa, _M], ints[i, _PN]
                if pn >= 0:
                    ph = np.empty((6, 6))
                    _phi(fR[pa, pn], fp[pa, pn], ph)
                    for r in range(mp):
                        for c in range(6):
                            A[i, r, c] = fE[pa, pn, c, r]
                    A[i, mp:mp + 6] = ph
                else:
                    for r in range(6):
                        A[i, mp + r, r] = 1.0
            else:
                A[i] = pm.A0[i]
    return fR, fp, fE, fth, phi, A, Hcal, Mm, Q, Xj, Rnc, pnc, S


@_J
def _modal_mass(pm, i, fR, fp, fE, out):
    """Eq 23: ``M_m = Σ_j B_jᵀ M_s(j) B_j + [[0, 0], [0, M_rigid]]``."""
    m = pm.ints[i, _M]
    out[:, :] = 0.0
    B = np.empty((6, m + 6))
    MB = np.empty((6, m + 6))
    for j in range(pm.ints[i, _NN]):
        _node_map(fR[j], fp[j], fE[j], m, B)
        MB[:3] = _mul(pm.node_I[i, j], B[:3])
        MB[3:] = pm.node_m[i, j] * B[3:]
        out[:m + 6, :m + 6] += _mul(B.T, MB)
    out[m:m + 6, m:m + 6] += pm.M_rigid[i]


@_J
def _modal_velocities(pm, Hcal, phi, A, u, Vm):
    """Eq 11: ``V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i)``."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        Vm[i, :] = 0.0
        Vm[i, :m + 6] = _mul(Hcal[i, :nj + m, :m + 6].T, u[us:us + nj + m])
        pa = ints[i, _PARENT]
        if pa >= 0:
            mp = ints[pa, _M]
            Vm[i, m:m + 6] += _mul(phi[i].T, _mul(A[i, :mp + 6].T, Vm[pa, :mp + 6]))


@_J
def velocity_terms(pm, q, u, fext, pos):
    """Eqs 11, 25, 37 and the elastic forces (:func:`flexdyn.terms.velocity_terms`); the
    ruthless kernel lets no modal rate into the velocity products (Eq B1).

    Returns ``(V_m, a_m, bias)`` with ``bias = b_m + [K η + C η̇; 0] − [0; f_ext]``."""
    fR, fp, fE, fth, phi, A, Hcal, Mm, Q, Xj, Rnc, pnc, S = pos
    ints = pm.ints
    n = ints.shape[0]
    M = pm.K.shape[1]
    Vm = np.zeros((n, M + 6))
    _modal_velocities(pm, Hcal, phi, A, u, Vm)
    u_nl = u.copy()
    for i in range(n):
        if ints[i, _KIND] == RUTHLESS:
            s = ints[i, _US] + ints[i, _NJ]
            u_nl[s:s + ints[i, _M]] = 0.0
    Vnl = np.zeros((n, M + 6))
    _modal_velocities(pm, Hcal, phi, A, u_nl, Vnl)
    am = np.zeros((n, M + 6))
    bias = np.zeros((n, M + 6))
    aV = np.empty(6)
    tmp = np.empty(6)
    eps = np.empty(6)
    for i in range(n):
        m, nj, us, kind = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _KIND]
        qs, nqj = ints[i, _QS], ints[i, _NQJ]
        beta = u_nl[us:us + nj]
        etad = u_nl[us + nj:us + nj + m]
        V = Vnl[i, m:m + 6]
        aV[:] = 0.0
        pa, pn = ints[i, _PARENT], ints[i, _PN]
        if pa >= 0 and pn >= 0 and ints[pa, _KIND] == FULL and ints[pa, _M] > 0:
            mp = ints[pa, _M]
            etad_p = u_nl[ints[pa, _US] + ints[pa, _NJ]:ints[pa, _US] + ints[pa, _NJ] + mp]
            V_t = _mul(A[i, :mp + 6].T, Vnl[pa, :mp + 6])
            w_t = _mul(fE[pa, pn, :, :mp], etad_p)
            _node_twist_rate(fth[pa, pn], pm.Pi_r[pa, pn], fE[pa, pn], etad_p, mp, eps)
            _crm(V_t, w_t, tmp)
            aV += _mul(phi[i].T, eps + tmp)
        if nj > 0:  # (V − Q η̇) × H_F* β  +  X Ḣ* β
            HFb = _mul(Xj[i], _mul(S[i, :, :nj], beta))
            _crm(V - _mul(Q[i, :, :m], etad), HFb, tmp)
            aV += tmp
            _joint_rate(ints[i, _JCODE], pm.jparam[i], q[qs:qs + nqj], beta, eps)
            aV += _mul(Xj[i], eps)
        cn = ints[i, _CN]
        if kind == FULL and cn >= 0 and m > 0:
            _node_twist_rate(fth[i, cn], pm.Pi_r[i, cn], fE[i, cn], etad, m, eps)
            Xnc = np.empty((6, 6))
            _motion_to_parent(Rnc[i], pnc[i], Xnc)
            _crm(V, _mul(Q[i, :, :m], etad), tmp)
            aV += tmp - _mul(Xnc, eps)
        am[i, m:m + 6] = aV
        _modal_bias(pm, i, kind, fR[i], fp[i], fE[i], fth[i], etad, V, bias[i])
        eta = q[qs + nqj:qs + nqj + m]
        etad_true = u[us + nj:us + nj + m]
        bias[i, :m] += _mul(pm.K[i, :m, :m], eta) + _mul(pm.C[i, :m, :m], etad_true)
        bias[i, m:m + 6] -= fext[i]
    return Vm, am, bias


@_J
def _modal_bias(pm, i, kind, fR, fp, fE, fth, etad, V, out):
    """``b_m`` (Eq 37) of the body kernel ``kind``."""
    m = pm.ints[i, _M]
    f = np.empty(6)
    if kind == RIGID:
        _crf(V, _mul(pm.M_m0[i, :6, :6], V), f)
        out[:6] = f
        return
    if kind == RUTHLESS:  # [Vᵀ B_μ V; V ×* M⁰_rr V]
        for k in range(m):
            out[k] = _mul(V, _mul(pm.B_quad[i, k], V))
        _crf(V, _mul(pm.M_m0[i, m:m + 6, m:m + 6], V), f)
        out[m:m + 6] = f
        return
    _crf(V, _mul(pm.M_rigid[i], V), f)
    out[m:m + 6] = f
    B = np.empty((6, m + 6))
    Vmod = np.empty(m + 6)
    Vmod[:m] = etad
    Vmod[m:] = V
    Ed = np.empty(6)
    acc = np.empty(6)
    Ms_acc = np.empty(6)
    Ms_V = np.empty(6)
    for j in range(pm.ints[i, _NN]):
        _node_map(fR[j], fp[j], fE[j], m, B)
        Vs = _mul(B, Vmod)
        w = _mul(fE[j, :, :m], etad)
        _node_twist_rate(fth[j], pm.Pi_r[i, j], fE[j], etad, m, Ed)
        _crm(Vs, w, acc)
        acc += Ed
        Ms_acc[:3] = _mul(pm.node_I[i, j], acc[:3])
        Ms_acc[3:] = pm.node_m[i, j] * acc[3:]
        Ms_V[:3] = _mul(pm.node_I[i, j], Vs[:3])
        Ms_V[3:] = pm.node_m[i, j] * Vs[3:]
        _crf(Vs, Ms_V, f)
        out[:m + 6] += _mul(B.T, Ms_acc + f)


# ----------------------------------------------------------------------------------------------
# generic sweeps
# ----------------------------------------------------------------------------------------------
@_J
def rnea(pm, pos, am, bias, udot, gravity):
    """Eq 44: ``T = ℋ f_m`` with ``f_m = Σ_c Φ f_m(c) + M_m α_m + bias`` (newton_euler.rnea)."""
    phi, A, Hcal, Mm = pos[4], pos[5], pos[6], pos[7]
    ints = pm.ints
    n = ints.shape[0]
    M = pm.K.shape[1]
    alpha = np.zeros((n, M + 6))
    f = np.zeros((n, M + 6))
    a_g = np.zeros(6)
    if gravity:
        a_g[3:] = -pm.gravity
    for i in range(n):  # base-to-tip, Eq 24
        m, nj, us, pa = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _PARENT]
        a_t = _mul(A[i, :ints[pa, _M] + 6].T, alpha[pa, :ints[pa, _M] + 6]) if pa >= 0 else a_g
        alpha[i, :m + 6] = _mul(Hcal[i, :nj + m, :m + 6].T, udot[us:us + nj + m])
        alpha[i, m:m + 6] += _mul(phi[i].T, a_t) + am[i, m:m + 6]
        f[i, :m + 6] = _mul(Mm[i, :m + 6, :m + 6], alpha[i, :m + 6]) + bias[i, :m + 6]
    T = np.zeros(udot.shape[0])
    for i in range(n - 1, -1, -1):  # tip-to-base, Eqs 36, 41
        m, nj, us, pa = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _PARENT]
        T[us:us + nj + m] = _mul(Hcal[i, :nj + m, :m + 6], f[i, :m + 6])
        if pa >= 0:
            mp = ints[pa, _M]
            f[pa, :mp + 6] += _mul(A[i, :mp + 6], _mul(phi[i], f[i, m:m + 6]))
    return T


@_J
def crba(pm, pos, nu):
    """Eqs 47, 50: composite inertias and the mass matrix (composite_body.crba)."""
    phi, A, Hcal, Mm = pos[4], pos[5], pos[6], pos[7]
    ints = pm.ints
    n = ints.shape[0]
    R = Mm.copy()
    for i in range(n - 1, -1, -1):
        pa = ints[i, _PARENT]
        if pa >= 0:
            m, mp = ints[i, _M], ints[pa, _M]
            AP = _mul(A[i, :mp + 6], phi[i])
            R[pa, :mp + 6, :mp + 6] += _mul(_mul(AP, R[i, m:m + 6, m:m + 6]), AP.T)
    Mass = np.zeros((nu, nu))
    for i in range(n):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        X = _mul(R[i, :m + 6, :m + 6], Hcal[i, :nj + m, :m + 6].T)
        Mass[us:us + nj + m, us:us + nj + m] = _mul(Hcal[i, :nj + m, :m + 6], X)
        k, j = i, ints[i, _PARENT]
        while j >= 0:
            mk, mj, njj, usj = ints[k, _M], ints[j, _M], ints[j, _NJ], ints[j, _US]
            X = _mul(A[k, :mj + 6], _mul(phi[k], X[mk:mk + 6]))
            blk = _mul(Hcal[j, :njj + mj, :mj + 6], X)
            Mass[usj:usj + njj + mj, us:us + nj + m] = blk
            Mass[us:us + nj + m, usj:usj + njj + mj] = blk.T
            k, j = j, ints[j, _PARENT]
    return Mass


@_J
def cholesky_solve(Mass, b):
    """``M x = b`` by Cholesky; ``(ok, x)`` with ``ok`` False when a squared pivot is at most
    ``MASS_MATRIX_RTOL · M_kk`` (linalg.cholesky_solve)."""
    nu = Mass.shape[0]
    L = np.zeros((nu, nu))
    for j in range(nu):
        s = Mass[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > MASS_MATRIX_RTOL * abs(Mass[j, j]):
            return False, b
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, nu):
            s = Mass[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    y = b.copy()
    for i in range(nu):
        for k in range(i):
            y[i] -= L[i, k] * y[k]
        y[i] /= L[i, i]
    for i in range(nu - 1, -1, -1):
        for k in range(i + 1, nu):
            y[i] -= L[k, i] * y[k]
        y[i] /= L[i, i]
    return True, y


@_J
def _spd_inverse(D, scale):
    """``(ok, D⁻¹)`` by Cholesky with the reference's singularity test (linalg.spd_inverse):
    a squared pivot at most ``max(PIVOT_RTOL · max diag D, PIVOT_FLOOR · scale)`` fails."""
    k = D.shape[0]
    L = np.zeros((k, k))
    dmax = 0.0
    for j in range(k):
        dmax = max(dmax, abs(D[j, j]))
    tol = max(PIVOT_RTOL * dmax, PIVOT_FLOOR * scale, 2.2250738585072014e-308)
    for j in range(k):
        s = D[j, j]
        for r in range(j):
            s -= L[j, r] * L[j, r]
        if not s > tol:
            return False, D
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, k):
            s = D[i, j]
            for r in range(j):
                s -= L[i, r] * L[j, r]
            L[i, j] = s / d
    Linv = np.zeros((k, k))  # L⁻¹ by forward substitution
    for c in range(k):
        Linv[c, c] = 1.0 / L[c, c]
        for r in range(c + 1, k):
            s = 0.0
            for t in range(c, r):
                s -= L[r, t] * Linv[t, c]
            Linv[r, c] = s / L[r, r]
    return (True, _mul(Linv.T, Linv))


@_J
def articulated_forward_dynamics(pm, pos, am, bias, tau):
    """Eqs 51 and 58 (articulated_body.articulated_forward_dynamics): ``(status, u̇)`` with
    ``status`` −1, or the index of the body whose ``D`` is singular."""
    phi, A, Hcal, Mm = pos[4], pos[5], pos[6], pos[7]
    ints = pm.ints
    n = ints.shape[0]
    M = pm.K.shape[1]
    P = Mm.copy()
    G = np.zeros((n, M + 6, M + 6))
    innov = np.zeros((n, M + 6))
    zacc = np.zeros((n, M + 6))  # Σ_c Φ(i, c) z⁺(c), accumulated as the children are done
    for i in range(n - 1, -1, -1):  # tip-to-base: Eq 51 and the filter
        m, nj, us, pa = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _PARENT]
        k = nj + m
        H = Hcal[i, :k, :m + 6]
        Pi = P[i, :m + 6, :m + 6]
        PH = _mul(Pi, H.T)
        scale = 0.0
        if k > 0:
            hmax = 0.0
            for r in range(k):
                hmax = max(hmax, np.sum(H[r] ** 2))
            scale = np.max(np.abs(Pi)) * hmax
        ok, Dinv = _spd_inverse(_mul(H, PH), scale)
        if not ok:
            return i, tau
        Gi = _mul(PH, Dinv)
        G[i, :m + 6, :k] = Gi
        z = bias[i, :m + 6] + _mul(Pi, am[i, :m + 6]) + zacc[i, :m + 6]
        eps = tau[us:us + k] - _mul(H, z)
        innov[i, :k] = _mul(Dinv, eps)
        if pa >= 0:
            mp = ints[pa, _M]
            zacc[pa, :mp + 6] += _mul(A[i, :mp + 6], _mul(phi[i], (z + _mul(Gi, eps))[m:m + 6]))
            Pp = Pi - _mul(Gi, PH.T)  # τ̄ P
            Pr = 0.5 * (Pp[m:, m:] + Pp[m:, m:].T)
            AP = _mul(A[i, :mp + 6], phi[i])
            P[pa, :mp + 6, :mp + 6] += _mul(_mul(AP, Pr), AP.T)
    udot = np.zeros(tau.shape[0])
    alpha = np.zeros((n, M + 6))
    a_g = np.zeros(6)
    a_g[3:] = -pm.gravity
    for i in range(n):  # base-to-tip smoother
        m, nj, us, pa = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _PARENT]
        k = nj + m
        a_plus = np.zeros(m + 6)
        a_t = _mul(A[i, :ints[pa, _M] + 6].T, alpha[pa, :ints[pa, _M] + 6]) if pa >= 0 else a_g
        a_plus[m:] = _mul(phi[i].T, a_t)
        chi = innov[i, :k] - _mul(G[i, :m + 6, :k].T, a_plus)
        udot[us:us + k] = chi
        alpha[i, :m + 6] = a_plus + _mul(Hcal[i, :k, :m + 6].T, chi)
        alpha[i, m:m + 6] += am[i, m:m + 6]
    return -1, udot


# ----------------------------------------------------------------------------------------------
# entry points: one compiled call per operation (one crossing of the Python boundary)
# ----------------------------------------------------------------------------------------------
@_J
def forward_articulated(pm, q, u, tau, fext):
    """Terms, then Eqs 51/58: ``(status, u̇)``."""
    pos = position_terms(pm, q)
    _, am, bias = velocity_terms(pm, q, u, fext, pos)
    return articulated_forward_dynamics(pm, pos, am, bias, tau)


@_J
def forward_composite(pm, q, u, tau, fext):
    """Terms, then Eq 46 (mass matrix, bias by Newton–Euler, Cholesky): ``(ok, u̇)``."""
    pos = position_terms(pm, q)
    _, am, bias = velocity_terms(pm, q, u, fext, pos)
    C = rnea(pm, pos, am, bias, np.zeros(tau.shape[0]), True)
    return cholesky_solve(crba(pm, pos, tau.shape[0]), tau - C)


@_J
def inverse(pm, q, u, udot, fext):
    """Terms, then Eq 44."""
    pos = position_terms(pm, q)
    _, am, bias = velocity_terms(pm, q, u, fext, pos)
    return rnea(pm, pos, am, bias, udot, True)


@_J
def mass(pm, q, nu):
    """Position terms, then Eqs 47/50."""
    return crba(pm, position_terms(pm, q), nu)
