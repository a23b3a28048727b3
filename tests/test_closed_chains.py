"""Closed chains (Jain & Rodriguez Sec VIII): loop closures, their forces and simulation.

Independent checks: the planar four-bar and slider-crank against their closed-form
kinematics and a minimal-coordinate Lagrangian equation of motion; a statically
indeterminate bar against its support reactions; a mechanism built as a tree and as a loop
closed by a constraint; random trees with closures against a Lagrange-multiplier solution
of the brute-force reference (tests/oracles); energy conservation and bounded drift.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn import ClosureError
from flexdyn.beam import beam_modes
from flexdyn.simulation import DEFAULT_TOLERANCES, auto_integrator
from oracles.brute_force import BruteModel, compose
from strategies import models, random_state

G = 9.81


def rod(m: float, L: float) -> dict:
    """A slender rod of mass ``m`` and length ``L`` along its frame's x axis."""
    I = m * L * L / 12.0
    return {"mass": m, "com": [L / 2, 0, 0], "inertia": [[1e-3 * m, 0, 0], [0, I, 0], [0, 0, I]]}


# ----------------------------------------------------------------------------------------------
# the planar four-bar: crank a, coupler b, rocker c, ground link d
# ----------------------------------------------------------------------------------------------
A, B, C, D = 0.3, 1.0, 0.8, 0.9
MASS = {"crank": 1.0, "coupler": 2.0, "rocker": 1.5}
Z = [0, 0, 1]


def fourbar(kind: str = "pin") -> fd.Model:
    keys = {"axis": Z} if kind == "pin" else {"axis": Z} if kind == "revolute" else {}
    return (fd.ModelBuilder("fourbar", gravity=(0, -G, 0))
            .add_body("crank", None, joint={"type": "revolute", "axis": Z},
                      rigid=rod(MASS["crank"], A))
            .add_body("coupler", "crank", joint={"type": "revolute", "axis": Z,
                                                 "placement": {"translation": [A, 0, 0]}},
                      rigid=rod(MASS["coupler"], B))
            .add_body("rocker", None, joint={"type": "revolute", "axis": Z,
                                             "placement": {"translation": [D, 0, 0]}},
                      rigid=rod(MASS["rocker"], C))
            .add_constraint("loop", kind, "coupler", "rocker", point=[B, 0, 0],
                            other_point=[C, 0, 0], **keys)
            .build())


def fourbar_angles(t1: float) -> tuple[float, float]:
    """Closed form: the absolute coupler and rocker angles (open branch) for crank angle t1,
    from the intersection of the circles about the crank pin (radius b) and the rocker pivot
    (radius c)."""
    P = np.array([A * np.cos(t1), A * np.sin(t1)])
    O = np.array([D, 0.0])
    e = O - P
    L = np.hypot(*e)
    x = (L * L + B * B - C * C) / (2 * L)
    h = np.sqrt(B * B - x * x)
    Q = P + x * e / L + h * np.array([e[1], -e[0]]) / L * -1.0
    return np.arctan2(*(Q - P)[::-1]), np.arctan2(*(Q - O)[::-1])


def fourbar_state(t1: float, w1: float) -> tuple[np.ndarray, np.ndarray]:
    """``(q, u)`` of the four-bar from the closed form (relative coupler angle)."""
    h = 1e-6
    t2, t3 = fourbar_angles(t1)
    p2, p3 = fourbar_angles(t1 + h)
    m2, m3 = fourbar_angles(t1 - h)
    d2, d3 = (p2 - m2) / (2 * h), (p3 - m3) / (2 * h)
    return np.array([t1, t2 - t1, t3]), np.array([w1, (d2 - 1) * w1, d3 * w1])


def _rods(t: float) -> list:
    """``(mass, length, centre (2,), angle)`` of the crank, coupler and rocker at crank
    angle ``t`` (closed form)."""
    t2, t3 = fourbar_angles(t)
    pin = np.array([A * np.cos(t), A * np.sin(t)])
    return [(MASS["crank"], A, 0.5 * A * np.array([np.cos(t), np.sin(t)]), t),
            (MASS["coupler"], B, pin + 0.5 * B * np.array([np.cos(t2), np.sin(t2)]), t2),
            (MASS["rocker"], C, np.array([D, 0]) + 0.5 * C * np.array([np.cos(t3),
                                                                       np.sin(t3)]), t3)]


def fourbar_mass(t1: float, h: float = 1e-5) -> float:
    """``m(θ)`` of the minimal-coordinate equation (velocities of the closed form)."""
    m = 0.0
    for (mb, L, cp, ap), (_, _, cm, am) in zip(_rods(t1 + h), _rods(t1 - h), strict=True):
        v, w = (cp - cm) / (2 * h), (ap - am) / (2 * h)
        m += mb * v @ v + mb * L * L / 12 * w * w
    return m


def fourbar_potential(t1: float) -> float:
    """``V(θ)``, gravity along −y."""
    return sum(mb * G * c[1] for mb, _, c, _ in _rods(t1))


def fourbar_minimal(t1: float, w1: float) -> float:
    """The crank's acceleration from the minimal-coordinate Lagrangian
    ``m(θ) θ̈ + ½ m'(θ) θ̇² + V'(θ) = 0`` with the closed-form kinematics."""
    h = 1e-4
    dm = (fourbar_mass(t1 + h) - fourbar_mass(t1 - h)) / (2 * h)
    dV = (fourbar_potential(t1 + h) - fourbar_potential(t1 - h)) / (2 * h)
    return -(0.5 * dm * w1 * w1 + dV) / fourbar_mass(t1)


def fourbar_minimal_torque(t1: float, w1: float, a1: float) -> float:
    """The crank torque for ``(θ, θ̇, θ̈)`` from the minimal-coordinate Lagrangian."""
    return (a1 - fourbar_minimal(t1, w1)) * fourbar_mass(t1)


def test_fourbar_assembly_matches_the_closed_form():
    model = fourbar()
    for t1 in (0.2, 1.0, 2.5, -1.3):
        t2, t3 = fourbar_angles(t1)
        q, u = fd.assemble(model, [t1, t2 - t1 + 0.3, t3 - 0.2], [0.7, 0, 0], fixed=["crank"])
        assert q[0] == t1
        np.testing.assert_allclose([q[0] + q[1], q[2]], [t2, t3], atol=1e-10)
        np.testing.assert_allclose(u, fourbar_state(t1, 0.7)[1], rtol=1e-7, atol=1e-8)
        g, gdot = fd.closure_residuals(model, q, u)
        assert np.max(np.abs(g)) < 1e-12 and np.max(np.abs(gdot)) < 1e-12


@pytest.mark.parametrize("backend", ["engine", "reference"])
@pytest.mark.parametrize("method", ["articulated", "articulated-split", "composite"])
def test_fourbar_forward_dynamics_matches_the_minimal_coordinate_equation(method, backend):
    model = fourbar()
    for t1, w1 in ((0.2, 0.0), (1.0, 1.5), (2.5, -3.0), (-1.3, 0.4)):
        q, u = fourbar_state(t1, w1)
        q, u = fd.assemble(model, q, u, fixed=["crank"])
        udot = fd.forward_dynamics(model, q, u, method=method, backend=backend)
        assert udot[0] == pytest.approx(fourbar_minimal(t1, w1), rel=1e-6, abs=1e-6)
        # the accelerations keep the closure: J u̇ + γ = 0 (by finite differences of J u)
        h = 1e-6
        gd = [fd.closure_residuals(model, q + s * h * u + 0.5 * (s * h) ** 2 * udot,
                                   u + s * h * udot)[1] for s in (1, -1)]
        np.testing.assert_allclose((gd[0] - gd[1]) / (2 * h), 0, atol=1e-6)


@pytest.mark.parametrize("backend", ["engine", "reference"])
def test_fourbar_with_the_crank_prescribed_needs_the_minimal_coordinate_torque(backend):
    model = fourbar()
    mask = np.array([True, False, False])
    for t1, w1, a1 in ((0.2, 0.0, 1.0), (1.0, 1.5, -2.0), (2.5, -3.0, 0.5)):
        q, u = fd.assemble(model, *fourbar_state(t1, w1), fixed=["crank"])
        udot, tau = fd.hybrid_dynamics(model, q, u, None, [a1, 0, 0], mask, backend=backend)
        assert udot[0] == a1
        assert tau[0] == pytest.approx(fourbar_minimal_torque(t1, w1, a1), rel=1e-6, abs=1e-6)
        # the free accelerations keep the closure
        g = fd.closure_residuals(model, q + 1e-6 * u + 0.5e-12 * udot, u + 1e-6 * udot)[1]
        assert np.max(np.abs(g)) < 1e-5


@pytest.mark.parametrize("integrator", [fd.Auto(rtol=1e-10, atol=1e-12),
                                        fd.RadauIIA(rtol=1e-10, atol=1e-12)],
                         ids=["auto", "radau-iia"])
def test_simulating_a_driven_fourbar_follows_the_closed_form_and_balances_energy(integrator):
    """The crank's motion prescribed: the closed form's angles and the minimal-coordinate
    crank torque (the realised load), on DOP853 (``"auto"``'s choice for a rigid model) and
    on the compiled Radau IIA, whose prescribed rows take the closure forces too."""
    model = fourbar()
    w = 2.0
    q0, u0 = fd.assemble(model, *fourbar_state(0.3, w), fixed=["crank"])
    res = fd.simulate(model, q0, u0, (0.0, 2.0), prescribed={"crank": lambda t: (0.3 + w * t,
                                                                                  w, 0.0)},
                      t_eval=np.linspace(0, 2, 41), integrator=integrator)
    for k in (10, 25, 40):
        t2, t3 = fourbar_angles(res.q[k, 0])
        assert res.q[k, 2] == pytest.approx(t3, abs=1e-7)
        assert res.q[k, 0] + res.q[k, 1] == pytest.approx(t2, abs=1e-7)
        assert res.tau[k, 0] == pytest.approx(fourbar_minimal_torque(res.q[k, 0], w, 0.0),
                                              rel=1e-5, abs=1e-5)
    assert res.energy_balance_rms < 1e-6
    assert res.max_closure_drift < 1e-9


def test_fourbar_fidelities_agree_on_rigid_bodies():
    model = fourbar()
    q, u = fd.assemble(model, *fourbar_state(0.8, 2.0), fixed=["crank"])
    ref = fd.forward_dynamics(model, q, u, fidelity="full")
    for fidelity in fd.FIDELITIES:
        np.testing.assert_allclose(fd.forward_dynamics(model, q, u, fidelity=fidelity), ref,
                                   rtol=1e-12, atol=1e-12)


def test_fourbar_simulation_conserves_energy_and_keeps_the_closure():
    model = fourbar()
    q0, u0 = fd.assemble(model, *fourbar_state(0.4, 3.0), fixed=["crank"])
    res = fd.simulate(model, q0, u0, (0.0, 4.0), t_eval=np.linspace(0, 4, 81),
                      integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    E = res.total_energy
    assert np.max(np.abs(E - E[0])) < 1e-7 * np.max(np.abs(E))
    assert res.max_closure_drift < 1e-8
    assert res.constraint_forces.shape == (81, 2)
    # the closure forces of the samples are those of the state
    k = 40
    np.testing.assert_allclose(res.constraint_forces[k],
                               fd.constraint_forces(model, res.q[k], res.u[k]), rtol=1e-5,
                               atol=1e-6)
    # without stabilization the drift grows, with it it stays at the integration error
    free = fd.simulate(model, q0, u0, (0.0, 4.0), t_eval=np.linspace(0, 4, 81), closure_rate=0.0,
                       integrator=fd.Auto(rtol=1e-6, atol=1e-8))
    held = fd.simulate(model, q0, u0, (0.0, 4.0), t_eval=np.linspace(0, 4, 81),
                       integrator=fd.Auto(rtol=1e-6, atol=1e-8))
    assert held.max_closure_drift < 0.2 * free.max_closure_drift


# ----------------------------------------------------------------------------------------------
# slider-crank with a massive slider on a prismatic joint, closed by a pin
# ----------------------------------------------------------------------------------------------
def slider_crank(flex_coupler: dict | None = None) -> fd.Model:
    coupler = {"rigid": rod(2.0, B)} if flex_coupler is None else flex_coupler
    return (fd.ModelBuilder("slider-crank", gravity=(0, -G, 0))
            .add_body("crank", None, joint={"type": "revolute", "axis": Z}, rigid=rod(1.0, A))
            .add_body("coupler", "crank", joint={"type": "revolute", "axis": Z,
                                                 "placement": {"translation": [A, 0, 0]}},
                      **coupler)
            .add_body("slider", None, joint={"type": "prismatic", "axis": [1, 0, 0]},
                      rigid={"mass": 3.0, "com": [0, 0, 0], "inertia": np.eye(3) * 0.01})
            .add_constraint("wrist", "pin", "coupler", "slider", point=[B, 0, 0],
                            other_point=[0, 0, 0], axis=Z)
            .build())


def test_slider_crank_kinematics_and_dynamics_against_the_closed_form():
    model = slider_crank()
    for t1, w1 in ((0.3, 2.0), (2.0, -1.0), (4.0, 0.5)):
        x = A * np.cos(t1) + np.sqrt(B * B - (A * np.sin(t1)) ** 2)
        q, u = fd.assemble(model, [t1, -t1 + 0.1, x + 0.1], [w1, 0, 0], fixed=["crank"])
        assert q[2] == pytest.approx(x, abs=1e-12)
        phi = -np.arcsin(A * np.sin(t1) / B)
        assert q[0] + q[1] == pytest.approx(phi, abs=1e-12)

        def parts(t):  # (mass, inertia, centre, angle) of the crank, coupler, slider
            ph = -np.arcsin(A * np.sin(t) / B)
            pin = A * np.array([np.cos(t), np.sin(t)])
            xs = A * np.cos(t) + np.sqrt(B * B - (A * np.sin(t)) ** 2)
            return [(1.0, A * A / 12, pin / 2, t),
                    (2.0, 4 * B * B / 24, pin + B / 2 * np.array([np.cos(ph), np.sin(ph)]), ph),
                    (3.0, 0.01, np.array([xs, 0.0]), 0.0)]

        def mV(t, h=1e-5):
            m = V = 0.0
            for (mb, Ib, cp, ap), (_, _, cm, am), (_, _, c0, _) in zip(
                    parts(t + h), parts(t - h), parts(t), strict=True):
                v, w = (cp - cm) / (2 * h), (ap - am) / (2 * h)
                m += mb * v @ v + Ib * w * w
                V += mb * G * c0[1]
            return m, V

        h = 1e-4
        (m0, _), (mp, Vp), (mm, Vm) = mV(t1), mV(t1 + h), mV(t1 - h)
        expected = -(0.5 * (mp - mm) / (2 * h) * w1 * w1 + (Vp - Vm) / (2 * h)) / m0
        udot = fd.forward_dynamics(model, q, u)
        assert udot[0] == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_flexible_coupler_slider_crank_balances_energy():
    coupler = {"flex": beam_modes(B, 0.54, EI_z=140.0, n_elements=4, n_modes=2).to_flex_dict()}
    model = slider_crank(coupler)
    q0, u0 = fd.assemble(model, np.concatenate([[0.3, -0.1, 1.2], np.zeros(2)]),
                         np.concatenate([[4.0, 0, 0], np.zeros(2)]), fixed=["crank"])
    torque = lambda t, q, u: np.concatenate([[2.0 * np.sin(3 * t)], np.zeros(model.nu - 1)])  # noqa: E731
    res = fd.simulate(model, q0, u0, (0.0, 0.5), tau=torque, t_eval=np.linspace(0, 0.5, 51),
                      integrator=fd.Auto(rtol=1e-9, atol=1e-11))
    assert res.energy_balance_rms < 1e-5
    assert res.max_closure_drift < 1e-8
    assert np.max(np.abs(res.modes("coupler")[0])) > 1e-9  # the coupler does bend


def _flexible_slider_crank() -> tuple[fd.Model, np.ndarray, np.ndarray]:
    coupler = {"flex": beam_modes(B, 0.54, EI_z=140.0, n_elements=4, n_modes=2,
                                  damping_ratio=0.01).to_flex_dict()}
    model = slider_crank(coupler)
    q0, u0 = fd.assemble(model, np.concatenate([[0.3, -0.1, 1.2], np.zeros(2)]),
                         np.concatenate([[4.0, 0, 0], np.zeros(2)]), fixed=["crank"])
    return model, q0, u0


def test_the_default_run_of_a_mechanism_meets_its_tolerances():
    """A flexible slider-crank whose crank a weak PD law on a ramp of its angle turns
    forth and back (0.3 → 1.97 → 1.36 → 1.67 rad): the default run (Radau IIA in
    displacements, each joint rate's error measured against the joint's own displacement
    over the step rather than against its angle, which grows with the motion) against
    DOP853 at rtol 1e-12: the coordinates within 10 (atol + rtol |q|), |q| their largest
    size (measured: 0.17 of that bound; 3.4 when the joint rates were measured against
    their angles)."""
    model, q0, u0 = _flexible_slider_crank()

    def tau(t, q, u):
        out = np.zeros(model.nu)
        out[0] = 3.0 * (0.3 + 5.0 * t - q[0]) + 0.5 * (5.0 - u[0])
        return out

    t_eval = np.linspace(0.0, 1.0, 11)
    res = fd.simulate(model, q0, u0, (0.0, 1.0), tau=tau, t_eval=t_eval)
    ref = fd.simulate(model, q0, u0, (0.0, 1.0), tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    assert res.settings["integrator"] == "radau-iia"
    assert np.max(np.abs(ref.q[:, 0] - q0[0])) > 1.5  # the crank turns
    rtol, atol = DEFAULT_TOLERANCES["displacement"]
    bound = 10.0 * (atol + rtol * np.max(np.abs(ref.q), axis=0))
    assert np.all(np.abs(res.q - ref.q) <= bound), np.max(np.abs(res.q - ref.q) / bound)


@pytest.mark.parametrize("integrator", [
    fd.RadauIIA(rtol=1e-9, atol=1e-11, error_norm="displacement"),
    fd.GaussLegendre(h=2e-4),
    fd.GeneralizedAlpha(rtol=1e-7, atol=1e-9)], ids=lambda i: i.name)
def test_the_compiled_integrators_solve_the_closures_with_the_motion(integrator):
    """A flexible coupler under a state feedback on the crank: the compiled schemes, which
    solve the closure forces and acceleration rows inside their Newton iteration, against
    DOP853 on the closed chain's state derivative (the articulated tree and Λ = J M⁻¹ Jᵀ per
    right-hand side) at a tight tolerance: states, closure forces, drift."""
    model, q0, u0 = _flexible_slider_crank()
    nu = model.nu

    def pd(t, q, u):
        tau = np.zeros(nu)
        tau[0] = 3.0 * (0.3 + 5.0 * t - q[0]) + 0.5 * (5.0 - u[0])
        return tau

    t_eval = np.linspace(0.0, 0.4, 9)
    ref = fd.simulate(model, q0, u0, (0.0, 0.4), tau=pd, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    res = fd.simulate(model, q0, u0, (0.0, 0.4), tau=pd, t_eval=t_eval, integrator=integrator)
    assert integrator.name in res.message
    # the errors of each scheme at these settings, measured: about 1/5 of the tolerances
    tol = {"radau-iia": 1e-8, "gauss-legendre": 3e-6, "generalized-alpha": 3e-4}[integrator.name]
    np.testing.assert_allclose(res.q, ref.q, atol=tol)
    np.testing.assert_allclose(res.u, ref.u, atol=20 * tol)
    scale = np.max(np.abs(ref.constraint_forces))
    np.testing.assert_allclose(res.constraint_forces, ref.constraint_forces, atol=tol * scale)
    assert res.max_closure_drift < 20 * tol
    assert np.max(np.abs(res.modes("coupler")[0])) > 1e-3  # the coupler does bend


def test_the_compiled_radau_closes_the_ruthless_model_of_a_flexible_chain():
    """The ruthless model's closures on the compiled Radau IIA, which ``simulate``'s default
    takes for it (the endpoints' poses from the deformed geometry, their motion from the
    undeformed node frames, Eq B1), against DOP853 at rtol 1e-12 on the reference tier."""
    model, q0, u0 = _flexible_slider_crank()
    t_eval = np.linspace(0.0, 0.2, 5)
    tau = np.concatenate([[2.0], np.zeros(model.nu - 1)])
    ref = fd.simulate(model, q0, u0, (0.0, 0.2), tau=tau, t_eval=t_eval, fidelity="ruthless",
                      backend="reference",
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    res = fd.simulate(model, q0, u0, (0.0, 0.2), tau=tau, t_eval=t_eval, fidelity="ruthless",
                      integrator=fd.RadauIIA(rtol=1e-10, atol=1e-12))
    assert "radau-iia" in fd.simulate(model, q0, u0, (0.0, 0.01), fidelity="ruthless").message
    np.testing.assert_allclose(res.q, ref.q, atol=1e-8)
    np.testing.assert_allclose(res.u, ref.u, atol=1e-6)
    assert res.max_closure_drift < 1e-8
    assert np.max(np.abs(res.modes("coupler")[0])) > 1e-4  # the coupler does bend


def test_the_compiled_radau_drives_a_flexible_closed_chain_by_prescribed_motion():
    """The crank's motion prescribed on the flexible slider-crank: the compiled Radau IIA
    (the closure forces in the prescribed rows' realised loads) against DOP853 at rtol 1e-12
    on the closed chain's hybrid dynamics (:func:`flexdyn.dynamics.closed_hybrid`): states,
    the crank torque, the closure forces (errors measured: 5e-10)."""
    model, q0, u0 = _flexible_slider_crank()
    drive = {"crank": lambda t: (0.3 + 4.0 * t + 2.0 * t * t, 4.0 + 4.0 * t, 4.0)}
    t_eval = np.linspace(0.0, 0.4, 9)
    ref = fd.simulate(model, q0, u0, (0.0, 0.4), prescribed=drive, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    res = fd.simulate(model, q0, u0, (0.0, 0.4), prescribed=drive, t_eval=t_eval,
                      integrator=fd.RadauIIA(rtol=1e-9, atol=1e-11, error_norm="displacement"))
    np.testing.assert_allclose(res.q, ref.q, atol=5e-9)
    for got, want in ((res.tau[:, 0], ref.tau[:, 0]),
                      (res.constraint_forces, ref.constraint_forces)):
        np.testing.assert_allclose(got, want, atol=5e-9 * np.max(np.abs(want)))
    assert res.max_closure_drift < 1e-9


def test_a_stepper_keeps_the_closures_on_the_compiled_radau():
    """The co-simulation component of a flexible closed chain on the compiled Radau IIA,
    its torque held per macro step, against DOP853 at rtol 1e-12 with the same held
    torques."""
    model, q0, u0 = _flexible_slider_crank()
    st = fd.Stepper(model, 0.02, integrator="radau-iia", q0=q0, u0=u0, rtol=1e-10,
                    atol=1e-12)
    torques = 2.0 * np.sin(np.arange(10))
    q, u = q0, u0
    for k, torque in enumerate(torques):
        st.tau = np.concatenate([[torque], np.zeros(model.nu - 1)])
        st.step()
        ref = fd.simulate(model, q, u, (0.02 * k, 0.02 * (k + 1)), tau=st.tau,
                          t_eval=[0.02 * (k + 1)],
                          integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
        q, u = ref.q[-1], ref.u[-1]
    np.testing.assert_allclose(st.q, q, atol=1e-8)
    np.testing.assert_allclose(st.u, u, atol=1e-6)
    assert np.max(np.abs(fd.closure_residuals(model, st.q)[0])) < 1e-9


def test_auto_takes_the_compiled_radau_for_a_flexible_closed_chain():
    model, q0, u0 = _flexible_slider_crank()
    assert auto_integrator(model) == ("radau-iia", "displacement")
    assert auto_integrator(model, fidelity="ruthless") == ("radau-iia", "displacement")
    assert auto_integrator(model, prescribed={"crank": lambda t: (t, 1.0, 0.0)}) == (
        "radau-iia", "displacement")
    assert auto_integrator(fourbar()) == ("DOP853", None)  # rigid: not stiff
    res = fd.simulate(model, q0, u0, (0.0, 0.2))
    assert "radau-iia" in res.message
    assert res.max_closure_drift < 1e-6


# ----------------------------------------------------------------------------------------------
# statics: a bar on a hinge and a roller (closed form reactions)
# ----------------------------------------------------------------------------------------------
def test_support_reaction_of_a_bar_on_a_roller():
    L, m = 2.0, 5.0
    model = (fd.ModelBuilder("bar", gravity=(0, -G, 0))
             .add_body("bar", None, joint={"type": "revolute", "axis": Z}, rigid=rod(m, L))
             .add_constraint("roller", "point-on-plane", "bar", None, point=[L, 0, 0],
                             other_point=[L, 0, 0], normal=[0, 1, 0])
             .build())
    q = np.zeros(1)
    lam = fd.constraint_forces(model, q, np.zeros(1))
    # the bar pushes the roller down with m g / 2: λ is that force along +y
    assert lam[0] == pytest.approx(-m * G / 2, rel=1e-12)
    np.testing.assert_allclose(fd.forward_dynamics(model, q, np.zeros(1)), 0, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# the same mechanism as a tree and as a closed loop
# ----------------------------------------------------------------------------------------------
def pendulum_pair(closed: bool) -> fd.Model:
    """A flexible link on a revolute joint carrying a rigid link on a revolute joint about a
    skew axis at its tip node — as a tree, or with the second link free and held by a
    revolute closure at the node."""
    axis2 = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    link1 = {"flex": beam_modes(1.0, 1.08, EI_y=560.0, EI_z=560.0, GJ=400.0,
                                polar_inertia_per_length=1e-4, n_elements=3,
                                n_modes=3).to_flex_dict()}
    tip = len(link1["flex"]["nodes"]) - 1
    link2 = {"mass": 1.5, "com": [0.3, 0.05, 0.0], "inertia": np.diag([0.01, 0.02, 0.025])}
    b = fd.ModelBuilder("pair", gravity=(0, -G, 0))
    b.add_body("link1", None, joint={"type": "revolute", "axis": [0, 1, 0.3] / np.hypot(1, .3)},
               **link1)
    if closed:
        b.add_body("link2", None, joint={"type": "free"}, rigid=link2)
        b.add_constraint("hinge", "revolute", "link1", "link2", node=tip,
                         other_point=[0, 0, 0], axis=axis2)
    else:
        b.add_body("link2", "link1", joint={"type": "revolute", "axis": axis2.tolist(),
                                            "parent_node": tip}, rigid=link2)
    return b.build()


@pytest.mark.parametrize("fidelity", ["full", "exact", "ruthless"])
def test_a_loop_closed_by_a_constraint_moves_like_the_tree(fidelity):
    from flexdyn.spatial import rot_to_quat

    tree, loop = pendulum_pair(False), pendulum_pair(True)
    rng = np.random.default_rng(4)
    # the ruthless tree places the child at the undeformed node and leaves the modal rates
    # out of the child's velocity products (Eq B1), which a free body held by a closure does
    # not: the two agree where the link is undeformed and at rest relative to its frame
    ruthless = fidelity == "ruthless"
    for _ in range(3):
        q, u, _ = random_state(tree, rng, eta_scale=0.0 if ruthless else 0.02)
        if ruthless:
            u[1:-1] = 0.0
        kin = fd.compute_kinematics(tree, q, fidelity)
        V = fd.compute_velocities(tree, kin, u).V_m[1][-6:]
        pose = kin.pose[1]
        m = int(tree.n_modes[0])
        q_loop = np.concatenate([q[:1 + m], rot_to_quat(pose.R), pose.p])
        u_loop = np.concatenate([u[:1 + m], V])
        assert np.max(np.abs(fd.closure_residuals(loop, q_loop, u_loop, fidelity)[0])) < 1e-12
        expected = fd.forward_dynamics(tree, q, u, fidelity=fidelity)
        got = fd.forward_dynamics(loop, q_loop, u_loop, fidelity=fidelity)
        np.testing.assert_allclose(got[:1 + m], expected[:1 + m], rtol=1e-9,
                                   atol=1e-9 * np.max(np.abs(expected)))


# ----------------------------------------------------------------------------------------------
# random trees with closures against Lagrange multipliers on the brute-force reference
# ----------------------------------------------------------------------------------------------
def test_a_loop_closed_by_a_constraint_moves_like_the_tree_on_the_compiled_radau():
    """The free link held by a revolute closure (five rows, a quaternion joint: local
    coordinates in the compiled loop) simulated by ``simulate``'s default, the compiled Radau
    IIA, follows the tree's motion by DOP853 at rtol 1e-12 (the flexible link's joint angle
    and modes), within the default tolerances' error (3.7e-6 measured)."""
    from flexdyn.spatial import rot_to_quat

    tree, loop = pendulum_pair(False), pendulum_pair(True)
    q, u, _ = random_state(tree, np.random.default_rng(4), eta_scale=0.02)
    kin = fd.compute_kinematics(tree, q)
    pose = kin.pose[1]
    m = int(tree.n_modes[0])
    q_loop = np.concatenate([q[:1 + m], rot_to_quat(pose.R), pose.p])
    u_loop = np.concatenate([u[:1 + m], fd.compute_velocities(tree, kin, u).V_m[1][-6:]])
    t_eval = np.linspace(0.0, 0.3, 7)
    ref = fd.simulate(tree, q, u, (0.0, 0.3), t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-14))
    res = fd.simulate(loop, q_loop, u_loop, (0.0, 0.3), t_eval=t_eval)
    assert res.settings["integrator"] == "radau-iia"
    np.testing.assert_allclose(res.q[:, :1 + m], ref.q[:, :1 + m], atol=2e-5)
    assert res.max_closure_drift < 5e-6


def _brute_closure(bm: BruteModel, q, a: int, node: int | None, point, b: int, other_point):
    """``g = R_Bᵀ (p_A − p_B)`` of a ball closure from the brute-force kinematics."""
    poses = bm.body_poses(q)
    T_a = poses[a]
    if node is not None:
        T_a = compose(T_a, bm.node_pose(bm.bodies[a], node, bm.eta(q, a)))
        p_A = T_a[1]
    else:
        p_A = T_a[0] @ point + T_a[1]
    if b < 0:
        return p_A - other_point
    R_B, p_B = poses[b]
    return R_B.T @ (p_A - (R_B @ other_point + p_B))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(d=models(min_bodies=2, max_bodies=4, max_modes=2, max_nodes=3,
                joint_types=("revolute", "prismatic", "spherical", "universal")),
       seed=st.integers(0, 2**31), to_ground=st.booleans())
def test_random_closed_trees_against_lagrange_multipliers(d, seed, to_ground):
    rng = np.random.default_rng(seed)
    n = len(d["bodies"])
    a = int(rng.integers(1, n))
    b = -1 if to_ground else int(rng.integers(0, a))
    flex = d["bodies"][a].get("flex") or {}
    n_nodes = len(flex.get("nodes", []))
    node = int(rng.integers(n_nodes)) if n_nodes and rng.random() < 0.7 else None
    point = None if node is not None else rng.uniform(-0.5, 0.5, 3)
    other_point = rng.uniform(-0.5, 0.5, 3)
    entry = {"name": "c", "type": "ball", "body": d["bodies"][a]["name"],
             "other_body": None if b < 0 else d["bodies"][b]["name"],
             "other_point": other_point.tolist()}
    entry |= {"node": node} if node is not None else {"point": point.tolist()}
    model = fd.Model.from_dict(d | {"constraints": [entry]})
    bm = BruteModel(d)
    q, u, _ = random_state(model, rng, eta_scale=0.1)
    tau = rng.normal(size=model.nu)

    def g(qq):
        return _brute_closure(bm, qq, a, node, point, b, other_point)

    h = 1e-30
    Gam = bm.Gamma(q)
    J = np.array([g(q + 1j * h * Gam[:, k]).imag / h for k in range(model.nu)]).T
    sv = np.linalg.svd(J, compute_uv=False)
    assume(sv.size == 3 and sv[-1] > 1e-2 * max(sv[0], 0.1))  # three independent rows

    def Ju(qq):
        return g(qq + 1j * h * (bm.Gamma(qq) @ u)).imag / h

    s = 1e-3 / max(1.0, np.max(np.abs(Gam @ u)))
    qd = Gam @ u
    stencil = zip((-2, -1, 1, 2), (1 / 12, -2 / 3, 2 / 3, -1 / 12), strict=True)
    gamma = sum(c * Ju(q + k * s * qd) for k, c in stencil) / s
    M = bm.mass_matrix(q)
    Cb = bm.bias_forces(q, u)
    KKT = np.block([[M, J.T], [J, np.zeros((3, 3))]])
    sol = np.linalg.solve(KKT, np.concatenate([tau - Cb, -gamma]))
    np.testing.assert_allclose(fd.closure_residuals(model, q, u, "full")[0], g(q), atol=1e-12)
    udot = fd.forward_dynamics(model, q, u, tau, fidelity="full")
    scale = max(1.0, np.max(np.abs(sol[:model.nu])))
    np.testing.assert_allclose(udot, sol[:model.nu], atol=2e-6 * scale)
    lam = fd.constraint_forces(model, q, u, tau, fidelity="full")
    np.testing.assert_allclose(lam, sol[model.nu:], atol=2e-6 * max(1.0, np.max(np.abs(lam))))


# ----------------------------------------------------------------------------------------------
# errors, files
# ----------------------------------------------------------------------------------------------
def test_redundant_closures_are_named():
    model = fourbar("revolute")  # 5 rows where the planar joints leave 2 independent
    q, u = fd.assemble(fourbar(), *fourbar_state(0.5, 1.0), fixed=["crank"])
    with pytest.raises(ClosureError, match="'loop'.*redundant"):
        fd.forward_dynamics(model, q, u)
    with pytest.raises(ClosureError, match="'loop' row"):
        fd.constraint_forces(model, q, u)


def test_simulate_says_by_how_much_the_initial_state_violates_a_closure():
    model = fourbar()
    q, u = fourbar_state(0.5, 1.0)
    q = q + [0, 0.01, 0]
    with pytest.raises(ValueError, match=r"'loop' by [0-9.e-]+ \(position\).*assemble"):
        fd.simulate(model, q, u, (0, 0.1))


def test_assembly_out_of_reach_names_the_closure():
    model = (fd.ModelBuilder("short", gravity=(0, 0, 0))
             .add_body("arm", None, joint={"type": "revolute", "axis": Z}, rigid=rod(1, 1))
             .add_constraint("reach", "ball", "arm", None, point=[1, 0, 0],
                             other_point=[3, 0, 0])
             .build())
    with pytest.raises(ClosureError, match="'reach'"):
        fd.assemble(model, [0.1])


def test_constraints_survive_the_file_round_trip(tmp_path):
    model = pendulum_pair(True)
    fd.save_model(model, tmp_path / "m.json")
    back = fd.load_model(tmp_path / "m.json")
    assert back.to_dict() == model.to_dict()
    assert back.constraints[0].kind == "revolute"
    np.testing.assert_array_equal(back.constraints[0].params["other_axis"],
                                  model.constraints[0].params["axis"])


@pytest.mark.parametrize("change, message", [
    ({"type": "hinge"}, "type must be one of"),
    ({"axis": None}, "axis is required for a revolute closure"),
    ({"normal": [0, 0, 1]}, "normal is not allowed for a revolute closure"),
    ({"node": 99}, "out of range"),
    ({"point": [0, 0, 0]}, "exactly one of 'node'"),
    ({"other_body": "link1"}, "same body"),
    ({"other_body": "nobody"}, "must be the name of a body"),
    ({"axis": [1, 1, 0]}, "unit vector"),
    ({"other_body": None, "other_point": None, "other_node": 0}, "the ground has no nodes"),
])
def test_constraint_entries_are_validated(change, message):
    d = pendulum_pair(True).to_dict()
    entry = d["constraints"][0] | change
    entry = {k: v for k, v in entry.items() if v is not None or k == "other_body"}
    with pytest.raises(ValueError, match=message):
        fd.Model.from_dict(d | {"constraints": [entry]})


# ----------------------------------------------------------------------------------------------
# the engine's closure terms against the reference's
# ----------------------------------------------------------------------------------------------
KIND_KEYS = {"ball": {}, "revolute": {"axis": [0.6, 0.0, 0.8], "other_axis": [0.0, 1.0, 0.0]},
             "weld": {"rotation": [[0, -1, 0], [1, 0, 0], [0, 0, 1]]}, "pin": {"axis": [0, 0, 1]},
             "point-on-line": {"direction": [0.0, 0.6, 0.8]},
             "point-on-plane": {"normal": [1.0, 0.0, 0.0]}}


@pytest.mark.parametrize("tip", ["exponential", "euler-321"])
@pytest.mark.parametrize("seed", range(3))
def test_engine_closure_terms_equal_the_reference(seed, tip):
    from flexdyn.closure import closure_terms
    from flexdyn.terms import state_terms
    from strategies import random_model_dict

    rng = np.random.default_rng(seed)
    d = random_model_dict(rng, [-1, 0, 1, 0], ["spherical", "revolute", "universal", "free"],
                          [3, 2, 0, 4], [2, 0, 0, 3])  # body 1: rigid, with nodes
    names = [b["name"] for b in d["bodies"]]
    nodes = [len((b.get("flex") or {}).get("nodes", [])) for b in d["bodies"]]
    constraints = []
    for k, (kind, keys) in enumerate(KIND_KEYS.items()):
        a, b = int(rng.integers(1, 4)), int(rng.integers(-1, 4))
        b = -1 if b == a else b
        entry = {"name": f"c{k}", "type": kind, "body": names[a],
                 "other_body": None if b < 0 else names[b], **keys}
        entry |= ({"node": int(rng.integers(nodes[a]))} if nodes[a] and rng.random() < 0.6
                  else {"point": rng.uniform(-0.4, 0.4, 3).tolist()})
        entry |= ({"other_node": int(rng.integers(nodes[b]))}
                  if b >= 0 and nodes[b] and rng.random() < 0.6
                  else {"other_point": rng.uniform(-0.4, 0.4, 3).tolist()})
        constraints.append(entry)
    model = fd.Model.from_dict(d | {"constraints": constraints, "tip_kinematics": tip})
    q, u, _ = random_state(model, rng, eta_scale=0.2)
    q = model.normalize_configuration(q)
    for fidelity in ("full", "exact", "ruthless"):  # ruthless: the pose from the full geometry
        ref = closure_terms(model, *state_terms(model, q, u, fidelity), u)
        g, J, gamma = fd.dynamics.cached_engine(model, fidelity).closure_terms(q, u)
        np.testing.assert_allclose(g, ref.g, rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, ref.J, rtol=0, atol=1e-12 * max(1, np.abs(ref.J).max()))
        np.testing.assert_allclose(gamma, ref.gamma, rtol=0,
                                   atol=1e-11 * max(1, np.abs(ref.gamma).max()))


def test_the_tree_only_engine_entries_refuse_a_closed_chain():
    from flexdyn.engine import Engine

    engine = Engine(fourbar())
    with pytest.raises(ValueError, match="loop closures.*flexdyn.rhs"):
        engine.c_state_derivative()
    with pytest.raises(ValueError, match="loop closures"):
        engine.state_derivative(np.zeros(6))


def test_the_command_line_lists_and_assembles_closures(tmp_path, capsys):
    from flexdyn.__main__ import main

    path = tmp_path / "fourbar.json"
    fd.save_model(fourbar(), path)  # stretched straight: a singular guess for the assembly
    assert main(["info", str(path)]) == 0
    assert "closure 'loop': pin (2 rows) between coupler and rocker" in capsys.readouterr().out
    assert main(["simulate", str(path), "--t", "0.5", "--samples", "11"]) == 0
    out = capsys.readouterr().out
    assert "closures assembled from the neutral configuration" in out
    e = float(out.split("max |e_E| = ")[1].split(" %")[0])
    assert e < 1e-4


def test_the_compiled_closed_derivative_equals_the_reference_and_names_redundant_closures():
    from flexdyn.dynamics import closed_chain, tree_forward_dynamics
    from flexdyn.simulation.problem import compiled_derivative as _compiled_derivative

    for model in (pendulum_pair(True), slider_crank()):
        rng = np.random.default_rng(5)
        q, u, _ = random_state(model, rng, eta_scale=0.05)
        q, tau = model.normalize_configuration(q), rng.normal(size=model.nu)
        for fidelity in ("full", "exact", "ruthless"):
            xdot = _compiled_derivative(model, fidelity, "articulated", "engine", 3, 7.0)(
                0.0, np.concatenate([q, u]), tau, None)
            udot_f = tree_forward_dynamics(model, q, u, tau, "articulated", fidelity, None,
                                            None, "reference")
            expected = closed_chain(model, q, u, udot_f, fidelity, "reference", 7.0)[0]
            np.testing.assert_allclose(xdot[model.nq:model.nq + model.nu], expected,
                                       rtol=1e-10, atol=1e-10 * np.max(np.abs(expected)))
            np.testing.assert_allclose(xdot[:model.nq], model.qdot(q, u), rtol=1e-14)
    q, u = fd.assemble(fourbar(), *fourbar_state(0.5, 1.0), fixed=["crank"])
    with pytest.raises(fd.SimulationError, match="'loop'.*redundant"):
        fd.simulate(fourbar("revolute"), q, u, (0, 0.1))


def test_every_rhs_path_stabilizes_alike_off_the_manifold():
    """Away from the closures, Baumgarte's terms count: the compiled derivative, the
    reference and the composite method give the same ẋ, and a zero rate another one."""
    model = fourbar()
    q, u = fourbar_state(0.7, 2.0)
    x = np.concatenate([q + [0.0, 0.01, 0.0], u])
    compiled = fd.rhs(model)(0.0, x)
    for other in (fd.rhs(model, backend="reference"), fd.rhs(model, method="composite")):
        np.testing.assert_allclose(other(0.0, x), compiled, rtol=0, atol=1e-11)
    assert np.max(np.abs(fd.rhs(model, closure_rate=0.0)(0.0, x) - compiled)) > 0.1
