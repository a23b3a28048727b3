"""The closure terms of a closed chain on the engine: ``g``, ``J`` and ``γ`` of every loop
closure (:func:`flexdyn.closure.closure_terms`, the same steps compiled), compiled on first
use.

One call runs the position and velocity terms of :mod:`flexdyn.engine.kernels`, the poses of
the body frames, the body Jacobians (the Eq 11 recursion applied to each unit speed), the
accelerations at ``u̇ = 0`` (Eq 24 without gravity), each endpoint's inertial kinematics and
each closure's rows (:mod:`flexdyn.constraints`: point rows along directions that turn with
B, axis rows, attitude rows).  An endpoint's pose is that of the deformed geometry and its
motion that of the fidelity's body kernels (:func:`flexdyn.closure.closure_terms`): the full
kernel's deformed node frames give both (``"full"``, ``"consistent"``, ``"exact"``); the
ruthless kernel moves a node as the undeformed frame with ``E_j η̇`` (Eq B1) and forms no
deformed frames, so its closures take the pose from the position terms of the ``"full"``
body models, packed beside the model (``geo``).

The closures are packed by :func:`pack_closures`: per closure the integers
``[kind, body, node, other body, other node, first row]`` (−1: none / the ground) and the
floats ``[point (3), other point (3), N (3 × 3, the kind's directions as columns), axis (3),
the other axis's two perpendiculars P (3 × 2), rotation R0 (3 × 3)]``.
"""

from __future__ import annotations

import math

import numpy as np

from ..constraints import CONSTRAINT_KINDS, Closure
from ..linalg import LAMBDA_RTOL
from .algebra import cholesky_factor, cholesky_substitute, copy, cross_motion, mtv
from .extras import block_filter, block_smoother, poses
from .jit import allocating_helper, entry_point, helper
from .kernels import (
    articulated_forward_dynamics,
    derivative_inputs,
    derivative_outputs,
    position_velocity_terms,
)
from .layout import (
    INVALID,
    KIND,
    MODES,
    NJ,
    PARENT,
    TK,
    US,
    carve,
    unpack,
    workspace,
    workspace_length,
)
from .pack import FULL, RUTHLESS
from .terms import from_parent, modal_velocities, position_terms
from .tip import node_twist, node_twist_rate

__all__ = ["CLOSURE_CODES", "SINGULAR", "closed_derivative", "closure_row_count", "closure_rows",
           "closure_terms", "pack_closures"]


#: kernel code of each closure kind (literal here, so that the engine's cache stamp covers
#: it; every kind of :data:`~flexdyn.constraints.CONSTRAINT_KINDS` has one)
CLOSURE_CODES = {"ball": 0, "revolute": 1, "weld": 2, "pin": 3, "point-on-line": 4,
                 "point-on-plane": 5}
assert set(CLOSURE_CODES) == set(CONSTRAINT_KINDS)
REVOLUTE, _WELD, _PIN, _LINE, _PLANE = 1, 2, 3, 4, 5
#: rows of each kind, by code
_ROWS = np.array([3, 5, 6, 2, 2, 1], dtype=np.int64)
#: status of :func:`closed_derivative` for a singular ``Λ`` (redundant or locked closures)
SINGULAR = -4
#: columns of the packed floats
_PT, _OPT, _N, _AX, _P, _R0, _NF = 0, 3, 6, 15, 18, 24, 33


def pack_closures(closures: tuple[Closure, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(ci, cf)``: the closures as integer (n, 6) and float (n, 33) rows (module notes)."""
    ci = np.zeros((len(closures), 6), dtype=np.int64)
    cf = np.zeros((len(closures), _NF))
    row = 0
    for k, c in enumerate(closures):
        const = c.constants
        ci[k] = (CLOSURE_CODES[c.kind], c.body, -1 if c.node is None else c.node,
                 c.other_body, -1 if c.other_node is None else c.other_node, row)
        row += c.n_rows
        if c.point is not None:
            cf[k, _PT:_PT + 3] = c.point
        if c.other_point is not None:
            cf[k, _OPT:_OPT + 3] = c.other_point
        N = const.get("N", np.eye(3))
        cf[k, _N:_N + 3 * N.shape[1]] = N.T.ravel()  # column by column
        if "axis" in const:
            cf[k, _AX:_AX + 3] = const["axis"]
        if "perpendicular" in const:
            cf[k, _P:_P + 6] = const["perpendicular"].T.ravel()
        cf[k, _R0:_R0 + 9] = const.get("rotation", np.eye(3)).ravel()
    return ci, cf


def closure_row_count(ci: np.ndarray) -> int:
    """The closure rows ``n_c`` of the packed closures ``ci`` (:func:`pack_closures`)."""
    return max((int(ci[k, 5] + _ROWS[ci[k, 0]]) for k in range(ci.shape[0])), default=0)


# ----------------------------------------------------------------------------------------------
# endpoints
# ----------------------------------------------------------------------------------------------
@helper
def _cross(a, b, out):
    """``out = a × b`` (3,)."""
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


@helper
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@helper
def _rot(R, x, out):
    """``out = R x`` (3,)."""
    for r in range(3):
        out[r] = R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]


@helper
def _fixed_frame(pm, k, node, point, R, p):
    """The frame of ``point``, or of node ``node`` undeformed, in ``F_k``: unrotated, at the
    point or the node's undeformed position."""
    R[:, :] = 0.0
    for r in range(3):
        R[r, r] = 1.0
        p[r] = point[r] if node < 0 else pm.l0[k, node, r]


@helper
def _endpoint(pm, w, gints, gw, u, Jm, alpha0, Rb, pb, k, node, point, R, kin, Je, E0, t6, t3,
              tg, no_modes):
    """Endpoint on body ``k`` (−1: the ground, at ``point``): its orientation ``R`` (3 × 3),
    ``kin`` (5, 3) with rows ``p, ω, v, α, a`` (inertial; ``α``, ``a`` at ``u̇ = 0``) and its
    Jacobian ``Je`` (6, nu) of ``[ω; v]`` (zero on the ground).  The pose is the deformed
    geometry's: the body poses ``Rb``, ``pb`` and the node frames of the workspace ``gw``
    (kernels ``gints``); the motion the fidelity's (``w``): node ``j``'s twist in its frame
    is ``E_j η̇ + φ*(k, j) V`` (Eq 21), its rate at ``u̇ = 0``
    ``[E_j, φ*] α_m⁰ + Ė_j η̇ + V_j × E_j η̇`` (full kernel only: the others let no modal rate
    into the products), with the ruthless kernel's undeformed node frame and
    ``E_j = [Π_r; Π_t]`` at ``η = 0`` (Eq B1; into ``E0``, (6, M)).  ``t6`` (5, 6), ``t3``
    (6, 3), ``tg`` (4, 3) scratch; ``no_modes`` (6, 0): the map ``E`` of a point, which no mode
    moves."""
    ints = pm.ints
    kin[:, :] = 0.0
    Je[:, :] = 0.0
    R[:, :] = 0.0
    if k < 0:
        for r in range(3):
            R[r, r] = 1.0
            kin[0, r] = point[r]
        return
    m = ints[k, MODES]
    RT, pT, RG, pG = t3[0:3], t3[3], tg[0:3], tg[3]
    _fixed_frame(pm, k, node, point, RG, pG)
    if node >= 0 and gints[k, KIND] == FULL:  # the deformed node frame: the pose
        copy(gw.fR[k, node], RG)
        copy(gw.fp[k, node], pG)
    mn, E = 0, no_modes  # the modes that move the endpoint, and how
    _fixed_frame(pm, k, node, point, RT, pT)  # a point, or a node of a rigid body
    if node >= 0 and ints[k, KIND] == FULL:  # the kernel's deformed node frame
        mn, E = m, w.fE[k, node, :, :m]
        copy(w.fR[k, node], RT)
        copy(w.fp[k, node], pT)
    elif node >= 0 and ints[k, KIND] == RUTHLESS:  # the undeformed one (Eq B1)
        mn, E = m, E0[:, :m]
        for r in range(3):
            for c in range(m):
                E[r, c] = pm.Pi_r[k, node, r, c]
                E[3 + r, c] = pm.Pi_t[k, node, r, c]
    col, V, A, zero, w6 = t6[0], t6[1], t6[2], t6[3], t6[4]
    zero[:] = 0.0
    for r in range(3):  # pose
        x = pb[k, r]
        for c in range(3):
            x += Rb[k, r, c] * pG[c]
            R[r, c] = Rb[k, r, 0] * RG[0, c] + Rb[k, r, 1] * RG[1, c] + Rb[k, r, 2] * RG[2, c]
        kin[0, r] = x
    for c in range(Je.shape[1]):  # the Jacobian, column by column, then to inertial axes
        node_twist(RT, pT, E, mn, Jm[k, :m, c], Jm[k, m:m + 6, c], col)
        for r in range(3):
            Je[r, c] = R[r, 0] * col[0] + R[r, 1] * col[1] + R[r, 2] * col[2]
            Je[3 + r, c] = R[r, 0] * col[3] + R[r, 1] * col[4] + R[r, 2] * col[5]
    node_twist(RT, pT, E, mn, w.V_m[k, :m], w.V_m[k, m:m + 6], V)
    node_twist(RT, pT, E, 0, zero, alpha0[k, m:m + 6], A)
    if node >= 0 and m > 0 and ints[k, KIND] == FULL:
        s = ints[k, US] + ints[k, NJ]
        node_twist_rate(ints[k, TK], w.fth[k, node], pm.Pi_r[k, node], E, u[s:s + m], m,
                         col, w6, w.t_tip)
        for r in range(6):
            A[r] += col[r]
        cross_motion(V, w6, A, True)
    _cross(V[:3], V[3:], t3[4])
    for r in range(3):
        t3[5, r] = A[3 + r] + t3[4, r]
    _rot(R, V[:3], kin[1])
    _rot(R, V[3:], kin[2])
    _rot(R, A[:3], kin[3])
    _rot(R, t3[5], kin[4])


# ----------------------------------------------------------------------------------------------
# rows (flexdyn.constraints: point_rows, axis_rows, attitude_rows)
# ----------------------------------------------------------------------------------------------
@helper
def _point_rows(A, B, RB, N, k, g, WA, WB, gamma, t):
    """``g = nᵀ (p_A − p_B)`` along ``n = R_B N[:, i]``, i < k; ``t`` (6, 3) scratch."""
    n, d, dd, nd, ndd, x = t[0], t[1], t[2], t[3], t[4], t[5]
    for r in range(3):
        d[r] = A[0, r] - B[0, r]
        dd[r] = A[2, r] - B[2, r]
    for i in range(k):
        _rot(RB, N[:, i], n)
        g[i] = _dot(n, d)
        _cross(n, d, x)
        for r in range(3):
            WA[i, 3 + r] = n[r]
            WB[i, r] = x[r]
            WB[i, 3 + r] = -n[r]
        _cross(B[1], n, nd)
        _cross(B[3], n, ndd)
        _cross(B[1], nd, x)
        for r in range(3):
            ndd[r] += x[r]
        gamma[i] = (n[0] * (A[4, 0] - B[4, 0]) + n[1] * (A[4, 1] - B[4, 1])
                    + n[2] * (A[4, 2] - B[4, 2]) + _dot(ndd, d) + 2.0 * _dot(nd, dd))


@helper
def _axis_rows(A, RA, B, RB, a_A, P, g, WA, WB, gamma, t):
    """``g_i = a·b_i``, ``a = R_A a_A``, ``b_i = R_B P[:, i]`` (i = 0, 1); ``t`` (6, 3)."""
    a, b, c, y, z, dw = t[0], t[1], t[2], t[3], t[4], t[5]
    _rot(RA, a_A, a)
    for r in range(3):
        dw[r] = A[1, r] - B[1, r]
    for i in range(2):
        _rot(RB, P[:, i], b)
        _cross(a, b, c)
        g[i] = _dot(b, a)
        for r in range(3):
            WA[i, r] = c[r]
            WB[i, r] = -c[r]
        rate = (c[0] * (A[3, 0] - B[3, 0]) + c[1] * (A[3, 1] - B[3, 1])
                + c[2] * (A[3, 2] - B[3, 2]))
        _cross(A[1], a, y)  # (ω_A × a) × b
        _cross(y, b, z)
        rate += _dot(z, dw)
        _cross(B[1], b, y)  # a × (ω_B × b)
        _cross(a, y, z)
        gamma[i] = rate + _dot(z, dw)


@helper
def _log(E, out):
    """The rotation vector (3,) of the rotation matrix ``E``."""
    v0 = 0.5 * (E[2, 1] - E[1, 2])
    v1 = 0.5 * (E[0, 2] - E[2, 0])
    v2 = 0.5 * (E[1, 0] - E[0, 1])
    c = min(1.0, max(-1.0, 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)))
    angle = math.acos(c)
    if angle < 1e-8:
        out[0], out[1], out[2] = v0, v1, v2
    elif angle < math.pi - 1e-6:
        f = angle / math.sin(angle)
        out[0], out[1], out[2] = f * v0, f * v1, f * v2
    else:  # near π: the axis from the symmetric part, its sign from the skew part
        i = 0
        for r in range(1, 3):
            if E[r, r] > E[i, i]:
                i = r
        ai = math.sqrt(max(0.0, 0.5 * (E[i, i] + 1.0)))
        for r in range(3):
            out[r] = ai if r == i else 0.25 * (E[r, i] + E[i, r]) / ai
        if out[0] * v0 + out[1] * v1 + out[2] * v2 < 0.0:
            for r in range(3):
                out[r] = -out[r]
        for r in range(3):
            out[r] *= angle


@helper
def _attitude_rows(A, RA, B, RB, R0, g, WA, WB, gamma, t, T):
    """``g = log(R_Bᵀ R_A R0ᵀ)``, rows ``±R_Bᵀ`` on ``ω``,
    ``γ = R_Bᵀ (α_A − α_B + (ω_A − ω_B) × ω_B)``; ``t`` (6, 3), ``T`` (2, 3, 3) scratch."""
    X, Y = T[0], T[1]
    for r in range(3):
        for c in range(3):
            X[r, c] = RB[0, r] * RA[0, c] + RB[1, r] * RA[1, c] + RB[2, r] * RA[2, c]
    for r in range(3):
        for c in range(3):
            Y[r, c] = X[r, 0] * R0[c, 0] + X[r, 1] * R0[c, 1] + X[r, 2] * R0[c, 2]
    _log(Y, g)
    dw, x = t[0], t[1]
    for r in range(3):
        dw[r] = A[1, r] - B[1, r]
    _cross(dw, B[1], x)
    for r in range(3):
        x[r] += A[3, r] - B[3, r]
    for i in range(3):
        for r in range(3):
            WA[i, r] = RB[r, i]
            WB[i, r] = -RB[r, i]
        gamma[i] = RB[0, i] * x[0] + RB[1, i] * x[1] + RB[2, i] * x[2]


# ----------------------------------------------------------------------------------------------
# the entry
# ----------------------------------------------------------------------------------------------
@entry_point
def closure_terms(ib, fb, st, ci, cf, geo, q, u, g, J, gamma):
    """``g`` (n_c,), ``J`` (n_c, nu), ``γ`` (n_c,) of the packed closures ``ci``, ``cf`` at
    a valid ``(q, u)`` (unit quaternions), as :func:`flexdyn.closure.closure_terms`; ``geo``
    as :func:`closure_rows`."""
    pm, w = unpack(ib, fb), workspace(ib)
    w.flat[:] = 0.0
    position_velocity_terms(st, pm, w, q, u, np.zeros((pm.ints.shape[0], 6)))
    closure_rows(pm, w, ci, cf, geo, q, u, g, J, gamma)


@entry_point
def closed_derivative(ib, fb, st, ci, cf, geo, x, tau, fext, rate, xdot):
    """:func:`~flexdyn.engine.kernels.derivative_articulated` of a closed chain: the tree's
    ``u̇_f`` (Eqs 51/58), its closure terms (``closure_rows``, from the same terms),
    ``Y = M⁻¹ Jᵀ`` from the same articulated factors (the block sweeps of Lemma 4),
    ``Λ λ = J u̇_f + γ + 2ω J u + ω² g`` by Cholesky and ``u̇ = u̇_f − Y λ``
    (:func:`flexdyn.closure.closed_chain_accelerations`, Baumgarte's ``ω = rate``; ``geo`` as
    :func:`closure_rows`).  Status as the kernels' entries, or :data:`SINGULAR` when a
    squared pivot of ``Λ`` is at most ``LAMBDA_RTOL · Λ_kk``."""
    pm, w = unpack(ib, fb), workspace(ib)
    nq, nu, n, s = ib[4], ib[3], ib[0], ib[1] + 6
    u, udot = x[nq:nq + nu], xdot[nq:nq + nu]
    if not derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    status = articulated_forward_dynamics(st, pm, w, w.q_n, u, tau, fext, udot)
    if status >= 0:
        return status
    nc = 0
    for k in range(ci.shape[0]):
        nc = max(nc, ci[k, 5] + _ROWS[ci[k, 0]])
    g, J, gamma = np.zeros(nc), np.zeros((nc, nu)), np.zeros(nc)
    closure_rows(pm, w, ci, cf, geo, w.q_n, u, g, J, gamma)
    Yt = np.empty((nc, nu))
    Z, alpha, T = np.empty((n, nc, s)), np.empty((n, nc, s)), np.empty((3, nc, s))
    block_filter(pm.ints, w.Hcal, w.A, w.phi, w.P, w.G, J, Z, Yt, w.t_PH, w.t_D, w.t_L,
                  w.t_Li, T)
    block_smoother(pm.ints, w.Hcal, w.A, w.phi, w.G, alpha, Yt, T)
    L, b = np.zeros((nc, nc)), np.zeros(nc)
    for i in range(nc):
        Ju = 0.0
        Jud = 0.0
        for c in range(nu):
            Ju += J[i, c] * u[c]
            Jud += J[i, c] * udot[c]
        b[i] = Jud + gamma[i] + 2.0 * rate * Ju + rate * rate * g[i]
        for j in range(nc):
            x_ij = 0.0
            for c in range(nu):
                x_ij += 0.5 * (J[i, c] * Yt[j, c] + J[j, c] * Yt[i, c])
            L[i, j] = x_ij
    if not cholesky_factor(L, LAMBDA_RTOL):
        return SINGULAR
    cholesky_substitute(L, b, b)  # λ
    for c in range(nu):
        e = udot[c]
        for i in range(nc):
            e -= Yt[i, c] * b[i]
        udot[c] = e
    return derivative_outputs(pm, w, x, tau, fext, xdot, -1)


@allocating_helper
def closure_rows(pm, w, ci, cf, geo, q, u, g, J, gamma):
    """The closure terms after the position and velocity terms of ``w`` at ``(q, u)``: the
    body Jacobians (Eq 11 on the unit speeds), the accelerations at ``u̇ = 0`` (Eq 24 without
    gravity), the poses and, per closure, its endpoints and rows.  ``geo``: None where the
    body kernels form the deformed node frames, else the packed ``(ib, fb)`` of the
    ``"full"`` body models, whose position terms at ``q`` give the endpoints' poses (numba
    prunes the branch for None)."""
    ints = pm.ints
    n, s, nu = ints.shape[0], w.V_m.shape[1], u.shape[0]
    Jm = np.zeros((n, s, nu))  # body Jacobians: Eq 11 on the unit speeds
    unit, Vt, t6 = np.zeros(nu), np.zeros((n, s)), np.zeros(6)
    for c in range(nu):
        unit[:] = 0.0
        unit[c] = 1.0
        modal_velocities(ints, w.Hcal, w.phi, w.A, unit, Vt, t6)
        for i in range(n):
            for r in range(s):
                Jm[i, r, c] = Vt[i, r]
    alpha0 = np.zeros((n, s))  # Eq 24 at u̇ = 0, no gravity
    for i in range(n):
        m = ints[i, MODES]
        for r in range(s):
            alpha0[i, r] = w.a_m[i, r]
        if ints[i, PARENT] >= 0:
            from_parent(ints, w.A, i, alpha0, t6)
            mtv(w.phi[i], t6, alpha0[i, m:m + 6], True)
    Rb, pb = np.zeros((n, 3, 3)), np.zeros((n, 3))
    gints, gw = ints, w  # the deformed geometry
    if geo is not None:
        gpm = unpack(geo[0], geo[1])
        gints, gw = gpm.ints, carve(geo[0], np.zeros(workspace_length(geo[0])))
        position_terms(gpm, q, gw)
    poses(gints, gw.A, gw.phi, Rb, pb, np.zeros((3, 3)), np.zeros(3))
    RA, RB = np.zeros((3, 3)), np.zeros((3, 3))
    KA, KB = np.zeros((5, 3)), np.zeros((5, 3))
    JA, JB = np.zeros((6, nu)), np.zeros((6, nu))
    WA, WB = np.zeros((6, 6)), np.zeros((6, 6))
    t6s, t3s, tg, T = np.zeros((5, 6)), np.zeros((6, 3)), np.zeros((4, 3)), np.zeros((2, 3, 3))
    E0, no_modes = np.zeros((6, pm.Pi_r.shape[3])), np.zeros((6, 1))[:, :0]
    for k in range(ci.shape[0]):
        code, row = ci[k, 0], ci[k, 5]
        f = cf[k]
        _endpoint(pm, w, gints, gw, u, Jm, alpha0, Rb, pb, ci[k, 1], ci[k, 2], f[_PT:_PT + 3],
                  RA, KA, JA, E0, t6s, t3s, tg, no_modes)
        _endpoint(pm, w, gints, gw, u, Jm, alpha0, Rb, pb, ci[k, 3], ci[k, 4],
                  f[_OPT:_OPT + 3], RB, KB, JB, E0, t6s, t3s, tg, no_modes)
        N = f[_N:_N + 9].reshape((3, 3)).T.copy()  # columns: the directions
        WA[:, :] = 0.0
        WB[:, :] = 0.0
        if code == _PIN or code == _LINE:
            nr = 2
            _point_rows(KA, KB, RB, N, 2, g[row:], WA, WB, gamma[row:], t3s)
        elif code == _PLANE:
            nr = 1
            _point_rows(KA, KB, RB, N, 1, g[row:], WA, WB, gamma[row:], t3s)
        else:  # ball, revolute, weld: the three point rows first
            N[:, :] = 0.0
            for r in range(3):
                N[r, r] = 1.0
            _point_rows(KA, KB, RB, N, 3, g[row:], WA, WB, gamma[row:], t3s)
            nr = 3
            if code == REVOLUTE:
                P = f[_P:_P + 6].reshape((2, 3)).T.copy()
                _axis_rows(KA, RA, KB, RB, f[_AX:_AX + 3], P, g[row + 3:], WA[3:], WB[3:],
                           gamma[row + 3:], t3s)
                nr = 5
            elif code == _WELD:
                _attitude_rows(KA, RA, KB, RB, f[_R0:_R0 + 9].reshape((3, 3)), g[row + 3:],
                               WA[3:], WB[3:], gamma[row + 3:], t3s, T)
                nr = 6
        for i in range(nr):
            for c in range(nu):
                x = 0.0
                for r in range(6):
                    x += WA[i, r] * JA[r, c] + WB[i, r] * JB[r, c]
                J[row + i, c] = x
