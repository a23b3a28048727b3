"""Static equilibria (:func:`flexdyn.equilibrium`) against closed forms: Euler–Bernoulli
cantilevers under gravity and a tip load, slender booms with every body model and basis
(the stiffened model against its own potential-energy minimum, found by a minimizer), and
the branch and stability of what it finds (rigid double pendulum, closed-form ``ω²``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.optimize

import flexdyn as fd
from flexdyn.beam import beam_modes
from flexdyn.modal import modal_analysis
from flexdyn.terms import FIDELITIES
from helpers import PENDULUM, pendulum, rel_err

L, MU, EI, G = 2.0, 1.0, 100.0, 9.81


def clamped_beam(slenderness: float, n_modes: dict, basis: str = "lumped",
                 gravity: float = G, membrane: str = "condensed") -> fd.Model:
    """A beam clamped at its root along x, bending along z under gravity −z, with
    ``EA L²/EI = slenderness`` (``membrane``: the form of its stiffening tensors)."""
    beam = beam_modes(L, MU, EI_y=EI, EA=slenderness * EI / L**2, basis=basis,
                      n_elements=2 if basis == "finite" else 10, n_modes=n_modes,
                      membrane=membrane)
    return (fd.ModelBuilder("boom", gravity=(0.0, 0.0, -gravity))
            .add_body("beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build())


def tip_deflection(model: fd.Model, q: np.ndarray) -> float:
    """The tip's displacement along −z (m)."""
    return -float(model.bodies[0].Pi_t[-1][2] @ model.eta(q, 0))


def imbalance(model: fd.Model, eq: fd.Equilibrium, **loads) -> float:
    """The largest generalized force that holds ``eq`` at rest, recomputed (default
    backend)."""
    return float(np.max(np.abs(fd.inverse_dynamics(model, eq.q, eq.u, np.zeros(model.nu),
                                                   **loads))))


@pytest.mark.parametrize("basis", ["lumped", "natural"])
@pytest.mark.parametrize("load", ["gravity", "tip", "both"])
def test_cantilever_deflection_equals_euler_bernoulli(basis, load):
    """Small loads on the full model: gravity gives ``q L⁴/8EI`` at the tip, a tip force
    ``P L³/3EI`` (through ``f_nodes``, at the last node), both together their sum, to the
    basis' 0.6 % (three bending modes of ten elements or of the continuous beam)."""
    q_load = MU * G if load != "tip" else 0.0
    P = 2e-3 * 3 * EI / L**2 if load != "gravity" else 0.0  # 0.2 % of L at the tip
    model = clamped_beam(8e3, {"transverse_z": 3, "axial": 1}, basis,
                         gravity=G if q_load else 0.0)
    f_nodes = {("beam", -1): [0.0, 0.0, 0.0, 0.0, 0.0, -P]} if P else None
    eq = fd.equilibrium(model, f_nodes=f_nodes, fidelity="full")
    expected = q_load * L**4 / (8 * EI) + P * L**3 / (3 * EI)
    assert abs(tip_deflection(model, eq.q) / expected - 1) < 6e-3
    assert eq.stable and eq.residual <= 1e-9 * max(q_load * L, P, 1.0)
    assert imbalance(model, eq, f_nodes=f_nodes, fidelity="full") < 1e-9


def potential_minimum(model: fd.Model, gravity: np.ndarray) -> np.ndarray:
    """The modal coordinates that minimize the stiffened (exact) model's potential energy
    ``½ ηᵀK0η + K1·η³/3! + K2·η⁴/4! − Σ m_j gᵀ Π_j η`` of a clamped body, by a
    quasi-Newton minimizer polished by a root solve of its gradient."""
    b = model.bodies[0]
    f = sum(m * (P.T @ gravity) for m, P in zip(b.node_masses, b.Pi_t, strict=True))

    def energy(x: np.ndarray) -> float:
        return (0.5 * x @ b.K @ x + ((b.K1 @ x) @ x) @ x / 6
                + (((b.K2 @ x) @ x) @ x) @ x / 24 - f @ x)

    def gradient(x: np.ndarray) -> np.ndarray:
        return b.K @ x + (b.K1 @ x) @ x / 2 + ((b.K2 @ x) @ x) @ x / 6 - f

    x = scipy.optimize.minimize(energy, np.zeros(b.n_modes), jac=gradient, method="BFGS",
                                options={"gtol": 1e-10, "maxiter": 10_000}).x
    sol = scipy.optimize.root(gradient, x, tol=1e-15)
    assert np.max(np.abs(gradient(sol.x))) < 1e-9 * np.max(np.abs(f))
    return sol.x


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("basis", ["lumped", "natural", "finite"])
@pytest.mark.parametrize("n_stretch", [0, 2])
def test_slender_boom_converges_with_every_body_model(fidelity, basis, n_stretch):
    """A gravity-loaded boom of ``EA L²/EI = 8·10⁵`` (slenderness about 900): the
    equilibrium converges for every body model and basis, with and without stretch modes,
    and the imbalance it reports is the one recomputed.  Every model gives beam theory
    (1 %), the exact one at its own potential-energy minimum too."""
    n_modes = {"transverse_z": 3, **({"axial": n_stretch} if n_stretch else {})}
    model = clamped_beam(8e5, n_modes, basis)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eq = fd.equilibrium(model, fidelity=fidelity)
    scale = MU * G * L  # the largest modal gravity force is below it
    assert eq.residual <= 1e-9 * max(scale, 1.0) and eq.stable
    assert imbalance(model, eq, fidelity=fidelity) < 1e-8 * scale
    ratio = tip_deflection(model, eq.q) / (MU * G * L**4 / (8 * EI))
    if fidelity == "exact":
        eta = potential_minimum(model, np.array([0.0, 0.0, -G]))
        assert rel_err(model.eta(eq.q, 0), eta) < 1e-7
    assert abs(ratio - 1) < 1e-2


@pytest.mark.parametrize("n_stretch", [0, 2])
def test_slender_boom_locks_with_the_modal_membrane_energy(n_stretch):
    """Damaren & Sharf's stiffening tensors (``membrane="modal"``) on the same boom: the
    exact model's equilibrium is its potential-energy minimum, which the membrane energy
    that a small stretch basis cannot relax makes more than twice too stiff."""
    n_modes = {"transverse_z": 3, **({"axial": n_stretch} if n_stretch else {})}
    model = clamped_beam(8e5, n_modes, "natural", membrane="modal")
    eq = fd.equilibrium(model, fidelity="exact")
    eta = potential_minimum(model, np.array([0.0, 0.0, -G]))
    assert rel_err(model.eta(eq.q, 0), eta) < 1e-7
    assert tip_deflection(model, eq.q) / (MU * G * L**4 / (8 * EI)) < 0.5


def test_boom_of_slenderness_1e6_with_a_larger_stretch_basis():
    """``EA L²/EI = 10⁶`` with four stretch modes, exact model with the modal membrane energy
    (the stiffer problem): converges to the potential minimum."""
    model = clamped_beam(1e6, {"transverse_z": 3, "axial": 4}, "natural", membrane="modal")
    eq = fd.equilibrium(model)
    eta = potential_minimum(model, np.array([0.0, 0.0, -G]))
    assert rel_err(model.eta(eq.q, 0), eta) < 1e-7 and eq.stable


def test_pendulum_f_ext_torque_and_branch():
    """A rigid pendulum held off the vertical by a constant torque ``M`` about its axis
    (``f_ext``): ``m g l cos θ = M``, on the branch of the start; from the horizontal
    (where gravity has no stiffness) it goes the way gravity pulls, to the bottom."""
    p = PENDULUM
    model = pendulum()
    moment = 0.4 * p["m"] * p["g"] * p["l"]
    f_ext = np.array([[0.0, 0.0, moment, 0.0, 0.0, 0.0]])
    below = fd.equilibrium(model, np.array([-0.5]), f_ext=f_ext)
    assert abs(below.q[0] + math.acos(0.4)) < 1e-8 and below.stable
    with pytest.warns(RuntimeWarning, match="unstable"):
        above = fd.equilibrium(model, np.array([0.5]), f_ext=f_ext)
    assert abs(above.q[0] - math.acos(0.4)) < 1e-8 and not above.stable
    for start in (0.0, -0.3, -2.9):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            hanging = fd.equilibrium(model, np.array([start]))
        assert abs(hanging.q[0] + math.pi / 2) < 1e-8 and hanging.stable


# rigid double pendulum: link lengths, centres of mass, masses, inertias about the centres
L1, C1, C2, M1, M2, I1, I2 = 0.8, 0.45, 0.3, 1.5, 0.7, 0.02, 0.01


def double_pendulum() -> fd.Model:
    """Two rigid links about z in gravity −y; ``θ₂`` relative to link 1."""
    inertia = lambda i: [[i, 0, 0], [0, i, 0], [0, 0, i]]  # noqa: E731
    return (fd.ModelBuilder("double", gravity=(0.0, -G, 0.0))
            .add_body("upper", joint={"type": "revolute", "axis": [0, 0, 1]},
                      rigid={"mass": M1, "com": [C1, 0, 0], "inertia": inertia(I1)})
            .add_body("lower", "upper", joint={
                "type": "revolute", "axis": [0, 0, 1],
                "placement": {"rotation": np.eye(3), "translation": [L1, 0, 0]}},
                rigid={"mass": M2, "com": [C2, 0, 0], "inertia": inertia(I2)})
            .build())


def double_pendulum_omega_squared(sign: float) -> np.ndarray:
    """``ω²`` of the double pendulum about straight down (``sign = 1``) or straight up
    (``−1``): ``det(K − ω² M) = 0`` in the absolute angles, ``M = [[a, b], [b, c]]``,
    ``K = sign · g · diag(m₁c₁ + m₂l₁, m₂c₂)``."""
    a, b, c = I1 + M1 * C1**2 + M2 * L1**2, M2 * L1 * C2, I2 + M2 * C2**2
    k1, k2 = sign * G * (M1 * C1 + M2 * L1), sign * G * M2 * C2
    return np.sort(np.roots([a * c - b**2, -(k1 * c + k2 * a), k1 * k2]).real)


def test_double_pendulum_stays_on_its_branch_and_reports_stability():
    """Started below the horizontal, the double pendulum finds its hanging equilibrium
    (stable, ``ω² > 0``); started near upright, the inverted one, reported unstable with
    both ``ω² < 0`` as in closed form, frequencies NaN, growth rates ``√(−ω²)``, no rigid
    mode — never 0 Hz."""
    model = double_pendulum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        down = fd.equilibrium(model, np.array([-0.35, -0.5]))
        hanging = modal_analysis(model, down.q)
    assert rel_err(down.q, [-math.pi / 2, 0.0], 1.0) < 1e-10 and down.stable
    assert rel_err(hanging.omega_squared, double_pendulum_omega_squared(1.0)) < 1e-9
    assert not hanging.unstable.any() and hanging.n_rigid == 0
    assert rel_err(np.sort(np.abs(down.eigenvalues.imag))[::2],
                   np.sqrt(hanging.omega_squared)) < 1e-9

    with pytest.warns(RuntimeWarning, match="equilibrium found is unstable"):
        up = fd.equilibrium(model, np.array([1.2, 0.3]))
    assert rel_err(up.q, [math.pi / 2, 0.0], 1.0) < 1e-10 and not up.stable
    with pytest.warns(RuntimeWarning, match=r"unstable equilibrium: 2 mode\(s\)"):
        upright = modal_analysis(model, up.q)
    expected = double_pendulum_omega_squared(-1.0)
    assert np.all(expected < 0)
    assert rel_err(upright.omega_squared, expected) < 1e-9
    assert upright.unstable.all() and np.isnan(upright.frequencies).all()
    assert rel_err(upright.growth_rates, np.sqrt(-expected)) < 1e-9 and upright.n_rigid == 0
    assert rel_err(np.sort(up.eigenvalues.real)[2:], np.sort(np.sqrt(-expected))) < 1e-9


def test_free_floating_body_rigid_modes_are_counted():
    """A free-floating flexible body in orbit (no gravity): a hub with a free-free beam
    through it: six rigid-body modes, counted, not unstable; the elastic ones positive."""
    beam = beam_modes(L, MU, EI_y=EI, EI_z=EI, n_elements=4, n_modes=3, boundary="free-free")
    hub = {"mass": 5.0, "com": [0.3, 0.1, 0.0], "inertia": np.diag([0.2, 0.3, 0.4])}
    model = (fd.ModelBuilder("free").add_body("panel", joint={"type": "free"}, rigid=hub,
                                              flex=beam.to_flex_dict()).build())
    modes = modal_analysis(model)
    assert modes.n_rigid == 6 and not modes.unstable.any()
    assert np.all(modes.omega_squared[~modes.rigid] > 0)
    assert np.all(modes.frequencies[modes.rigid] == 0.0)


def test_equilibrium_errors_name_the_load():
    model = clamped_beam(8e3, {"transverse_z": 2})
    with pytest.raises(ValueError, match=r"f_nodes\[\('beam', 20\)\]: node 20 out of range"):
        fd.equilibrium(model, f_nodes={("beam", 20): np.zeros(6)})
    with pytest.raises(ValueError, match=r"f_nodes\[\('beam', -1\)\] must be a finite wrench"):
        fd.equilibrium(model, f_nodes={("beam", -1): np.zeros(3)})
    with pytest.raises(ValueError, match="no equilibrium found from q0: the continuation "
                                         "stopped"):
        fd.equilibrium(fd.Model.from_dict({**fd.models.spacecraft().to_dict(),
                                           "gravity": [0, 0, -9.81]}))


def test_spherical_pendulum_with_unaligned_gravity_hangs_or_balances_by_its_start():
    """A body on a spherical joint, centre of mass and gravity along random unaligned axes:
    started below the pivot's horizontal plane it hangs (centre of mass along gravity,
    stable: the turn about the vertical has no stiffness and stays where it was), started
    above it balances upright (unstable), both in one load step of the quaternion's tangent
    coordinates."""
    from flexdyn.spatial import quat_to_rot

    rng = np.random.default_rng(7)
    com, g = rng.standard_normal(3), rng.standard_normal(3) * 4.0
    model = fd.ModelBuilder("spherical", gravity=tuple(g)).add_body(
        "bob", joint={"type": "spherical"},
        rigid={"mass": 2.0, "com": com.tolist(), "inertia": np.diag([0.1, 0.2, 0.15])}).build()
    cosine = lambda Q: quat_to_rot(Q) @ com @ g / np.linalg.norm(com) / np.linalg.norm(g)  # noqa: E731
    starts = [Q / np.linalg.norm(Q) for Q in rng.standard_normal((6, 4))]
    assert any(cosine(Q) > 0.3 for Q in starts) and any(cosine(Q) < -0.3 for Q in starts)
    for Q in starts:
        if abs(cosine(Q)) < 0.3:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            eq = fd.equilibrium(model, Q)
        hangs = cosine(Q) > 0
        assert abs(cosine(eq.q[:4]) - (1.0 if hangs else -1.0)) < 1e-10
        assert eq.stable == hangs


def test_large_deflection_equals_a_damped_simulation_at_rest():
    """The exact model of a damped boom (ζ = 0.5) under 14 m/s², whose tip sinks by 14 % of
    its length: the equilibrium equals where a simulation from the straight boom
    comes to rest (forward dynamics and an implicit integrator, not the inverse dynamics of
    the solver)."""
    beam = beam_modes(L, MU, EI_y=EI, EA=8e3 * EI / L**2, n_elements=10, damping_ratio=0.5,
                      n_modes={"transverse_z": 3, "axial": 2})
    model = (fd.ModelBuilder("boom", gravity=(0.0, 0.0, -14.0))
             .add_body("beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build())
    eq = fd.equilibrium(model)
    assert tip_deflection(model, eq.q) > 0.13 * L
    res = fd.simulate(model, t_span=(0.0, 12.0), integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    assert np.max(np.abs(res.u[-1])) < 1e-10  # at rest
    assert rel_err(res.q[-1], eq.q) < 1e-9
