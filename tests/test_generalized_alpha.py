"""Tests of the compiled generalized-α integrator, ``simulate(integrator="generalized-alpha")``
(:mod:`flexdyn.engine.galpha`): accuracy against exact solutions and scipy's integrators,
second-order convergence, energy conservation without numerical damping, the damping of
unresolved modes, forces, outputs and argument checks."""

from __future__ import annotations

import dataclasses
import math
import re

import numba
import numpy as np
import pytest
import scipy.integrate
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
import strategies
from flexdyn import models
from flexdyn.beam import beam_modes
from flexdyn.engine import Engine, galpha
from flexdyn.engine.layout import unpack
from flexdyn.terms import body_models
from helpers import pendulum, pendulum_period
from test_closed_chains import fourbar

GA = "generalized-alpha"
GL = "gauss-legendre"
RADAU = "radau-iia"


def cantilever(damping_ratio: float = 0.0) -> fd.Model:
    """One clamped steel beam (1 m, 2 cm square), one bending mode (≈ 16.5 Hz), no gravity:
    a spring-mass system in its modal coordinate."""
    side, E, rho = 0.02, 210e9, 7850.0
    beam = beam_modes(1.0, rho * side * side, EI_z=E * side**4 / 12.0, n_elements=6,
                      n_modes=1, damping_ratio=damping_ratio)
    return fd.Model.from_dict({"name": "cantilever", "gravity": [0.0, 0.0, 0.0], "bodies": [
        {"name": "beam", "parent": None, "joint": {"type": "fixed"},
         "flex": beam.to_flex_dict()}]})


def omega(model: fd.Model) -> float:
    """The (one) modal circular frequency of a cantilever model (rad/s)."""
    return 2.0 * math.pi * float(models.modal_frequencies(model)[0][0])


def arm_case(t_end: float = 0.4):
    """The flexible two-link arm of :func:`flexdyn.models.two_link_arm` (2 modes per link,
    1 % damping) driven by joint torques of ``t`` alone (one sine period), and its
    samples."""
    model = models.two_link_arm(n_modes=2, damping_ratio=0.01)
    joints = model.u_start[:2]

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(model.nu)
        out[joints] = np.array([3.0, 1.0]) * np.sin(2 * np.pi * t / t_end)
        return out

    return model, tau, np.linspace(0.0, t_end, 9)


@pytest.fixture(scope="module")
def arm_reference():
    model, tau, t_eval = arm_case()
    return fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                       integrator=fd.ScipyIVP("Radau", rtol=1e-11, atol=1e-13))


def arm_error(res, ref) -> float:
    """The largest error of a coordinate or speed relative to its largest magnitude."""
    return float(max(np.max(np.abs(res.q - ref.q) / np.max(np.abs(ref.q), axis=0)),
                     np.max(np.abs(res.u - ref.u) / np.max(np.abs(ref.u), axis=0))))


def step_counts(res) -> tuple[int, int]:
    """The accepted steps and rejected tries of a compiled integrator's run, from its
    message."""
    steps, rejected = (int(v) for v in re.findall(r"(\d+) (?:steps|rejected)", res.message))
    return steps, rejected


# ----------------------------------------------------------------------------------------------
# coefficients
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.0])
def test_coefficients_of_chung_and_hulbert(rho):
    am, af, beta, gamma = galpha.coefficients(rho)
    assert gamma == pytest.approx(0.5 - am + af)
    assert beta == pytest.approx(0.25 * (gamma + 0.5) ** 2)
    # the spectral radius at infinite ω h: the amplification matrix of q'' + ω² q = 0
    w2h2 = 1e12
    ca = (1 - af) / (1 - am)
    # one step of the linear scheme as a map of (q, h v, h² a, h² q̈)
    A = np.zeros((4, 4))
    for j, e in enumerate(np.eye(4)):
        q, v, a, qdd = e
        ab = (af * qdd - am * a) / (1 - am)
        qb, vb = q + v + (0.5 - beta) * a + beta * ab, v + (1 - gamma) * a + gamma * ab
        # q̈_{n+1} = −ω² q_{n+1} with q_{n+1} = qb + β ca q̈_{n+1}
        qdd1 = -w2h2 * qb / (1 + w2h2 * beta * ca)
        A[:, j] = [qb + beta * ca * qdd1, vb + gamma * ca * qdd1, ab + ca * qdd1, qdd1]
    assert np.max(np.abs(np.linalg.eigvals(A))) == pytest.approx(rho, abs=1e-3)
    assert galpha.error_constant(1.0) == pytest.approx(1.0 / 12.0)


# ----------------------------------------------------------------------------------------------
# accuracy
# ----------------------------------------------------------------------------------------------
def test_rigid_pendulum_keeps_the_exact_period():
    """Released 1 rad from the bottom: after half the exact period (complete elliptic
    integral) it is 1 rad on the other side at rest, after a whole one back at the start.
    The error is that of the phase, ``(ω h)²/12`` of the period for the trapezoidal rule (5e-6
    at 800 steps a period), seen in the speed (the angle is stationary there)."""
    model, amplitude = pendulum(), 1.0
    T = pendulum_period(amplitude)
    bottom = -np.pi / 2
    errors = []
    for n in (400, 800):
        res = fd.simulate(model, q0=[bottom + amplitude], t_span=(0.0, T), integrator=GA,
                          h=T / n, t_eval=[0.5 * T, T])
        errors.append(max(abs(res.q[0, 0] - (bottom - amplitude)),
                          abs(res.q[1, 0] - (bottom + amplitude)), abs(res.u[0, 0]),
                          abs(res.u[1, 0])))
    accel = 11.2  # |θ̈| at the turning points (rad/s²)
    assert errors[1] / accel < 1e-5 * T
    assert 3.5 < errors[0] / errors[1] < 4.5  # second order


def test_flexible_arm_against_radau(arm_reference):
    model, tau, t_eval = arm_case()
    fixed = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                        integrator=GA, h=2.5e-4)
    adaptive = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                           integrator=GA, rtol=1e-7, atol=1e-9)
    assert arm_error(fixed, arm_reference) < 3e-4
    assert arm_error(adaptive, arm_reference) < 1e-3
    np.testing.assert_array_equal(fixed.t, t_eval)
    joints = model.u_start[:2]
    assert np.max(np.abs(fixed.q[:, joints] - arm_reference.q[:, joints])) < 1e-6  # rad


@pytest.mark.parametrize("integrator, newton_tol, lo, hi, finest", [
    (GA, 1e-10, 3.3, 4.7, 1e-3),  # second order: halving h divides the error by 4
    (GL, 1e-12, 12.0, 20.0, 1e-7),  # Gauss–Legendre, fourth order (torques of t at the stages)
    (RADAU, 1e-6, 24.0, 40.0, 1e-7),  # Radau IIA, fifth order (its Newton tolerance is scaled)
])
def test_order_of_convergence(arm_reference, integrator, newton_tol, lo, hi, finest):
    model, tau, t_eval = arm_case()
    errors = [arm_error(fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                                   integrator=integrator, h=h, newton_tol=newton_tol),
                        arm_reference)
              for h in ((2e-3, 1e-3, 5e-4) if integrator != RADAU else (2e-3, 1e-3))]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > lo) & (ratios < hi)), (errors, ratios)
    assert errors[-1] < finest


def test_adaptive_steps_follow_the_tolerance(arm_reference):
    model, tau, t_eval = arm_case()
    runs = [fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                        integrator=GA, rtol=rtol, atol=rtol * 1e-2) for rtol in (1e-5, 1e-7)]
    steps = [int(r.message.split(": ")[1].split(" steps")[0]) for r in runs]
    errors = [arm_error(r, arm_reference) for r in runs]
    assert steps[1] > 2 * steps[0]
    assert errors[1] < errors[0] / 5


# ----------------------------------------------------------------------------------------------
# energy: conservation without numerical damping, dissipation of unresolved modes
# ----------------------------------------------------------------------------------------------
def test_trapezoidal_rule_conserves_the_energy_of_a_mode():
    """ρ∞ = 1 on an undamped cantilever mode, 100 periods at ω h = 0.3: the energy stays
    within O(h²) of its start without drift; with ρ∞ = 0.9 it decays."""
    model = cantilever()
    w = omega(model)
    period = 2 * math.pi / w
    t_eval = np.linspace(0.0, 100 * period, 1001)
    deviation = []
    for wh in (0.3, 0.15):
        res = fd.simulate(model, u0=[1.0], t_span=(0.0, t_eval[-1]), t_eval=t_eval,
                          integrator=GA, h=wh / w, rho_inf=1.0, newton_tol=1e-12)
        E = res.total_energy
        rel = np.abs(E - E[0]) / E[0]
        deviation.append(np.max(rel))
        # no drift: the last tenth deviates no more than the first tenth
        assert np.max(rel[-100:]) < 1.5 * np.max(rel[:100]) + 1e-12
    assert deviation[0] < 1e-3
    assert deviation[1] < deviation[0] / 3  # O(h²)
    damped = fd.simulate(model, u0=[1.0], t_span=(0.0, t_eval[-1]), t_eval=t_eval,
                         integrator=GA, h=0.3 / w, rho_inf=0.9)
    assert damped.total_energy[-1] < damped.total_energy[0] * (1 - 10 * deviation[0])


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8])
def test_unresolved_mode_is_damped_at_rho_inf(rho):
    """A cantilever mode at ω h = 1000: after the start-up transient (the start from rest at
    a displaced state excites the scheme's own roots) the amplitude falls by about ρ∞ per
    step."""
    model = cantilever()
    h = 1000.0 / omega(model)
    res = fd.simulate(model, q0=[1e-3], t_span=(0.0, 40 * h), integrator=GA, h=h,
                      rho_inf=rho, newton_tol=1e-12)
    amplitude = np.sqrt(res.total_energy)  # ∝ |η| at ω h ≫ 1 (the energy is potential)
    if rho == 0.0:  # annihilated within a few steps (ρ(ω h) = O(1/(ω h)))
        assert amplitude[6] < 1e-8 * np.max(amplitude)
        return
    rate = (amplitude[40] / amplitude[20]) ** (1 / 20)
    assert rate == pytest.approx(rho, abs=0.05 * rho)


def test_work_integrals_close_the_energy_balance():
    """Two-link arm with damping and a slew torque: the work and dissipation integrals agree
    with Radau's and close the energy balance to the integrator's accuracy."""
    model, tau, t_eval = arm_case()
    ref = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("Radau", rtol=1e-10, atol=1e-12))
    res = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval, integrator=GA,
                      h=2.5e-4)
    assert np.max(np.abs(res.work)) > 0.01
    np.testing.assert_allclose(res.work, ref.work, atol=1e-4 * np.max(np.abs(ref.work)))
    np.testing.assert_allclose(res.dissipation, ref.dissipation,
                               atol=1e-3 * np.max(ref.dissipation))
    assert np.max(np.abs(res.energy_balance_error)) < 2e-3  # percent


# ----------------------------------------------------------------------------------------------
# Gauss–Legendre (order 4, symplectic) in the same compiled loop
# ----------------------------------------------------------------------------------------------
def test_gauss_legendre_keeps_the_energy_of_a_mode():
    """An undamped cantilever mode's energy is a quadratic invariant, which Gauss methods
    keep exactly: to round-off at the steps, even at ω h = 3 (no numerical damping)."""
    model = cantilever()
    w = omega(model)
    for wh in (0.3, 3.0):
        res = fd.simulate(model, u0=[1.0], t_span=(0.0, 200 * wh / w), integrator=GL,
                          h=wh / w, newton_tol=1e-13)
        E = res.total_energy
        assert len(E) == 201
        assert np.max(np.abs(E - E[0])) < 1e-11 * E[0], wh


def test_gauss_legendre_work_integrals_close_the_energy_balance(arm_reference):
    """The work and dissipation integrals by the stage quadrature (fourth order) agree with
    Radau's and close the energy balance."""
    model, tau, t_eval = arm_case()
    ref = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("Radau", rtol=1e-11, atol=1e-13))
    res = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval, integrator=GL,
                      h=1e-3, newton_tol=1e-12)
    np.testing.assert_allclose(res.work, ref.work, atol=1e-7 * np.max(np.abs(ref.work)))
    np.testing.assert_allclose(res.dissipation, ref.dissipation,
                               atol=1e-6 * np.max(ref.dissipation))
    assert np.max(np.abs(res.energy_balance_error)) < 1e-6  # percent


# ----------------------------------------------------------------------------------------------
# Radau IIA (order 5, L-stable, step control) in the same compiled loop
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table, order", [(galpha.GL_TABLE, 4), (galpha.RADAU_TABLE, 5)])
def test_collocation_tableaux_satisfy_the_order_conditions(table, order):
    """The simplified order conditions of the tableaux (Hairer & Wanner, Sec IV.5):
    ``B(p)``: ``Σ b_i c_i^(k−1) = 1/k`` for k ≤ p (the quadrature order); ``C(s)``:
    ``Σ_j a_ij c_j^(k−1) = c_i^k/k`` for k ≤ s (collocation); and the layout's derived
    columns ``a²`` and ``b a``, and the extrapolation weights ``d₀, d₁, d₂`` (the
    polynomial of degree s − 1 through the stages and its derivatives at the step's end).
    Radau IIA's ``c_s = 1`` and ``b`` = its last row, and
    :data:`RADAU_MU` is the real eigenvalue of ``a⁻¹``."""
    s = table.shape[0]
    a, a2, c, b, ba = (table[:, :s], table[:, s:2 * s], table[:, 2 * s], table[:, 2 * s + 1],
                       table[:, 2 * s + 2])
    for k in range(1, order + 1):
        assert np.sum(b * c ** (k - 1)) == pytest.approx(1.0 / k, abs=1e-14)
    assert np.sum(b * c ** order) != pytest.approx(1.0 / (order + 1), abs=1e-6)
    for k in range(1, s + 1):
        np.testing.assert_allclose(a @ c ** (k - 1), c**k / k, atol=1e-14)
    np.testing.assert_allclose(a2, a @ a, atol=1e-15)
    np.testing.assert_allclose(ba, b @ a, atol=1e-15)
    # the weights of the collocation polynomial's q̈ and its two derivatives at the step's
    # end: exact for a random polynomial of degree s − 1 through the nodes
    d = table[:, 2 * s + 3:2 * s + 6].T
    poly = np.polynomial.Polynomial(np.random.default_rng(s).normal(size=s))
    np.testing.assert_allclose(d @ poly(c), [poly(1.0), poly.deriv(1)(1.0), poly.deriv(2)(1.0)],
                               atol=1e-13)
    if table is galpha.RADAU_TABLE:
        assert c[-1] == pytest.approx(1.0, abs=1e-15)
        np.testing.assert_allclose(b, a[-1], atol=1e-15)
        eig = np.linalg.eigvals(np.linalg.inv(a))
        assert np.min(np.abs(eig - galpha.RADAU_MU)) < 1e-12


@pytest.mark.parametrize("table, eigen", [(galpha.GL_TABLE, galpha.GL_EIGEN),
                                          (galpha.RADAU_TABLE, galpha.RADAU_EIGEN)])
def test_eigen_tables_diagonalize_the_tableaux(table, eigen):
    """``eigen_table``: ``T Λ T⁻¹`` gives back ``a``, real eigenvalues first with real
    columns, each pair's first eigenvalue with positive imaginary part and its partner's
    column and row the conjugates.  Radau IIA's real eigenvalue is ``1/RADAU_MU`` (the
    error estimate reuses its block); Gauss–Legendre's two are a pair."""
    s = table.shape[0]
    lam, kind, T, Tinv = (eigen[:, 0], eigen[:, 1].real.astype(int), eigen[:, 2:2 + s].T,
                          eigen[:, 2 + s:])
    np.testing.assert_allclose(T @ np.diag(lam) @ Tinv, table[:, :s], atol=1e-15)
    np.testing.assert_allclose(Tinv @ T, np.eye(s), atol=1e-14)
    expected = [galpha.COMPLEX, galpha.CONJUGATE]
    if s == 3:
        expected = [galpha.REAL, *expected]
        assert lam[0].imag == 0.0 and np.all(T[:, 0].imag == 0.0)
        assert lam[0].real == pytest.approx(1.0 / galpha.RADAU_MU, rel=1e-14)
    assert list(kind) == expected
    p = expected.index(galpha.COMPLEX)
    assert lam[p].imag > 0.0 and lam[p + 1] == np.conj(lam[p])
    np.testing.assert_allclose(T[:, p + 1], np.conj(T[:, p]), atol=0.0)
    np.testing.assert_allclose(Tinv[p + 1], np.conj(Tinv[p]), atol=1e-15)


@numba.njit
def _split_solve(M, C, K, h, eig, r, cl, omega):
    """The engine's split Newton correction (``_factor_blocks``, ``_closure_blocks``,
    ``_solve_blocks``) of the residual ``r`` and the closure rows ``cl.rc`` with the
    closures' Jacobian ``cl.J`` and Baumgarte's ``omega`` (the multipliers' correction into
    ``cl.dl``; ``cl`` None: a tree), and whether the factorizations succeeded."""
    nu = M.shape[0]
    S, Jc = np.empty((nu, nu)), np.empty((nu, nu), dtype=np.complex128)
    piv = np.empty((2, nu), dtype=np.int64)
    dx = np.empty(r.size)
    ok = galpha._factor_blocks(M, C, K, h, eig, S, Jc, piv)
    if ok and cl is not None:
        ok = galpha._closure_blocks(eig, S, Jc, piv, cl, np.zeros(0, dtype=np.int64))
    galpha._solve_blocks(eig, S, Jc, piv, cl, omega * h, r, np.empty((nu, 1)),
                         np.empty((nu, 1), dtype=np.complex128), dx)
    return ok, dx


#: a closure kind's code (flexdyn.engine.closure.CLOSURE_CODES) by its number of rows
_CODE_OF_ROWS = {1: 5, 2: 3, 3: 0}


@pytest.mark.parametrize("scheme", [galpha.GAUSS_LEGENDRE, galpha.RADAU_IIA])
@settings(max_examples=15, deadline=None)
@given(nu=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       h=st.floats(1e-5, 1.0), stiff=st.floats(0.0, 8.0), nc=st.integers(0, 3),
       omega=st.sampled_from([0.0, 10.0, 1e3]))
def test_split_newton_solve_equals_the_dense_solve(scheme, nu, seed, h, stiff, nc, omega):
    """The collocation step's Newton correction through the eigendecomposition of ``a``
    (``_factor_blocks``, ``_solve_blocks``) equals the dense solve with
    ``I ⊗ M + h a ⊗ C + h² a² ⊗ K`` (s nu × s nu) by numpy, for random SPD ``M`` and
    PSD ``C``, ``K`` up to ``10⁸`` times stiffer than ``M``; with ``nc`` loop-closure rows
    ``J``, the system bordered by ``I ⊗ Jᵀ`` and ``(I + 2ωh a + ω²h² a²) ⊗ J``
    (:class:`flexdyn.engine.galpha.Closures`), for the multipliers too."""
    nc = min(nc, nu - 1)
    table = galpha.TABLES[scheme]
    eig = galpha.RADAU_EIGEN if scheme == galpha.RADAU_IIA else galpha.GL_EIGEN
    s = table.shape[0]
    a, a2 = table[:, :s], table[:, s:2 * s]
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nu, nu))
    M = B @ B.T + nu * np.eye(nu)
    C, K = (10.0**e * (X @ X.T) for e, X in ((stiff / 2, rng.normal(size=(nu, nu))),
                                              (stiff, rng.normal(size=(nu, nu)))))
    r = rng.normal(size=s * nu)
    Jr, rc = rng.normal(size=(nc, nu)), rng.normal(size=s * nc)
    cl = None
    if nc:
        cl = galpha.closures(np.array([[_CODE_OF_ROWS[nc], 0, -1, -1, -1, 0]]),
                             np.zeros((1, 33)), None, s, nu)
        cl.J[:], cl.rc[:] = Jr, rc
    ok, dx = _split_solve(M, C, K, h, eig, r, cl, omega)
    n = s * nu
    J = np.zeros((s * (nu + nc), s * (nu + nc)))
    J[:n, :n] = np.kron(np.eye(s), M) + h * np.kron(a, C) + h * h * np.kron(a2, K)
    J[:n, n:] = np.kron(np.eye(s), Jr.T)
    J[n:, :n] = np.kron(np.eye(s) + 2 * omega * h * a + (omega * h) ** 2 * a2, Jr)
    want = np.linalg.solve(J, np.concatenate([r, rc]))
    got = dx if cl is None else np.concatenate([dx, cl.dl])
    assert ok
    assert np.max(np.abs(got - want)) <= 1e-14 * np.linalg.cond(J) * np.max(np.abs(want))


@numba.njit
def _iteration_stiffness(ib, fb, q, nu):
    """The engine's stiffness of the iteration matrix at ``q`` without the constant blocks
    (``galpha._stiffness`` with ``Kc = 0``): the geometric forces' tangent."""
    Ku = np.empty((nu, nu))
    galpha._stiffness(unpack(ib, fb), q, np.zeros((nu, nu)), Ku)
    return Ku


@pytest.mark.parametrize("fidelity", ["exact", "consistent"])
def test_iteration_stiffness_holds_the_geometric_forces_tangent(fidelity):
    """The spin-up beam's modal block of the iteration stiffness equals the central
    differences of the reference body model's geometric force (cubic and quartic terms of
    Eq 20; the consistent model's stretch rows zero) at a random deflection."""
    model = models.spinup_beam()
    beam = body_models(model, fidelity)[0]
    m, s = beam.body.n_modes, model.nu - beam.body.n_modes
    eta = 0.2 * np.random.default_rng(7).standard_normal(m)
    K = _iteration_stiffness(*Engine(model, fidelity).packed,
                             np.concatenate([np.zeros(s), eta]), model.nu)
    d = 1e-6
    want = np.column_stack([(beam.geometric_force(eta + d * e) - beam.geometric_force(eta - d * e))
                            / (2 * d) for e in np.eye(m)])
    assert np.max(np.abs(want)) > 1e-3 * np.max(np.abs(beam.body.K))  # not a vacuous check
    np.testing.assert_allclose(K[s:, s:], want, rtol=0, atol=1e-7 * np.max(np.abs(want)))
    assert not np.any(K[:s]) and not np.any(K[:, :s])


def test_radau_iia_newton_converges_on_the_stiffened_spinup_beam():
    """The spin-up beam under the exact model (its stretch mode carries the centrifugal load
    through the geometric forces): with their tangent in the iteration matrix the Newton
    iteration converges at the steps the error control asks for, so fewer than 5 % of the
    tries are rejected at rtol 1e-6 (without it, 30 %: failed iterations beyond 13 ms)."""
    model = models.spinup_beam()
    res = fd.simulate(model, t_span=(0.0, 20.0), tau=models.spinup_torque(model),
                      integrator=RADAU, rtol=1e-6, atol=1e-8, error_norm="displacement",
                      t_eval=[20.0])
    steps, rejected = step_counts(res)
    assert rejected < 0.05 * (steps + rejected)


class CountingRadau(scipy.integrate.Radau):
    """scipy's Radau IIA, counting its step tries."""

    tries = 0

    def step(self):
        type(self).tries += 1
        return super().step()


@pytest.mark.parametrize("rtol", [1e-5, 1e-7, 1e-9])
def test_radau_iia_steps_like_scipys_radau(arm_reference, rtol):
    """In the state norm, the same method and error estimate as scipy's Radau: about as many
    step tries (within 25 %) and errors of the same size (within a factor of 3), each near
    the tolerance."""
    model, tau, t_eval = arm_case()
    kw = {"t_span": (0.0, t_eval[-1]), "tau": tau, "t_eval": t_eval, "rtol": rtol,
          "atol": rtol * 1e-2}
    CountingRadau.tries = 0
    peer = fd.simulate(model, integrator=CountingRadau, **kw)
    res = fd.simulate(model, integrator=RADAU, error_norm="state", **kw)
    steps, rejected = step_counts(res)
    assert abs((steps + rejected) / CountingRadau.tries - 1.0) < 0.25
    errors = arm_error(res, arm_reference), arm_error(peer, arm_reference)
    assert errors[1] / 3 < errors[0] < 3 * errors[1]
    assert errors[0] < 100 * rtol


@pytest.mark.parametrize("rtol", [1e-5, 1e-7, 1e-9])
def test_radau_iia_displacement_norm_on_the_flexible_arm(arm_reference, rtol):
    """``error_norm="displacement"`` measures the speeds' error by the displacement it makes
    over a step, ``h e_u``: on the arm, whose 1 % damped modes are excited, it takes fewer
    than 0.7 times the tries of the state norm, and its errors in ``q`` and ``u`` stay
    within 100 rtol of the largest values (the state norm's are near rtol)."""
    model, tau, t_eval = arm_case()
    kw = {"t_span": (0.0, t_eval[-1]), "tau": tau, "t_eval": t_eval, "rtol": rtol,
          "atol": rtol * 1e-2, "integrator": RADAU}
    state = fd.simulate(model, error_norm="state", **kw)
    moved = fd.simulate(model, error_norm="displacement", **kw)
    assert sum(step_counts(moved)) < 0.7 * sum(step_counts(state))
    assert arm_error(moved, arm_reference) < 100 * rtol


def test_radau_iia_displacement_norm_against_the_exact_oscillation():
    """The undamped cantilever mode released from 1 mm, ``q = q₀ cos ωt``, over five
    periods: in the displacement norm the error of ``q`` (and of ``u`` over ``ω q₀``)
    stays within 10 rtol of ``q₀`` and falls in proportion to the tolerance (by 20–500 times
    for a hundredfold smaller rtol)."""
    model = cantilever()
    w, q0 = omega(model), 1e-3
    t = np.linspace(0.0, 10.0 * np.pi / w, 11)
    errors = []
    for rtol in (1e-6, 1e-8, 1e-10):
        res = fd.simulate(model, q0=[q0], t_span=(0.0, t[-1]), t_eval=t, integrator=RADAU,
                          rtol=rtol, atol=1e-3 * rtol, error_norm="displacement")
        err = max(np.max(np.abs(res.q[:, 0] - q0 * np.cos(w * t))),
                  np.max(np.abs(res.u[:, 0] + q0 * w * np.sin(w * t))) / w) / q0
        assert err < 10 * rtol
        errors.append(err)
    assert all(20 < coarse / fine < 500 for coarse, fine in zip(errors, errors[1:],
                                                                  strict=False))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=strategies.models(max_bodies=4, max_modes=3, joint_types=[
    t for t in strategies.JOINT_TYPES if t not in strategies.QUATERNION_JOINTS]),
       seed=st.integers(0, 2**32 - 1))
def test_radau_iia_on_random_trees_against_dop853(d, seed):
    """Random trees of rigid and flexible bodies on every joint kind whose coordinates are
    their own rates (modal damping, gravity, joint maps included), from a random state:
    Radau IIA at rtol 1e-9 follows DOP853 at 1e-12 over 0.2 s, with either iteration matrix
    (:func:`test_exact_iteration_matrix_on_the_spinup_beam`)."""
    model = fd.Model.from_dict(d)
    assume(all(j.rates for j in model.joints))
    q0, u0, _ = strategies.random_state(model, np.random.default_rng(seed), eta_scale=0.05,
                                        speed_scale=0.5)
    kw = {"q0": q0, "u0": u0, "t_span": (0.0, 0.2), "t_eval": [0.1, 0.2]}
    ref = fd.simulate(model, rtol=1e-12, atol=1e-12, integrator="DOP853", **kw)
    scale = max(1.0, np.max(np.abs(ref.q)), np.max(np.abs(ref.u)))
    for matrix in ("modal", "exact"):
        res = fd.simulate(model, integrator=fd.RadauIIA(rtol=1e-9, atol=1e-11,
                                                        iteration_matrix=matrix), **kw)
        assert np.max(np.abs(res.q - ref.q)) < 1e-6 * scale, matrix
        assert np.max(np.abs(res.u - ref.u)) < 1e-6 * scale, matrix


def test_radau_iia_annihilates_an_unresolved_mode():
    """L-stability: a cantilever mode at ω h = 1000 falls by the factor
    ``|R(iωh)| → 3/(ω h)`` per step (Radau IIA's stability function
    ``(1 + 2z/5 + z²/20)/(1 − 3z/5 + 3z²/20 − z³/60)``), where Gauss–Legendre keeps its
    energy."""
    model = cantilever()
    h = 1000.0 / omega(model)
    res = fd.simulate(model, q0=[1e-3], t_span=(0.0, 4 * h), integrator=RADAU, h=h)
    amplitude = np.sqrt(res.total_energy)
    np.testing.assert_allclose(amplitude[1:] / amplitude[:-1], 3.0 / 1000.0, rtol=0.02)
    kept = fd.simulate(model, q0=[1e-3], t_span=(0.0, 4 * h), integrator=GL, h=h,
                       newton_tol=1e-13)
    np.testing.assert_allclose(kept.total_energy, kept.total_energy[0], rtol=1e-9)


def test_radau_iia_adaptive_steps_pass_over_stiff_damped_modes():
    """A damped mode (ζ = 0.5) decays from 1 mm; once it is below ``atol`` the steps grow
    far beyond an explicit method's stability limit (a few ``1/ω``), and the decay agrees
    with DOP853 at rtol 1e-12."""
    model = cantilever(damping_ratio=0.5)
    w = omega(model)
    t_eval = np.array([5.0, 10.0, 200.0]) / w
    ref = fd.simulate(model, q0=[1e-3], t_span=(0.0, t_eval[-1]), t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-16))
    res = fd.simulate(model, q0=[1e-3], t_span=(0.0, t_eval[-1]), integrator=RADAU,
                      rtol=1e-6, atol=1e-12)
    assert res.t[-1] - res.t[-2] > 50.0 / w
    sampled = fd.simulate(model, q0=[1e-3], t_span=(0.0, t_eval[-1]), t_eval=t_eval,
                          integrator=RADAU, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(sampled.q[:, 0], ref.q[:, 0], rtol=0, atol=1e-9)
    assert abs(ref.q[0, 0]) > 1e-5  # still moving at the first sample


def test_radau_iia_work_integrals_close_the_energy_balance(arm_reference):
    """Adaptive steps with a torque of ``t`` at the stages: the work and dissipation by the
    stage quadrature (fifth order) agree with scipy's Radau at 1e-11 and close the balance."""
    model, tau, t_eval = arm_case()
    ref = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("Radau", rtol=1e-11, atol=1e-13))
    res = fd.simulate(model, t_span=(0.0, t_eval[-1]), tau=tau, t_eval=t_eval,
                      integrator=RADAU, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.work, ref.work, atol=1e-7 * np.max(np.abs(ref.work)))
    np.testing.assert_allclose(res.dissipation, ref.dissipation,
                               atol=1e-6 * np.max(ref.dissipation))
    assert np.max(np.abs(res.energy_balance_error)) < 1e-6  # percent


# ----------------------------------------------------------------------------------------------
# forces
# ----------------------------------------------------------------------------------------------
def test_state_feedback_and_constant_torques_against_dop853():
    model = pendulum()
    t_eval = np.linspace(0.0, 2.0, 11)

    def pd(t, q, u):
        return np.array([-20.0 * (q[0] + 1.0) - 2.0 * u[0] + 3.0 * np.sin(5 * t)])

    for tau in (pd, np.array([1.5])):
        ref = fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval,
                          integrator=fd.Auto(rtol=1e-12, atol=1e-12))
        errors = [np.max(np.abs(fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval,
                                            integrator=GA, h=h).q - ref.q))
                  for h in (2e-3, 1e-3)]
        assert errors[1] < 1e-4
        assert 3.3 < errors[0] / errors[1] < 4.7, errors
        res = fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval, integrator=GA,
                          h=1e-3)
        np.testing.assert_allclose(res.tau, ref.tau, atol=1e-3)


@pytest.mark.parametrize("integrator, options, tol", [
    (RADAU, {"rtol": 1e-10, "atol": 1e-12}, 1e-7),  # feedback at predicted states:
    (GL, {"h": 2e-3, "newton_tol": 1e-12}, 1e-6),  # second order in the step
    (GA, {"h": 5e-4}, 1e-4),
])
def test_events_with_state_feedback_against_dop853(integrator, options, tol):
    """Events on a compiled integrator whose torque is a callable of the state: the times
    at which a driven pendulum crosses −1 rad (every crossing; a terminal one upwards) and
    the states there agree with DOP853's at rtol 1e-12."""
    model = pendulum()

    def pd(t, q, u):
        return np.array([-20.0 * (q[0] + 1.0) - 0.5 * u[0] + 3.0 * np.sin(5 * t)])

    def crossing(t, q, u):
        return q[0] + 1.0

    def upward(t, q, u):
        return q[0] + 1.0

    upward.direction, upward.terminal = 1.0, True
    kw = {"t_span": (0.0, 3.0), "tau": pd, "events": [crossing, upward]}
    ref = fd.simulate(model, rtol=1e-12, atol=1e-12, **kw)
    res = fd.simulate(model, integrator=integrator, **options, **kw)
    assert res.message.startswith("a terminal event occurred")
    assert len(ref.t_events[0]) >= 2
    for k in range(2):
        np.testing.assert_allclose(res.t_events[k], ref.t_events[k], rtol=0, atol=tol)
        np.testing.assert_allclose(res.u_events[k], ref.u_events[k], rtol=0,
                                   atol=100 * tol)
    assert res.t[-1] == res.t_events[1][0]


def test_a_failure_with_events_keeps_the_samples_before_it():
    model = pendulum()

    def tau(t, q, u):
        return np.array([np.nan if t > 0.5 else 0.1])

    with pytest.raises(fd.SimulationError, match="non-finite") as info:
        fd.simulate(model, t_span=(0.0, 1.0), tau=tau, integrator=RADAU,
                    t_eval=np.linspace(0.0, 1.0, 11), events=lambda t, q, u: q[0])
    err = info.value
    assert 0.5 < err.t < 0.6
    # the samples of the accepted steps, which end before the failing try's stages
    k = err.partial.t.size
    assert k >= 5 and err.partial.t[-1] < err.t
    np.testing.assert_allclose(err.partial.t, np.linspace(0.0, 1.0, 11)[:k])
    assert np.all(np.isfinite(err.partial.q))


def test_external_wrench_does_work():
    """A constant wrench on the pendulum (f_ext array) against DOP853, its work recorded."""
    model = pendulum()
    f_ext = np.array([[0.0, 0.0, 0.5, 1.0, 0.0, 0.0]])
    t_eval = np.linspace(0.0, 1.0, 5)
    ref = fd.simulate(model, t_span=(0.0, 1.0), f_ext=f_ext, t_eval=t_eval,
                      integrator=fd.Auto(rtol=1e-12, atol=1e-12))
    res = fd.simulate(model, t_span=(0.0, 1.0), f_ext=f_ext, t_eval=t_eval, integrator=GA,
                      h=5e-4)
    assert np.max(np.abs(res.q - ref.q)) < 1e-5
    assert abs(ref.external_work[-1]) > 0.1
    np.testing.assert_allclose(res.external_work, ref.external_work, atol=1e-5)


# ----------------------------------------------------------------------------------------------
# outputs
# ----------------------------------------------------------------------------------------------
def test_every_step_is_recorded_without_t_eval():
    model = pendulum()
    res = fd.simulate(model, t_span=(0.5, 1.0), integrator=GA, h=0.03)
    n = math.ceil(0.5 / 0.03)
    np.testing.assert_allclose(res.t, 0.5 + np.arange(n + 1) * 0.5 / n, rtol=0, atol=1e-15)
    assert res.t[-1] == 1.0
    assert res.message.startswith("the integration reached t1")
    # adaptive steps beyond one output buffer
    res = fd.simulate(model, t_span=(0.0, 2.0), integrator=GA, rtol=1e-10, atol=1e-12)
    assert res.t.size > 4097 and res.t[-1] == 2.0 and np.all(np.diff(res.t) > 0)
    assert res.nfev > res.t.size


def test_failure_keeps_the_samples_before_it():
    model = pendulum()

    def tau(t, q, u):
        return np.array([np.nan if t > 0.5 else 0.1])

    with pytest.raises(fd.SimulationError, match="non-finite") as info:
        fd.simulate(model, t_span=(0.0, 1.0), tau=tau, integrator=GA, h=0.01,
                    t_eval=np.linspace(0.0, 1.0, 11))
    err = info.value
    assert err.t == pytest.approx(0.51)  # the force is evaluated at the end of the step
    np.testing.assert_allclose(err.partial.t, np.linspace(0.0, 0.5, 6))


# ----------------------------------------------------------------------------------------------
# the exact iteration matrix
# ----------------------------------------------------------------------------------------------
def counts(res) -> dict[str, int]:
    """A compiled integrator's counts, from its message."""
    return {k: int(v) for v, k in re.findall(
        r"(\d+) (steps|rejected|Newton|factorizations)", res.message)}


@pytest.mark.parametrize("integrator, fewer", [
    (fd.GeneralizedAlpha(h=4e-3), {"Newton": 0.9, "factorizations": 0.25}),
    (fd.RadauIIA(rtol=1e-6, atol=1e-8, error_norm="displacement"),
     {"Newton": 0.9, "factorizations": 0.5, "rejected": 0.5}),
])
def test_exact_iteration_matrix_on_the_spinup_beam(integrator, fewer):
    """The spin-up beam under the exact model (15 s): its velocity products (gyroscopic and
    centrifugal, of order ``h Ω`` beside ``M``) are outside the modal iteration matrix and
    inside the exact one, the residual's own Jacobian.  With it the kept matrix contracts
    fast for longer: fewer Newton iterations, factorizations and (with step control)
    rejected tries, for an answer as close to DOP853's at rtol 1e-11 (the steps' own
    error)."""
    model = models.spinup_beam()
    kw = {"t_span": (0.0, 15.0), "tau": models.spinup_torque(model), "t_eval": [5.0, 15.0],
          "fidelity": "exact"}
    ref = fd.simulate(model, **kw, integrator=fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-13))
    modal = fd.simulate(model, **kw, integrator=integrator)
    exact = fd.simulate(model, **kw, integrator=dataclasses.replace(
        integrator, iteration_matrix="exact"))
    assert exact.settings["iteration_matrix"] == "exact"
    for what, ratio in fewer.items():
        assert counts(exact)[what] <= ratio * counts(modal)[what], (modal.message,
                                                                     exact.message)
    scale = np.max(np.abs(ref.q), axis=0)
    error = {k: np.max(np.abs(r.q - ref.q) / scale) for k, r in (("modal", modal),
                                                                  ("exact", exact))}
    assert error["modal"] < 1e-3 and error["exact"] <= 1.1 * error["modal"] + 1e-8, error


def spring_rotor() -> fd.Model:
    """The pendulum of :func:`helpers.pendulum` without gravity on a stiff joint spring and
    damper: its only forces besides inertia are the joint's, so that the exact iteration
    matrix is the modal one, ``M + γ′ c + β′ k``."""
    d = pendulum().to_dict()
    d["gravity"] = [0.0, 0.0, 0.0]
    d["bodies"][0]["joint"]["forces"] = {"stiffness": 400.0, "damping": 2.0, "rest": 0.3}
    return fd.Model.from_dict(d)


@pytest.mark.parametrize("integrator", [fd.GeneralizedAlpha(h=0.02),
                                        fd.GaussLegendre(h=0.02),
                                        fd.RadauIIA(rtol=1e-8, atol=1e-10)])
def test_exact_iteration_matrix_holds_the_joint_forces(integrator):
    """On :func:`spring_rotor` (a stiff spring: ``ω h`` ≈ 1.3 at h = 20 ms, 1 s) the exact
    matrix equals the modal one, so each scheme takes the same steps, Newton iterations and
    factorizations with either, to the same states within round-off: the joint forces'
    blocks are in the exact matrix once (from the derivatives of inverse dynamics, which
    holds them; twice or without them, its iteration takes about twice as many iterations
    and a factorization at every step)."""
    model = spring_rotor()
    kw = {"q0": np.array([1.2]), "t_span": (0.0, 1.0), "t_eval": np.linspace(0.0, 1.0, 11)}
    modal = fd.simulate(model, **kw, integrator=integrator)
    exact = fd.simulate(model, **kw, integrator=dataclasses.replace(
        integrator, iteration_matrix="exact"))
    assert counts(exact) == counts(modal), (modal.message, exact.message)
    np.testing.assert_allclose(exact.q, modal.q, rtol=0, atol=1e-12)
    assert np.ptp(modal.q) > 1.0  # it swings


def test_exact_iteration_matrix_refuses_loop_closures_and_unknown_names():
    with pytest.raises(ValueError, match=r"iteration_matrix='exact' integrates trees; model "
                                         r"'fourbar' has loop closures \(\w+"):
        fd.simulate(fourbar(), t_span=(0.0, 0.01),
                    integrator=fd.RadauIIA(iteration_matrix="exact"))
    with pytest.raises(ValueError, match="unknown iteration_matrix 'newton'"):
        fd.GeneralizedAlpha(iteration_matrix="newton")


# ----------------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"integrator": "DOP853", "h": 1e-3}, "options of the compiled integrators"),
    ({"h": 1e-3}, "options of a chosen integrator"),
    ({"integrator": GL}, "takes fixed steps: give h"),
    ({"integrator": GL, "h": 1e-3, "rho_inf": 0.5}, "an option of integrator=.generalized-alpha"),
    ({"integrator": "radau-iia", "rho_inf": 0.5}, "an option of integrator=.generalized-alpha"),
    ({"rho_inf": 0.5, "integrator": "Radau"}, "rho_inf"),
    ({"integrator": GA, "h": -1.0}, "h must be a positive"),
    ({"integrator": GA, "h": "1e-3"}, "h must be a number"),
    ({"integrator": GA, "rho_inf": 1.5}, r"rho_inf must lie in \[0, 1\]"),
    ({"integrator": GA, "rho_inf": True}, "rho_inf must be a number"),
    ({"integrator": GA, "newton_tol": 0.0}, "newton_tol"),
    ({"integrator": GA, "error_norm": "state"}, "an option of integrator=.radau-iia"),
    ({"integrator": "DOP853", "error_norm": "state"}, "options of the compiled integrators"),
    ({"integrator": RADAU, "error_norm": "energy"}, "unknown error_norm 'energy'"),
    ({"integrator": GA, "backend": "reference"}, "backend='engine'"),
    ({"integrator": "generalised-alpha"}, "unknown integrator"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fd.simulate(pendulum(), t_span=(0.0, 0.1), **kwargs)
