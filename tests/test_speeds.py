"""Banerjee & Lemak's generalized speeds (:mod:`flexdyn.speeds`) as an exact change of speeds.

Models (``benchmarks/bench_speeds.py``): ``exact_body`` — one free flexible body of point-mass
nodes with modes ``R³ ⊗ U`` (the case where the D'Eleuterio–Barfoot mass matrix is
constant); ``free_beam`` — one free flexible beam on a rigid hub (truncated cantilever modes:
the mass matrix is not constant); ``hooke_chain`` — a flexible link carrying a payload on a
universal (Hooke) joint at its tip node, rigid or flexible and hanging on its own node.

Independent checks: ``v̇`` against a central difference of ``v = W⁻¹(q) u`` along the
default trajectory; the Hooke speeds against the angular velocities of the frames obtained
from the poses by complex step (no velocity recursion); trajectories integrated in each set
of speeds against the default ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

_BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if _BENCHMARKS not in sys.path:  # the developer instruments are not installed
    sys.path.insert(0, _BENCHMARKS)

import bench_speeds as bs  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn import speeds as sp  # noqa: E402
from flexdyn.terms import body_models, position_terms  # noqa: E402

H = 1e-30
NAMES = tuple(sp.SPEEDS)
MODELS = {"exact_body": bs.exact_body, "free_beam": bs.free_beam,
          "hooke_chain": bs.hooke_chain,
          "hooke_flexible": lambda: bs.hooke_chain(flexible_payload=True)}


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    model = MODELS[request.param]()
    q, u = bs.initial_state(model)
    return request.param, model, q, u


def _quat_tangent(model: fd.Model, q: np.ndarray, rng) -> np.ndarray:
    """A random direction in q, tangent to every unit quaternion."""
    d = rng.normal(size=model.nq)
    for i, j in enumerate(model.joints):
        if j.quaternion:
            s = int(model.q_start[i])
            d[s:s + 4] -= (d[s:s + 4] @ q[s:s + 4]) * q[s:s + 4]
    return d


@pytest.mark.parametrize("name", NAMES)
def test_map_round_trip(case, name):
    _, model, q, u = case
    W, Winv = sp.speed_map(model, q, name)
    np.testing.assert_allclose(W @ Winv, np.eye(model.nu), atol=1e-12)
    v = sp.to_speeds(model, q, u, name)
    np.testing.assert_allclose(W @ v, u, atol=1e-12)
    np.testing.assert_allclose(sp.from_speeds(model, q, v, name), u, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_mass_matrix_spd_and_kinetic_energy(case, name):
    _, model, q, u = case
    Mv = sp.mass_matrix(model, q, name)
    np.testing.assert_allclose(Mv, Mv.T, atol=1e-12 * np.abs(Mv).max())
    assert np.linalg.eigvalsh(Mv).min() > 0
    v = sp.to_speeds(model, q, u, name)
    T = fd.kinetic_energy(model, q, u)
    assert 0.5 * v @ Mv @ v == pytest.approx(T, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_forward_dynamics_is_the_rate_of_v(case, name):
    """``v̇`` = d/dt (W⁻¹(q) u) along the default motion (central difference), and the
    equations in v hold: ``M_v v̇ + C_v = Wᵀ τ``."""
    _, model, q, u = case
    tau = np.random.default_rng(3).normal(size=model.nu)
    v = sp.to_speeds(model, q, u, name)
    vdot = sp.forward_dynamics(model, q, v, tau, speeds=name)
    udot = fd.forward_dynamics(model, q, u, tau)
    h, qd = 1e-6, model.qdot(q, u)
    fd_rate = (sp.to_speeds(model, q + h * qd, u + h * udot, name)
               - sp.to_speeds(model, q - h * qd, u - h * udot, name)) / (2 * h)
    np.testing.assert_allclose(vdot, fd_rate, atol=1e-7 * (1 + np.abs(vdot).max()))
    W, _ = sp.speed_map(model, q, name)
    lhs = sp.mass_matrix(model, q, name) @ vdot + sp.bias_forces(model, q, v, name)
    np.testing.assert_allclose(lhs, W.T @ tau, atol=1e-9 * (1 + np.abs(tau).max()))
    f = sp.rhs(model, name)
    np.testing.assert_allclose(f(0.0, np.concatenate([q, v]), tau),
                               np.concatenate([model.qdot(q, u), vdot]), atol=1e-12)


def _dM(model, q, d, name):
    return sp.mass_matrix(model, q + 1j * H * d, name).imag / H


def test_deleuterio_barfoot_mass_matrix_is_constant():
    """∂M_v/∂q = 0 (complex step, every direction of q) for point-mass nodes and modes
    R³ ⊗ U on a free body; flexdyn's speeds have ∂M/∂η of order one there."""
    model = bs.exact_body()
    q, _ = bs.initial_state(model)
    rng = np.random.default_rng(7)
    scale = np.abs(sp.mass_matrix(model, q, "deleuterio-barfoot")).max()
    for _ in range(4):
        d = _quat_tangent(model, q, rng)
        assert np.abs(_dM(model, q, d, "deleuterio-barfoot")).max() < 1e-13 * scale
        assert np.abs(_dM(model, q, d, "default")).max() > 1e-2 * scale
    # also away from the start: a large deformation
    q2 = q.copy()
    q2[7:] = rng.normal(size=model.nq - 7) * 0.5
    d = _quat_tangent(model, q2, rng)
    assert np.abs(_dM(model, q2, d, "deleuterio-barfoot")).max() < 1e-13 * scale


def test_deleuterio_barfoot_truncated_beam_is_not_constant():
    """With truncated beam modes ``ω × (deformation)`` leaves the modes' span: ``∂M_v/∂η`` is
    smaller than flexdyn's but not zero (the size the docs quote)."""
    model = bs.free_beam()
    q, _ = bs.initial_state(model)
    d = np.zeros(model.nq)
    d[7:] = 1.0
    db = np.abs(_dM(model, q, d, "deleuterio-barfoot")).max()
    dd = np.abs(_dM(model, q, d, "default")).max()
    assert 1e-3 * dd < db < dd


def _omega(R_of, q, qd):
    """Angular velocity in body coordinates of the frame ``R_of(q)`` along ``q̇``, from the
    complex-step rate of the pose: ``ω̃ = Rᵀ Ṙ``."""
    R = R_of(q + 1j * H * qd)
    Wx = R.real.T @ (R.imag / H)
    return np.array([Wx[2, 1], Wx[0, 2], Wx[1, 0]])


@pytest.mark.parametrize("flexible_payload", [False, True])
def test_hooke_speeds_are_eq4(flexible_payload):
    """Eq 4: the payload's Hooke speeds are the components of the absolute angular velocity
    ``ω_c`` of its joint frame ``J_c`` on the current hinge axes ``h₁ = R₂ᵀ a₁``, ``h₂ = a₂``
    (orthonormal here), and ``ω_c = ω_t·(U − h₁h₁ − h₂h₂) + v₁h₁ + v₂h₂`` with ``ω_t`` the
    angular velocity of the link's tip node (rigid plus elastic rotation rate).  The link's
    own revolute joint on the ground keeps ``v = θ̇``."""
    model = bs.hooke_chain(flexible_payload=flexible_payload)
    q, u = bs.initial_state(model)
    v = sp.to_speeds(model, q, u, "hooke")
    models = body_models(model, fd.DEFAULT_FIDELITY)
    tip = model.parent_node[1]

    def R_joint(qq):  # pose of the payload's J_c, inertial, in J_c coordinates
        pos = position_terms(model, qq, models)
        return pos.pose[1].compose(pos.T_joint[1]).R

    def R_node(qq):  # pose of the link's tip node frame
        pos = position_terms(model, qq, models)
        return pos.pose[0].compose(pos.frames[0].transform(tip)).R

    qd = model.qdot(q, u)
    w_c = _omega(R_joint, q, qd)
    # ω_t in J_c coordinates: rotate by the joint's frames (J_c in the node frame)
    R_c = R_node(q).T @ R_joint(q)
    w_t = R_c.T @ _omega(R_node, q, qd)
    a1, a2 = model.joints[1].axes
    theta2 = model.q_joint(q, 1)[1]
    c, s = np.cos(theta2), np.sin(theta2)
    K = np.array([[0, -a2[2], a2[1]], [a2[2], 0, -a2[0]], [-a2[1], a2[0], 0]])
    R2 = np.eye(3) + s * K + (1 - c) * K @ K
    h1, h2 = R2.T @ a1, a2
    vp = v[int(model.u_start[1]):int(model.u_start[1]) + 2]
    np.testing.assert_allclose(vp, [h1 @ w_c, h2 @ w_c], atol=1e-12)
    P = np.eye(3) - np.outer(h1, h1) - np.outer(h2, h2)
    np.testing.assert_allclose(w_c, P @ w_t + vp[0] * h1 + vp[1] * h2, atol=1e-12)
    assert v[0] == u[0]
    # the default speeds are the relative rates: v − β = H_ωᵀ ω_t
    beta = model.u_joint(u, 1)
    np.testing.assert_allclose(vp - beta, [h1 @ w_t, h2 @ w_t], atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("model_name", ["exact_body", "free_beam", "hooke_chain"])
def test_same_trajectories(model_name):
    """A change of speeds does not change the motion: q(t) integrated in each set of speeds
    equals the default one to the integration tolerance, and u read back agrees."""
    model = MODELS[model_name]()
    q0, u0 = bs.initial_state(model)
    t = np.linspace(0.0, 0.3, 4)
    runs = {}
    for name in NAMES:
        x0 = np.concatenate([q0, sp.to_speeds(model, q0, u0, name)])
        sol = solve_ivp(sp.rhs(model, name), (0.0, t[-1]), x0, method="DOP853", rtol=1e-11,
                        atol=1e-12, t_eval=t)
        assert sol.success
        q, v = sol.y[:model.nq, -1], sol.y[model.nq:, -1]
        runs[name] = (sol.y[:model.nq], sp.from_speeds(model, q, v, name))
    for name in NAMES[1:]:
        np.testing.assert_allclose(runs[name][0], runs["default"][0], atol=1e-8)
        np.testing.assert_allclose(runs[name][1], runs["default"][1], atol=1e-7)


def test_unknown_speeds():
    model = bs.free_beam()
    with pytest.raises(ValueError, match="unknown speeds"):
        sp.speed_map(model, model.neutral_configuration(), "kane")


@pytest.mark.slow
def test_benchmark_quick(capsys):
    res = bs.main(["--quick"])
    assert set(res) == {"exact_body", "free_beam", "hooke_chain"}
    for per_model in res.values():
        for name in NAMES:
            row = per_model[name]
            assert row["cond_max"] >= row["cond_min"] > 1
            assert row["DOP853"]["error"] < 1e-5 and row["Radau"]["error"] < 1e-5
    assert "deleuterio-barfoot" in capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES[1:])
def test_other_fidelity_and_method(name):
    """The map is kinematics on the deformed geometry, so the speeds transform any fidelity's
    equations exactly: ruthless forward dynamics by the composite-body method, in v."""
    model = MODELS["hooke_flexible"]()
    q, u = bs.initial_state(model)
    v = sp.to_speeds(model, q, u, name, fidelity="ruthless")
    np.testing.assert_allclose(v, sp.to_speeds(model, q, u, name), atol=1e-14)
    vdot = sp.forward_dynamics(model, q, v, speeds=name, method="composite",
                               fidelity="ruthless")
    udot = fd.forward_dynamics(model, q, u, method="composite", fidelity="ruthless")
    h, qd = 1e-6, model.qdot(q, u)
    fd_rate = (sp.to_speeds(model, q + h * qd, u + h * udot, name)
               - sp.to_speeds(model, q - h * qd, u - h * udot, name)) / (2 * h)
    np.testing.assert_allclose(vdot, fd_rate, atol=1e-7 * (1 + np.abs(vdot).max()))
