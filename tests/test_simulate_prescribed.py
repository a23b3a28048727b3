"""``simulate`` with prescribed joint motion, loads at nodes, and the joint-wrench histories.

Independent checks: the free coordinates against an integration of the partitioned dense
equations ``M_FF u̇_F = τ_F − c_F − M_FK u̇_K`` by scipy (the mass matrix and the bias by
the composite-body and Newton–Euler sweeps); the work of the prescribed-joint loads against
the change of total energy; the steady root tension of a damped spinning beam with an axial
mode against the centripetal forces of its deformed lumped masses; a hanging pendulum's pin
load against ``m g``; the nodal-load accelerations against the per-state functions' own
nodal-load path; a follower nodal load on the compiled integrators against DOP853 at rtol
1e-12, with its work kept apart from that of ``τ`` and the energy balance closed.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.integrate

import flexdyn as fd
from flexdyn.beam import beam_modes
from flexdyn.engine.galpha import SCHEMES

T_SLEW = 1.0
ANGLE = 0.8


def shoulder(t: float) -> tuple[float, float, float]:
    """A rest-to-rest cycloidal slew of ``ANGLE`` rad in ``T_SLEW`` s, then held."""
    if t >= T_SLEW:
        return ANGLE, 0.0, 0.0
    w = 2 * np.pi / T_SLEW
    return (ANGLE * (t / T_SLEW - np.sin(w * t) / (2 * np.pi)),
            ANGLE * (1 - np.cos(w * t)) / T_SLEW, ANGLE * w * np.sin(w * t) / T_SLEW)


def arm(**kw) -> fd.Model:
    return fd.models.two_link_arm(n_modes=2, **kw)


@pytest.mark.slow
def test_free_coordinates_follow_the_partitioned_dense_equations():
    """Shoulder prescribed, elbow and modes free, elbow torque applied: ``q_F`` and the
    realised shoulder torque against scipy on ``M_FF u̇_F = τ_F − c_F − M_FK u̇_K``."""
    model = arm(gravity=(0.0, -9.81, 0.0))
    K = np.zeros(model.nu, dtype=bool)
    K[0] = True
    F = ~K
    tau_free = np.zeros(model.nu)
    tau_free[3] = 0.7  # elbow torque (u layout: link1.theta, 2 modes, link2.theta, 2 modes)
    t_eval = np.linspace(0.0, 1.4, 15)
    res = fd.simulate(model, t_span=(0.0, 1.4), tau=tau_free, prescribed={"link1": shoulder},
                      t_eval=t_eval, integrator=fd.Auto(rtol=1e-10, atol=1e-12))

    def partitioned(t, x):
        q = np.empty(model.nq)
        u = np.empty(model.nu)
        q[0], u[0], a0 = shoulder(t)
        q[F], u[F] = x[:F.sum()], x[F.sum():]
        M = fd.mass_matrix(model, q)
        c = fd.bias_forces(model, q, u)
        rhs_F = tau_free[F] - c[F] - M[np.ix_(F, K)] @ [a0]
        return np.concatenate([u[F], np.linalg.solve(M[np.ix_(F, F)], rhs_F)])

    x0 = np.zeros(2 * F.sum())
    ref = scipy.integrate.solve_ivp(partitioned, (0.0, 1.4), x0, method="DOP853",
                                    t_eval=t_eval, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(res.q[:, F], ref.y[:F.sum()].T, atol=2e-8)
    np.testing.assert_allclose(res.u[:, F], ref.y[F.sum():].T, atol=2e-7)
    # the prescribed entries are f(t) at every sample, and the free taus are the applied ones
    np.testing.assert_array_equal(res.q[:, 0], [shoulder(t)[0] for t in t_eval])
    np.testing.assert_array_equal(res.u[:, 0], [shoulder(t)[1] for t in t_eval])
    np.testing.assert_array_equal(res.tau[:, F], np.tile(tau_free[F], (t_eval.size, 1)))
    # the realised shoulder torque is M_K· u̇ + c_K at every sample; u̇ fed back reproduces it
    for k in (3, 7, 12):
        q, u, udot = res.q[k], res.u[k], res.udot[k]
        assert udot[0] == pytest.approx(shoulder(t_eval[k])[2], abs=1e-12)
        M = fd.mass_matrix(model, q, backend="reference")
        c = fd.bias_forces(model, q, u, backend="reference")
        assert res.tau[k, 0] == pytest.approx(M[0] @ udot + c[0], rel=1e-9)
        np.testing.assert_allclose(fd.forward_dynamics(model, q, u, res.tau[k]), udot,
                                   rtol=1e-9, atol=1e-9)
    assert np.ptp(res.tau[:, 0]) > 1.0  # the slew needs a real torque


@pytest.mark.slow
@pytest.mark.parametrize("integrator", ["DOP853", "Radau"])
def test_work_of_the_prescribed_loads_is_the_energy_change(integrator):
    """No damping, no gravity, no applied force: the work of the loads that realise the
    prescribed motion (``work``) is the change of total energy."""
    model = arm()
    res = fd.simulate(model, t_span=(0.0, 1.5), prescribed={"link1": shoulder},
                      integrator=integrator, rtol=1e-9, atol=1e-11,
                      t_eval=np.linspace(0.0, 1.5, 31))
    gain = res.total_energy - res.total_energy[0]
    assert np.max(np.abs(gain)) > 1.0
    np.testing.assert_allclose(res.work, gain, atol=1e-6 * np.max(np.abs(gain)))
    assert res.energy_balance_rms < 1e-5


def test_implicit_integrator_follows_the_explicit_one_with_prescribed_motion():
    model = arm(damping_ratio=0.01)
    kw = dict(t_span=(0.0, 1.2), prescribed={"link1": shoulder}, rtol=1e-9, atol=1e-11,
              t_eval=np.linspace(0.0, 1.2, 7))
    a = fd.simulate(model, **kw)
    b = fd.simulate(model, integrator="Radau", **kw)
    np.testing.assert_allclose(b.q, a.q, atol=1e-7)
    np.testing.assert_allclose(b.tau, a.tau, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("integrator", [fd.Auto(), fd.RadauIIA(rtol=1e-9, atol=1e-11),
                                        fd.GeneralizedAlpha(rtol=1e-6, atol=1e-8),
                                        fd.GaussLegendre(h=1e-3)],
                         ids=["auto", "radau-iia", "generalized-alpha", "gauss-legendre"])
def test_prescribed_motion_on_the_compiled_integrators(integrator):
    """The shoulder slewed by a prescribed motion, the elbow and the modes free: every
    compiled scheme (the default takes Radau IIA) against DOP853 at rtol 1e-11, in the
    motion, the loads that realise the prescribed motion, and the work they do (the energy
    balance closes), each to its accuracy; the prescribed entries are the function's."""
    model = arm(damping_ratio=0.01)
    t_eval = np.linspace(0.0, 1.2, 7)
    kw = dict(t_span=(0.0, 1.2), prescribed={"link1": shoulder}, t_eval=t_eval)
    ref = fd.simulate(model, integrator=fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-13), **kw)
    res = fd.simulate(model, integrator=integrator, **kw)
    assert res.settings["integrator"] in SCHEMES
    tight = isinstance(integrator, fd.RadauIIA)
    second_order = isinstance(integrator, fd.GeneralizedAlpha)
    scale = np.max(np.abs(ref.q))
    assert np.max(np.abs(res.q - ref.q)) < (1e-10 if tight else 1e-4 if second_order
                                           else 1e-6) * scale
    np.testing.assert_array_equal(res.q[:, 0], [shoulder(t)[0] for t in t_eval])
    shoulder_load = np.max(np.abs(ref.tau[:, 0]))
    assert np.max(np.abs(res.tau - ref.tau)) < (1e-8 if tight else 1e-2 if second_order
                                               else 1e-4) * shoulder_load
    assert abs(res.work[-1] - ref.work[-1]) < (1e-8 if tight else 1e-3) * abs(ref.work[-1])
    assert np.max(np.abs(res.energy_balance_error)) < (1e-7 if tight else 1e-2)


def test_prescribed_entries_of_the_initial_state_come_from_f():
    model = arm()
    q0 = model.neutral_configuration()
    q0[0] = 2.0  # overridden by shoulder(0) = 0
    q0[3] = 0.3  # the elbow starts bent
    res = fd.simulate(model, q0, t_span=(0.0, 0.05), prescribed={"link1": shoulder},
                      t_eval=[0.0, 0.05])
    assert res.q[0, 0] == 0.0 and res.q[0, 3] == 0.3


def test_root_tension_of_a_damped_spinning_beam_with_an_axial_mode():
    """A beam spun at a prescribed constant rate Ω about its root (z) settles, its modes
    damped, into a stretched steady state; the root pulls it inwards with the centripetal
    force ``Σ m_k Ω² r_k`` of its deformed lumped masses (≈ ``m Ω² L / 2``) and transmits no
    moment."""
    L, mu, omega = 2.0, 3.0, 2.0
    beam = beam_modes(L, mu, EI_z=400.0, EA=5e4, n_elements=6, n_modes=3, damping_ratio=0.4)
    model = (fd.ModelBuilder("spinner")
             .add_body("beam", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                       flex=beam.to_flex_dict())
             .build())
    res = fd.simulate(model, t_span=(0.0, 4.0),
                      prescribed={"beam": lambda t: (omega * t, omega, 0.0)},
                      t_eval=[0.0, 4.0], integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    body = model.bodies[0]
    eta = res.q[-1, 1:]
    assert np.max(np.abs(res.u[-1, 1:])) < 1e-7  # settled
    stretch = body.nodes + np.einsum("kij,j->ki", body.Pi_t, eta)  # deformed, body frame
    centripetal = omega**2 * np.sum(body.node_masses * stretch[:, 0])
    wrench = res.joint_wrenches()[-1, 0]
    np.testing.assert_allclose(wrench[3:], [-centripetal, 0.0, 0.0], atol=1e-7 * centripetal)
    np.testing.assert_allclose(wrench[:3], 0.0, atol=1e-7 * centripetal)
    m = mu * L
    assert centripetal == pytest.approx(m * omega**2 * L / 2, rel=2e-3)
    assert centripetal > m * omega**2 * L / 2  # the axial mode stretches the beam
    assert abs(res.tau[-1, 0]) < 1e-6 * centripetal  # no torque keeps a steady spin


def test_hanging_pendulum_pin_load_and_histories():
    """A rigid pendulum held hanging by a prescribed zero motion: the pin carries ``m g``
    upwards, with no moment, at every sample; ``joint_wrenches()`` matches the per-state
    function and survives ``to_npz``."""
    m, g = 2.5, 9.81
    model = (fd.ModelBuilder("pendulum", gravity=[0.0, 0.0, -g])
             .add_body("bob", None, joint={"type": "revolute", "axis": [1.0, 0.0, 0.0]},
                       rigid={"mass": m, "com": [0.0, 0.0, -0.5],
                              "inertia": np.diag([0.1, 0.1, 0.01]).tolist()})
             .build())
    res = fd.simulate(model, t_span=(0.0, 0.5), prescribed={"bob": lambda t: (0.0, 0.0, 0.0)},
                      t_eval=np.linspace(0.0, 0.5, 6))
    W = res.joint_wrenches()
    np.testing.assert_allclose(W[:, 0], np.tile([0, 0, 0, 0, 0, m * g], (6, 1)), atol=1e-12)
    np.testing.assert_allclose(res.tau, 0.0, atol=1e-12)


def test_joint_wrench_history_equals_the_per_state_function(tmp_path):
    model = arm(gravity=(0.0, -9.81, 0.0))
    f_ext = np.zeros((model.n_bodies, 6))
    f_ext[1, 4] = 0.3
    res = fd.simulate(model, t_span=(0.0, 0.3), tau=lambda t, q, u: np.r_[np.sin(t), 0, 0,
                                                                          0.2, 0, 0],
                      f_ext=f_ext, t_eval=np.linspace(0.0, 0.3, 4))
    W = res.joint_wrenches()
    for k in range(4):
        udot = fd.forward_dynamics(model, res.q[k], res.u[k], res.tau[k], f_ext=f_ext)
        np.testing.assert_allclose(res.udot[k], udot, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            W[k], fd.joint_wrenches(model, res.q[k], res.u[k], udot, f_ext=f_ext),
            rtol=1e-12, atol=1e-12)
    res.to_npz(tmp_path / "run.npz")
    back = fd.SimulationResult.from_npz(tmp_path / "run.npz")
    np.testing.assert_array_equal(back.joint_wrenches(), W)


@pytest.mark.slow
def test_nodal_loads_in_simulate():
    """A time-varying tip force on link 2: the accelerations at the samples are those of the
    per-state nodal-load path, and its work (``external_work``) closes the energy balance."""
    model = arm(damping_ratio=0.02)

    def tip(t, q, u):
        return {("link2", -1): [0.0, 0.0, 0.0, 0.0, 2.0 * np.cos(3 * t), 0.0]}

    res = fd.simulate(model, t_span=(0.0, 1.0), f_nodes=tip,
                      t_eval=np.linspace(0.0, 1.0, 21), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    for k in (5, 20):
        loads = tip(res.t[k], None, None)
        np.testing.assert_allclose(
            res.udot[k], fd.forward_dynamics(model, res.q[k], res.u[k], f_nodes=loads),
            rtol=1e-11, atol=1e-11)
    assert np.max(np.abs(res.external_work)) > 0.1
    np.testing.assert_allclose(res.work, 0.0, atol=1e-14)  # τ = 0: the nodal work is external
    assert res.energy_balance_rms < 1e-6
    const = fd.simulate(model, t_span=(0.0, 0.2), f_nodes={("link2", -1): [0, 0, 0, 0, 1, 0]},
                        t_eval=[0.2], backend="reference")
    fn = fd.simulate(model, t_span=(0.0, 0.2), f_nodes=lambda t, q, u: {("link2", 6): [
        0, 0, 0, 0, 1, 0]}, t_eval=[0.2], integrator=fd.ScipyIVP("DOP853"))
    np.testing.assert_allclose(const.q, fn.q, atol=1e-9)


@functools.cache
def _follower_run() -> tuple[fd.Model, dict, np.ndarray, np.ndarray, fd.SimulationResult]:
    """An elbow torque and a force at link 2's tip that turns with the tip's node frame,
    0.5 s on DOP853 at rtol 1e-12: the reference of the compiled integrators' runs."""
    model = arm(damping_ratio=0.02)
    tip = {("link2", -1): [0.0, 0.0, 0.3, 0.0, 2.0, 0.0]}
    tau = np.zeros(model.nu)
    tau[1] = 0.5
    t_eval = np.linspace(0.0, 0.5, 11)
    ref = fd.simulate(model, t_span=(0.0, 0.5), tau=tau, f_nodes=tip, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-12))
    return model, tip, tau, t_eval, ref


@pytest.mark.parametrize("integrator, tol, balance", [
    (fd.RadauIIA(rtol=1e-9, atol=1e-11), 1e-10, 1e-9),
    (fd.GaussLegendre(h=2e-3), 2e-7, 1e-7),
    (fd.GeneralizedAlpha(h=5e-4), 2e-5, 1e-3)])
def test_nodal_loads_on_the_compiled_integrators(integrator, tol, balance):
    """A follower force at a node on each compiled integrator: the states against DOP853 at
    rtol 1e-12, the work of ``τ`` (the elbow torque's alone) and the nodal loads' work
    (``external_work``, a hundred times ``τ``'s) each as the reference books them, and the
    energy balance closed to the scheme's accuracy."""
    model, tip, tau, t_eval, ref = _follower_run()
    res = fd.simulate(model, t_span=(0.0, 0.5), tau=tau, f_nodes=tip, t_eval=t_eval,
                      integrator=integrator)
    assert res.settings["integrator"] == integrator.name
    assert np.max(np.abs(res.q - ref.q)) < tol
    assert np.max(np.abs(ref.external_work)) > 100 * np.max(np.abs(ref.work)) > 1e-4
    assert np.max(np.abs(res.work - ref.work)) < tol
    assert np.max(np.abs(res.external_work - ref.external_work)) < tol
    assert res.energy_balance_rms < balance


@pytest.mark.parametrize("prescribed, message", [
    ({"nobody": shoulder}, "no body 'nobody'"),
    ({"link1": 3.0}, r"prescribed\['link1'\] must be a callable"),
    ({"link1": lambda t: (0.0, 0.0)}, "must return a triple"),
    ({"link1": lambda t: ([0.0, 1.0], 0.0, 0.0)}, r"q_j of shape \(2,\)"),
    ({"link1": lambda t: (0.0, "x", 0.0)}, "u_j that is not numeric"),
    ({"link1": lambda t: (0.0, 0.0, np.nan)}, "non-finite udot_j"),
    ([("link1", shoulder)], "must be a non-empty mapping"),
    ({}, "must be a non-empty mapping"),
])
def test_bad_prescribed_motion_is_named_before_integrating(prescribed, message):
    with pytest.raises(ValueError, match=message):
        fd.simulate(arm(), t_span=(0.0, 0.1), prescribed=prescribed)


def test_fixed_joint_and_later_nan_are_named():
    model = fd.models.spacecraft()
    fixed = [n for n, j in zip(model.names, model.joints, strict=True) if j.nu == 0]
    with pytest.raises(ValueError, match="is fixed"):
        fd.simulate(model, t_span=(0.0, 0.1), prescribed={fixed[0]: shoulder})
    with pytest.raises(fd.SimulationError, match=r"prescribed\['link1'\].*non-finite q_j"):
        fd.simulate(arm(), t_span=(0.0, 0.1), prescribed={
            "link1": lambda t: (np.nan if t > 0.05 else 0.0, 0.0, 0.0)})
    with pytest.raises(ValueError, match="f_nodes must be None"):
        fd.simulate(arm(), t_span=(0.0, 0.1), f_nodes=[1, 2])
    with pytest.raises(ValueError, match="no body 'nobody'"):
        fd.simulate(arm(), t_span=(0.0, 0.1), f_nodes={("nobody", 0): np.zeros(6)})
