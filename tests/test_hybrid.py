"""Hybrid dynamics (some accelerations prescribed, the rest free) and the loads the joints
transmit, against independent references:

* the partitioned dense equations ``M u̇ + c = τ`` (mass matrix and bias from the front door,
  solved for the free block) on hypothesis trees with every joint type, random masks, both
  fidelities; feeding the loads back into ``forward_dynamics`` reproduces ``u̇``;
* the joint wrenches against the Newton–Euler balance of each outboard subtree, built from
  the element accelerations of the brute-force oracle (no flexdyn code);
* closed forms: the root load of a uniform beam held horizontal in gravity (``m g L / 2``)
  and spinning steadily about its root (tension ``m Ω² L / 2``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.beam import beam_modes
from helpers import assert_close
from oracles.brute_force import BruteModel, compose, inverse
from strategies import models_and_states

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=6, max_modes=4)


@SETTINGS
@given(sample=SAMPLES, fidelity=st.sampled_from(fd.FIDELITIES), seed=st.integers(0, 2**16))
def test_hybrid_equals_the_partitioned_dense_equations(sample, fidelity, seed):
    model, q, u = sample.model, sample.q, sample.u
    rng = np.random.default_rng(seed)
    known = rng.random(model.nu) < 0.5
    tau, udot_known = rng.normal(size=model.nu), rng.normal(size=model.nu)
    udot, T = fd.hybrid_dynamics(model, q, u, tau, udot_known, known, fidelity=fidelity,
                                 f_ext=sample.f_ext)
    M = fd.mass_matrix(model, q, fidelity)
    c = fd.bias_forces(model, q, u, fidelity, f_ext=sample.f_ext)
    F, K = ~known, known
    ref = udot_known.copy()
    if F.any():
        rhs = tau[F] - c[F] - M[np.ix_(F, K)] @ udot_known[K]
        ref[F] = np.linalg.solve(M[np.ix_(F, F)], rhs)
    ref_T = tau.copy()
    ref_T[K] = M[K] @ ref + c[K]
    scale = float(np.max(np.abs(M))) * (1.0 + float(np.max(np.abs(ref))))
    assert_close(udot, ref, "u̇ (free entries solved from the dense partition)",
                 tol=1e-8, scale=1.0)
    assert_close(T, ref_T, "τ (prescribed loads)", tol=1e-9, scale=scale)
    assert np.array_equal(udot[K], udot_known[K]) and np.array_equal(T[F], tau[F])
    back = fd.forward_dynamics(model, q, u, T, fidelity=fidelity, f_ext=sample.f_ext)
    assert_close(back, udot, "forward dynamics of the realised loads", tol=1e-8, scale=1.0)


def test_all_free_is_forward_and_all_prescribed_is_inverse_dynamics():
    model = fd.models.builtin_model("spacecraft")
    rng = np.random.default_rng(3)
    q = model.normalize_configuration(model.neutral_configuration()
                                      + 0.05 * rng.normal(size=model.nq))
    u, tau, a = (rng.normal(size=model.nu) for _ in range(3))
    none = np.zeros(model.nu, dtype=bool)
    assert_close(fd.hybrid_dynamics(model, q, u, tau, None, none)[0],
                 fd.forward_dynamics(model, q, u, tau), "all free")
    assert_close(fd.hybrid_dynamics(model, q, u, None, a, ~none)[1],
                 fd.inverse_dynamics(model, q, u, a), "all prescribed")


def test_hybrid_batches_and_bad_masks():
    model = fd.models.builtin_model("two_link_arm")
    rng = np.random.default_rng(4)
    Q = np.array([model.neutral_configuration() + 0.1 * rng.normal(size=model.nq)
                  for _ in range(3)])
    U, T, A = (rng.normal(size=(3, model.nu)) for _ in range(3))
    mask = np.array([True, False, False, True])
    got_udot, got_T = fd.hybrid_dynamics(model, Q, U, T, A, mask)
    for b in range(3):
        udot, tau = fd.hybrid_dynamics(model, Q[b], U[b], T[b], A[b], mask)
        assert_close(got_udot[b], udot, "batched u̇", tol=1e-12)
        assert_close(got_T[b], tau, "batched τ", tol=1e-12)
    with pytest.raises(ValueError, match=r"prescribed must be a boolean array of shape \(4,\)"):
        fd.hybrid_dynamics(model, Q[0], U[0], T[0], A[0], mask[:3])
    with pytest.raises(ValueError, match=r"prescribed must be a boolean array"):
        fd.hybrid_dynamics(model, Q[0], U[0], T[0], A[0], mask.astype(int))


# ---------------------------------------------------------------------------------------------
# joint wrenches
# ---------------------------------------------------------------------------------------------
def _subtree(model: fd.Model, i: int) -> list[int]:
    out, stack = [], [i]
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(model.children[k])
    return out


def _element_bodies(brute: BruteModel) -> np.ndarray:
    """The body of each element of the oracle (per body: its rigid part, then its nodes)."""
    return np.concatenate([np.full(1 + b.nodes.shape[0], i) for i, b in enumerate(brute.bodies)])


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sample=models_and_states(max_bodies=5, max_modes=3))
def test_joint_wrenches_balance_the_outboard_subtree(sample):
    """Each joint transmits what the subtree beyond it needs: the rate of change of the
    subtree's linear and angular momentum minus gravity (element accelerations from the
    brute-force oracle), in the joint's moving frame about its origin."""
    model, q, u, udot = sample.model, sample.q, sample.u, sample.udot
    got = fd.joint_wrenches(model, q, u, udot)
    brute = BruteModel(sample.d)
    poses, X, R = brute.configuration(q)
    Jv, Jw, _ = brute.jacobians(q)
    _, w, a0, alpha0 = brute.accelerations(q, u)
    a = a0 + Jv @ udot  # element accelerations (inertial) and angular accelerations
    alpha = alpha0 + Jw @ udot  # (element frames)
    m, I = brute.element_masses, brute.element_inertias
    force = m[:, None] * (a - brute.gravity)
    moment_el = R @ (np.einsum("pij,pj->pi", I, alpha)
                     + np.cross(w, np.einsum("pij,pj->pi", I, w)))[..., None]
    owner = _element_bodies(brute)
    for i, b in enumerate(brute.bodies):
        T_node = (brute.node_pose(b, b.child_node, brute.eta(q, i)) if b.child_node is not None
                  else (np.eye(3), np.zeros(3)))
        R_Jc, p_Jc = compose(poses[i], inverse(compose(b.child_placement, inverse(T_node))))
        sel = np.isin(owner, _subtree(model, i))
        F = force[sel].sum(axis=0)
        N = (np.cross(X[sel] - p_Jc, force[sel]).sum(axis=0) + moment_el[sel, :, 0].sum(axis=0))
        ref = np.concatenate([R_Jc.T @ N, R_Jc.T @ F])
        scale = float(np.max(np.abs(force))) * max(1.0, float(np.max(np.abs(X))))
        assert_close(got[i], ref, f"joint wrench of body {i}", tol=1e-7, scale=scale)


def _beam_on_pin(n_modes: int, axis: list[float], gravity: list[float]) -> fd.Model:
    beam = beam_modes(2.0, 3.0, EI_y=400.0, EI_z=400.0, n_elements=8, n_modes=n_modes)
    return (fd.ModelBuilder("beam", gravity=gravity)
            .add_body("beam", None, joint={"type": "revolute", "axis": axis},
                      flex=beam.to_flex_dict())
            .build())


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_root_moment_of_a_horizontal_cantilever_in_gravity(fidelity):
    """Held at rest (every acceleration prescribed zero), undeformed: the root carries the
    weight ``m g`` and the moment ``m g L / 2`` about the pin axis."""
    model = _beam_on_pin(3, [0.0, 1.0, 0.0], [0.0, 0.0, -9.81])
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    m, L, g = 3.0 * 2.0, 2.0, 9.81
    wrench = fd.joint_wrenches(model, q, z, z, fidelity)[0]
    assert_close(wrench, [0.0, -m * g * L / 2, 0.0, 0.0, 0.0, m * g], "root load", tol=1e-12)
    udot, tau = fd.hybrid_dynamics(model, q, z, None, z, np.ones(model.nu, dtype=bool),
                                   fidelity=fidelity)
    assert_close(tau[0], -m * g * L / 2, "root torque about y", tol=1e-12)


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_root_tension_of_a_beam_spinning_steadily(fidelity):
    """Spinning at Ω about its root with no angular acceleration and no deformation: the root
    pulls the beam inwards with ``m Ω² L / 2`` and transmits no moment."""
    model = _beam_on_pin(2, [0.0, 0.0, 1.0], [0.0, 0.0, 0.0])
    omega = 3.0
    q = model.neutral_configuration()
    u = np.zeros(model.nu)
    u[0] = omega
    m, L = 6.0, 2.0
    wrench = fd.joint_wrenches(model, q, u, np.zeros(model.nu), fidelity)[0]
    assert_close(wrench, [0, 0, 0, -m * omega**2 * L / 2, 0, 0], "root load", tol=1e-12)
