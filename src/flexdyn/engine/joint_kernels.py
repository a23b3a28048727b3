"""Joint kernels by code (:attr:`flexdyn.joints.Joint.code`): the transform, the motion
subspace and its rate of each joint kind, the product joints of Kwatny & Blankenship
(Props 1–3) included; :func:`joint_kernel` and :func:`joint_kernel_rate` are the one dispatch on the
code."""

from __future__ import annotations

import math

import numpy as np

from ..joints import SINGULARITY_TOL
from ..scalar_kernels import quat_rot
from .algebra import mm
from .jit import helper
from .layout import CYLINDRICAL, FREE, PRISMATIC, PRODUCT, REVOLUTE, SCREW, SPHERICAL, UNIVERSAL

__all__ = ["block_end", "joint_kernel", "joint_kernel_rate", "product_qdot", "product_rate",
           "quat_rot_kernel"]


@helper
def _axis_angle(ax, th, R):
    """``exp(th ã) = I + sin th ã + (1 − cos th) ã²`` (any axis length, as the reference)."""
    s, c1 = np.sin(th), 1.0 - np.cos(th)
    a0, a1, a2 = ax[0], ax[1], ax[2]
    aa = a0 * a0 + a1 * a1 + a2 * a2
    R[0, 0] = 1.0 + c1 * (a0 * a0 - aa)
    R[1, 1] = 1.0 + c1 * (a1 * a1 - aa)
    R[2, 2] = 1.0 + c1 * (a2 * a2 - aa)
    R[0, 1] = -s * a2 + c1 * a0 * a1
    R[1, 0] = s * a2 + c1 * a0 * a1
    R[0, 2] = s * a1 + c1 * a0 * a2
    R[2, 0] = -s * a1 + c1 * a0 * a2
    R[1, 2] = -s * a0 + c1 * a1 * a2
    R[2, 1] = s * a0 + c1 * a1 * a2


quat_rot_kernel = helper(quat_rot)


@helper
def joint_kernel(code, jp, qj, R, p, S, R1, R2):
    """Transform ``(R, p)`` of ``J_c`` in ``J_p`` and motion subspace ``S`` (6 × nu_j);
    ``R1``, ``R2`` (3 × 3) scratch."""
    for r in range(3):
        p[r] = 0.0
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0
    S[:, :] = 0.0
    if code == REVOLUTE or code == SCREW or code == CYLINDRICAL:
        _axis_angle(jp, qj[0], R)
        for r in range(3):
            S[r, 0] = jp[r]
        if code == SCREW:
            for r in range(3):
                p[r] = jp[6] * qj[0] * jp[r]
                S[3 + r, 0] = jp[6] * jp[r]
        elif code == CYLINDRICAL:
            for r in range(3):
                p[r] = qj[1] * jp[r]
                S[3 + r, 1] = jp[r]
    elif code == PRISMATIC:
        for r in range(3):
            p[r] = qj[0] * jp[r]
            S[3 + r, 0] = jp[r]
    elif code == UNIVERSAL:
        _axis_angle(jp[:3], qj[0], R1)
        _axis_angle(jp[3:6], qj[1], R2)
        mm(R1, R2, R)
        for r in range(3):
            S[r, 0] = R2[0, r] * jp[0] + R2[1, r] * jp[1] + R2[2, r] * jp[2]
            S[r, 1] = jp[3 + r]
    elif code == SPHERICAL or code == FREE:
        quat_rot_kernel(qj[0], qj[1], qj[2], qj[3], R)
        for r in range(3):
            S[r, r] = 1.0
        if code == FREE:
            for r in range(3):
                p[r] = qj[4 + r]
                S[3 + r, 3 + r] = 1.0
    elif code == PRODUCT:
        _product_joint(jp, qj, R, p, S)


# A product joint (flexdyn.joints.ProductJoint, Kwatny & Blankenship Props 1-3): jp holds its
# n columns h_c (jp[6c:6c+6], the product order of Eq 15, column 0 innermost), the speed basis
# s_c (jp[36+6c:42+6c]), the index in q of each ε_c (jp[72+c]) and, where a factor starts,
# det(H_iᵀ H_i) > 0 of its columns (jp[78+c]; 0 elsewhere).
@helper
def _rot_vec(w0, w1, w2, s, c1, x0, x1, x2):
    """``exp(e ω̃) x = x + sin e ω × x + (1 − cos e) ω × (ω × x)`` (``s = sin e``,
    ``c1 = 1 − cos e``)."""
    a0, a1, a2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
    b0, b1, b2 = w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0
    return x0 + s * a0 + c1 * b0, x1 + s * a1 + c1 * b1, x2 + s * a2 + c1 * b2


@helper
def _screw_apply(h, e, R, p):
    """``U ← exp(ĥ e) U`` for the pose ``(R, p)`` of ``U`` (Prop 1, Eq 12): rotation
    ``exp(e ω̃)``, translation ``(e I + (1 − cos e) ω̃ + (e − sin e) ω̃²) v``."""
    w0, w1, w2, v0, v1, v2 = h[0], h[1], h[2], h[3], h[4], h[5]
    s, c1 = np.sin(e), 1.0 - np.cos(e)
    for c in range(3):
        R[0, c], R[1, c], R[2, c] = _rot_vec(w0, w1, w2, s, c1, R[0, c], R[1, c], R[2, c])
    y0, y1, y2 = _rot_vec(w0, w1, w2, s, c1, p[0], p[1], p[2])
    a0, a1, a2 = w1 * v2 - w2 * v1, w2 * v0 - w0 * v2, w0 * v1 - w1 * v0
    b0, b1, b2 = w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0
    d = e - s
    p[0] = y0 + e * v0 + c1 * a0 + d * b0
    p[1] = y1 + e * v1 + c1 * a1 + d * b1
    p[2] = y2 + e * v2 + c1 * a2 + d * b2


@helper
def _ad_inverse_col(R, p, h, S, col):
    """``S[:, col] = Ad_{U⁻¹} h = [Rᵀ ω; Rᵀ (v + ω × p)]`` for the pose ``(R, p)`` of U."""
    w0, w1, w2 = h[0], h[1], h[2]
    v0 = h[3] + w1 * p[2] - w2 * p[1]
    v1 = h[4] + w2 * p[0] - w0 * p[2]
    v2 = h[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        S[r, col] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        S[3 + r, col] = R[0, r] * v0 + R[1, r] * v1 + R[2, r] * v2


@helper
def block_end(jp, c, n):
    """The end of the factor that starts at column ``c``."""
    e = c + 1
    while e < n and jp[78 + e] == 0.0:
        e += 1
    return e


@helper
def _product_joint(jp, qj, R, p, S):
    """``λ(ε)`` (Eq 15) into ``(R, p)`` (the identity on entry) and ``H*`` (Eq 28) into
    ``S``: block ``i`` is ``Ad_{U⁻¹}`` of the speed basis, ``U`` the factors inside."""
    n = qj.shape[0]
    for c in range(n):
        if jp[78 + c] != 0.0:
            for k in range(c, block_end(jp, c, n)):
                _ad_inverse_col(R, p, jp[36 + 6 * k:42 + 6 * k], S, k)
        _screw_apply(jp[6 * c:6 * c + 6], qj[int(jp[72 + c])], R, p)


@helper
def product_rate(jp, S, beta, n, out, W):
    """``out += Ḣ* β = Σ_i (S'_i β_i) × W_i``, ``W_i`` the twist of the factors inside factor
    ``i`` (:class:`flexdyn.joints.ProductJoint`); ``W`` (3 × 3) scratch, rows 0–1."""
    W[0, :] = 0.0
    W[1, :] = 0.0
    c = 0
    while c < n:
        e = block_end(jp, c, n)
        t0 = t1 = t2 = t3 = t4 = t5 = 0.0
        for k in range(c, e):
            b = beta[k]
            t0 += S[0, k] * b
            t1 += S[1, k] * b
            t2 += S[2, k] * b
            t3 += S[3, k] * b
            t4 += S[4, k] * b
            t5 += S[5, k] * b
        a0, a1, a2, l0, l1, l2 = W[0, 0], W[0, 1], W[0, 2], W[1, 0], W[1, 1], W[1, 2]
        out[0] += t1 * a2 - t2 * a1
        out[1] += t2 * a0 - t0 * a2
        out[2] += t0 * a1 - t1 * a0
        out[3] += t1 * l2 - t2 * l1 + t4 * a2 - t5 * a1
        out[4] += t2 * l0 - t0 * l2 + t5 * a0 - t3 * a2
        out[5] += t0 * l1 - t1 * l0 + t3 * a1 - t4 * a0
        W[0, 0], W[0, 1], W[0, 2] = a0 + t0, a1 + t1, a2 + t2
        W[1, 0], W[1, 1], W[1, 2] = l0 + t3, l1 + t4, l2 + t5
        c = e


@helper
def product_qdot(jp, qj, uj, out, B, N, R, t, y):
    """``q̇ = Γ(q) β`` of a product joint: per factor ``ε̇_i = (B_iᵀ B_i)⁻¹ B_iᵀ S_i β_i``
    (Prop 2, Eqs 19 and 25), by Gaussian elimination with partial pivoting; NaN for a factor
    whose singularity measure ``μ`` is below :data:`~flexdyn.joints.SINGULARITY_TOL` (where
    the reference raises :class:`flexdyn.joints.JointSingularityError`).  Scratch: ``B``,
    ``N`` (6 × 6), ``R`` (3 × 3, with ``p`` in ``y[3:6]`` while ``B`` is formed), ``t``,
    ``y`` (6,)."""
    n = qj.shape[0]
    c = 0
    while c < n:
        e = block_end(jp, c, n)
        r = e - c
        p = y[3:6]
        for a in range(3):
            p[a] = 0.0
            for b in range(3):
                R[a, b] = 1.0 if a == b else 0.0
        for k in range(c, e):
            _ad_inverse_col(R, p, jp[6 * k:6 * k + 6], B, k - c)
            _screw_apply(jp[6 * k:6 * k + 6], qj[int(jp[72 + k])], R, p)
        for a in range(6):
            s = 0.0
            for k in range(c, e):
                s += jp[36 + 6 * k + a] * uj[k]
            t[a] = s
        for a in range(r):  # the normal equations N ε̇ = y
            for b in range(r):
                s = 0.0
                for k in range(6):
                    s += B[k, a] * B[k, b]
                N[a, b] = s
            s = 0.0
            for k in range(6):
                s += B[k, a] * t[k]
            y[a] = s
        det = 1.0
        for a in range(r):  # elimination; det(BᵀB) from the pivots
            piv = a
            for b in range(a + 1, r):
                if abs(N[b, a]) > abs(N[piv, a]):
                    piv = b
            if piv != a:
                for k in range(r):
                    N[a, k], N[piv, k] = N[piv, k], N[a, k]
                y[a], y[piv] = y[piv], y[a]
            det *= N[a, a]
            if det == 0.0:
                break
            for b in range(a + 1, r):
                f = N[b, a] / N[a, a]
                for k in range(a, r):
                    N[b, k] -= f * N[a, k]
                y[b] -= f * y[a]
        if math.sqrt(abs(det) / jp[78 + c]) < SINGULARITY_TOL:  # μ of the factor
            for a in range(r):
                out[int(jp[72 + c + a])] = math.nan
        else:
            for a in range(r - 1, -1, -1):  # back substitution: ε̇_{c+a}
                s = y[a]
                for k in range(a + 1, r):
                    s -= N[a, k] * y[k]
                y[a] = s / N[a, a]
                out[int(jp[72 + c + a])] = y[a]
        c = e


@helper
def joint_kernel_rate(code, jp, qj, beta, out, R2):
    """``out += Ḣ* β`` (6,) of the universal joint; ``R2`` scratch (product joints:
    ``product_rate``)."""
    if code == UNIVERSAL:
        _axis_angle(jp[3:6], qj[1], R2)
        a0 = R2[0, 0] * jp[0] + R2[1, 0] * jp[1] + R2[2, 0] * jp[2]
        a1 = R2[0, 1] * jp[0] + R2[1, 1] * jp[1] + R2[2, 1] * jp[2]
        a2 = R2[0, 2] * jp[0] + R2[1, 2] * jp[1] + R2[2, 2] * jp[2]
        b = beta[0] * beta[1]
        out[0] += b * (a1 * jp[5] - a2 * jp[4])
        out[1] += b * (a2 * jp[3] - a0 * jp[5])
        out[2] += b * (a0 * jp[4] - a1 * jp[3])
