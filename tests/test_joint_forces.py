"""Joint forces (:mod:`flexdyn.joint_forces`): springs with preload, dampers, smoothed Coulomb
friction, joint limits and motor torque limits.

Checked against closed forms (the damped free decay of a spring–damper rotor, the creep speed
of a slider under friction, the rest penetration of a pendulum on its limit, the frequency
√(k/I)), against the same model without joint forces driven by the forces computed here from
the documented formulas (every tier and method, batches, hybrid dynamics, energies), and by
the energy balance of simulations."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.joint_forces import FORCE_KEYS
from strategies import random_model_dict, random_state
from test_nodal import random_nodal_dict

I_ROTOR = 0.8  # kg m², about the joint axis


def rotor(forces: dict) -> fd.Model:
    """A rigid disc on a revolute joint about z, no gravity."""
    return (fd.ModelBuilder("rotor")
            .add_body("disc", None, joint={"type": "revolute", "axis": [0, 0, 1],
                                           "forces": forces},
                      rigid={"mass": 3.0, "inertia": np.diag([0.5, 0.5, I_ROTOR])})
            .build())


def damped_decay(t, x0, v0, omega, zeta):
    """``x(t)`` of ``ẍ + 2 ζ ω ẋ + ω² x = 0`` (ζ < 1)."""
    wd = omega * np.sqrt(1.0 - zeta**2)
    return np.exp(-zeta * omega * t) * (x0 * np.cos(wd * t)
                                        + (v0 + zeta * omega * x0) / wd * np.sin(wd * t))


# ----------------------------------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------------------------------
K, C, REST, PRELOAD = 20.0, 0.6, 0.2, 1.5
OMEGA, ZETA = np.sqrt(K / I_ROTOR), C / (2.0 * np.sqrt(K * I_ROTOR))
THETA_EQ = REST + PRELOAD / K


@pytest.mark.parametrize("integrator, options, tol", [
    ("DOP853", {"rtol": 1e-11, "atol": 1e-12}, 1e-8),
    ("generalized-alpha", {"h": 2e-4}, 2e-4),
    ("gauss-legendre", {"h": 1e-2, "newton_tol": 1e-12}, 1e-6),
    ("radau-iia", {"rtol": 1e-10, "atol": 1e-12}, 1e-8),
])
def test_spring_damper_free_decay_is_the_closed_form(integrator, options, tol):
    """A preloaded spring–damper rotor released from rest decays about θ₀ + τ₀/k at the
    damped frequency ω √(1 − ζ²) with the envelope e^(−ζωt)."""
    model = rotor({"stiffness": K, "damping": C, "rest": REST, "preload": PRELOAD})
    t = np.linspace(0.0, 3.0, 61)
    res = fd.simulate(model, [1.0], [0.0], (0.0, 3.0), t_eval=t, integrator=integrator,
                      **options)
    expected = THETA_EQ + damped_decay(t, 1.0 - THETA_EQ, 0.0, OMEGA, ZETA)
    assert np.max(np.abs(res.q[:, 0] - expected)) < tol * (1.0 - THETA_EQ)
    assert abs(res.energy_balance_rms) < 1e-4


def test_modal_analysis_sees_the_joint_spring():
    """The rotor's one frequency is √(k/I) (the joint spring is in the tangent stiffness)."""
    model = rotor({"stiffness": K, "damping": C, "rest": REST, "preload": PRELOAD})
    modes = fd.modal_analysis(model, [THETA_EQ])
    assert modes.omega_squared[0] == pytest.approx(OMEGA**2, rel=1e-10)


def test_coulomb_creep_speed():
    """A slider pushed by F below the friction force μ creeps at v_s atanh(F/μ) (the
    documented smoothing); above it, it accelerates at (F − μ)/m once |v| ≫ v_s."""
    mass, mu, vs = 2.0, 5.0, 0.01

    def slider(F):
        model = (fd.ModelBuilder("slider")
                 .add_body("block", None, joint={"type": "prismatic", "axis": [1, 0, 0],
                                                 "forces": {"coulomb": mu, "smoothing": vs}},
                           rigid={"mass": mass, "inertia": np.eye(3)})
                 .build())
        return fd.simulate(model, [0.0], [0.0], (0.0, 1.0), tau=[F],
                           t_eval=[0.0, 0.5, 1.0], integrator=fd.Auto(rtol=1e-10, atol=1e-12))

    creep = slider(3.0)
    assert creep.u[-1, 0] == pytest.approx(vs * np.arctanh(3.0 / mu), rel=1e-6)
    slide = slider(8.0)
    a = (slide.u[-1, 0] - slide.u[-2, 0]) / 0.5
    assert a == pytest.approx((8.0 - mu) / mass, rel=1e-9)
    assert slide.energy_balance_rms < 1e-5


def pendulum_on_limit(limit_damping: float = 40.0) -> fd.Model:
    """A horizontal rod pendulum about z (gravity −y) with a lower limit at θ = 0."""
    return (fd.ModelBuilder("stop", gravity=(0.0, -9.81, 0.0))
            .add_body("rod", None, joint={"type": "revolute", "axis": [0, 0, 1],
                                          "forces": {"lower": 0.0, "upper": 2.0,
                                                     "limit_stiffness": 5e3,
                                                     "limit_damping": limit_damping}},
                      rigid={"mass": 2.0, "com": [0.5, 0, 0],
                             "inertia": np.diag([0.01, 0.2, 0.2])})
            .build())


def test_pendulum_comes_to_rest_on_its_limit():
    """Dropped from 0.3 rad, the rod bounces on the limit and rests where the limit spring
    holds gravity: k_l (−θ) = m g l cos θ."""
    model = pendulum_on_limit()
    res = fd.simulate(model, [0.3], [0.0], (0.0, 4.0), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    from scipy.optimize import brentq
    theta = brentq(lambda th: 5e3 * (-th) - 2.0 * 9.81 * 0.5 * np.cos(th), -0.1, 0.0)
    assert res.q[-1, 0] == pytest.approx(theta, rel=1e-6)
    assert np.min(res.q[:, 0]) > -0.05  # it never went far through the limit
    assert res.energy_balance_rms < 1e-5
    assert res.dissipation[-1] > 0.9 * 2.0 * 9.81 * 0.5 * np.sin(0.3)  # the bounce's loss


def test_limit_pushes_but_never_pulls():
    """1 mrad into the limit, the limit force is k_l δ − c_l v = 5 − 100 v N m: it pushes
    out at 0.01 rad/s and is held at zero (not a pull) leaving at 2 rad/s."""
    model = pendulum_on_limit(limit_damping=100.0)
    plain = fd.Model.from_dict({**model.to_dict(), "bodies": [
        {**b, "joint": {k: v for k, v in b["joint"].items() if k != "forces"}}
        for b in model.to_dict()["bodies"]]})
    assert plain.joint_forces == (None,)
    inertia = 0.2 + 2.0 * 0.5**2  # about the joint
    for v, push in ((2.0, 0.0), (0.01, 5.0 - 100.0 * 0.01)):
        got = fd.forward_dynamics(model, [-0.001], [v])[0]
        assert got == pytest.approx(fd.forward_dynamics(plain, [-0.001], [v])[0]
                                    + push / inertia, rel=1e-12)


def test_torque_limit_saturates_the_motor():
    """Forward dynamics sees the saturated torque, inverse dynamics returns the unsaturated
    one, and the work of τ is that of the saturated torque."""
    model = rotor({"torque_limit": 2.0})
    assert fd.forward_dynamics(model, [0.0], [0.0], [10.0])[0] == pytest.approx(2.0 / I_ROTOR)
    assert fd.forward_dynamics(model, [0.0], [0.0], [-10.0])[0] == pytest.approx(-2.0 / I_ROTOR)
    assert fd.inverse_dynamics(model, [0.0], [0.0], [10.0])[0] == pytest.approx(8.0)
    res = fd.simulate(model, [0.0], [0.0], (0.0, 1.0), tau=[10.0],
                      integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    assert res.work[-1] == pytest.approx(0.5 * (2.0 * 1.0) ** 2 / I_ROTOR, rel=1e-8)
    assert res.energy_balance_rms < 1e-6


# ----------------------------------------------------------------------------------------------
# every tier and method against the same model driven by the documented formulas
# ----------------------------------------------------------------------------------------------
def random_forces(rng: np.random.Generator, n: int) -> dict:
    lo = rng.uniform(-0.6, -0.1, n)
    return {"stiffness": rng.uniform(0, 30, n).tolist(), "rest": rng.uniform(-0.3, 0.3, n).tolist(),
            "preload": rng.uniform(-2, 2, n).tolist(), "damping": rng.uniform(0, 2, n).tolist(),
            "coulomb": rng.uniform(0, 3, n).tolist(), "smoothing": rng.uniform(0.05, 1, n).tolist(),
            "lower": lo.tolist(), "upper": (lo + rng.uniform(0.2, 0.8, n)).tolist(),
            "limit_stiffness": rng.uniform(10, 500, n).tolist(),
            "limit_damping": rng.uniform(0, 20, n).tolist(),
            "torque_limit": rng.uniform(0.5, 3, n).tolist()}


def documented_force(p: dict, k: int, x: float, v: float) -> float:
    """``τ_J`` of speed ``k`` from the formulas of the module docstring."""
    f = (p["preload"][k] - p["stiffness"][k] * (x - p["rest"][k]) - p["damping"][k] * v
         - p["coulomb"][k] * np.tanh(v / p["smoothing"][k]))
    kl, cl = p["limit_stiffness"][k], p["limit_damping"][k]
    if x > p["upper"][k]:
        f += min(0.0, -kl * (x - p["upper"][k]) - cl * v)
    if x < p["lower"][k]:
        f += max(0.0, -kl * (x - p["lower"][k]) - cl * v)
    return f


def documented_potential(p: dict, k: int, x: float) -> float:
    e = x - p["rest"][k]
    V = 0.5 * p["stiffness"][k] * e * e - p["preload"][k] * e
    for bound, beyond in ((p["upper"][k], x > p["upper"][k]), (p["lower"][k], x < p["lower"][k])):
        if beyond:
            V += 0.5 * p["limit_stiffness"][k] * (x - bound) ** 2
    return V


FORCED_TYPES = ("revolute", "prismatic", "screw", "cylindrical", "universal")


def forced_pair(seed: int) -> tuple[fd.Model, fd.Model, dict]:
    """A random tree with joint forces on the joints that take them, the same tree without,
    and the forces block of each forced body."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    types = [FORCED_TYPES[int(rng.integers(len(FORCED_TYPES)))] for _ in range(n)]
    types[int(rng.integers(n))] = "spherical"  # a joint without forces among them
    nodes = [int(rng.choice([0, 3])) for _ in range(n)]
    d = random_model_dict(rng, parents, types, nodes, [2 if k else 0 for k in nodes])
    plain = fd.Model.from_dict(d)
    blocks = {}
    for i, body in enumerate(d["bodies"]):
        if types[i] != "spherical":
            blocks[i] = random_forces(rng, plain.joints[i].nu)
            body["joint"]["forces"] = blocks[i]
    return fd.Model.from_dict(d), plain, blocks


def state(model: fd.Model, rng: np.random.Generator):
    """``(q, u, τ)``: :func:`strategies.random_state` (joint angles over a whole turn, far
    beyond the limits of :func:`random_forces` too) with modal coordinates in ±0.05, and
    torques in ±4."""
    q, u, _ = random_state(model, rng, eta_scale=0.05)
    return q, u, rng.uniform(-4, 4, model.nu)


def documented_loads(model, blocks, q, u, tau):
    """``(sat(τ), τ_J)`` (nu,) from the formulas of the module docstring."""
    sat, tj = np.array(tau, dtype=float), np.zeros(model.nu)
    for i, p in blocks.items():
        qs, us = int(model.q_start[i]), int(model.u_start[i])
        for k in range(model.joints[i].nu):
            tj[us + k] = documented_force(p, k, q[qs + k], u[us + k])
            sat[us + k] = np.clip(tau[us + k], -p["torque_limit"][k], p["torque_limit"][k])
    return sat, tj


SEEDS = st.integers(0, 2**31 - 1)
FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def forced_case(seed: int):
    """:func:`forced_pair` of ``seed``, a :func:`state` of it, and the documented
    ``(sat(τ), τ_J)`` there: ``(forced, plain, blocks, q, u, τ, sat(τ), τ_J)``."""
    forced, plain, blocks = forced_pair(seed)
    q, u, tau = state(forced, np.random.default_rng(seed + 1))
    return (forced, plain, blocks, q, u, tau, *documented_loads(forced, blocks, q, u, tau))


@FAST
@given(seed=SEEDS)
def test_forward_dynamics_every_method_and_tier(seed):
    forced, plain, _, q, u, tau, sat, tj = forced_case(seed)
    expected = fd.forward_dynamics(plain, q, u, sat + tj, backend="reference")
    scale = max(1.0, np.max(np.abs(expected)))
    for backend in ("engine", "reference"):
        for method in ("articulated", "composite", "articulated-split"):
            got = fd.forward_dynamics(forced, q, u, tau, method=method, backend=backend)
            assert np.max(np.abs(got - expected)) < 1e-10 * scale, (backend, method)


@FAST
@given(seed=SEEDS)
def test_inverse_bias_hybrid_and_energy(seed):
    forced, plain, blocks, q, u, tau, sat, tj = forced_case(seed)
    udot = np.random.default_rng(seed + 2).normal(size=forced.nu)
    for backend in ("engine", "reference"):
        motor = fd.inverse_dynamics(forced, q, u, udot, backend=backend)
        ref = fd.inverse_dynamics(plain, q, u, udot, backend="reference") - tj
        assert np.max(np.abs(motor - ref)) < 1e-10 * max(1.0, np.max(np.abs(ref))), backend
        b = fd.bias_forces(forced, q, u, backend=backend)
        ref = fd.bias_forces(plain, q, u, backend="reference") - tj
        assert np.max(np.abs(b - ref)) < 1e-10 * max(1.0, np.max(np.abs(ref))), backend
        V = fd.potential_energy(forced, q, backend=backend)
        extra = sum(documented_potential(p, k, q[int(forced.q_start[i]) + k])
                    for i, p in blocks.items() for k in range(forced.joints[i].nu))
        assert V == pytest.approx(fd.potential_energy(plain, q, backend="reference") + extra,
                                  rel=1e-11, abs=1e-11), backend
    # hybrid: the prescribed joints' loads are the motor forces, the free rows sat(τ)
    mask = np.zeros(forced.nu, dtype=bool)
    mask[forced.u_start[0]:forced.u_start[0] + forced.joints[0].nu] = True
    for backend in ("engine", "reference"):
        ud, T = fd.hybrid_dynamics(forced, q, u, tau, udot, mask, backend=backend)
        ud_p, T_p = fd.hybrid_dynamics(plain, q, u, sat + tj, udot, mask, backend="reference")
        assert np.max(np.abs(ud - ud_p)) < 1e-10 * max(1.0, np.max(np.abs(ud_p))), backend
        assert np.allclose(T[mask], (T_p - tj)[mask], rtol=1e-10, atol=1e-10), backend
        # the engine forms the free rows' loads from its recursion: round-off of the loads'
        # scale, as the rows above (1.2e-12 of a 0.01 N m entry seen with 3 N m loads)
        assert np.max(np.abs(T[~mask] - sat[~mask])) < 1e-10 * max(1.0, np.max(np.abs(sat))), \
            backend


def test_nodal_bodies_take_joint_forces():
    """Rodriguez's nodal filter and smoother (engine and reference) with joint forces."""
    rng = np.random.default_rng(2)
    d = random_nodal_dict(rng, [-1, 0], ["revolute", "universal"], [True, True])
    plain = fd.Model.from_dict(d)
    blocks = {i: random_forces(rng, plain.joints[i].nu) for i in range(2)}
    for i, body in enumerate(d["bodies"]):
        body["joint"]["forces"] = blocks[i]
    forced = fd.Model.from_dict(d)
    q, u, tau = state(forced, rng)
    sat, tj = documented_loads(forced, blocks, q, u, tau)
    expected = fd.forward_dynamics(plain, q, u, sat + tj, method="nodal", backend="reference")
    for backend in ("engine", "reference"):
        got = fd.forward_dynamics(forced, q, u, tau, method="nodal", backend=backend)
        assert np.max(np.abs(got - expected)) < 1e-10 * max(1.0, np.max(np.abs(expected)))


def test_batched_calls_equal_looped_calls():
    forced, _, _ = forced_pair(7)
    rng = np.random.default_rng(3)
    rows = [state(forced, rng) for _ in range(5)]
    q, u, tau = (np.array(x) for x in zip(*rows, strict=True))
    batch = fd.forward_dynamics(forced, q, u, tau)
    for k in range(5):
        assert np.array_equal(batch[k], fd.forward_dynamics(forced, q[k], u[k], tau[k]))


def test_simulated_energy_balance_of_a_forced_tree():
    """Springs, dampers, friction, limits and a saturated motor on a random flexible tree:
    E − E₀ = W_τ − D (engine, DOP853; the reference tier on a shorter run, against the engine
    with the same integrator).  Friction and limits switch at the
    joints' stops and at u = 0, so ``e_E`` depends on where the steps fall: perturbing u
    by 1e-14 (relative) spread the 1 s run's ``e_E,RMS`` over 3e-8 … 1.1e-5 %, hence a
    bound of 1e-4 % (leaving out the work or the dissipation gives 37 % or 130 % here)."""
    forced, _, _ = forced_pair(11)
    rng = np.random.default_rng(5)
    q, u, tau = state(forced, rng)
    res = fd.simulate(forced, q, u, (0.0, 1.0), tau=tau,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-10, atol=1e-12))
    assert res.energy_balance_rms < 1e-4
    assert res.dissipation[-1] > 0
    short = dict(tau=tau, rtol=1e-10, atol=1e-12, t_eval=[0.0, 0.05], integrator="DOP853")
    ref = fd.simulate(forced, q, u, (0.0, 0.05), backend="reference", **short)
    eng = fd.simulate(forced, q, u, (0.0, 0.05), **short)
    assert ref.energy_balance_rms < 1e-5
    assert np.max(np.abs(ref.q[-1] - eng.q[-1])) < 1e-8


# ----------------------------------------------------------------------------------------------
# model files
# ----------------------------------------------------------------------------------------------
def test_model_file_round_trip_and_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    forced, _, _ = forced_pair(4)
    path = tmp_path / "forced.json"
    fd.save_model(forced, path)
    text = json.loads(path.read_text())
    jsonschema.validate(text, fd.model_file.json_schema())
    back = fd.load_model(path)
    for a, b in zip(forced.joint_forces, back.joint_forces, strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)
    rng = np.random.default_rng(0)
    q, u, tau = state(forced, rng)
    assert np.array_equal(fd.forward_dynamics(forced, q, u, tau),
                          fd.forward_dynamics(back, q, u, tau))


@pytest.mark.parametrize("joint, message", [
    ({"type": "spherical", "forces": {"damping": 1.0}}, "spherical joint's are not"),
    ({"type": "revolute", "axis": [0, 0, 1], "forces": {"stifness": 1.0}}, "stiffness"),
    ({"type": "revolute", "axis": [0, 0, 1], "forces": {"damping": -1.0}}, "damping must be ≥ 0"),
    ({"type": "revolute", "axis": [0, 0, 1], "forces": {"lower": 1.0, "upper": 0.5,
                                                        "limit_stiffness": 10}}, "below upper"),
    ({"type": "revolute", "axis": [0, 0, 1], "forces": {"upper": 0.5}}, "limit_stiffness > 0"),
    ({"type": "universal", "axes": [[1, 0, 0], [0, 1, 0]], "forces": {"stiffness": [1, 2, 3]}},
     "number of speeds"),
    ({"type": "revolute", "axis": [0, 0, 1], "forces": {"torque_limit": 0}}, "must be > 0"),
])
def test_bad_forces_blocks_name_body_and_key(joint, message):
    with pytest.raises(ValueError, match="rotor") as info:
        fd.Model.from_dict({"bodies": [{"name": "rotor", "joint": joint,
                                        "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]})
    assert message in str(info.value)
    assert "forces" in str(info.value)


def test_forces_keys_are_the_documented_ones():
    assert set(FORCE_KEYS) == {"stiffness", "rest", "preload", "damping", "coulomb",
                               "smoothing", "lower", "upper", "limit_stiffness",
                               "limit_damping", "torque_limit"}
