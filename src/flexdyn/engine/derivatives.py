"""The derivatives of inverse dynamics (Eq 44) in the state, compiled: forward-mode
differentiation of the engine's own stages in complex arithmetic.

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
``∂τ/∂u̇ = M`` (Eqs 47/50) comes from the real position terms of the same call.
"""

from __future__ import annotations

import numpy as np

from ..linalg import COMPLEX_STEP
from .composite_body import crba
from .forces import add_passive_forces
from .jit import entry_point
from .kernels import finite_result, inverse_dynamics, valid_state
from .layout import INVALID, carve, unpack, workspace, workspace_length
from .newton_euler import rnea
from .terms import position_terms, velocity_terms

__all__ = ["inverse_derivatives"]


@entry_point
def inverse_derivatives(ib, fb, t, n_threads, q, u, udot, fext, q_dir, tau, d_q, d_u, Mass,
                        status):
    """For the states ``s = t, t + n_threads, …`` of ``q`` (B × nq), ``u``, ``udot`` (B × nu),
    ``fext`` (B × n × 6) and the tangent directions ``q_dir`` (B × nq × nu, ``∂q/∂δ``): ``τ``
    into ``tau[s]`` (nu,), ``∂τ/∂δ`` into ``d_q[s]``, ``∂τ/∂u`` into ``d_u[s]`` and ``M`` into
    ``Mass[s]`` (nu × nu each); ``status`` (B,): −1, :data:`~flexdyn.engine.layout.INVALID`
    or :data:`~flexdyn.engine.layout.OVERFLOW`."""
    pm, w = unpack(ib, fb), workspace(ib)
    wc = carve(ib, np.zeros(workspace_length(ib), dtype=np.complex128))
    nq, nu = q.shape[1], u.shape[1]
    qc = np.empty(nq, dtype=np.complex128)
    uc = np.empty(nu, dtype=np.complex128)
    tc = np.empty(nu, dtype=np.complex128)
    h = COMPLEX_STEP
    for s in range(t, q.shape[0], n_threads):
        if not valid_state(pm, q[s], u[s], udot[s], fext[s], w.q_n):
            status[s] = INVALID
            continue
        inverse_dynamics(pm, w, w.q_n, u[s], udot[s], fext[s], tau[s])
        crba(pm, w, Mass[s])  # from the real position terms just computed
        for k in range(nu):
            uc[k] = u[s, k]
        for j in range(nu):  # ∂τ/∂δ_j: the whole of Eq 44 at q + i h ∂q/∂δ_j
            for k in range(nq):
                qc[k] = complex(w.q_n[k], h * q_dir[s, k, j])
            inverse_dynamics(pm, wc, qc, uc, udot[s], fext[s], tc)
            for r in range(nu):
                d_q[s, r, j] = tc[r].imag / h
        for k in range(nq):
            qc[k] = w.q_n[k]
        position_terms(pm, qc, wc)
        for j in range(nu):  # ∂τ/∂u_j: the velocity terms and Eq 44 at u + i h e_j
            uc[j] = complex(u[s, j], h)
            velocity_terms(pm, qc, uc, fext[s], wc)
            rnea(pm, wc, udot[s], True, tc)
            add_passive_forces(pm, qc, uc, -1.0, tc)
            for r in range(nu):
                d_u[s, r, j] = tc[r].imag / h
            uc[j] = u[s, j]
        status[s] = min(finite_result(d_q[s]), finite_result(d_u[s]), finite_result(tau[s]))
