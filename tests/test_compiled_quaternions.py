"""Quaternion joints (``spherical``, ``free``) on the compiled integrators: their local
coordinates (the rotation vector and displacement relative to the step's start,
:mod:`flexdyn.engine.galpha`) against DOP853 at tight tolerances, on a free-flying spacecraft
with a flexible boom (loads of time, state feedback, a prescribed drive), a flexible pendulum
on a spherical joint under gravity and random trees; generalized-α's order; events and the
stepper on the dense output; the automatic choice of integrator (a quasi-velocity joint
stays outside them: ``test_auto_integrator.py``, ``test_simulation_options.py``,
``test_joint_maps.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
import strategies
from flexdyn.beam import beam_modes

TIGHT = fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14)


def spacecraft() -> tuple[fd.Model, fd.TimeFunction, np.ndarray]:
    """A bus on a free joint with a flexible boom (two bending planes, four modes) fixed off
    its centre at an angle, a time-varying torque and force on the bus, and a tumbling,
    drifting start with the boom vibrating."""
    boom = beam_modes(2.0, 0.8, EI_y=60.0, EI_z=80.0, n_elements=8, n_modes=4)
    model = (fd.ModelBuilder("spacecraft", gravity=(0, 0, 0))
             .add_body("bus", joint={"type": "free"},
                       rigid={"mass": 40.0, "com": [0.02, -0.01, 0.0],
                              "inertia": np.diag([3.0, 4.0, 5.0])})
             .add_body("boom", "bus", flex=boom.to_flex_dict(),
                       joint={"type": "fixed", "placement": {
                           "translation": [0.5, 0.1, 0.0], "axis_angle": [0, 0, 1, 0.3]}})
             .build())

    @fd.of_time
    def loads(t: float) -> np.ndarray:
        out = np.zeros(model.nu)
        out[:6] = np.sin(np.array([1.0, 2.0, 1.5, 0.7, 1.1, 0.9]) * t) * [2, -3, 4, 1, 0.5, 1]
        return out

    u0 = np.zeros(model.nu)
    u0[:6] = [0.4, -0.7, 1.2, 0.3, -0.2, 0.1]
    u0[6:] = [0.3, -0.2, 0.1, 0.05]
    return model, loads, u0


@pytest.mark.parametrize("integrator, tol", [
    (fd.RadauIIA(rtol=1e-9, atol=1e-11), 1e-7),
    (fd.RadauIIA(rtol=1e-9, atol=1e-11, error_norm="displacement"), 1e-7),
    (fd.GaussLegendre(h=2e-3), 1e-6),
])
def test_free_flying_spacecraft_on_the_compiled_integrators(integrator, tol):
    """The tumbling spacecraft under its loads for 3 s: the quaternion, position, speeds and
    modal coordinates of the compiled schemes follow DOP853 at rtol 1e-12 (the local
    coordinates' kinematics ``ψ̇ = J_r(ψ)⁻¹ ω``, ``ρ̇ = exp(ψ̃) v`` in the stage equations:
    taking them as ``ω`` and ``v`` leaves an error of the step's first order)."""
    model, loads, u0 = spacecraft()
    q0 = model.neutral_configuration()
    t_eval = np.linspace(0.0, 3.0, 7)
    ref = fd.simulate(model, q0, u0, (0.0, 3.0), tau=loads, t_eval=t_eval, integrator=TIGHT)
    res = fd.simulate(model, q0, u0, (0.0, 3.0), tau=loads, t_eval=t_eval,
                      integrator=integrator)
    assert res.settings["integrator"] == integrator.name
    np.testing.assert_allclose(np.linalg.norm(res.q[:, :4], axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=tol)
    np.testing.assert_allclose(res.u, ref.u, rtol=0, atol=100 * tol)


def test_generalized_alpha_keeps_its_second_order_on_the_local_coordinates():
    """Generalized-α takes the local coordinates' rates as the speeds themselves (the
    Lie-group form): its error in the quaternion and position of the tumbling bus falls by
    about four when the step is halved."""
    model, loads, u0 = spacecraft()
    q0 = model.neutral_configuration()
    ref = fd.simulate(model, q0, u0, (0.0, 1.0), tau=loads, t_eval=[1.0], integrator=TIGHT)
    errors = [np.max(np.abs(fd.simulate(model, q0, u0, (0.0, 1.0), tau=loads, t_eval=[1.0],
                                        integrator=fd.GeneralizedAlpha(h=h)).q[-1, :7]
                            - ref.q[-1, :7])) for h in (4e-3, 2e-3, 1e-3)]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 3.0) & (ratios < 5.0)), (errors, ratios)


def test_flexible_pendulum_on_a_spherical_joint_under_gravity():
    """A flexible rod hanging from a spherical joint, swinging in a cone under gravity with
    damping: Radau IIA (the default, automatic choice) at rtol 1e-9 follows DOP853, energy
    balance closed."""
    rod = beam_modes(1.0, 1.5, EI_y=40.0, EI_z=40.0, n_elements=6, n_modes=2,
                     damping_ratio=0.01)
    model = (fd.ModelBuilder("cone", gravity=(0, 0, -9.81))
             .add_body("rod", joint={"type": "spherical", "placement": {
                 "axis_angle": [0, 1, 0, np.pi / 2]}},
                 rigid={"mass": 0.5, "com": [1.0, 0, 0], "inertia": np.eye(3) * 1e-3},
                 flex=rod.to_flex_dict())
             .build())
    q0 = model.neutral_configuration()
    q0[:4] = [np.cos(0.3), np.sin(0.3) * 0.6, np.sin(0.3) * 0.8, 0.0]
    u0 = np.zeros(model.nu)
    u0[:3] = [0.0, 0.0, 2.0]
    t_eval = np.linspace(0.0, 2.0, 5)
    ref = fd.simulate(model, q0, u0, (0.0, 2.0), t_eval=t_eval, integrator=TIGHT)
    res = fd.simulate(model, q0, u0, (0.0, 2.0), t_eval=t_eval,
                      integrator=fd.Auto(rtol=1e-9, atol=1e-11))
    assert res.settings["integrator"] == "radau-iia"
    np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=1e-7)
    assert np.max(np.abs(res.energy_balance_error)) < 1e-5


def test_events_on_the_dense_output_of_the_local_coordinates():
    """An event on the bus's quaternion (``q_z`` through 0.3) located on the compiled loop's
    dense output at the time DOP853 finds, and the samples between steps equal the tight
    run's."""
    model, loads, u0 = spacecraft()
    q0 = model.neutral_configuration()

    def crossing(t: float, q: np.ndarray, u: np.ndarray) -> float:
        return q[3] - 0.3

    crossing.terminal = True
    kw = dict(tau=loads, t_eval=np.linspace(0.0, 2.0, 41), events=[crossing])
    ref = fd.simulate(model, q0, u0, (0.0, 2.0), integrator=TIGHT, **kw)
    res = fd.simulate(model, q0, u0, (0.0, 2.0), integrator=fd.RadauIIA(rtol=1e-9,
                                                                        atol=1e-11), **kw)
    assert ref.t_events[0].size == res.t_events[0].size == 1
    assert res.t_events[0][0] == pytest.approx(ref.t_events[0][0], abs=1e-7)
    n = min(len(res.t), len(ref.t))
    np.testing.assert_allclose(res.q[:n], ref.q[:n], rtol=0, atol=1e-6)


def test_stepper_on_the_compiled_integrator():
    """A co-simulation of the spacecraft by ``fd.Stepper`` with Radau IIA in macro steps of
    0.1 s, the loads held over each, ends where DOP853's stepper does."""
    model, loads, u0 = spacecraft()
    q0 = model.neutral_configuration()
    runs = [fd.Stepper(model, 0.1, integrator=name, q0=q0, u0=u0, rtol=rtol, atol=0.01 * rtol)
            for name, rtol in (("radau-iia", 1e-9), ("DOP853", 1e-12))]
    for stepper in runs:
        for k in range(10):
            stepper.tau = loads(0.1 * k + 0.05)
            stepper.step()
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(runs[0].q[:4]), 1.0, atol=1e-14)


def attitude_pd(model: fd.Model, kp: float = 40.0, kd: float = 15.0):
    """A PD law on the bus's attitude (the quaternion's vector part, sign of its scalar part)
    and rate, and on its position and velocity."""

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(model.nu)
        out[:3] = -kp * 2.0 * np.sign(q[0]) * q[1:4] - kd * u[:3]
        out[3:6] = -0.2 * kp * q[4:7] - 0.2 * kd * u[3:6]
        return out

    return tau


def test_state_feedback_on_the_local_coordinates():
    """The tumbling spacecraft brought to rest by a PD law on its attitude and position,
    ``tau(t, q, u)``: the default integrator is Radau IIA, which evaluates the feedback at
    the engine's coordinates of its predicted and stage states and linearizes it in the local
    coordinates; at rtol 1e-9 it follows DOP853 at 1e-12."""
    model, _, u0 = spacecraft()
    q0 = model.neutral_configuration()
    tau = attitude_pd(model)
    t_eval = np.linspace(0.0, 3.0, 7)
    ref = fd.simulate(model, q0, u0, (0.0, 3.0), tau=tau, t_eval=t_eval, integrator=TIGHT)
    assert fd.simulation.auto_integrator(model, tau=tau)[0] == "radau-iia"
    res = fd.simulate(model, q0, u0, (0.0, 3.0), tau=tau, t_eval=t_eval,
                      integrator=fd.RadauIIA(rtol=1e-9, atol=1e-11))
    np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=1e-7)
    assert np.max(np.abs(res.u[-1, :6])) < 0.5 * np.max(np.abs(u0[:6]))  # it does damp


def test_prescribed_drive_on_a_free_flyer():
    """The spacecraft with revolute drives on its arrays, one drive prescribed along a sine,
    the hub free: the compiled Radau IIA (the automatic choice) follows DOP853 in the hub's
    quaternion and position and the arrays' modes."""
    model = fd.models.spacecraft(array_joint="revolute", n_modes=2)
    drive = {"array_pos": lambda t: (np.array([0.4 * np.sin(2.0 * t)]),
                                     np.array([0.8 * np.cos(2.0 * t)]),
                                     np.array([-1.6 * np.sin(2.0 * t)]))}
    u0 = np.zeros(model.nu)
    u0[:3] = [0.01, -0.02, 0.03]
    u0[model.u_slice("array_pos")][0] = 0.8
    kw = dict(prescribed=drive, t_eval=np.linspace(0.0, 2.0, 5))
    ref = fd.simulate(model, u0=u0, t_span=(0.0, 2.0), integrator=TIGHT, **kw)
    res = fd.simulate(model, u0=u0, t_span=(0.0, 2.0),
                      integrator=fd.Auto(rtol=1e-9, atol=1e-11), **kw)
    assert res.settings["integrator"] == "radau-iia"
    np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=1e-7)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(d=strategies.models(max_bodies=4, max_modes=3, rigid_probability=0.2,
                           joint_types=("spherical", "free", "revolute", "prismatic")),
       seed=st.integers(0, 2**32 - 1))
def test_random_trees_with_quaternion_joints(d, seed):
    """Random trees with spherical and free joints among revolute and prismatic ones, from a
    random state under constant loads: Radau IIA at rtol 1e-9, with either iteration matrix
    (the exact one in the tangent directions of the quaternion joints), follows DOP853 at
    rtol 1e-12 over 0.2 s within 20 (atol + rtol |q|)."""
    model = fd.Model.from_dict(d)
    assume(int(np.sum(model.n_modes)) > 0 and any(j.quaternion for j in model.joints))
    rng = np.random.default_rng(seed)
    q0, u0, _ = strategies.random_state(model, rng, eta_scale=0.05, speed_scale=0.5)
    tau = rng.uniform(-1.0, 1.0, model.nu)
    t_eval = np.linspace(0.0, 0.2, 3)
    ref = fd.simulate(model, q0, u0, (0.0, 0.2), tau=tau, t_eval=t_eval, integrator=TIGHT)
    for matrix in ("modal", "exact"):
        res = fd.simulate(model, q0, u0, (0.0, 0.2), tau=tau, t_eval=t_eval,
                          integrator=fd.RadauIIA(rtol=1e-9, atol=1e-11,
                                                 iteration_matrix=matrix))
        np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=20 * (1e-11 + 1e-9 * np.max(
            np.abs(ref.q))), err_msg=matrix)
