"""Compiled entries of the engine beyond the dynamics of :mod:`flexdyn.engine.kernels`, built
from its stages and helpers and compiled on their first call only (the dynamics entries do not
reach them):

* :func:`mass_inverse` — ``M⁻¹ b`` by Lemma 4 (Eqs 54–57): the articulated factors of
  Eq 51 (``P``, ``G``: ``q`` only) applied to a block of ``K`` right-hand sides in one filter
  and one smoother sweep, with no velocity terms and no gravity
  (:func:`flexdyn.articulated_body.apply_mass_matrix_inverse`);
* :func:`energy_momentum` — kinetic and potential energy and the spatial momentum of a state
  (:mod:`flexdyn.energy`);
* :func:`joint_wrenches` — the spatial force each joint transmits (Eq 36), from the modal
  forces of Newton–Euler (:func:`flexdyn.newton_euler.joint_wrenches`).

All run over the states ``t, t + n_threads, …`` of a batch in one workspace, validate each
state (``status``: −1 done, :data:`~flexdyn.engine.layout.INVALID`,
:data:`~flexdyn.engine.layout.OVERFLOW`, or the body whose ``D`` is singular) and release
the GIL.  A block of right-hand sides is held transposed, one right-hand side per row (K × ·),
so that every product is one of the kernels' row-major loops.
"""

from __future__ import annotations

import numpy as np

from . import stages
from .algebra import copy, mm, mmt, mtv, mv, phi_matrix
from .articulated_body import Hcal_X, P_Hcal_t, articulated_inertias, spd_inverse
from .forces import joint_potential
from .jit import entry_point, helper
from .kernels import finite_result, position_velocity_terms, valid_configuration, valid_state
from .layout import AT, INVALID, MODES, NJ, NQJ, PARENT, QS, US, unpack, workspace
from .stages import run
from .terms import modal_velocities, strain_energy

__all__ = ["ENERGY_MOMENTUM", "KINETIC", "MOMENTUM", "POTENTIAL", "block_filter",
           "block_smoother", "energy_momentum", "joint_wrenches", "mass_inverse", "poses"]


#: entries of a row of :func:`energy_momentum`: ``T`` (J), ``V`` (J), ``[h; p]`` (N m s, N s)
KINETIC, POTENTIAL, MOMENTUM = 0, 1, slice(2, 8)
#: length of a row of :func:`energy_momentum`
ENERGY_MOMENTUM = 8


# ----------------------------------------------------------------------------------------------
# M⁻¹ b, Lemma 4
# ----------------------------------------------------------------------------------------------
@entry_point
def mass_inverse(ib, fb, st, t, n_threads, q, rhsT, out, status):
    """``(M⁻¹ b)ᵀ`` (K × nu) into ``out[s]`` for the states ``s = t, t + n_threads, …`` of ``q``
    (B × nq), for the right-hand sides ``b`` given as the rows of ``rhsT`` (K × nu); ``status``
    (B,).  Per state: the position terms, the articulated factors (Eq 51, by
    :func:`~flexdyn.engine.articulated_body.articulated_inertias` with zero loads) and the
    block sweeps of Lemma 4."""
    pm, w = unpack(ib, fb), workspace(ib)
    n, s_max, nu = ib[0], ib[1] + 6, ib[3]
    K = rhsT.shape[0]
    Z = np.empty((n, K, s_max))  # z(i)ᵀ of the filter
    alpha = np.empty((n, K, s_max))  # α(i)ᵀ of the smoother
    T = np.empty((3, K, s_max))  # scratch
    zero = np.zeros(nu)
    for b in range(t, q.shape[0], n_threads):
        if not valid_configuration(pm, q[b], w.q_n):
            status[b] = INVALID
            continue
        w.flat[:] = 0.0  # no velocity terms: a_m = b_m = 0
        run(st, stages.position, pm, w, w.q_n)
        status[b] = articulated_inertias(pm, w, zero, None, None)
        if status[b] >= 0:
            continue
        block_filter(pm.ints, w.Hcal, w.A, w.phi, w.P, w.G, rhsT, Z, out[b], w.t_PH, w.t_D,
                      w.t_L, w.t_Li, T)
        block_smoother(pm.ints, w.Hcal, w.A, w.phi, w.G, alpha, out[b], T)
        status[b] = finite_result(out[b])


@helper
def block_filter(ints, Hcal, A, phi, P, G, rhsT, Z, X, PH, D, L, Dinv, T):
    """The tip-to-base filter of Eq 58 without velocity terms, for the rows of ``rhsT``::

        z(i) = Σ_c Φ(i, c) z⁺(c),  ε(i) = b(i) − ℋ(i) z(i),  ν(i) = D⁻¹(i) ε(i),
        z⁺(i) = z(i) + G(i) ε(i)

    ``νᵀ`` into the columns of body ``i`` of ``X`` (K × nu).  ``D⁻¹`` is formed again from
    the stored ``P(i)`` (``articulated_inertias`` keeps ``P`` and ``G`` only): O(s²k) per body
    beside the block's O(s k K).  ``PH``, ``D``, ``L``, ``Dinv`` (s × s) and ``T`` (3, K, s)
    scratch."""
    Z[:] = 0.0
    for i in range(ints.shape[0] - 1, -1, -1):
        m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
        k, s = nj + m, m + 6
        H = Hcal[i, :k, :s]
        P_Hcal_t(P[i, :s, :s], H, m, nj, PH[:s, :k])
        Hcal_X(H, PH[:s, :k], m, nj, D[:k, :k])
        spd_inverse(D[:k, :k], 0.0, L[:k, :k], Dinv[:k, :k])  # regular: checked in Eq 51
        eps = T[0, :, :k]  # εᵀ = bᵀ − zᵀ ℋᵀ
        mmt(Z[i, :, :s], H, eps, False)
        for c in range(eps.shape[0]):
            for r in range(k):
                eps[c, r] = rhsT[c, us + r] - eps[c, r]
        mmt(eps, Dinv[:k, :k], X[:, us:us + k], False)  # νᵀ = εᵀ D⁻ᵀ
        if pa >= 0:
            zp = T[1, :, :6]  # z⁺ᵀ = zᵀ + εᵀ Gᵀ, the rigid part (the parent sees no other)
            copy(Z[i, :, m:s], zp)
            mmt(eps, G[i, m:s, :k], zp, True)
            _block_to_parent(ints, A, phi, i, zp, Z, T[2, :, :6])


@helper
def _block_to_parent(ints, A, phi, i, f6, Z, Y):
    """``Z(p)ᵀ += f6ᵀ φᵀ(i) Aᵀ(i)``: wrenches at ``F_i`` (rows of ``f6``, K × 6) into the
    parent's modal forces; ``Y`` (K × 6) scratch (block form of ``terms.to_parent``)."""
    pa = ints[i, PARENT]
    mp = ints[pa, MODES]
    mmt(f6, phi[i], Y, False)
    if ints[i, AT] == 1:
        for c in range(Y.shape[0]):
            for r in range(6):
                Z[pa, c, mp + r] += Y[c, r]
    else:
        mmt(Y, A[i, :mp + 6], Z[pa, :, :mp + 6], True)


@helper
def block_smoother(ints, Hcal, A, phi, G, alpha, X, T):
    """The base-to-tip smoother of Eq 58 without velocity terms and gravity, on the rows of
    ``X`` (``νᵀ`` in, ``χ̇ᵀ = (M⁻¹ b)ᵀ`` out)::

        a⁺(i) = φ*(i) A*(i) α(p)  (0 at a root),  χ̇(i) = ν(i) − G*(i) [0; a⁺(i)],
        α(i) = [0; a⁺(i)] + ℋ*(i) χ̇(i)

    ``alpha`` (n, K, s) and ``T`` (3, K, s) scratch."""
    for i in range(ints.shape[0]):
        m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
        k, s = nj + m, m + 6
        chi = X[:, us:us + k]
        a_plus = T[0, :, :6]  # a⁺ᵀ = α(p)ᵀ A φ
        if pa < 0:
            a_plus[:, :] = 0.0
        else:
            mp = ints[pa, MODES]
            if ints[i, AT] == 1:
                mm(alpha[pa, :, mp:mp + 6], phi[i], a_plus)
            else:
                mm(alpha[pa, :, :mp + 6], A[i, :mp + 6], T[1, :, :6])
                mm(T[1, :, :6], phi[i], a_plus)
            Ga = T[1, :, :k]  # χ̇ᵀ = νᵀ − a⁺ᵀ G_r
            mm(a_plus, G[i, m:s, :k], Ga)
            chi -= Ga
        al = alpha[i, :, :s]
        mm(chi, Hcal[i, :k, :s], al)
        for c in range(al.shape[0]):
            for r in range(6):
                al[c, m + r] += a_plus[c, r]


# ----------------------------------------------------------------------------------------------
# joint wrenches, Eq 36
# ----------------------------------------------------------------------------------------------
@entry_point
def joint_wrenches(ib, fb, st, t, n_threads, q, u, udot, fext, out, status):
    """The spatial force ``[moment; force]`` each joint transmits from the parent to the
    child, in the child's joint frame ``J_c`` about its origin, into ``out[s]`` (n × 6) for
    the states ``s = t, t + n_threads, …`` of ``q`` (B × nq), ``u``, ``udot`` (B × nu) and
    ``fext`` (B × n × 6); ``status`` (B,).  Per state: the terms, Newton–Euler (Eq 44,
    :func:`~flexdyn.engine.newton_euler.rnea`, whose tip-to-base sweep leaves the modal forces
    ``f_m(i)`` of Eq 36 in the workspace) and ``X_{i←J_c}ᵀ f_V(i)`` with ``f_V`` the rigid
    rows of ``f_m(i)`` (:func:`flexdyn.newton_euler.joint_wrenches`)."""
    pm, w = unpack(ib, fb), workspace(ib)
    ints = pm.ints
    T = np.empty(ib[3])  # the generalized forces, not used
    for b in range(t, q.shape[0], n_threads):
        if not valid_state(pm, q[b], u[b], udot[b], fext[b], w.q_n):
            status[b] = INVALID
            continue
        position_velocity_terms(st, pm, w, w.q_n, u[b], fext[b])
        run(st, stages.newton_euler, pm, w, udot[b], T)
        for i in range(ints.shape[0]):
            m = ints[i, MODES]
            mtv(w.X_joint[i], w.f[i, m:m + 6], out[b, i], False)
        status[b] = finite_result(out[b])


# ----------------------------------------------------------------------------------------------
# energies and momentum
# ----------------------------------------------------------------------------------------------
@entry_point
def energy_momentum(ib, fb, st, t, n_threads, q, u, out, status):
    """``[T, V, h, p]`` (:data:`ENERGY_MOMENTUM`) into ``out[s]`` for the states
    ``s = t, t + n_threads, …`` of ``q`` (B × nq), ``u`` (B × nu); ``status`` (B,).  Per
    state: the position terms, the twists of Eq 11 (the actual modal rates, for every body
    model) and ``_energy_momentum``."""
    pm, w = unpack(ib, fb), workspace(ib)
    n = ib[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    none, no_f = np.zeros(0), np.zeros((0, 6))
    for b in range(t, q.shape[0], n_threads):
        if not valid_state(pm, q[b], u[b], none, no_f, w.q_n):
            status[b] = INVALID
            continue
        w.flat[:] = 0.0
        run(st, stages.position, pm, w, w.q_n)
        modal_velocities(pm.ints, w.Hcal, w.phi, w.A, u[b], w.V_m, w.t_6[0])
        poses(pm.ints, w.A, w.phi, R, p, w.t_33[0], w.t_3[0])
        _energy_momentum(pm, w.q_n, w.M_m, w.V_m, R, p, w.t_v, w.t_66[0], out[b])
        status[b] = finite_result(out[b])


@helper
def poses(ints, A, phi, R, p, Rt, pt):
    """Pose ``(R, p)`` of every ``F_i`` in the inertial frame, base to tip:
    ``pose(i) = pose(p) ∘ T_t ∘ T_parent(i)`` with ``T_t`` read from the rows ``φ(p, t_i)``
    of ``A(i)`` (Eq 14: the parent's attach node, deformed for the full model) and
    ``T_parent`` from ``φ(i)`` (Eq 15); ``Rt`` (3 × 3), ``pt`` (3,) scratch."""
    for i in range(ints.shape[0]):
        pa = ints[i, PARENT]
        if pa < 0:
            Rt[:, :] = 0.0
            pt[:] = 0.0
            for r in range(3):
                Rt[r, r] = 1.0
        else:
            mp = ints[pa, MODES]
            _compose(R[pa], p[pa], A[i, mp:mp + 6], Rt, pt)
        _compose(Rt, pt, phi[i], R[i], p[i])


@helper
def _compose(R1, p1, phi, R, p):
    """``(R, p) = (R1, p1) ∘ T`` for the transform ``T = (R_T, p_T)`` of
    ``φ = [[R_T, p̃_T R_T], [0, R_T]]``: ``R = R1 R_T``, ``p = p1 + R1 p_T`` with
    ``p̃_T = φ₁₂ R_Tᵀ``."""
    x = phi[2, 3] * phi[1, 0] + phi[2, 4] * phi[1, 1] + phi[2, 5] * phi[1, 2]
    y = phi[0, 3] * phi[2, 0] + phi[0, 4] * phi[2, 1] + phi[0, 5] * phi[2, 2]
    z = phi[1, 3] * phi[0, 0] + phi[1, 4] * phi[0, 1] + phi[1, 5] * phi[0, 2]
    for r in range(3):
        p[r] = p1[r] + R1[r, 0] * x + R1[r, 1] * y + R1[r, 2] * z
        for c in range(3):
            R[r, c] = R1[r, 0] * phi[0, c] + R1[r, 1] * phi[1, c] + R1[r, 2] * phi[2, c]


@helper
def _energy_momentum(pm, q, M_m, V_m, R, p, y, phi0, out):
    """``out = [T, V, h, p]``; per body, with ``y = M_m V_m`` (Eqs 23, 11) =
    ``[modal momenta; h_F; p_F]``, the momentum about ``F_i`` in ``F_i``:

    * ``T = ½ Σ V_mᵀ y``;
    * ``V = Σ U(η) − g · (m x_F + R s)`` (``U``: :func:`~flexdyn.engine.terms.strain_energy`,
      ``½ ηᵀ K η`` with the stiffened models' terms), with the mass ``m`` and first moment ``s``
      (rigid part and nodes, at the node positions of the body model) read from the
      translational rows of ``M_m``: ``M_m^{rr} = [[·, s̃], [−s̃, m I]]``;
    * ``[h; p] = Σ φ(0, F_i) [h_F; p_F]``.

    ``y`` (M + 6,) and ``phi0`` (6 × 6) scratch."""
    out[:] = 0.0
    ints, g = pm.ints, pm.gravity
    for i in range(ints.shape[0]):
        m, nqj, qs = ints[i, MODES], ints[i, NQJ], ints[i, QS]
        s = m + 6
        Mi, V, yi = M_m[i, :s, :s], V_m[i, :s], y[:s]
        mv(Mi, V, yi, False)
        kinetic = 0.0
        for r in range(s):
            kinetic += V[r] * yi[r]
        elastic = strain_energy(pm, i, m, q[qs + nqj:qs + nqj + m])
        mass, sx, sy, sz = Mi[m + 3, m + 3], Mi[m + 2, m + 4], Mi[m, m + 5], Mi[m + 1, m + 3]
        gx = 0.0
        for r in range(3):
            gx += g[r] * (mass * p[i, r] + R[i, r, 0] * sx + R[i, r, 1] * sy + R[i, r, 2] * sz)
        out[0] += 0.5 * kinetic
        out[1] += elastic - gx
        phi_matrix(R[i], p[i], phi0)
        mv(phi0, yi[m:s], out[2:8], True)
    out[1] += joint_potential(pm, q)
