"""The Coriolis matrix ``C(q, u)`` (:func:`flexdyn.coriolis_matrix`, :mod:`flexdyn.coriolis`).

Checked on random trees of rigid and flexible bodies with every joint type (quaternion and
joint-map joints, whose speeds are quasi-velocities): ``C u`` equals the velocity terms of
the bias vector, and ``Ṁ = C + Cᵀ`` with ``Ṁ`` the complex-step derivative of the mass
matrix along ``q̇ = Γ(q) u`` (so ``Ṁ − 2C`` is skew); and Kwatny & Blankenship's thin disk
on a simple spherical joint (Eq 54a–b: Euler's equations) and on the compound joint of its
three axes (Eq 55a–b: Lagrange's equations).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from helpers import rel_err
from oracles import kwatny_disk
from strategies import models_and_states

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _mass_matrix_rate(model: fd.Model, q: np.ndarray, u: np.ndarray, fidelity: str):
    """``Ṁ`` along ``q̇ = Γ(q) u`` by complex step of the reference mass matrix."""
    h = 1e-30
    q_step = model.check_state(q + 1j * h * model.qdot(q, u))[0]
    return fd.mass_matrix(model, q_step, fidelity=fidelity, backend="reference").imag / h


@SETTINGS
@given(sample=models_and_states(max_bodies=4, max_nodes=3, max_modes=3, damping=False),
       fidelity=st.sampled_from(["full", "exact"]))
def test_velocity_terms_and_skew_symmetry(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    C = fd.coriolis_matrix(model, q, u, fidelity=fidelity)
    velocity_terms = (fd.bias_forces(model, q, u, fidelity=fidelity)
                      - fd.bias_forces(model, q, np.zeros(model.nu), fidelity=fidelity))
    M = fd.mass_matrix(model, q, fidelity=fidelity)
    floor = float(np.max(np.abs(M)) * np.max(np.abs(u)) ** 2)  # the scale of the products
    assert rel_err(C @ u, velocity_terms, floor) < 1e-9
    M_dot = _mass_matrix_rate(model, q, u, fidelity)
    skew = M_dot - 2 * C
    assert np.max(np.abs(skew + skew.T)) <= 1e-10 * max(1.0, np.max(np.abs(M_dot)),
                                                        np.max(np.abs(C)))


def test_batch_and_errors():
    model = fd.models.two_link_arm()
    rng = np.random.default_rng(0)
    q, u = rng.normal(size=(3, model.nq)), rng.normal(size=(3, model.nu))
    C = fd.coriolis_matrix(model, q, u, fidelity="full")
    assert C.shape == (3, model.nu, model.nu)
    assert np.array_equal(C[1], fd.coriolis_matrix(model, q[1], u[1], fidelity="full"))
    with pytest.raises(ValueError, match="fidelity 'ruthless' has no Coriolis matrix"):
        fd.coriolis_matrix(model, q[0], u[0], fidelity="ruthless")
    with pytest.raises(TypeError, match="real q and u"):
        fd.coriolis_matrix(model, q[0] + 0j, u[0], fidelity="full")


# ---------------------------------------------------------------------------------------------
# Kwatny & Blankenship's thin disk (Sec III): m = 5, R = 2, I = diag(5, 5, 10)
# ---------------------------------------------------------------------------------------------
DISK_H = np.vstack([np.eye(3), np.zeros((3, 3))])


def _disk(joint: dict) -> fd.Model:
    return (fd.ModelBuilder("thin disk", gravity=(0.0, 0.0, 0.0))
            .add_body("disk", joint=joint,
                      rigid={"mass": 5.0, "inertia": np.diag([5.0, 5.0, 10.0])}).build())


T_, W_ = np.array([0.3, -0.4, 0.7]), np.array([0.5, -1.2, 0.8])


def test_thin_disk_on_a_simple_spherical_joint_gives_eulers_equations():
    """Eq 54a's ``Γ``, Eq 54b's constant ``𝒨 = diag(5, 5, 10)`` and ``𝒞 p``.  K&B print the
    velocity terms on the right-hand side (``𝒨 ṗ = F``: their ``F`` is ``−C p`` here, as in
    Eq 55b below); flexdyn's ``C u`` is on the left, ``ω × Iω`` of Euler's equations."""
    model = _disk({"type": "map", "map": DISK_H.tolist()})
    t1, t2, _ = T_
    w1, w2, w3 = W_
    Gamma = np.array([[1, np.sin(t1) * np.tan(t2), np.cos(t1) * np.tan(t2)],
                      [0, np.cos(t1), -np.sin(t1)],
                      [0, np.sin(t1) / np.cos(t2), np.cos(t1) / np.cos(t2)]])
    assert rel_err(model.Gamma(T_), Gamma) < 1e-14
    assert rel_err(fd.mass_matrix(model, T_), np.diag([5.0, 5.0, 10.0])) < 1e-14
    F_printed = np.array([-5 * w2 * w3, 5 * w1 * w3, 0.0])  # Eq 54b
    assert rel_err(fd.coriolis_matrix(model, T_, W_, fidelity="full") @ W_, -F_printed) < 1e-14


def test_thin_disk_on_the_compound_joint_gives_lagranges_equations():
    """Eq 55a (its last entry ``… + 5 sin² t₂``: the square is lost in print) and Eq 55b
    (``F = −C u`` as above)."""
    model = _disk({"type": "compound", "factors": [DISK_H[:, [k]].tolist() for k in range(3)]})
    M = np.array(kwatny_disk.mass_matrix(T_, np), dtype=float)
    F = np.array(kwatny_disk.right_hand_side(T_, W_, np))
    assert np.array_equal(model.Gamma(T_), np.eye(3))
    assert rel_err(fd.mass_matrix(model, T_), M) < 1e-14
    assert rel_err(fd.coriolis_matrix(model, T_, W_, fidelity="full") @ W_, -F) < 1e-13
