"""The derivatives of inverse (Eq 44) and forward dynamics in the state and the inputs,
compiled: forward-mode differentiation of the engine's own stages in complex arithmetic.

With ``τ = ID(q, u, u̇)`` the motor forces of :func:`flexdyn.engine.kernels.inverse_dynamics`
(position and velocity terms, Newton–Euler, less the joint forces), one evaluation in complex
numbers at ``q + i h ∂q/∂δ_j`` gives ``Im τ / h = ∂τ/∂δ_j`` exactly to round-off for a tiny
``h`` (:data:`flexdyn.linalg.COMPLEX_STEP`): nothing is subtracted, the ``O(h²)`` term is
below any double.  This is forward-mode automatic differentiation with the imaginary part as
the tangent (Martins, Sturdza & Alonso, *ACM TOMS* 29(3), 2003): every body model, joint kind
and joint force of the stages differentiates by the same code that computes it.  ``δ`` are
tangent coordinates (:class:`flexdyn.tangent.TangentCoordinates`), given to the entry as the
columns of ``∂q/∂δ`` (nq × nu); quaternions need no normalisation along them, since a tangent
direction ``Q ⊗ [0, e/2]`` keeps ``|Q|`` to second order.

The speeds' columns reuse the position terms of the state (computed once per state, in
complex numbers) and repeat the velocity terms and Newton–Euler only.  The mass matrix
``∂τ/∂u̇ = M`` (Eqs 47/50) comes from the state's real position terms.  For the
derivatives of forward dynamics the same entry solves ``M du̇ = sat′(τ) dτ − ∂τ/∂δ dδ −
∂τ/∂u du`` by a Cholesky factor of ``M``, column by column, at the ``u̇`` its caller
computed.  A rigid tree on one-dof joints (:func:`flexdyn.engine.rigid_tree.is_rigid_tree`)
evaluates each column by its fused sweeps (:func:`rigid_tree_inverse`).
"""

from __future__ import annotations

import numpy as np

from ..linalg import COMPLEX_STEP, MASS_MATRIX_RTOL
from .algebra import cholesky_factor, cholesky_substitute, copy, mv6
from .composite_body import crba
from .forces import add_passive_forces, motor_torques
from .jit import entry_point, helper
from .kernels import finite, inverse_dynamics, valid_state
from .layout import INVALID, OVERFLOW, PARENT, US, carve, unpack, workspace, workspace_length
from .newton_euler import gravity_acceleration, rnea
from .rigid_tree import rigid_tree_terms
from .terms import position_terms, velocity_terms
from .tip import node_twist, node_wrench

__all__ = ["derivatives", "rigid_tree_inverse"]


@entry_point
def derivatives(ib, fb, forward, rigid, t, n_threads, q, u, udot, tau, fext, q_dir, d_q, d_u,
                d_x, status):
    """For the states ``s = t, t + n_threads, …`` of ``q`` (B × nq), ``u``, ``udot``, ``tau``
    (B × nu), ``fext`` (B × n × 6) and the tangent directions ``q_dir`` (B × nq × nu,
    ``∂q/∂δ``), into ``d_q[s]``, ``d_u[s]``, ``d_x[s]`` (nu × nu each): with ``forward``
    False ``∂τ/∂δ``, ``∂τ/∂u`` and ``M`` of inverse dynamics at ``(q, u, u̇)`` (``tau``
    unused); with ``forward`` True ``∂u̇/∂δ``, ``∂u̇/∂u`` and ``∂u̇/∂τ`` of forward dynamics,
    ``udot`` its accelerations at ``(q, u, τ)``.  ``rigid``: the model is a rigid tree on
    one-dof joints, whose columns take :func:`rigid_tree_inverse`.  ``status`` (B,): −1,
    :data:`~flexdyn.engine.layout.INVALID`, :data:`~flexdyn.engine.layout.OVERFLOW` or 0
    (the mass matrix is singular)."""
    pm, w = unpack(ib, fb), workspace(ib)
    wc = carve(ib, np.zeros(workspace_length(ib), dtype=np.complex128))
    nq, nu = q.shape[1], u.shape[1]
    qc = np.empty(nq, dtype=np.complex128)
    uc = np.empty(nu, dtype=np.complex128)
    tc = np.empty(nu, dtype=np.complex128)
    col = np.empty(nu)
    L = np.empty((nu, nu))  # M, then its Cholesky factor (forward)
    h = COMPLEX_STEP
    for s in range(t, q.shape[0], n_threads):
        if not (valid_state(pm, q[s], u[s], udot[s], fext[s], w.q_n) and finite(tau[s])):
            status[s] = INVALID
            continue
        position_terms(pm, w.q_n, w)  # M (Eqs 47/50), as kernels' mass entry
        crba(pm, w, L)
        if not forward:
            copy(L, d_x[s])
        elif not cholesky_factor(L, MASS_MATRIX_RTOL):
            status[s] = 0
            continue
        for k in range(nu):
            uc[k] = u[s, k]
        for j in range(nu):  # ∂τ/∂δ_j: the whole of Eq 44 at q + i h ∂q/∂δ_j
            for k in range(nq):
                qc[k] = complex(w.q_n[k], h * q_dir[s, k, j])
            if rigid:
                rigid_tree_inverse(pm, wc, qc, uc, udot[s], fext[s], tc)
            else:
                inverse_dynamics(pm, wc, qc, uc, udot[s], fext[s], tc)
            _column(forward, L, tc, h, col, d_q[s], j)
        for k in range(nq):
            qc[k] = w.q_n[k]
        if not rigid:
            position_terms(pm, qc, wc)
        for j in range(nu):  # ∂τ/∂u_j: the velocity terms and Eq 44 at u + i h e_j
            uc[j] = complex(u[s, j], h)
            if rigid:
                rigid_tree_inverse(pm, wc, qc, uc, udot[s], fext[s], tc)
            else:
                velocity_terms(pm, qc, uc, fext[s], wc)
                rnea(pm, wc, udot[s], True, tc)
                add_passive_forces(pm, qc, uc, -1.0, tc)
            _column(forward, L, tc, h, col, d_u[s], j)
            uc[j] = u[s, j]
        if forward:  # ∂u̇/∂τ = M⁻¹ diag(sat′(τ)): sat′ by a complex step of the limits
            for k in range(nu):
                uc[k] = complex(tau[s, k], h)
            motor_torques(pm, uc, tc)
            for j in range(nu):
                for k in range(nu):
                    col[k] = 0.0
                col[j] = tc[j].imag / h
                cholesky_substitute(L, col, col)
                for k in range(nu):
                    d_x[s, k, j] = col[k]
        status[s] = -1 if finite(d_q[s]) and finite(d_u[s]) else OVERFLOW


@helper
def _column(forward, L, tc, h, col, out, j):
    """Column ``j`` of ``out`` from the complex result ``tc`` (nu,) of a step ``h``:
    ``∂τ = Im tc / h``, or ``−M⁻¹ ∂τ`` (``forward``, ``L`` the factor of ``M``); ``col``
    (nu,) scratch."""
    nu = col.shape[0]
    for k in range(nu):
        col[k] = -tc[k].imag / h if forward else tc[k].imag / h
    if forward:
        cholesky_substitute(L, col, col)
    for k in range(nu):
        out[k, j] = col[k]


@helper
def rigid_tree_inverse(pm, w, q, u, udot, fext, tau):
    """Eq 44 of a rigid tree on one-dof joints into ``tau`` (nu,), less the joint forces:
    the fused terms of :func:`~flexdyn.engine.rigid_tree.rigid_tree_terms`, then one sweep
    base to tip, ``α(i) = φ*(i) α(p) + h u̇ + a(i)`` (``α`` of the root's parent ``[0; −g]``)
    and ``f(i) = M(i) α(i) + b(i)``, and one tip to base, ``τ_i = hᵀ f(i)``,
    ``f(p) += φ(i) f(i)`` (:func:`~flexdyn.engine.newton_euler.rnea` with ``ℋ(i) = h``)."""
    rigid_tree_terms(pm, w, q, u, fext)
    ints = pm.ints
    n = ints.shape[0]
    a_g = w.t_6[2]
    gravity_acceleration(pm, a_g)
    for i in range(n):
        pa, al, f = ints[i, PARENT], w.alpha[i], w.f[i]
        node_twist(w.R_phi[i], w.p_phi[i], pm.X_joint0[i], 0, al,
                   a_g if pa < 0 else w.alpha[pa], al)  # φ*(i) α(p): no modes (m = 0)
        hi, ud = w.Hcal[i, 0], udot[ints[i, US]]
        for r in range(6):
            al[r] += hi[r] * ud + w.a_m[i, r]
        mv6(pm.M_m0[i], al, f, False)
        for r in range(6):
            f[r] += w.bias[i, r]
    for i in range(n - 1, -1, -1):
        f, hi = w.f[i], w.Hcal[i, 0]
        x = 0.0
        for r in range(6):
            x += hi[r] * f[r]
        tau[ints[i, US]] = x
        pa = ints[i, PARENT]
        if pa >= 0:
            node_wrench(w.R_phi[i], w.p_phi[i], pm.X_joint0[i], 0, f, w.f[pa])
    add_passive_forces(pm, q, u, -1.0, tau)
