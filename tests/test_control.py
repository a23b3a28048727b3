"""Control-design interfaces (:mod:`flexdyn.control`, :mod:`flexdyn.stability`).

Independent checks: central differences of ``rhs`` (the arm's ``A`` and ``B`` at a moving
state); the spacecraft's rigid-body modes and its elastic frequencies from two routes
(``A``'s eigenvalues, the eigenproblem of ``M`` and ``K``); the locked modes against the
per-body eigenproblem; a parallelogram four-bar (a closed chain) against its one-degree-of-
freedom pendulum frequency by hand; a torque-free spinning body against Euler's equations;
a rotating cantilever against the published frequencies (centrifugal stiffening); the
cantilever's sag and the spinning bar's stretch against beam theory as elements are refined;
RK4's observed stability limit bracketed by ``max_stable_step``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.beam import beam_modes
from flexdyn.control import equilibrium, linearize, max_stable_step
from flexdyn.modal import modal_analysis
from flexdyn.stability import step_limit
from helpers import PENDULUM, pendulum, rel_err

E_AL, RHO_AL = 70e9, 2700.0  # aluminium, Pa and kg/m³


def _tube(r_out: float, wall: float) -> tuple[float, float]:
    """``(μ, EI)`` of an aluminium tube (kg/m, N m²)."""
    r_in = r_out - wall
    return RHO_AL * math.pi * (r_out**2 - r_in**2), E_AL * math.pi / 4 * (r_out**4 - r_in**4)


def three_link_arm(gravity: float = 9.81) -> fd.Model:
    """A spatial three-link arm of aluminium tubes (0.5 m, Ø 20 × 2 mm): a vertical-axis
    base joint, two horizontal-axis joints, two bending modes per link, a 0.2 kg payload."""
    mu, EI = _tube(0.01, 0.002)
    b = fd.ModelBuilder("arm", gravity=(0.0, 0.0, -gravity))
    for k, axis in enumerate(([0, 0, 1], [0, 1, 0], [0, 1, 0])):
        beam = beam_modes(0.5, mu, EI_y=EI, EI_z=EI, n_elements=4, n_modes=2)
        flex = beam.to_flex_dict()
        joint = {"type": "revolute", "axis": axis}
        if k:
            joint["parent_node"] = beam.n_nodes - 1
        if k == 2:
            flex["node_masses"][-1] += 0.2
        b.add_body(f"link{k + 1}", f"link{k}" if k else None, joint=joint, flex=flex)
    return b.build()


@pytest.fixture(scope="module")
def arm() -> fd.Model:
    return three_link_arm()


def _central_jacobian(f, x0: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = []
    for k in range(x0.size):
        e = np.zeros(x0.size)
        e[k] = h
        cols.append((f(x0 + e) - f(x0 - e)) / (2 * h))
    return np.array(cols).T


def test_arm_A_B_equal_central_differences_of_rhs(arm):
    """At a moving state with torques, ``A`` and ``B`` equal central differences of
    ``rhs`` (revolute joints and modes: the tangent state is ``[q; u]`` itself)."""
    rng = np.random.default_rng(3)
    q = 0.3 * rng.standard_normal(arm.nq)
    q[arm.nq_joint.sum():] *= 0.01
    u, tau = rng.standard_normal(arm.nu), rng.standard_normal(arm.nu)
    lin = linearize(arm, q, u, tau)
    f = fd.rhs(arm)
    x0 = np.concatenate([q, u])
    A = _central_jacobian(lambda x: f(0.0, x, tau), x0)
    B = _central_jacobian(lambda t: f(0.0, x0, t), tau)
    assert lin.A.shape == (2 * arm.nu, 2 * arm.nu) and lin.B.shape == (2 * arm.nu, arm.nu)
    assert rel_err(lin.A, A) < 1e-5
    assert rel_err(lin.B, B) < 1e-5
    A, B, *_ = lin  # a tuple whose first entries are A and B
    assert A is lin.A and B is lin.B


def test_central_differences_on_the_engine(arm):
    """``derivative="central"`` (the compiled engine) agrees with the exact complex steps to
    its truncation and round-off, on the arm and on the free-flying spacecraft (quaternion
    tangents); ``B`` (affine in τ) to round-off."""
    rng = np.random.default_rng(5)
    q = 0.3 * rng.standard_normal(arm.nq)
    u, tau = rng.standard_normal(arm.nu), rng.standard_normal(arm.nu)
    sc = fd.models.spacecraft()
    for model, args in ((arm, (q, u, tau)),
                        (sc, (sc.neutral_configuration(), np.linspace(-1, 1, sc.nu)))):
        exact = linearize(model, *args)
        fast = linearize(model, *args, derivative="central")
        assert rel_err(fast.A, exact.A) < 1e-7 and rel_err(fast.B, exact.B) < 1e-10
    with pytest.raises(ValueError, match="unknown derivative 'forward'"):
        linearize(arm, q, derivative="forward")


def test_spacecraft_rigid_modes_and_elastic_frequencies():
    """The free-floating spacecraft at rest: six rigid-body modes (twelve zero eigenvalues
    of ``A``) and elastic frequencies of ``A`` equal to the assembled eigenproblem."""
    sc = fd.models.spacecraft()
    lin = linearize(sc, sc.neutral_configuration())
    lam = np.linalg.eigvals(lin.A)
    scale = np.max(np.abs(lam))
    zero = np.abs(lam) <= 1e-9 * scale
    assert zero.sum() >= 12
    assert np.max(np.abs(lam[~zero].real)) <= 1e-9 * scale  # undamped: ±iω
    from_A = np.sort(np.abs(lam[~zero].imag))[::2] / (2 * np.pi)
    modes = modal_analysis(sc)
    assert modes.rigid.sum() == 6 and modes.n_rigid == 6 and not modes.unstable.any()
    assert rel_err(from_A, modes.frequencies[~modes.rigid]) < 1e-8
    # the per-body (cantilever) frequencies are not the assembled ones
    per_body = np.concatenate(fd.models.modal_frequencies(sc))
    assert rel_err(np.sort(per_body)[:3], modes.frequencies[6:9]) > 1e-3
    # M-normalised shapes with K φ = ω² M φ
    phi = modes.shapes[modes.free]
    assert rel_err(phi.T @ modes.M @ phi, np.eye(phi.shape[1])) < 1e-10
    assert rel_err(modes.K @ phi, modes.M @ phi * modes.omega_squared, 1.0) < 1e-8


def test_modal_analysis_prints_a_summary():
    """``repr`` of a modal analysis is one line for the console: the counts and the lowest
    frequencies (6 rigid-body modes of the free spacecraft, shown as 0), not the arrays."""
    modes = modal_analysis(fd.models.spacecraft())
    text = repr(modes)
    k, nu = modes.frequencies.size, modes.shapes.shape[0]
    assert text.startswith(f"ModalAnalysis({k} modes over {nu} of {nu} speeds: 6 rigid, "
                           "0 unstable; frequencies [0, 0, 0, 0, 0, 0, ")
    assert "array" not in text and "\n" not in text and len(text) < 200
    assert text.endswith(", …] Hz)") == (k > 8)


def test_locked_modes_equal_the_per_body_eigenproblem(arm):
    """With every joint held and the arm straight, the first link's modes are its own (the
    links' modes couple through the payload and the others, so only the assembled set of a
    single link compares): a one-body model."""
    one = fd.Model.from_dict({**arm.to_dict(), "bodies": arm.to_dict()["bodies"][:1]})
    modes = modal_analysis(one, joints="locked")
    assert not modes.rigid.any()
    assert rel_err(modes.frequencies, fd.models.modal_frequencies(one)[0]) < 1e-10
    free = modal_analysis(one, joints="free")  # vertical axis: the joint is a rigid mode
    assert free.rigid.sum() == 1
    with pytest.raises(ValueError, match="no body 'elbow'"):
        modal_analysis(one, joints=["elbow"])
    with pytest.raises(ValueError, match="joints must be"):
        modal_analysis(one, joints="clamped")


def test_free_rigid_body_spin_matches_euler_equations():
    """A torque-free body spinning at ``Ω`` about its principal axis 3: the speeds' block of
    ``A`` has the eigenvalues ``±iΩ √((I₃ − I₁)(I₃ − I₂)/(I₁ I₂))`` (Euler's equations); the
    tangent rotation obeys ``δ̇ = ω + ½ δ × ω`` (``R = R₀ exp(δ)`` in the body frame), so
    ``∂δ̇/∂δ = −½ Ω̂``, and the position ``δ̇_p = v + δ × v``."""
    I1, I2, I3, Om = 2.0, 3.0, 5.0, 1.7
    body = (fd.ModelBuilder("top").add_body(
        "top", joint={"type": "free"},
        rigid={"mass": 4.0, "inertia": np.diag([I1, I2, I3])}).build())
    rng = np.random.default_rng(0)
    Q = rng.standard_normal(4)
    q = np.concatenate([Q / np.linalg.norm(Q), rng.standard_normal(3)])
    v = rng.standard_normal(3)
    u = np.concatenate([[0.0, 0.0, Om], v])
    lin = linearize(body, q, u)
    assert lin.state_names[:6] == ["top.rx", "top.ry", "top.rz", "top.px", "top.py", "top.pz"]
    A_w = lin.A[6:9, 6:9]
    nutation = Om * math.sqrt((I3 - I1) * (I3 - I2) / (I1 * I2))
    lam = np.sort_complex(np.linalg.eigvals(A_w))
    assert np.allclose(lam, np.sort_complex([-1j * nutation, 0.0, 1j * nutation]), atol=1e-12)
    w_hat = np.array([[0, -Om, 0], [Om, 0, 0], [0, 0, 0]])
    assert np.allclose(lin.A[:3, :3], -w_hat / 2, atol=1e-14)
    assert np.allclose(lin.A[:3, 6:9], np.eye(3), atol=1e-14)
    v_hat = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    assert np.allclose(lin.A[3:6, :3], -v_hat, atol=1e-13)
    assert np.allclose(lin.A[3:6, 9:12], np.eye(3), atol=1e-14)


def test_four_bar_closed_chain_pendulum_frequency():
    """A parallelogram four-bar hanging in gravity (cranks of length ``L``, masses ``m₁``,
    ``m₂`` with inertias ``I_k`` about their pivots, a coupler of mass ``m_c`` that only
    translates): one degree of freedom, ``ω² = g (m₁ L/2 + m₂ L/2 + m_c L) / (I₁ + I₂ +
    m_c L²)``; the linearization projected on the closures has two states and ``±iω``."""
    L, d, g = 1.2, 0.8, 9.81
    m1, m2, mc = 1.0, 1.5, 0.7
    rod = lambda m: {"mass": m, "com": [0, -L / 2, 0],  # noqa: E731
                     "inertia": np.diag([m * L**2 / 12, 0.0, m * L**2 / 12])}
    b = fd.ModelBuilder("four-bar", gravity=(0.0, -g, 0.0))
    b.add_body("crank1", joint={"type": "revolute", "axis": [0, 0, 1]}, rigid=rod(m1))
    b.add_body("coupler", "crank1", joint={
        "type": "revolute", "axis": [0, 0, 1],
        "placement": {"rotation": np.eye(3), "translation": [0, -L, 0]}},
        rigid={"mass": mc, "com": [d / 2, 0, 0], "inertia": np.diag([0.01, 0.02, 0.03])})
    b.add_body("crank2", joint={
        "type": "revolute", "axis": [0, 0, 1],
        "placement": {"rotation": np.eye(3), "translation": [d, 0, 0]}}, rigid=rod(m2))
    b.add_constraint("loop", "pin", "coupler", "crank2", point=[d, 0, 0],
                     other_point=[0, -L, 0], axis=[0, 0, 1])
    four = b.build()
    lin = linearize(four, np.zeros(3))
    assert lin.A.shape == (2, 2) and lin.basis.shape == (6, 2)
    I_piv = lambda m: m * L**2 / 3  # noqa: E731
    omega = math.sqrt(g * (m1 * L / 2 + m2 * L / 2 + mc * L) / (I_piv(m1) + I_piv(m2)
                                                                + mc * L**2))
    lam = np.linalg.eigvals(lin.A)
    assert rel_err(np.sort(lam.imag), np.array([-omega, omega])) < 1e-10
    assert np.max(np.abs(lam.real)) < 1e-10 * omega
    # what does not handle closures yet says so instead of answering for the open tree
    with pytest.raises(ValueError, match="loop closures .loop."):
        modal_analysis(four)
    with pytest.raises(ValueError, match="loop closures .loop."):
        equilibrium(four)


def _rotating_cantilever() -> tuple[fd.Model, float]:
    model = fd.models.spinup_beam(n_elements=40, n_bending=4, n_axial=3)
    mu, L, EI = 12.0 / 10.0, 10.0, 1.4004e4
    return model, math.sqrt(EI / (mu * L**4))


@pytest.mark.parametrize("Om_bar, published", [(0.0, 3.5160), (1.0, 3.6817), (2.0, 4.1373),
                                               (3.0, 4.7973)])
def test_rotating_cantilever_frequency(Om_bar, published):
    """The spin-up beam spinning at ``Ω = Ω̄ √(EI/μL⁴)``, the hub prescribed: the steady
    stretched state (:func:`equilibrium`) and the linearization about it.  The lowest
    in-plane frequency obeys ``ω_c² = ω_f² − Ω²`` with the published flapwise frequencies
    of a rotating cantilever (zero hub radius; Wright et al. 1982, Hodges & Rutkowski 1981:
    ``ω̄_f = 3.5160, 3.6817, 4.1373, 4.7973`` at ``Ω̄ = 0 … 3``), to the mesh's 0.1 % (40
    elements, four bending and three stretch modes: the stretch modes carry the centrifugal
    tension that stiffens the beam)."""
    model, unit = _rotating_cantilever()
    Om = Om_bar * unit
    steady = equilibrium(model, spin={"beam": Om})
    hub = {"beam": lambda t: (np.array([Om * t]), np.array([Om]), np.zeros(1))}
    lin = linearize(model, steady.q, steady.u, prescribed=hub)
    assert lin.A.shape == (14, 14)  # the hub's two entries left out
    assert "beam.theta" not in lin.state_names[0]
    lam = np.linalg.eigvals(lin.A)
    omega = np.sort(np.abs(lam.imag[lam.imag > 0]))[0]
    expected = math.sqrt(published**2 - Om_bar**2) * unit
    assert abs(omega / expected - 1) < 1e-3


def test_cantilever_sag_converges_to_beam_theory():
    """A horizontal aluminium cantilever sagging under gravity: the equilibrium tip
    deflection tends to ``μ g L⁴ / (8 EI)`` as elements are refined."""
    mu, EI = _tube(0.02, 0.002)
    L, g = 1.0, 9.81
    errors = []
    for n in (2, 4, 8):
        beam = beam_modes(L, mu, EI_y=EI, n_elements=n, n_modes=n)
        model = (fd.ModelBuilder("cantilever", gravity=(0, 0, -g))
                 .add_body("beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build())
        eq = equilibrium(model)
        pos = linearize(model, eq.q, outputs=["beam.tip.deflection"])
        assert pos.output_names == [f"beam.node[{n}].deflection.{c}" for c in "xyz"]
        sag = -model.bodies[0].Pi_t[-1][2] @ model.eta(eq.q, 0)
        errors.append(abs(sag / (mu * g * L**4 / (8 * EI)) - 1))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-2


def test_spinning_bar_stretch_converges_to_the_closed_form():
    """A bar spinning at ``Ω`` about a perpendicular axis through its root stretches by
    ``u(L) = μ Ω² L³ / (3 EA)`` (the steady state of :func:`equilibrium` with the joint's
    rate given)."""
    mu, L, EA, Om = 2.0, 3.0, 5e5, 4.0
    errors = []
    for n in (4, 8, 16):
        beam = beam_modes(L, mu, EA=EA, n_elements=n, n_modes=n)
        model = (fd.ModelBuilder("bar").add_body(
            "bar", joint={"type": "revolute", "axis": [0, 0, 1]},
            flex=beam.to_flex_dict()).build())
        steady = equilibrium(model, spin={"bar": Om}, fidelity="full")
        stretch = model.bodies[0].Pi_t[-1][0] @ model.eta(steady.q, 0)
        errors.append(abs(stretch / (mu * Om**2 * L**3 / (3 * EA)) - 1))
        assert abs(steady.tau[0]) < 1e-9  # no torque holds a steady spin
    assert errors[0] / errors[1] > 3.5 and errors[1] / errors[2] > 3.5  # O(h²): lumped masses
    assert errors[2] < 3e-3


def test_equilibrium_errors():
    sc = fd.models.spacecraft()
    falling = fd.Model.from_dict({**sc.to_dict(), "gravity": [0, 0, -9.81]})
    with pytest.raises(ValueError, match="no equilibrium found"):
        equilibrium(falling)
    with pytest.raises(ValueError, match=r"spin\['hub'\]: expected 6"):
        equilibrium(sc, spin={"hub": 1.0})
    with pytest.raises(ValueError, match="held: no body 'boom'"):
        equilibrium(sc, held=["boom"])


def test_max_stable_step_brackets_rk4(arm):
    """Classical RK4 with fixed steps on the arm, from a small perturbation of its straight
    pose at rest (gravity off): bounded at 0.9 × ``max_stable_step``, blown up at 1.1 ×."""
    model = three_link_arm(gravity=0.0)
    h = max_stable_step(model, "rk4")
    top = modal_analysis(model).frequencies[-1]
    assert abs(h * 2 * np.pi * top / (2 * math.sqrt(2)) - 1) < 1e-6  # the highest mode sets it
    f = fd.rhs(model)
    rng = np.random.default_rng(1)
    x0 = np.concatenate([np.zeros(model.nq), 1e-6 * rng.standard_normal(model.nu)])

    def run(step: float) -> float:
        x = x0.copy()
        for _ in range(300):
            k1 = f(0, x)
            k2 = f(0, x + step / 2 * k1)
            k3 = f(0, x + step / 2 * k2)
            k4 = f(0, x + step * k3)
            x = x + step / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if np.max(np.abs(x)) > 1.0:
                return math.inf  # blown up (before the dynamics fail on it)
        return float(np.max(np.abs(x[model.nq:])))

    assert run(0.9 * h) < 1e-3  # stays near its start (1e-6; energy moves between modes)
    assert run(1.1 * h) == math.inf


def test_stability_polynomials():
    """The imaginary-axis limits of the classical methods (Hairer & Wanner IV.2): RK4 reaches
    ``2√2``; explicit Euler none; implicit methods have no limit."""
    assert abs(step_limit("rk4", [1j]) - 2 * math.sqrt(2)) < 1e-9
    assert step_limit("euler", [1j]) < 1e-5
    assert abs(step_limit("euler", [-1.0]) - 2.0) < 1e-9
    assert abs(step_limit("rk4", [-1.0]) - 2.785293563405) < 1e-9
    assert step_limit("Radau", [1j]) == math.inf
    assert 3.0 < step_limit("RK45", [-1.0]) < 3.4
    with pytest.raises(ValueError, match="no stability polynomial"):
        step_limit("leapfrog", [1j])


def test_simulate_warns_when_stiffness_limits_the_steps():
    """DOP853 at loose tolerances on the arm swinging slowly under gravity: its steps pile up
    at the stability limit of the stiff links, and it says so with the frequency; the
    default integrator (Radau IIA there) and a rigid pendulum do not."""
    model = three_link_arm(gravity=9.81)
    with pytest.warns(fd.StiffnessWarning, match=r"stiffest mode \(470\.\d Hz"):
        fd.simulate(model, t_span=(0.0, 1.5),
                    integrator=fd.ScipyIVP("DOP853", rtol=1e-3, atol=1e-3))
    # the default integrator takes this model implicitly, without the warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", fd.StiffnessWarning)
        assert fd.simulate(model, t_span=(0.0, 1.5), integrator=fd.Auto(rtol=1e-3, atol=1e-3)
                           ).settings["integrator"] == "radau-iia"
    pend = (fd.ModelBuilder("p", gravity=(0, -9.81, 0)).add_body(
        "p", joint={"type": "revolute", "axis": [0, 0, 1]},
        rigid={"mass": 1.0, "com": [1, 0, 0], "inertia": np.eye(3) * 0.01}).build())
    with warnings.catch_warnings():
        warnings.simplefilter("error", fd.StiffnessWarning)
        fd.simulate(pend, np.array([0.3]), t_span=(0.0, 20.0))


def test_outputs_and_errors(arm):
    rng = np.random.default_rng(2)
    q = 0.2 * rng.standard_normal(arm.nq)
    q[arm.nq_joint.sum():] = 0.0
    lin = linearize(arm, q, outputs=["link1.theta", "link3.tip", "link2.node[2].deflection"])
    assert lin.C.shape == (7, 2 * arm.nu)
    assert lin.output_names[0] == "link1.theta"
    assert np.array_equal(lin.C[0], np.eye(2 * arm.nu)[0])
    # the tip's output rows against central differences of its position
    def tip(x: np.ndarray) -> np.ndarray:
        pos = fd.compute_kinematics(arm, x[:arm.nq])
        return pos.pose[2].apply(pos.frames[2].p[-1])
    x0 = np.concatenate([q, np.zeros(arm.nu)])
    assert rel_err(lin.C[1:4], _central_jacobian(tip, x0)) < 1e-6
    with pytest.raises(ValueError, match="unknown output 'link9.tip'"):
        linearize(arm, q, outputs=["link9.tip"])
    with pytest.raises(ValueError, match="node 7 out of range for body 'link1'"):
        linearize(arm, q, outputs=["link1.node[7]"])


def test_benchmark_quick():
    """``benchmarks/bench_control.py --quick``: the hand-written central differences of
    ``rhs`` agree with ``linearize`` to their own truncation error."""
    import sys
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if benchmarks not in sys.path:  # the developer instruments are not installed
        sys.path.insert(0, benchmarks)
    import bench_control

    (row,) = bench_control.main(["--quick"])
    assert row["nx"] == 18 and row["fd_error"] < 1e-6 and 0 < row["h_rk4"] < 0.01


def test_the_stability_of_the_pendulum_s_two_equilibria():
    """A rigid pendulum: hanging, the linearization's eigenvalues are ``±iσ`` and the mode
    oscillates at ``σ/2π``; upright, they are ``±σ``, the equilibrium is reported unstable
    (with a warning) and its mode has ``ω² = −σ²``, frequency NaN and growth rate ``σ``,
    with ``σ² = m g l / I_O`` — never a frequency of 0 Hz."""
    p = PENDULUM
    sigma = math.sqrt(p["m"] * p["g"] * p["l"] / (p["I_c"] + p["m"] * p["l"] ** 2))
    model = pendulum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        down = equilibrium(model, np.array([-1.3]))
        hanging = modal_analysis(model, down.q)
    assert abs(down.q[0] + math.pi / 2) < 1e-10 and down.stable
    assert rel_err(np.sort(down.eigenvalues.imag), [-sigma, sigma]) < 1e-9
    assert rel_err(hanging.frequencies, [sigma / (2 * math.pi)]) < 1e-9
    assert not hanging.unstable.any() and hanging.growth_rates[0] == 0.0

    with pytest.warns(RuntimeWarning, match="equilibrium found is unstable"):
        up = equilibrium(model, np.array([1.3]))
    assert abs(up.q[0] - math.pi / 2) < 1e-10 and not up.stable
    assert rel_err(np.sort(up.eigenvalues.real), [-sigma, sigma]) < 1e-9
    with pytest.warns(RuntimeWarning, match=r"unstable equilibrium: 1 mode\(s\) with ω² < 0"):
        upright = modal_analysis(model, up.q)
    assert rel_err(upright.omega_squared, [-sigma**2]) < 1e-9
    assert upright.unstable.tolist() == [True] and np.isnan(upright.frequencies[0])
    assert rel_err(upright.growth_rates, [sigma]) < 1e-9 and upright.n_rigid == 0


def test_an_arm_held_at_the_shoulder_balanced_upright_is_unstable():
    """The two-link arm in gravity with the shoulder held horizontal: from the straight
    configuration (where gravity has no stiffness on the forearm) the solver goes the way
    gravity pulls, to the hanging forearm, which is stable; started near upright it finds the
    balanced forearm, which gravity does not restore, and says so."""
    arm = fd.models.two_link_arm(gravity=(0.0, -9.81, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hanging = equilibrium(arm, held=["link1"])
    assert hanging.stable and hanging.q[arm.q_slice("link2")][0] < -0.1
    # undamped: the eigenvalues are ±iω to round-off
    assert np.max(np.abs(hanging.eigenvalues.real)) < 1e-6 * np.max(np.abs(hanging.eigenvalues))
    q0 = arm.neutral_configuration()
    q0[arm.q_slice("link2")][0] = 1.4
    with pytest.warns(RuntimeWarning, match="unstable"):
        upright = equilibrium(arm, q0, held=["link1"])
    assert not upright.stable and np.max(upright.eigenvalues.real) > 1.0
    assert upright.q[arm.q_slice("link2")][0] > 1.0
