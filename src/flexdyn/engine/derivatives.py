"""The derivatives of inverse (Eq 44) and forward dynamics in the state and the inputs,
compiled: two entries, each compiled only for the models that take it.

Inverse dynamics ``τ = ID(q, u, u̇)`` (:func:`flexdyn.engine.kernels.inverse_dynamics`:
position and velocity terms, Newton–Euler, less the joint forces) is differentiated first:
``∂τ/∂δ``, ``∂τ/∂u`` and ``∂τ/∂u̇ = M`` (Eqs 47/50).  Forward dynamics then follows from
``M du̇ = sat′(τ) dτ − ∂τ/∂δ dδ − ∂τ/∂u du`` at the accelerations of forward dynamics, by
a Cholesky factor of ``M`` (all columns of a block at once).

* :func:`derivatives_rigid_tree`, for a rigid tree on one-dof joints
  (:func:`flexdyn.engine.rigid_tree.is_rigid_tree`; ``δ = q``): the analytic recursion
  :func:`rigid_tree_derivatives` (the derivatives of the Newton–Euler sweeps, Carpentier &
  Mansard, *RSS* 2018, in inertial coordinates), sweeps with composite inertias, then a few
  dot products per pair of joints on one path: ``O(N d)`` for a tree of depth ``d``; the
  same sweeps give ``M`` and the accelerations.
* :func:`derivatives`, for every other model: forward-mode differentiation at the
  accelerations of forward dynamics that it solves for, in two blocks of directions, the
  coordinates and then the rates.  ``δ`` are tangent coordinates
  (:class:`flexdyn.tangent.TangentCoordinates`), the columns of ``∂q/∂δ`` (nq × nu, block
  diagonal by body: a body's ``δ`` move its own coordinates only), which the entry forms at
  each configuration from the constant blocks it is given (``_tangent_directions``);
  quaternions need no normalisation along them, since a tangent direction
  ``Q ⊗ [0, e/2]`` keeps ``|Q|`` to second order.  Each direction seeds the bodies whose
  own terms it moves (``_seed``, ``_rate_seed``); then one tangent sweep in real
  arithmetic carries all the directions of a block over the tree (``_tangent_sweep``):
  base to tip ``δV_t = Aᵀ δV_m(p)``, ``δV_m = φᵀ δV_t``, the velocity-dependent
  acceleration (affine in the body's twist and its parent node's)
  ``δa = δV × c + φᵀ (δV_t × w_t + P δη̇_p)``, ``δα_m = φᵀ Aᵀ δα_m(p) + δa`` and
  ``δf_m = M_m δα_m + J δV``; tip to base ``δτ = ℋ δf_m`` and ``δf_m(p) += A φ δf_m``
  (Eqs 36, 41).

  A coordinate of body ``b`` moves its position terms
  (:func:`~flexdyn.engine.terms.body_position_terms`), evaluated in complex arithmetic:
  one evaluation at ``q + i h ∂q/∂δ_j`` gives ``Im / h`` the derivative exactly to
  round-off for a tiny ``h`` (:data:`flexdyn.linalg.COMPLEX_STEP`), since nothing is
  subtracted and the ``O(h²)`` term is below any double (Martins, Sturdza & Alonso,
  *ACM TOMS* 29(3), 2003).  From their slopes (the imaginary parts over the step) ``b``'s
  velocity (Eq 11), rates (Eq 25) and forces (Eq 24) change in real arithmetic
  (``_body_seed``, with its rate terms at the state, ``_rate_terms``), and the slopes of
  its ``ℋ``, ``φ`` and ``A`` apply to the state's forces (``_operator_seed``).  Two kinds
  of direction take complex steps of the body's velocity, rates and forces instead
  (``_complex_body``): a coordinate of a joint whose rate term ``Ḣ* β`` moves with it
  (universal joints, products of several factors), and a mode of a body whose own forces
  have no slope in closed form here (the ruthless and the other reduced models, a
  consistent mass).  A mode of a full body moves its node frames (in closed form,
  :func:`~flexdyn.engine.tip.node_frame_step`, but for the Euler angles): each by
  ``ξ = E_j e_k`` in its own coordinates, so that its own forces (Eq 23 and the bias)
  change by their slope in real arithmetic (``_own_force_slope``), and its children's
  attach maps move, whose slopes seed the children's twists, accelerations and rates
  (``_child_seed``).  A rate is seeded in real arithmetic from the slopes of its body's
  rates in its own (``_own_rate_slopes``).  A body's bias (Eq 37 and the elastic forces,
  :func:`~flexdyn.engine.terms.body_bias`) is a function of its own ``η``, ``η̇`` and
  twist alone, so its slopes ``J`` in ``η̇`` and the twist are formed once per state: a
  full body's analytically over its nodes, any other's by complex steps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types

from ..linalg import COMPLEX_STEP, MASS_MATRIX_RTOL
from . import stages
from .algebra import (
    cholesky_factor,
    cholesky_substitute,
    compose3,
    copy,
    cross_force,
    cross_motion,
    mv,
    mv6,
    pose_congruence,
)
from .forces import add_passive_forces, motor_torques, passive_force_kernel
from .jit import allocating_helper, entry_point, helper, inlined
from .joint_kernels import quat_rot_kernel
from .kernels import finite, valid_state
from .layout import (
    AT,
    CN,
    FREE,
    GS,
    INVALID,
    JCODE,
    JF,
    KIND,
    MI,
    MODES,
    NJ,
    NN,
    NQJ,
    OVERFLOW,
    PARENT,
    PN,
    QS,
    SPHERICAL,
    TK,
    US,
    Work,
    carve,
    prefix_sums,
    unpack,
    view,
    workspace,
    workspace_length,
)
from .newton_euler import body_forces, gravity_acceleration, rnea
from .pack import FULL, RUTHLESS
from .rigid_tree import rigid_tree_pose
from .stages import INTS, MATRIX, VECTOR, run, stage
from .terms import (
    body_bias,
    body_position_terms,
    body_rates,
    body_velocity,
    from_parent,
    geometric_tangent,
    joint_rate_term,
    massless_node,
    parent_attach_map,
    rates_in_products,
    rotate_node_twist,
    to_parent,
)
from .tip import (
    node_frame_step,
    node_twist,
    node_twist_rate,
    node_wrench,
    rotation_map_slope,
    tip_rate_slopes,
)

__all__ = ["ComplexWork", "RigidWork", "carve_work", "derivatives", "derivatives_rigid_tree",
           "derivatives_rigid_tree_one", "rigid_tree_derivatives", "state_derivatives",
           "work_lengths"]

#: ``1 / h``: a slope is the imaginary part of a complex step times it (a product, where a
#: division would take several times as long, and as exact to round-off)
_PER_STEP = 1.0 / COMPLEX_STEP
#: rows of the per-body vectors of :func:`rigid_tree_derivatives` (inertial coordinates)
_S, _V, _A, _SD, _SDD, _F, _FV, _Y, _B, _G, _H, _T = range(12)
N_RIGID_VECTORS = 12


@entry_point
def derivatives(ib, fb, st, forward, t, n_threads, q, u, udot, tau, fext, q_dir, d, status):
    """For the states ``s = t, t + n_threads, …`` of ``q`` (B × nq), ``u``, ``udot``, ``tau``
    (B × nu), ``fext`` (B × n × 6) and the tangent directions ``q_dir`` (nq × nu,
    ``∂q/∂δ`` but for the quaternion joints' blocks, which each state's configuration gives,
    ``_tangent_directions``), into ``d[0, s]``, ``d[1, s]``, ``d[2, s]`` (``d``:
    3 × B × nu × nu) and ``status[s]``: :func:`state_derivatives` of each state, called
    through the table ``st``."""
    pm, w = unpack(ib, fb), workspace(ib)
    n_complex, n_real = work_lengths(ib)
    cbuf, rbuf = np.zeros(n_complex, dtype=np.complex128), np.empty(n_real)
    for s in range(t, q.shape[0], n_threads):
        status[s] = run(st, state_derivatives, pm, w, st, forward, cbuf, rbuf, q_dir, q[s],
                        u[s], udot[s], tau[s], fext[s], d[0, s], d[1, s], d[2, s])


_CV = types.Array(types.complex128, 1, "C")


@stage("derivatives", (INTS, VECTOR, VECTOR, INTS, types.boolean, _CV, VECTOR, MATRIX, VECTOR,
                       VECTOR, VECTOR, VECTOR, MATRIX, MATRIX, MATRIX, MATRIX))
def state_derivatives(ib, fb, buf, st, forward, cbuf, rbuf, q_dir, q, u, udot, tau, fext, d_q,
                      d_u, d_x):
    """The derivatives at one state ``q`` (nq,), ``u``, ``udot``, ``tau`` (nu,), ``fext``
    (n × 6) in the tangent directions of ``q_dir`` (nq × nu, ``∂q/∂δ`` but for the
    quaternion joints' blocks, which the configuration gives, ``_tangent_directions``), into
    ``d_q``, ``d_u``, ``d_x`` (nu × nu each): with ``forward`` False ``∂τ/∂δ``, ``∂τ/∂u``
    and ``M`` of inverse dynamics at ``(q, u, u̇)`` (``tau`` unused); with ``forward`` True
    ``∂u̇/∂δ``, ``∂u̇/∂u`` and ``∂u̇/∂τ`` of forward dynamics at ``(q, u, τ)``, its
    accelerations solved for and written into ``udot`` (its entries need only be finite);
    by complex steps and tangent sweeps of the stages (module notes), which it calls through
    the table ``st``.  ``cbuf``, ``rbuf``: the scratch (complex and real, of the lengths
    :func:`work_lengths` gives), carved into a :class:`ComplexWork`.  Returns −1,
    :data:`~flexdyn.engine.layout.INVALID`, :data:`~flexdyn.engine.layout.OVERFLOW` or 0 (the
    mass matrix is singular)."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    if not (valid_state(pm, q, u, udot, fext, w.q_n) and finite(tau)):
        return INVALID
    cw = carve_work(ib, cbuf, rbuf)
    _tangent_directions(pm.ints, w.q_n, q_dir, cw.Dq)
    factored = _complex_derivatives(st, pm, w, cw, forward, cw.Dq, u, udot, tau, fext, d_q,
                                    d_u, cw.L)
    return _finish(pm, forward, factored, cw.L, tau, cw.tc, d_q, d_u, d_x)


@entry_point
def derivatives_rigid_tree(ib, fb, forward, t, n_threads, q, u, udot, tau, fext, d, status):
    """:func:`derivatives` of a rigid tree on one-dof joints
    (:func:`~flexdyn.engine.rigid_tree.is_rigid_tree`; ``δ = q``) by the analytic sweeps of
    :func:`rigid_tree_derivatives`; with ``forward`` the accelerations are solved for and
    written into ``udot[s]`` (its entries need only be finite)."""
    pm = unpack(ib, fb)
    rw = _rigid_work(pm.ints.shape[0], q.shape[1], u.shape[1])
    tc = np.empty(u.shape[1], dtype=np.complex128)
    for s in range(t, q.shape[0], n_threads):
        status[s] = _rigid_state(pm, rw, tc, forward, q[s], u[s], udot[s], tau[s], fext[s],
                                 d[0, s], d[1, s], d[2, s])


@entry_point
def derivatives_rigid_tree_one(ib, fb, forward, q, u, udot, tau, fext, d):
    """:func:`derivatives_rigid_tree` of one state: ``q`` (nq,), ``u``, ``udot``, ``tau``
    (nu,), ``fext`` (n × 6) into ``d`` (3 × nu × nu); returns its status (the call of one
    state from Python makes no batch of one)."""
    pm = unpack(ib, fb)
    rw = _rigid_work(pm.ints.shape[0], q.shape[0], u.shape[0])
    tc = np.empty(u.shape[0], dtype=np.complex128)
    return _rigid_state(pm, rw, tc, forward, q, u, udot, tau, fext, d[0], d[1], d[2])


@helper
def _rigid_state(pm, rw, tc, forward, q, u, udot, tau, fext, d_q, d_u, d_x):
    """The status of the rigid tree's derivatives at one state, into ``d_q``, ``d_u``,
    ``d_x`` (:func:`derivatives_rigid_tree`); ``rw``, ``tc`` the scratch."""
    if not (valid_state(pm, q, u, udot, fext, rw.q_n) and finite(tau)):
        return INVALID
    factored = rigid_tree_derivatives(pm, rw, u, udot, tau, fext, forward, d_q, d_u)
    return _finish(pm, forward, factored, rw.L, tau, tc, d_q, d_u, d_x)


class ComplexWork(NamedTuple):
    """The scratch of :func:`state_derivatives` (``n`` bodies, at most ``M`` modes each, ``N``
    nodes), carved from a complex and a real buffer (:func:`carve_work`)."""

    wc: Work  # the workspace in complex numbers
    J: np.ndarray  # (n, M + 6, M + 6) each body's velocity slopes, by column (_velocity_slopes)
    K: np.ndarray  # (n, 2, 6) the axes of each body's rates along twists (_rate_axes)
    Ro: np.ndarray  # (n, 11, 6) each body's rate terms for its seeds (_rate_terms)
    Hd: np.ndarray  # (n,) 1 where a body's joint has a rate term Ḣ* β (_rate_terms), else 0
    P: np.ndarray  # (n, 6, M) their slopes in the parent's modal rates (_parent_rate_slopes)
    t: np.ndarray  # (20, 6) real scratch
    g: np.ndarray  # (M + 6,) the slope of a body's own forces in its modes (_own_force_slope)
    Ka: np.ndarray  # (n, 6, M + 6) the slopes of each body's rates in its own (_own_rate_slopes)
    Y: np.ndarray  # (N, 18, 6) the terms of a full body's nodes at the state (_full_node_states)
    nodes: np.ndarray  # (N,) 1 at the nodes whose frames a mode's step carries (_attach_nodes)
    S: np.ndarray  # (max(6, M) + 1, M) real scratch: frame slopes, the geometric tangent
    dV: np.ndarray  # (n, M + 6, nu) the tangents of the velocities (Eq 11), by direction
    dA: np.ndarray  # (n, M + 6, nu) of the modal accelerations (Eq 24)
    dF: np.ndarray  # (n, M + 6, nu) of the modal forces (Eqs 24, 36)
    Sd: np.ndarray  # (n, 18, nu) the seeds of a parent's modes in its children (_child_seed)
    S2: np.ndarray  # (M + 6, 6) real scratch: an attach map's slope
    X: np.ndarray  # (3, 6, nu) real scratch of the tangent sweeps
    dt: np.ndarray  # (nu,) real scratch
    qc: np.ndarray  # (nq,) the complex configuration
    Dq: np.ndarray  # (nq, nu) the tangent directions ∂q/∂δ at the state (_tangent_directions)
    uc: np.ndarray  # (nu,) the complex rates
    tc: np.ndarray  # (nu,) the complex generalized forces
    L: np.ndarray  # (nu, nu) M, then its Cholesky factor (forward)


@helper
def _tangent_directions(ints, q_n, fixed, out):
    """``out = ∂q/∂δ`` (nq × nu) at the validated configuration ``q_n`` (its quaternions of
    unit norm): ``fixed`` (:meth:`flexdyn.tangent.TangentCoordinates.directions`: the
    identity on ordinary coordinates and modes) with the blocks of the quaternion joints'
    charts (:mod:`flexdyn.tangent`): ``∂Q/∂e = Q ⊗ [0, e] / 2`` (4 × 3, the rotation vector
    ``e`` in the joint's child frame) and a free joint's ``∂p/∂ρ = R(Q)``."""
    copy(fixed, out)
    for i in range(ints.shape[0]):
        code = ints[i, JCODE]
        if code != SPHERICAL and code != FREE:
            continue
        qs, us = ints[i, QS], ints[i, US]
        w, x, y, z = 0.5 * q_n[qs], 0.5 * q_n[qs + 1], 0.5 * q_n[qs + 2], 0.5 * q_n[qs + 3]
        D = out[qs:qs + 4, us:us + 3]
        D[0, 0], D[0, 1], D[0, 2] = -x, -y, -z
        D[1, 0], D[1, 1], D[1, 2] = w, -z, y
        D[2, 0], D[2, 1], D[2, 2] = z, w, -x
        D[3, 0], D[3, 1], D[3, 2] = -y, x, w
        if code == FREE:
            quat_rot_kernel(q_n[qs], q_n[qs + 1], q_n[qs + 2], q_n[qs + 3],
                            out[qs + 4:qs + 7, us + 3:us + 6])


@inlined
def _work_layout(ib):
    """``(shapes, offsets)``: the shapes of :class:`ComplexWork`'s real fields, in order,
    and their offsets in the real buffer (one more: its length)."""
    n, M, N, nu, nq = ib[0], ib[1], ib[2], ib[3], ib[4]
    s = M + 6
    shapes = ((n, s, s), (n, 2, 6), (n, 11, 6), (n,), (n, 6, M), (20, 6), (s,), (n, 6, s),
              (N, 18, 6), (N,), (max(6, M) + 1, M), (n, s, nu), (n, s, nu), (n, s, nu),
              (n, 18, nu), (s, 6), (3, 6, nu), (nu,), (nq, nu), (nu, nu))
    offsets = prefix_sums((n * s * s, n * 12, n * 66, n, n * 6 * M, 120, s, n * 6 * s, N * 108,
                           N, (max(6, M) + 1) * M, n * s * nu, n * s * nu, n * s * nu,
                           n * 18 * nu, s * 6, 18 * nu, nu, nq * nu, nu * nu))
    return shapes, offsets


@inlined
def work_lengths(ib):
    """``(complex, real)``: the lengths of the buffers that :func:`carve_work` divides for the
    packed model of integers ``ib``."""
    return workspace_length(ib) + ib[4] + 2 * ib[3], _work_layout(ib)[1][-1]


@inlined
def carve_work(ib, cbuf, rbuf):
    """A :class:`ComplexWork` as views of ``cbuf`` (complex) and ``rbuf`` (real), of the
    lengths of :func:`work_lengths`; allocates nothing (inlined, so the views count no
    references, as :func:`~flexdyn.engine.layout.carve`)."""
    d, o = _work_layout(ib)
    lw, nu, nq = workspace_length(ib), ib[3], ib[4]
    return ComplexWork(carve(ib, cbuf[:lw]), view(rbuf, o[0], d[0]), view(rbuf, o[1], d[1]),
                       view(rbuf, o[2], d[2]), view(rbuf, o[3], d[3]), view(rbuf, o[4], d[4]),
                       view(rbuf, o[5], d[5]), view(rbuf, o[6], d[6]), view(rbuf, o[7], d[7]),
                       view(rbuf, o[8], d[8]), view(rbuf, o[9], d[9]), view(rbuf, o[10], d[10]),
                       view(rbuf, o[11], d[11]), view(rbuf, o[12], d[12]),
                       view(rbuf, o[13], d[13]), view(rbuf, o[14], d[14]),
                       view(rbuf, o[15], d[15]), view(rbuf, o[16], d[16]),
                       view(rbuf, o[17], d[17]), view(cbuf, lw, (nq,)), view(rbuf, o[18], d[18]),
                       view(cbuf, lw + nq, (nu,)), view(cbuf, lw + nq + nu, (nu,)),
                       view(rbuf, o[19], d[19]))


class RigidWork(NamedTuple):
    """The scratch of :func:`rigid_tree_derivatives` (``n`` bodies), one allocation."""

    R0: np.ndarray  # (n, 3, 3) the pose (R0, p0) of F_i in inertial coordinates
    p0: np.ndarray  # (n, 3)
    Yb: np.ndarray  # (n, 6, 6) the body's inertia in inertial coordinates
    Y: np.ndarray  # (n, 6, 6) its composite over the subtree
    Bc: np.ndarray  # (n, 6, 6) the composite of B (_coriolis_inertia)
    vec: np.ndarray  # (n, N_RIGID_VECTORS, 6) the rows _S, _V, … of each body
    L: np.ndarray  # (nu, nu) M, then its Cholesky factor (forward)
    q_n: np.ndarray  # (nq,) the validated configuration
    c: np.ndarray  # (nu,) c = ID(q, u, 0)
    S_j: np.ndarray  # (6, 6) a joint's motion subspace in its frames
    R3: np.ndarray  # (4, 3, 3) a body's pose in its parent's frame, and scratch
    T: np.ndarray  # (3, 3, 3) scratch of pose_congruence
    p3: np.ndarray  # (3, 3) a body's position in its parent's frame, and scratch
    v6: np.ndarray  # (3, 6) a_g, h and scratch


@allocating_helper
def _rigid_work(n, nq, nu):
    """A :class:`RigidWork` carved from one buffer."""
    o = prefix_sums((n * 9, n * 3, n * 36, n * 36, n * 36, n * 6 * N_RIGID_VECTORS, nu * nu,
                     nq, nu, 36, 36, 27, 9, 18))
    buf = np.empty(o[-1])
    return RigidWork(view(buf, o[0], (n, 3, 3)), view(buf, o[1], (n, 3)),
                     view(buf, o[2], (n, 6, 6)), view(buf, o[3], (n, 6, 6)),
                     view(buf, o[4], (n, 6, 6)), view(buf, o[5], (n, N_RIGID_VECTORS, 6)),
                     view(buf, o[6], (nu, nu)), view(buf, o[7], (nq,)), view(buf, o[8], (nu,)),
                     view(buf, o[9], (6, 6)), view(buf, o[10], (4, 3, 3)),
                     view(buf, o[11], (3, 3, 3)), view(buf, o[12], (3, 3)),
                     view(buf, o[13], (3, 6)))


@helper
def _finish(pm, forward, factored, L, tau, tc, d_q, d_u, d_x):
    """The status of one state from the inverse-dynamics derivatives ``d_q``, ``d_u`` and
    ``L`` (``M``, or with ``forward`` its Cholesky factor, ``factored`` False where ``M`` is
    singular): forward dynamics' by :func:`_forward_derivatives`, else ``d_x = M``."""
    if not factored:
        return 0
    if forward:
        _forward_derivatives(pm, L, tau, tc, d_q, d_u, d_x)
    else:
        copy(L, d_x)
    return -1 if finite(d_q) and finite(d_u) else OVERFLOW


@inlined
def _complex_derivatives(st, pm, w, cw, forward, q_dir, u, udot, tau, fext, d_q, d_u, Mass):
    """``∂τ/∂δ`` (``d_q``), ``∂τ/∂u`` (``d_u``) and ``M`` (``Mass``) of Eq 44 at
    ``(w.q_n, u, u̇)``, each direction by complex steps of what it moves and the tangent
    sweeps of the rest (module notes); with ``forward`` at the accelerations of forward
    dynamics under ``tau``, written into ``udot``, and ``Mass`` left as the Cholesky factor
    of ``M``: returns False when ``M`` is singular.  ``cw`` the scratch
    (:class:`ComplexWork`)."""
    ints, wc, qc, uc, dt = pm.ints, cw.wc, cw.qc, cw.uc, cw.dt
    n = ints.shape[0]
    run(st, stages.position, pm, w, w.q_n)  # M (Eqs 47/50), as kernels' mass entry
    run(st, stages.composite, pm, w, Mass)
    run(st, stages.velocity, pm, w, w.q_n, u, fext)
    if forward:
        udot[:] = 0.0
        rnea(pm, w, udot, True, dt)  # c = ID(q, u, 0)
        if not _solve_accelerations(pm, Mass, w.q_n, u, tau, dt, udot):
            return False
    rnea(pm, w, udot, True, dt)  # the state's α_m and (accumulated) f_m
    copy(w.flat, wc.flat)  # the state's terms: each direction replaces what it moves
    copy(w.q_n, qc)
    copy(u, uc)
    ruthless = rates_in_products(ints, u, w.u_nl)  # (w.u_nl as the velocity stage left it)
    V, Vc = (w.V_nl, wc.V_nl) if ruthless else (w.V_m, wc.V_m)
    _velocity_slopes(pm, w, wc, cw.J, cw.t, qc, uc, fext, V, Vc)
    for i in range(n):
        _rate_axes(ints, w.Hcal, w.Q, w.fE, w.u_nl, i, cw.K[i])
        if _on_full_node(ints, i):
            pa, pn = ints[i, PARENT], ints[i, PN]
            _parent_rate_slopes(ints[pa, TK], ints[pa, MODES], w.fth[pa, pn], pm.Pi_r[pa, pn],
                                w.fE[pa, pn], w.A[i], V[pa], w.u_nl[ints[pa, US] + ints[pa, NJ]:],
                                cw.P[i], wc.t_X, wc.t_tip)
    _rate_terms(pm, w, cw, V)
    _coordinate_directions(pm, w, cw, q_dir, udot, fext, V, Vc, d_q)
    _rate_directions(pm, w, cw, V, d_u)
    return True


@helper
def _coordinate_directions(pm, w, cw, q_dir, udot, fext, V, Vc, d_q):
    """``d_q = ∂τ/∂δ`` (nu × nu) at the state in ``w`` and ``cw`` (:func:`_complex_derivatives`):
    each direction's seeds (:func:`_seed`) after the position terms it moves, then one
    tangent sweep of all of them (:func:`_tangent_sweep`).  ``V``, ``Vc`` the velocities
    in the products."""
    ints, wc, qc, h = pm.ints, cw.wc, cw.qc, COMPLEX_STEP
    d_q[:, :] = 0.0
    _zero_tangents(cw)
    for b in range(ints.shape[0]):  # δ_j a coordinate of body b: its position terms
        qs, nqj, us, nj = ints[b, QS], ints[b, NQJ], ints[b, US], ints[b, NJ]
        nq_b, nu_b = nqj + ints[b, MODES], nj + ints[b, MODES]
        sloped = _sloped(ints, b)
        _attach_nodes(ints, b, not sloped, cw.nodes)
        if ints[b, KIND] == FULL and ints[b, MODES] > 0:  # (sloped, or its children's seeds)
            m = ints[b, MODES]
            _full_node_states(ints[b, TK], m, ints[b, NN], pm.node_m[b], pm.node_I[b],
                              pm.Pi_r[b], w.fR[b], w.fp[b], w.fE[b], w.fth[b],
                              w.u_nl[us + nj:us + nj + m], V[b, m:m + 6], w.alpha[b], cw.Y,
                              cw.t, wc.t_X)
        for j in range(us, us + nu_b):
            unit = True  # the direction the unit step of one mode (as the charts give)
            for k in range(qs, qs + nq_b):
                qc[k] = complex(w.q_n[k], h * q_dir[k, j])
                unit = unit and q_dir[k, j] == (1.0 if k - qs == j - us + nqj - nj else 0.0)
            own = j >= us + nj
            stepped = own and unit and ints[b, KIND] == FULL and _frame_steps(
                ints[b, TK], ints[b, NN], ints[b, MODES], j - us - nj, pm.Pi_r[b], pm.Pi_t[b],
                w.fR[b], w.fp[b], w.fE[b], w.fth[b], wc.fR[b], wc.fp[b], wc.fE[b], wc.fth[b],
                cw.nodes, cw.S)
            _own_position_terms(pm, qc, wc, b, own and not stepped, own and not sloped, own)
            if own and sloped:
                _own_force_slope(pm, w, wc, cw, b, j - us - nj if stepped else -1)
            _seed(pm, w, cw, V, Vc, b, own, own and sloped, j, udot, fext, d_q)
        for k in range(qs, qs + nq_b):
            qc[k] = w.q_n[k]
        _restore_position_terms(ints, w, wc, b)
    _tangent_sweep(ints, w.A, w.phi, w.M_m, w.Hcal, cw.J, cw.K, cw.P, cw.Sd, cw.dV, cw.dA,
                   cw.dF, cw.X, d_q)


@helper
def _rate_directions(pm, w, cw, V, d_u):
    """``d_u = ∂τ/∂u`` (nu × nu) at the state in ``w`` and ``cw``: each rate's seeds in
    real arithmetic (:func:`_rate_seed`), then one tangent sweep of all of them."""
    ints = pm.ints
    d_u[:, :] = 0.0
    _zero_tangents(cw)
    for b in range(ints.shape[0]):  # u_j a rate of body b
        _own_rate_slopes(pm, w, cw.wc, cw, V, b)
        for j in range(ints[b, US], ints[b, US] + ints[b, NJ] + ints[b, MODES]):
            _rate_seed(ints, w, cw, b, j, d_u)
            _passive_slope(pm, cw.qc, cw.uc, b, j, j, d_u)
    _tangent_sweep(ints, w.A, w.phi, w.M_m, w.Hcal, cw.J, cw.K, cw.P, cw.Sd, cw.dV, cw.dA,
                   cw.dF, cw.X, d_u)


@helper
def _zero_tangents(cw):
    """``cw.dV``, ``cw.dA``, ``cw.dF``, ``cw.Sd`` to zero: a block's columns before its
    seeds."""
    cw.dV[:] = 0.0
    cw.dA[:] = 0.0
    cw.dF[:] = 0.0
    cw.Sd[:] = 0.0


# The steps of one direction that take the packed model or the workspaces are inlined at
# their call sites: a call copies the headers of all their arrays (about 0.4 µs for the
# packed model, the workspace and the complex scratch), many times a direction's arithmetic.
# What is called from several sites with them (``_bias``: the body kernels' node sums) or
# once per state stays a call; the per-node and per-column kernels take plain arrays.
@inlined
def _own_position_terms(pm, qc, wc, b, frames, mass, modal):
    """The position terms in ``wc`` at ``qc`` that a coordinate of body ``b`` moves: its
    own, and with a mode (``modal``) the attach maps of its children, unless they are in
    ``wc`` already (:func:`_frame_steps`) its node frames (``frames``) and, unless its
    slope joins the body's own forces' (:func:`_own_force_slope`), Eq 23 (``mass``)."""
    body_position_terms(pm, qc, wc, b, frames, mass)
    if modal:
        for i in range(b + 1, pm.ints.shape[0]):
            if pm.ints[i, PARENT] == b:
                parent_attach_map(pm, wc, i)


@helper
def _frame_steps(tk, nn, m, k, Pi_r, Pi_t, R, p, E, theta, Rc, pc, Ec, thc, nodes, dE):
    """A full body's node frames (``nn``, the state's ``R``, ``p``, ``E``, ``theta``) at
    the unit complex step of its ``k``-th mode into ``Rc``, ``pc``, ``Ec``, ``thc`` in
    closed form (:func:`~flexdyn.engine.tip.node_frame_step`), those of the nodes marked in
    ``nodes`` (:func:`_attach_nodes`; the others keep the state's); False where its tip
    kinematics has none.  ``dE`` (6 × m) scratch."""
    for j in range(nn):
        if nodes[j] != 0.0 and not node_frame_step(tk, Pi_r[j], Pi_t[j], m, k, R[j], p[j], E[j],
                                            theta[j], COMPLEX_STEP, Rc[j], pc[j], Ec[j],
                                            thc[j], dE):
            return False
    return True


@helper
def _attach_nodes(ints, b, every, nodes):
    """``nodes`` (N,): 1 at the nodes of body ``b`` whose frames a step of its modes must
    carry in complex numbers, else 0: ``every`` node, or its own attach node and its
    children's (the rest move only Eq 23 and the bias, whose slope :func:`_own_force_slope`
    takes in closed form)."""
    nodes[:] = 1.0 if every else 0.0
    if ints[b, CN] >= 0:
        nodes[ints[b, CN]] = 1.0
    for i in range(b + 1, ints.shape[0]):
        if ints[i, PARENT] == b and ints[i, PN] >= 0:
            nodes[ints[i, PN]] = 1.0


@helper
def _restore_position_terms(ints, w, wc, b):
    """``wc``'s position terms of body ``b`` and its children's attach maps back to the
    state's in ``w``: the blocks that :func:`_own_position_terms` writes."""
    for x, y in ((w.fR, wc.fR), (w.fE, wc.fE)):
        copy(x[b], y[b])
    for x, y in ((w.fp, wc.fp), (w.fth, wc.fth), (w.M_m, wc.M_m), (w.Hcal, wc.Hcal),
                 (w.Q, wc.Q), (w.X_joint, wc.X_joint), (w.S, wc.S), (w.R_phi, wc.R_phi),
                 (w.phi, wc.phi), (w.R_nc, wc.R_nc)):
        copy(x[b], y[b])
    for x, y in ((w.p_phi, wc.p_phi), (w.p_nc, wc.p_nc)):
        copy(x[b], y[b])
    for i in range(b + 1, ints.shape[0]):
        if ints[i, PARENT] == b:
            copy(w.A[i], wc.A[i])
            copy(w.R_t[i], wc.R_t[i])
            copy(w.p_t[i], wc.p_t[i])


@helper
def _velocity_slopes(pm, w, wc, J, t, qc, uc, fext, V, Vc):
    """``J[i, c] = ∂ bias_i/∂x_c`` (the m + 6 entries of body ``i``'s bias, for ``x`` its
    modal rates ``η̇`` then its twist ``V``) at the state in ``w`` (real) and ``wc``: a
    body's bias is a function of its own ``η``, ``η̇`` and twist alone, so a direction that
    moves only its rates changes it by ``J[i]`` times their change.  A full body's
    analytically (:func:`_full_velocity_slopes`, less its inertia invariants'), any other's
    by complex steps of :func:`~flexdyn.engine.terms.body_bias`, a modal rate stepped in ``u``
    (damping) and ``u_nl`` (the velocity products) together: a ruthless body's bias does not
    read the latter.  ``V``, ``Vc`` the velocities in the products (``w.V_nl`` or ``w.V_m``,
    and ``wc``'s); ``t`` (≥ 12 × 6) real scratch."""
    ints, h = pm.ints, COMPLEX_STEP
    for i in range(ints.shape[0]):
        m, s = ints[i, MODES], ints[i, US] + ints[i, NJ]
        if ints[i, KIND] == FULL and ints[i, MI] == 0:
            _full_velocity_slopes(ints[i, TK], m, ints[i, NN], pm.node_m[i], pm.node_I[i],
                                  pm.M_rigid[i], pm.Pi_r[i], pm.C[i], w.fR[i], w.fp[i],
                                  w.fE[i], w.fth[i], w.u_nl[s:s + m], V[i, m:m + 6], J[i],
                                  t, wc.t_X)
            continue
        for c in range(m + 6):
            x = uc if c < m else Vc[i]
            k = s + c if c < m else c
            v, v_nl = x[k], wc.u_nl[s + c] if c < m else 0.0
            x[k] = complex(v.real, h)
            if c < m:
                wc.u_nl[s + c] = complex(v_nl.real, h)
            _bias(pm, qc, uc, fext, wc, Vc, i)
            for r in range(m + 6):
                J[i, c, r] = wc.bias[i, r].imag * _PER_STEP
            x[k] = v
            if c < m:
                wc.u_nl[s + c] = v_nl


@helper
def _full_velocity_slopes(tk, m, nn, node_m, node_I, M_rigid, Pi_r, C, fR, fp, fE, fth,
                          etad, V, J, t, tc):
    """``J[c] = ∂b/∂x_c`` (m + 6 columns of m + 6) of a full body's bias
    (:func:`~flexdyn.engine.terms.body_bias`: the full model's ``b_m`` and the damping
    ``C η̇``) in its modal rates and twist ``x = [η̇; V]``.  With the node twist
    ``V_j = B_j x``, ``w_j = E_j η̇``, the acceleration
    ``a_j = [J̇(θ) θ̇; −w_r × w_t] + V_j × w_j`` and
    ``y_j = M_s a_j + V_j ×* M_s V_j``, ``b_m = V ×* M_rigid V + Σ_j B_jᵀ y_j`` changes along
    ``x_c`` by ``δV ×* M_rigid V + V ×* M_rigid δV`` and ``Σ_j B_jᵀ δy_j`` with
    ``δV_j = B_j x_c``, ``δw_j = E_j δη̇`` and
    ``δa_j = [G_j Π_r δη̇; −(δw_r × w_t + w_r × δw_t)] + δV_j × w_j + V_j × δw_j``,
    ``δy_j = M_s δa_j + δV_j ×* M_s V_j + V_j ×* M_s δV_j``; ``G_j = ∂(J̇ θ̇)/∂θ̇`` (3 × 3,
    :func:`_rate_jacobian`).  ``t``
    (≥ 12 × 6) real and ``tc`` (≥ 6 × ≥ 3) complex scratch."""
    s = m + 6
    Vj, wj, hj, dV, dw, da, dy, e = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
    G = t[8:11, :3]
    J[:s, :s] = 0.0
    mv(M_rigid, V, hj, False)  # V ×* M_rigid V
    for c in range(6):
        e[:] = 0.0
        e[c] = 1.0
        cross_force(e, hj, J[m + c, m:s], True)
        cross_force(V, M_rigid[:, c], J[m + c, m:s], True)
    for k in range(m):  # C η̇
        for r in range(m):
            J[k, r] = C[r, k]
    for j in range(nn):
        if massless_node(node_m, node_I, j):
            continue
        R, p, E, I, mj = fR[j], fp[j], fE[j], node_I[j], node_m[j]  # noqa: E741
        node_twist(R, p, E, m, etad, V, Vj)
        for r in range(6):
            x = 0.0
            for k in range(m):
                x += E[r, k] * etad[k]
            wj[r] = x
        _inertia_times(I, mj, Vj, hj)
        _rate_jacobian(tk, fth[j], Pi_r[j], etad, m, False, G, t[11, :3], tc)
        for c in range(s):
            if c < m:
                for r in range(6):
                    dV[r] = dw[r] = E[r, c]
                for r in range(3):
                    da[r] = (G[r, 0] * Pi_r[j, 0, c] + G[r, 1] * Pi_r[j, 1, c]
                             + G[r, 2] * Pi_r[j, 2, c])
                _product_slope(wj, dw, da)
                cross_motion(Vj, dw, da, True)
            else:
                e[:] = 0.0
                e[c - m] = 1.0
                node_twist(R, p, E, 0, etad, e, dV)
                da[:] = 0.0
            cross_motion(dV, wj, da, True)
            _inertia_times(I, mj, da, dy)  # M_s δa + δV ×* M_s V_j + V_j ×* M_s δV
            cross_force(dV, hj, dy, True)
            _inertia_times(I, mj, dV, e)
            cross_force(Vj, e, dy, True)
            node_wrench(R, p, E, m, dy, J[c])


@helper
def _product_slope(w, dw, out):
    """``out[3:6] = −(δw_r × w_t + w_r × δw_t)``: the slope of the translational rows
    ``−w_r × w_t`` of a node's ``Ė η̇`` (:func:`~flexdyn.engine.tip.node_twist_rate`) along
    ``δw`` (6,) of ``w = E η̇``."""
    out[3] = -(dw[1] * w[5] - dw[2] * w[4] + w[1] * dw[5] - w[2] * dw[4])
    out[4] = -(dw[2] * w[3] - dw[0] * w[5] + w[2] * dw[3] - w[0] * dw[5])
    out[5] = -(dw[0] * w[4] - dw[1] * w[3] + w[0] * dw[4] - w[1] * dw[3])


@helper
def _inertia_times(I, mj, x, out):  # noqa: E741
    """``out = M_s x = [I x_r; m x_t]``: a node's spatial inertia times a twist."""
    for r in range(3):
        out[r] = I[r, 0] * x[0] + I[r, 1] * x[1] + I[r, 2] * x[2]
        out[3 + r] = mj * x[3 + r]


@helper
def _rate_jacobian(tk, theta, Pi_r, etad, m, angles, G, d, tc):
    """``G = ∂(J̇(θ) θ̇)/∂θ̇`` (or with ``angles`` ``∂/∂θ``; 3 × 3) at ``θ̇ = Π_r η̇`` (into
    ``d`` (3,); :func:`~flexdyn.engine.tip.tip_rate_slopes`); ``tc`` (≥ 6 × ≥ 3) complex
    scratch."""
    for r in range(3):
        x = 0.0
        for k in range(m):
            x += Pi_r[r, k] * etad[k]
        d[r] = x
    tip_rate_slopes(tk, theta, d, angles, G, tc)


@inlined
def _own_force_slope(pm, w, wc, cw, b, k):
    """``cw.g`` (m + 6): the slope of full body ``b``'s own forces ``M_m α + bias`` (Eq 23,
    the full model's ``b_m`` and the elastic forces ``K η`` and the geometric force) along
    a direction of its modes whose coordinates are stepped (``cw.qc``), the unit step of
    its ``k``-th mode (its node frames' slopes in closed form) or, ``k`` < 0, any other
    (their complex steps in ``cw.wc``), at the state's ``α``, ``η̇`` and twist (as in the
    products; its nodes' terms in ``cw.Y``, :func:`_full_node_states`): with those held the
    direction moves nothing else of them (:func:`_full_force_slope`), and the slopes of its
    velocity-dependent terms join this one (:func:`_body_seed`).  Not for a consistent
    mass (its inertia invariants move too)."""
    ints = pm.ints
    m = ints[b, MODES]
    qs = ints[b, QS] + ints[b, NQJ]
    g = cw.g
    nj, us = ints[b, NJ], ints[b, US]
    _full_force_slope(m, k, ints[b, NN], pm.node_m[b], pm.node_I[b], pm.Pi_r[b], w.fR[b],
                      w.fp[b], w.fE[b], wc.fR[b], wc.fp[b], wc.fE[b], wc.fth[b],
                      w.u_nl[us + nj:us + nj + m], w.alpha[b], cw.Y, g, cw.t, cw.S[:6, :m],
                      cw.S[cw.S.shape[0] - 1, :m])
    G = cw.S[:m, :m]
    G[:, :] = 0.0
    if ints[b, GS] > 0:
        geometric_tangent(pm, b, m, w.q_n[qs:qs + m], G)
    for r in range(m):
        x = 0.0
        for c in range(m):
            x += (pm.K[b, r, c] + G[r, c]) * cw.qc[qs + c].imag
        g[r] += x * _PER_STEP


@helper
def _full_node_states(tk, m, nn, node_m, node_I, Pi_r, fR, fp, fE, fth, etad, V, alpha, Y,
                      t, tc):
    """The terms of a full body's nodes at the state that :func:`_full_force_slope` takes,
    into ``Y`` (N × 18 × 6): for node ``j`` with ``x = [η̇; V]`` (``etad``, the twist ``V``),
    the rows ``V_j = B_j x``, ``w_j = E_j η̇``,
    ``y_j = M_s (B_j α + a_j) + V_j ×* M_s V_j`` with ``a_j = Ė_j η̇ + V_j × w_j``,
    ``M_s V_j``, ``G = ∂(J̇(θ) θ̇)/∂θ`` (3 × 3, :func:`~flexdyn.engine.tip.tip_rate_slopes`),
    the slopes ``∂(J_r θ̇)/∂θ``, ``∂(J_r Π_r α_m)/∂θ`` and ``∂(J_rᵀ n_j)/∂θ`` (3 × 3 each,
    ``y_j = [n_j; f_j]``; :func:`~flexdyn.engine.tip.rotation_map_slope`, not for the Euler
    angles), ``E_r α_m`` and ``B_j α``; ``t`` (20 × 6) real and ``tc`` (≥ 6 × ≥ 3) complex
    scratch."""
    z, aj = t[0], t[1]
    for j in range(nn):
        R, p, E, I, mj = fR[j], fp[j], fE[j], node_I[j], node_m[j]  # noqa: E741
        Vj, wj, y, hV, Aj = Y[j, 0], Y[j, 1], Y[j, 2], Y[j, 3], Y[j, 17]
        node_twist(R, p, E, m, etad, V, Vj)
        node_twist_rate(tk, fth[j], Pi_r[j], E, etad, m, aj, wj, t[16:20, :3])
        d = t[16, :3]  # θ̇ = Π_r η̇ (node_twist_rate's)
        tip_rate_slopes(tk, fth[j], d, True, Y[j, 4:7, :3], tc)
        if massless_node(node_m, node_I, j):  # (the kinematic rows for the child seeds)
            continue
        cross_motion(Vj, wj, aj, True)
        node_twist(R, p, E, m, alpha[:m], alpha[m:m + 6], Aj)
        for r in range(6):
            z[r] = Aj[r] + aj[r]
        _inertia_times(I, mj, z, y)
        _inertia_times(I, mj, Vj, hV)
        cross_force(Vj, hV, y, True)
        rotation_map_slope(tk, fth[j], d, False, Y[j, 7:10, :3])
        for r in range(3):
            x = 0.0
            for k in range(m):
                x += Pi_r[j, r, k] * alpha[k]
            z[r] = x
            x = 0.0
            for k in range(m):
                x += E[r, k] * alpha[k]
            Y[j, 16, r] = x
        rotation_map_slope(tk, fth[j], z, False, Y[j, 10:13, :3])
        rotation_map_slope(tk, fth[j], y, True, Y[j, 13:16, :3])


@helper
def _full_force_slope(m, k, nn, node_m, node_I, Pi_r, fR, fp, fE, cR, cp, cE, cth, etad,
                      alpha, Y, g, t, D, Dy):
    """``g`` (m + 6) = the slope of a full body's ``M_m α + b_m`` (Eq 23,
    :func:`~flexdyn.engine.terms._full_modal_bias`) along a direction of its modes at fixed
    ``α``, ``η̇`` (``etad``) and twist: from the nodes' terms at the state ``Y``
    (:func:`_full_node_states`) and the slopes of the node frames ``R``, ``p``, ``E``
    (``fR``, ``fp``, ``fE``) and ``θ`` along the unit step of its ``k``-th mode in closed
    form or, ``k`` < 0, the imaginary parts over the step of their complex steps (``cR``,
    …, ``cth``).

    A node frame moves by ``ξ = [e; ε]`` in its own coordinates (``δR = R ẽ``,
    ``δp = R ε``; for the ``k``-th mode ``ξ = E_j e_k``), so that ``δX_j = −ξ̂ X_j`` for the
    rigid columns of ``B_j = [E_j X_j]``, and ``δE_j = D − ξ̂ E_j`` with
    ``D = [δE_r + ẽ E_r; ε̃ E_r]`` (``δE_t = −ẽ E_t``; ``δE_r x = ∂(J_r Π_r x)/∂θ δθ``,
    ``δθ = Π_r e_k``).  Then ``δ(B_j x) = D x_m − ξ × B_j x``,
    ``δ(B_jᵀ y) = B_jᵀ (ξ ×* y) + [Dᵀ y; 0]``, and node ``j``'s force ``B_jᵀ y_j`` changes
    by ``B_jᵀ (δy_j + ξ ×* y_j) + [Dᵀ y_j; 0]`` (:func:`_node_force_slope`), with
    ``Dᵀ y = Π_rᵀ ∂(J_rᵀ n)/∂θ δθ − E_rᵀ (ξ ×* y)_ω``.  ``t`` (20 × 6), ``D`` (6 × m) and
    ``Dy`` (m,) real scratch."""
    xi, De, Da, dth, f = t[6], t[7], t[8], t[10, :3], t[11]
    g[:m + 6] = 0.0
    for j in range(nn):
        if massless_node(node_m, node_I, j):
            continue
        R, p, E, y = fR[j], fp[j], fE[j], Y[j, 2]
        if k >= 0:
            wr, ur = Y[j, 1], Y[j, 16]
            for r in range(6):
                xi[r] = E[r, k]
            for r in range(3):
                dth[r] = Pi_r[j, r, k]
            _closed_frame_slope(Y[j, 7:10, :3], Y[j, 10:13, :3], Y[j, 13:16, :3], dth, xi,
                                wr, ur, y, Pi_r[j], E, m, De, Da, Dy, f)
        else:
            _stepped_frame_slope(R, E, cR[j], cp[j], cE[j], cth[j], m, etad, alpha, y, xi, dth,
                                 De, Da, Dy, D, f)
        _node_force_slope(node_I[j], node_m[j], R, p, E, m, Y[j], xi, dth, De, Da, Dy, g, t)


@helper
def _closed_frame_slope(Ne, Na, Tn, dth, xi, wr, ur, y, Pi_r, E, m, De, Da, Dy, f):
    """``D η̇``, ``D α_m`` (6,) and ``Dᵀ y`` (m,) of :func:`_full_force_slope` in closed form:
    ``D x_m = [∂(J_r Π_r x_m)/∂θ δθ + e × u; ε × u]`` with ``u = E_r x_m`` (``wr`` for
    ``η̇``, ``ur`` for ``α_m``; the slopes ``Ne``, ``Na`` at the state), and
    ``Dᵀ y = Π_rᵀ Tn δθ − E_rᵀ (ξ ×* y)_ω`` (``Tn = ∂(J_rᵀ n)/∂θ``); ``f`` (6,) scratch."""
    for r in range(3):
        De[r] = Ne[r, 0] * dth[0] + Ne[r, 1] * dth[1] + Ne[r, 2] * dth[2]
        Da[r] = Na[r, 0] * dth[0] + Na[r, 1] * dth[1] + Na[r, 2] * dth[2]
        De[3 + r] = Da[3 + r] = 0.0
    _frame_cross(xi, wr, De)
    _frame_cross(xi, ur, Da)
    cross_force(xi, y, f, False)
    a0 = Tn[0, 0] * dth[0] + Tn[0, 1] * dth[1] + Tn[0, 2] * dth[2]
    a1 = Tn[1, 0] * dth[0] + Tn[1, 1] * dth[1] + Tn[1, 2] * dth[2]
    a2 = Tn[2, 0] * dth[0] + Tn[2, 1] * dth[1] + Tn[2, 2] * dth[2]
    for q in range(m):
        Dy[q] = (Pi_r[0, q] * a0 + Pi_r[1, q] * a1 + Pi_r[2, q] * a2
                 - E[0, q] * f[0] - E[1, q] * f[1] - E[2, q] * f[2])


@helper
def _frame_cross(xi, u, out):
    """``out += ξ × [u; 0] = [e × u; ε × u]`` for ``ξ = [e; ε]`` and ``u`` (3,)."""
    out[0] += xi[1] * u[2] - xi[2] * u[1]
    out[1] += xi[2] * u[0] - xi[0] * u[2]
    out[2] += xi[0] * u[1] - xi[1] * u[0]
    out[3] += xi[4] * u[2] - xi[5] * u[1]
    out[4] += xi[5] * u[0] - xi[3] * u[2]
    out[5] += xi[3] * u[1] - xi[4] * u[0]


@helper
def _stepped_frame_slope(R, E, cR, cp, cE, cth, m, etad, alpha, y, xi, dth, De, Da, Dy, D,
                         f):
    """``ξ``, ``δθ``, ``D η̇``, ``D α_m`` (6,) and ``Dᵀ y`` (m,) of :func:`_full_force_slope`
    from the complex steps of a node frame (``cR``, ``cp``, ``cE``, ``cth``): ``ẽ = Rᵀ δR``,
    ``ε = Rᵀ δp``, ``D = δE + ξ̂ E`` (``D`` (6 × m) scratch); ``f`` (6,) scratch."""
    for r in range(3):
        f[r] = cp[r].imag * _PER_STEP
        dth[r] = cth[r].imag * _PER_STEP
    for r in range(3):  # e from Rᵀ δR (skew), ε = Rᵀ δp
        c1, c2 = (r + 1) % 3, (r + 2) % 3
        x = 0.0
        for a in range(3):
            x += R[a, c2] * cR[a, c1].imag
        xi[r] = x * _PER_STEP
        xi[3 + r] = R[0, r] * f[0] + R[1, r] * f[1] + R[2, r] * f[2]
    for q in range(m):
        for r in range(6):
            D[r, q] = cE[r, q].imag * _PER_STEP
        for r in range(6):
            f[r] = 0.0
        cross_motion(xi, E[:, q], f, True)
        for r in range(6):
            D[r, q] += f[r]
    for r in range(6):
        x = v = 0.0
        for q in range(m):
            x += D[r, q] * etad[q]
            v += D[r, q] * alpha[q]
        De[r] = x
        Da[r] = v
    for q in range(m):
        x = 0.0
        for r in range(6):
            x += D[r, q] * y[r]
        Dy[q] = x


@helper
def _node_force_slope(I, mj, R, p, E, m, Yj, xi, dth, De, Da, Dy, g, t):  # noqa: E741
    """``g += B_jᵀ (δy_j + ξ ×* y_j) + [Dᵀ y_j; 0]`` (m + 6; :func:`_full_force_slope`): with
    ``δV_j = D η̇ − ξ × V_j``, ``δ(B_j α) = D α_m − ξ × B_j α``, ``δw_j = D η̇ − ξ × w_j``,
    ``δa_j = [G δθ; −(δw_r × w_t + w_r × δw_t)] + δV_j × w_j + V_j × δw_j`` (``θ̇`` held)
    and ``δy_j = M_s (δ(B_j α) + δa_j) + δV_j ×* M_s V_j + V_j ×* M_s δV_j``; ``Yj`` the
    node's terms (:func:`_full_node_states`), ``t`` (≥ 16 × 6) real scratch."""
    Vj, wj, y, hV, Gt, Aj = Yj[0], Yj[1], Yj[2], Yj[3], Yj[4:7, :3], Yj[17]
    dV, dA, dw, da, dy, z = t[0], t[1], t[2], t[3], t[4], t[5]
    for r in range(6):
        dV[r] = dw[r] = De[r]
        dA[r] = Da[r]
    cross_motion(Vj, xi, dV, True)  # − ξ × V_j = V_j × ξ
    cross_motion(Aj, xi, dA, True)
    cross_motion(wj, xi, dw, True)
    for r in range(3):
        da[r] = Gt[r, 0] * dth[0] + Gt[r, 1] * dth[1] + Gt[r, 2] * dth[2]
    _product_slope(wj, dw, da)
    cross_motion(dV, wj, da, True)
    cross_motion(Vj, dw, da, True)
    for r in range(6):
        z[r] = dA[r] + da[r]
    _inertia_times(I, mj, z, dy)
    cross_force(dV, hV, dy, True)
    _inertia_times(I, mj, dV, z)
    cross_force(Vj, z, dy, True)
    cross_force(xi, y, dy, True)
    node_wrench(R, p, E, m, dy, g)
    for q in range(m):
        g[q] += Dy[q]


@inlined
def _seed(pm, w, cw, V, Vc, b, own, sloped, j, udot, fext, d_out):
    """Column ``j`` of ``cw.dV``, ``cw.dA``, ``cw.dF`` and of ``d_out`` (``δτ``, nu × nu)
    along a coordinate of body ``b`` (``own``: a mode) at ``(cw.qc, cw.uc, u̇)``, the
    position terms already in ``cw.wc``: ``b``'s velocities (Eq 11), modal accelerations
    and own modal forces (Eq 24) in real arithmetic (:func:`_body_seed`) along a joint
    coordinate whose joint has no rate term ``Ḣ* β`` and, with ``sloped``, a mode of a body
    of :func:`_sloped` (the slope of its own forces in ``cw.g``, :func:`_own_force_slope`),
    else by complex steps (:func:`_complex_body`),
    the slopes of its ``ℋ``, ``φ`` and ``A`` applied to the state's forces
    (:func:`_operator_seed`) and its joint forces'; with a mode, its children's terms of
    the slopes of their attach maps (:func:`_child_seed`).  :func:`_tangent_sweep` then
    carries all columns over the tree.  ``V``, ``Vc`` the velocities in the products
    (``w``'s and ``cw.wc``'s)."""
    ints, wc = pm.ints, cw.wc
    if sloped or not (own or cw.Hd[b] != 0.0):
        m, us, nj, cn = ints[b, MODES], ints[b, US], ints[b, NJ], max(ints[b, CN], 0)
        _body_seed(m, nj, sloped, sloped and ints[b, CN] >= 0, wc.phi[b], wc.Hcal[b],
                   wc.X_joint[b], wc.R_nc[b], wc.p_nc[b], wc.fE[b, cn], wc.fth[b, cn], wc.t_6,
                   w.u_nl[us:us + nj + m], udot[us:us + nj + m], cw.Ro[b], cw.K[b, 0],
                   V[b, m:m + 6], cw.J[b], w.M_m[b], cw.g, cw.dV[b], cw.dA[b], cw.dF[b], j,
                   cw.t)
    else:
        a_g = cw.t[10]  # (the body kernels use the workspace's scratch)
        gravity_acceleration(pm, a_g)
        _complex_body(pm, w, cw, Vc, b, own, udot, fext, a_g, j)
        copy(V[b], Vc[b])  # the state's velocities and accelerations back
        copy(w.alpha[b], wc.alpha[b])
    _operator_seed(ints, w.f, wc, cw.dF, d_out, b, j)
    if own:
        for i in range(b + 1, ints.shape[0]):
            if ints[i, PARENT] == b:
                _child_seed(pm, w, wc, cw, V, i, j)
    _passive_slope(pm, cw.qc, cw.uc, b, j, -1, d_out)


@inlined
def _child_seed(pm, w, wc, cw, V, i, j):
    """Column ``j`` of ``cw.Sd[i]`` and of ``cw.dF[p]`` along a mode of body ``i``'s parent
    ``p``, which moves its attach map ``A`` (complex in ``wc``: ``δA`` its imaginary part
    over the step) and, on a full parent's node ``t``, the node's frame: the terms that the
    tangent sweep (:func:`_tangent_columns`) adds to ``δV_t = Aᵀ δV_m(p)``,
    ``δα_t = Aᵀ δα_m(p)`` and to the parent node's rate terms ``δ(ε_t + V_t × w_t)``:
    ``δAᵀ V_m(p)``, ``δAᵀ α_m(p)`` and, with ``θ̇_t = Π_r η̇_p`` held,
    ``[G δθ; −(δw_r × w_t + w_r × δw_t)] + V_t × δw_t`` (``w_t = E_t η̇_p``,
    ``δw_t = δE_t η̇_p``, ``G = ∂(J̇ θ̇)/∂θ``, :func:`~flexdyn.engine.tip.tip_rate_slopes`);
    and into ``δf_p`` the slope of ``A φ f_m(i)`` (the state's forces, Eqs 36, 41)."""
    ints = pm.ints
    pa, m = ints[i, PARENT], ints[i, MODES]
    mp = ints[pa, MODES]
    sd, dA, t = cw.Sd[i], cw.S2, cw.t
    for r in range(mp + 6):
        for c in range(6):
            dA[r, c] = wc.A[i, r, c].imag * _PER_STEP
    for c in range(6):
        x = y = 0.0
        for r in range(mp + 6):
            x += dA[r, c] * V[pa, r]
            y += dA[r, c] * w.alpha[pa, r]
        sd[c, j] = x
        sd[6 + c, j] = y
        sd[12 + c, j] = 0.0
    mv(w.phi[i], w.f[i, m:m + 6], t[0], False)  # δ(A φ) f = δA φ f
    for r in range(mp + 6):
        x = 0.0
        for c in range(6):
            x += dA[r, c] * t[0, c]
        cw.dF[pa, r, j] += x
    if _on_full_node(ints, i):  # (the parent's node terms in cw.Y, V_t in cw.Ro[i])
        pn, s = ints[i, PN], ints[pa, US] + ints[pa, NJ]
        _rate_term_slope(cw.Y[pn, 4:7, :3], wc.fE[pa, pn], wc.fth[pa, pn], w.u_nl[s:s + mp],
                         mp, cw.Y[pn, 1], sd[12:18, j], t[2])
        cross_motion(cw.Ro[i, 7], t[2], sd[12:18, j], True)


@helper
def _rate_term_slope(G, cE, cth, etad, m, w, out, dw):
    """``out`` (6,) = the slope of a node's ``Ė η̇`` (``w = E η̇``, ``θ̇ = Π_r η̇`` held)
    along a step that moves its frame (``cE``, ``cth``: their complex steps):
    ``[G δθ; −(δw_r × w_t + w_r × δw_t)]`` with ``G = ∂(J̇ θ̇)/∂θ`` (3 × 3,
    :func:`_rate_jacobian`) and ``δw = δE η̇`` into ``dw`` (6,)."""
    for r in range(6):
        v = 0.0
        for k in range(m):
            v += cE[r, k].imag * etad[k]
        dw[r] = v * _PER_STEP
    for r in range(3):
        out[r] = (G[r, 0] * cth[0].imag + G[r, 1] * cth[1].imag
                  + G[r, 2] * cth[2].imag) * _PER_STEP
    _product_slope(w, dw, out)


@inlined
def _passive_slope(pm, qc, uc, b, j, k, d_out):
    """Column ``j`` of ``d_out`` (``δτ``) less the slope of body ``b``'s joint forces
    (:func:`~flexdyn.engine.forces.passive_force_kernel`, a function of its own coordinates
    and rates) along a complex step of its coordinates in ``qc`` (``k`` < 0) or of its rate
    ``u_k`` (``uc`` real)."""
    ints = pm.ints
    if ints[b, JF] == 0:
        return
    qs, us = ints[b, QS], ints[b, US]
    for r in range(ints[b, NJ]):
        x = passive_force_kernel(pm.jforce[b, r], qc[qs + r],
                                 complex(uc[us + r].real, COMPLEX_STEP if us + r == k else 0.0))
        d_out[us + r, j] -= x.imag * _PER_STEP


@helper
def _own_rate_slopes(pm, w, wc, cw, V, b):
    """``cw.Ka[b]`` (6 × (n_j + m)): the slopes of body ``b``'s velocity-dependent
    acceleration (Eq 25, :func:`~flexdyn.engine.terms.body_rates`) in its own rates in the
    products at its twist held: in its joint's rates ``β``, ``(V − Q η̇) × H_F* e_k`` and
    ``X ∂(Ḣ* β)/∂β_k`` (by complex steps of
    :func:`~flexdyn.engine.terms.joint_rate_term`: the rate terms of universal joints and
    products are nonlinear in ``β``), in a full body's modal rates in closed form
    (:func:`_modal_rate_slopes`); a ruthless body's modal rates are in no product (Eq B1).
    ``wc`` scratch, ``V`` the velocities in the products, ``cw.Ro`` the rate terms
    (:func:`_rate_terms`)."""
    ints = pm.ints
    m, nj, us, cn = ints[b, MODES], ints[b, NJ], ints[b, US], ints[b, CN]
    Ka, vr, beta, hb = cw.Ka[b], cw.t[12], wc.t_6[2, :nj], wc.t_6[3]
    for r in range(6):
        vr[r] = V[b, m + r] - cw.Ro[b, 1, r]
    for k in range(nj):
        x = Ka[:, k]
        x[:] = 0.0
        cross_motion(vr, w.Hcal[b, k, m:m + 6], x, True)
        if cw.Hd[b] != 0.0:
            for r in range(nj):
                beta[r] = complex(w.u_nl[us + r], COMPLEX_STEP if r == k else 0.0)
            joint_rate_term(pm, cw.qc, wc, b, beta, hb)
            for r in range(6):
                v = 0.0
                for c in range(6):
                    v += w.X_joint[b, r, c] * hb[c].imag
                x[r] += v * _PER_STEP
    Ka[:, nj:nj + m] = 0.0
    if m > 0 and ints[b, KIND] == FULL:
        _modal_rate_slopes(ints[b, TK], m, nj, w.Hcal[b], w.Q[b], V[b, m:m + 6],
                           w.u_nl[us:us + nj + m], cn >= 0, w.R_nc[b], w.p_nc[b],
                           w.fE[b, max(cn, 0)], w.fth[b, max(cn, 0)], pm.Pi_r[b, max(cn, 0)],
                           Ka[:, nj:nj + m], cw.t, wc.t_X)


@helper
def _modal_rate_slopes(tk, m, nj, H, Q, V, rates, own, R_nc, p_nc, E, theta, Pi_r, Ka, t,
                       tc):
    """``Ka`` (6 × m): the slopes of a full body's velocity-dependent acceleration (Eq 25)
    in its modal rates ``η̇`` at its twist ``V`` and joint rates ``β`` held (``rates``:
    ``[β; η̇]`` in the products): ``−(Q e_k) × H_F* β`` of ``(V − Q η̇) × H_F* β`` and, on
    its own attach node ``c`` (``own``; ``R_nc``, ``p_nc``, ``E``, ``θ``, ``Π_r``), of
    ``V × Q η̇ − X_nc Ė_c η̇``: ``V × Q e_k − X_nc [G Π_r e_k; −(δw_r × w_t + w_r × δw_t)]``
    with ``w = E η̇``, ``δw = E e_k`` and ``G = ∂(J̇ θ̇)/∂θ̇`` (:func:`_rate_jacobian`).
    ``t`` (≥ 16 × 6) real and ``tc`` (≥ 5 × ≥ 3) complex scratch."""
    HFb, wv, q, de, x, dw = t[0], t[1], t[2], t[3], t[4], t[9]
    G = t[5:8, :3]
    etad = rates[nj:nj + m]
    for c in range(6):
        v = 0.0
        for r in range(nj):
            v += H[r, m + c] * rates[r]
        HFb[c] = v
    if own:
        for r in range(6):
            v = 0.0
            for k in range(m):
                v += E[r, k] * etad[k]
            wv[r] = v
        _rate_jacobian(tk, theta, Pi_r, etad, m, False, G, t[8, :3], tc)
    for k in range(m):
        for r in range(6):
            q[r] = Q[r, k]
            x[r] = 0.0
        cross_motion(HFb, q, x, True)  # −(Q e_k) × H_F* β
        if own:
            cross_motion(V, q, x, True)
            for r in range(3):
                de[r] = G[r, 0] * Pi_r[0, k] + G[r, 1] * Pi_r[1, k] + G[r, 2] * Pi_r[2, k]
            for r in range(6):
                dw[r] = E[r, k]
            _product_slope(wv, dw, de)
            rotate_node_twist(R_nc, p_nc, de, q)
            for r in range(6):
                x[r] -= q[r]
        for r in range(6):
            Ka[r, k] = x[r]


@inlined
def _rate_seed(ints, w, cw, b, j, d_out):
    """Column ``j`` of ``cw.dV[b]``, ``cw.dA[b]``, ``cw.dF[b]`` along the rate ``u_j`` of
    body ``b``, in real arithmetic: ``δV = ℋᵀ e_j`` (Eq 11; nothing of a ruthless body's
    modal rate, which is in no product), ``δa = Ka e_j + δV × c`` (:func:`_own_rate_slopes`,
    :func:`_rate_axes`), ``δα = [0; δa]`` (Eq 24) and ``δf = M_m δα + J [δη̇; δV]`` (its
    bias by its velocity slopes, the damping along ``η̇`` whatever the products)."""
    m, nj, us = ints[b, MODES], ints[b, NJ], ints[b, US]
    s, k = m + 6, j - us
    in_products = not (k >= nj and ints[b, KIND] == RUTHLESS)
    dV, dA, dF, x = cw.dV[b], cw.dA[b], cw.dF[b], cw.t[0]
    for r in range(s):
        dV[r, j] = w.Hcal[b, k, r] if in_products else 0.0
        dA[r, j] = 0.0
    for r in range(6):
        x[r] = dV[m + r, j]
    for r in range(6):
        dA[m + r, j] = cw.Ka[b, r, k]
    _cross_columns(dV[m:s], cw.K[b, 0], dA[m:s], j, j + 1)  # δV × c
    J = cw.J[b]
    for r in range(s):
        v = J[k - nj, r] if k >= nj else 0.0
        for c in range(6):
            v += J[m + c, r] * x[c] + w.M_m[b, r, m + c] * dA[m + c, j]
        dF[r, j] = v


@helper
def _complex_body(pm, w, cw, Vc, i, moves_bias, udot, fext, a_g, j):
    """Column ``j`` of ``cw.dV[i]``, ``cw.dA[i]``, ``cw.dF[i]``: the tangents of body
    ``i``'s velocities (Eq 11), modal accelerations (Eq 24) and own modal forces by a
    complex step of each, its velocity-dependent acceleration (Eq 25) and bias whole
    (``moves_bias``) or by its velocity slopes ``cw.J[i]``; its parent's velocities and
    accelerations in ``cw.wc`` (complex where the direction moves them)."""
    ints, wc = pm.ints, cw.wc
    m, s = ints[i, MODES], ints[i, US] + ints[i, NJ]
    body_velocity(ints, wc.Hcal, wc.phi, wc.A, wc.u_nl, Vc, i, wc.t_6[0])
    body_rates(pm, cw.qc, wc, Vc, i)
    if moves_bias:
        _bias(pm, cw.qc, cw.uc, fext, wc, Vc, i)
    else:
        _bias_along_velocity(m, w.bias[i], cw.J[i], cw.uc[s:s + m], Vc[i, m:m + 6],
                             wc.bias[i])
    body_forces(ints, wc, udot, a_g, i)
    for r in range(m + 6):
        cw.dV[i, r, j] = Vc[i, r].imag * _PER_STEP
        cw.dA[i, r, j] = wc.alpha[i, r].imag * _PER_STEP
        cw.dF[i, r, j] = wc.f[i, r].imag * _PER_STEP


@helper
def _sloped(ints, b):
    """Whether the slopes along body ``b``'s modes are in real arithmetic: a full body with
    modes and no inertia invariants (:func:`_own_force_slope`, :func:`_body_seed`)."""
    return ints[b, KIND] == FULL and ints[b, MI] == 0 and ints[b, MODES] > 0


@helper
def _rate_terms(pm, w, cw, V):
    """``cw.Ro[b]`` (11 × 6) of each body ``b``: the terms at the state of its
    velocity-dependent acceleration (Eq 25, :func:`~flexdyn.engine.terms.body_rates`) that
    :func:`_body_seed` takes, by rows: ``H_F* β``, ``Q η̇``, a full body's own attach node's
    ``ε_c = Ė_c η̇`` and ``w_c = E_c η̇``, its parent node's ``ε_t + V_t × w_t`` (zero but
    on a full parent's node), the joint's ``Ḣ* β`` (zero where it has none,
    :func:`~flexdyn.engine.terms.joint_rate_term`; ``cw.Hd[b]`` whether it has), the parent
    attach frame's acceleration ``α_t = Aᵀ α_m(p)`` (``a_g`` at a root) and twist
    ``V_t = Aᵀ V(p)``, then ``G_c = ∂(J̇ θ̇)/∂θ`` at ``c`` (3 × 3, rows 8–10).  ``V`` the
    velocities in the products."""
    ints, t, u_nl = pm.ints, cw.t, w.u_nl
    for b in range(ints.shape[0]):
        m, nj, us, cn, pa = ints[b, MODES], ints[b, NJ], ints[b, US], ints[b, CN], ints[b, PARENT]
        Ro, etad = cw.Ro[b], u_nl[us + nj:us + nj + m]
        Ro[:, :] = 0.0
        for r in range(6):
            x = y = 0.0
            for k in range(nj):
                x += w.Hcal[b, k, m + r] * u_nl[us + k]
            for k in range(m):
                y += w.Q[b, r, k] * etad[k]
            Ro[0, r] = x
            Ro[1, r] = y
        if ints[b, KIND] == FULL and cn >= 0 and m > 0:
            node_twist_rate(ints[b, TK], w.fth[b, cn], pm.Pi_r[b, cn], w.fE[b, cn], etad, m,
                            Ro[2], Ro[3], t[16:20, :3])
            _rate_jacobian(ints[b, TK], w.fth[b, cn], pm.Pi_r[b, cn], etad, m, True,
                           Ro[8:11, :3], t[0, :3], cw.wc.t_X)
        cw.Hd[b] = 1.0 if joint_rate_term(pm, w.q_n, w, b, u_nl[us:us + nj], Ro[5]) else 0.0
        if pa < 0:
            gravity_acceleration(pm, Ro[6])
            continue
        from_parent(ints, w.A, b, w.alpha, Ro[6])
        from_parent(ints, w.A, b, V, Ro[7])
        if _on_full_node(ints, b):
            pn, mp = ints[b, PN], ints[pa, MODES]
            s = ints[pa, US] + ints[pa, NJ]
            node_twist_rate(ints[pa, TK], w.fth[pa, pn], pm.Pi_r[pa, pn], w.fE[pa, pn],
                            u_nl[s:s + mp], mp, Ro[4], t[0], t[16:20, :3])
            cross_motion(Ro[7], t[0], Ro[4], True)


@helper
def _body_seed(m, nj, sloped, own, phi, H, X, R_nc, p_nc, E_c, th_c, tc, u, udot, Ro, c, V,
               J, M_m, g, dV, dA, dF, j, t):
    """Column ``j`` of body ``b``'s ``dV``, ``dA``, ``dF`` ((m + 6) × nu) along a direction
    of its own coordinates that leaves its joint's ``Ḣ* β`` (every direction of a joint
    without one, and with ``sloped`` a mode of a body of :func:`_sloped`), in real
    arithmetic: from the slopes of its position terms (the imaginary parts over the step of
    their complex steps: ``φ``, ``ℋ``, ``X`` the joint's ``X``, ``R_nc``, ``p_nc`` and, with
    ``own``, its attach node's ``E_c``, ``θ_c``) and its rate terms at the state ``Ro``
    (:func:`_rate_terms`), its parent's held:

    * ``δV = δH_F* β + δQ η̇ + δφᵀ V_t`` (Eq 11; ``u`` its rates ``[β; η̇]``);
    * ``δa = δV × c + H_F* β × δQ η̇ + (V − Q η̇) × δH_F* β + V × δQ η̇ + δφᵀ (ε_t + V_t × w_t)
      + δX Ḣ* β − δ(X_nc ε_c)`` (Eq 25, :func:`~flexdyn.engine.terms.body_rates`; ``c`` of
      :func:`_rate_axes`), ``δε_c`` by :func:`_rate_term_slope`;
    * ``δα = δφᵀ α_t + δa + δℋᵀ u̇`` (Eq 24; ``udot`` its accelerations);
    * ``δf = M_m δα + J δV (+ g)``: the state's ``M_m`` and bias slopes ``J``, with
      ``sloped`` and ``g`` the slope of its own forces at fixed ``α``, ``η̇`` and twist
      (:func:`_own_force_slope`).

    ``tc`` (≥ 2 × 6) complex and ``t`` (≥ 8 × 6) real scratch."""
    dHF, dQ, dv, da, dal, x6, dw = t[0], t[1], t[2], t[3], t[4], t[5], t[6]
    s = m + 6
    for r in range(6):
        x = y = z = 0.0
        for k in range(nj):
            a = H[k, m + r].imag
            x += a * u[k]
            z += a * udot[k]
        for k in range(nj, nj + m):
            a = H[k, m + r].imag
            y += a * u[k]
            z += a * udot[k]
        dHF[r] = x * _PER_STEP
        dQ[r] = y * _PER_STEP
        dal[r] = z * _PER_STEP
    for k in range(6):  # δφᵀ V_t, δφᵀ (ε_t + V_t × w_t), δφᵀ α_t
        x = y = z = 0.0
        for r in range(6):
            a = phi[r, k].imag
            x += a * Ro[7, r]
            y += a * Ro[4, r]
            z += a * Ro[6, r]
        dv[k] = dHF[k] + dQ[k] + x * _PER_STEP
        x = 0.0
        for r in range(6):
            x += X[k, r].imag * Ro[5, r]
        da[k] = (y + x) * _PER_STEP
        dal[k] += z * _PER_STEP
        x6[k] = V[k] - Ro[1, k]
    cross_motion(dv, c, da, True)
    cross_motion(Ro[0], dQ, da, True)
    cross_motion(x6, dHF, da, True)
    cross_motion(V, dQ, da, True)
    if own:  # − δ(X_nc ε_c)
        _rate_term_slope(Ro[8:11, :3], E_c, th_c, u[nj:nj + m], m, Ro[3], x6, dw)
        for r in range(6):
            tc[0, r] = complex(Ro[2, r], COMPLEX_STEP * x6[r])
        rotate_node_twist(R_nc, p_nc, tc[0], tc[1])
        for r in range(6):
            da[r] -= tc[1, r].imag * _PER_STEP
    for r in range(m):
        dV[r, j] = dA[r, j] = 0.0
    for r in range(6):
        dV[m + r, j] = dv[r]
        dA[m + r, j] = da[r] + dal[r]
    for r in range(s):
        x = g[r] if sloped else 0.0
        for k in range(6):
            x += J[m + k, r] * dv[k] + M_m[r, m + k] * dA[m + k, j]
        dF[r, j] = x


@inlined
def _operator_seed(ints, f, wc, dF, d_out, i, j):
    """The slopes of body ``i``'s ``ℋ``, ``φ`` and ``A`` along a direction (complex in
    ``wc``) applied to its state's forces ``f[i]`` (accumulated, Eqs 36, 41): ``δℋ f`` into
    column ``j`` of ``d_out``'s rows of ``i``, ``δ(A φ) f`` into column ``j`` of ``dF[p]``;
    the terms of the tip-to-base sweep's tangent that :func:`_tangent_sweep` (the state's
    operators on ``δf``) leaves."""
    m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
    fc, T = wc.t_X[0, :m + 6], wc.t_X[1, :nj + m]
    for r in range(m + 6):
        fc[r] = f[i, r]
    mv(wc.Hcal[i, :nj + m, :m + 6], fc, T, False)
    for k in range(nj + m):
        d_out[us + k, j] += T[k].imag * _PER_STEP
    if pa >= 0:
        mp = ints[pa, MODES]
        wc.f[pa, :mp + 6] = 0.0
        to_parent(ints, wc.A, wc.phi, i, fc[m:m + 6], wc.f, wc.t_6[3])
        for r in range(mp + 6):
            dF[pa, r, j] += wc.f[pa, r].imag * _PER_STEP


@helper
def _tangent_sweep(ints, A, phi, M_m, Hcal, J, K, P, Sd, dV, dA, dF, X, d_out):
    """``d_out += ℋ δf`` (nu × nu, all directions at once; Eqs 36, 41) by the tangent
    sweeps of Eqs 11, 24 and 25 over the state's terms, from the columns of ``dV``,
    ``dA``, ``dF`` (n × (M + 6) × nu) that :func:`_seed` gave the bodies a direction moves:
    base to tip, every other body's tangents in the columns of the bodies before it
    (:func:`_tangent_columns`, with the seeds ``Sd`` of :func:`_child_seed`; zero but its
    ancestors'), then tip to base ``δτ_i = ℋ_i δf_i`` and ``δf_p += A φ δf_i`` over every
    column.  ``dV``, ``dA``, ``dF`` and ``Sd`` are zero where :func:`_seed` did not write
    them; ``X`` (3 × 6 × nu) scratch."""
    n, nu = ints.shape[0], d_out.shape[1]
    for i in range(n):
        if ints[i, PARENT] >= 0:
            _tangent_columns(ints, A, phi, M_m, J[i], K[i], P[i], Sd[i], dV, dA, dF, X, i, 0,
                             ints[i, US])
    t = X[0]
    for i in range(n - 1, -1, -1):
        m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
        for k in range(nj + m):
            for r in range(m + 6):
                x = Hcal[i, k, r]
                if x != 0.0:
                    for c in range(nu):
                        d_out[us + k, c] += x * dF[i, r, c]
        if pa < 0:
            continue
        mp = ints[pa, MODES]
        _phi_columns(phi[i], dF[i, m:m + 6], t, 0, nu, False)
        if ints[i, AT] == 1:
            for r in range(6):
                for c in range(nu):
                    dF[pa, mp + r, c] += t[r, c]
        else:
            for r in range(mp + 6):
                for k in range(6):
                    x = A[i, r, k]
                    for c in range(nu):
                        dF[pa, r, c] += x * t[k, c]


@helper
def _tangent_columns(ints, A, phi, M_m, J, K, P, Sd, dV, dA, dF, X, i, c0, c1):
    """Columns ``c0:c1`` of ``dV[i]``, ``dA[i]``, ``dF[i]`` of a body whose own terms
    these directions leave (they move it only through its parent): ``δV_t = Aᵀ δV_m(p)``,
    ``δV_m(i) = [0; φᵀ δV_t]`` (Eq 11), its velocity-dependent acceleration
    ``δa = δV × c + φᵀ (δV_t × w_t + P δη̇_p)`` (:func:`_rate_axes`, ``K``;
    :func:`_parent_rate_slopes`, ``P``; ``δη̇_p`` the parent's modal rows of ``δV_m(p)``),
    ``δα_m(i) = [0; φᵀ Aᵀ δα_m(p) + δa]`` (Eq 24) and ``δf_m(i) = M_m δα_m + J δV`` (its
    bias by its velocity slopes ``J``), the seeds ``Sd`` (18 × nu) of a mode of the parent
    added to ``δV_t``, ``δα_t`` and the parent node's rate terms (:func:`_child_seed`);
    ``X`` (3 × 6 × nu) scratch."""
    pa, m = ints[i, PARENT], ints[i, MODES]
    mp, s = ints[pa, MODES], m + 6
    x, y, z = X[0], X[1], X[2]
    if ints[i, AT] == 1:
        for r in range(6):
            for c in range(c0, c1):
                x[r, c] = dV[pa, mp + r, c]
                y[r, c] = dA[pa, mp + r, c]
    else:
        for r in range(6):
            for c in range(c0, c1):
                x[r, c] = y[r, c] = 0.0
        for k in range(mp + 6):
            for r in range(6):
                a = A[i, k, r]
                for c in range(c0, c1):
                    x[r, c] += a * dV[pa, k, c]
                    y[r, c] += a * dA[pa, k, c]
    for r in range(6):
        for c in range(c0, c1):
            x[r, c] += Sd[r, c]
            y[r, c] += Sd[6 + r, c]
    for r in range(m):
        for c in range(c0, c1):
            dV[i, r, c] = dA[i, r, c] = 0.0
    _phi_columns(phi[i], x, dV[i, m:s], c0, c1, True)
    _phi_columns(phi[i], y, dA[i, m:s], c0, c1, True)
    _cross_columns(dV[i, m:s], K[0], dA[i, m:s], c0, c1)
    if _on_full_node(ints, i):
        for r in range(6):
            for c in range(c0, c1):
                z[r, c] = Sd[12 + r, c]
        _cross_columns(x, K[1], z, c0, c1)
        for r in range(6):
            for k in range(mp):
                a = P[r, k]
                for c in range(c0, c1):
                    z[r, c] += a * dV[pa, k, c]
        _phi_columns(phi[i], z, y, c0, c1, True)
        for r in range(6):
            for c in range(c0, c1):
                dA[i, m + r, c] += y[r, c]
    for r in range(s):
        for c in range(c0, c1):
            dF[i, r, c] = 0.0
        for k in range(6):
            a, b = J[m + k, r], M_m[i, r, m + k]
            for c in range(c0, c1):
                dF[i, r, c] += a * dV[i, m + k, c] + b * dA[i, m + k, c]


@helper
def _phi_columns(phi, x, out, c0, c1, transpose):
    """Columns ``c0:c1`` of ``out = φᵀ x`` (``transpose``) or ``out = φ x`` (6 × nu)."""
    for r in range(6):
        for c in range(c0, c1):
            out[r, c] = 0.0
        for k in range(6):
            a = phi[k, r] if transpose else phi[r, k]
            for c in range(c0, c1):
                out[r, c] += a * x[k, c]


@helper
def _cross_columns(x, k, out, c0, c1):
    """Columns ``c0:c1`` of ``out += x × k`` (6 × nu): the motion cross product of each
    column of ``x`` with the twist ``k``."""
    for c in range(c0, c1):
        w0, w1, w2, v0, v1, v2 = x[0, c], x[1, c], x[2, c], x[3, c], x[4, c], x[5, c]
        out[0, c] += w1 * k[2] - w2 * k[1]
        out[1, c] += w2 * k[0] - w0 * k[2]
        out[2, c] += w0 * k[1] - w1 * k[0]
        out[3, c] += w1 * k[5] - w2 * k[4] + v1 * k[2] - v2 * k[1]
        out[4, c] += w2 * k[3] - w0 * k[5] + v2 * k[0] - v0 * k[2]
        out[5, c] += w0 * k[4] - w1 * k[3] + v0 * k[1] - v1 * k[0]


@helper
def _rate_axes(ints, Hcal, Q, fE, u_nl, i, K):
    """The axes ``K = [c; w_t]`` (2 × 6) of body ``i``'s velocity-dependent acceleration
    along twists (:func:`~flexdyn.engine.terms.body_rates`, the state's real terms): its
    rigid rows are affine in the body's twist ``V`` and its parent attach node's
    ``V_t = Aᵀ(i) V_m(p)``, through ``(V − Q η̇) × H_F* β``, the full model's ``V × Q η̇``
    and ``φᵀ (V_t × E_t η̇_p)``, so that they change by
    ``δV × c + φᵀ (δV_t × w_t)`` with ``c = H_F* β + Q η̇`` (the second term of the full
    model only) and ``w_t = E_t η̇_p`` (zero but on a full parent's node) while ``β``,
    ``η̇``, ``η̇_p`` and the position terms hold."""
    m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
    own = ints[i, KIND] == FULL and ints[i, CN] >= 0
    for r in range(6):
        x = 0.0
        for k in range(nj):
            x += Hcal[i, k, m + r] * u_nl[us + k]
        if own:
            for k in range(m):
                x += Q[i, r, k] * u_nl[us + nj + k]
        K[0, r] = x
        K[1, r] = 0.0
    if _on_full_node(ints, i):
        s, mp = ints[pa, US] + ints[pa, NJ], ints[pa, MODES]
        for r in range(6):
            x = 0.0
            for k in range(mp):
                x += fE[pa, ints[i, PN], r, k] * u_nl[s + k]
            K[1, r] = x


@helper
def _parent_rate_slopes(tk, mp, theta, Pi_r, E, A, Vp, etad, P, tX, tc):
    """``P = ∂(ε_t + V_t × w_t)/∂η̇_p`` (6 × m_p) at the state, ``V_t = Aᵀ V_m(p)`` held:
    the slopes of a body's velocity-dependent acceleration (before ``φᵀ``,
    :func:`~flexdyn.engine.terms.body_rates`) in the modal rates ``η̇_p`` (``etad``, the
    parent's rates in the products) of the full parent on whose node ``t`` (``theta``,
    ``Pi_r``, ``E``) it hangs, ``ε_t = Ė_t η̇_p`` and ``w_t = E_t η̇_p``
    (:func:`~flexdyn.engine.tip.node_twist_rate`), by complex steps; ``tX`` (≥ 3 × M + 6)
    and ``tc`` (4 × 3) complex scratch."""
    h = COMPLEX_STEP
    d, out, wt = tX[0, :mp], tX[1, :6], tX[2, :6]
    Vt = tX[3, :6]
    for r in range(6):
        x = 0.0
        for k in range(mp + 6):
            x += A[k, r] * Vp[k]
        Vt[r] = x
    for c in range(mp):
        for k in range(mp):
            d[k] = complex(etad[k], h if k == c else 0.0)
        node_twist_rate(tk, theta, Pi_r, E, d, mp, out, wt, tc)
        cross_motion(Vt, wt, out, True)
        for r in range(6):
            P[r, c] = out[r].imag * _PER_STEP


@helper
def _on_full_node(ints, i):
    """Whether body ``i`` hangs on a node of a full parent (whose modes move the node)."""
    pa = ints[i, PARENT]
    return pa >= 0 and ints[i, PN] >= 0 and ints[pa, KIND] == FULL


@helper
def _bias(pm, q, u, fext, w, V, i):
    """:func:`~flexdyn.engine.terms.body_bias`, compiled once for both its callers."""
    body_bias(pm, q, u, fext, w, V, i)


@helper
def _bias_along_velocity(m, bias, J, etad, V, out):
    """``out = bias + i J Im([η̇; V])`` (m + 6 entries): a bias whose body moves along the
    complex step through its modal rates ``η̇`` and twist ``V`` alone."""
    for r in range(m + 6):
        x = 0.0
        for c in range(m):
            x += J[c, r] * etad[c].imag
        for c in range(6):
            x += J[m + c, r] * V[c].imag
        out[r] = complex(bias[r], x)


@helper
def _solve_accelerations(pm, Mass, q, u, tau, c, udot):
    """``u̇ = M⁻¹ (sat(τ) + τ_J − c)`` into ``udot`` with ``c = ID(q, u, 0)``, ``Mass``
    (``M``) left as its Cholesky factor: False where ``M`` is singular."""
    if not cholesky_factor(Mass, MASS_MATRIX_RTOL):
        return False
    motor_torques(pm, tau, udot)
    add_passive_forces(pm, q, u, 1.0, udot)
    for k in range(udot.shape[0]):
        udot[k] -= c[k]
    cholesky_substitute(Mass, udot, udot)
    return True


@helper
def _forward_derivatives(pm, L, tau, tc, d_q, d_u, d_x):
    """The inverse-dynamics derivatives ``d_q``, ``d_u`` turned into forward dynamics' in
    place, ``−M⁻¹ ∂τ``, and ``d_x = ∂u̇/∂τ = M⁻¹ diag(sat′(τ))`` (``sat′`` by a complex step
    of the torque limits), ``L`` the Cholesky factor of ``M``; ``tc`` (nu,) complex
    scratch."""
    nu, h = tau.shape[0], COMPLEX_STEP
    for k in range(nu):
        tc[k] = complex(tau[k], h)
    motor_torques(pm, tc, tc)
    for r in range(nu):
        for c in range(nu):
            d_q[r, c] = -d_q[r, c]
            d_u[r, c] = -d_u[r, c]
            d_x[r, c] = 0.0
        d_x[r, r] = tc[r].imag / h
    _solve_rows(L, d_q)
    _solve_rows(L, d_u)
    _solve_rows(L, d_x)


@helper
def _solve_rows(L, X):
    """``X ← (L Lᵀ)⁻¹ X`` (n × m) in place with the factor of
    :func:`~flexdyn.engine.algebra.cholesky_factor`, a row of ``X`` at a time (the inner
    loops run along contiguous rows): ``L Y = X`` forward, then ``Lᵀ X = Y`` backward."""
    n = X.shape[0]
    for i in range(n):
        _substitute_row(X[i], L[i, :i], X[:i], L[i, i])
    for i in range(n - 1, -1, -1):
        _substitute_row(X[i], L[i + 1:, i], X[i + 1:], L[i, i])


@helper
def _substitute_row(x, coefficients, rows, pivot):
    """``x ← (x − Σ_k coefficients[k] rows[k]) / pivot``: one row of a triangular solve."""
    m = x.shape[0]
    for k in range(rows.shape[0]):
        a, r = coefficients[k], rows[k]
        for c in range(m):
            x[c] -= a * r[c]
    d = 1.0 / pivot
    for c in range(m):
        x[c] *= d


@helper
def _dot6(a, b):
    """``aᵀ b`` of two 6-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@helper
def _coriolis_inertia(Y, V, hV, out):
    """``out = B`` (6 × 6) with ``B x = Y (x × V) + x ×* (Y V) + V ×* (Y x)``, the
    derivative of a body's wrench ``Y a + V ×* Y V`` under a change ``x`` of its twist that
    also moves its frame (``hV = Y V``).  With ``X = (V ×*) Y`` the first and last terms are
    ``(X + Xᵀ) x`` (``Y`` symmetric, ``(V ×)ᵀ = −(V ×*)``), the second
    ``[[−h̃_n, −h̃_f], [−h̃_f, 0]] x`` for ``Y V = [h_n; h_f]``."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    # column c of X: V ×* (column c of Y), cross_force written out so that each column is
    # read whole before out is written (no zeroing and accumulating through views of out)
    for c in range(6):
        n0, n1, n2, f0, f1, f2 = Y[0, c], Y[1, c], Y[2, c], Y[3, c], Y[4, c], Y[5, c]
        out[0, c] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
        out[1, c] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
        out[2, c] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
        out[3, c] = w1 * f2 - w2 * f1
        out[4, c] = w2 * f0 - w0 * f2
        out[5, c] = w0 * f1 - w1 * f0
    for r in range(6):
        for c in range(r + 1):
            x = out[r, c] + out[c, r]
            out[r, c] = out[c, r] = x
    _subtract_skew(out, 0, 0, hV[0], hV[1], hV[2])
    _subtract_skew(out, 0, 3, hV[3], hV[4], hV[5])
    _subtract_skew(out, 3, 0, hV[3], hV[4], hV[5])


@helper
def _twist_to_inertial(R, p, x, out):
    """``out = [R x_ω; R x_v + p × R x_ω]``: the twist ``x`` (6,) of a frame at pose
    ``(R, p)`` in inertial coordinates (``[[R, 0], [p̃ R, R]] x`` without forming the
    matrix)."""
    for r in range(3):
        out[r] = R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]
    w0, w1, w2 = out[0], out[1], out[2]
    out[3] = R[0, 0] * x[3] + R[0, 1] * x[4] + R[0, 2] * x[5] + p[1] * w2 - p[2] * w1
    out[4] = R[1, 0] * x[3] + R[1, 1] * x[4] + R[1, 2] * x[5] + p[2] * w0 - p[0] * w2
    out[5] = R[2, 0] * x[3] + R[2, 1] * x[4] + R[2, 2] * x[5] + p[0] * w1 - p[1] * w0


@helper
def _subtract_skew(out, r, c, a0, a1, a2):
    """``out[r:r+3, c:c+3] −= ã``, the cross-product matrix of ``a``."""
    out[r, c + 1] += a2
    out[r, c + 2] -= a1
    out[r + 1, c] -= a2
    out[r + 1, c + 2] += a0
    out[r + 2, c] += a1
    out[r + 2, c + 1] -= a0


@helper
def rigid_tree_derivatives(pm, rw, u, udot, tau, fext, forward, d_q, d_u):
    """``∂τ/∂q`` (``d_q``), ``∂τ/∂u`` (``d_u``) and ``M`` (``rw.L``, nu × nu each) of Eq 44
    at ``(q, u, u̇)`` (``q`` in ``rw.q_n``) for a rigid tree on one-dof joints: the
    derivatives of the Newton–Euler sweeps in inertial coordinates (Carpentier & Mansard,
    *RSS* 2018).  With ``forward`` the accelerations are those of forward dynamics under
    ``tau`` (nu,), ``u̇ = M⁻¹ (sat(τ) + τ_J − c)``, written into ``udot``, and ``rw.L`` is
    left as the Cholesky factor of ``M``: False when ``M`` is singular.

    With every quantity in inertial coordinates — joint axis ``S_i``, twist ``V_i``,
    acceleration ``α_i`` (``α`` of the base ``a_g``), body inertia ``Y_i`` — and ``λ`` the
    parent of joint ``j``: a change of ``q_j`` turns the subtree of ``j`` about ``S_j``, so
    that ``∂S_k/∂q_j = S_j × S_k`` and ``∂V_i/∂q_j = S_j × (V_i − V_λ)`` for ``k``, ``i`` in
    it.  With ``Ṡ_j = V_λ × S_j`` and ``S̈_j = α_λ × S_j + V_λ × Ṡ_j``, the body wrench
    ``f_i = Y_i α_i + V_i ×* Y_i V_i − f_ext,i`` changes by ``∂f_i/∂q_j = S_j ×* f_i + Y_i S̈_j
    + B_i Ṡ_j`` and ``∂f_i/∂u_j = 2 Y_i Ṡ_j + B_i S_j`` with
    ``B_i x = Y_i (x × V_i) + x ×* Y_i V_i + V_i ×* Y_i x``.  Summed over a subtree
    (composite ``Y_k``, ``B_k``, ``F_k``) and projected on ``S_k`` (the term ``S_j ×* F_k``
    cancels against ``∂S_k``): for ``k`` in the subtree of ``j``
    ``∂τ_k/∂q_j = S_kᵀ (Y_k S̈_j + B_k Ṡ_j)``, ``∂τ_k/∂u_j = S_kᵀ (2 Y_k Ṡ_j + B_k S_j)``,
    ``M_kj = S_kᵀ Y_k S_j``; for ``k`` on the path above ``j``
    ``∂τ_k/∂q_j = S_kᵀ (S_j ×* F_j + Y_j S̈_j + B_j Ṡ_j)``,
    ``∂τ_k/∂u_j = S_kᵀ (2 Y_j Ṡ_j + B_j S_j)``; zero elsewhere.  The joint forces
    ``τ_J(q_k, u_k)`` add their own slopes on the diagonal (complex steps).

    Four sweeps: base to tip the kinematics and the wrenches at ``u̇ = 0``; tip to base the
    composites, ``M`` and ``c = ID(q, u, 0)``; base to tip the accelerations at ``u̇``; tip
    to base ``∂τ/∂q`` and ``∂τ/∂u``; ``rw`` the scratch (:class:`RigidWork`)."""
    ints = pm.ints
    n = ints.shape[0]
    R0, p0, Yb, Y, Bc, vec, Mass, q_n, c = rw.R0, rw.p0, rw.Yb, rw.Y, rw.Bc, rw.vec, rw.L, \
        rw.q_n, rw.c
    a_g, h, e, T = rw.v6[0], rw.v6[1], rw.v6[2], rw.T
    Rl, Rj, R1, R2, pl, pj, p1 = rw.R3[0], rw.R3[1], rw.R3[2], rw.R3[3], rw.p3[0], rw.p3[1], \
        rw.p3[2]
    gravity_acceleration(pm, a_g)
    for i in range(n):  # poses, twists, Ṡ, inertias, wrenches at u̇ = 0 (α_0)
        pa, us, x = ints[i, PARENT], ints[i, US], vec[i]
        S, V, A, Sd, fv, F = x[_S], x[_V], x[_A], x[_SD], x[_FV], x[_F]
        rigid_tree_pose(pm, i, q_n, Rl, pl, rw.S_j, h, Rj, pj, R1, p1, R2)
        if pa < 0:
            copy(Rl, R0[i])
            copy(pl, p0[i])
            V[:] = 0.0
            copy(a_g, A)
        else:
            compose3(R0[pa], p0[pa], Rl, pl, R0[i], p0[i])
            copy(vec[pa, _V], V)
            copy(vec[pa, _A], A)
        _twist_to_inertial(R0[i], p0[i], h, S)  # S in inertial coordinates
        cross_motion(V, S, Sd, False)  # Ṡ = V_λ × S
        for r in range(6):
            A[r] += Sd[r] * u[us]
            V[r] += S[r] * u[us]
        Yb[i, :, :] = 0.0
        pose_congruence(R0[i], p0[i], pm.M_m0[i], Yb[i], T)
        copy(Yb[i], Y[i])
        hV = x[_T]
        mv6(Yb[i], V, hV, False)
        cross_force(V, hV, fv, False)  # V ×* Y V − f_ext
        e[:] = 0.0
        node_wrench(R0[i], p0[i], pm.X_joint0[i], 0, fext[i], e)  # E unread (m = 0)
        for r in range(6):
            fv[r] -= e[r]
        mv6(Yb[i], A, F, False)
        for r in range(6):
            F[r] += fv[r]
        _coriolis_inertia(Yb[i], V, hV, Bc[i])
    Mass[:] = 0.0
    d_q[:] = 0.0
    d_u[:] = 0.0
    for i in range(n - 1, -1, -1):  # composites, M, c
        x, k = vec[i], ints[i, US]
        S, Sd, F, y, b, H = x[_S], x[_SD], x[_F], x[_Y], x[_B], x[_H]
        mv6(Y[i], S, y, False)  # Y_k S_k (= (S_kᵀ Y_k)ᵀ)
        for cc in range(6):  # B_kᵀ S_k
            b[cc] = _dot6(Bc[i, :, cc], S)
        mv6(Y[i], Sd, H, False)  # 2 Y Ṡ + B S
        for r in range(6):
            H[r] *= 2.0
        mv6(Bc[i], S, H, True)
        c[k] = _dot6(S, F)
        j = i
        while j >= 0:  # the joints on the path from i to the base, i included
            cj = ints[j, US]
            Mass[k, cj] = Mass[cj, k] = _dot6(y, vec[j, _S])
            j = ints[j, PARENT]
        pa = ints[i, PARENT]
        if pa >= 0:
            for r in range(6):
                vec[pa, _F, r] += F[r]
                for cc in range(6):
                    Y[pa, r, cc] += Y[i, r, cc]
                    Bc[pa, r, cc] += Bc[i, r, cc]
    if forward and not _solve_accelerations(pm, Mass, q_n, u, tau, c, udot):
        return False
    for i in range(n):  # α at u̇, S̈, f
        pa, us, x = ints[i, PARENT], ints[i, US], vec[i]
        S, A, Sd, Sdd, F = x[_S], x[_A], x[_SD], x[_SDD], x[_F]
        if pa < 0:
            cross_motion(a_g, S, Sdd, False)  # S̈ = α_λ × S + V_λ × Ṡ (V_λ = 0)
            copy(a_g, A)
        else:
            cross_motion(vec[pa, _A], S, Sdd, False)
            cross_motion(vec[pa, _V], Sd, Sdd, True)
            copy(vec[pa, _A], A)
        for r in range(6):
            A[r] += S[r] * udot[us] + Sd[r] * u[us]
        mv6(Yb[i], A, F, False)
        for r in range(6):
            F[r] += x[_FV, r]
    for i in range(n - 1, -1, -1):  # ∂τ/∂q, ∂τ/∂u
        x, k = vec[i], ints[i, US]
        S, Sd, Sdd, F, y, b, G, H = x[_S], x[_SD], x[_SDD], x[_F], x[_Y], x[_B], x[_G], x[_H]
        mv6(Y[i], Sdd, G, False)  # S ×* F + Y S̈ + B Ṡ
        mv6(Bc[i], Sd, G, True)
        cross_force(S, F, G, True)
        j = i
        while j >= 0:
            z, cj = vec[j], ints[j, US]
            d_q[k, cj] = _dot6(y, z[_SDD]) + _dot6(b, z[_SD])
            d_u[k, cj] = 2.0 * _dot6(y, z[_SD]) + _dot6(b, z[_S])
            if j != i:
                d_q[cj, k] = _dot6(z[_S], G)
                d_u[cj, k] = _dot6(z[_S], H)
            j = ints[j, PARENT]
        pa = ints[i, PARENT]
        if pa >= 0:
            for r in range(6):
                vec[pa, _F, r] += F[r]
    step = COMPLEX_STEP  # (h above is the joint's axis in F_i)
    for i in range(n):  # τ = ID − τ_J: the joint forces' slopes, by complex steps
        if ints[i, JF] != 0:
            k, qk, uk, par = ints[i, US], q_n[ints[i, QS]], u[ints[i, US]], pm.jforce[i, 0]
            d_q[k, k] -= passive_force_kernel(par, complex(qk, step), complex(uk, 0.0)).imag / step
            d_u[k, k] -= passive_force_kernel(par, complex(qk, 0.0), complex(uk, step)).imag / step
    return True
