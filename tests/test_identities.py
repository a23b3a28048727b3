"""Operator identities of Jain & Rodriguez on random chains and trees, both fidelities.

* the mass matrix is the inverse dynamics of unit accelerations (Eq 43/44) and equals the
  dense product ``ℋ Φ M_m Φ* ℋ*``; it is symmetric positive definite;
* Lemma 1 (Eq 48): ``Φ M_m Φ* = R + Φ̃ R + R Φ̃*`` with the composite inertias ``R``;
* ``inverse_dynamics(forward_dynamics(τ)) = τ`` for every forward method available;
* external wrenches enter linearly, as ``−Jᵀ f`` with ``J`` the body-twist Jacobian;
* ``T = ½ uᵀ M u``, ``q̇ = Γ(q) u``;
* power balance ``d/dt (T + V) = uᵀ τ − η̇ᵀ D η̇ + Σ f·V`` along the motion (``"full"`` only),
  with the time derivative taken by complex step.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flexdyn as fd
from flexdyn import operators as ops
from flexdyn.composite_body import composite_inertias
from flexdyn.newton_euler import rnea
from helpers import RTOL, rel_err
from strategies import models_and_states

FIDELITIES = ("full", "ruthless")

SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

HAVE_ARTICULATED = importlib.util.find_spec("flexdyn.articulated_body") is not None
METHODS = [
    "composite",
    pytest.param(
        "articulated",
        marks=pytest.mark.skipif(not HAVE_ARTICULATED, reason="articulated_body not there"),
    ),
    pytest.param(
        "articulated-split",
        marks=pytest.mark.skipif(not HAVE_ARTICULATED, reason="articulated_body not there"),
    ),
]


def twist_power(model: fd.Model, kin: fd.PositionTerms, f: np.ndarray, w: np.ndarray) -> float:
    """``Σ_i f(i)·V(i)``: power of the wrenches ``f`` for the body twists of speeds ``w``."""
    vel = fd.compute_velocities(model, kin, w)
    return float(sum(f[i] @ vel.V_m[i][int(model.n_modes[i]):] for i in range(model.n_bodies)))


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_mass_matrix_is_inverse_dynamics_of_unit_accelerations(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    M = fd.mass_matrix(model, q, fidelity)
    kin = fd.compute_kinematics(model, q, fidelity)
    # at rest and without gravity, τ(e_k) − τ(0) is column k; with velocities the
    # difference must be the same since τ is affine in u̇
    for speeds in (np.zeros(model.nu), u):
        vel = fd.compute_velocities(model, kin, speeds)
        tau0 = rnea(model, kin, vel, np.zeros(model.nu), gravity=False)
        cols = np.zeros((model.nu, model.nu))
        for k in range(model.nu):
            e = np.zeros(model.nu)
            e[k] = 1.0
            cols[:, k] = rnea(model, kin, vel, e, gravity=False) - tau0
        assert rel_err(cols, M) < RTOL
    assert rel_err(ops.mass_matrix_dense(model, kin), M) < RTOL


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_mass_matrix_symmetric_positive_definite(sample, fidelity):
    M = fd.mass_matrix(sample.model, sample.q, fidelity)
    assert M.shape == (sample.model.nu, sample.model.nu)
    assert rel_err(M, M.T) < 1e-13
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert eig[0] > 1e-8 * eig[-1]


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_lemma1_composite_inertias(sample, fidelity):
    model = sample.model
    kin = fd.compute_kinematics(model, sample.q, fidelity)
    o = ops.modal_offsets(model)
    R_list = composite_inertias(model, kin)
    R = np.zeros((o[-1], o[-1]))
    for i in range(model.n_bodies):
        R[o[i]:o[i + 1], o[i]:o[i + 1]] = R_list[i]
    Phi = ops.Phi(model, kin)
    Phi_t = Phi - np.eye(o[-1])
    lhs = Phi @ ops.M_m(model, kin) @ Phi.T
    rhs = R + Phi_t @ R + R @ Phi_t.T
    assert rel_err(lhs, rhs) < RTOL


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_inverse_of_forward_dynamics(sample, fidelity, method):
    model, q, u, f_ext = sample.model, sample.q, sample.u, sample.f_ext
    tau = np.random.default_rng(0).normal(size=model.nu)
    udot = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity, f_ext=f_ext)
    back = fd.inverse_dynamics(model, q, u, udot, fidelity=fidelity, f_ext=f_ext)
    M = fd.mass_matrix(model, q, fidelity)
    C = fd.bias_forces(model, q, u, fidelity, f_ext=f_ext)
    scale = max(np.max(np.abs(tau)), np.max(np.abs(C)), np.max(np.abs(M @ udot)))
    assert np.max(np.abs(back - tau)) < RTOL * scale
    assert np.max(np.abs(M @ udot + C - tau)) < RTOL * scale


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_inverse_dynamics_is_mass_matrix_plus_bias(sample, fidelity):
    model, q, u, udot = sample.model, sample.q, sample.u, sample.udot
    M = fd.mass_matrix(model, q, fidelity)
    for f_ext in (None, sample.f_ext):
        C = fd.bias_forces(model, q, u, fidelity, f_ext=f_ext)
        tau = fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f_ext)
        assert rel_err(tau, M @ udot + C) < RTOL


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_external_forces_enter_as_jacobian_transpose(sample, fidelity):
    model, q, u, f = sample.model, sample.q, sample.u, sample.f_ext
    kin = fd.compute_kinematics(model, q, fidelity)
    rng = np.random.default_rng(1)
    g = rng.normal(size=f.shape)
    C0 = fd.bias_forces(model, q, u, fidelity)
    dC_f = fd.bias_forces(model, q, u, fidelity, f_ext=f) - C0
    dC_g = fd.bias_forces(model, q, u, fidelity, f_ext=g) - C0
    dC_fg = fd.bias_forces(model, q, u, fidelity, f_ext=f - 2.0 * g) - C0
    scale = max(np.max(np.abs(C0)), np.max(np.abs(dC_f)), np.max(np.abs(dC_g)))
    # linear in f_ext and independent of the speeds
    assert np.max(np.abs(dC_fg - (dC_f - 2.0 * dC_g))) < RTOL * scale
    z = np.zeros(model.nu)
    dC_rest = fd.bias_forces(model, q, z, fidelity, f_ext=f) - fd.bias_forces(model, q, z,
                                                                              fidelity)
    assert np.max(np.abs(dC_rest - dC_f)) < RTOL * scale
    # dC = −Jᵀ f with J u = body twists: −dCᵀ w = Σ f·V(w) for the speeds and random w
    for w in (u, rng.normal(size=model.nu), rng.normal(size=model.nu)):
        power = twist_power(model, kin, f, w)
        assert abs(-dC_f @ w - power) < RTOL * (np.abs(dC_f) @ np.abs(w) + 1e-300)


@pytest.mark.parametrize("fidelity", FIDELITIES)
@SETTINGS
@given(sample=models_and_states())
def test_kinetic_energy_and_kinematic_map(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    M = fd.mass_matrix(model, q, fidelity)
    T = fd.kinetic_energy(model, q, u, fidelity)
    assert abs(T - 0.5 * u @ M @ u) < RTOL * max(abs(T), 1e-300)
    assert rel_err(model.qdot(q, u), model.Gamma(q) @ u) < 1e-14


@SETTINGS
@given(sample=models_and_states())
def test_power_balance_full(sample):
    model, q, u, f = sample.model, sample.q, sample.u, sample.f_ext
    tau = np.random.default_rng(2).normal(size=model.nu)
    udot = fd.forward_dynamics(model, q, u, tau, method="composite", f_ext=f)
    h = 1e-30
    dE = fd.total_energy(model, q + 1j * h * model.qdot(q, u), u + 1j * h * udot).imag / h
    power = u @ tau + twist_power(model, fd.compute_kinematics(model, q), f, u)
    for i, body in enumerate(model.bodies):
        eta_dot = u[model.u_slice(i)][model.joints[i].nu:]
        power -= eta_dot @ body.C @ eta_dot
    # scale: the largest single contribution to dE/dt
    M = fd.mass_matrix(model, q)
    C = fd.bias_forces(model, q, u, f_ext=f)
    scale = np.abs(u) @ (np.abs(M @ udot) + np.abs(C) + np.abs(tau))
    assert abs(dE - power) < RTOL * scale
