"""Tests of the built-in models (flexdyn.models), their shipped model files and of the
energy/momentum helpers they are checked with."""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from flexdyn import models
from flexdyn.energy import energies
from strategies import random_state


def node_momentum(model, q, u, eps=1e-6):
    """Momentum ``[h; p]`` of all mass points (rigid parts and nodes, with their rotary
    inertias) from node positions and orientations differentiated along ``q̇`` — no use of
    the recursions' velocities."""
    qd = model.qdot(q, u)

    def points(qq):
        kin = fd.compute_kinematics(model, qq)
        out = []
        for i, b in enumerate(model.bodies):
            pose = kin.pose[i]
            if b.mass:
                out.append((b.mass, pose.apply(b.com), pose.R, b.inertia))
            fr = kin.frames[i]
            for j in range(b.n_nodes):
                out.append((b.node_masses[j], pose.apply(fr.p[j]), pose.R @ fr.R[j],
                            b.node_inertias[j]))
        return out

    h, p = np.zeros(3), np.zeros(3)
    for (m, x, R, J), (_, xp, Rp, _), (_, xm, Rm, _) in zip(
            points(q), points(q + eps * qd), points(q - eps * qd), strict=True):
        v = (xp - xm) / (2 * eps)
        W = (Rp - Rm) / (2 * eps) @ R.T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        p += m * v
        h += m * np.cross(x, v) + R @ J @ R.T @ w
    return np.concatenate([h, p])


BUILDERS = [models.two_link_arm, models.spacecraft, models.spinup_beam,
            lambda: models.spacecraft(array_joint="revolute")]


# ----------------------------------------------------------------------------------------------
# shipped model files
# ----------------------------------------------------------------------------------------------
def test_list_builtin_models():
    assert models.list_builtin_models() == sorted(models.BUILTIN_MODELS)
    with pytest.raises(KeyError, match="available"):
        models.builtin_model("no_such_model")


@pytest.mark.parametrize("name", sorted(models.BUILTIN_MODELS))
def test_shipped_file_equals_builder(name):
    built = models.BUILTIN_MODELS[name]()
    shipped = models.builtin_model(name)
    assert shipped.name == built.name == name
    assert (shipped.nq, shipped.nu, shipped.names) == (built.nq, built.nu, built.names)
    q, u, _ = random_state(built, np.random.default_rng(7), eta_scale=0.05)
    # The files were written from these builders, so the data agree bit for bit.  Only a
    # LAPACK that orders its floating-point operations differently can change the last bits
    # of the computed mode shapes; then the comparison falls back to a tight tolerance.
    exact = built.to_dict() == shipped.to_dict()
    for fidelity in fd.FIDELITIES:
        pairs = [(fd.mass_matrix(shipped, q, fidelity), fd.mass_matrix(built, q, fidelity)),
                 (fd.bias_forces(shipped, q, u, fidelity),
                  fd.bias_forces(built, q, u, fidelity))]
        for a, b in pairs:
            if exact:
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())


# ----------------------------------------------------------------------------------------------
# two-link arm
# ----------------------------------------------------------------------------------------------
def test_two_link_arm_structure():
    m = models.two_link_arm(n_modes=2, n_elements=6, payload_mass=0.7)
    assert m.names == ("link1", "link2")
    assert [j.type for j in m.joints] == ["revolute", "revolute"]
    assert m.nq == m.nu == 6 and m.n_modes.tolist() == [2, 2]
    assert m.parent.tolist() == [-1, 0]
    assert m.parent_node[1] == m.bodies[0].n_nodes - 1
    np.testing.assert_array_equal(m.gravity, 0.0)
    link1, link2 = m.bodies
    # planar: the modes only move ty and rotate about z
    for b in m.bodies:
        assert np.all(b.Pi_t[:, [0, 2], :] == 0) and np.all(b.Pi_r[:, :2, :] == 0)
    # payload on link 2's tip node
    bare = models.two_link_arm(n_modes=2, n_elements=6, payload_mass=0.0)
    assert link2.node_masses[-1] - bare.bodies[1].node_masses[-1] == pytest.approx(0.7)
    assert link1.total_mass == pytest.approx(2.0 * 2.0 + 2.0)  # beam + hub
    # the elbow sits at link 1's tip
    kin = fd.compute_kinematics(m, m.neutral_configuration())
    np.testing.assert_allclose(kin.pose[1].p, [2.0, 0.0, 0.0], atol=1e-15)


def test_two_link_arm_first_frequency():
    # bare link 1 (hub at the clamped node): 3.516 sqrt(EI / (mu L^4)) within 2 %
    m = models.two_link_arm(n_elements=12, n_modes=2)
    from flexdyn.models import modal_frequencies

    f1 = modal_frequencies(m)[0][0]
    exact = 3.5160 * np.sqrt(300.0 / (2.0 * 2.0**4)) / (2 * np.pi)
    assert f1 == pytest.approx(exact, rel=0.02)


def test_two_link_arm_gravity_and_validation():
    m = models.two_link_arm(gravity=(0.0, -9.81, 0.0))
    np.testing.assert_array_equal(m.gravity, [0.0, -9.81, 0.0])
    with pytest.raises(ValueError, match="length1"):
        models.two_link_arm(length1=-1.0)
    with pytest.raises(ValueError, match="gravity"):
        models.two_link_arm(gravity=(0.0, 1.0))


# ----------------------------------------------------------------------------------------------
# spacecraft
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("array_joint", ["fixed", "revolute"])
def test_spacecraft_structure(array_joint):
    m = models.spacecraft(array_joint=array_joint, hub_size=2.0, array_length=8.0)
    assert m.names == ("hub", "array_pos", "array_neg")
    assert m.joints[0].type == "free"
    assert [j.type for j in m.joints[1:]] == [array_joint] * 2
    nj = 1 if array_joint == "revolute" else 0
    assert m.nq == 7 + 2 * (nj + 4) and m.nu == 6 + 2 * (nj + 4)
    np.testing.assert_array_equal(m.gravity, 0.0)
    kin = fd.compute_kinematics(m, m.neutral_configuration())
    for i, sign in ((1, 1.0), (2, -1.0)):
        tip = kin.pose[i].apply(m.bodies[i].nodes[-1])
        np.testing.assert_allclose(tip, [0.0, sign * 9.0, 0.0], atol=1e-14)
    # 3D appendages: both bending directions and torsion among the modes
    b = m.bodies[1]
    assert np.any(b.Pi_t[:, 1]) and np.any(b.Pi_t[:, 2]) and np.any(b.Pi_r[:, 0])
    assert sum(bb.total_mass for bb in m.bodies) == pytest.approx(1000.0 + 2 * 24.0)
    with pytest.raises(ValueError, match="array_joint"):
        models.spacecraft(array_joint="spherical")


# ----------------------------------------------------------------------------------------------
# spin-up beam
# ----------------------------------------------------------------------------------------------
def test_spinup_beam_data():
    m = models.spinup_beam(n_axial=1)  # the paper's three modes
    (b,) = m.bodies
    assert m.joints[0].type == "revolute" and m.nq == m.nu == 4
    assert b.total_mass == pytest.approx(12.0)
    assert b.nodes[-1, 0] == pytest.approx(10.0)
    # two bending modes (ty) then one stretch mode (tx)
    assert np.any(b.Pi_t[:, 1, 0]) and np.any(b.Pi_t[:, 1, 1]) and not np.any(b.Pi_t[:, 0, :2])
    assert np.any(b.Pi_t[:, 0, 2]) and not np.any(b.Pi_t[:, 1, 2])
    # mass-normalised, frequencies near the Euler-Bernoulli values
    np.testing.assert_allclose(b.M_m0[:3, :3], np.eye(3), atol=1e-12)
    w = np.sqrt(np.diag(b.K))
    mu, EI, EA, L = 1.2, 1.4004e4, 3.1724e7, 10.0
    assert w[0] == pytest.approx(1.87510**2 * np.sqrt(EI / (mu * L**4)), rel=0.01)
    assert w[1] == pytest.approx(4.69409**2 * np.sqrt(EI / (mu * L**4)), rel=0.02)
    assert w[2] == pytest.approx(np.pi / 2 * np.sqrt(EA / (mu * L**2)), rel=0.01)
    # rigid inertia about the pin: sum of the lumped masses' m x², close to m L² / 3
    I_rigid = models.rigid_hub_inertia(m)
    assert I_rigid == pytest.approx(float(b.node_masses @ b.nodes[:, 0] ** 2), rel=1e-12)
    assert I_rigid == pytest.approx(400.0, rel=0.01)
    assert models.spinup_beam(n_axial=0, n_bending=3).n_modes.tolist() == [3]
    with pytest.raises(ValueError):
        models.spinup_beam(n_axial=1, EA=None)


def test_spinup_profile():
    T, W = 15.0, 6.0
    th, thd, thdd = models.spinup_profile(0.0)
    assert (th, thd, thdd) == (0.0, 0.0, 0.0)
    th, thd, thdd = models.spinup_profile(T)
    assert th == pytest.approx(W * T / 2) and thd == pytest.approx(W) and thdd == 0.0
    th, thd, thdd = models.spinup_profile(20.0)
    assert th == pytest.approx(W * T / 2 + 5 * W) and thd == W and thdd == 0.0
    t = np.linspace(0.1, 14.9, 50)
    th, thd, thdd = models.spinup_profile(t)
    np.testing.assert_allclose(thd, W * (t / T - np.sin(2 * np.pi * t / T) / (2 * np.pi)))
    h = 1e-5
    thp, thdp, _ = models.spinup_profile(t + h)
    thm, thdm, _ = models.spinup_profile(t - h)
    np.testing.assert_allclose((thp - thm) / (2 * h), thd, atol=1e-8)
    np.testing.assert_allclose((thdp - thdm) / (2 * h), thdd, atol=1e-8)
    # other T and final rate
    _, thd, _ = models.spinup_profile(2.0, T=4.0, omega_s=1.0)
    assert thd == pytest.approx(0.5)


def test_spinup_torque():
    m = models.spinup_beam()
    tau = models.spinup_torque(m)
    q, u = m.neutral_configuration(), np.zeros(m.nu)
    for t in (0.0, 3.0, 7.5, 16.0):
        out = tau(t, q, u)
        assert out.shape == (m.nu,)
        assert out[0] == pytest.approx(models.rigid_hub_inertia(m) * models.spinup_profile(t)[2])
        assert np.all(out[1:] == 0.0)
    assert tau(7.5, q, u)[0] == pytest.approx(402.0 * 2 * 6.0 / 15.0)
    # the torque's scalar arithmetic against the profile's array arithmetic, on both sides of
    # the start and the end, for another duration and rate
    tau = models.spinup_torque(m, T=4.0, omega_s=2.5)
    times = np.concatenate([[-1.0, -1e-12, 0.0, 1e-9, 4.0 - 1e-12, 4.0, 4.0 + 1e-12, 9.0],
                            np.linspace(0.0, 4.0, 97)])
    got = np.array([tau(t, q, u)[0] for t in times])
    want = models.rigid_hub_inertia(m) * models.spinup_profile(times, T=4.0, omega_s=2.5)[2]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)
    with pytest.raises(ValueError, match="T=0"):
        models.spinup_torque(m, T=0.0)


# ----------------------------------------------------------------------------------------------
# momentum and energies of the built-in models
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("builder", BUILDERS)
def test_momentum_matches_mass_points(builder):
    m = builder()
    q, u, _ = random_state(m, np.random.default_rng(3), eta_scale=0.1)
    P = fd.momentum(m, q, u)
    assert P.shape == (6,)
    np.testing.assert_allclose(P, node_momentum(m, q, u), rtol=0, atol=1e-8 * np.abs(P).max())
    assert np.all(fd.momentum(m, q, np.zeros(m.nu)) == 0.0)


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_energies_match(builder, fidelity):
    m = builder()
    q, u, _ = random_state(m, np.random.default_rng(5), eta_scale=0.1)
    T, V = energies(m, q, u, fidelity)
    assert T == pytest.approx(fd.kinetic_energy(m, q, u, fidelity), rel=1e-12)
    assert V == pytest.approx(fd.potential_energy(m, q, fidelity), rel=1e-12, abs=1e-12)
    M = fd.mass_matrix(m, q, fidelity)
    assert T == pytest.approx(0.5 * u @ M @ u, rel=1e-10)


def test_shuttle_arm_matches_table_2():
    """Damaren & Sharf's Shuttle arm: Table 2's masses, the booms' stiffnesses (the upper
    boom's first cantilever frequency is the paper's 37.2 rad/s), six modes per boom, the
    rigid links' pitch inertia about their joints."""
    model = fd.models.shuttle_arm()
    assert model.names == ("shoulder_yaw", "upper_boom", "lower_boom", "wrist_pitch",
                           "wrist_yaw", "wrist_roll", "payload")
    masses = [b.total_mass for b in model.bodies]
    np.testing.assert_allclose(masses, [95.0, 138.0, 85.0, 8.0, 44.0, 41.0, 15000.0],
                               rtol=1e-12)
    assert list(model.n_modes) == [0, 6, 6, 0, 0, 0, 0] and model.nu == 18
    upper = fd.models.modal_frequencies(model)[1] * 2 * np.pi
    assert upper[0] == pytest.approx(37.2, abs=0.05)
    # wrist pitch link: 8 kg, 0.5 m, 0.76 kg m² about its joint (Table 2)
    link = model.bodies[3]
    assert link.inertia[1, 1] + link.mass * 0.25**2 == pytest.approx(0.76, rel=1e-12)
    assert all(b.K1 is not None for b in model.bodies[1:3])


def test_shuttle_maneuvers():
    """Maneuver I: the torques are the inverse dynamics of Eq 33's profile for the rigid arm
    — checked against an arm built of rigid bodies with the booms' mass properties (rods:
    ``m l²/3`` about the joint, Table 2); maneuver II: Eq 34's step torques."""
    model = fd.models.shuttle_arm()
    tau, T = fd.models.shuttle_maneuver(model, "I-f")
    assert T == 20.0
    builder = fd.ModelBuilder("rigid shuttle arm")
    parent, length = None, 0.0
    for name, L, m, j_roll, j_end, axis in fd.models.SHUTTLE_LINKS:
        joint = {"type": "revolute", "axis": list(axis)}
        if parent is not None:
            joint["placement"] = {"translation": [length, 0.0, 0.0]}
        j_com = j_end - m * (L / 2) ** 2
        builder.add_body(name, parent, joint=joint,
                         rigid={"mass": m, "com": [L / 2, 0.0, 0.0],
                                "inertia": np.diag([j_roll, j_com, j_com]).tolist()})
        parent, length = name, L
    m_p, j_r, j_p, j_y = fd.models.SHUTTLE_PAYLOAD
    builder.add_body("payload", parent, joint={"type": "fixed", "placement": {
        "translation": [length, 0.0, 0.0]}}, rigid={"mass": m_p, "com": [0.0, 0.0, 0.0],
                                                    "inertia": np.diag([j_r, j_p, j_y]).tolist()})
    rigid = builder.build()
    u_joints = [int(model.u_start[i]) for i in range(6)]
    for t in (2.0, 7.5, 13.0):
        theta = 0.4 * (t / T - np.sin(2 * np.pi * t / T) / (2 * np.pi))
        rate = 0.4 * (1 - np.cos(2 * np.pi * t / T)) / T
        accel = 0.4 * 2 * np.pi / T * np.sin(2 * np.pi * t / T) / T
        expected = fd.inverse_dynamics(rigid, np.full(6, theta), np.full(6, rate),
                                       np.full(6, accel))
        np.testing.assert_allclose(tau(t, None, None)[u_joints], expected, rtol=2e-3,
                                   atol=1e-6 * np.abs(expected).max())
    assert not np.any(tau(T, None, None))
    step, T = fd.models.shuttle_maneuver(model, "II-s")
    np.testing.assert_allclose(step(29.0, None, None)[u_joints],
                               [200.0, 350.0, 200.0, 100.0, 50.0, 1.0])
    assert not np.any(step(30.0, None, None))
    with pytest.raises(ValueError, match="unknown maneuver 'III'"):
        fd.models.shuttle_maneuver(model, "III")
    with pytest.raises(ValueError, match="six revolute joints"):
        fd.models.shuttle_maneuver(fd.models.two_link_arm(), "I-f")


@pytest.mark.slow
def test_shuttle_figures_quick_run_shows_the_foreshortening_of_fig_6():
    """1 s of maneuver I-f (benchmarks/shuttle_figures.py --quick): the exact model's booms
    foreshorten as they bend (Damaren & Sharf Fig 6), the inconsistent model's barely
    stretch, and the stiffened booms bend less."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import shuttle_figures as sf

    full, exact = (sf.simulate(sf.spec("I-f", f), 1.0, 21, 600.0) for f in ("full", "exact"))
    assert full["outcome"] == exact["outcome"] == "done"
    for b, length in enumerate((6.4, 7.0)):  # the upper and the lower boom
        bend_full = np.max(np.linalg.norm(full["tips"][:, b, 1:], axis=1))
        bend_exact = np.max(np.linalg.norm(exact["tips"][:, b, 1:], axis=1))
        assert bend_exact < 0.9 * bend_full
        # foreshortening: a cantilever bent by δ shortens by about 0.6 δ² / L
        assert np.min(exact["tips"][:, b, 0]) < -0.2 * bend_exact ** 2 / length
        assert np.max(np.abs(full["tips"][:, b, 0])) < 0.1 * np.max(
            np.abs(exact["tips"][:, b, 0]))
