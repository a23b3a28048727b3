"""Tests of ``simulate``'s default integrator (``integrator="auto"``,
:func:`flexdyn.simulation.auto_integrator`) and its default tolerances
(:data:`flexdyn.simulation.DEFAULT_TOLERANCES`): which problems get Radau IIA in displacements,
that the others keep DOP853 and its tolerances, and that the default run of a stiff
flexible model is as accurate as the tolerances promise against a tight DOP853 reference;
and loads of time alone (:func:`flexdyn.of_time`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
import strategies
from flexdyn import models
from flexdyn.simulation import DEFAULT_TOLERANCES, auto_integrator
from helpers import euler_body, pendulum

RADAU = ("radau-iia", "displacement")
#: the joint types of the model format whose coordinates are their own rates (q̇ = u)
RATE_JOINTS = ("fixed", "revolute", "prismatic", "screw", "cylindrical", "universal", "map")
DOP853 = ("DOP853", None)


@pytest.fixture(scope="module")
def arm():
    """The two-link arm: revolute joints (q̇ = u) and elastic links."""
    return models.two_link_arm()


def test_the_choice_follows_the_problem(arm):
    spacecraft = models.spacecraft()
    assert int(np.sum(arm.n_modes)) > 0 and all(j.rates for j in arm.joints)
    assert auto_integrator(arm) == RADAU
    assert auto_integrator(arm, tau=np.ones(arm.nu)) == RADAU
    assert auto_integrator(arm, f_ext=np.zeros((arm.n_bodies, 6))) == RADAU
    # loads of time alone are exact at the stage times
    assert auto_integrator(arm, tau=fd.of_time(lambda t: np.zeros(arm.nu))) == RADAU
    assert auto_integrator(arm, f_ext=fd.of_time(lambda t: np.zeros((2, 6)))) == RADAU
    assert auto_integrator(arm, tau=models.slew_torque(arm)) == RADAU
    # a rigid model is not stiff; a quaternion joint takes local coordinates; a
    # quasi-velocity joint is outside the compiled integrators
    assert auto_integrator(pendulum()) == DOP853
    assert not all(j.rates for j in spacecraft.joints)
    assert auto_integrator(spacecraft) == RADAU
    assert auto_integrator(spacecraft, tau=fd.of_time(lambda t: np.zeros(spacecraft.nu))) \
        == RADAU
    assert auto_integrator(spacecraft, tau=lambda t, q, u: np.zeros(spacecraft.nu)) == RADAU
    assert auto_integrator(euler_body(flexible=True)) == DOP853
    # forces that depend on the state are evaluated at the stage states, prescribed
    # accelerations at the stage times
    assert auto_integrator(arm, tau=lambda t, q, u: np.zeros(arm.nu)) == RADAU
    assert auto_integrator(arm, f_ext=lambda t, q, u: np.zeros((2, 6))) == RADAU
    assert auto_integrator(arm, prescribed={arm.names[0]: lambda t: (0.0, 0.0, 0.0)}) == RADAU
    assert auto_integrator(arm, f_nodes={("link2", -1): np.ones(6)}) == RADAU
    # the reference tier and another forward-dynamics method keep the scipy integrator
    assert auto_integrator(arm, backend="reference") == DOP853
    assert auto_integrator(arm, method="composite") == DOP853
    with pytest.raises(TypeError, match="must be a flexdyn Model, got str"):
        auto_integrator("two_link_arm")


def test_simulate_records_the_choice_and_its_tolerances(arm):
    res = fd.simulate(arm, t_span=(0.0, 0.05))
    assert (res.settings["integrator"], res.settings["error_norm"]) == RADAU
    assert (res.settings["rtol"], res.settings["atol"]) == DEFAULT_TOLERANCES["displacement"]
    assert res.message.endswith(")") and "radau-iia:" in res.message
    rigid = fd.simulate(pendulum(), [0.3], [0.0], (0.0, 0.05))
    assert (rigid.settings["integrator"], rigid.settings["error_norm"]) == DOP853
    assert (rigid.settings["rtol"], rigid.settings["atol"]) == DEFAULT_TOLERANCES["state"]
    # the tolerances of an error norm chosen by name; given ones are kept
    named = fd.simulate(arm, t_span=(0.0, 0.05), integrator=fd.RadauIIA(error_norm="displacement"))
    assert named.settings["rtol"] == DEFAULT_TOLERANCES["displacement"][0]
    given = fd.simulate(arm, t_span=(0.0, 0.05), integrator=fd.Auto(rtol=1e-7))
    assert (given.settings["rtol"], given.settings["atol"]) == (1e-7, 1e-7)
    assert fd.simulate(arm, t_span=(0.0, 0.05), integrator="DOP853").settings["rtol"] == 1e-8


@pytest.mark.parametrize("option", [{"h": 1e-3}, {"rho_inf": 0.5}, {"newton_tol": 1e-4},
                                    {"error_norm": "state"}])
def test_options_of_a_chosen_integrator_ask_for_its_name(arm, option):
    with pytest.raises(ValueError, match=f"{next(iter(option))}: options of a chosen "
                                         "integrator.*integrator='auto'"):
        fd.simulate(arm, t_span=(0.0, 0.01), **option)


def test_the_default_run_meets_its_tolerances(arm):
    """A constant torque slews the arm and bends its links; the default run (Radau IIA in
    displacements) against DOP853 at rtol 1e-12: joint angles and modal coordinates within
    10 (atol + rtol |q|), |q| their largest size, the energy balance (torque work,
    elastic and kinetic energy) within 1e-3 % of the peak energy (the L-stable method damps
    only what the tolerance does not resolve, little here)."""
    tau = np.zeros(arm.nu)
    tau[arm.u_start[0]] = 2.0
    t_eval = np.linspace(0.0, 1.0, 51)
    res = fd.simulate(arm, t_span=(0.0, 1.0), tau=tau, t_eval=t_eval)
    ref = fd.simulate(arm, t_span=(0.0, 1.0), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    assert res.settings["integrator"] == "radau-iia"
    assert np.max(np.abs(ref.q[:, arm.q_start[0]])) > 0.05  # it turns
    modal = np.ones(arm.nq, dtype=bool)
    modal[arm.q_start] = False
    assert np.max(np.abs(ref.q[:, modal])) > 1e-4  # and bends
    rtol, atol = DEFAULT_TOLERANCES["displacement"]
    bound = 10.0 * (atol + rtol * np.max(np.abs(ref.q), axis=0))
    assert np.all(np.abs(res.q - ref.q) <= bound), np.max(np.abs(res.q - ref.q) / bound)
    assert np.max(np.abs(res.energy_balance_error)) < 1e-3
    assert np.max(np.abs(ref.energy_balance_error)) < 1e-6


def test_a_constant_torque_as_array_or_callable_gives_the_same_motion(arm):
    """The array is held by Radau IIA, the callable evaluated at its stage states (and
    linearized inside its Newton iteration): the same motion within the default tolerances,
    and the same torque work."""
    tau = np.zeros(arm.nu)
    tau[arm.u_start[1]] = -1.0
    t_eval = np.linspace(0.0, 0.5, 11)
    a = fd.simulate(arm, t_span=(0.0, 0.5), tau=tau, t_eval=t_eval)
    b = fd.simulate(arm, t_span=(0.0, 0.5), tau=lambda t, q, u: tau, t_eval=t_eval)
    assert a.settings["integrator"] == b.settings["integrator"] == "radau-iia"
    assert np.max(np.abs(b.q)) > 1e-2
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-5 * np.max(np.abs(b.q)))
    np.testing.assert_allclose(a.work, b.work, rtol=0, atol=1e-5 * np.max(np.abs(b.work)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=strategies.models(max_bodies=4, max_modes=3, rigid_probability=0.2,
                          joint_types=RATE_JOINTS), seed=st.integers(0, 2**32 - 1))
def test_the_default_on_random_flexible_trees_against_dop853(d, seed):
    """Random trees of flexible and rigid bodies on every joint kind whose coordinates are
    their own rates (joint maps, modal damping, gravity), from a random state, with a
    constant torque: the default run (Radau IIA in displacements) follows DOP853 at
    rtol 1e-12 over 0.2 s within 20 (atol + rtol |q|) in the coordinates."""
    model = fd.Model.from_dict(d)
    assert all(j.rates for j in model.joints)
    assume(int(np.sum(model.n_modes)) > 0)
    rng = np.random.default_rng(seed)
    q0, u0, _ = strategies.random_state(model, rng, eta_scale=0.05, speed_scale=0.5)
    kw = {"q0": q0, "u0": u0, "t_span": (0.0, 0.2), "t_eval": [0.1, 0.2],
          "tau": rng.uniform(-1.0, 1.0, model.nu)}
    res = fd.simulate(model, **kw)
    ref = fd.simulate(model, rtol=1e-12, atol=1e-12, integrator="DOP853", **kw)
    assert res.settings["integrator"] == "radau-iia"
    rtol, atol = DEFAULT_TOLERANCES["displacement"]
    bound = 20.0 * (atol + rtol * np.max(np.abs(ref.q), axis=0))
    assert np.all(np.abs(res.q - ref.q) <= bound), np.max(np.abs(res.q - ref.q) / bound)


def test_a_load_of_time_alone():
    calls = []

    def f(t):
        calls.append(t)
        return np.array([t, 2.0 * t])

    g = fd.of_time(f)
    assert isinstance(g, fd.TimeFunction) and fd.of_time(g) is g
    np.testing.assert_array_equal(g(0.5, np.ones(3), np.ones(3)), [0.5, 1.0])
    np.testing.assert_array_equal(g(0.25), [0.25, 0.5])
    assert calls == [0.5, 0.25] and "of_time(" in repr(g)
    with pytest.raises(TypeError, match="of_time needs a callable f\\(t\\), got float"):
        fd.of_time(1.0)


def test_the_spinup_beam_by_default_follows_dop853():
    """The torque-driven spin-up (``models.spinup_torque``: a function of time) gets Radau IIA
    by default; over the first 3 s of the run-up (the stretch mode loaded by the
    centrifugal force, the bending modes by the hub's acceleration) the hub angle and the
    modal coordinates follow DOP853 at rtol 1e-12 within 10 (atol + rtol |q|)."""
    beam = models.spinup_beam()
    tau = models.spinup_torque(beam)
    assert isinstance(tau, fd.TimeFunction) and tau.rigid_inertia > 0.0
    t_eval = np.linspace(0.0, 3.0, 7)
    res = fd.simulate(beam, t_span=(0.0, 3.0), tau=tau, t_eval=t_eval)
    ref = fd.simulate(beam, t_span=(0.0, 3.0), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    assert (res.settings["integrator"], res.settings["tau"]) == ("radau-iia", "function of time")
    assert ref.q[-1, 0] > 0.2  # it spins up
    rtol, atol = DEFAULT_TOLERANCES["displacement"]
    bound = 10.0 * (atol + rtol * np.max(np.abs(ref.q), axis=0))
    assert np.all(np.abs(res.q - ref.q) <= bound), np.max(np.abs(res.q - ref.q) / bound)
    np.testing.assert_allclose(res.work, ref.work, rtol=0, atol=1e-5 * np.max(ref.work))
