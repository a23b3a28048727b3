"""Tests of flexdyn.simulate: energy balance, momentum conservation, the spin-up beam,
argument checking, failures, the co-simulation right-hand side and the result object."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy.integrate import cumulative_simpson

import flexdyn as fd
from flexdyn import StateEntry, models
from flexdyn.models import slew_torque
from helpers import pendulum as _pendulum
from helpers import pendulum_period as _pendulum_period


def arm_run(t_end, n_samples=101):
    """Two-link arm, full fidelity, rtol 1e-10: a rest-to-rest slew (the demo's profile,
    0.5 rad in 3 s for the 5 s run; the same peak torque over a shorter run)."""
    model = models.two_link_arm()
    duration = 0.6 * t_end
    tau = slew_torque(model, duration=duration, angle=0.5 * (duration / 3.0) ** 2)
    return fd.simulate(model, t_span=(0.0, t_end), tau=tau,
                       t_eval=np.linspace(0.0, t_end, n_samples), integrator=fd.Auto(rtol=1e-10,
                       atol=1e-12))


def check_arm_energy(res):
    e = res.energy_balance_error
    print(f"two-link arm {res.t[-1]:g} s: max |e_E| = {np.max(np.abs(e)):.3e} %, "
          f"e_E,RMS = {res.energy_balance_rms:.3e} %, peak E = {res.total_energy.max():.4g} J, "
          f"{res.nfev} evaluations, {res.wall_time:.1f} s")
    # energy is exchanged: the torque does work and the links bend
    assert np.max(np.abs(res.work)) > 0.1 * np.max(np.abs(res.total_energy))
    assert np.max(res.potential_energy) > 1e-4 * np.max(res.total_energy)
    assert np.max(np.abs(e)) < 1e-6


def test_two_link_arm_energy_balance_short():
    check_arm_energy(arm_run(0.3, n_samples=31))


@pytest.mark.slow
def test_two_link_arm_energy_balance_5s():
    check_arm_energy(arm_run(5.0, n_samples=501))


# ----------------------------------------------------------------------------------------------
# momentum of the free-floating spacecraft
# ----------------------------------------------------------------------------------------------
def spacecraft_state(model):
    rng = np.random.default_rng(1)
    q0 = model.neutral_configuration()
    q0[:4] = [0.9, 0.1, -0.3, 0.2]  # normalised by simulate
    q0[4:7] = [1.0, 2.0, -0.5]
    u0 = np.zeros(model.nu)
    u0[:6] = [0.02, -0.03, 0.05, 0.1, 0.0, -0.05]
    u0[6:] = 0.05 * rng.standard_normal(model.nu - 6)
    return q0, u0


def test_spacecraft_conserves_momentum():
    model = models.spacecraft()
    q0, u0 = spacecraft_state(model)
    res = fd.simulate(model, q0, u0, (0.0, 1.0),
                      t_eval=np.linspace(0.0, 1.0, 11), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    P = res.momentum()
    h, p = P[:, :3], P[:, 3:]
    dh = np.max(np.linalg.norm(h - h[0], axis=1)) / np.linalg.norm(h[0])
    dp = np.max(np.linalg.norm(p - p[0], axis=1)) / np.linalg.norm(p[0])
    print(f"spacecraft: relative momentum drift angular {dh:.2e}, linear {dp:.2e}; "
          f"|h| = {np.linalg.norm(h[0]):.4g}, |p| = {np.linalg.norm(p[0]):.4g}")
    assert np.linalg.norm(h[0]) > 1.0 and np.linalg.norm(p[0]) > 1.0
    assert dh < 1e-9 and dp < 1e-9
    # the appendages really vibrate and the quaternion stays a unit quaternion
    assert np.ptp(res.modes("array_pos")[0]) > 1e-3
    np.testing.assert_allclose(np.linalg.norm(res.q[:, :4], axis=1), 1.0, atol=1e-15)
    assert np.max(np.abs(res.energy_balance_error)) < 1e-6


def test_spacecraft_hub_torque_changes_momentum():
    # the check above is sensitive: a hub torque changes the angular momentum
    model = models.spacecraft()
    q0, u0 = spacecraft_state(model)
    tau = np.zeros(model.nu)
    tau[2] = 5.0
    res = fd.simulate(model, q0, u0, (0.0, 0.2), tau=tau,
                      t_eval=np.linspace(0, 0.2, 3), integrator=fd.Auto(rtol=1e-8))
    P = res.momentum()
    assert np.linalg.norm(P[-1, :3] - P[0, :3]) > 0.5
    np.testing.assert_allclose(P[-1, 3:], P[0, 3:], rtol=1e-9)  # a pure torque
    assert abs(res.energy_balance_error).max() < 1e-4


# ----------------------------------------------------------------------------------------------
# spin-up beam
# ----------------------------------------------------------------------------------------------
def test_spinup_beam_both_fidelities():
    model = models.spinup_beam(n_axial=0)  # no stiff stretch mode: fast
    tau = models.spinup_torque(model, T=2.0, omega_s=1.0)  # a faster spin-up than the paper
    out = {}
    for fidelity in fd.FIDELITIES:
        res = fd.simulate(model, t_span=(0.0, 1.0), tau=tau, fidelity=fidelity,
                          t_eval=np.linspace(0.0, 1.0, 101), integrator=fd.Auto(rtol=1e-7,
                          atol=1e-9))
        tip = res.deflection("beam")[:, 1]
        out[fidelity] = res
        print(f"spin-up {fidelity}: e_E,RMS = {res.energy_balance_rms:.3e} %, "
              f"max |e_E| = {np.max(np.abs(res.energy_balance_error)):.3e} %, "
              f"tip deflection at 1 s {tip[-1]:.4e} m, hub rate {res.u[-1, 0]:.4f} rad/s")
        # a single beam on a driven hub: both models close the energy balance (work of τ =
        # change of T + V) to the integrator's accuracy (~1e-9 %; docs/examples.md)
        assert np.max(np.abs(res.energy_balance_error)) < 1e-6, fidelity
        # the beam lags behind the hub while it accelerates
        assert tip[-1] < 0 and abs(tip[-1]) > 1e-3
        # the hub follows the rigid profile closely
        assert res.u[-1, 0] == pytest.approx(models.spinup_profile(1.0, 2.0, 1.0)[1], rel=0.1)
    assert out["full"].energy_balance_rms < 1e-6
    np.testing.assert_allclose(out["full"].q[:, 0], out["ruthless"].q[:, 0], atol=1e-2)


# ----------------------------------------------------------------------------------------------
# tau forms, argument checks, failures
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def beam():
    return models.spinup_beam(n_axial=0, n_bending=1, n_elements=4)


def test_tau_none_array_callable(beam):
    """A torque as None, an array and a callable; the array and the callable returning it
    give the same run with the same integrator (the compiled ones evaluate a callable at
    their stage states: ``tests/test_auto_integrator.py``)."""
    t_eval = np.linspace(0.0, 0.3, 4)
    rest = fd.simulate(beam, t_span=(0.0, 0.3), t_eval=t_eval, integrator="DOP853")
    assert np.all(rest.u == 0.0) and np.all(rest.q == 0.0) and np.all(rest.work == 0.0)
    tau = np.zeros(beam.nu)
    tau[0] = 10.0
    a = fd.simulate(beam, t_span=(0.0, 0.3), tau=tau, t_eval=t_eval, integrator="DOP853")
    b = fd.simulate(beam, t_span=(0.0, 0.3), tau=lambda t, q, u: tau, t_eval=t_eval,
                    integrator="DOP853")
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.tau, np.tile(tau, (4, 1)))
    # angular momentum about the pin = torque impulse; work = torque × angle
    assert fd.momentum(beam, a.q[-1], a.u[-1])[2] == pytest.approx(10.0 * 0.3, rel=1e-7)
    assert a.work[-1] == pytest.approx(10.0 * a.q[-1, 0], rel=1e-7)
    # a time-varying torque: the work is ∫ τ·u dt
    c = fd.simulate(beam, t_span=(0.0, 0.3), tau=lambda t, q, u: tau * np.cos(5 * t),
                    t_eval=np.linspace(0.0, 0.3, 601), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    power = np.sum(c.tau * c.u, axis=1)
    simpson = cumulative_simpson(power, x=c.t, initial=0.0)
    np.testing.assert_allclose(c.work, simpson, rtol=0, atol=1e-8 * abs(simpson[-1]))
    assert np.max(np.abs(c.energy_balance_error)) < 1e-6


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"q0": np.zeros(3)}, "q0"),
        ({"q0": [np.nan, 0.0]}, "q0"),
        ({"u0": np.zeros(5)}, "u0"),
        ({"tau": np.zeros(3)}, "tau"),
        ({"tau": lambda t, q, u: np.zeros(4)}, "tau"),
        ({"tau": "abc"}, "tau"),
        ({"f_ext": np.zeros(6)}, "f_ext"),
        ({"f_ext": lambda t, q, u: np.zeros((2, 6))}, "f_ext"),
        ({"t_span": (1.0, 0.0)}, "t_span"),
        ({"t_span": 3.0}, "t_span"),
        ({"t_eval": [0.0, 2.0]}, "t_eval"),
        ({"t_eval": [0.5, 0.2]}, "t_eval"),
        ({"fidelity": "stiff"}, "fidelity"),
        ({"method": "fast"}, "method"),
        ({"integrator": "Euler"}, "integrator"),
        ({"rtol": -1.0}, "rtol"),
    ],
)
def test_bad_arguments(beam, kwargs, match):
    kw = {"t_span": (0.0, 1.0)} | kwargs
    with pytest.raises(ValueError, match=match):
        fd.simulate(beam, **kw)


def test_zero_quaternion_rejected():
    model = models.spacecraft()
    with pytest.raises(ValueError, match="q0"):
        fd.simulate(model, np.zeros(model.nq), t_span=(0.0, 0.1))


def test_nan_torque_raises_simulation_error(beam):
    def tau(t, q, u):
        return np.full(beam.nu, np.nan if t > 0.05 else 1.0)

    with pytest.raises(fd.SimulationError, match="non-finite") as info:
        fd.simulate(beam, t_span=(0.0, 1.0), tau=tau)
    assert isinstance(info.value, RuntimeError)
    assert 0.05 < info.value.t < 1.0
    assert "tau" in info.value.solver_message


def test_finiteness_check_of_every_right_hand_side():
    """The state and force check of every right-hand side: finite entries whose sum
    overflows pass, without a warning; any NaN or infinity fails (also an infinity beside
    its opposite), real or complex."""
    import warnings

    from flexdyn.simulation.problem import all_finite as _all_finite

    big = np.finfo(float).max
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _all_finite(np.array([big, big, 1.0]))
        assert _all_finite(np.array([[big, -big], [big, big]]))
        assert _all_finite(np.array([1.0 + 2.0j, big + big * 1j, big]))
        assert _all_finite(np.zeros(0))
        for bad in (np.nan, np.inf, -np.inf):
            for row in ([bad], [big, big, bad], [1.0, bad, 2.0]):
                assert not _all_finite(np.array(row))
            assert not _all_finite(np.array([1.0 + 0j, complex(0.0, bad)]))
        assert not _all_finite(np.array([np.inf, -np.inf]))


def test_solver_failure_raises_simulation_error():
    # a torque step of 1e9 N m on a rigid wheel: the step size needed to resolve it is below
    # the spacing of floating-point numbers at t = 0.5 s, so the solver gives up there
    wheel = fd.ModelBuilder("wheel").add_body(
        "wheel", None, joint={"type": "revolute", "axis": [0, 0, 1]},
        rigid={"mass": 1.0, "com": [0, 0, 0], "inertia": np.diag([0.5, 0.5, 1.0])}).build()
    with pytest.raises(fd.SimulationError, match="t = 0.5") as info:
        fd.simulate(wheel, t_span=(0.0, 3.0),
                    tau=lambda t, q, u: np.array([1e9 if t > 0.5 else 0.0]))
    assert info.value.t == pytest.approx(0.5)
    assert "step size" in info.value.solver_message


def test_blow_up_raises_simulation_error(beam):
    # a huge torque step flings the beam out: the state degenerates and the run stops
    with pytest.raises(fd.SimulationError) as info:
        fd.simulate(beam, t_span=(0.0, 3.0), integrator="DOP853",
                    tau=lambda t, q, u: np.array([1e9 if t > 0.5 else 0.0, 0.0]))
    assert 0.5 <= info.value.t < 3.0 and str(info.value)


def test_progress_flag_is_harmless(beam):
    res = fd.simulate(beam, t_span=(0.0, 0.05), tau=np.ones(beam.nu), progress=True)
    assert res.t[-1] == 0.05


def test_damping_enters_the_balance():
    model = models.two_link_arm(damping_ratio=0.2)
    tau = slew_torque(model, duration=0.2, angle=0.002)
    res = fd.simulate(model, t_span=(0.0, 0.3), tau=tau,
                      t_eval=np.linspace(0.0, 0.3, 7), integrator=fd.Auto(rtol=1e-8, atol=1e-10))
    assert res.dissipation[-1] > 1e-3 * res.work.max()
    assert np.all(np.diff(res.dissipation) >= 0)
    assert np.max(np.abs(res.energy_balance_error)) < 1e-5


def test_external_wrench_work():
    model = models.spacecraft()
    q0, u0 = spacecraft_state(model)
    f_ext = np.zeros((model.n_bodies, 6))
    f_ext[0] = [1.0, -2.0, 3.0, 10.0, 5.0, -4.0]
    f_ext[1] = [0.0, 0.0, 0.5, 0.0, 0.0, 1.0]
    res = fd.simulate(model, q0, u0, (0.0, 0.3), f_ext=f_ext,
                      t_eval=np.linspace(0.0, 0.3, 4), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    assert abs(res.external_work[-1]) > 1e-3
    assert np.all(res.work == 0.0)
    assert np.max(np.abs(res.energy_balance_error)) < 1e-6


# ----------------------------------------------------------------------------------------------
# co-simulation interface
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["two_link_arm", "spacecraft"])
@pytest.mark.parametrize("method", ["articulated", "articulated-split", "composite"])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_rhs_equals_forward_dynamics(name, method, fidelity):
    model = models.BUILTIN_MODELS[name]()
    rng = np.random.default_rng(11)
    q = model.normalize_configuration(model.neutral_configuration()
                                      + 0.1 * rng.standard_normal(model.nq))
    u = rng.standard_normal(model.nu)
    tau = rng.standard_normal(model.nu)
    f = fd.rhs(model, fidelity, method)
    xdot = f(0.3, fd.pack_state(q, u), tau)
    qdot, udot = fd.unpack_state(model, xdot)
    np.testing.assert_allclose(udot, fd.forward_dynamics(model, q, u, tau, method=method,
                                                         fidelity=fidelity),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(qdot, model.qdot(q, u), rtol=1e-15, atol=0)
    # tau as a callable, None = 0, and a non-unit quaternion is normalised first
    np.testing.assert_array_equal(f(0.3, fd.pack_state(q, u), lambda t, q_, u_: tau), xdot)
    np.testing.assert_array_equal(
        f(0.0, fd.pack_state(q, u), None)[model.nq:],
        fd.forward_dynamics(model, q, u, None, method=method, fidelity=fidelity))
    if name == "spacecraft":
        q2 = q.copy()
        q2[:4] *= 3.0
        np.testing.assert_allclose(f(0.3, fd.pack_state(q2, u), tau), xdot, rtol=1e-12,
                                   atol=1e-12)
    with pytest.raises(ValueError, match="tau"):
        f(0.0, fd.pack_state(q, u), np.zeros(model.nu + 1))


def test_state_layout_and_packing():
    model = models.spacecraft(array_joint="revolute", n_modes=2)
    lay = fd.state_layout(model)
    assert [e.index for e in lay["q"]] == list(range(model.nq))
    assert [e.index for e in lay["u"]] == list(range(model.nu))
    assert lay["q"][0] == StateEntry("hub.qw", "quaternion", "hub", 0)
    assert [e.name for e in lay["q"][4:7]] == ["hub.x", "hub.y", "hub.z"]
    assert lay["u"][3] == StateEntry("hub.vx", "linear_velocity", "hub", 3)
    assert lay["q"][7] == StateEntry("array_pos.theta", "angle", "array_pos", 7)
    assert lay["q"][8] == StateEntry("array_pos.eta[0]", "modal", "array_pos", 8)
    assert lay["u"][8] == StateEntry("array_pos.eta_dot[1]", "modal_rate", "array_pos", 8)
    q = np.arange(model.nq, dtype=float)
    u = -np.arange(model.nu, dtype=float)
    x = fd.pack_state(q, u)
    q2, u2 = fd.unpack_state(model, x)
    np.testing.assert_array_equal(q2, q)
    np.testing.assert_array_equal(u2, u)
    with pytest.raises(ValueError, match="nq \\+ nu"):
        fd.unpack_state(model, x[:-1])


# ----------------------------------------------------------------------------------------------
# the result object
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def arm_result():
    model = models.two_link_arm()
    tau = slew_torque(model, duration=0.3, angle=0.05)
    return fd.simulate(model, t_span=(0.0, 0.3), tau=tau, t_eval=np.linspace(0.0, 0.3, 7))


def test_result_accessors(arm_result):
    res = arm_result
    model = res.model
    assert len(res) == 7 and res.q.shape == (7, model.nq) and res.u.shape == (7, model.nu)
    qj, uj = res.joint("link2")
    np.testing.assert_array_equal(qj[:, 0], res.q[:, model.q_start[1]])
    np.testing.assert_array_equal(uj[:, 0], res.u[:, model.u_start[1]])
    eta, etad = res.modes("link1")
    assert eta.shape == etad.shape == (7, 1)
    np.testing.assert_array_equal(eta[:, 0], res.q[:, 1])
    # tip position at rest: along x; later: consistent with the body pose and deflection
    tip = res.tip_position("link2")
    np.testing.assert_allclose(tip[0], [3.6, 0.0, 0.0], atol=1e-14)
    pose = res.body_pose("link2", 6)
    local = model.bodies[1].nodes[-1] + res.deflection("link2")[6]
    np.testing.assert_allclose(tip[6], pose.apply(local), atol=1e-14)
    assert set(res.max_tip_deflection()) == {"link1", "link2"}
    assert res.total_energy.shape == (7,)
    np.testing.assert_allclose(res.total_energy, res.kinetic_energy + res.potential_energy)
    with pytest.raises(KeyError, match="bodies are"):
        res.joint("link3")
    with pytest.raises(IndexError):
        res.tip_position("link1", node=99)


def test_result_files(arm_result, tmp_path):
    res = arm_result
    res.to_npz(tmp_path / "r.npz")
    back = fd.SimulationResult.from_npz(tmp_path / "r.npz")
    np.testing.assert_array_equal(back.q, res.q)
    np.testing.assert_array_equal(back.work, res.work)
    np.testing.assert_array_equal(back.total_energy, res.total_energy)
    assert back.fidelity == res.fidelity and back.model.names == res.model.names
    res.to_csv(tmp_path / "r.csv")
    lines = (tmp_path / "r.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert header[:3] == ["t", "q:link1.theta", "q:link1.eta[0]"]
    assert "energy_balance_error_pct" in header and len(lines) == 8
    data = np.loadtxt(tmp_path / "r.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(data[:, 0], res.t)
    np.testing.assert_array_equal(data[:, 1:1 + res.model.nq], res.q)


def test_plot(arm_result, tmp_path):
    pytest.importorskip("matplotlib")
    fig = arm_result.plot(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert len(fig.axes) == 3


def test_plot_without_matplotlib(arm_result, monkeypatch):
    for mod in list(sys.modules):
        if mod == "matplotlib" or mod.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="plot"):
        arm_result.plot()


def test_energy_fidelity_can_be_changed_after_reading_energies():
    model = fd.models.two_link_arm()
    tau = np.zeros(model.nu)
    tau[0] = 2.0
    res = fd.simulate(model, t_span=(0.0, 0.2), tau=tau, fidelity="ruthless",
                      t_eval=np.linspace(0.0, 0.2, 5))
    own = res.total_energy
    res.energy_fidelity = "full"
    exact = res.total_energy
    expected = [fd.total_energy(model, q, u, "full") for q, u in zip(res.q, res.u, strict=True)]
    np.testing.assert_allclose(exact, expected, rtol=1e-12)
    assert not np.allclose(own, exact, rtol=1e-9)
    res.energy_fidelity = "stiff"
    with pytest.raises(ValueError, match="energy_fidelity"):
        _ = res.total_energy


def test_energies_on_the_reference_tier():
    """``energy_backend="reference"``: the numpy tier's energies and momentum, those of the
    per-state reference functions; an unknown tier is named when the energies are read."""
    model = fd.models.spacecraft()
    u0 = 0.05 * np.ones(model.nu)
    res = fd.simulate(model, model.neutral_configuration(), u0, (0.0, 0.5),
                      t_eval=np.linspace(0.0, 0.5, 4), integrator=fd.ScipyIVP("DOP853"))
    res.energy_backend = "reference"
    expected = [fd.total_energy(model, q, u, backend="reference")
                for q, u in zip(res.q, res.u, strict=True)]
    np.testing.assert_allclose(res.total_energy, expected, rtol=1e-14)
    assert res.energy_balance_rms < 1e-5  # no load, no damping: E stays E₀
    np.testing.assert_allclose(res.momentum()[-1], fd.energy.momentum(
        model, res.q[-1], res.u[-1], backend="reference"), rtol=1e-14)
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        fd.SimulationResult(res.t, res.q, res.u, model, energy_backend="gpu")
    res.energy_backend = "gpu"
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        res.momentum()


# ---------------------------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------------------------
#: integrators with events: name, options (``h`` in periods), tolerance of the event times
EVENT_INTEGRATORS = [
    ("DOP853", {"rtol": 1e-11, "atol": 1e-12}, 1e-8),
    ("radau-iia", {"rtol": 1e-11, "atol": 1e-12}, 1e-8),
    ("gauss-legendre", {"h": 1.0 / 2000, "newton_tol": 1e-13}, 1e-8),
    ("generalized-alpha", {"h": 1.0 / 2000, "newton_tol": 1e-12}, 1e-5),
]


def _event_options(options: dict, T: float) -> dict:
    """``options`` with a step ``h`` given in periods ``T`` made absolute."""
    return {k: v * T if k == "h" else v for k, v in options.items()}


@pytest.mark.parametrize("integrator, options, tol", EVENT_INTEGRATORS)
def test_events_record_the_bottom_passages_of_a_pendulum(integrator, options, tol):
    """Released 1 rad from the bottom: it passes the bottom at T/4, 3T/4, 5T/4, … (exact
    period by the complete elliptic integral), downwards and upwards alternately; the
    compiled integrators locate the events on their steps' interpolation."""
    model, amplitude = _pendulum(), 1.0
    T = _pendulum_period(amplitude)

    def bottom(t, q, u):
        return q[0] + np.pi / 2

    def upward(t, q, u):
        return q[0] + np.pi / 2

    upward.direction = 1.0
    res = fd.simulate(model, q0=[-np.pi / 2 + amplitude], t_span=(0.0, 2.1 * T),
                      events=[bottom, upward], integrator=integrator,
                      **_event_options(options, T))
    np.testing.assert_allclose(res.t_events[0], T * np.array([0.25, 0.75, 1.25, 1.75]),
                               rtol=tol)
    np.testing.assert_allclose(res.t_events[1], T * np.array([0.75, 1.75]), rtol=tol)
    np.testing.assert_allclose(res.q_events[0][:, 0], -np.pi / 2, atol=1e-9)
    assert np.all(np.sign(res.u_events[0][:, 0]) == [-1, 1, -1, 1])
    assert res.t[-1] == pytest.approx(2.1 * T)
    assert res.message.startswith("the integration reached t1")


@pytest.mark.parametrize("integrator, options, tol", EVENT_INTEGRATORS)
@pytest.mark.parametrize("t_eval", [None, "grid"])
def test_a_terminal_event_stops_the_integration(t_eval, integrator, options, tol):
    model = _pendulum()
    T = _pendulum_period(1.0)

    def bottom(t, q, u):
        return q[0] + np.pi / 2

    bottom.terminal = True
    grid = np.linspace(0.0, T, 41) if t_eval == "grid" else None
    res = fd.simulate(model, q0=[-np.pi / 2 + 1.0], t_span=(0.0, T), events=bottom,
                      t_eval=grid, integrator=integrator, **_event_options(options, T))
    assert res.message.startswith("a terminal event occurred")
    assert res.t_events[0] == pytest.approx([T / 4], rel=tol)
    if grid is None:
        assert res.t[-1] == res.t_events[0][0]
        assert res.q[-1, 0] == pytest.approx(-np.pi / 2, abs=1e-9)
    else:
        np.testing.assert_array_equal(res.t, grid[grid <= res.t_events[0][0]])


def test_bad_events_name_the_argument():
    model = _pendulum()
    with pytest.raises(ValueError, match="events must be"):
        fd.simulate(model, t_span=(0.0, 0.1), events=3.0)
    with pytest.raises(ValueError, match=r"events\[0\]"):
        fd.simulate(model, t_span=(0.0, 0.1), events=lambda t, q, u: "x")


def test_simulate_runs_blas_on_one_thread_and_restores_the_users_setting():
    """The integration holds BLAS to one thread (threadpoolctl) and gives the user's setting
    back: seen from a torque callable during the run, and after it."""
    import threadpoolctl

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                if lib["user_api"] == "blas"}

    if not blas_threads():
        pytest.skip("no BLAS library seen by threadpoolctl")
    seen: list[set[int]] = []

    def tau(t, q, u):
        seen.append(blas_threads())
        return np.zeros(model.nu)

    model = models.two_link_arm()
    with threadpoolctl.threadpool_limits(limits=3, user_api="blas"):
        users = blas_threads()
        res = fd.simulate(model, t_span=(0.0, 0.01), tau=tau, backend="reference")
        after = blas_threads()
    # tau is called once to check its shape, once per right-hand side, then once per sample
    # for the history: only the right-hand sides run inside the integration
    assert len(seen) == 1 + res.nfev + res.t.size
    assert all(s == {1} for s in seen[1:1 + res.nfev])
    assert seen[0] == seen[-1] == after == users == {3}


def test_energy_balance_counts_from_the_first_sample():
    """A spinning spacecraft pushed by a body wrench on its hub, sampled from t = 1 s: the
    balance counts energy and works from the first sample, where the works are not zero, and
    closes as the run sampled from t0 does (``E − E₀ = W_ext``: no τ, no damping)."""
    craft = models.spacecraft()
    u0 = np.zeros(craft.nu)
    u0[2] = 0.05
    f_ext = np.zeros((craft.n_bodies, 6))
    f_ext[0] = [0.0, 0.0, 0.2, 0.2, 0.0, 0.0]
    runs = [fd.simulate(craft, craft.neutral_configuration(), u0, (0.0, 2.0), f_ext=f_ext,
                        t_eval=t_eval, integrator=fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-12))
            for t_eval in ([0.0, 1.0, 2.0], [1.0, 2.0])]
    assert runs[1].external_work[0] > 1e-3  # the works at the first sample
    for res in runs:
        assert res.energy_balance_rms < 1e-6
