"""flexdyn against an independent brute-force model (:mod:`oracles.brute_force`).

The brute-force model places every mass element in the inertial frame straight from the
model-file conventions and derives ``M`` and ``C`` by Kane's method with complex-step
partial velocities; it shares no code with flexdyn.  Checked on random chains and trees
with all joint types, deformed states (``|η|`` up to 0.3), gravity and external wrenches:

* body poses, ``Γ(q)``, kinetic and potential energy;
* ``M(q)`` and ``C(q, u)`` of the ``"full"`` fidelity, and ``C`` of the ``"exact"`` one with
  the complex-step gradient of the strain energy's geometric part;
* the ``"ruthless"`` fidelity is the full model evaluated at zero deformation and zero
  deformation rates, plus the linear elastic and damping forces ``K η + D η̇``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flexdyn as fd
from helpers import RTOL, rel_err
from oracles.brute_force import BruteModel
from strategies import (
    JOINT_TYPES,
    models_and_states,
    random_f_ext,
    random_model_dict,
    random_state,
)

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SMALL = {"max_bodies": 4, "max_nodes": 3, "max_modes": 4}

TOL_M = RTOL
TOL_C = 1e-7


def bias_floor(M: np.ndarray, u: np.ndarray) -> float:
    """Scale of the velocity products, ``max |M| max |u|²``, for states where ``C ≈ 0``."""
    return float(np.max(np.abs(M)) * np.max(np.abs(u)) ** 2)


def pose_err(model: fd.Model, kin: fd.PositionTerms, poses: list) -> float:
    return max(
        max(np.max(np.abs(kin.pose[i].R - R)), np.max(np.abs(kin.pose[i].p - p)))
        for i, (R, p) in enumerate(poses)
    )


def ruthless_reference(bm: BruteModel, q, u, f_ext) -> tuple[np.ndarray, np.ndarray]:
    """``M``, ``C`` of the ruthless model from the brute-force full model at ``η = η̇ = 0``."""
    q0, u0 = bm.zero_deformation(q, u)
    M = bm.mass_matrix(q0)
    C = bm.bias_forces(q0, u0, f_ext)
    for i, b in enumerate(bm.bodies):
        if b.m:
            s = slice(b.u0 + b.nu, b.u0 + b.nu + b.m)
            C[s] += b.K @ bm.eta(q, i) + b.D @ bm.eta_dot(u, i)
    return M, C


def check_full(d: dict, model: fd.Model, q, u, f_ext) -> dict[str, float]:
    """All comparisons of the full fidelity and of the exact one (the full model's terms
    and the gradient of the strain energy's geometric part, where a body carries the
    tensors); returns the errors."""
    bm = BruteModel(d)
    assert (bm.nq, bm.nu) == (model.nq, model.nu)
    M_ref = bm.mass_matrix(q)
    C_ref, V_ref = bm.bias_forces(q, u, f_ext), bm.potential_energy(q)
    stiffening = {"full": (np.zeros(model.nu), 0.0),
                  "exact": (bm.geometric_force(q), float(np.real(bm.geometric_energy(q))))}
    errors = {
        "pose": pose_err(model, fd.compute_kinematics(model, q), bm.body_poses(q)),
        "Gamma": float(np.max(np.abs(model.Gamma(q) - bm.Gamma(q)), initial=0.0))
        / max(1.0, float(np.max(np.abs(bm.Gamma(q)), initial=0.0))),  # Euler rates exceed 1
        "T": abs(fd.kinetic_energy(model, q, u) - bm.kinetic_energy(q, u))
        / max(bm.kinetic_energy(q, u), 1e-300),
        "M": rel_err(fd.mass_matrix(model, q), M_ref),
    }
    for fidelity, (force, energy) in stiffening.items():
        V = V_ref + energy
        errors[f"V {fidelity}"] = (abs(fd.potential_energy(model, q, fidelity) - V)
                                   / max(abs(V), 1.0))
        errors[f"C {fidelity}"] = rel_err(fd.bias_forces(model, q, u, fidelity, f_ext=f_ext),
                                          C_ref + force, scale=bias_floor(M_ref, u))
    assert errors["pose"] < 1e-12
    assert errors["Gamma"] < 1e-13  # round-off: Prop 2 and the oracle solve differently
    assert errors["T"] < TOL_M
    assert errors["M"] < TOL_M
    for fidelity in stiffening:
        assert errors[f"V {fidelity}"] < TOL_M, fidelity
        assert errors[f"C {fidelity}"] < TOL_C, fidelity
    return errors


@SETTINGS
@given(sample=models_and_states(**SMALL))
def test_full_fidelity_matches_brute_force(sample):
    check_full(sample.d, sample.model, sample.q, sample.u, sample.f_ext)


@SETTINGS
@given(sample=models_and_states(**SMALL, gravity=False))
def test_full_fidelity_without_external_forces(sample):
    check_full(sample.d, sample.model, sample.q, sample.u, None)


@SETTINGS
@given(sample=models_and_states(**SMALL))
def test_ruthless_is_full_model_at_zero_deformation(sample):
    d, model, q, u, f_ext = sample.d, sample.model, sample.q, sample.u, sample.f_ext
    bm = BruteModel(d)
    q0, _ = bm.zero_deformation(q)
    M_ref, C_ref = ruthless_reference(bm, q, u, f_ext)
    assert pose_err(model, fd.compute_kinematics(model, q, "ruthless"), bm.body_poses(q0)) < 1e-12
    assert rel_err(fd.mass_matrix(model, q, "ruthless"), M_ref) < TOL_M
    C = fd.bias_forces(model, q, u, "ruthless", f_ext=f_ext)
    assert rel_err(C, C_ref, scale=bias_floor(M_ref, u)) < TOL_C


@pytest.mark.parametrize("jtype", JOINT_TYPES)
@pytest.mark.parametrize("topology", ["chain", "tree"])
def test_every_joint_type(jtype, topology):
    """Three flexible bodies, all with the same joint type (deterministic coverage)."""
    rng = np.random.default_rng([JOINT_TYPES.index(jtype), topology == "tree"])
    parents = [-1, 0, 1] if topology == "chain" else [-1, 0, 0]
    d = random_model_dict(rng, parents, [jtype] * 3, [3, 2, 3], [3, 2, 4], gravity=True)
    model = fd.Model.from_dict(d)
    q, u, _ = random_state(model, rng)
    f_ext = random_f_ext(model, rng)
    check_full(d, model, q, u, f_ext)
    if model.nu:
        bm = BruteModel(d)
        M_ref, C_ref = ruthless_reference(bm, q, u, f_ext)
        assert rel_err(fd.mass_matrix(model, q, "ruthless"), M_ref) < TOL_M
        C = fd.bias_forces(model, q, u, "ruthless", f_ext=f_ext)
        assert rel_err(C, C_ref, scale=bias_floor(M_ref, u)) < TOL_C
