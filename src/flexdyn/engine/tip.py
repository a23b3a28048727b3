"""Tip kinematics (:mod:`flexdyn.tip_kinematics`): ``R(θ)``, the rotation rows of
``E = J(θ) Π_r`` and ``J̇(θ) θ̇`` of a node, by the model's parametrisation."""

from __future__ import annotations

import numpy as np

from ..linalg import COMPLEX_STEP
from .algebra import so3_coefficients, so3_second_derivatives
from .jit import helper, inlined

__all__ = ["node_frame", "node_frame_step", "node_twist", "node_twist_rate", "node_wrench",
           "rotation_map_slope", "tip_frame", "tip_rate", "tip_rate_slopes"]


_EXPONENTIAL, _NEGLECT, _EULER_123, _EULER_321 = range(4)


@helper
def _exp_frame(theta, Pi_r, m, R, E):
    """``R = exp(θ̃) = I + a θ̃ + b θ̃²`` and ``E[:3] = J_r(θ) Π_r`` with
    ``J_r = I − b θ̃ + c θ̃²`` and ``θ̃² = θθᵀ − |θ|² I``."""
    t0, t1, t2 = theta[0], theta[1], theta[2]
    s = t0 * t0 + t1 * t1 + t2 * t2
    a, b, c, _, _, _ = so3_coefficients(s)
    for r in range(3):
        for q in range(3):
            R[r, q] = theta[r] * theta[q] * b
        R[r, r] += 1.0 - b * s
    R[0, 1] -= a * t2
    R[1, 0] += a * t2
    R[0, 2] += a * t1
    R[2, 0] -= a * t1
    R[1, 2] -= a * t0
    R[2, 1] += a * t0
    for k in range(m):
        x0, x1, x2 = Pi_r[0, k], Pi_r[1, k], Pi_r[2, k]
        d = t0 * x0 + t1 * x1 + t2 * x2
        E[0, k] = x0 - b * (t1 * x2 - t2 * x1) + c * (t0 * d - s * x0)
        E[1, k] = x1 - b * (t2 * x0 - t0 * x2) + c * (t1 * d - s * x1)
        E[2, k] = x2 - b * (t0 * x1 - t1 * x0) + c * (t2 * d - s * x2)


@helper
def _exp_rate(theta, d0, d1, d2, out):
    """``out[:3] = J̇_r(θ) θ̇`` for ``θ̇ = (d0, d1, d2)``.  With ``θ̃θ̇ = θ × θ̇``,
    ``θ̃̇θ̇ = 0``: ``J̇_r θ̇ = −ḃ θ × θ̇ + ċ θ × (θ × θ̇) + c θ̇ × (θ × θ̇)``,
    ``ḃ = b' 2θ·θ̇``."""
    t0, t1, t2 = theta[0], theta[1], theta[2]
    s = t0 * t0 + t1 * t1 + t2 * t2
    _, b, c, _, db, dc = so3_coefficients(s)
    dt2 = 2.0 * (t0 * d0 + t1 * d1 + t2 * d2)
    cb, cc = db * dt2, dc * dt2
    x0, x1, x2 = t1 * d2 - t2 * d1, t2 * d0 - t0 * d2, t0 * d1 - t1 * d0  # θ × θ̇
    out[0] = -cb * x0 + cc * (t1 * x2 - t2 * x1) + c * (d1 * x2 - d2 * x1)
    out[1] = -cb * x1 + cc * (t2 * x0 - t0 * x2) + c * (d2 * x0 - d0 * x2)
    out[2] = -cb * x2 + cc * (t0 * x1 - t1 * x0) + c * (d0 * x1 - d1 * x0)


@helper
def _elementary(k, co, si, r, q):
    """Entry ``(r, q)`` of the rotation about coordinate axis ``k`` by the angle of cosine
    ``co`` and sine ``si``."""
    if r == q:
        return 1.0 if r == k else co
    if r == (k + 1) % 3 and q == (k + 2) % 3:
        return -si
    if r == (k + 2) % 3 and q == (k + 1) % 3:
        return si
    return 0.0


@helper
def _euler_columns(a, b, c, theta, R):
    """``R = R_b(θ_b) R_c(θ_c)`` (3 × 3, overwritten) and the columns of ``J``
    (tip_kinematics.euler_maps): returns ``u_a = (R_b R_c)ᵀ e_a`` and ``u_b = R_cᵀ e_b``
    (6 scalars), with the cosine and sine of ``θ_a``."""
    cb, sb = np.cos(theta[b]), np.sin(theta[b])
    cc, sc = np.cos(theta[c]), np.sin(theta[c])
    for r in range(3):
        for q in range(3):
            x = 0.0
            for t in range(3):
                x += _elementary(b, cb, sb, r, t) * _elementary(c, cc, sc, t, q)
            R[r, q] = x
    return (R[a, 0], R[a, 1], R[a, 2], _elementary(c, cc, sc, b, 0),
            _elementary(c, cc, sc, b, 1), _elementary(c, cc, sc, b, 2),
            np.cos(theta[a]), np.sin(theta[a]))


@helper
def _euler_frame(a, b, c, theta, Pi_r, m, R, E):
    """``R = R_a R_b R_c`` and ``E[:3] = J Π_r`` with ``J = [u_a, u_b, e_c]`` in the columns
    ``a, b, c`` (tip_kinematics.euler_maps)."""
    ua0, ua1, ua2, ub0, ub1, ub2, ca, sa = _euler_columns(a, b, c, theta, R)
    i1, i2 = (a + 1) % 3, (a + 2) % 3  # R ← R_a R: rows i1, i2 turn
    for q in range(3):
        r1, r2 = R[i1, q], R[i2, q]
        R[i1, q] = ca * r1 - sa * r2
        R[i2, q] = sa * r1 + ca * r2
    for k in range(m):
        xa, xb = Pi_r[a, k], Pi_r[b, k]
        E[0, k] = ua0 * xa + ub0 * xb
        E[1, k] = ua1 * xa + ub1 * xb
        E[2, k] = ua2 * xa + ub2 * xb
        E[c, k] += Pi_r[c, k]


@helper
def _euler_rate(a, b, c, theta, d, out, R):
    """``out[:3] = J̇ θ̇ = θ̇_c (θ̇_a u_a + θ̇_b u_b) × e_c + θ̇_a θ̇_b u_a × u_b``
    (tip_kinematics.euler_rate) for ``θ̇ = d`` (3,); ``R`` (3 × 3) scratch."""
    ua0, ua1, ua2, ub0, ub1, ub2, _, _ = _euler_columns(a, b, c, theta, R)
    da, db, dc = d[a], d[b], d[c]
    v0, v1, v2 = da * ua0 + db * ub0, da * ua1 + db * ub1, da * ua2 + db * ub2
    ab = da * db
    out[0] = ab * (ua1 * ub2 - ua2 * ub1)
    out[1] = ab * (ua2 * ub0 - ua0 * ub2)
    out[2] = ab * (ua0 * ub1 - ua1 * ub0)
    c1, c2 = (c + 1) % 3, (c + 2) % 3  # v × e_c = v_c2 e_c1 − v_c1 e_c2
    v = (v0, v1, v2)
    out[c1] += dc * v[c2]
    out[c2] -= dc * v[c1]


@helper
def tip_frame(code, theta, Pi_r, m, R, E):
    """The node rotation ``R(θ)`` and the rotation rows ``E[:3] = J(θ) Π_r`` of the tip
    kinematics ``code``."""
    if code == _EXPONENTIAL:
        _exp_frame(theta, Pi_r, m, R, E)
    elif code == _NEGLECT:
        for r in range(3):
            for q in range(3):
                R[r, q] = 1.0 if r == q else 0.0
            for k in range(m):
                E[r, k] = 0.0
    elif code == _EULER_123:
        _euler_frame(0, 1, 2, theta, Pi_r, m, R, E)
    else:
        _euler_frame(2, 1, 0, theta, Pi_r, m, R, E)


@helper
def tip_rate(code, theta, d, out, R):
    """``out[:3] = J̇(θ) θ̇`` (``θ̇ = d`` (3,)) of the tip kinematics ``code``; ``R`` (3 × 3)
    scratch."""
    if code == _EXPONENTIAL:
        _exp_rate(theta, d[0], d[1], d[2], out)
    elif code == _NEGLECT:
        out[0] = out[1] = out[2] = 0.0
    elif code == _EULER_123:
        _euler_rate(0, 1, 2, theta, d, out, R)
    else:
        _euler_rate(2, 1, 0, theta, d, out, R)


@helper
def tip_rate_slopes(code, theta, d, angles, G, tc):
    """``G = ∂(J̇(θ) θ̇)/∂θ`` (``angles``) or ``∂/∂θ̇`` (3 × 3) at ``θ̇ = d`` (3,) of the tip
    kinematics ``code``: the exponential map's in closed form (``_exp_rate`` with
    ``x = θ × θ̇``, ``σ = 2 θ·θ̇`` differentiated along ``δ``: ``δs = 2 θ·δ``,
    ``δσ = 2 δ·θ̇``, ``δx = δ × θ̇`` and the coefficients' slopes,
    :func:`~flexdyn.engine.algebra.so3_second_derivatives`, in the angles; ``δσ = 2 θ·δ``,
    ``δx = θ × δ`` in the rates), zero for ``neglect``, complex steps of :func:`tip_rate`
    for the Euler angles; ``tc`` (≥ 6 × ≥ 3) complex scratch."""
    if code == _EULER_123 or code == _EULER_321:
        h = COMPLEX_STEP
        th, dc_, out, R = tc[0, :3], tc[1, :3], tc[2, :3], tc[3:6, :3]
        for a in range(3):
            for r in range(3):
                th[r] = complex(theta[r], h if angles and r == a else 0.0)
                dc_[r] = complex(d[r], h if r == a and not angles else 0.0)
            tip_rate(code, th, dc_, out, R)
            for r in range(3):
                G[r, a] = out[r].imag / h
        return
    G[:, :] = 0.0
    if code == _NEGLECT:
        return
    t0, t1, t2 = theta[0], theta[1], theta[2]
    d0, d1, d2 = d[0], d[1], d[2]
    s = t0 * t0 + t1 * t1 + t2 * t2
    sg = 2.0 * (t0 * d0 + t1 * d1 + t2 * d2)
    _, _, c, _, db, dc = so3_coefficients(s)
    db2, dc2 = so3_second_derivatives(s) if angles else (0.0, 0.0)
    cb, cc = db * sg, dc * sg
    x0, x1, x2 = t1 * d2 - t2 * d1, t2 * d0 - t0 * d2, t0 * d1 - t1 * d0  # θ × θ̇
    y0, y1, y2 = t1 * x2 - t2 * x1, t2 * x0 - t0 * x2, t0 * x1 - t1 * x0  # θ × x
    z0, z1, z2 = d1 * x2 - d2 * x1, d2 * x0 - d0 * x2, d0 * x1 - d1 * x0  # θ̇ × x
    for a in range(3):
        e0 = 1.0 if a == 0 else 0.0  # δ = e_a
        e1 = 1.0 if a == 1 else 0.0
        e2 = 1.0 if a == 2 else 0.0
        if angles:  # δx = δ × θ̇
            ds, dsg = 2.0 * theta[a], 2.0 * d[a]
            u0, u1, u2 = e1 * d2 - e2 * d1, e2 * d0 - e0 * d2, e0 * d1 - e1 * d0
            a0, a1, a2, r0, r1, r2 = e0, e1, e2, 0.0, 0.0, 0.0
        else:  # δx = θ × δ
            ds, dsg = 0.0, 2.0 * theta[a]
            u0, u1, u2 = t1 * e2 - t2 * e1, t2 * e0 - t0 * e2, t0 * e1 - t1 * e0
            a0, a1, a2, r0, r1, r2 = 0.0, 0.0, 0.0, e0, e1, e2
        dcb = db2 * ds * sg + db * dsg
        dcc = dc2 * ds * sg + dc * dsg
        dcs = dc * ds
        G[0, a] = (-dcb * x0 - cb * u0 + dcc * y0
                   + cc * (a1 * x2 - a2 * x1 + t1 * u2 - t2 * u1)
                   + dcs * z0 + c * (r1 * x2 - r2 * x1 + d1 * u2 - d2 * u1))
        G[1, a] = (-dcb * x1 - cb * u1 + dcc * y1
                   + cc * (a2 * x0 - a0 * x2 + t2 * u0 - t0 * u2)
                   + dcs * z1 + c * (r2 * x0 - r0 * x2 + d2 * u0 - d0 * u2))
        G[2, a] = (-dcb * x2 - cb * u2 + dcc * y2
                   + cc * (a0 * x1 - a1 * x0 + t0 * u1 - t1 * u0)
                   + dcs * z2 + c * (r0 * x1 - r1 * x0 + d0 * u1 - d1 * u0))


@helper
def node_frame(code, Pi_r, Pi_t, l0, eta, m, R, p, E, theta):
    """Node frame at ``η``: ``θ = Π_r η``, ``p = l0 + Π_t η``, ``R(θ)`` and
    ``E = [J(θ) Π_r; Rᵀ Π_t]`` (6 × m) of the tip kinematics ``code`` (``tip_frame``)."""
    for r in range(3):
        th = 0.0
        pr = l0[r]
        for k in range(m):
            th += Pi_r[r, k] * eta[k]
            pr += Pi_t[r, k] * eta[k]
        theta[r] = th
        p[r] = pr
    tip_frame(code, theta, Pi_r, m, R, E)
    for k in range(m):
        for r in range(3):
            E[3 + r, k] = R[0, r] * Pi_t[0, k] + R[1, r] * Pi_t[1, k] + R[2, r] * Pi_t[2, k]


@inlined
def _map_slope(theta, x, d, sg):
    """``∂(J_r(θ)^(ᵀ) x)/∂θ · d`` (a 3-tuple) for the exponential map, ``x`` and ``d`` 3-tuples:
    with ``J_r(θ)^(ᵀ) x = x + sg b θ × x + c (θ (θ·x) − s x)`` (``sg`` −1 for ``J_r``, +1
    for ``J_rᵀ``; ``s = |θ|²``), ``sg (2 b′ (θ·d) θ × x + b d × x) +
    2 c′ (θ·d) (θ (θ·x) − s x) + c (d (θ·x) + θ (d·x) − 2 (θ·d) x)``, the coefficients'
    slopes ``b′``, ``c′`` in ``s`` (:func:`~flexdyn.engine.algebra.so3_coefficients`)."""
    t0, t1, t2 = theta[0], theta[1], theta[2]
    x0, x1, x2 = x
    d0, d1, d2 = d
    s = t0 * t0 + t1 * t1 + t2 * t2
    _, b, c, _, db, dc = so3_coefficients(s)
    sd = 2.0 * (t0 * d0 + t1 * d1 + t2 * d2)
    tx = t0 * x0 + t1 * x1 + t2 * x2
    dx = d0 * x0 + d1 * x1 + d2 * x2
    return (sg * (db * sd * (t1 * x2 - t2 * x1) + b * (d1 * x2 - d2 * x1))
            + dc * sd * (t0 * tx - s * x0) + c * (d0 * tx + t0 * dx - sd * x0),
            sg * (db * sd * (t2 * x0 - t0 * x2) + b * (d2 * x0 - d0 * x2))
            + dc * sd * (t1 * tx - s * x1) + c * (d1 * tx + t1 * dx - sd * x1),
            sg * (db * sd * (t0 * x1 - t1 * x0) + b * (d0 * x1 - d1 * x0))
            + dc * sd * (t2 * tx - s * x2) + c * (d2 * tx + t2 * dx - sd * x2))


@helper
def _node_frame_slope(code, Pi_r, m, k, E, theta, dE):
    """``dE = ∂E/∂η_k`` (6 × m) of a node frame (:func:`node_frame`'s ``E``, ``θ``) in
    closed form: ``E_t' = −e × E_t`` (``E_t = Rᵀ Π_t``, ``R' = R ẽ`` with ``e = E_r e_k``:
    ``E_r`` maps modal rates to the node's angular velocity in its frame) and, for the
    exponential map, ``E_r' = ∂(J_r(θ) Π_r)/∂θ · θ'`` (``_map_slope``; zero for ``neglect``);
    the frame's other slopes are ``θ' = Π_r e_k``, ``p' = Π_t e_k`` and ``R' = R ẽ``.
    Returns False for the Euler-angle kinematics (no closed form here)."""
    if code == _EULER_123 or code == _EULER_321:
        return False
    e0, e1, e2 = E[0, k], E[1, k], E[2, k]
    d = (Pi_r[0, k], Pi_r[1, k], Pi_r[2, k])
    for q in range(m):
        if code == _EXPONENTIAL:
            dE[0, q], dE[1, q], dE[2, q] = _map_slope(theta, (Pi_r[0, q], Pi_r[1, q],
                                                              Pi_r[2, q]), d, -1.0)
        else:
            dE[0, q] = dE[1, q] = dE[2, q] = 0.0
        y0, y1, y2 = E[3, q], E[4, q], E[5, q]
        dE[3, q] = -(e1 * y2 - e2 * y1)
        dE[4, q] = -(e2 * y0 - e0 * y2)
        dE[5, q] = -(e0 * y1 - e1 * y0)
    return True


@helper
def rotation_map_slope(code, theta, x, transpose, N):
    """``N = ∂(J_r(θ) x)/∂θ`` (3 × 3; with ``transpose`` of ``J_r(θ)ᵀ x``) at ``x`` (3,) held,
    for ``E_r = J_r(θ) Π_r`` of :func:`node_frame`: its columns ``_map_slope`` along the
    axes for the exponential map, zero for ``neglect``; returns False for the Euler angles
    (no closed form here)."""
    if code == _EULER_123 or code == _EULER_321:
        return False
    if code == _NEGLECT:
        N[:, :] = 0.0
        return True
    xt = (x[0], x[1], x[2])
    sg = 1.0 if transpose else -1.0
    N[0, 0], N[1, 0], N[2, 0] = _map_slope(theta, xt, (1.0, 0.0, 0.0), sg)
    N[0, 1], N[1, 1], N[2, 1] = _map_slope(theta, xt, (0.0, 1.0, 0.0), sg)
    N[0, 2], N[1, 2], N[2, 2] = _map_slope(theta, xt, (0.0, 0.0, 1.0), sg)
    return True


@helper
def node_frame_step(code, Pi_r, Pi_t, m, k, R, p, E, theta, h, Rc, pc, Ec, thc, dE):
    """The node frame at ``η + i h e_k`` in complex numbers (``Rc``, ``pc``, ``Ec``, ``thc``)
    from the frame at ``η`` (:func:`node_frame`'s ``R``, ``p``, ``E``, ``θ``) and its slopes
    in ``η_k`` in closed form (``_node_frame_slope``; ``dE`` (6 × m) scratch).  Returns
    False for the Euler-angle kinematics (its caller takes a complex step of
    :func:`node_frame`)."""
    if not _node_frame_slope(code, Pi_r, m, k, E, theta, dE):
        return False
    e0, e1, e2 = E[0, k], E[1, k], E[2, k]
    for r in range(3):
        thc[r] = complex(theta[r], h * Pi_r[r, k])
        pc[r] = complex(p[r], h * Pi_t[r, k])
        Rc[r, 0] = complex(R[r, 0], h * (R[r, 1] * e2 - R[r, 2] * e1))
        Rc[r, 1] = complex(R[r, 1], h * (R[r, 2] * e0 - R[r, 0] * e2))
        Rc[r, 2] = complex(R[r, 2], h * (R[r, 0] * e1 - R[r, 1] * e0))
    for r in range(6):
        for q in range(m):
            Ec[r, q] = complex(E[r, q], h * dE[r, q])
    return True


@helper
def node_twist_rate(code, theta, Pi_r, E, etad, m, out, w, t):
    """``out = Ė_j η̇ = [J̇(θ) θ̇; −(E_r η̇) × (E_t η̇)]`` with ``θ̇ = Π_r η̇``
    (Body.node_twist_rate; ``tip_rate``), and ``w = E_j η̇`` (6,); ``t`` (4, 3)
    scratch."""
    d = t[0]
    d[0] = d[1] = d[2] = 0.0
    for k in range(m):
        d[0] += Pi_r[0, k] * etad[k]
        d[1] += Pi_r[1, k] * etad[k]
        d[2] += Pi_r[2, k] * etad[k]
    for r in range(6):
        x = 0.0
        for k in range(m):
            x += E[r, k] * etad[k]
        w[r] = x
    tip_rate(code, theta, d, out, t[1:4])
    out[3] = -(w[1] * w[5] - w[2] * w[4])
    out[4] = -(w[2] * w[3] - w[0] * w[5])
    out[5] = -(w[0] * w[4] - w[1] * w[3])


@helper
def node_twist(R, p, E, m, etad, V, out):
    """``out = B_j [η̇; V] = E_j η̇ + [Rᵀ ω; Rᵀ (v + ω × p)]`` (6,): the twist of node ``j``
    in its own frame from the body's twist ``V = [ω; v]`` and modal rates."""
    w0, w1, w2 = V[0], V[1], V[2]
    v0 = V[3] + w1 * p[2] - w2 * p[1]
    v1 = V[4] + w2 * p[0] - w0 * p[2]
    v2 = V[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        out[r] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        out[3 + r] = R[0, r] * v0 + R[1, r] * v1 + R[2, r] * v2
    for r in range(6):
        x = out[r]
        for k in range(m):
            x += E[r, k] * etad[k]
        out[r] = x


@helper
def node_wrench(R, p, E, m, y, out):
    """``out += B_jᵀ y = [E_jᵀ y; R n + p × R f; R f]`` (m + 6,): a wrench ``y = [n; f]`` at
    node ``j`` (its frame) as modal and rigid forces of the body."""
    for k in range(m):
        x = 0.0
        for r in range(6):
            x += E[r, k] * y[r]
        out[k] += x
    n0 = R[0, 0] * y[0] + R[0, 1] * y[1] + R[0, 2] * y[2]
    n1 = R[1, 0] * y[0] + R[1, 1] * y[1] + R[1, 2] * y[2]
    n2 = R[2, 0] * y[0] + R[2, 1] * y[1] + R[2, 2] * y[2]
    f0 = R[0, 0] * y[3] + R[0, 1] * y[4] + R[0, 2] * y[5]
    f1 = R[1, 0] * y[3] + R[1, 1] * y[4] + R[1, 2] * y[5]
    f2 = R[2, 0] * y[3] + R[2, 1] * y[4] + R[2, 2] * y[5]
    out[m] += n0 + p[1] * f2 - p[2] * f1
    out[m + 1] += n1 + p[2] * f0 - p[0] * f2
    out[m + 2] += n2 + p[0] * f1 - p[1] * f0
    out[m + 3] += f0
    out[m + 4] += f1
    out[m + 5] += f2
