"""The engine's entries: one compiled call per operation (one crossing of the Python
boundary, the GIL released), and one per share of a batch, built from the stages:

* :mod:`~flexdyn.engine.layout` — the packed model ``(ib, fb)`` (:mod:`flexdyn.engine.pack`)
  as named views and one workspace per call, whose fields carry the names of the
  reference's per-state terms;
* :mod:`~flexdyn.engine.algebra`, :mod:`~flexdyn.engine.tip`,
  :mod:`~flexdyn.engine.joint_kernels` — small algebra and dense solves, the node rotations,
  the joints by code;
* :mod:`~flexdyn.engine.terms` — position and velocity terms (Eqs 11–17, 23, 25, 37), the
  body kernels by kind;
* :mod:`~flexdyn.engine.newton_euler` (Eq 44), :mod:`~flexdyn.engine.composite_body`
  (Eqs 47–50), :mod:`~flexdyn.engine.articulated_body` (Eqs 51, 58, and hybrid dynamics by
  a mask of prescribed accelerations), :mod:`~flexdyn.engine.rigid_tree` (the fused sweeps
  of rigid trees on one-dof joints), :mod:`~flexdyn.engine.forces` (the joint forces);
* :mod:`~flexdyn.engine.stages` — the five of them that the entries share (position and
  velocity terms, the articulated-body sweeps, Newton–Euler, the composite-body mass
  matrix), compiled once each and called through the table of their addresses ``st`` that
  the entries take after ``(ib, fb)`` (None links them, as in
  :mod:`~flexdyn.engine.export`);
* :mod:`~flexdyn.engine.jit` — how each is compiled.

Only the entries here (:func:`terms`, :func:`forward_articulated`, :func:`forward_composite`,
:func:`forward_rigid_tree`, :func:`inverse`, :func:`mass`, :func:`batch`,
:func:`batch_rigid_tree`, :func:`hybrid`, :func:`derivative_articulated`,
:func:`derivative_composite`, :func:`derivative_rigid_tree`), those of
:mod:`~flexdyn.engine.split`, :mod:`~flexdyn.engine.extras`,
:mod:`~flexdyn.engine.closure`, :mod:`~flexdyn.engine.galpha` and
:mod:`~flexdyn.engine.derivatives`, and
:func:`~flexdyn.engine.layout.workspace` may be called from Python.  They validate their
inputs and return a status: −1 done, :data:`~flexdyn.engine.layout.INVALID`,
:data:`~flexdyn.engine.layout.OVERFLOW` (a non-finite result) or the index of a body whose inertia
is singular.

The equations are those of the reference tier, step for step: position terms
(:func:`flexdyn.terms.position_terms`), velocity terms (:func:`flexdyn.terms.velocity_terms`),
Newton–Euler (:func:`flexdyn.newton_euler.rnea`), the composite-body mass matrix
(:func:`flexdyn.composite_body.crba`), the articulated-body forward dynamics
(:func:`flexdyn.articulated_body.articulated_forward_dynamics`) and hybrid dynamics
(:mod:`flexdyn.hybrid`).
"""

from __future__ import annotations

import math

import numpy as np

from ..joints import QUATERNION_TOL
from . import stages
from .algebra import cholesky_solve, copy, mv
from .articulated_body import articulated_accelerations, articulated_inertias, prescribed_loads
from .forces import (
    add_passive_forces,
    applied_forces,
    conservative_force_kernel,
    passive_force_kernel,
    saturated_kernel,
)
from .jit import allocating_helper, entry_point, helper, inlined
from .joint_kernels import product_qdot, quat_rot_kernel
from .layout import (
    FREE,
    INVALID,
    JCODE,
    JF,
    MODES,
    NJ,
    NQJ,
    OVERFLOW,
    PRODUCT,
    QS,
    SPHERICAL,
    US,
    carve,
    unpack,
    workspace,
    workspace_length,
)
from .rigid_tree import rigid_tree_forward_dynamics
from .stages import run

__all__ = ["ARTICULATED", "articulated_forward_dynamics", "batch", "batch_rigid_tree", "COMPOSITE",
           "derivative_articulated", "derivative_composite", "derivative_inputs",
           "derivative_outputs", "derivative_rigid_tree", "finite", "finite_result",
           "forward_articulated", "forward_composite", "forward_rigid_tree", "hybrid", "INVALID",
           "INVERSE", "inverse", "inverse_dynamics", "MASS", "mass", "OVERFLOW",
           "position_velocity_terms", "power_rates", "rate_entries", "state_derivative", "terms",
           "valid_configuration", "valid_state", "validated_derivative", "validated_forward",
           "validated_inverse", "validated_mass"]


@entry_point
def terms(ib, fb, st, q, u, fext):
    """The workspace after the position and velocity terms (for inspection)."""
    pm, w = unpack(ib, fb), workspace(ib)
    w.flat[:] = 0.0  # the padding too, for inspection
    position_velocity_terms(st, pm, w, q, u, fext)
    return w


@inlined
def position_velocity_terms(st, pm, w, q, u, fext):
    """The position and velocity terms into ``w``, by the stages of the table ``st``
    (linked where ``st`` is None; ``flexdyn.engine.stages.run``)."""
    run(st, stages.position, pm, w, q)
    run(st, stages.velocity, pm, w, q, u, fext)


@inlined
def articulated_forward_dynamics(st, pm, w, q, u, tau, fext, udot):
    """Terms, then Eqs 51/58 into ``udot``: −1, or the index of the body whose ``D`` is
    singular."""
    position_velocity_terms(st, pm, w, q, u, fext)
    return run(st, stages.articulated, pm, w, q, u, tau, udot)


@inlined
def _forward_composite(st, pm, w, q, u, tau, fext, udot):
    """Terms, then Eq 46 (mass matrix, bias by Newton–Euler, Cholesky) into ``udot``:
    −1, or 0 when the mass matrix is singular."""
    position_velocity_terms(st, pm, w, q, u, fext)
    nu = tau.shape[0]
    C = np.zeros(nu)
    run(st, stages.newton_euler, pm, w, np.zeros(nu), C)
    Mass = np.zeros((nu, nu))
    run(st, stages.composite, pm, w, Mass)
    return -1 if cholesky_solve(Mass, applied_forces(pm, w, q, u, tau) - C, udot) else 0


@inlined
def inverse_dynamics(st, pm, w, q, u, udot, fext, tau):
    """Terms, then Eq 44 into ``tau``, less the joint forces ``τ_J`` (the motor forces)."""
    position_velocity_terms(st, pm, w, q, u, fext)
    run(st, stages.newton_euler, pm, w, udot, tau)
    add_passive_forces(pm, q, u, -1.0, tau)
    return -1


@inlined
def _mass(st, pm, w, q, Mass):
    """Position terms, then Eqs 47/50 into ``Mass``."""
    run(st, stages.position, pm, w, q)
    run(st, stages.composite, pm, w, Mass)
    return -1


@inlined
def valid_state(pm, q, u, x, fext, q_n):
    """Whether every entry of ``u``, ``x``, ``fext`` is finite and ``q`` is a valid
    configuration (:func:`valid_configuration`, which fills ``q_n``)."""
    return (finite(u) and finite(x) and finite(fext)
            and valid_configuration(pm, q, q_n))


@inlined
def valid_configuration(pm, q, q_n):
    """Whether every entry of ``q`` is finite and every joint quaternion is off unit norm by
    at most ``QUATERNION_TOL``; ``q_n`` is ``q`` with the quaternions normalised (as
    :meth:`flexdyn.chain.Model.check_state`)."""
    if not finite(q):
        return False
    copy(q, q_n)
    ints = pm.ints
    for i in range(ints.shape[0]):
        code = ints[i, JCODE]
        if code == SPHERICAL or code == FREE:
            s = ints[i, QS]
            n2 = q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2
            norm = math.sqrt(n2)
            if norm == 0.0 or abs(norm - 1.0) > QUATERNION_TOL:
                return False
            for k in range(4):
                q_n[s + k] = q[s + k] / norm
    return True


@helper
def finite(x):
    """Whether every entry of ``x`` (one or two dimensions) is finite (no temporary array,
    no reshape)."""
    if x.ndim == 1:
        for v in x:
            if not math.isfinite(v):
                return False
    else:
        for r in range(x.shape[0]):
            for v in x[r]:
                if not math.isfinite(v):
                    return False
    return True


@helper
def finite_result(out):
    """−1 when every entry of ``out`` is finite, else :data:`~flexdyn.engine.layout.OVERFLOW`."""
    return -1 if finite(out) else OVERFLOW


@entry_point
def forward_articulated(ib, fb, st, q, u, tau, fext, udot):
    """:func:`validated_forward` of one state."""
    return validated_forward(st, ib, fb, np.empty(workspace_length(ib)), q, u, tau, fext, udot)


@helper
def validated_forward(st, ib, fb, buf, q, u, tau, fext, udot):
    """``articulated_forward_dynamics`` of one state on the workspace carved from ``buf``,
    validated (:data:`~flexdyn.engine.layout.INVALID`,
    :data:`~flexdyn.engine.layout.OVERFLOW`).  A helper on a buffer that its caller holds,
    so that the workspace's views count no references (``_rigid_tree_forward``), as do the
    other ``validated_`` functions."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    if not valid_state(pm, q, u, tau, fext, w.q_n):
        return INVALID
    status = articulated_forward_dynamics(st, pm, w, w.q_n, u, tau, fext, udot)
    return status if status >= 0 else finite_result(udot)


@entry_point
def forward_rigid_tree(ib, fb, q, u, tau, fext, udot):
    """:func:`forward_articulated` of a rigid tree on one-dof joints
    (:func:`~flexdyn.engine.rigid_tree.is_rigid_tree`, whose coordinates hold no quaternion):
    ``rigid_tree_forward_dynamics`` of one state, validated, on a workspace it holds
    (``_rigid_tree_forward``)."""
    return _rigid_tree_forward(ib, fb, np.empty(workspace_length(ib)), q, u, tau, fext, udot)


@helper
def _rigid_tree_forward(ib, fb, buf, q, u, tau, fext, udot):
    """:func:`forward_rigid_tree` on the workspace carved from ``buf``, which its caller
    holds, so that neither the views nor the sweeps count references
    (:data:`~flexdyn.engine.jit.helper`; :func:`workspace`'s views count two atomic
    operations each per call, a fixed cost of the order of a short chain's sweeps)."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    if not (finite(q) and finite(u) and finite(tau) and finite(fext)):
        return INVALID
    status = rigid_tree_forward_dynamics(pm, w, q, u, tau, fext, udot)
    return status if status >= 0 else finite_result(udot)


@entry_point
def forward_composite(ib, fb, st, q, u, tau, fext, udot):
    """``_forward_composite`` of one state, validated."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not valid_state(pm, q, u, tau, fext, w.q_n):
        return INVALID
    status = _forward_composite(st, pm, w, w.q_n, u, tau, fext, udot)
    return status if status >= 0 else finite_result(udot)


@entry_point
def inverse(ib, fb, st, q, u, udot, fext, tau):
    """:func:`validated_inverse` of one state."""
    return validated_inverse(st, ib, fb, np.empty(workspace_length(ib)), q, u, udot, fext, tau)


@helper
def validated_inverse(st, ib, fb, buf, q, u, udot, fext, tau):
    """``inverse_dynamics`` of one state, validated."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    if not valid_state(pm, q, u, udot, fext, w.q_n):
        return INVALID
    inverse_dynamics(st, pm, w, w.q_n, u, udot, fext, tau)
    return finite_result(tau)


@entry_point
def mass(ib, fb, st, q, Mass):
    """:func:`validated_mass` of one configuration."""
    return validated_mass(st, ib, fb, np.empty(workspace_length(ib)), q, Mass)


@helper
def validated_mass(st, ib, fb, buf, q, Mass):
    """``_mass`` of one configuration, validated."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    if not valid_configuration(pm, q, w.q_n):
        return INVALID
    _mass(st, pm, w, w.q_n, Mass)
    return finite_result(Mass)


@entry_point
def hybrid(ib, fb, st, t, n_threads, q, u, tau, udot_known, prescribed, fext, udot, T, status):
    """Hybrid dynamics (:mod:`flexdyn.hybrid`) of the states ``t, t + n_threads, …`` of
    ``q`` (B, nq), ``u``, ``tau``, ``udot_known`` (B, nu), ``fext`` (B, n, 6), with the mask
    ``prescribed`` (nu,) shared by all (1.0 where the acceleration is given, 0.0 where the
    force is): ``u̇`` into ``udot`` and ``T`` into ``T`` (B, nu), ``status`` (B,) as the other
    entries (the body index of a singular free-part ``D``).  Per state: the terms, the
    filter of :func:`~flexdyn.engine.articulated_body.articulated_inertias` with the mask, the
    smoother of Eq 58 (:func:`~flexdyn.engine.articulated_body.articulated_accelerations`, which
    returns the prescribed ``χ̇_K`` as given) and
    :func:`~flexdyn.engine.articulated_body.prescribed_loads`.  O(N); releases the GIL."""
    pm, w = unpack(ib, fb), workspace(ib)
    for b in range(t, q.shape[0], n_threads):
        if not (valid_state(pm, q[b], u[b], tau[b], fext[b], w.q_n)
                and finite(udot_known[b])):
            status[b] = INVALID
            continue
        position_velocity_terms(st, pm, w, w.q_n, u[b], fext[b])
        tau_e = applied_forces(pm, w, w.q_n, u[b], tau[b])
        s = articulated_inertias(pm, w, tau_e, prescribed, udot_known[b])
        if s < 0:
            articulated_accelerations(pm, w, udot[b])
            prescribed_loads(pm, w, prescribed, udot_known[b], tau_e, T[b])
            add_passive_forces(pm, w.q_n, u[b], -1.0, T[b])  # sat(τ) free, motor prescribed
            s = finite_result(udot[b])
            if s == -1:
                s = finite_result(T[b])
        status[b] = s


#: operation codes of :func:`batch`
ARTICULATED, COMPOSITE, INVERSE, MASS = range(4)


@entry_point
def batch(ib, fb, st, op, t, n_threads, q, u, x, fext, out, status):
    """Operation ``op`` on the states ``t, t + n_threads, …`` of the leading axis of ``q``,
    ``u``, ``x`` (τ or u̇), ``fext``, into ``out`` (B, nu) (B, nu·nu for :data:`MASS`) and
    ``status`` (B,), in one workspace.  It releases the GIL: ``n_threads`` Python threads
    share a batch."""
    pm, w = unpack(ib, fb), workspace(ib)
    nu = ib[3]
    for b in range(t, q.shape[0], n_threads):
        if op == ARTICULATED:
            status[b] = articulated_forward_dynamics(st, pm, w, q[b], u[b], x[b], fext[b],
                                                     out[b])
        elif op == COMPOSITE:
            status[b] = _forward_composite(st, pm, w, q[b], u[b], x[b], fext[b], out[b])
        elif op == INVERSE:
            status[b] = inverse_dynamics(st, pm, w, q[b], u[b], x[b], fext[b], out[b])
        else:
            status[b] = _mass(st, pm, w, q[b], out[b].reshape((nu, nu)))


@entry_point
def batch_rigid_tree(ib, fb, t, n_threads, q, u, x, fext, out, status):
    """:func:`batch`'s :data:`ARTICULATED` of a rigid tree on one-dof joints
    (:func:`~flexdyn.engine.rigid_tree.is_rigid_tree`) by ``rigid_tree_forward_dynamics``,
    on a workspace it holds (``_rigid_tree_batch``)."""
    _rigid_tree_batch(ib, fb, np.empty(workspace_length(ib)), t, n_threads, q, u, x, fext,
                      out, status)


@helper
def _rigid_tree_batch(ib, fb, buf, t, n_threads, q, u, x, fext, out, status):
    """:func:`batch_rigid_tree` on the workspace carved from ``buf`` (as
    ``_rigid_tree_forward``)."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    for b in range(t, q.shape[0], n_threads):
        status[b] = rigid_tree_forward_dynamics(pm, w, q[b], u[b], x[b], fext[b], out[b])


@helper
def _unit_quaternions(ints, q, q_n):
    """``q_n = q`` with every joint quaternion scaled to unit length
    (:meth:`flexdyn.chain.Model.normalize_configuration`); False for a zero quaternion."""
    copy(q, q_n)
    for i in range(ints.shape[0]):
        code = ints[i, JCODE]
        if code == SPHERICAL or code == FREE:
            s = ints[i, QS]
            norm = math.sqrt(q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2)
            if norm == 0.0:
                return False
            for k in range(4):
                q_n[s + k] = q[s + k] / norm
    return True


@helper
def _qdot(ints, jparam, q, u, out, R, T66, T6):
    """The kinematic equation ``q̇ = Γ(q) u`` (nq,) (:meth:`flexdyn.chain.Model.qdot`):
    ``q̇ = β`` for joints whose coordinates are their speeds, ``q̇ = ½ q ⊗ [0; ω]`` for a
    quaternion, ``ṗ = R(q) v`` for a free joint's position, Eqs 19/25 for a product joint
    (``product_qdot``), ``η̇`` for the modal coordinates; ``R`` (3 × 3), ``T66``
    (2 × 6 × 6) and ``T6`` (≥ 2 × 6) scratch."""
    for i in range(ints.shape[0]):
        code, qs, us = ints[i, JCODE], ints[i, QS], ints[i, US]
        nqj, nj = ints[i, NQJ], ints[i, NJ]
        if code == PRODUCT:
            product_qdot(jparam[i], q[qs:qs + nqj], u[us:us + nj], out[qs:qs + nqj], T66[0],
                         T66[1], R, T6[0], T6[1])
        elif code == SPHERICAL or code == FREE:
            qw, qx, qy, qz = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
            w0, w1, w2 = u[us], u[us + 1], u[us + 2]
            out[qs] = -0.5 * (qx * w0 + qy * w1 + qz * w2)
            out[qs + 1] = 0.5 * (qw * w0 + qy * w2 - qz * w1)
            out[qs + 2] = 0.5 * (qw * w1 + qz * w0 - qx * w2)
            out[qs + 3] = 0.5 * (qw * w2 + qx * w1 - qy * w0)
            if code == FREE:
                quat_rot_kernel(qw, qx, qy, qz, R)
                mv(R, u[us + 3:us + 6], out[qs + 4:qs + 7], False)
        rate_entries(ints, i, u, out, code != PRODUCT and code != SPHERICAL and code != FREE)


@helper
def rate_entries(ints, i, x, out, joint):
    """Body ``i``'s entries of ``out`` (layout of ``q``) that are those of ``x`` (layout of
    ``u``): its modal coordinates and, with ``joint``, its joint's (a joint whose coordinates
    are their own rates)."""
    qs, us, nqj, nj = ints[i, QS], ints[i, US], ints[i, NQJ], ints[i, NJ]
    if joint:
        for k in range(nqj):
            out[qs + k] = x[us + k]
    for k in range(ints[i, MODES]):
        out[qs + nqj + k] = x[us + nj + k]


@helper
def power_rates(pm, w, q, u, tau, fext, out):
    """The integrands of the energy balance (:mod:`flexdyn.simulate`): ``out[0] = sat(τ)·u``,
    ``out[1] = Σ_i f_ext(i)·V(i)`` (the body twists of Eq 11), ``out[2] = Σ_i η̇ᵀ C η̇`` plus
    the joint forces' dissipation (:func:`flexdyn.joint_forces.joint_dissipation`)."""
    ints = pm.ints
    p_tau = 0.0
    for k in range(u.shape[0]):
        p_tau += tau[k] * u[k]
    p_ext = 0.0
    p_d = 0.0
    for i in range(ints.shape[0]):
        if ints[i, JF] != 0:
            qs, us = ints[i, QS], ints[i, US]
            for k in range(ints[i, NJ]):
                c, x, v = pm.jforce[i, k], q[qs + k], u[us + k]
                p_tau += (saturated_kernel(c, tau[us + k]) - tau[us + k]) * v
                p_d += (conservative_force_kernel(c, x) - passive_force_kernel(c, x, v)) * v
        m, s = ints[i, MODES], ints[i, US] + ints[i, NJ]
        for r in range(6):
            p_ext += fext[i, r] * w.V_m[i, m + r]
        for r in range(m):
            t = 0.0
            for k in range(m):
                t += pm.C[i, r, k] * u[s + k]
            p_d += u[s + r] * t
    out[0] = p_tau
    out[1] = p_ext
    out[2] = p_d


@inlined
def derivative_inputs(pm, w, x, tau, fext):
    """Whether ``x = [q; u]``, ``τ`` and ``f_ext`` are finite and no joint quaternion is
    zero; ``w.q_n`` is ``q`` with the quaternions scaled to unit length (no tolerance: an
    integrator lets their norm drift)."""
    nq = w.q_n.shape[0]
    return (finite(x[:nq + w.u_nl.shape[0]]) and finite(tau) and finite(fext)
            and _unit_quaternions(pm.ints, x[:nq], w.q_n))


@inlined
def derivative_outputs(pm, w, x, tau, fext, xdot, status):
    """After forward dynamics that ended with ``status``: ``q̇ = Γ(q) u`` into ``xdot[:nq]``
    and the energy-balance integrands into ``xdot[nq + nu:nq + nu + 3]`` when ``xdot`` has
    room for them; −1 or :data:`~flexdyn.engine.layout.OVERFLOW` (``status`` itself when it is a
    body index)."""
    if status >= 0:
        return status
    nq, nu = w.q_n.shape[0], w.u_nl.shape[0]
    u = x[nq:nq + nu]
    _qdot(pm.ints, pm.jparam, w.q_n, u, xdot[:nq], w.t_33[0], w.t_66, w.t_6)
    if xdot.shape[0] >= nq + nu + 3:
        power_rates(pm, w, w.q_n, u, tau, fext, xdot[nq + nu:nq + nu + 3])
    return finite_result(xdot)


@entry_point
def derivative_articulated(ib, fb, st, x, tau, fext, xdot):
    """:func:`validated_derivative` of one state."""
    return validated_derivative(st, ib, fb, np.empty(workspace_length(ib)), x, tau, fext, xdot)


@helper
def validated_derivative(st, ib, fb, buf, x, tau, fext, xdot):
    """``ẋ = [Γ(q) u; u̇]`` of ``x = [q; u]`` (nq + nu,) into ``xdot`` (nq + nu,), u̇ by
    Eqs 51/58, with the energy-balance integrands (``power``) in
    ``xdot[nq + nu:nq + nu + 3]`` when ``xdot`` has room for them.  Quaternions are scaled to
    unit length without a tolerance.  Status as the other entries: −1,
    :data:`~flexdyn.engine.layout.INVALID` (a non-finite input or a zero quaternion),
    :data:`~flexdyn.engine.layout.OVERFLOW` or the index of a body whose ``D`` is singular."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    nq, nu = w.q_n.shape[0], w.u_nl.shape[0]
    if not derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    return derivative_outputs(pm, w, x, tau, fext, xdot, articulated_forward_dynamics(
        st, pm, w, w.q_n, x[nq:nq + nu], tau, fext, xdot[nq:nq + nu]))


@entry_point
def derivative_rigid_tree(ib, fb, x, tau, fext, xdot):
    """:func:`derivative_articulated` of a rigid tree on one-dof joints
    (:func:`~flexdyn.engine.rigid_tree.is_rigid_tree`), u̇ by ``rigid_tree_forward_dynamics``,
    on a workspace it holds (``_rigid_tree_derivative``)."""
    return _rigid_tree_derivative(ib, fb, np.empty(workspace_length(ib)), x, tau, fext, xdot)


@helper
def _rigid_tree_derivative(ib, fb, buf, x, tau, fext, xdot):
    """:func:`derivative_rigid_tree` on the workspace carved from ``buf`` (as
    ``_rigid_tree_forward``)."""
    pm, w, nq, nu = unpack(ib, fb), carve(ib, buf), ib[4], ib[3]
    if not derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    status = rigid_tree_forward_dynamics(pm, w, w.q_n, x[nq:nq + nu], tau, fext, xdot[nq:nq + nu])
    return derivative_outputs(pm, w, x, tau, fext, xdot, status)


@entry_point
def derivative_composite(ib, fb, st, x, tau, fext, xdot):
    """:func:`derivative_articulated` with u̇ by Eq 46 (status 0 for a singular mass
    matrix)."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    status = _forward_composite(st, pm, w, w.q_n, x[ib[4]:ib[4] + ib[3]], tau, fext,
                                xdot[ib[4]:ib[4] + ib[3]])
    return derivative_outputs(pm, w, x, tau, fext, xdot, status)


@allocating_helper
def state_derivative(ib, fb, method, x, tau, fext, xdot):
    """:func:`derivative_articulated` (``method`` :data:`ARTICULATED`) or
    :func:`derivative_composite` (:data:`COMPOSITE`), for the C entry
    (:mod:`flexdyn.engine.ccall`); each entry alone compiles only its method."""
    if method == COMPOSITE:
        return derivative_composite(ib, fb, None, x, tau, fext, xdot)
    return derivative_articulated(ib, fb, None, x, tau, fext, xdot)
