"""Generalized-α time integration compiled in one entry (:func:`generalized_alpha`), which
also runs two collocation methods (``_collocation_step``, ``ctl[SCHEME]``) on the same
residual, iteration-matrix blocks, forces, samples and work integrals: the two-stage
Gauss–Legendre method (fourth order, A-stable and symplectic: it keeps the energy of an
undamped linear system) and the three-stage Radau IIA method (fifth order, L-stable: it
damps the modes its step does not resolve), the latter with the step control of Hairer &
Wanner's RADAU5 (Sec IV.8).

The scheme is Chung & Hulbert's (1993) generalized-α method in the form of Arnold & Brüls
(2007) for ``M(q) q̈ + c(q, q̇, t) = τ``: with ``a`` the auxiliary "acceleration-like"
variable,

* ``(1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) q̈_{n+1} + α_f q̈_n``,
* ``q_{n+1} = q_n + h q̇_n + h² ((½ − β) a_n + β a_{n+1})``,
* ``q̇_{n+1} = q̇_n + h ((1 − γ) a_n + γ a_{n+1})``,
* the equations of motion hold at ``t_{n+1}``: ``r(q̈_{n+1}) = ID(q_{n+1}, q̇_{n+1},
  q̈_{n+1}) − τ_{n+1} = 0``,

with ``ID`` the engine's Newton–Euler inverse dynamics (Eq 44 of the theory: ``M q̈`` plus
the velocity products, gravity, the modal stiffness ``K η`` and damping ``C η̇``, less the
external wrenches and the joint forces ``τ_J``) and ``τ`` within the joints' torque limits
(:mod:`flexdyn.joint_forces`).  ``a_n`` approximates ``q̈(t_n + (α_m − α_f) h)``, which is why the
scheme is second-order accurate with ``γ = ½ + α_f − α_m``.

The unknown ``q̈_{n+1}`` is found by a modified Newton iteration on the iteration matrix
``S = M(q) + (γ h (1 − α_f)/(1 − α_m)) C + (β h² (1 − α_f)/(1 − α_m)) K``: the composite
mass matrix (Eqs 47/50) of the first iterate, and the constant modal damping and stiffness
blocks with the joint springs' and dampers' diagonal (friction and limits left out), and
added to the stiffness the tangent of the geometric elastic forces (Damaren & Sharf's Eq 20)
at the same iterate; the tangents of the velocity products and of gravity are left out (of
order ``h ω`` and ``h² ω²`` beside ``M`` for the slow rigid-body motion).  ``S`` is factored by
Cholesky and kept over the following steps while the iteration contracts fast.  It is formed
again from the kept ``M`` when the step size changes; ``M`` itself is formed afresh at once
when a correction is more than :data:`THETA_REFRESH` times the previous one (or the
iteration does not converge), and for the next step when it was more than
:data:`THETA_KEEP` times.  The iteration stops when the
distance to the solution, estimated as ``θ/(1 − θ)`` times the last correction (``θ`` the
ratio of the last two), is at most ``newton_tol · max(1, max|q̈|)``.

With the exact matrix (its blocks ``Bk`` given to :func:`generalized_alpha`) the iteration
matrix is the residual's own Jacobian, ``M + γ′ ∂r/∂q̇ + β′ ∂r/∂q``: the derivatives of
inverse dynamics at the iterate (:func:`~flexdyn.engine.derivatives.state_derivatives`;
velocity products, gravity, the modal and the joint forces included) plus the feedback's
blocks, factored by LU (it is not symmetric) and kept with ``M`` under the same rules
(``_iteration_blocks``).  Its columns of a quaternion joint are the tangent directions at the
iterate, which the local coordinates below match to first order in the step's rotation.

The schemes integrate coordinates that are their own rates, ``q̇ = u``.  A quaternion joint
(``spherical``, ``free``) has none: its coordinates here are **local**, the rotation vector
``ψ`` of its frame relative to a reference orientation and, for a free joint, its
displacement ``ρ`` relative to a reference position in the reference axes (``Q = Q_g ⊗
exp(ψ)``, ``p = p_g + R(Q_g) ρ``; ``_engine_q``), zero at the start of each step, where the
reference ``q_g`` takes up the step before (``_fold``).  Their rates are
``ψ̇ = J_r(ψ)⁻¹ ω`` and ``ρ̇ = exp(ψ̃) v`` (``_local_rates``; the identity at the step's
start): generalized-α takes the identity, which keeps its second order (the Lie-group
generalized-α of Brüls & Cardona 2010) with the displacement's term ``½ h² ω × v``
(``_free_displacement``), the collocation schemes their stage equations in
first-order form for these coordinates, ``Ψ_i = h Σ_j a_ij F(Ψ_j) V_j``, by a fixed-point
iteration inside each Newton iteration (``_local_stages``).  The other joints must have
``q̇ = u``; the front door (:func:`flexdyn.simulate`) checks it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..joint_forces import DAMPING, STIFFNESS
from ..linalg import MASS_MATRIX_RTOL
from .algebra import (
    cholesky_factor,
    cholesky_substitute,
    copy,
    lu_factor,
    lu_substitute,
    so3_coefficients,
)
from .closure import closure_row_count, closure_rows
from .derivatives import state_derivatives, work_lengths
from .forces import motor_torques
from .jit import allocating_helper, entry_point, helper
from .kernels import finite, inverse_dynamics, power_rates, rate_entries
from .layout import (
    FREE,
    GS,
    INVALID,
    JCODE,
    JF,
    MODES,
    NJ,
    NQJ,
    QS,
    SPHERICAL,
    US,
    unpack,
    workspace,
)
from .stages import composite, run
from .terms import geometric_tangent

__all__ = ["Closures", "closures", "generalized_alpha", "sample"]


#: slots of the float parameters ``c`` (``CLOSURE_RATE``: Baumgarte's ``ω`` of the loop closures)
(ALPHA_M, ALPHA_F, BETA, GAMMA, ERROR_CONSTANT, RTOL, ATOL, NEWTON_TOL, H_MIN, H_MAX, T_END,
 H_FIXED, CLOSURE_RATE) = range(13)
#: length of ``c``
N_PARAMS = 13
#: slots of the integer controls ``ctl``: adaptive steps (1) or fixed, the most Newton
#: iterations per try, the most step tries in this call (−1: no limit), record every step (1)
#: or the ``t_eval`` samples, the number of fixed steps, the scheme (:data:`SCHEMES`), Radau
#: IIA's error norm (:data:`ERROR_NORMS`)
ADAPTIVE, MAX_NEWTON, MAX_TRIES, RECORD_STEPS, N_FIXED, SCHEME, ERROR_NORM = range(7)
#: length of ``ctl``
N_CONTROLS = 7
#: Radau IIA's norms of its error estimate and Newton corrections (``_radau_error``,
#: ``_stage_norm``): over ``q`` and ``q̇``, each scaled by its own ``ATOL + RTOL |x|``
#: (scipy's ``"Radau"``, RADAU5), or in displacements: ``q`` over ``ATOL + RTOL |q|`` and
#: ``h q̇``, the displacement that an error of ``q̇`` makes over the step, over
#: ``ATOL + RTOL |q|`` for an elastic coordinate (whose rate error stays an oscillation of
#: that size) and over ``ATOL + RTOL h |q̇|``, the joint's own displacement over the step,
#: for a joint coordinate (whose rate error the joint integrates for the rest of the motion,
#: and whose angle ``|q|`` grows with it: a crank that has turned 8 rad; ``_rate_scale``)
STATE_NORM, DISPLACEMENT_NORM = 0, 1
#: the norms by their ``error_norm`` names in :func:`flexdyn.simulate`
ERROR_NORMS = {"state": STATE_NORM, "displacement": DISPLACEMENT_NORM}
#: the schemes of the entry: generalized-α (second order, numerical damping ``ρ∞``, step
#: control), the two-stage Gauss–Legendre collocation (fourth order, A-stable and
#: symplectic, no numerical damping; fixed steps) and the three-stage Radau IIA collocation
#: (fifth order, L-stable and stiffly accurate; fixed steps or step control)
GENERALIZED_ALPHA, GAUSS_LEGENDRE, RADAU_IIA = 0, 1, 2
#: the schemes by their ``integrator`` names in :func:`flexdyn.simulate`
SCHEMES = {"generalized-alpha": GENERALIZED_ALPHA, "gauss-legendre": GAUSS_LEGENDRE,
           "radau-iia": RADAU_IIA}


def tableau(a: tuple, b: tuple) -> np.ndarray:
    """A collocation method's Butcher tableau ``a_ij`` (s × s) and weights ``b`` (s,) in the
    layout the step takes: the columns ``[a | a² | c | b | b a | d₀ | d₁ | d₂]``
    (s × (2 s + 6)), with the nodes ``c_i = Σ_j a_ij``.  In second-order form
    ``V_i = q̇ + h Σ_j a_ij A_j``, ``Q_i = q + c_i h q̇ + h² Σ_j (a²)_ij A_j``,
    ``q̇_{n+1} = q̇ + h Σ_j b_j A_j`` and ``q_{n+1} = q + h q̇ + h² Σ_j (b a)_j A_j``
    (Hairer, Nørsett & Wanner, Sec II.14).  The collocation polynomial's ``q̈`` is the
    polynomial of degree s − 1 through the stage accelerations ``(c_j, A_j)``; ``d₀``, ``d₁``
    and ``d₂`` weigh them into its value and its first and second derivatives (times ``h``
    and ``h²``) at the step's end, from which the next step's Newton iteration starts
    (RADAU5's extrapolation of the collocation polynomial, Hairer & Wanner, Sec IV.8)."""
    a, b = np.array(a, dtype=float), np.array(b, dtype=float)
    c = a.sum(axis=1)
    fit = np.linalg.inv(np.vander(c - 1.0, increasing=True))  # monomial coefficients at c = 1
    d = np.zeros((3, c.size))
    d[:min(3, c.size)] = fit[:3] * np.array([1.0, 1.0, 2.0])[:min(3, c.size), None]
    return np.column_stack([a, a @ a, c, b, b @ a, *d])


_S3, _S6 = math.sqrt(3.0), math.sqrt(6.0)
#: two-stage Gauss–Legendre (Hairer & Wanner, Sec IV.5) in the layout of :func:`tableau`
GL_TABLE = tableau(((0.25, 0.25 - _S3 / 6.0), (0.25 + _S3 / 6.0, 0.25)), (0.5, 0.5))
#: three-stage Radau IIA (Hairer & Wanner, Sec IV.5; ``b`` is its last row) in the layout
#: of :func:`tableau`
RADAU_TABLE = tableau((((88.0 - 7.0 * _S6) / 360.0, (296.0 - 169.0 * _S6) / 1800.0,
                        (-2.0 + 3.0 * _S6) / 225.0),
                       ((296.0 + 169.0 * _S6) / 1800.0, (88.0 + 7.0 * _S6) / 360.0,
                        (-2.0 - 3.0 * _S6) / 225.0),
                       ((16.0 - _S6) / 36.0, (16.0 + _S6) / 36.0, 1.0 / 9.0)),
                      ((16.0 - _S6) / 36.0, (16.0 + _S6) / 36.0, 1.0 / 9.0))
#: the tableau of each collocation scheme
TABLES = {GAUSS_LEGENDRE: GL_TABLE, RADAU_IIA: RADAU_TABLE}
#: the kinds of an eigenvalue of ``a`` in :func:`eigen_table`: real, the first of a complex
#: conjugate pair (the one with positive imaginary part), its conjugate
REAL, COMPLEX, CONJUGATE = 0, 1, 2


def eigen_table(a: np.ndarray) -> np.ndarray:
    """The eigendecomposition ``a = T Λ T⁻¹`` of a collocation method's ``a`` (s × s) that
    splits its Newton system (Hairer & Wanner, Sec IV.8): with it the iteration matrix
    ``I ⊗ M + h a ⊗ C + h² a² ⊗ K`` becomes ``(T ⊗ I) diag(B_i) (T⁻¹ ⊗ I)``,
    ``B_i = M + h λ_i C + h² λ_i² K`` (nu × nu each).  A real eigenvalue has a real ``B_i``;
    of a conjugate pair only the first block is factored, since the transformed right-hand
    side and the solution of the second are the conjugates of the first's (the columns of
    ``T`` for the pair are chosen conjugate, so the rows of ``T⁻¹`` are too).

    Returns a complex table (s × (2 s + 2)) whose row ``i`` is
    ``[λ_i | kind_i | T[:, i] | T⁻¹[i, :]]`` (kind :data:`REAL`, :data:`COMPLEX` or
    :data:`CONJUGATE`), real eigenvalues first, each pair's positive imaginary part first."""
    lam, vec = np.linalg.eig(np.asarray(a, dtype=float))
    scale = max(1.0, float(np.max(np.abs(lam))))
    real = np.abs(lam.imag) <= 1e-12 * scale
    rows = []
    for i in np.argsort(~real, kind="stable"):
        if real[i]:
            rows.append((lam[i].real + 0j, REAL, vec[:, i].real / np.max(np.abs(vec[:, i]))))
        elif lam[i].imag > 0.0:
            rows.append((lam[i], COMPLEX, vec[:, i]))
            rows.append((np.conj(lam[i]), CONJUGATE, np.conj(vec[:, i])))
    if len(rows) != lam.size:
        raise ValueError(f"the eigenvalues {lam} of the tableau do not form real values and "
                         "conjugate pairs")
    T = np.column_stack([r[2] for r in rows]).astype(complex)
    return np.column_stack([[r[0] for r in rows], [r[1] for r in rows], T.T,
                            np.linalg.inv(T)]).astype(complex)


#: :func:`eigen_table` of each collocation scheme's ``a``
GL_EIGEN = eigen_table(GL_TABLE[:, :2])
RADAU_EIGEN = eigen_table(RADAU_TABLE[:, :3])


def nodes(scheme: int) -> np.ndarray:
    """The stage times ``c_i`` (fractions of the step) at which ``scheme`` takes its
    forces: the collocation nodes, or ``[1]`` for generalized-α (forces at ``t_{n+1}``)."""
    return TABLES[scheme][:, 2 * TABLES[scheme].shape[0]] if scheme in TABLES else np.ones(1)


#: Radau IIA's error estimate (Hairer & Wanner, Sec IV.8, with ``γ₀⁻¹`` the real eigenvalue
#: of ``a``): ``err = (γ₀/h − J)⁻¹ (f(y_n) + Σ_i e_i Z_i / h)`` with the stage
#: increments ``Z_i = Y_i − y_n``; ``RADAU_MU`` is ``γ₀⁻¹``, ``RADAU_E`` the ``e_i``
RADAU_MU = 3.0 + 3.0 ** (2.0 / 3.0) - 3.0 ** (1.0 / 3.0)
RADAU_E = np.array([-13.0 - 7.0 * _S6, -13.0 + 7.0 * _S6, -1.0]) / 3.0
#: slots of the integrator's scalars ``s``: time, next step size, step size of the factored
#: iteration matrix (0: none), whether a mass matrix is kept (1) or not (0), start time, the
#: work integrals ``W_τ, W_ext, D`` and their integrands at the current time, whether the
#: last try was rejected (1) or not (0)
(T, H, H_FACTOR, M_KEPT, T_START, W_TAU, W_EXT, DISSIPATION, P_TAU, P_EXT, P_D,
 REJECTED_LAST) = range(12)
#: length of ``s``
N_SCALARS = 12
#: slots of the counters ``cnt``: samples stored, next ``t_eval`` sample, accepted steps,
#: rejected tries, Newton iterations, factorizations of ``S``, inverse-dynamics calls
N_OUT, NEXT_EVAL, STEPS, REJECTED, ITERATIONS, FACTORIZATIONS, RESIDUALS = range(7)
#: length of ``cnt``
N_COUNTERS = 7
#: statuses of :func:`generalized_alpha`: the end time reached, the output buffer full, the
#: allowed tries made; failures: the Newton iteration did not converge (fixed steps), the
#: step size fell below ``c[H_MIN]``, the iteration matrix is not positive definite, and
#: :data:`~flexdyn.engine.layout.INVALID` (a non-finite state with fixed steps)
FINISHED, FULL, PAUSED = 0, 1, 2
NEWTON_FAILED, STEP_TOO_SMALL, SINGULAR = -4, -5, -6
#: a contraction of the Newton iteration above which the kept iteration matrix is formed
#: afresh at once, and one above which it is formed afresh for the next step
THETA_REFRESH, THETA_KEEP = 0.2, 0.02
_CONVERGED = -1


def coefficients(rho_inf: float) -> tuple[float, float, float, float]:
    """``(α_m, α_f, β, γ)`` of spectral radius ``ρ∞`` at infinite ``ω h`` (Chung & Hulbert
    1993): ``α_m = (2ρ∞ − 1)/(ρ∞ + 1)``, ``α_f = ρ∞/(ρ∞ + 1)`` (their Eq 25),
    ``γ = ½ − α_m + α_f`` (second-order accuracy, Eq 17) and ``β = ¼ (1 − α_m + α_f)²``
    (the largest high-frequency dissipation, Eq 20).  ``ρ∞ = 1``: the trapezoidal rule
    (no numerical damping); ``ρ∞ = 0``: the high modes are annihilated in one step."""
    am = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0)
    af = rho_inf / (rho_inf + 1.0)
    return am, af, 0.25 * (1.0 - am + af) ** 2, 0.5 - am + af


def error_constant(rho_inf: float) -> float:
    """``c`` of the local error of the coordinates, ``q(t_{n+1}) − q_{n+1} ≈ c h³ q⃛``:
    ``c = β + δ/2 − 1/6`` with ``δ = α_m − α_f``, from the Taylor expansion of the
    displacement update with ``a_n ≈ q̈(t_n + δ h)``; the step control estimates it as
    ``c h² (a_{n+1} − a_n)`` (1/12 for ``ρ∞ = 1``, the trapezoidal rule's)."""
    am, af, beta, _ = coefficients(rho_inf)
    return beta + 0.5 * (am - af) - 1.0 / 6.0


# ----------------------------------------------------------------------------------------------
# one step
# ----------------------------------------------------------------------------------------------
#: the one force time of generalized-α (the step's end), as a fraction of the step
_END_NODE = np.ones(1)
#: fixed-point sweeps of the local coordinates' stage equations per Newton iteration
_LOCAL_SWEEPS = 3


@helper
def _engine_q(pm, qg, x, out):
    """The engine's coordinates ``out`` (nq,) of the integrator's ``x`` (nu,): the joint and
    modal coordinates of ``x`` where they are their own rates, the quaternion joints' local
    coordinates composed with the reference ``qg`` (nq,) (module docstring)."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        qs, us, code = ints[i, QS], ints[i, US], ints[i, JCODE]
        if code == SPHERICAL or code == FREE:
            _times_exp(qg[qs:qs + 4], x[us:us + 3], out[qs:qs + 4])
            if code == FREE:  # p = p_g + R(Q_g) ρ, R ρ = ρ + 2 w (e × ρ) + 2 e × (e × ρ)
                w, e0, e1, e2 = qg[qs], qg[qs + 1], qg[qs + 2], qg[qs + 3]
                r0, r1, r2 = x[us + 3], x[us + 4], x[us + 5]
                c0, c1, c2 = e1 * r2 - e2 * r1, e2 * r0 - e0 * r2, e0 * r1 - e1 * r0
                out[qs + 4] = qg[qs + 4] + r0 + 2.0 * (w * c0 + e1 * c2 - e2 * c1)
                out[qs + 5] = qg[qs + 5] + r1 + 2.0 * (w * c1 + e2 * c0 - e0 * c2)
                out[qs + 6] = qg[qs + 6] + r2 + 2.0 * (w * c2 + e0 * c1 - e1 * c0)
        rate_entries(ints, i, x, out, code != SPHERICAL and code != FREE)


@helper
def _times_exp(Q, psi, out):
    """``out = Q ⊗ exp(ψ)`` (unit quaternions ``[w, x, y, z]``), normalised."""
    t2 = psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2]
    t = math.sqrt(t2)
    # cos(t/2) and sin(t/2)/t, by their series for a small angle
    cw = math.cos(0.5 * t) if t > 1e-4 else 1.0 - t2 / 8.0
    sv = math.sin(0.5 * t) / t if t > 1e-4 else 0.5 - t2 / 48.0
    ew, e0, e1, e2 = cw, sv * psi[0], sv * psi[1], sv * psi[2]
    w, a, b, d = Q[0], Q[1], Q[2], Q[3]
    o0 = w * ew - a * e0 - b * e1 - d * e2
    o1 = w * e0 + a * ew + b * e2 - d * e1
    o2 = w * e1 + b * ew + d * e0 - a * e2
    o3 = w * e2 + d * ew + a * e1 - b * e0
    n = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2 + o3 * o3)
    out[0], out[1], out[2], out[3] = o0 / n, o1 / n, o2 / n, o3 / n


@helper
def _local_rates(pm, x, v, out):
    """``out = F(x) v`` at the local coordinates of the quaternion joints (module
    docstring): ``ψ̇ = J_r(ψ)⁻¹ ω`` (``J_r = I − b ψ̃ + c ψ̃²``, solved by Cramer's rule) and,
    for a free joint, ``ρ̇ = exp(ψ̃) v`` (``I + a ψ̃ + b ψ̃²``); the other entries of ``out``
    are left as they are."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        code = ints[i, JCODE]
        if code != SPHERICAL and code != FREE:
            continue
        us = ints[i, US]
        p0, p1, p2 = x[us], x[us + 1], x[us + 2]
        s = p0 * p0 + p1 * p1 + p2 * p2
        a, b, c, _, _, _ = so3_coefficients(s)
        # J_r = I − b ψ̃ + c (ψψᵀ − s I)
        j00, j11, j22 = 1.0 + c * (p0 * p0 - s), 1.0 + c * (p1 * p1 - s), 1.0 + c * (p2 * p2 - s)
        j01, j10 = b * p2 + c * p0 * p1, -b * p2 + c * p0 * p1
        j02, j20 = -b * p1 + c * p0 * p2, b * p1 + c * p0 * p2
        j12, j21 = b * p0 + c * p1 * p2, -b * p0 + c * p1 * p2
        w0, w1, w2 = v[us], v[us + 1], v[us + 2]
        det = (j00 * (j11 * j22 - j12 * j21) - j01 * (j10 * j22 - j12 * j20)
               + j02 * (j10 * j21 - j11 * j20))
        out[us] = (w0 * (j11 * j22 - j12 * j21) - j01 * (w1 * j22 - j12 * w2)
                   + j02 * (w1 * j21 - j11 * w2)) / det
        out[us + 1] = (j00 * (w1 * j22 - j12 * w2) - w0 * (j10 * j22 - j12 * j20)
                       + j02 * (j10 * w2 - w1 * j20)) / det
        out[us + 2] = (j00 * (j11 * w2 - w1 * j21) - j01 * (j10 * w2 - w1 * j20)
                       + w0 * (j10 * j21 - j11 * j20)) / det
        if code == FREE:  # ρ̇ = exp(ψ̃) v = v + a ψ × v + b ψ × (ψ × v)
            u0, u1, u2 = v[us + 3], v[us + 4], v[us + 5]
            c0, c1, c2 = p1 * u2 - p2 * u1, p2 * u0 - p0 * u2, p0 * u1 - p1 * u0
            out[us + 3] = u0 + a * c0 + b * (p1 * c2 - p2 * c1)
            out[us + 4] = u1 + a * c1 + b * (p2 * c0 - p0 * c2)
            out[us + 5] = u2 + a * c2 + b * (p0 * c1 - p1 * c0)


@helper
def _local_span(ints, i):
    """``(start, stop)`` of body ``i``'s local coordinates in ``u``: a spherical joint's three,
    a free joint's six; ``(0, 0)`` for the other joints."""
    code, us = ints[i, JCODE], ints[i, US]
    if code == SPHERICAL:
        return us, us + 3
    if code == FREE:
        return us, us + 6
    return 0, 0


@helper
def _local_combination(ints, h, weights, W, q0, out):
    """``out = q_0 + h Σ_j weights_j W_j`` at the local coordinates (``W`` (s, nu): the
    rates ``F(Q_j) V_j`` of the stages); the other entries of ``out`` are left as they
    are."""
    for i in range(ints.shape[0]):
        start, stop = _local_span(ints, i)
        for k in range(start, stop):
            x = 0.0
            for j in range(weights.shape[0]):
                x += weights[j] * W[j, k]
            out[k] = q0[k] + h * x


@helper
def _local_stages(pm, h, a, q0, Vs, Qs, W):
    """The local coordinates' stage values ``Q_i = q_0 + h Σ_j a_ij F(Q_j) V_j`` of the
    quaternion joints (``W`` (s, nu) scratch, ``F(Q_j) V_j`` at those entries), by
    :data:`_LOCAL_SWEEPS` fixed-point sweeps from the values in ``Qs``: ``F`` is within
    ``O(h ω)`` of the identity, so each sweep gains that factor."""
    ns = a.shape[0]
    for _ in range(_LOCAL_SWEEPS):
        for j in range(ns):
            _local_rates(pm, Qs[j], Vs[j], W[j])
        for r in range(ns):
            _local_combination(pm.ints, h, a[r], W, q0, Qs[r])


@helper
def _free_displacement(pm, h, v, qb):
    """``qb += ½ h² ω × v`` at a free joint's local displacement: the second-order term of
    ``ρ(h) = h v + ½ h² (v̇ + ω × v) + O(h³)`` (``ρ̇ = exp(ψ̃) v``) that generalized-α's update
    ``h v + h² (…) a``, with ``a ≈ v̇``, leaves out, and without which its displacement would
    be first-order accurate."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        if ints[i, JCODE] == FREE:
            us = ints[i, US]
            w0, w1, w2, u0, u1, u2 = v[us], v[us + 1], v[us + 2], v[us + 3], v[us + 4], v[us + 5]
            qb[us + 3] += 0.5 * h * h * (w1 * u2 - w2 * u1)
            qb[us + 4] += 0.5 * h * h * (w2 * u0 - w0 * u2)
            qb[us + 5] += 0.5 * h * h * (w0 * u1 - w1 * u0)


@helper
def _fold(pm, qg, x, qx):
    """``qg`` ← the engine's coordinates of ``x`` about it (:func:`_engine_q`; ``qx`` (nq,)
    scratch), and the local coordinates of ``x`` zero: the same state, with the reference
    at it."""
    _engine_q(pm, qg, x, qx)
    copy(qx, qg)
    ints = pm.ints
    for i in range(ints.shape[0]):
        start, stop = _local_span(ints, i)
        x[start:stop] = 0.0


@helper
def _modal_blocks(pm, nu, Ku, Cu):
    """The modal stiffness and damping of every body and the joint springs' and dampers'
    (:mod:`flexdyn.joint_forces`; friction and limits left out) in the layout of ``u``
    (nu × nu)."""
    Ku[:, :] = 0.0
    Cu[:, :] = 0.0
    ints = pm.ints
    for i in range(ints.shape[0]):
        m, us, nj = ints[i, MODES], ints[i, US], ints[i, NJ]
        s = us + nj
        for r in range(m):
            for k in range(m):
                Ku[s + r, s + k] = pm.K[i, r, k]
                Cu[s + r, s + k] = pm.C[i, r, k]
        if ints[i, JF] != 0:
            for k in range(nj):
                Ku[us + k, us + k] = pm.jforce[i, k, STIFFNESS]
                Cu[us + k, us + k] = pm.jforce[i, k, DAMPING]


@helper
def _identity_directions(ints, out):
    """``∂q/∂δ`` (nq × nu) of the integrators' coordinates but for the quaternion joints'
    blocks (which :func:`~flexdyn.engine.derivatives.state_derivatives` forms at the state):
    the identity, their coordinates being their own rates."""
    out[:, :] = 0.0
    for i in range(ints.shape[0]):
        qs, us, nj, m = ints[i, QS], ints[i, US], ints[i, NJ], ints[i, MODES]
        if ints[i, JCODE] != SPHERICAL and ints[i, JCODE] != FREE:
            for k in range(nj):
                out[qs + k, us + k] = 1.0
        for k in range(m):
            out[qs + ints[i, NQJ] + k, us + nj + k] = 1.0


@allocating_helper
def _derivative_work(ib, ints, Bk):
    """The exact iteration matrix's scratch and directions ``(cbuf, rbuf, q_dir)`` for
    :func:`~flexdyn.engine.derivatives.state_derivatives` (:func:`_identity_directions`);
    None for the modal matrix (``Bk`` None)."""
    if Bk is None:
        return None
    n_complex, n_real = work_lengths(ib)
    q_dir = np.empty((ib[4], ib[3]))
    _identity_directions(ints, q_dir)
    return np.zeros(n_complex, dtype=np.complex128), np.empty(n_real), q_dir


@helper
def _iteration_blocks(st, pm, w, dw, q, v, acc, fext, pmask, Kc, Cc, Mk, Ku, Cu):
    """The blocks of the iteration matrix at the iterate ``(q, v, acc)`` (the engine's
    coordinates ``q``, after the position terms of its residual): ``M`` into ``Mk``, the
    stiffness into ``Ku`` and the damping into ``Cu`` (nu × nu each), the prescribed speeds'
    rows and columns decoupled (``pmask``, :func:`_decouple`).  The exact matrix (``dw`` not
    None, :func:`_derivative_work`): ``∂r/∂q``,
    ``∂r/∂q̇`` of the residual, the derivatives of inverse dynamics
    (:func:`~flexdyn.engine.derivatives.state_derivatives`, through the table ``st``, with
    its scratch and directions ``dw``; the external wrenches ``fext`` (n × 6); the modal
    forces and the joint forces, friction and limits included, are in inverse dynamics)
    plus the feedback's blocks ``Kc``, ``Cc``; else ``M`` and the constant blocks with the
    geometric stiffness's tangent (:func:`_stiffness`).  Returns
    −1, :data:`SINGULAR` or :data:`~flexdyn.engine.layout.INVALID`."""
    if dw is not None:
        cbuf, rbuf, q_dir = dw
        status = run(st, state_derivatives, pm, w, st, False, cbuf, rbuf, q_dir, q, v, acc,
                     acc, fext, Ku, Cu, Mk)
        if status != -1:
            return SINGULAR if status == 0 else INVALID
        for i in range(Ku.shape[0]):
            for k in range(Ku.shape[1]):
                Ku[i, k] += Kc[i, k]
                Cu[i, k] += Cc[i, k]
        _decouple(pmask, Ku, 0.0)
        _decouple(pmask, Cu, 0.0)
    else:
        run(st, composite, pm, w, Mk)
        _stiffness(pm, q, Kc, Ku)
    _decouple(pmask, Mk, 1.0)
    return -1


@helper
def _stiffness(pm, q, Kc, Ku):
    """``Ku = Kc`` (the constant blocks of :func:`_modal_blocks`) plus the tangent of every
    body's geometric elastic force at ``q`` (:func:`~flexdyn.engine.terms.geometric_tangent`;
    Damaren & Sharf's Eq 20): the stiffness of the iteration matrix (nu × nu)."""
    copy(Kc, Ku)
    ints = pm.ints
    for i in range(ints.shape[0]):
        if ints[i, GS] > 0:
            m, s, qs = ints[i, MODES], ints[i, US] + ints[i, NJ], ints[i, QS] + ints[i, NQJ]
            geometric_tangent(pm, i, m, q[qs:qs + m], Ku[s:s + m, s:s + m])


@helper
def _linearized_forces(tau, fb, pred, q, v, out):
    """``out = τ + J_q (q − q*) + J_u (q̇ − q̇*)`` (nu,): the generalized force at ``(q, q̇)``
    of a state feedback linearized about the predicted state ``pred = [t; q*; q̇*]`` at which
    the caller evaluated it, ``τ`` (``fb`` (2, nu, nu): ``J_q = ∂τ/∂q`` and ``J_u = ∂τ/∂q̇``;
    empty (2, 0, 0): forces held, ``out = τ``)."""
    nu = q.shape[0]
    copy(tau, out)
    if fb.shape[1] == 0:
        return
    for k in range(nu):
        f = 0.0
        for j in range(nu):
            f += fb[0, k, j] * (q[j] - pred[1 + j]) + fb[1, k, j] * (v[j] - pred[1 + nu + j])
        out[k] += f


@helper
def _external_share(gn, V, p):
    """Move the power ``gn · V`` of the nodal loads' modal generalized forces ``gn`` (nu,;
    empty: none), which the iteration applies as part of ``τ``, from ``τ``'s integrand
    ``p[0]`` to the external one ``p[1]`` (:func:`~flexdyn.engine.kernels.power_rates`)."""
    if gn.shape[0] == 0:
        return
    pg = 0.0
    for k in range(gn.shape[0]):
        pg += gn[k] * V[k]
    p[0] -= pg
    p[1] += pg


@helper
def _prescribed_residual(pm_mask, r, tf):
    """The rows of the prescribed speeds (``pm_mask`` (nu,) nonzero; empty: none) of the
    residual ``r``: their generalized force is the load that realises the motion, the
    inverse dynamics itself (into ``tf``, whose power the work integrals take), and their
    residual 0; the other rows ``r − tf``."""
    for k in range(r.shape[0]):
        if pm_mask.shape[0] != 0 and pm_mask[k] != 0:
            tf[k] = r[k]
            r[k] = 0.0
        else:
            r[k] -= tf[k]


@helper
def _decouple(pm_mask, A, diagonal):
    """Rows and columns of the prescribed speeds (``pm_mask`` (nu,) nonzero) of ``A``
    (nu × nu) zero but the diagonal, ``diagonal``: 1 for the mass matrix, 0 for the
    stiffness and damping, so that the Newton iteration leaves the prescribed accelerations
    as they are and the others do not see them."""
    nu = A.shape[0]
    for k in range(pm_mask.shape[0]):
        if pm_mask[k] != 0:
            for j in range(nu):
                A[k, j] = 0.0
                A[j, k] = 0.0
            A[k, k] = diagonal


class Closures(NamedTuple):
    """The loop closures of a closed chain in the integrators' Newton iteration
    (:func:`closures`; a tree passes None, for which numba prunes every use of them, so that a
    tree compiles none of the closure code).  Each stage ``i`` adds the closure
    forces to its residual and the closure's acceleration rows, with Baumgarte's
    stabilization (``ω`` = ``c[CLOSURE_RATE]``), to the unknowns' equations:

    ``ID(Q_i, V_i, A_i) − τ_i + J_iᵀ λ_i = 0``,
    ``J_i A_i + γ_i + 2ω J_i V_i + ω² g_i = 0``

    (``g``, ``J``, ``γ`` of :func:`flexdyn.engine.closure.closure_rows` at the stage: the
    equations of :func:`flexdyn.engine.closure.closed_derivative`, solved together with the
    scheme's instead of inside each right-hand side).  The simplified Newton iteration takes
    the rows ``J_k`` of the iterate at which the iteration matrix is formed: with
    ``V_i``, ``Q_i`` linear in the ``A_j`` (coefficients ``h a`` and ``h² a²``), the
    constraint rows' Jacobian is ``(I + 2ωh a + ω²h² a²) ⊗ J_k``, which the eigenvectors of
    ``a`` split as they split the rest (:func:`eigen_table`), block ``i`` scaled by
    ``κ_i = 1 + 2ωh λ_i + (ωh λ_i)²``.  Each block ``[[B_i, J_kᵀ], [κ_i J_k, 0]]`` is solved
    by its Schur complement ``J_k B_i⁻¹ J_kᵀ`` (``_schur``)."""

    ci: np.ndarray  # (n_closures, 6) int: flexdyn.engine.closure.pack_closures
    cf: np.ndarray  # (n_closures, 33)
    geo: tuple | None  # the deformed geometry's packed model (flexdyn.engine.closure.closure_rows)
    lam: np.ndarray  # (k, nc) the multipliers of the k stages
    lam_n: np.ndarray  # (k, nc) those of the last accepted step (carried)
    h_n: np.ndarray  # (1,) its size (0: none yet) (carried)
    Jk: np.ndarray  # (nc, nu) the rows of the iteration matrix (carried)
    Y: np.ndarray  # (nu, nc) B⁻¹ J_kᵀ of the real block, or of S (carried)
    Yc: np.ndarray  # (nu, nc) complex: of the complex block (carried)
    L: np.ndarray  # (nc, nc) the LU factor of J_k Y (carried)
    Lc: np.ndarray  # (nc, nc) complex: of J_k Yc (carried)
    piv: np.ndarray  # (2, nc) int: their row swaps (carried)
    g: np.ndarray  # (nc,) scratch: the residuals at a stage
    gamma: np.ndarray  # (nc,) scratch
    J: np.ndarray  # (nc, nu) scratch
    rc: np.ndarray  # (k nc,) the constraint rows of the residual, stage by stage
    dl: np.ndarray  # (k nc,) the multipliers' correction
    mr: np.ndarray  # (nc, 1) scratch
    mc: np.ndarray  # (nc, 1) complex scratch
    t: np.ndarray  # (nu,) scratch


def closures(ci: np.ndarray, cf: np.ndarray, geo: tuple[np.ndarray, np.ndarray] | None, k: int,
             nu: int) -> Closures:
    """:class:`Closures` of the packed closures ``ci``, ``cf``
    (:func:`flexdyn.engine.closure.pack_closures`; ``(0, 6)`` and ``(0, 33)``: none) with the
    deformed geometry ``geo`` (:func:`flexdyn.engine.closure.closure_rows`) for ``k`` stages
    (1 for generalized-α) and ``nu`` speeds, the multipliers zero (a caller may set ``lam_n``
    to those of the initial state)."""
    nc = closure_row_count(ci)
    return Closures(np.ascontiguousarray(ci, dtype=np.int64), np.ascontiguousarray(cf, dtype=float),
                    geo,
                    np.zeros((k, nc)), np.zeros((k, nc)), np.zeros(1), np.zeros((nc, nu)),
                    np.zeros((nu, nc)),
                    np.zeros((nu, nc), dtype=complex), np.zeros((nc, nc)),
                    np.zeros((nc, nc), dtype=complex), np.zeros((2, nc), dtype=np.int64),
                    np.zeros(nc), np.zeros(nc), np.zeros((nc, nu)), np.zeros(k * nc),
                    np.zeros(k * nc), np.zeros((nc, 1)), np.zeros((nc, 1), dtype=complex),
                    np.zeros(nu))


@helper
def _start_multipliers(cl, nodes, h):
    """The multipliers' start for a step of size ``h`` at the stage times ``nodes`` (fractions
    of the step): the polynomial through the last accepted step's stage values, extrapolated
    (as the stage accelerations start from the last step's collocation polynomial), or its
    last stage's values where there is none yet."""
    k, nc = cl.lam.shape[0], cl.lam.shape[1]
    for i in range(k):
        if cl.h_n[0] == 0.0:
            copy(cl.lam_n[k - 1], cl.lam[i])
            continue
        x = 1.0 + nodes[i] * h / cl.h_n[0]  # in units of the last step, from its start
        for row in range(nc):
            cl.lam[i, row] = 0.0
        for j in range(k):
            weight = 1.0
            for m in range(k):
                if m != j:
                    weight *= (x - nodes[m]) / (nodes[j] - nodes[m])
            for row in range(nc):
                cl.lam[i, row] += weight * cl.lam_n[j, row]


@helper
def _closure_residual(pm, w, cl, rate, i, q, v, acc, r):
    """Stage ``i``'s closure terms (:class:`Closures`), from the position and velocity terms
    ``w`` holds at its state (after its inverse dynamics): ``r += J_iᵀ λ_i`` (nu,), and the
    constraint rows ``J_i A_i + γ_i + 2ω J_i V_i + ω² g_i`` into ``cl.rc`` (``q``: the
    engine's coordinates, ``v``: ``V_i``, ``acc``: ``A_i``); ``J_i`` stays in ``cl.J``."""
    nc, nu = cl.lam.shape[1], r.shape[0]
    closure_rows(pm, w, cl.ci, cl.cf, cl.geo, q, v, cl.g, cl.J, cl.gamma)
    J = cl.J
    for row in range(nc):
        ja, jv = 0.0, 0.0
        for k in range(nu):
            ja += J[row, k] * acc[k]
            jv += J[row, k] * v[k]
        cl.rc[i * nc + row] = ja + cl.gamma[row] + 2.0 * rate * jv + rate * rate * cl.g[row]
    for k in range(nu):
        x = 0.0
        for row in range(nc):
            x += J[row, k] * cl.lam[i, row]
        r[k] += x


@helper
def _closure_factor(Jk, B, piv, Y, L, lpiv):
    """``Y = B⁻¹ J_kᵀ`` (nu × nc) with the LU factor ``B``, ``piv`` of an iteration block, and
    the LU factor of ``L = J_k Y`` (row swaps ``lpiv``); False when a pivot of ``L`` is zero
    (redundant or locked closures)."""
    nc, nu = Jk.shape[0], Jk.shape[1]
    for k in range(nu):
        for row in range(nc):
            Y[k, row] = Jk[row, k]
    lu_substitute(B, piv, Y)
    _closure_schur_matrix(Jk, Y, L)
    return lu_factor(L, lpiv)


@helper
def _closure_factor_cholesky(Jk, S, t, Y, L, lpiv):
    """:func:`_closure_factor` with the Cholesky factor ``S`` (``t`` (nu,) scratch)."""
    nc, nu = Jk.shape[0], Jk.shape[1]
    for row in range(nc):
        cholesky_substitute(S, Jk[row], t)
        for k in range(nu):
            Y[k, row] = t[k]
    _closure_schur_matrix(Jk, Y, L)
    return lu_factor(L, lpiv)


@helper
def _closure_schur_matrix(Jk, Y, L):
    """``L = J_k Y`` (nc × nc)."""
    nc, nu = Jk.shape[0], Jk.shape[1]
    for a in range(nc):
        for b in range(nc):
            x = 0.0 * Y[0, 0]  # zero of Y's type (float or complex)
            for k in range(nu):
                x += Jk[a, k] * Y[k, b]
            L[a, b] = x


@helper
def _schur(Jk, Y, L, lpiv, z, m, kappa):
    """The closures' share of one iteration block's solve (:class:`Closures`): with
    ``z = B⁻¹ r̂`` (nu × 1) on entry and the block's constraint rows ``ĉ`` in ``m`` (nc × 1),
    ``μ = (J_k Y)⁻¹ (J_k z − ĉ/κ)`` into ``m`` and ``z −= Y μ``: the solution of
    ``[[B, J_kᵀ], [κ J_k, 0]] [z; μ] = [r̂; ĉ]``."""
    nc, nu = Jk.shape[0], Jk.shape[1]
    for a in range(nc):
        x = -m[a, 0] / kappa
        for k in range(nu):
            x += Jk[a, k] * z[k, 0]
        m[a, 0] = x
    lu_substitute(L, lpiv, m)
    for k in range(nu):
        x = z[k, 0]
        for a in range(nc):
            x -= Y[k, a] * m[a, 0]
        z[k, 0] = x


@helper
def _amax(x):
    """``max |x|`` of a vector or a matrix."""
    v = 0.0
    for e in x.flat:
        v = max(v, abs(e))
    return v


@helper
def _closure_rows_of(cl, pmask):
    """``J_k`` of the iteration matrix: the rows ``J`` of the current iterate, their columns
    of prescribed speeds (``pmask`` nonzero; empty: none) zero, since the Newton iteration
    leaves those accelerations as they are (:func:`_decouple`)."""
    copy(cl.J, cl.Jk)
    for k in range(pmask.shape[0]):
        if pmask[k] != 0:
            cl.Jk[:, k] = 0.0


@helper
def _closure_factors_cholesky(cl, pmask, S):
    """The closures' factors (:func:`_closure_factor`) with the Cholesky factor ``S`` of
    generalized-α's iteration matrix, at the rows ``J`` of the current iterate
    (:func:`_closure_rows_of`)."""
    _closure_rows_of(cl, pmask)
    return _closure_factor_cholesky(cl.Jk, S, cl.t, cl.Y, cl.L, cl.piv[0])


@helper
def _closure_correction(cl, kappa, dx):
    """Generalized-α's Newton correction with the closure rows: ``dx = S⁻¹ r`` (nu,) on
    entry, :func:`_schur`'s solution on return, and the multipliers ``cl.lam[0]``
    corrected."""
    nc = cl.lam.shape[1]
    for row in range(nc):
        cl.mr[row, 0] = cl.rc[row]
    _schur(cl.Jk, cl.Y, cl.L, cl.piv[0], dx.reshape((dx.shape[0], 1)), cl.mr, kappa)
    for row in range(nc):
        cl.lam[0, row] -= cl.mr[row, 0]


@helper
def _update_multipliers(cl):
    """``λ_i −= δλ_i`` of every stage (``cl.dl``, from :func:`_solve_blocks`)."""
    nc = cl.lam.shape[1]
    for i in range(cl.lam.shape[0]):
        for row in range(nc):
            cl.lam[i, row] -= cl.dl[i * nc + row]


@helper
def _accept_multipliers(cl, h):
    """An accepted step's multipliers and size, from which the next step's start
    (:func:`_start_multipliers`)."""
    copy(cl.lam, cl.lam_n)
    cl.h_n[0] = h


@helper
def _solve_step(st, pm, w, c, max_iter, h, y, qg, qx, tau, fext, fb, pred, tf, pmask, pacc, Kc,
                Cc, Ku, Cu, Mk, dw, S, piv, cl, s, new, base, r, dx, cnt):
    """One step of size ``h`` from ``y`` (rows ``q, q̇, a, q̈`` at ``t_n``) into ``new``:
    the modified Newton iteration on ``q̈_{n+1}`` (module docstring), starting from
    ``q̈_n``.  Returns ``_CONVERGED``, :data:`NEWTON_FAILED`,
    :data:`SINGULAR` or :data:`~flexdyn.engine.layout.INVALID`.  ``Mk`` holds the kept mass
    matrix (valid when ``s[M_KEPT]`` is 1) and ``Ku``, ``Cu`` the stiffness and damping kept
    with it, ``S`` the factor of the iteration matrix formed with them (Cholesky's, or with
    the exact matrix, ``dw`` not None, LU's with the row swaps ``piv``:
    :func:`_iteration_blocks`, ``Kc``, ``Cc``) and ``s[H_FACTOR]`` its step size (0: none);
    the force at ``t_{n+1}`` is ``tau``,
    or a state feedback linearized about ``pred[0]`` (``fb``; ``_linearized_forces``,
    into ``tf``); the speeds ``pmask`` marks have the prescribed accelerations ``pacc`` at
    ``t_{n+1}`` (:func:`_prescribed_residual`).  The engine's coordinates of an iterate go
    to ``qx`` (about the reference ``qg``: :func:`_engine_q`).  A closed chain's multipliers
    ``cl.lam[0]`` are unknowns beside ``q̈_{n+1}`` (:class:`Closures`; the constraint rows'
    Jacobian ``κ J_k``, ``κ = 1 + 2ω ∂q̇/∂q̈ + ω² ∂q/∂q̈``)."""
    am, af, beta, gamma, tol = c[ALPHA_M], c[ALPHA_F], c[BETA], c[GAMMA], c[NEWTON_TOL]
    omega = c[CLOSURE_RATE]
    nu = y.shape[1]
    ca = (1.0 - af) / (1.0 - am)  # ∂a/∂q̈
    cq = h * h * beta * ca  # ∂q/∂q̈
    cv = h * gamma * ca  # ∂q̇/∂q̈
    kappa = 1.0 + 2.0 * omega * cv + omega * omega * cq
    q0, v0, a0, qdd0 = y[0], y[1], y[2], y[3]
    q1, v1, a1, qdd = new[0], new[1], new[2], new[3]
    qb, vb, ab = base[0], base[1], base[2]
    for k in range(nu):
        ab[k] = (af * qdd0[k] - am * a0[k]) / (1.0 - am)
        qb[k] = q0[k] + h * v0[k] + h * h * ((0.5 - beta) * a0[k] + beta * ab[k])
        vb[k] = v0[k] + h * ((1.0 - gamma) * a0[k] + gamma * ab[k])
        qdd[k] = pacc[k] if pmask.shape[0] != 0 and pmask[k] != 0 else qdd0[k]
    _free_displacement(pm, h, v0, qb)
    if cl is not None:  # (a tree: numba prunes every such branch, cl being None)
        _start_multipliers(cl, _END_NODE, h)
    refresh = s[M_KEPT] == 0.0  # M(q) at the first iterate
    reform = refresh or s[H_FACTOR] != h  # the kept M with this step's coefficients
    refreshed = False
    it = 0
    previous = math.inf
    theta_max = 0.0
    while True:
        for k in range(nu):
            q1[k] = qb[k] + cq * qdd[k]
            v1[k] = vb[k] + cv * qdd[k]
        if not (finite(q1) and finite(v1)):
            return INVALID
        _engine_q(pm, qg, q1, qx)
        inverse_dynamics(st, pm, w, qx, v1, qdd, fext, r)
        cnt[RESIDUALS] += 1
        _linearized_forces(tau, fb, pred[0], q1, v1, tf)
        if cl is not None:  # (before the prescribed rows take their realised loads)
            _closure_residual(pm, w, cl, omega, 0, qx, v1, qdd, r)
        _prescribed_residual(pmask, r, tf)
        if refresh:  # M(q) after the position terms of the residual, and K's tangent
            status = _iteration_blocks(st, pm, w, dw, qx, v1, qdd, fext, pmask, Kc, Cc, Mk,
                                       Ku, Cu)
            if status != -1:
                return status
            s[M_KEPT] = 1.0
            refresh = False
            refreshed = True
            previous = math.inf
        if reform:
            for i in range(nu):
                for k in range(nu):
                    S[i, k] = Mk[i, k] + cv * Cu[i, k] + cq * Ku[i, k]
            s[H_FACTOR] = 0.0
            if not (cholesky_factor(S, MASS_MATRIX_RTOL) if dw is None else lu_factor(S, piv)):
                return SINGULAR
            if cl is not None:
                if not _closure_factors_cholesky(cl, pmask, S):
                    return SINGULAR
            s[H_FACTOR] = h
            cnt[FACTORIZATIONS] += 1
            reform = False
        if dw is not None:
            copy(r, dx)
            lu_substitute(S, piv, dx.reshape((nu, 1)))
        else:
            cholesky_substitute(S, r, dx)
        if cl is not None:
            _closure_correction(cl, kappa, dx)
        for k in range(nu):
            qdd[k] -= dx[k]
        it += 1
        cnt[ITERATIONS] += 1
        step = _amax(dx)
        if not math.isfinite(step):
            return INVALID
        theta = step / previous  # the contraction, 0 on the first correction
        # the distance to the solution is about θ/(1 − θ) times the last correction
        remaining = step if theta == 0.0 else (theta / (1.0 - theta) * step if theta < 1.0
                                               else math.inf)
        if remaining <= tol * max(1.0, _amax(qdd)):
            break
        theta_max = max(theta_max, theta)
        if it >= max_iter or theta > THETA_REFRESH:
            if refreshed and (it >= max_iter or theta >= 1.0):
                return NEWTON_FAILED
            if not refreshed:  # slow with the kept matrix: form it at the current iterate
                refresh = reform = True
        previous = step
    if theta_max > THETA_KEEP:
        s[M_KEPT] = 0.0  # form M afresh at the next step
    for k in range(nu):
        q1[k] = qb[k] + cq * qdd[k]
        v1[k] = vb[k] + cv * qdd[k]
        a1[k] = ab[k] + ca * qdd[k]
    return _CONVERGED


@helper
def _factor_blocks(Mk, Cu, Ku, h, eig, S, Jc, piv):
    """LU factors (with partial pivoting) of the blocks ``B_i = M + h λ_i C + h² λ_i² K`` of
    the transformed iteration matrix (:func:`eigen_table` ``eig``): a real eigenvalue's into
    ``S`` (nu × nu) with the row swaps in ``piv[0]``, a complex pair's first into ``Jc``
    (nu × nu, complex) with ``piv[1]``: at most one of each, as in the two schemes here
    (:data:`RADAU_EIGEN`: one real eigenvalue and one pair; :data:`GL_EIGEN`: one pair).
    False when a pivot is zero."""
    nu = Mk.shape[0]
    for i in range(eig.shape[0]):
        kind = int(eig[i, 1].real)
        lam = h * eig[i, 0]
        lam2 = lam * lam
        if kind == REAL:
            for m in range(nu):
                for k in range(nu):
                    S[m, k] = Mk[m, k] + lam.real * Cu[m, k] + lam2.real * Ku[m, k]
            if not lu_factor(S, piv[0]):
                return False
        elif kind == COMPLEX:
            for m in range(nu):
                for k in range(nu):
                    Jc[m, k] = Mk[m, k] + lam * Cu[m, k] + lam2 * Ku[m, k]
            if not lu_factor(Jc, piv[1]):
                return False
    return True


@helper
def _closure_blocks(eig, S, Jc, piv, cl, pmask):
    """:func:`_closure_factor` for each block that :func:`_factor_blocks` factored, at the
    rows ``J`` of the current iterate (:func:`_closure_rows_of`)."""
    _closure_rows_of(cl, pmask)
    for i in range(eig.shape[0]):
        kind = int(eig[i, 1].real)
        if kind == REAL and not _closure_factor(cl.Jk, S, piv[0], cl.Y, cl.L, cl.piv[0]):
            return False
        if kind == COMPLEX and not _closure_factor(cl.Jk, Jc, piv[1], cl.Yc, cl.Lc, cl.piv[1]):
            return False
    return True


@helper
def _solve_blocks(eig, S, Jc, piv, cl, wh, r, zr, zc, dx):
    """``dx = (T ⊗ I) diag(B_i)⁻¹ (T⁻¹ ⊗ I) r`` (s nu,) with the factors of
    :func:`_factor_blocks`: the Newton correction of the stage accelerations; ``zr``
    (nu × 1) and ``zc`` (nu × 1, complex) are scratch.  A pair's second block adds the
    conjugate of the first's term, so the pair adds ``2 Re(T_ei z_i)``.  With loop closures
    (:class:`Closures`, ``wh = ω h``) each block is solved with its constraint rows
    (:func:`_schur`) and the multipliers' correction goes to ``cl.dl`` (s nc,)."""
    ns, nu = eig.shape[0], S.shape[0]
    dx[:] = 0.0
    if cl is not None:
        cl.dl[:] = 0.0
    for i in range(ns):
        kind = int(eig[i, 1].real)
        lh = wh * eig[i, 0]
        kappa = 1.0 + 2.0 * lh + lh * lh
        if kind == REAL:
            for k in range(nu):
                v = 0.0
                for f in range(ns):
                    v += eig[i, 2 + ns + f].real * r[f * nu + k]
                zr[k, 0] = v
            lu_substitute(S, piv[0], zr)
            if cl is not None:
                nc = cl.lam.shape[1]
                for a in range(nc):
                    v = 0.0
                    for f in range(ns):
                        v += eig[i, 2 + ns + f].real * cl.rc[f * nc + a]
                    cl.mr[a, 0] = v
                _schur(cl.Jk, cl.Y, cl.L, cl.piv[0], zr, cl.mr, kappa.real)
                for e in range(ns):
                    for a in range(nc):
                        cl.dl[e * nc + a] += eig[i, 2 + e].real * cl.mr[a, 0]
            for e in range(ns):
                t = eig[i, 2 + e].real
                for k in range(nu):
                    dx[e * nu + k] += t * zr[k, 0]
        elif kind == COMPLEX:
            for k in range(nu):
                z = 0j
                for f in range(ns):
                    z += eig[i, 2 + ns + f] * r[f * nu + k]
                zc[k, 0] = z
            lu_substitute(Jc, piv[1], zc)
            if cl is not None:
                nc = cl.lam.shape[1]
                for a in range(nc):
                    z = 0j
                    for f in range(ns):
                        z += eig[i, 2 + ns + f] * cl.rc[f * nc + a]
                    cl.mc[a, 0] = z
                _schur(cl.Jk, cl.Yc, cl.Lc, cl.piv[1], zc, cl.mc, kappa)
                for e in range(ns):
                    for a in range(nc):
                        cl.dl[e * nc + a] += 2.0 * (eig[i, 2 + e] * cl.mc[a, 0]).real
            for e in range(ns):
                t = eig[i, 2 + e]
                for k in range(nu):
                    dx[e * nu + k] += 2.0 * (t * zc[k, 0]).real


@helper
def _collocation_step(st, pm, w, c, max_iter, h, y, qg, qx, W, tau, gn, fext, fb, pred, tf,
                      pmask, pacc, Kc, Cc, Ku, Cu, Mk, dw, tab, eig, scaled, displacement,
                      elastic, S, Jc, piv, cl, s, stages, r, dx, zr, zc, p, new, cnt):
    """One step of size ``h`` from ``y`` (rows ``q, q̇, q⃛, q̈, q⁗`` at ``t_n``) into ``new`` by
    the s-stage collocation method of ``tab`` (:func:`tableau`; Hairer & Wanner, Sec IV.5):
    the stage accelerations ``A_i`` (``stages[0:s]``, (s, nu)) solve
    ``ID(Q_i, V_i, A_i) − τ = 0`` with ``V_i = q̇ + h Σ_j a_ij A_j`` (``stages[s:2s]``),
    ``Q_i = q + c_i h q̇ + h² Σ_j (a²)_ij A_j`` (``stages[2s:3s]``), ``τ`` and ``f_ext`` at
    stage ``i`` the rows ``i`` of ``tau`` (s nu,) and ``fext`` (s n, 6) (the nodal loads'
    modal forces, row ``i`` of ``gn`` (s nu,; empty: none), included in ``tau``, their power
    booked as external work: :func:`_external_share`) (``τ`` of a state
    feedback linearized about ``pred[i]``: ``fb``, ``_linearized_forces``, into ``tf``;
    the speeds ``pmask`` marks at the prescribed accelerations, row ``i`` of ``pacc``
    (s nu,): :func:`_prescribed_residual`), by a simplified Newton
    iteration on ``J = I ⊗ M + h a ⊗ C + h² a² ⊗ K`` (s nu × s nu; ``M``, ``C`` and
    ``K`` at the first stage's first iterate, into ``Mk``, ``Cu`` and ``Ku``: the constant
    blocks ``Kc``, ``Cc`` with the geometric stiffness's tangent, or with ``dw`` the
    derivatives of the residual: :func:`_iteration_blocks`),
    solved through the eigendecomposition ``eig`` of ``a`` (:func:`eigen_table`): one real
    block (into ``S``) and one complex block (into ``Jc``) of nu × nu per real eigenvalue and
    conjugate pair (:func:`_factor_blocks`, :func:`_solve_blocks`; ``zr``, ``zc`` scratch),
    starting from ``A_i = q̈_n + c_i h q⃛_n + ½ (c_i h)² q⁗_n``, the previous step's
    collocation polynomial extrapolated (0 at the start).  The factors
    of ``J`` (and ``M`` in ``Mk``) are kept for the next step of the same size
    (``s[H_FACTOR]``, ``s[M_KEPT]``) unless the iteration contracted by more than
    :data:`THETA_KEEP`; an iteration that fails with a kept factor starts again with a
    fresh one.  The iteration stops when a
    correction is at most ``newton_tol · max(1, max|A|)`` or, ``scaled``, as Hairer &
    Wanner's RADAU5 stops (Sec IV.8): when the distance to the solution, ``θ/(1 − θ)`` times
    the root-mean-square of the corrections of the stage states ``(Q_i, V_i)`` over
    ``ATOL + RTOL |x_n|`` (``displacement``: of ``(Q_i, h V_i)`` in displacements,
    ``elastic`` (nu,) marking the elastic coordinates; :func:`_stage_norm`) (``θ`` the ratio
    of the last two; for the first correction, the correction itself: a start already within
    round-off of the solution stops there), is
    below ``newton_tol``, and fails when ``θ ≥ 1``.  Then
    ``q̇_{n+1} = q̇ + h Σ b_i A_i``, ``q_{n+1} = q + h q̇ + h² Σ_j (b a)_j A_j`` and
    ``q̈_{n+1}``, ``q⃛_{n+1}`` and ``q⁗_{n+1}`` from the polynomial of degree s − 1 through
    the stages (the columns ``d₀, d₁, d₂`` of :func:`tableau`; ``q̈_{n+1}`` is the last
    stage itself for Radau IIA, whose ``c_s = 1``); ``p`` (s, 3)
    holds the energy-balance integrands (:func:`~flexdyn.engine.kernels.power_rates`) at the
    stages, from the last iterate.  The quaternion joints' local coordinates take their
    stage equations in first-order form (:func:`_local_stages`, ``W`` (s, nu) scratch), and
    ``q_{n+1} = q + h Σ_j b_j F(Q_j) V_j``; the engine's coordinates of a stage go to ``qx``
    (about the reference ``qg``).  A closed chain's multipliers ``cl.lam`` (s × nc) are
    unknowns beside the ``A_i`` (:class:`Closures`).  Returns :data:`_CONVERGED`,
    :data:`NEWTON_FAILED`, :data:`SINGULAR` or :data:`~flexdyn.engine.layout.INVALID`."""
    tol, omega = c[NEWTON_TOL], c[CLOSURE_RATE]
    ns = tab.shape[0]
    a, a2, cn, b, ba = tab[:, :ns], tab[:, ns:2 * ns], tab[:, 2 * ns], tab[:, 2 * ns + 1], \
        tab[:, 2 * ns + 2]
    nu, n = y.shape[1], pm.ints.shape[0]
    A, Vs, Qs = stages[0:ns], stages[ns:2 * ns], stages[2 * ns:3 * ns]
    q0, v0 = y[0], y[1]
    factored = s[M_KEPT] != 0.0 and s[H_FACTOR] == h  # the kept factor of J
    fresh = not factored
    it = 0
    previous = math.inf
    theta_max = 0.0
    while True:
        if it == 0:  # the start, again after a restart with a fresh factor
            if cl is not None:  # (a tree: numba prunes every such branch, cl being None)
                _start_multipliers(cl, cn, h)
            for i in range(ns):
                for k in range(nu):
                    ti = cn[i] * h
                    A[i, k] = y[3, k] + ti * (y[2, k] + 0.5 * ti * y[4, k])
                    if pmask.shape[0] != 0 and pmask[k] != 0:
                        A[i, k] = pacc[i * nu + k]
        for i in range(ns):
            for k in range(nu):
                vi, qi = 0.0, 0.0
                for j in range(ns):
                    vi += a[i, j] * A[j, k]
                    qi += a2[i, j] * A[j, k]
                Vs[i, k] = v0[k] + h * vi
                Qs[i, k] = q0[k] + cn[i] * h * v0[k] + h * h * qi
        _local_stages(pm, h, a, q0, Vs, Qs, W)
        for i in range(ns):
            if not (finite(Qs[i]) and finite(Vs[i])):
                return INVALID
        for i in range(ns):
            ri, ti, fi = r[i * nu:(i + 1) * nu], tau[i * nu:(i + 1) * nu], fext[i * n:(i + 1) * n]
            _engine_q(pm, qg, Qs[i], qx)
            inverse_dynamics(st, pm, w, qx, Vs[i], A[i], fi, ri)
            cnt[RESIDUALS] += 1
            _linearized_forces(ti, fb, pred[i], Qs[i], Vs[i], tf)
            if cl is not None:  # (before the prescribed rows take their realised loads)
                _closure_residual(pm, w, cl, omega, i, qx, Vs[i], A[i], ri)
            _prescribed_residual(pmask, ri, tf)
            power_rates(pm, w, qx, Vs[i], tf, fi, p[i])
            _external_share(gn[i * nu:(i + 1) * nu], Vs[i], p[i])
            if not factored:  # M(Q_1) after the position terms of the first residual
                status = _iteration_blocks(st, pm, w, dw, qx, Vs[i], A[i], fi, pmask, Kc, Cc,
                                           Mk, Ku, Cu)
                if status != -1:
                    return status
                s[M_KEPT], s[H_FACTOR] = 1.0, 0.0
                if not _factor_blocks(Mk, Cu, Ku, h, eig, S, Jc, piv):
                    return SINGULAR
                if cl is not None:
                    if not _closure_blocks(eig, S, Jc, piv, cl, pmask):
                        return SINGULAR
                s[H_FACTOR] = h
                cnt[FACTORIZATIONS] += 1
                factored = True
        _solve_blocks(eig, S, Jc, piv, cl, omega * h, r, zr, zc, dx)
        for i in range(ns):
            for k in range(nu):
                A[i, k] -= dx[i * nu + k]
        if cl is not None:
            _update_multipliers(cl)
        it += 1
        cnt[ITERATIONS] += 1
        step = _stage_norm(c, h, y, a, a2, dx, displacement, elastic) if scaled else _amax(dx)
        if not math.isfinite(step):
            return INVALID
        theta = step / previous  # the contraction, 0 on the first correction
        if scaled:  # the first correction: RADAU5's start, a distance of one correction
            converged = step <= tol if it == 1 else (theta < 1.0
                                                     and theta / (1.0 - theta) * step < tol)
        else:
            converged = step <= tol * max(1.0, _amax(A))
        if converged:
            break
        theta_max = max(theta_max, theta)
        if it >= max_iter or (scaled and theta >= 1.0):
            if fresh:
                return NEWTON_FAILED
            # slow with the kept factor: start again with M and J at this step
            factored, fresh, it, previous, theta_max = False, True, 0, math.inf, 0.0
            continue
        previous = step
    if theta_max > THETA_KEEP:
        s[M_KEPT] = 0.0  # form M and J afresh at the next step
    d0, d1, d2 = tab[:, 2 * ns + 3], tab[:, 2 * ns + 4], tab[:, 2 * ns + 5]
    for k in range(nu):
        qa, va, end0, end1, end2 = 0.0, 0.0, 0.0, 0.0, 0.0
        for j in range(ns):
            qa += ba[j] * A[j, k]
            va += b[j] * A[j, k]
            end0 += d0[j] * A[j, k]
            end1 += d1[j] * A[j, k]
            end2 += d2[j] * A[j, k]
        new[0, k] = q0[k] + h * v0[k] + h * h * qa
        new[1, k] = v0[k] + h * va
        new[3, k] = end0
        new[2, k] = end1 / h
        new[4, k] = end2 / (h * h)
    # the local coordinates: q_{n+1} = q_n + h Σ_j b_j F(Q_j) V_j
    for j in range(ns):
        _local_rates(pm, Qs[j], Vs[j], W[j])
    _local_combination(pm.ints, h, b, W, q0, new[0])
    return _CONVERGED


@helper
def _rate_scale(c, h, u, q, displacement, elastic):
    """The scale of a rate's error in Radau IIA's norms (:data:`DISPLACEMENT_NORM`):
    ``ATOL + RTOL |q̇|`` in the state norm; in displacements, ``(ATOL + RTOL |q|)/h`` for an
    ``elastic`` coordinate and ``ATOL/h + RTOL |q̇|`` for a joint coordinate (``u = |q̇|``,
    ``q = |q|``)."""
    if not displacement:
        return c[ATOL] + c[RTOL] * u
    if elastic:
        return (c[ATOL] + c[RTOL] * q) / h
    return c[ATOL] / h + c[RTOL] * u


@helper
def _stage_norm(c, h, y, a, a2, dA, displacement, elastic):
    """The root mean square of the stage-state changes ``δQ_i = h² Σ_j (a²)_ij δA_j`` and
    ``δV_i = h Σ_j a_ij δA_j`` of the correction ``δA`` (s nu,) over
    ``ATOL + RTOL |q_n|`` and the rate scale of :func:`_rate_scale` (``displacement``:
    :data:`DISPLACEMENT_NORM`; ``elastic`` (nu,) marks the elastic coordinates)."""
    nu, ns = y.shape[1], a.shape[0]
    total = 0.0
    for i in range(ns):
        for k in range(nu):
            dq, dv = 0.0, 0.0
            for j in range(ns):
                dq += a2[i, j] * dA[j * nu + k]
                dv += a[i, j] * dA[j * nu + k]
            sq = c[ATOL] + c[RTOL] * abs(y[0, k])
            sv = _rate_scale(c, h, abs(y[1, k]), abs(y[0, k]), displacement, elastic[k])
            total += (h * h * dq / sq) ** 2 + (h * dv / sv) ** 2
    return math.sqrt(total / (2 * ns * nu))


@helper
def _radau_error(c, h, y, new, stages, Mk, Cu, S, piv, displacement, elastic, rq, ru, e):
    """The scaled norm of Radau IIA's local error estimate of the step ``y → new``
    (:data:`RADAU_E`; Hairer & Wanner, Sec IV.8) for ``ẋ = f(x)``, ``x = (q, q̇)``:
    ``err = (μ/h − J)⁻¹ (f(x_n) + Σ_i e_i Z_i / h)`` with ``μ`` = :data:`RADAU_MU` and the
    stage increments ``Z_i = (Q_i − q, V_i − q̇)``, whose filter ``(μ/h − J)⁻¹`` keeps the
    unresolved stiff modes from dominating it.  With the Jacobian of the iteration,
    ``J = [[0, I], [−M⁻¹K, −M⁻¹C]]``, the system reduces to
    ``(M + C/γ + K/γ²) e_q = (M r_u + (γ M + C) r_q)/γ²``, ``e_u = γ e_q − r_q``
    (``γ = μ/h``).  Since ``μ⁻¹`` is the real eigenvalue of ``a``, that matrix is the real
    block of the step's iteration matrix, whose LU factor ``S``, ``piv`` (from
    :func:`_factor_blocks`, with the same kept ``M`` and step) solves it.  The norm is the
    root mean square of ``e_q,k / (ATOL + RTOL max(|q_n,k|, |q_{n+1},k|))`` and of
    ``e_q̇,k`` over the rate scale of :func:`_rate_scale` at the larger of ``|q̇_n,k|``,
    ``|q̇_{n+1},k|`` (and of ``|q_n,k|``, ``|q_{n+1},k|``), in the state norm or,
    ``displacement``, in displacements (:data:`DISPLACEMENT_NORM`; ``elastic`` (nu,) marks
    the elastic coordinates)."""
    nu, ns = y.shape[1], RADAU_E.shape[0]
    Vs, Qs = stages[ns:2 * ns], stages[2 * ns:3 * ns]
    g = RADAU_MU / h
    for k in range(nu):
        zq, zv = 0.0, 0.0
        for i in range(ns):
            zq += RADAU_E[i] * (Qs[i, k] - y[0, k])
            zv += RADAU_E[i] * (Vs[i, k] - y[1, k])
        rq[k] = y[1, k] + zq / h
        ru[k] = y[3, k] + zv / h
    for m in range(nu):
        v = 0.0
        for k in range(nu):
            v += Mk[m, k] * (ru[k] + g * rq[k]) + Cu[m, k] * rq[k]
        e[m] = v / (g * g)
    lu_substitute(S, piv, e.reshape((nu, 1)))
    total = 0.0
    for k in range(nu):
        eu = g * e[k] - rq[k]
        aq = max(abs(y[0, k]), abs(new[0, k]))
        sq = c[ATOL] + c[RTOL] * aq
        su = _rate_scale(c, h, max(abs(y[1, k]), abs(new[1, k])), aq, displacement, elastic[k])
        total += (e[k] / sq) ** 2 + (eu / su) ** 2
    return math.sqrt(total / (2 * nu))


@helper
def _next_step(c, ctl, s, cnt):
    """``(t_{n+1}, h)`` of the next try: fixed steps ``t_start + (n + 1) h`` (the last one
    ending on ``T_END``); adaptive ones ``s[H]`` at most ``H_MAX``, stretched by up to 1 % or
    shortened to end on ``T_END``."""
    t, t_end = s[T], c[T_END]
    if ctl[ADAPTIVE] == 0:
        n = cnt[STEPS] + 1
        h = c[H_FIXED]
        return (t_end if n >= ctl[N_FIXED] else s[T_START] + n * h), h
    h = min(s[H], c[H_MAX])
    if t + 1.01 * h >= t_end:
        return t_end, t_end - t
    return t + h, h


@helper
def _sample(pm, qg, y, new, rate, wq, pw, h, theta, x, out):
    """The state at ``t_n + θ h`` by cubic Hermite interpolation on the step (the
    integrator's coordinates from their values and rates at both ends, ``rate`` (nu,) those
    at the end, into ``x`` (nu,); ``q̇`` from ``q̇, q̈``; the work integrals from ``wq``
    (2, 3) and their integrands ``pw`` (2, 3); third order), into
    ``out = [q; q̇; W_τ, W_ext, D]`` with the engine's coordinates ``q`` (nq,) about the
    reference ``qg`` (:func:`_engine_q`)."""
    nu, nq = y.shape[1], qg.shape[0]
    t2, t3 = theta * theta, theta * theta * theta
    h00, h10, h01, h11 = 2 * t3 - 3 * t2 + 1.0, t3 - 2 * t2 + theta, 3 * t2 - 2 * t3, t3 - t2
    for k in range(nu):
        x[k] = h00 * y[0, k] + h10 * h * y[1, k] + h01 * new[0, k] + h11 * h * rate[k]
        out[nq + k] = h00 * y[1, k] + h10 * h * y[3, k] + h01 * new[1, k] + h11 * h * new[3, k]
    _engine_q(pm, qg, x, out[:nq])
    for k in range(3):
        out[nq + nu + k] = (h00 * wq[0, k] + h10 * h * pw[0, k] + h01 * wq[1, k]
                            + h11 * h * pw[1, k])


@entry_point
def sample(ib, fb, qg, y, new, wq, pw, h, theta, out):
    """The states at ``t_n + θ_k h`` (``theta`` (m,)) into the rows of ``out``
    (m, nq + nu + 3) by ``_sample``'s interpolation on the step ``y → new`` about the
    reference ``qg`` (nq,): the dense output of one step for a caller that steps the entry
    one accepted step at a time."""
    pm = unpack(ib, fb)
    nu = y.shape[1]
    rate, x = np.empty(nu), np.empty(nu)
    copy(new[1], rate)
    _local_rates(pm, new[0], new[1], rate)
    for k in range(theta.shape[0]):
        _sample(pm, qg, y, new, rate, wq, pw, h, theta[k], x, out[k])


@helper
def _predict(pm, c, ctl, s, cnt, y, nodes, pred):
    """The rows ``pred[i] = [t_n + c_i h; q*; q̇*]`` of the next try (step ``h``) at its
    force times ``c_i`` (``nodes``): ``q* = q + c_i h q̇ + ½ (c_i h)² q̈``,
    ``q̇* = q̇ + c_i h q̈`` (where a caller evaluates forces that depend on the state), the
    local coordinates from 0, as the try will start them (about the engine's coordinates of
    ``y``: :func:`_fold`)."""
    nu, ints = y.shape[1], pm.ints
    t1 = _next_step(c, ctl, s, cnt)[0]
    for i in range(nodes.shape[0]):
        ti = nodes[i] * (t1 - s[T])
        pred[i, 0] = s[T] + ti
        for k in range(nu):
            pred[i, 1 + k] = y[0, k] + ti * y[1, k] + 0.5 * ti * ti * y[3, k]
            pred[i, 1 + nu + k] = y[1, k] + ti * y[3, k]
        for b in range(ints.shape[0]):
            start, stop = _local_span(ints, b)
            for k in range(start, stop):
                pred[i, 1 + k] -= y[0, k]


# ----------------------------------------------------------------------------------------------
# the entry
# ----------------------------------------------------------------------------------------------
@entry_point
def generalized_alpha(ib, fb, st, c, ctl, t_eval, tau, gn, fext, jf, pmask, pacc, elastic, y,
                      qg, s, Mk, Bk, S, Jc, base, piv, cl, out_t, out_x, pred, cnt):
    """Integrate from ``s[T]`` towards ``c[T_END]`` with the generalized force ``tau`` (nu,),
    the nodal loads' modal generalized forces ``gn`` (nu,; empty (0,): none; applied with
    ``tau``, their power counted as external work) and the wrenches ``fext`` (n_bodies, 6)
    held (the collocation schemes: one of each per stage, stacked, (s nu,) and
    (s n_bodies, 6)), in one call: until the end, until
    ``out_t`` is full (recording every step) or after ``ctl[MAX_TRIES]`` tries (a caller
    with forces that depend on the state evaluates them at ``pred`` between calls).
    ``jf`` (2, nu, nu): the Jacobians ``∂τ/∂q``, ``∂τ/∂q̇`` of such a feedback, with which
    ``τ`` is linearized about ``pred`` inside the Newton iteration (``_linearized_forces``)
    and whose symmetric parts enter the iteration matrix's stiffness and damping; empty
    (2, 0, 0): ``τ`` held.  ``pmask`` (nu,): the speeds of prescribed motion (nonzero; empty:
    none), whose accelerations at the force times are ``pacc`` (one per stage, stacked, as
    ``tau``): their Newton rows are decoupled and their loads are the realised ones.
    ``elastic`` (nu,) bool: the speeds that are elastic coordinates' rates, whose errors
    the displacement norm measures differently from the joints' (``_rate_scale``).

    ``c`` (:data:`N_PARAMS`): the coefficients and tolerances; ``ctl`` (:data:`N_CONTROLS`);
    ``t_eval``: the sample times (with ``ctl[RECORD_STEPS] == 0``); ``y`` (5, nu): ``q, q̇,
    a, q̈, 0`` at ``s[T]`` (rows 2 and 4 are ``q⃛`` and ``q⁗`` for the collocation schemes;
    ``q`` the integrator's coordinates, local for the quaternion joints: module docstring),
    and ``qg`` (nq,) the reference of the local coordinates (the engine's coordinates at the
    start of the last step), advanced in place;
    ``s`` (:data:`N_SCALARS`), ``Mk`` and ``S`` (nu × nu: the kept mass matrix and the
    factor of generalized-α's iteration matrix, or of a collocation scheme's real block),
    ``Bk`` (2 × nu × nu: the stiffness and damping of the exact iteration matrix, kept with
    ``Mk``; None: the modal matrix, whose entry numba then compiles without the exact one's
    code),
    ``Jc`` (nu × nu, complex: the factor of a collocation scheme's complex block; empty for
    generalized-α), ``base`` (3 × nu: generalized-α's predictor, the part of ``q, q̇, a`` at
    ``t_{n+1}`` known before the iteration; None for the collocation schemes, whose
    specialization numba then compiles without generalized-α's step: ``base`` chooses
    generalized-α or collocation, ``ctl[SCHEME]`` which collocation scheme),
    ``piv`` (2 × nu: the row swaps of the two blocks), the carried arrays
    of the loop closures ``cl`` (:class:`Closures`, None for a tree; Baumgarte's rate
    ``c[CLOSURE_RATE]``)
    and ``cnt``
    (:data:`N_COUNTERS`) carry the integrator from call to call; the samples go to
    ``out_t[cnt[N_OUT]:]`` and the rows of ``out_x`` (``[q; q̇; W_τ, W_ext, D]``, the
    engine's coordinates ``q``); ``pred``
    (one row of 1 + 2 nu per force time: s for the collocation schemes, 1 for
    generalized-α) receives the times and predicted states of the next try (``_predict``).  Returns
    :data:`FINISHED`, :data:`FULL`, :data:`PAUSED` or a failure (the state is that of the
    last accepted step).

    Step control (``ctl[ADAPTIVE]``): the local error of ``q`` is estimated by
    ``c h² (a_{n+1} − a_n)`` (:func:`error_constant`) and measured in the norm
    ``max_k |e_k| / (ATOL + RTOL max(|q_n,k|, |q_{n+1},k|))``; a try with norm above 1 is
    rejected and one whose Newton iteration fails is retried with a quarter of the step; the
    next step is ``h · min(2, max(0.2, 0.9 norm^(−1/3)))``, kept at ``h`` when that factor
    lies in [0.85, 1.3] (so the iteration matrix can be kept).  On a change ``a`` is shifted to
    the new step (``a ≈ q̈(t + (α_m − α_f) h)``).  Radau IIA measures its own estimate
    (``_radau_error``, a root-mean-square norm over ``q`` and ``q̇`` or in displacements,
    ``ctl[ERROR_NORM]``) and follows Hairer & Wanner's controller: the next step is
    ``h · min(10, max(0.2, σ norm^(−1/4)))`` with the safety factor
    ``σ = 0.9 (2 k_max + 1)/(2 k_max + k)`` (``k`` Newton iterations of the step, ``k_max`` =
    ``ctl[MAX_NEWTON]``), at most ``h`` right after a rejected try, kept at ``h`` when that
    factor lies in [1, 1.2], and a failed Newton iteration halves the step."""
    pm, w = unpack(ib, fb), workspace(ib)
    nu, nq = y.shape[1], qg.shape[0]
    qx, xs, rate = np.empty(nq), np.empty(nu), np.empty(nu)
    exact = Bk is not None  # (numba prunes the other matrix's branches)
    Kc, Cc = np.zeros((nu, nu)), np.zeros((nu, nu))
    if exact:  # (the derivatives of inverse dynamics hold the modal and joint forces' blocks)
        Ku, Cu = Bk[0], Bk[1]
    else:
        Ku, Cu = np.empty((nu, nu)), np.empty((nu, nu))
        _modal_blocks(pm, nu, Kc, Cc)
    if jf.shape[1] != 0:  # the feedback's stiffness and damping, −∂τ/∂q and −∂τ/∂q̇
        for i in range(nu):  # (their symmetric parts for the Cholesky factor)
            for k in range(nu):
                Kc[i, k] -= jf[0, i, k] if exact else 0.5 * (jf[0, i, k] + jf[0, k, i])
                Cc[i, k] -= jf[1, i, k] if exact else 0.5 * (jf[1, i, k] + jf[1, k, i])
    _decouple(pmask, Kc, 0.0)  # the prescribed speeds: no stiffness, no damping in the
    _decouple(pmask, Cc, 0.0)  # iteration
    dw = _derivative_work(ib, pm.ints, Bk)
    if not exact:  # the modal blocks, until the first M is formed in this call
        _engine_q(pm, qg, y[0], qx)
        _stiffness(pm, qx, Kc, Ku)
        copy(Cc, Cu)
    collocation = base is None  # (numba prunes the other family's branches)
    radau = ctl[SCHEME] == RADAU_IIA
    displacement = ctl[ERROR_NORM] == DISPLACEMENT_NORM
    tab = RADAU_TABLE if radau else GL_TABLE
    eig = RADAU_EIGEN if radau else GL_EIGEN
    ns = tab.shape[0] if collocation else 0
    nodes = tab[:, 2 * ns].copy() if collocation else np.ones(1)
    tau_m = np.empty(tau.shape[0])  # collocation: one force per stage, stacked
    for i in range(tau.shape[0] // nu):
        motor_torques(pm, tau[i * nu:(i + 1) * nu], tau_m[i * nu:(i + 1) * nu])
    for k in range(gn.shape[0]):
        tau_m[k] += gn[k]
    stages, rs, dxs, ps, W = (np.empty((3 * ns, nu)), np.empty(ns * nu), np.empty(ns * nu),
                              np.empty((ns, 3)), np.zeros((ns, nu)))
    new = np.zeros((5, nu))
    r, dx, e, tf = np.empty(nu), np.empty(nu), np.empty(nu), np.empty(nu)
    zr, zc = np.empty((nu, 1)), np.empty((nu, 1), dtype=np.complex128)
    wq, pw, power = np.empty((2, 3)), np.empty((2, 3)), np.empty(3)
    adaptive = ctl[ADAPTIVE] != 0
    delta = c[ALPHA_M] - c[ALPHA_F]
    err_c = c[ERROR_CONSTANT]
    tries = 0
    status = FINISHED
    while s[T] < c[T_END]:
        if ctl[MAX_TRIES] >= 0 and tries >= ctl[MAX_TRIES]:
            status = PAUSED
            break
        if ctl[RECORD_STEPS] != 0 and cnt[N_OUT] >= out_t.shape[0]:
            status = FULL
            break
        tries += 1
        _fold(pm, qg, y[0], qx)  # the local coordinates start the step at 0
        t1, h = _next_step(c, ctl, s, cnt)
        iterations = cnt[ITERATIONS]
        if collocation:
            result = _collocation_step(st, pm, w, c, ctl[MAX_NEWTON], h, y, qg, qx, W, tau_m,
                                       gn, fext, jf, pred, tf, pmask, pacc, Kc, Cc, Ku, Cu, Mk,
                                       dw, tab, eig, radau, displacement, elastic, S, Jc,
                                       piv, cl, s, stages, rs, dxs, zr, zc, ps, new, cnt)
        else:
            result = _solve_step(st, pm, w, c, ctl[MAX_NEWTON], h, y, qg, qx, tau_m, fext, jf,
                                 pred, tf, pmask, pacc, Kc, Cc, Ku, Cu, Mk, dw, S, piv[0],
                                 cl, s, new, base, r, dx, cnt)
        if result != _CONVERGED:
            if not adaptive or result == SINGULAR:
                status = result
                break
            cnt[REJECTED] += 1
            s[REJECTED_LAST] = 1.0
            s[H] = (0.5 if radau else 0.25) * h
            if s[H] < c[H_MIN]:
                status = STEP_TOO_SMALL
                break
            continue
        factor = 1.0
        if adaptive and radau:
            err = _radau_error(c, h, y, new, stages, Mk, Cu, S, piv[0], displacement, elastic,
                               r, dx, e)
            # Hairer & Wanner's safety factor, smaller after slow Newton iterations
            its = cnt[ITERATIONS] - iterations
            safety = 0.9 * (2 * ctl[MAX_NEWTON] + 1) / (2 * ctl[MAX_NEWTON] + its)
            factor = min(10.0, max(0.2, safety * err ** -0.25)) if err > 0.0 else 10.0
        elif adaptive:
            err = 0.0
            for k in range(nu):
                scale = c[ATOL] + c[RTOL] * max(abs(y[0, k]), abs(new[0, k]))
                err = max(err, abs(err_c * h * h * (new[2, k] - y[2, k])) / scale)
            factor = min(2.0, max(0.2, 0.9 * err ** (-1.0 / 3.0))) if err > 0.0 else 2.0
        if adaptive:
            if err > 1.0:
                cnt[REJECTED] += 1
                s[REJECTED_LAST] = 1.0
                s[H] = h * factor
                if s[H] < c[H_MIN]:
                    status = STEP_TOO_SMALL
                    break
                continue
        # accepted: the work integrals by the trapezoidal rule (the collocation schemes: by
        # their quadrature at the stages) and their integrands at both ends (Radau IIA's
        # last stage is the end; Gauss–Legendre's are not known there: the mean), the
        # samples, the new state
        if collocation:
            for k in range(3):
                wq[0, k] = s[W_TAU + k]
                wq[1, k] = s[W_TAU + k]
                for i in range(ns):
                    wq[1, k] += h * tab[i, 2 * ns + 1] * ps[i, k]
                if radau:
                    power[k] = ps[ns - 1, k]
                    pw[0, k], pw[1, k] = s[P_TAU + k], power[k]
                else:
                    power[k] = pw[0, k] = pw[1, k] = (wq[1, k] - wq[0, k]) / h
        else:
            copy(tf, e)  # the realised loads of the prescribed speeds, from the last residual
            _linearized_forces(tau_m, jf, pred[0], new[0], new[1], tf)
            for k in range(pmask.shape[0]):
                if pmask[k] != 0:
                    tf[k] = e[k]
            _engine_q(pm, qg, new[0], qx)
            power_rates(pm, w, qx, new[1], tf, fext, power)
            _external_share(gn, new[1], power)
            for k in range(3):
                wq[0, k] = s[W_TAU + k]
                wq[1, k] = s[W_TAU + k] + 0.5 * h * (s[P_TAU + k] + power[k])
                pw[0, k], pw[1, k] = s[P_TAU + k], power[k]
        t0 = s[T]
        copy(new[1], rate)
        _local_rates(pm, new[0], new[1], rate)
        if ctl[RECORD_STEPS] != 0:
            out_t[cnt[N_OUT]] = t1
            _sample(pm, qg, y, new, rate, wq, pw, h, 1.0, xs, out_x[cnt[N_OUT]])
            cnt[N_OUT] += 1
        else:
            while cnt[NEXT_EVAL] < t_eval.shape[0] and t_eval[cnt[NEXT_EVAL]] <= t1:
                te = t_eval[cnt[NEXT_EVAL]]
                out_t[cnt[N_OUT]] = te
                _sample(pm, qg, y, new, rate, wq, pw, h, 1.0 if te >= t1 else (te - t0) / h,
                        xs, out_x[cnt[N_OUT]])
                cnt[N_OUT] += 1
                cnt[NEXT_EVAL] += 1
        for k in range(3):
            s[W_TAU + k] = wq[1, k]
            s[P_TAU + k] = power[k]
        if adaptive:
            if radau and s[REJECTED_LAST] != 0.0:  # RADAU5: no growth right after a rejection
                factor = min(factor, 1.0)
            s[REJECTED_LAST] = 0.0
            keep = (1.0 <= factor <= 1.2) if radau else (0.85 <= factor <= 1.3)
            h_next = h if keep else h * factor
            # a_{n+1} ≈ q̈(t_{n+1} + δ h) → q̈(t_{n+1} + δ h_next)
            if h_next != h and not collocation:
                shift = delta * (h_next - h) / h
                for k in range(nu):
                    new[2, k] += shift * (new[2, k] - y[2, k])
            s[H] = h_next
        copy(new, y)
        if cl is not None:
            _accept_multipliers(cl, h)
        s[T] = t1
        cnt[STEPS] += 1
    _predict(pm, c, ctl, s, cnt, y, nodes, pred)
    return status
