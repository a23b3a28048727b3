"""Compiled ruthless-linearization tier (optional; needs ``numba``: ``pip install flexdyn[fast]``).

:class:`CompiledRuthlessModel` evaluates the same equations as
:class:`flexdyn.ruthless.RuthlessModel` — Appendix B's constant body operators, the
articulated-body recursion of Eqs 63–64 and the composite-body algorithm of Eqs 45–50 —
inside ``numba``-compiled kernels.  The reference implementation in :mod:`flexdyn.ruthless`
reads like the paper; this one is tested against it quantity by quantity
(``tests/test_fast.py``).

Data layout
-----------
All constants of the model are packed once into one flat ``float64`` array ``fc`` and an
integer table ``ic`` (one row per body, topological order ``parent[i] < i``) holding the
body's sizes, its parent and children and the offset of each of its fields in ``fc``.  The
kernels are functions of these arrays only, so one call does all of its work — joint
transforms, interbody transforms, rigid velocities, ``a_m``, ``b_m``, stiffness and damping,
the recursions and the solves — in compiled code.

Frames
------
Where :mod:`flexdyn.chain` moves a child's quantities to its parent with
``A(c) φ(c) = [E_tᵀ; φ(p, t_c)] φ(t_c, c)``, the kernels use the single per-call transform
``Y(c) = φ(p, c) = φ(p, t_c) φ(t_c, c)`` (computed as one composition of rigid transforms) and
the constant ``Ê(c) = E_tᵀ φ(p, t_c)⁻¹``, so that ``A(c) φ(c) = [Ê(c); I] Y(c)``.  The Eq B4
constants are referred to the parent frame the same way: ``ζ̂ = ζ φ(p, t_c)⁻¹``, ``Υ̂ = Λ ζ̂``,
``Ω̂ = ζ̂ᵀ Υ̂`` and ``Γ̂(c) = Y(c) P_R⁺(c) Y(c)ᵀ``, for which::

    D_f⁻¹ = Λ − Υ̂ Γ̂ [I + Ω̂ Γ̂]⁻¹ Υ̂ᵀ        (Eq B3, push-through form)

equals the node-frame expression of
:func:`flexdyn.articulated_body.articulated_body_inertias_split` with the ruthless body models.

Joints: all types, including the universal joint (its joint map matrix and ``Ḣ* β`` are
evaluated in the kernels).  External wrenches ``f_ext`` (n_bodies, 6) at the body frame
origins are supported as in :func:`flexdyn.forward_dynamics`.  Inputs are real ``float64``
(no complex step).  A model instance is safe to use from several threads: every call
allocates its own work arrays.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .articulated_body import SplitFactors
from .chain import Model
from .joints import UniversalJoint
from .linalg import PIVOT_FLOOR, PIVOT_RTOL
from .ruthless import INDIRECT_MIN_MODES, RuthlessModel
from .scalar_kernels import quat_rot as _quat_rot
from .spatial import Transform

__all__ = ["CompiledRuthlessModel", "numba_available"]

_INSTALL_HINT = (
    "flexdyn.fast needs numba; install the optional 'fast' extra: "
    "pip install 'flexdyn[fast]' (or pip install numba)"
)

# ----------------------------------------------------------------------------------------------
# Packed layout: columns of the integer table ``ic`` (one row per body)
# ----------------------------------------------------------------------------------------------
_PARENT, _M, _NJ, _NQJ, _QS, _US, _JT, _NCH, _CH0, _MP = range(10)
(_O_TPL, _O_TC, _O_JNT, _O_XJ, _O_HF, _O_MRR, _O_MRF, _O_Q, _O_LAM, _O_DF0, _O_K, _O_C,
 _O_ZETA, _O_UPS, _O_OM, _O_ET, _O_M0, _O_BQ) = range(10, 28)
_W_M, _W_MM, _W_6M, _W_R = range(28, 32)
_NCOL = 32
# entries of the size vector ``sz``
_S_TOTM, _S_TOTMM, _S_TOT6M, _S_TOTR, _S_MMAX, _S_NCHIMAX, _S_NCMAX, _S_NU = range(8)

_UNIVERSAL = UniversalJoint.code  # the one kind whose H* varies (joints.Joint.code)

#: pivot thresholds of the SPD inverses (:mod:`flexdyn.linalg`)
_PIVOT_RTOL = PIVOT_RTOL
_PIVOT_FLOOR = PIVOT_FLOOR  # times max|P| · max‖H_F row‖², as linalg.inertia_scale

#: LLVM fast-math flags of the kernels: reassociation and contraction let reductions
#: vectorize; no "nnan"/"ninf", so non-finite results stay visible
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


# ----------------------------------------------------------------------------------------------
# Kernels: plain Python functions of arrays, compiled by _load_kernels with
# numba.njit(cache=True); flat fields are indexed row-major (``X[r * cols + c]``)
# ----------------------------------------------------------------------------------------------
def _axis_angle(a0, a1, a2, th, R):
    """``R = exp(th ã)`` = ``I + sin th ã + (1 − cos th) ã²`` for an axis ``a``."""
    s = math.sin(th)
    c1 = 1.0 - math.cos(th)
    aa = a0 * a0 + a1 * a1 + a2 * a2
    R[0, 0] = 1.0 + c1 * (a0 * a0 - aa)
    R[0, 1] = -s * a2 + c1 * a0 * a1
    R[0, 2] = s * a1 + c1 * a0 * a2
    R[1, 0] = s * a2 + c1 * a1 * a0
    R[1, 1] = 1.0 + c1 * (a1 * a1 - aa)
    R[1, 2] = -s * a0 + c1 * a1 * a2
    R[2, 0] = -s * a1 + c1 * a2 * a0
    R[2, 1] = s * a0 + c1 * a2 * a1
    R[2, 2] = 1.0 + c1 * (a2 * a2 - aa)


def _joint_transform(jt, q, qs, fc, oj, R, p, R2):
    """Pose ``(R, p)`` of ``J_c`` in ``J_p`` for joint type code ``jt`` (``R2``: scratch)."""
    for r in range(3):
        p[r] = 0.0
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0
    if jt == 1 or jt == 3 or jt == 4:  # revolute, screw, cylindrical
        _axis_angle(fc[oj], fc[oj + 1], fc[oj + 2], q[qs], R)
        if jt == 3:
            for r in range(3):
                p[r] = fc[oj + 6] * q[qs] * fc[oj + r]
        elif jt == 4:
            for r in range(3):
                p[r] = q[qs + 1] * fc[oj + r]
    elif jt == 2:  # prismatic
        for r in range(3):
            p[r] = q[qs] * fc[oj + r]
    elif jt == 5:  # universal: R(a1, q0) R(a2, q1)
        _axis_angle(fc[oj], fc[oj + 1], fc[oj + 2], q[qs], R2)
        _axis_angle(fc[oj + 3], fc[oj + 4], fc[oj + 5], q[qs + 1], R)
        for r in range(3):
            x0 = R2[r, 0]
            x1 = R2[r, 1]
            x2 = R2[r, 2]
            for c in range(3):
                p[c] = x0 * R[0, c] + x1 * R[1, c] + x2 * R[2, c]
            for c in range(3):
                R2[r, c] = p[c]
        for r in range(3):
            p[r] = 0.0
            for c in range(3):
                R[r, c] = R2[r, c]
    elif jt == 6 or jt == 7:  # spherical, free
        _quat_rot(q[qs], q[qs + 1], q[qs + 2], q[qs + 3], R)
        if jt == 7:
            for r in range(3):
                p[r] = q[qs + 4 + r]


def _prologue(q, u, ic, fc, Y, HF, V, aV):
    """Base-to-tip: interbody transforms ``Y(i) = φ(p, i)``, joint maps ``H_F*`` (6 × nu_j,
    padded to 6 columns), rigid velocities ``V`` and ``a_V`` of Eq B1 (``η̇ = 0``)."""
    n = ic.shape[0]
    Rj = np.empty((3, 3))
    R2 = np.empty((3, 3))
    A = np.empty((3, 3))
    R = np.empty((3, 3))
    pj = np.empty(3)
    p = np.empty(3)
    S0 = np.empty(3)
    HFb = np.empty(6)
    for i in range(n):
        jt = ic[i, _JT]
        qs = ic[i, _QS]
        us = ic[i, _US]
        nj = ic[i, _NJ]
        oj = ic[i, _O_JNT]
        _joint_transform(jt, q, qs, fc, oj, Rj, pj, R2)
        ot = ic[i, _O_TPL]
        oc = ic[i, _O_TC]
        for r in range(3):  # A = R_pl R_j
            for c in range(3):
                A[r, c] = (fc[ot + 3 * r] * Rj[0, c] + fc[ot + 3 * r + 1] * Rj[1, c]
                           + fc[ot + 3 * r + 2] * Rj[2, c])
        for r in range(3):  # R = A R_c, p = A p_c + R_pl p_j + p_pl
            for c in range(3):
                R[r, c] = A[r, 0] * fc[oc + c] + A[r, 1] * fc[oc + 3 + c] + A[r, 2] * fc[oc + 6 + c]
            p[r] = (A[r, 0] * fc[oc + 9] + A[r, 1] * fc[oc + 10] + A[r, 2] * fc[oc + 11]
                    + fc[ot + 3 * r] * pj[0] + fc[ot + 3 * r + 1] * pj[1]
                    + fc[ot + 3 * r + 2] * pj[2] + fc[ot + 9 + r])
        for r in range(3):  # Y = [[R, p̃ R], [0, R]]
            for c in range(3):
                Y[i, r, c] = R[r, c]
                Y[i, r + 3, c + 3] = R[r, c]
                Y[i, r + 3, c] = 0.0
        for c in range(3):
            Y[i, 0, c + 3] = p[1] * R[2, c] - p[2] * R[1, c]
            Y[i, 1, c + 3] = p[2] * R[0, c] - p[0] * R[2, c]
            Y[i, 2, c + 3] = p[0] * R[1, c] - p[1] * R[0, c]
        ox = ic[i, _O_XJ]
        if jt == _UNIVERSAL:  # H* = [[R(a2, q1)ᵀ a1, a2], [0, 0]],  H_F* = X_{i←J_c} H*
            _axis_angle(fc[oj + 3], fc[oj + 4], fc[oj + 5], q[qs + 1], R2)
            for r in range(3):
                S0[r] = R2[0, r] * fc[oj] + R2[1, r] * fc[oj + 1] + R2[2, r] * fc[oj + 2]
            for r in range(6):
                s0 = 0.0
                s1 = 0.0
                for k in range(3):
                    s0 += fc[ox + 6 * r + k] * S0[k]
                    s1 += fc[ox + 6 * r + k] * fc[oj + 3 + k]
                HF[i, r, 0] = s0
                HF[i, r, 1] = s1
        else:
            oh = ic[i, _O_HF]
            for r in range(6):
                for k in range(nj):
                    HF[i, r, k] = fc[oh + 6 * r + k]
        for r in range(6):
            s = 0.0
            for k in range(nj):
                s += HF[i, r, k] * u[us + k]
            HFb[r] = s
        pa = ic[i, _PARENT]
        for r in range(6):
            s = HFb[r]
            if pa >= 0:
                for k in range(6):
                    s += Y[i, k, r] * V[pa, k]
            V[i, r] = s
        # a_V = V × H_F* β
        w0, w1, w2 = V[i, 0], V[i, 1], V[i, 2]
        v0, v1, v2 = V[i, 3], V[i, 4], V[i, 5]
        aV[i, 0] = w1 * HFb[2] - w2 * HFb[1]
        aV[i, 1] = w2 * HFb[0] - w0 * HFb[2]
        aV[i, 2] = w0 * HFb[1] - w1 * HFb[0]
        aV[i, 3] = w1 * HFb[5] - w2 * HFb[4] + v1 * HFb[2] - v2 * HFb[1]
        aV[i, 4] = w2 * HFb[3] - w0 * HFb[5] + v2 * HFb[0] - v0 * HFb[2]
        aV[i, 5] = w0 * HFb[4] - w1 * HFb[3] + v0 * HFb[1] - v1 * HFb[0]
        if jt == _UNIVERSAL:  # + X_{i←J_c} Ḣ* β,  Ḣ* β = [β₀ β₁ (R(a2, q1)ᵀ a1 × a2); 0]
            b01 = u[us] * u[us + 1]
            c0 = b01 * (S0[1] * fc[oj + 5] - S0[2] * fc[oj + 4])
            c1 = b01 * (S0[2] * fc[oj + 3] - S0[0] * fc[oj + 5])
            c2 = b01 * (S0[0] * fc[oj + 4] - S0[1] * fc[oj + 3])
            for r in range(6):
                aV[i, r] += fc[ox + 6 * r] * c0 + fc[ox + 6 * r + 1] * c1 + fc[ox + 6 * r + 2] * c2


def _bias(q, u, fext, ic, fc, V, bf, br):
    """Modal bias ``b_m + K_m ϑ`` of Eq B1 with stiffness and damping, minus ``f_ext``:
    ``bf`` (flexible part, flat) ``= Vᵀ B_μ V + K η + C η̇``, ``br = V ×* M_rr V − f_ext``."""
    n = ic.shape[0]
    vv = np.empty(21)
    t = np.empty(6)
    for i in range(n):
        m = ic[i, _M]
        Mrr = fc[ic[i, _O_MRR]:ic[i, _O_MRR] + 36]
        for r in range(6):
            s = 0.0
            for k in range(6):
                s += Mrr[r * 6 + k] * V[i, k]
            t[r] = s
        w0, w1, w2 = V[i, 0], V[i, 1], V[i, 2]
        v0, v1, v2 = V[i, 3], V[i, 4], V[i, 5]
        br[i, 0] = w1 * t[2] - w2 * t[1] + v1 * t[5] - v2 * t[4] - fext[i, 0]
        br[i, 1] = w2 * t[0] - w0 * t[2] + v2 * t[3] - v0 * t[5] - fext[i, 1]
        br[i, 2] = w0 * t[1] - w1 * t[0] + v0 * t[4] - v1 * t[3] - fext[i, 2]
        br[i, 3] = w1 * t[5] - w2 * t[4] - fext[i, 3]
        br[i, 4] = w2 * t[3] - w0 * t[5] - fext[i, 4]
        br[i, 5] = w0 * t[4] - w1 * t[3] - fext[i, 5]
        if m == 0:
            continue
        idx = 0
        for a in range(6):
            for b in range(a, 6):
                vv[idx] = V[i, a] * V[i, b]
                idx += 1
        Bq = fc[ic[i, _O_BQ]:ic[i, _O_BQ] + m * 21]
        K = fc[ic[i, _O_K]:ic[i, _O_K] + m * m]
        C = fc[ic[i, _O_C]:ic[i, _O_C] + m * m]
        qs = ic[i, _QS] + ic[i, _NQJ]
        eta = q[qs:qs + m]
        us = ic[i, _US] + ic[i, _NJ]
        etad = u[us:us + m]
        out = bf[ic[i, _W_M]:ic[i, _W_M] + m]
        for a in range(m):
            s = 0.0
            for k in range(21):
                s += Bq[a * 21 + k] * vv[k]
            for k in range(m):
                s += K[a * m + k] * eta[k] + C[a * m + k] * etad[k]
            out[a] = s


def _spd_inverse(D, m, L, out, floor):
    """Inverse of the SPD ``D[:m, :m]`` (lower triangle read) into ``out`` through its
    Cholesky factor ``L``; False if a pivot is not positive or
    ``min diag(L)² ≤ max(1e-13 max|diag D|, floor)`` (the test of the reference
    implementation)."""
    if m == 0:
        return True
    scale = 0.0
    for j in range(m):
        scale = max(scale, abs(D[j, j]))
    scale = max(scale, 2.2250738585072014e-308)
    dmin = np.inf
    for j in range(m):
        s = D[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        dmin = min(dmin, s)
        for i in range(j + 1, m):
            s = D[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    if dmin <= max(_PIVOT_RTOL * scale, floor):
        return False
    # L⁻¹ in place, column by column (entries right of column j are still L's)
    for j in range(m):
        L[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, m):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * L[k, j]
            L[i, j] = s / L[i, i]  # column i is still the factor itself
    # D⁻¹ = L⁻ᵀ L⁻¹
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, m):
                s += L[k, i] * L[k, j]
            out[i, j] = s
            out[j, i] = s
    return True




def _lu_solve(B, N, X, k):
    """Solve ``B[:N, :N] Z = X[:N, :k]`` in place (Gaussian elimination, partial pivoting)."""
    for c in range(N):
        piv = c
        big = abs(B[c, c])
        for r in range(c + 1, N):
            if abs(B[r, c]) > big:
                big = abs(B[r, c])
                piv = r
        if piv != c:
            for j in range(N):
                t = B[c, j]
                B[c, j] = B[piv, j]
                B[piv, j] = t
            for j in range(k):
                t = X[c, j]
                X[c, j] = X[piv, j]
                X[piv, j] = t
        d = 1.0 / B[c, c]
        for r in range(c + 1, N):
            f = B[r, c] * d
            if f != 0.0:
                for j in range(c + 1, N):
                    B[r, j] -= f * B[c, j]
                for j in range(k):
                    X[r, j] -= f * X[c, j]
    for c in range(N - 1, -1, -1):
        for r in range(c + 1, N):
            f = B[c, r]
            for j in range(k):
                X[c, j] -= f * X[r, j]
        d = 1.0 / B[c, c]
        for j in range(k):
            X[c, j] *= d


def _congruence(Y, P, T, G):
    """``G = Y P Yᵀ`` (6 × 6, ``P`` symmetric), ``T``: scratch."""
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += Y[r, k] * P[k, c]
            T[r, c] = s
    for r in range(6):
        for c in range(r + 1):
            s = 0.0
            for k in range(6):
                s += T[r, k] * Y[c, k]
            G[r, c] = s
            G[c, r] = s


def _attach_acceleration(i, ic, fc, af, ar, out):
    """Acceleration of body ``i``'s attach node in its parent's frame, ``A*(i) α_m(p)``
    (``[α_f(p); α_r(p)]`` through ``[Êᵀ; I]``), or the ground's ``[0; −g]`` for a root."""
    pa = ic[i, _PARENT]
    if pa >= 0:
        mp = ic[i, _MP]
        ET = fc[ic[i, _O_ET]:ic[i, _O_ET] + 6 * mp]
        afp = af[ic[pa, _W_M]:ic[pa, _W_M] + mp]
        for t in range(6):
            s = ar[pa, t]
            for j in range(mp):
                s += ET[t * mp + j] * afp[j]
            out[t] = s
    else:
        for t in range(6):
            out[t] = fc[t]  # ground acceleration [0; −g]


def _state_terms(q, u, fext, ic, fc, sz):
    """Per-state terms shared by every entry kernel: joint/interbody transforms ``Y``, joint
    maps ``H_F``, rigid twists ``V``, ``a_m`` (``aV``) and the bias ``b_m + K_m ϑ − f_ext``
    split into its flexible (``bf``) and rigid (``br``) parts."""
    n = ic.shape[0]
    Y = np.empty((n, 6, 6))
    HF = np.zeros((n, 6, 6))
    V = np.empty((n, 6))
    aV = np.empty((n, 6))
    _prologue(q, u, ic, fc, Y, HF, V, aV)
    bf = np.empty(sz[_S_TOTM])
    br = np.empty((n, 6))
    _bias(q, u, fext, ic, fc, V, bf, br)
    return Y, HF, aV, bf, br


def _ab_core(q, u, tau, fext, imm, ic, child, fc, sz, udot):
    """Ruthless split articulated-body forward dynamics (Eqs 63, 64, B3).

    Returns ``(status, Df_inv, g, P_R, D_R⁻¹, G_R, P_R⁺)``; ``status`` is −1, or
    ``2 i + 0`` (``D_f``) / ``2 i + 1`` (``D_R``) for the first body ``i`` whose articulated
    inertia is not positive definite."""
    n = ic.shape[0]
    mm = max(sz[_S_MMAX], 1)
    nn = max(6 * sz[_S_NCMAX], 1)
    Y, HF, aV, bf, br = _state_terms(q, u, fext, ic, fc, sz)

    Dfinv = np.empty(sz[_S_TOTMM])
    g = np.empty(sz[_S_TOT6M])
    nuf = np.empty(sz[_S_TOTM])
    PR = np.empty((n, 6, 6))
    DRinv = np.zeros((n, 6, 6))
    GR = np.zeros((n, 6, 6))
    PRp = np.empty((n, 6, 6))
    Gh = np.empty((n, 6, 6))  # Γ̂(c) = Y P_R⁺ Yᵀ of each child, parent frame
    zplus = np.empty((n, 6))
    nuR = np.zeros((n, 6))
    # scratch
    T6 = np.empty((6, 6))
    Prr = np.empty((6, 6))
    PH = np.empty((6, 6))
    DR = np.empty((6, 6))
    LR = np.empty((6, 6))
    DRi = np.empty((6, 6))
    zr = np.empty(6)
    zR = np.empty(6)
    w = np.empty(6)
    epsR = np.empty(6)
    mu = np.empty((6, mm))
    zf = np.empty(mm)
    eps = np.empty(mm)
    ZG = np.empty((nn, mm))
    Bx = np.empty((nn, nn))
    Df = np.empty((mm, mm))
    Lf = np.empty((mm, mm))
    Dfi = np.empty((mm, mm))
    status = -1

    for i in range(n - 1, -1, -1):  # tip-to-base: Eq 63 factors and Eq 64 filter together
        m = ic[i, _M]
        nj = ic[i, _NJ]
        us = ic[i, _US]
        nc = ic[i, _NCH]
        c0 = ic[i, _CH0]
        N = 6 * nc
        Mrr = fc[ic[i, _O_MRR]:ic[i, _O_MRR] + 36]
        MRF = fc[ic[i, _O_MRF]:ic[i, _O_MRF] + 6 * m]
        ZT = fc[ic[i, _O_ZETA]:ic[i, _O_ZETA] + N * m]  # ζ̂ᵀ
        bfi = bf[ic[i, _W_M]:ic[i, _W_M] + m]
        for r in range(6):
            zr[r] = br[i, r]
            for c in range(6):
                Prr[r, c] = Mrr[r * 6 + c]
            for j in range(m):
                mu[r, j] = MRF[r * m + j]
        for j in range(m):
            zf[j] = bfi[j]
        for k in range(nc):
            ch = child[c0 + k]
            G = Gh[ch]
            _congruence(Y[ch], PRp[ch], T6, G)
            for r in range(6):
                for c in range(6):
                    Prr[r, c] += G[r, c]
            for r in range(6):  # μ += Γ̂ ζ̂_kᵀ
                for t in range(6):
                    grt = G[r, t]
                    for j in range(m):
                        mu[r, j] += grt * ZT[(6 * k + t) * m + j]
            for r in range(6):  # z += [Ê; I] Y z⁺(c)
                s = 0.0
                for t in range(6):
                    s += Y[ch, r, t] * zplus[ch, t]
                w[r] = s
                zr[r] += s
            ET = fc[ic[ch, _O_ET]:ic[ch, _O_ET] + 6 * m]  # Êᵀ
            for t in range(6):
                wt = w[t]
                for j in range(m):
                    zf[j] += wt * ET[t * m + j]
        floor = 0.0  # singularity floor of D_f and D_R (see articulated_body._inertia_scale)
        if nj > 0:
            pmax = 0.0
            for r in range(6):
                for c in range(6):
                    pmax = max(pmax, abs(Prr[r, c]))
            hmax = 0.0
            for k in range(nj):
                s = 0.0
                for t in range(6):
                    s += HF[i, t, k] * HF[i, t, k]
                hmax = max(hmax, s)
            floor = _PIVOT_FLOOR * pmax * hmax
        # flexible step: D_f⁻¹, g = μ D_f⁻¹, P_R = P_rr − g μᵀ
        Dv = Dfinv[ic[i, _W_MM]:ic[i, _W_MM] + m * m]
        gv = g[ic[i, _W_6M]:ic[i, _W_6M] + 6 * m]
        if m > 0:
            Lam = fc[ic[i, _O_LAM]:ic[i, _O_LAM] + m * m]
            if nc == 0:
                for j in range(m):
                    for l_ in range(m):
                        Dv[j * m + l_] = Lam[j * m + l_]
            elif m >= imm:  # Eq B3: Λ − Υ̂ Γ̂ [I + Ω̂ Γ̂]⁻¹ Υ̂ᵀ
                UT = fc[ic[i, _O_UPS]:ic[i, _O_UPS] + N * m]  # Υ̂ᵀ
                Om = fc[ic[i, _O_OM]:ic[i, _O_OM] + N * N]
                for k in range(nc):
                    G = Gh[child[c0 + k]]
                    for s_ in range(6):  # Bx = (I + Ω̂ Γ̂)ᵀ,  ZG = (Υ̂ Γ̂)ᵀ
                        col = 6 * k + s_
                        for a in range(N):
                            Bx[col, a] = 0.0
                        Bx[col, col] = 1.0
                        for j in range(m):
                            ZG[col, j] = 0.0
                        for t in range(6):
                            gst = G[s_, t]
                            for a in range(N):
                                Bx[col, a] += gst * Om[(6 * k + t) * N + a]
                            for j in range(m):
                                ZG[col, j] += gst * UT[(6 * k + t) * m + j]
                _lu_solve(Bx, N, ZG, m)
                for j in range(m):
                    for l_ in range(j + 1):
                        Dv[j * m + l_] = Lam[j * m + l_]
                    for a in range(N):
                        z = ZG[a, j]
                        for l_ in range(j + 1):
                            Dv[j * m + l_] -= z * UT[a * m + l_]
                    for l_ in range(j):
                        Dv[l_ * m + j] = Dv[j * m + l_]
            else:  # explicit: D_f = Λ⁻¹ + Σ_c ζ̂ Γ̂ ζ̂ᵀ, inverted through its Cholesky factor
                Df0 = fc[ic[i, _O_DF0]:ic[i, _O_DF0] + m * m]
                for j in range(m):
                    for l_ in range(j + 1):
                        Df[j, l_] = Df0[j * m + l_]
                for k in range(nc):
                    G = Gh[child[c0 + k]]
                    for s_ in range(6):
                        for j in range(m):
                            ZG[s_, j] = 0.0
                        for t in range(6):
                            gst = G[s_, t]
                            for j in range(m):
                                ZG[s_, j] += gst * ZT[(6 * k + t) * m + j]
                    for j in range(m):
                        for s_ in range(6):
                            z = ZG[s_, j]
                            for l_ in range(j + 1):
                                Df[j, l_] += z * ZT[(6 * k + s_) * m + l_]
                if not _spd_inverse(Df, m, Lf, Dfi, floor):
                    if status < 0:
                        status = 2 * i
                    for j in range(m):
                        for l_ in range(m):
                            Dfi[j, l_] = 0.0
                for j in range(m):
                    for l_ in range(m):
                        Dv[j * m + l_] = Dfi[j, l_]
            for r in range(6):
                for j in range(m):
                    gv[r * m + j] = 0.0
                for l_ in range(m):
                    c_ = mu[r, l_]
                    for j in range(m):
                        gv[r * m + j] += c_ * Dv[l_ * m + j]
            for r in range(6):
                for c in range(r + 1):
                    s = Prr[r, c]
                    for j in range(m):
                        s -= gv[r * m + j] * mu[c, j]
                    PR[i, r, c] = s
                    PR[i, c, r] = s
        else:
            for r in range(6):
                for c in range(6):
                    PR[i, r, c] = Prr[r, c]
        # hinge step: D_R = H_F P_R H_F*,  G_R = P_R H_F* D_R⁻¹,  P_R⁺ = P_R − G_R (P_R H_F*)ᵀ
        for r in range(6):
            for k in range(nj):
                s = 0.0
                for t in range(6):
                    s += PR[i, r, t] * HF[i, t, k]
                PH[r, k] = s
        for a in range(nj):
            for b in range(nj):
                s = 0.0
                for t in range(6):
                    s += HF[i, t, a] * PH[t, b]
                DR[a, b] = s
        if not _spd_inverse(DR, nj, LR, DRi, floor):
            if status < 0:
                status = 2 * i + 1
            for a in range(nj):
                for b in range(nj):
                    DRi[a, b] = 0.0
        for a in range(nj):
            for b in range(nj):
                DRinv[i, a, b] = DRi[a, b]
        for r in range(6):
            for k in range(nj):
                s = 0.0
                for t in range(nj):
                    s += PH[r, t] * DRi[t, k]
                GR[i, r, k] = s
        for r in range(6):
            for c in range(r + 1):
                s = PR[i, r, c]
                for k in range(nj):
                    s -= GR[i, r, k] * PH[c, k]
                PRp[i, r, c] = s
                PRp[i, c, r] = s
        # filter (Eq 64): ε_f = T_f − ℋ_f z,  ν_f = D_f⁻¹ ε_f,  z_R = z_r + g ε_f + P_R a_V,
        #                 ε_R = T_R − H_F z_R,  ν_R = D_R⁻¹ ε_R,  z⁺ = z_R + G_R ε_R
        Q = fc[ic[i, _O_Q]:ic[i, _O_Q] + 6 * m]
        tf = tau[us + nj:us + nj + m]
        for j in range(m):
            eps[j] = tf[j] - zf[j]
        for r in range(6):
            z = zr[r]
            for j in range(m):
                eps[j] -= z * Q[r * m + j]
        nfi = nuf[ic[i, _W_M]:ic[i, _W_M] + m]
        for j in range(m):
            s = 0.0
            for l_ in range(m):
                s += Dv[j * m + l_] * eps[l_]
            nfi[j] = s
        for r in range(6):
            s = zr[r]
            for j in range(m):
                s += gv[r * m + j] * eps[j]
            for c in range(6):
                s += PR[i, r, c] * aV[i, c]
            zR[r] = s
        for k in range(nj):
            s = tau[us + k]
            for r in range(6):
                s -= HF[i, r, k] * zR[r]
            epsR[k] = s
        for k in range(nj):
            s = 0.0
            for t in range(nj):
                s += DRi[k, t] * epsR[t]
            nuR[i, k] = s
        for r in range(6):
            s = zR[r]
            for k in range(nj):
                s += GR[i, r, k] * epsR[k]
            zplus[i, r] = s

    # base-to-tip smoother (Eq 64)
    af = np.empty(sz[_S_TOTM])
    ar = np.empty((n, 6))
    t6 = np.empty(6)
    ain = np.empty(6)
    for i in range(n):
        m = ic[i, _M]
        nj = ic[i, _NJ]
        us = ic[i, _US]
        _attach_acceleration(i, ic, fc, af, ar, t6)
        for r in range(6):
            s = 0.0
            for t in range(6):
                s += Y[i, t, r] * t6[t]
            ain[r] = s
        for k in range(nj):
            s = nuR[i, k]
            for r in range(6):
                s -= GR[i, r, k] * ain[r]
            udot[us + k] = s
        for r in range(6):
            s = ain[r] + aV[i, r]
            for k in range(nj):
                s += HF[i, r, k] * udot[us + k]
            ar[i, r] = s
        if m > 0:
            gv = g[ic[i, _W_6M]:ic[i, _W_6M] + 6 * m]
            Q = fc[ic[i, _O_Q]:ic[i, _O_Q] + 6 * m]
            afi = af[ic[i, _W_M]:ic[i, _W_M] + m]
            nfi = nuf[ic[i, _W_M]:ic[i, _W_M] + m]
            for j in range(m):
                afi[j] = nfi[j]
            for r in range(6):
                a = ar[i, r]
                for j in range(m):
                    afi[j] -= a * gv[r * m + j]
            ud = udot[us + nj:us + nj + m]
            for j in range(m):
                ud[j] = afi[j]
            for r in range(6):
                s = 0.0
                for j in range(m):
                    s += Q[r * m + j] * afi[j]
                ar[i, r] += s
    return status, Dfinv, g, PR, DRinv, GR, PRp


def _crba(ic, fc, sz, Y, HF, M):
    """Composite-body inertias (Eq 47) and the mass matrix (Eq 50) into ``M`` (nu × nu,
    zeroed by the caller): the diagonal blocks and the blocks ``M(i, b)``, ``b`` an ancestor
    of ``i`` — the lower triangle; blocks of bodies on different branches stay zero."""
    n = ic.shape[0]
    Rc = np.empty(sz[_S_TOTR])
    for i in range(n):
        m6 = ic[i, _M] + 6
        o0 = ic[i, _O_M0]
        wr = ic[i, _W_R]
        Rc[wr:wr + m6 * m6] = fc[o0:o0 + m6 * m6]
    mm = max(sz[_S_MMAX], 1)
    T6 = np.empty((6, 6))
    P6 = np.empty((6, 6))
    G = np.empty((6, 6))
    EG = np.empty((mm, 6))
    for i in range(n - 1, -1, -1):  # R(p) += [Ê; I] Y R_rr(i) Yᵀ [Ê; I]ᵀ
        pa = ic[i, _PARENT]
        if pa < 0:
            continue
        m = ic[i, _M]
        R = Rc[ic[i, _W_R]:ic[i, _W_R] + (m + 6) * (m + 6)]
        for r in range(6):
            for c in range(6):
                P6[r, c] = R[(m + r) * (m + 6) + m + c]
        _congruence(Y[i], P6, T6, G)
        mp = ic[i, _MP]
        Rp = Rc[ic[pa, _W_R]:ic[pa, _W_R] + (mp + 6) * (mp + 6)]
        ET = fc[ic[i, _O_ET]:ic[i, _O_ET] + 6 * mp]
        for r in range(6):
            for c in range(6):
                Rp[(mp + r) * (mp + 6) + mp + c] += G[r, c]
        for j in range(mp):
            for c in range(6):
                EG[j, c] = 0.0
        for t in range(6):
            for j in range(mp):
                e = ET[t * mp + j]
                for c in range(6):
                    EG[j, c] += e * G[t, c]
        for j in range(mp):
            for c in range(6):
                Rp[j * (mp + 6) + mp + c] += EG[j, c]
                Rp[(mp + c) * (mp + 6) + j] += EG[j, c]
            for t in range(6):
                e = EG[j, t]
                for l_ in range(mp):
                    Rp[j * (mp + 6) + l_] += e * ET[t * mp + l_]
    nchi = max(sz[_S_NCHIMAX], 1)
    XT = np.empty((nchi, mm + 6))  # Xᵀ: one row per column of X (a dof of body i)
    WT = np.empty((nchi, 6))
    for i in range(n):
        m = ic[i, _M]
        nj = ic[i, _NJ]
        nx = nj + m
        if nx == 0:
            continue
        m6 = m + 6
        R = Rc[ic[i, _W_R]:ic[i, _W_R] + m6 * m6]  # symmetric
        Q = fc[ic[i, _O_Q]:ic[i, _O_Q] + 6 * m]
        us = ic[i, _US]
        # X = R(i) ℋ*(i):  joint columns R[:, m:] H_F*,  modal columns R[:, :m] + R[:, m:] Q
        for k in range(nj):
            for r in range(m6):
                s = 0.0
                for t in range(6):
                    s += HF[i, t, k] * R[(m + t) * m6 + r]
                XT[k, r] = s
        for j in range(m):
            for r in range(m6):
                s = R[j * m6 + r]
                for t in range(6):
                    s += Q[t * m + j] * R[(m + t) * m6 + r]
                XT[nj + j, r] = s
        b = i
        mb = m
        while True:
            # M(i, b) = (ℋ(b) X)ᵀ: rows of body i's dofs, columns H_F X_r and X_f + Qᵀ X_r
            nb = ic[b, _NJ]
            ub = ic[b, _US]
            Qb = fc[ic[b, _O_Q]:ic[b, _O_Q] + 6 * mb]
            for c in range(nx):
                row = M[us + c]
                for k in range(nb):
                    s = 0.0
                    for t in range(6):
                        s += XT[c, mb + t] * HF[b, t, k]
                    row[ub + k] = s
                for j in range(mb):
                    s = XT[c, j]
                    for t in range(6):
                        s += XT[c, mb + t] * Qb[t * mb + j]
                    row[ub + nb + j] = s
            pa = ic[b, _PARENT]
            if pa < 0:
                break
            # X ← A(b) φ(b) X_r = [Ê; I] Y(b) X_r
            mp = ic[b, _MP]
            ET = fc[ic[b, _O_ET]:ic[b, _O_ET] + 6 * mp]
            for c in range(nx):
                for r in range(6):
                    s = 0.0
                    for t in range(6):
                        s += Y[b, r, t] * XT[c, mb + t]
                    WT[c, r] = s
                for j in range(mp):
                    s = 0.0
                    for t in range(6):
                        s += WT[c, t] * ET[t * mp + j]
                    XT[c, j] = s
                for r in range(6):
                    XT[c, mp + r] = WT[c, r]
            b = pa
            mb = mp


def _rnea(udot, ic, fc, sz, Y, HF, aV, bf, br, T):
    """Newton–Euler inverse dynamics (Eqs 24, 36, 41, 44) on the ruthless terms, into ``T``."""
    n = ic.shape[0]
    af = np.empty(sz[_S_TOTM])
    ar = np.empty((n, 6))
    ff = np.empty(sz[_S_TOTM])
    fr = np.empty((n, 6))
    t6 = np.empty(6)
    w = np.empty(6)
    for i in range(n):  # base-to-tip: α = Φ* α(p) + ℋ* χ̇ + a_m,  f = M_m⁰ α + b_m + K_m ϑ
        m = ic[i, _M]
        nj = ic[i, _NJ]
        us = ic[i, _US]
        wm = ic[i, _W_M]
        Q = fc[ic[i, _O_Q]:ic[i, _O_Q] + 6 * m]
        _attach_acceleration(i, ic, fc, af, ar, t6)
        afi = af[wm:wm + m]
        for j in range(m):
            afi[j] = udot[us + nj + j]
        for r in range(6):
            s = aV[i, r]
            for t in range(6):
                s += Y[i, t, r] * t6[t]
            for k in range(nj):
                s += HF[i, r, k] * udot[us + k]
            for j in range(m):
                s += Q[r * m + j] * afi[j]
            ar[i, r] = s
        M0 = fc[ic[i, _O_M0]:ic[i, _O_M0] + (m + 6) * (m + 6)]
        ffi = ff[wm:wm + m]
        bfi = bf[wm:wm + m]
        for r in range(m + 6):
            s = 0.0
            for j in range(m):
                s += M0[r * (m + 6) + j] * afi[j]
            for t in range(6):
                s += M0[r * (m + 6) + m + t] * ar[i, t]
            if r < m:
                ffi[r] = s + bfi[r]
            else:
                fr[i, r - m] = s + br[i, r - m]
    for i in range(n - 1, -1, -1):  # tip-to-base: T = ℋ f,  f(p) += [Ê; I] Y f_r
        m = ic[i, _M]
        nj = ic[i, _NJ]
        us = ic[i, _US]
        wm = ic[i, _W_M]
        Q = fc[ic[i, _O_Q]:ic[i, _O_Q] + 6 * m]
        for k in range(nj):
            s = 0.0
            for t in range(6):
                s += HF[i, t, k] * fr[i, t]
            T[us + k] = s
        ffi = ff[wm:wm + m]
        Ti = T[us + nj:us + nj + m]
        for j in range(m):
            Ti[j] = ffi[j]
        for t in range(6):
            f = fr[i, t]
            for j in range(m):
                Ti[j] += Q[t * m + j] * f
        pa = ic[i, _PARENT]
        if pa >= 0:
            for r in range(6):
                s = 0.0
                for t in range(6):
                    s += Y[i, r, t] * fr[i, t]
                w[r] = s
                fr[pa, r] += s
            mp = ic[i, _MP]
            ET = fc[ic[i, _O_ET]:ic[i, _O_ET] + 6 * mp]
            ffp = ff[ic[pa, _W_M]:ic[pa, _W_M] + mp]
            for t in range(6):
                wt = w[t]
                for j in range(mp):
                    ffp[j] += ET[t * mp + j] * wt


def _cholesky_solve(M, b):
    """Solve ``M x = b`` in place from the lower triangle of ``M`` (``M`` ← its Cholesky
    factor ``L``, ``b`` ← ``x``); False if ``M`` is not positive definite."""
    N = M.shape[0]
    for j in range(N):
        rj = M[j]
        s = rj[j]
        for k in range(j):
            s -= rj[k] * rj[k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        rj[j] = d
        inv = 1.0 / d
        for i in range(j + 1, N):
            ri = M[i]
            s = ri[j]
            for k in range(j):
                s -= ri[k] * rj[k]
            ri[j] = s * inv
    for i in range(N):  # L y = b
        ri = M[i]
        s = b[i]
        for k in range(i):
            s -= ri[k] * b[k]
        b[i] = s / ri[i]
    for i in range(N - 1, -1, -1):  # Lᵀ x = y
        ri = M[i]
        x = b[i] / ri[i]
        b[i] = x
        for k in range(i):
            b[k] -= ri[k] * x
    return True


def _ab_forward(q, u, tau, fext, imm, ic, child, fc, sz, udot):
    """Entry kernel: articulated-body ``u̇`` into ``udot``; returns the status code."""
    return _ab_core(q, u, tau, fext, imm, ic, child, fc, sz, udot)[0]


def _cb_forward(q, u, tau, fext, ic, fc, sz, udot):
    """Entry kernel: composite-body ``u̇`` (Eq 46) into ``udot``; False if ``M`` is not
    positive definite."""
    nu = sz[_S_NU]
    Y, HF, aV, bf, br = _state_terms(q, u, fext, ic, fc, sz)
    M = np.zeros((nu, nu))
    _crba(ic, fc, sz, Y, HF, M)
    C = np.empty(nu)
    _rnea(np.zeros(nu), ic, fc, sz, Y, HF, aV, bf, br, C)
    for k in range(nu):
        udot[k] = tau[k] - C[k]
    return _cholesky_solve(M, udot)


def _mass_matrix(q, ic, fc, sz):
    """Entry kernel: the mass matrix ``M(q)`` (Eq 50), both triangles."""
    n = ic.shape[0]
    nu = sz[_S_NU]
    Y = np.empty((n, 6, 6))
    HF = np.zeros((n, 6, 6))
    V = np.empty((n, 6))
    aV = np.empty((n, 6))
    z = np.zeros(nu)
    _prologue(q, z, ic, fc, Y, HF, V, aV)
    M = np.zeros((nu, nu))
    _crba(ic, fc, sz, Y, HF, M)
    for r in range(nu):
        for c in range(r):
            M[c, r] = M[r, c]
    return M


def _inverse_dynamics(q, u, udot, fext, ic, fc, sz):
    """Entry kernel: ``τ = M u̇ + C`` (Eq 44) by Newton–Euler."""
    Y, HF, aV, bf, br = _state_terms(q, u, fext, ic, fc, sz)
    T = np.empty(sz[_S_NU])
    _rnea(udot, ic, fc, sz, Y, HF, aV, bf, br, T)
    return T


_KERNEL_NAMES = (
    "_axis_angle", "_quat_rot", "_joint_transform", "_prologue", "_bias",
    "_spd_inverse", "_lu_solve", "_congruence", "_attach_acceleration", "_state_terms",
    "_ab_core", "_crba",
    "_rnea",
    "_cholesky_solve", "_ab_forward", "_cb_forward", "_mass_matrix", "_inverse_dynamics",
)
_kernels_loaded = False
_KERNELS_LOCK = threading.Lock()


def _import_numba():
    try:
        import numba
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return numba


def numba_available() -> bool:
    """Whether the compiled tier can be used (``numba`` importable)."""
    try:
        _import_numba()
    except ImportError:
        return False
    return True


def _load_kernels() -> None:
    """Replace the kernel functions of this module by their ``numba.njit(cache=True)``
    versions (once).  Compilation itself happens on first call (or :meth:`warmup`)."""
    global _kernels_loaded
    numba = _import_numba()
    with _KERNELS_LOCK:  # a second thread must not wrap an already wrapped kernel
        if _kernels_loaded:
            return
        g = globals()
        for name in _KERNEL_NAMES:
            g[name] = numba.njit(cache=True, fastmath=_FASTMATH)(g[name])
        _kernels_loaded = True


# ----------------------------------------------------------------------------------------------
# Packing and the public class
# ----------------------------------------------------------------------------------------------
def _attach_transform(rm: RuthlessModel, i: int) -> Transform:
    """Pose of the parent's (undeformed) attach node ``t_i`` in the parent frame."""
    p = int(rm.model.parent[i])
    if p < 0:
        return Transform.identity()
    return rm.consts[p].attach_node(None, rm.model.parent_node[i]).T


def _pack_centrifugal(B: np.ndarray) -> np.ndarray:
    """``B_μ`` (m, 6, 6) → (m, 21) with ``Vᵀ B_μ V = Σ_k Bp[μ, k] (V_a V_b)_k``, ``a ≤ b``."""
    m = B.shape[0]
    out = np.empty((m, 21))
    k = 0
    for a in range(6):
        for b in range(a, 6):
            out[:, k] = B[:, a, a] if a == b else 2.0 * B[:, a, b]
            k += 1
    return out


class CompiledRuthlessModel:
    """``numba``-compiled ruthless-linearization dynamics of a :class:`~flexdyn.chain.Model`.

    Same results as :class:`flexdyn.ruthless.RuthlessModel` (and as
    ``flexdyn.forward_dynamics(..., fidelity="ruthless")``) to rounding; see the module
    docstring for the data layout.

    Parameters
    ----------
    model : Model or RuthlessModel — a :class:`~flexdyn.ruthless.RuthlessModel` is used as
        is (its constants and its ``indirect_min_modes``); a :class:`Model` gets a new one.
    indirect_min_modes : int or None — bodies with children and at least this many modes
        form ``D_f⁻¹`` by the push-through form of Eq B3, others by an explicit Cholesky
        inverse; default: the ruthless model's (:data:`flexdyn.ruthless.INDIRECT_MIN_MODES`).
        May be changed on the instance at any time (no recompilation).

    Raises
    ------
    ImportError — if ``numba`` is not installed (``pip install 'flexdyn[fast]'``).

    Notes
    -----
    The first call of each method compiles its kernel (several seconds; the machine code is
    cached on disk by ``numba`` for later processes); :meth:`warmup` does it up front.
    """

    def __init__(self, model: Model | RuthlessModel, indirect_min_modes: int | None = None):
        _load_kernels()
        if isinstance(model, RuthlessModel):
            rm = model
        else:
            rm = RuthlessModel(model, INDIRECT_MIN_MODES if indirect_min_modes is None
                               else int(indirect_min_modes))
        self.ruthless = rm
        self.model = model = rm.model
        self.indirect_min_modes = int(rm.indirect_min_modes if indirect_min_modes is None
                                      else indirect_min_modes)
        self.ic, self.child, self.fc, self.sz = _pack(rm)
        self.nq, self.nu, self.n_bodies = model.nq, model.nu, model.n_bodies
        self._fext0 = np.zeros((model.n_bodies, 6))
        self._tau0 = np.zeros(model.nu)

    # -- argument handling ----------------------------------------------------------------------
    def _vec(self, x, n: int, name: str) -> np.ndarray:
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.shape != (n,):
            raise ValueError(f"{name} has shape {a.shape}, expected ({n},) for model "
                             f"{self.model.name!r}")
        return a

    def _fext(self, f_ext) -> np.ndarray:
        if f_ext is None:
            return self._fext0
        f = np.ascontiguousarray(f_ext, dtype=np.float64)
        if f.shape != (self.n_bodies, 6):
            raise ValueError(f"f_ext has shape {f.shape}, expected ({self.n_bodies}, 6)")
        return f

    def _raise_status(self, status: int) -> None:
        i, kind = divmod(int(status), 2)
        what = "D_R" if kind else "D_f"
        raise ValueError(
            f"articulated inertia {what} of body {i} {self.model.names[i]!r} is singular or "
            "not positive definite (a degree of freedom without inertia, e.g. a massless body "
            "on its joint?)"
        )

    # -- algorithms -----------------------------------------------------------------------------
    def forward_dynamics(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None,
                         f_ext: np.ndarray | None = None) -> np.ndarray:
        """``u̇`` (nu,) by the ruthless split articulated-body algorithm (Eqs 63, 64, B3).

        q (nq,), u (nu,), tau (nu,) or None (zero), f_ext (n_bodies, 6) or None."""
        q = self._vec(q, self.nq, "q")
        u = self._vec(u, self.nu, "u")
        tau = self._tau0 if tau is None else self._vec(tau, self.nu, "tau")
        udot = np.empty(self.nu)
        status = _ab_forward(q, u, tau, self._fext(f_ext), self.indirect_min_modes, self.ic,
                             self.child, self.fc, self.sz, udot)
        if status >= 0:
            self._raise_status(status)
        return udot

    def composite_forward_dynamics(self, q: np.ndarray, u: np.ndarray,
                                   tau: np.ndarray | None = None,
                                   f_ext: np.ndarray | None = None) -> np.ndarray:
        """``u̇`` (nu,) by the ruthless composite-body algorithm: mass matrix (Eq 50), bias by
        Newton–Euler (Eq 45), Cholesky solve of ``M u̇ = τ − C`` (Eq 46)."""
        q = self._vec(q, self.nq, "q")
        u = self._vec(u, self.nu, "u")
        tau = self._tau0 if tau is None else self._vec(tau, self.nu, "tau")
        udot = np.empty(self.nu)
        if not _cb_forward(q, u, tau, self._fext(f_ext), self.ic, self.fc, self.sz, udot):
            raise ValueError(
                "mass matrix is not positive definite (a degree of freedom without inertia?)")
        return udot

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Mass matrix ``M(q)`` (nu × nu) by the composite-body recursion (Eqs 47–50)."""
        return _mass_matrix(self._vec(q, self.nq, "q"), self.ic, self.fc, self.sz)

    def inverse_dynamics(self, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                         f_ext: np.ndarray | None = None) -> np.ndarray:
        """``τ = M u̇ + C`` (nu,) by Newton–Euler (Eq 44)."""
        return _inverse_dynamics(self._vec(q, self.nq, "q"), self._vec(u, self.nu, "u"),
                                 self._vec(udot, self.nu, "udot"), self._fext(f_ext),
                                 self.ic, self.fc, self.sz)

    def split_factors(self, q: np.ndarray) -> SplitFactors:
        """The articulated-body quantities of Eq 63 at ``q`` (as
        :meth:`flexdyn.ruthless.RuthlessModel.split_factors`; ``P`` is None)."""
        q = self._vec(q, self.nq, "q")
        z = np.zeros(self.nu)
        status, Dfi, g, PR, DRi, GR, PRp = _ab_core(q, z, z, self._fext0,
                                                    self.indirect_min_modes, self.ic,
                                                    self.child, self.fc, self.sz,
                                                    np.empty(self.nu))
        if status >= 0:
            self._raise_status(status)
        ic = self.ic
        out: dict[str, list] = {k: [] for k in ("Df_inv", "g", "P_R", "DR_inv", "G_R",
                                                "P_R_plus")}
        for i in range(self.n_bodies):
            m, nj = int(ic[i, _M]), int(ic[i, _NJ])
            wmm, w6 = int(ic[i, _W_MM]), int(ic[i, _W_6M])
            out["Df_inv"].append(Dfi[wmm:wmm + m * m].reshape(m, m))
            out["g"].append(g[w6:w6 + 6 * m].reshape(6, m))
            out["P_R"].append(PR[i])
            out["DR_inv"].append(DRi[i, :nj, :nj])
            out["G_R"].append(GR[i, :, :nj])
            out["P_R_plus"].append(PRp[i])
        return SplitFactors(P=None, **out)

    def warmup(self) -> CompiledRuthlessModel:
        """Compile (or load from the cache) every kernel now; returns ``self``."""
        q = self.model.neutral_configuration()
        z = np.zeros(self.nu)
        self.forward_dynamics(q, z, z)
        self.composite_forward_dynamics(q, z, z)
        self.mass_matrix(q)
        self.inverse_dynamics(q, z, z)
        self.split_factors(q)
        return self

    def __repr__(self) -> str:
        return (f"CompiledRuthlessModel({self.model.name!r}, bodies={self.n_bodies}, "
                f"nu={self.nu}, indirect_min_modes={self.indirect_min_modes})")


def _pack(rm: RuthlessModel):
    """Flat arrays ``(ic, child, fc, sz)`` of a ruthless model (see the module docstring)."""
    model = rm.model
    n = model.n_bodies
    ic = np.zeros((n, _NCOL), dtype=np.int64)
    chunks: list[np.ndarray] = []
    off = 0

    def put(a) -> int:
        nonlocal off
        a = np.ascontiguousarray(a, dtype=np.float64).ravel()
        o = off
        chunks.append(a)
        off += a.size
        return o

    put(np.concatenate([np.zeros(3), -model.gravity]))  # ground acceleration, fc[0:6]
    child: list[int] = []
    wm = wmm = w6 = wr = 0
    mmax = nchimax = ncmax = 0
    for i in range(n):
        c = rm.consts[i]
        joint = model.joints[i]
        m, nj = int(model.n_modes[i]), int(joint.nu)
        p = int(model.parent[i])
        kids = model.children[i]
        ic[i, _PARENT] = p
        ic[i, _M] = m
        ic[i, _NJ] = nj
        ic[i, _NQJ] = joint.nq
        ic[i, _QS] = model.q_start[i]
        ic[i, _US] = model.u_start[i]
        ic[i, _JT] = joint.code
        ic[i, _NCH] = len(kids)
        ic[i, _CH0] = len(child)
        child.extend(kids)
        mp = int(model.n_modes[p]) if p >= 0 else 0
        ic[i, _MP] = mp
        T_pt = _attach_transform(rm, i)
        side = c.joint_side(None)
        Tpl = T_pt.compose(model.placement[i])  # F_p ← J_p
        Tc = side.T_Jc_i  # J_c ← F_i
        ic[i, _O_TPL] = put(np.concatenate([Tpl.R.ravel(), Tpl.p]))
        ic[i, _O_TC] = put(np.concatenate([Tc.R.ravel(), Tc.p]))
        jnt = np.zeros(7)
        if joint.axis is not None:
            jnt[:3] = joint.axis
        if joint.axes is not None:
            jnt[:6] = np.asarray(joint.axes, dtype=float).ravel()
        jnt[6] = joint.pitch
        ic[i, _O_JNT] = put(jnt)
        ic[i, _O_XJ] = put(side.X_i_Jc)
        HF = np.zeros((6, 6))
        if c.Hcal is not None:
            HF[:, :nj] = c.Hcal[:nj, m:].T
        ic[i, _O_HF] = put(HF)
        ic[i, _O_MRR] = put(c.M_rr)
        ic[i, _O_MRF] = put(c.M_rf_Hf)
        ic[i, _O_Q] = put(side.Q)
        ic[i, _O_LAM] = put(c.Lambda)
        ic[i, _O_DF0] = put(c.D_f0)
        ic[i, _O_K] = put(model.bodies[i].K)
        ic[i, _O_C] = put(model.bodies[i].C)
        # Eq B4 constants referred to the parent frame: ζ̂ = ζ φ(i, t_c)⁻¹ per child block
        N = 6 * len(kids)
        Ainv = np.zeros((N, N))
        for k, ch in enumerate(kids):
            T_inv = _attach_transform(rm, ch).inverse()
            Ainv[6 * k:6 * k + 6, 6 * k:6 * k + 6] = T_inv.phi()
        ic[i, _O_ZETA] = put((c.zeta @ Ainv).T)  # ζ̂ᵀ (6 n_c × m)
        ic[i, _O_UPS] = put((c.Upsilon @ Ainv).T)  # Υ̂ᵀ
        ic[i, _O_OM] = put(Ainv.T @ c.Omega @ Ainv)
        if p >= 0:  # Êᵀ (6 × m_p),  Ê = E_tᵀ φ(p, t_i)⁻¹
            A = rm.consts[p].attach_node(None, model.parent_node[i]).A
            ic[i, _O_ET] = put((A[:mp] @ T_pt.inverse().phi()).T)
        ic[i, _O_M0] = put(model.bodies[i].M_m0)
        ic[i, _O_BQ] = put(_pack_centrifugal(c.B_quad))
        ic[i, _W_M], ic[i, _W_MM], ic[i, _W_6M], ic[i, _W_R] = wm, wmm, w6, wr
        wm += m
        wmm += m * m
        w6 += 6 * m
        wr += (m + 6) ** 2
        mmax = max(mmax, m)
        nchimax = max(nchimax, nj + m)
        ncmax = max(ncmax, len(kids))
    sz = np.array([wm, wmm, w6, wr, mmax, nchimax, ncmax, model.nu], dtype=np.int64)
    fc = np.concatenate(chunks) if chunks else np.zeros(0)
    return ic, np.array(child, dtype=np.int64), fc, sz
