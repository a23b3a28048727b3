"""Small algebra in plain loops into given outputs (no allocation, no BLAS call per block):
products, spatial cross products and congruences, the SO(3) maps (:func:`flexdyn.spatial.so3_maps`,
power series for ``|θ|² < 1``, closed forms beyond), and the dense Cholesky and LU solves of
the composite-body method and the split."""

from __future__ import annotations

import math

import numpy as np

from ..linalg import MASS_MATRIX_RTOL
from .jit import helper

__all__ = ["cholesky_factor", "cholesky_solve", "cholesky_substitute", "compose3", "copy",
           "cross_force", "cross_motion", "lu_factor", "lu_substitute", "mm", "mmt",
           "motion_to_parent", "mtv", "mv", "mv6", "phi_congruence", "phi_matrix",
           "pose_congruence", "so3_coefficients", "so3_second_derivatives"]


@helper
def copy(src, dst):
    """``dst[...] = src`` for arrays of one shape and 1 to 3 dimensions, entry by entry.
    numba's assignment of an array to a slice checks the shapes with an error message
    formatted in compiled code, whose compile (string formatting for each number of
    dimensions) is slow.  numba replaces ``dst.ndim`` by its value and prunes the other
    branches; plain loops, because ``np.ndindex`` is slower on small blocks."""
    if dst.ndim == 1:
        for r in range(dst.shape[0]):
            dst[r] = src[r]
    elif dst.ndim == 2:
        for r in range(dst.shape[0]):
            for c in range(dst.shape[1]):
                dst[r, c] = src[r, c]
    else:
        for i in range(dst.shape[0]):
            for r in range(dst.shape[1]):
                for c in range(dst.shape[2]):
                    dst[i, r, c] = src[i, r, c]


@helper
def mv(a, x, out, acc):
    """``out (+)= a x``."""
    for i in range(a.shape[0]):
        s = out[i] if acc else 0.0
        for t in range(a.shape[1]):
            s += a[i, t] * x[t]
        out[i] = s


@helper
def mtv(a, x, out, acc):
    """``out (+)= aᵀ x``."""
    if not acc:
        out[:] = 0.0
    for t in range(a.shape[0]):
        xt = x[t]
        for j in range(a.shape[1]):
            out[j] += a[t, j] * xt


@helper
def mv6(a, x, out, acc):
    """``out (+)= a x`` for ``a`` (6 × 6) (fixed bounds, so the loops unroll)."""
    for i in range(6):
        s = out[i] if acc else 0.0
        for t in range(6):
            s += a[i, t] * x[t]
        out[i] = s


@helper
def compose3(R1, p1, R2, p2, R, p):
    """``(R, p) = (R1, p1) ∘ (R2, p2)``: ``R = R1 R2``, ``p = R1 p2 + p1`` (3 × 3 loops of
    fixed size)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = R1[r, 0] * R2[0, c] + R1[r, 1] * R2[1, c] + R1[r, 2] * R2[2, c]
        p[r] = R1[r, 0] * p2[0] + R1[r, 1] * p2[1] + R1[r, 2] * p2[2] + p1[r]


@helper
def mm(a, b, out):
    """``out = a b``."""
    out[:, :] = 0.0
    for i in range(a.shape[0]):
        for t in range(a.shape[1]):
            x = a[i, t]
            for j in range(b.shape[1]):
                out[i, j] += x * b[t, j]


@helper
def mmt(a, b, out, acc):
    """``out (+)= a bᵀ``."""
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            s = out[i, j] if acc else 0.0
            for t in range(a.shape[1]):
                s += a[i, t] * b[j, t]
            out[i, j] = s


@helper
def phi_congruence(phi, X, out, T):
    """``out += φ X φᵀ`` for 6 × 6 blocks (fixed bounds, so the loops unroll); ``T`` scratch."""
    for r in range(6):
        for c in range(6):
            t = 0.0
            for k in range(6):
                t += phi[r, k] * X[k, c]
            T[r, c] = t
    for r in range(6):
        for c in range(6):
            t = 0.0
            for k in range(6):
                t += T[r, k] * phi[c, k]
            out[r, c] += t


@helper
def pose_congruence(R, p, X, out, T):
    """``out += φ X φᵀ`` for ``φ = [[R, p̃ R], [0, R]]`` from its pose ``(R, p)`` and a
    symmetric ``X = [[A, B], [Bᵀ, C]]`` (6 × 6; its lower left block is not read): with
    ``A' = R A Rᵀ``, ``B' = R B Rᵀ``, ``C' = R C Rᵀ`` and ``E = B' + p̃ C'``, the blocks
    ``[[A' + p̃ B'ᵀ − E p̃, E], [Eᵀ, C']]``, about 200 flops against the 432 of
    ``phi_congruence``; ``T`` (3, 3, 3) scratch."""
    A, B, E = T[0], T[1], T[2]
    for r in range(3):  # A Rᵀ, B Rᵀ, C Rᵀ
        for c in range(3):
            A[r, c] = X[r, 0] * R[c, 0] + X[r, 1] * R[c, 1] + X[r, 2] * R[c, 2]
            B[r, c] = X[r, 3] * R[c, 0] + X[r, 4] * R[c, 1] + X[r, 5] * R[c, 2]
            E[r, c] = X[3 + r, 3] * R[c, 0] + X[3 + r, 4] * R[c, 1] + X[3 + r, 5] * R[c, 2]
    p0, p1, p2 = p[0], p[1], p[2]
    for c in range(3):  # column c of A', B', C' (R times column c), then of E
        a0 = R[0, 0] * A[0, c] + R[0, 1] * A[1, c] + R[0, 2] * A[2, c]
        a1 = R[1, 0] * A[0, c] + R[1, 1] * A[1, c] + R[1, 2] * A[2, c]
        a2 = R[2, 0] * A[0, c] + R[2, 1] * A[1, c] + R[2, 2] * A[2, c]
        b0 = R[0, 0] * B[0, c] + R[0, 1] * B[1, c] + R[0, 2] * B[2, c]
        b1 = R[1, 0] * B[0, c] + R[1, 1] * B[1, c] + R[1, 2] * B[2, c]
        b2 = R[2, 0] * B[0, c] + R[2, 1] * B[1, c] + R[2, 2] * B[2, c]
        c0 = R[0, 0] * E[0, c] + R[0, 1] * E[1, c] + R[0, 2] * E[2, c]
        c1 = R[1, 0] * E[0, c] + R[1, 1] * E[1, c] + R[1, 2] * E[2, c]
        c2 = R[2, 0] * E[0, c] + R[2, 1] * E[1, c] + R[2, 2] * E[2, c]
        e0 = b0 + p1 * c2 - p2 * c1
        e1 = b1 + p2 * c0 - p0 * c2
        e2 = b2 + p0 * c1 - p1 * c0
        A[0, c], A[1, c], A[2, c] = a0, a1, a2
        B[0, c], B[1, c], B[2, c] = b0, b1, b2
        E[0, c], E[1, c], E[2, c] = e0, e1, e2
        out[3, 3 + c] += c0
        out[4, 3 + c] += c1
        out[5, 3 + c] += c2
        for r in range(3):
            out[r, 3 + c] += E[r, c]
            out[3 + c, r] += E[r, c]
    for c in range(3):  # A' + p̃ B'ᵀ: column c of p̃ B'ᵀ is p × B'[c, :]
        b0, b1, b2 = B[c, 0], B[c, 1], B[c, 2]
        out[0, c] += A[0, c] + p1 * b2 - p2 * b1
        out[1, c] += A[1, c] + p2 * b0 - p0 * b2
        out[2, c] += A[2, c] + p0 * b1 - p1 * b0
    for r in range(3):  # − E p̃: row r of E p̃ is E[r, :] × p
        e0, e1, e2 = E[r, 0], E[r, 1], E[r, 2]
        out[r, 0] -= e1 * p2 - e2 * p1
        out[r, 1] -= e2 * p0 - e0 * p2
        out[r, 2] -= e0 * p1 - e1 * p0


@helper
def cross_motion(V, W, out, acc):
    """``out (+)= V × W`` (twists)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = W[0], W[1], W[2], W[3], W[4], W[5]
    if not acc:
        out[:] = 0.0
    out[0] += w1 * a2 - w2 * a1
    out[1] += w2 * a0 - w0 * a2
    out[2] += w0 * a1 - w1 * a0
    out[3] += w1 * b2 - w2 * b1 + v1 * a2 - v2 * a1
    out[4] += w2 * b0 - w0 * b2 + v2 * a0 - v0 * a2
    out[5] += w0 * b1 - w1 * b0 + v0 * a1 - v1 * a0


@helper
def cross_force(V, f, out, acc):
    """``out (+)= V ×* f`` (twist, wrench)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    if not acc:
        out[:] = 0.0
    out[0] += w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] += w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] += w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] += w1 * f2 - w2 * f1
    out[4] += w2 * f0 - w0 * f2
    out[5] += w0 * f1 - w1 * f0


@helper
def phi_matrix(R, p, out):
    """``φ = [[R, p̃ R], [0, R]]`` (moves forces from the frame to its parent)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[3 + r, 3 + c] = R[r, c]
            out[3 + r, c] = 0.0
    for c in range(3):
        out[0, 3 + c] = p[1] * R[2, c] - p[2] * R[1, c]
        out[1, 3 + c] = p[2] * R[0, c] - p[0] * R[2, c]
        out[2, 3 + c] = p[0] * R[1, c] - p[1] * R[0, c]


@helper
def motion_to_parent(R, p, out):
    """``[[R, 0], [p̃ R, R]]`` (moves twists from the frame to its parent)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[3 + r, 3 + c] = R[r, c]
            out[r, 3 + c] = 0.0
    for c in range(3):
        out[3, c] = p[1] * R[2, c] - p[2] * R[1, c]
        out[4, c] = p[2] * R[0, c] - p[0] * R[2, c]
        out[5, c] = p[0] * R[1, c] - p[1] * R[0, c]


def _series_coefficients(off: int, n: int = 12) -> np.ndarray:
    """``(−1)^k / (2k + off + 1)!`` for ``k < n``: the power series of ``a, b, c``."""
    return np.array([(-1.0) ** k / math.factorial(2 * k + off + 1) for k in range(n)])


_A_SERIES, _B_SERIES, _C_SERIES = (_series_coefficients(off) for off in range(3))
#: the power series of ``b''`` and ``c''`` in ``s``: ``(k + 2)(k + 1)`` times the ``k + 2``-th term
_B2_SERIES, _C2_SERIES = (np.array([(k + 2) * (k + 1) * x[k + 2] for k in range(len(x) - 2)])
                          for x in (_B_SERIES, _C_SERIES))


@helper
def _horner(coef, s):
    """``Σ_k coef[k] s^k`` and its derivative in ``s``."""
    n = coef.shape[0]
    v, dv = coef[n - 1], 0.0
    for k in range(n - 2, -1, -1):
        dv = dv * s + v
        v = v * s + coef[k]
    return v, dv


@helper
def so3_coefficients(s):
    """``a, b, c`` and their derivatives in ``s = |θ|²`` (see spatial._exp_coefficients):
    12 terms of the power series for ``s < 1``, the closed forms beyond."""
    if s.real < 1.0:
        a, da = _horner(_A_SERIES, s)
        b, db = _horner(_B_SERIES, s)
        c, dc = _horner(_C_SERIES, s)
        return a, b, c, da, db, dc
    t = np.sqrt(s)
    sn, co = np.sin(t), np.cos(t)
    a = sn / t
    b = (1.0 - co) / s
    c = (t - sn) / (s * t)
    return a, b, c, (co - a) / (2.0 * s), (a - 2.0 * b) / (2.0 * s), (b - 3.0 * c) / (2.0 * s)


@helper
def so3_second_derivatives(s):
    """``b''`` and ``c''``, the second derivatives in ``s = |θ|²`` of :func:`so3_coefficients`'
    ``b`` and ``c``: the power series for ``s < 1``, beyond from the first derivatives
    (``2 s b' = a − 2 b`` and ``2 s c' = b − 3 c`` differentiated):
    ``b'' = (a' − 4 b') / (2 s)``, ``c'' = (b' − 5 c') / (2 s)``."""
    if s < 1.0:
        return _horner(_B2_SERIES, s)[0], _horner(_C2_SERIES, s)[0]
    _, _, _, da, db, dc = so3_coefficients(s)
    return (da - 4.0 * db) / (2.0 * s), (db - 5.0 * dc) / (2.0 * s)


@helper
def cholesky_solve(Mass, b, x):
    """``M x = b`` by Cholesky into ``x``; False when a squared pivot is at most
    ``MASS_MATRIX_RTOL · M_kk`` (:func:`flexdyn.linalg.cholesky_solve`); ``Mass`` is
    overwritten by its factor."""
    if not cholesky_factor(Mass, MASS_MATRIX_RTOL):
        return False
    cholesky_substitute(Mass, b, x)
    return True


@helper
def cholesky_factor(A, rtol):
    """``A = L Lᵀ`` in place (``L`` in the lower triangle; the upper one is left as it
    was); False when a squared pivot is at most ``rtol · A_kk`` (``MASS_MATRIX_RTOL`` for a
    mass matrix)."""
    n = A.shape[0]
    L = A
    for j in range(n):
        s = L[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > rtol * abs(L[j, j]):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@helper
def cholesky_substitute(L, b, x):
    """``x = (L Lᵀ)⁻¹ b`` with the factor of :func:`cholesky_factor` (``x`` may be ``b``)."""
    n = L.shape[0]
    copy(b, x)
    for i in range(n):
        for k in range(i):
            x[i] -= L[i, k] * x[k]
        x[i] /= L[i, i]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            x[i] -= L[k, i] * x[k]
        x[i] /= L[i, i]


@helper
def lu_factor(A, piv):
    """``P A = L U`` in place by Gaussian elimination with partial pivoting (LAPACK
    ``getrf``): ``L`` (unit diagonal) below and ``U`` on and above the diagonal of ``A``,
    the row swaps in ``piv`` (int, k); False when a pivot is zero."""
    k = A.shape[0]
    for j in range(k):
        p = j
        for r in range(j + 1, k):
            if abs(A[r, j]) > abs(A[p, j]):
                p = r
        piv[j] = p
        if A[p, j] == 0.0:
            return False
        if p != j:
            for c in range(k):
                A[j, c], A[p, c] = A[p, c], A[j, c]
        for r in range(j + 1, k):
            f = A[r, j] / A[j, j]
            A[r, j] = f
            for c in range(j + 1, k):
                A[r, c] -= f * A[j, c]
    return True


@helper
def lu_substitute(A, piv, B):
    """``B = A⁻¹ B`` (k × r right-hand sides) in place with the factors of
    :func:`lu_factor`: the row swaps, then ``L`` forward and ``U`` backward (LAPACK
    ``getrs``), row by row."""
    k, n = A.shape[0], B.shape[1]
    for j in range(k):
        p = piv[j]
        if p != j:
            for c in range(n):
                B[j, c], B[p, c] = B[p, c], B[j, c]
    for j in range(k):
        for r in range(j + 1, k):
            f = A[r, j]
            for c in range(n):
                B[r, c] -= f * B[j, c]
    for j in range(k - 1, -1, -1):
        for t in range(j + 1, k):
            f = A[j, t]
            for c in range(n):
                B[j, c] -= f * B[t, c]
        d = A[j, j]
        for c in range(n):
            B[j, c] /= d
