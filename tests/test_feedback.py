"""State feedback ``tau(t, q, u)`` and ``f_ext(t, q, u)`` on the compiled implicit integrators
(:meth:`flexdyn.simulation.compiled.CompiledLoop.feedback_try`): the closed loop against
DOP853 at tight tolerances, a linear feedback exact inside the Newton iteration (no step
repeated), nonlinear feedback and wrenches that depend on the state, every compiled scheme,
and random trees with a feedback and a prescribed joint.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
import strategies
from flexdyn import models

#: the joint types of the model format whose coordinates are their own rates (q̇ = u)
RATE_JOINTS = ("revolute", "prismatic", "screw", "cylindrical", "universal", "map")

TIGHT = fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-13)


def spinup_pd(model: fd.Model):
    """A PD law on the hub angle and rate tracking the spin-up profile, with the rigid
    beam's feed-forward torque (closed-loop natural frequency 2 rad/s, critically damped)."""
    inertia = models.spinup_torque(model).rigid_inertia
    kp, kd = 4.0 * inertia, 4.0 * inertia

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        theta, rate, accel = models.spinup_profile(t)
        out = np.zeros(model.nu)
        out[0] = inertia * accel + kp * (theta - q[0]) + kd * (rate - u[0])
        return out

    return tau


def within(res: fd.SimulationResult, ref: fd.SimulationResult, rtol: float, atol: float,
           factor: float = 10.0) -> float:
    """The largest error of ``res.q`` against ``ref.q`` in units of
    ``factor (atol + rtol |q|)``."""
    bound = factor * (atol + rtol * np.abs(ref.q))
    return float(np.max(np.abs(res.q - ref.q) / bound))


def test_pd_spinup_on_the_default_integrator_follows_dop853():
    """The spin-up beam under a PD law (2 s): ``simulate``'s default takes the compiled
    Radau IIA, whose answer is DOP853's at rtol 1e-11 within its default tolerances, and the
    linear feedback, linearized inside the Newton iteration, repeats no step; at rtol 1e-10
    the two agree to 1e-9 of the hub angle."""
    model = models.spinup_beam()
    tau = spinup_pd(model)
    t_eval = np.linspace(0.0, 2.0, 21)
    ref = fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval, integrator=TIGHT)
    res = fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval)
    assert res.settings["integrator"] == "radau-iia"
    assert "repeated" not in res.message, res.message
    rtol, atol = fd.simulation.DEFAULT_TOLERANCES["displacement"]
    assert within(res, ref, rtol, atol) <= 1.0
    tight = fd.simulate(model, t_span=(0.0, 2.0), tau=tau, t_eval=t_eval,
                        integrator=fd.RadauIIA(rtol=1e-10, atol=1e-12))
    assert np.max(np.abs(tight.q - ref.q)) < 1e-9 * np.max(np.abs(ref.q[:, 0]))
    # held at the predicted stage states instead, the feedback would act late: the
    # answer is the closed loop's, not the open loop's
    assert np.max(np.abs(ref.q[:, 0] - models.spinup_profile(t_eval)[0])) > 1e-4


@pytest.mark.parametrize("integrator", [fd.RadauIIA(rtol=1e-8, atol=1e-10),
                                        fd.GeneralizedAlpha(rtol=1e-6, atol=1e-8),
                                        fd.GaussLegendre(h=2e-3),
                                        fd.RadauIIA(h=2e-3)])
def test_nonlinear_feedback_and_wrenches_of_the_state(integrator):
    """The two-link arm under a nonlinear joint feedback (a saturating spring and a cubic
    damper on both joints) and a wrench on the second link that depends on its joint rate:
    every compiled scheme, adaptive or with fixed steps, against DOP853 at rtol 1e-11, to
    its own accuracy."""
    arm = models.two_link_arm(damping_ratio=0.02)
    j = [int(arm.u_start[i]) for i in range(2)]

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(arm.nu)
        out[j] = 2.0 * np.sin(1.5 * t) - 8.0 * np.tanh(q[j]) - 0.5 * u[j] ** 3
        return out

    def f_ext(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros((arm.n_bodies, 6))
        out[1, 2] = -0.3 * u[j[1]]  # a moment about z against the elbow's rate
        return out

    t_eval = np.linspace(0.0, 1.0, 11)
    ref = fd.simulate(arm, t_span=(0.0, 1.0), tau=tau, f_ext=f_ext, t_eval=t_eval,
                      integrator=TIGHT)
    res = fd.simulate(arm, t_span=(0.0, 1.0), tau=tau, f_ext=f_ext, t_eval=t_eval,
                      integrator=integrator)
    assert np.max(np.abs(ref.q[:, j])) > 0.1  # the joints move
    error = np.max(np.abs(res.q - ref.q)) / np.max(np.abs(ref.q))
    fixed = getattr(integrator, "h", None) is not None
    # generalized-α is second order: its global error is some tens of its rtol
    assert error < (1e-5 if fixed else 5e-5 if isinstance(integrator, fd.GeneralizedAlpha)
                    else 1e-7), error
    np.testing.assert_allclose(res.work[-1], ref.work[-1], rtol=1e-4,
                               atol=1e-6 * np.max(np.abs(ref.work)))


def test_a_stiff_feedback_cuts_the_step_and_stays_accurate():
    """A feedback stiffer than anything the step would otherwise resolve (a PD law of
    closed-loop frequency 300 rad/s on the hub): the answer still follows DOP853."""
    model = models.spinup_beam(n_axial=0)
    inertia = models.spinup_torque(model).rigid_inertia

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros(model.nu)
        out[0] = inertia * 9e4 * (0.1 * np.sin(t) - q[0]) - inertia * 600.0 * u[0] ** 3
        return out

    t_eval = np.linspace(0.0, 0.5, 11)
    ref = fd.simulate(model, t_span=(0.0, 0.5), tau=tau, t_eval=t_eval, integrator=TIGHT)
    res = fd.simulate(model, t_span=(0.0, 0.5), tau=tau, t_eval=t_eval,
                      integrator=fd.RadauIIA(rtol=1e-8, atol=1e-10))
    assert np.max(np.abs(res.q - ref.q)) < 1e-6 * np.max(np.abs(ref.q))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=strategies.models(max_bodies=4, max_modes=3, rigid_probability=0.2,
                          joint_types=RATE_JOINTS), seed=st.integers(0, 2**32 - 1))
def test_random_trees_with_feedback_and_a_prescribed_joint(d, seed):
    """Random trees of flexible and rigid bodies on every joint kind whose coordinates are
    their own rates, from a random state: the first body's joint follows a prescribed sine,
    the others a random coupled PD law with a random wrench feedback on the last body; Radau
    IIA at rtol 1e-9, with either iteration matrix (the exact one with the feedback's full
    Jacobians), follows DOP853 at rtol 1e-12 over 0.2 s within 20 (atol + rtol |q|)."""
    model = fd.Model.from_dict(d)
    assume(int(np.sum(model.n_modes)) > 0)
    rng = np.random.default_rng(seed)
    q0, u0, _ = strategies.random_state(model, rng, eta_scale=0.05, speed_scale=0.5)
    n_first = int(model.nu_joint[0])
    amplitude, omega = rng.uniform(0.1, 0.5, n_first), rng.uniform(1.0, 5.0)

    def first(t: float) -> tuple:
        return (q0[:n_first] + amplitude * np.sin(omega * t), amplitude * omega *
                np.cos(omega * t), -amplitude * omega**2 * np.sin(omega * t))

    gains = rng.uniform(-1.0, 1.0, (model.nu, model.nu))
    kp, kd = gains @ gains.T, 0.2 * np.eye(model.nu)
    moment = rng.uniform(-0.5, 0.5, 6)

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        return -kp @ (q - q0) - kd @ u

    def f_ext(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = np.zeros((model.n_bodies, 6))
        out[-1] = moment * np.tanh(u[-1])
        return out

    kw = {"q0": q0, "u0": u0, "t_span": (0.0, 0.2), "t_eval": [0.1, 0.2], "tau": tau,
          "f_ext": f_ext, "prescribed": {model.names[0]: first}}
    rtol, atol = 1e-9, 1e-11
    ref = fd.simulate(model, integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-12), **kw)
    bound = 20.0 * (atol + rtol * np.max(np.abs(ref.q), axis=0))
    for matrix in ("modal", "exact"):
        res = fd.simulate(model, integrator=fd.RadauIIA(rtol=rtol, atol=atol,
                                                        iteration_matrix=matrix), **kw)
        assert np.all(np.abs(res.q - ref.q) <= bound), (matrix,
                                                        np.max(np.abs(res.q - ref.q) / bound))
