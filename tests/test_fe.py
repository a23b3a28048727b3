"""Finite-element components (:mod:`flexdyn.fe`): a lumped frame-element beam assembled here
from :func:`flexdyn.beam.frame_element_stiffness`, in the finite-element DOF order, checked
against the closed forms of its mass properties, against ``beam_modes`` on the same mesh
(the cantilever basis), and against the full model's static solution ``K⁻¹ f`` (a
Craig–Bampton basis with the loaded node on the interface spans it exactly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.beam import beam_modes, frame_element_mass, frame_element_stiffness
from flexdyn.fe import Component, load_component, read_matrix_market
from strategies import models, random_f_ext, random_state

L, MU, EI_Y, EI_Z, EA, GJ, IP, NE = 1.2, 2.5, 40.0, 90.0, 4e5, 30.0, 0.01, 8
#: flexdyn's node rows [rx, ry, rz, tx, ty, tz] in the finite-element order [t; r]
FE_ORDER = [3, 4, 5, 0, 1, 2]


def beam_component(polar_inertia: float = IP, rotated: bool = False) -> Component:
    """The lumped frame-element beam of ``beam_modes``' notes along x (or, ``rotated``, along
    a random direction), assembled here: node masses ``μ h`` (half at the ends), rotary
    inertias ``diag(Ip, Ip/2, Ip/2)`` times the same share, in the finite-element order."""
    h = L / NE
    share = np.full(NE + 1, h)
    share[[0, -1]] = 0.5 * h
    n_dof = 6 * (NE + 1)
    K, M = np.zeros((n_dof, n_dof)), np.zeros((n_dof, n_dof))
    ke = frame_element_stiffness(h, EA=EA, GJ=GJ, EI_y=EI_Y, EI_z=EI_Z)
    order = np.r_[FE_ORDER, 6 + np.array(FE_ORDER)]
    ke = ke[np.ix_(order, order)]
    for e in range(NE):
        K[6 * e:6 * e + 12, 6 * e:6 * e + 12] += ke
    for j, s in enumerate(share):
        M[6 * j:6 * j + 3, 6 * j:6 * j + 3] = MU * s * np.eye(3)
        M[6 * j + 3:6 * j + 6, 6 * j + 3:6 * j + 6] = polar_inertia * s * np.diag([1, .5, .5])
    nodes = np.zeros((NE + 1, 3))
    nodes[:, 0] = np.linspace(0.0, L, NE + 1)
    if rotated:
        R = scipy.linalg.expm(np.cross(np.eye(3), [0.3, -0.7, 0.5]))
        T = scipy.linalg.block_diag(*[R] * (2 * (NE + 1)))
        K, M, nodes = T @ K @ T.T, T @ M @ T.T, nodes @ R.T
    return Component(nodes, scipy.sparse.csr_matrix(M), K, name="beam")


def test_rigid_body_properties_are_the_beams():
    """Mass ``μ L``, centre of mass at ``L/2``, and the inertia about it summed here from the
    node masses and rotary inertias — also for the beam turned to a random direction."""
    rb = beam_component().rigid_body()
    h = L / NE
    x = np.linspace(0.0, L, NE + 1)
    m = np.full(NE + 1, MU * h)
    m[[0, -1]] *= 0.5
    assert rb.mass == pytest.approx(MU * L, rel=1e-14)
    np.testing.assert_allclose(rb.com, [L / 2, 0, 0], atol=1e-14)
    bending = np.sum(m * (x - L / 2) ** 2) + 0.5 * IP * L
    np.testing.assert_allclose(rb.inertia, np.diag([IP * L, bending, bending]), atol=1e-13)
    turned = beam_component(rotated=True)
    R = scipy.linalg.expm(np.cross(np.eye(3), [0.3, -0.7, 0.5]))
    rt = turned.rigid_body()
    np.testing.assert_allclose(rt.com, R @ [L / 2, 0, 0], atol=1e-13)
    np.testing.assert_allclose(rt.inertia, R @ rb.inertia @ R.T, atol=1e-12)
    assert turned.is_lumped()  # translations stay diagonal, rotary blocks turn
    assert "6 rigid-body motions free" in beam_component().info()


@pytest.mark.parametrize("polar_inertia", [IP, 0.0])
def test_cantilever_basis_is_beam_modes_on_the_same_mesh(polar_inertia):
    """Clamped at node 0, the component's four lowest modes are ``beam_modes``' (lumped basis,
    the same mesh and properties): the same frequencies, of the flex block itself and of the
    model built from it, mass-normalized in the body's node masses; without rotary inertia
    the massless rotations are condensed, as ``beam_modes`` condenses them."""
    block = beam_component(polar_inertia).reduce(0, n_modes=4, method="cantilever")
    reference = beam_modes(L, MU, EI_y=EI_Y, EI_z=EI_Z, EA=EA, GJ=GJ,
                           polar_inertia_per_length=polar_inertia or None, n_elements=NE,
                           n_modes=4)
    np.testing.assert_allclose(np.sqrt(np.diag(block["stiffness"])), reference.frequencies,
                               rtol=1e-9)
    model = fd.ModelBuilder("panel").add_body("beam", joint={"type": "fixed"},
                                              flex=block).build()
    np.testing.assert_allclose(fd.models.modal_frequencies(model)[0] * 2 * np.pi,
                               reference.frequencies, rtol=1e-9)
    body = model.bodies[0]
    modal_mass = sum(m * P.T @ P for m, P in zip(body.node_masses, body.Pi_t, strict=True))
    modal_mass += sum(Pr.T @ J @ Pr for J, Pr in zip(body.node_inertias, body.Pi_r,
                                                      strict=True))
    np.testing.assert_allclose(modal_mass, np.eye(4), atol=1e-10)


def test_craig_bampton_gives_the_static_deflection_exactly():
    """A force and a moment at the tip of the beam clamped at node 0: with the tip on the
    interface, two fixed-interface modes and the tip's six constraint modes give the full
    finite-element model's ``K⁻¹ f`` exactly (the constraint modes span the static
    responses to interface loads), the cantilever basis of eight modes only roughly.  The
    same through ``fd.equilibrium`` on the body under a small load (the body's kinematics
    are geometrically exact, so a large load would move the answer by its rotations)."""
    component = beam_component()
    load = np.array([0.0, 3.0, -2.0, 0.5, 0.0, 0.4])  # [f; m] at the tip, N and N m
    K = component.stiffness
    free = np.arange(6, component.n_dof)
    f = np.zeros(component.n_dof)
    f[-6:] = load
    exact = np.zeros(component.n_dof)
    exact[free] = np.linalg.solve(K[np.ix_(free, free)], f[free])
    tip = np.r_[exact[-3:], exact[-6:-3]]  # flexdyn's node order [r; t]
    wrench = np.r_[load[3:], load[:3]]  # [m; f]
    for method, kw, tol in (("craig-bampton", {"interface": [NE], "n_modes": 2}, 1e-10),
                            ("cantilever", {"n_modes": 8}, None)):
        block = component.reduce(0, method=method, **kw)
        rows = block["modes"][6 * NE:6 * NE + 6]
        linear = rows @ np.linalg.solve(block["stiffness"], rows.T @ wrench)
        error = np.max(np.abs(linear - tip)) / np.max(np.abs(tip))
        assert error < 1e-10 if tol else 1e-9 < error < 0.1, (method, error)
        model = fd.ModelBuilder("panel", gravity=(0, 0, 0)).add_body(
            "beam", joint={"type": "fixed"}, flex=block).build()
        eq = fd.equilibrium(model, f_nodes={("beam", NE): 1e-4 * wrench}, fidelity="full")
        body, eta = model.bodies[0], model.eta(eq.q, 0)
        static = np.r_[body.Pi_r[NE] @ eta, body.Pi_t[NE] @ eta]
        np.testing.assert_allclose(static, 1e-4 * linear, rtol=0,
                                   atol=1e-5 * 1e-4 * np.max(np.abs(tip)))


def test_matrix_market_files_are_the_beam():
    """The shipped ``tests/data/fe`` files — this beam's node table (numbered, in reverse
    order, with a header) and its mass and stiffness written by ``scipy.io.mmwrite`` as
    symmetric Matrix Market files — read back as the same component."""
    data = Path(__file__).parent / "data" / "fe"
    read = read_matrix_market(data / "beam_nodes.csv", data / "beam_mass.mtx",
                              data / "beam_stiffness.mtx")
    component = beam_component()
    np.testing.assert_array_equal(read.nodes, component.nodes)
    np.testing.assert_allclose(read.mass, component.mass, rtol=1e-15, atol=0)
    np.testing.assert_allclose(read.stiffness, component.stiffness, rtol=1e-15,
                               atol=1e-15 * np.max(np.abs(component.stiffness)))
    assert read.name == "beam_nodes" and read.is_lumped()
    with pytest.raises(ValueError, match="not a Matrix Market file"):
        read_matrix_market(data / "beam_nodes.csv", data / "beam_nodes.csv",
                           data / "beam_stiffness.mtx")


def l_frame() -> Component:
    """An L-shaped frame in the x–y plane (four elements along x to (0.8, 0, 0), four along
    y to (0.8, 0.6, 0); tube-like sections), lumped masses and rotary inertias, assembled
    here with each element's stiffness turned into the frame's axes."""
    points = np.array([[0.2 * k, 0.0, 0.0] for k in range(5)]
                      + [[0.8, 0.15 * k, 0.0] for k in range(1, 5)])
    n = len(points)
    K, M = np.zeros((6 * n, 6 * n)), np.zeros((6 * n, 6 * n))
    order = np.r_[FE_ORDER, 6 + np.array(FE_ORDER)]
    for e in range(n - 1):
        d = points[e + 1] - points[e]
        h = float(np.linalg.norm(d))
        x = d / h
        R = np.column_stack([x, np.cross([0.0, 0.0, 1.0], x), [0.0, 0.0, 1.0]])  # local → frame
        T = scipy.linalg.block_diag(R, R, R, R)
        ke = frame_element_stiffness(h, EA=2e6, GJ=300.0, EI_y=500.0, EI_z=800.0)[
            np.ix_(order, order)]
        K[6 * e:6 * e + 12, 6 * e:6 * e + 12] += T @ ke @ T.T
        for j, share in ((e, 0.5 * h), (e + 1, 0.5 * h)):
            M[6 * j:6 * j + 3, 6 * j:6 * j + 3] += 1.5 * share * np.eye(3)
            M[6 * j + 3:6 * j + 6, 6 * j + 3:6 * j + 6] += R @ np.diag([2e-3, 1e-3, 1e-3]) \
                * share @ R.T
    return Component(points, M, K, name="L-frame")


@pytest.mark.parametrize("mass", ["lumped", "consistent"])
def test_hub_and_frame_frequencies_converge_to_the_full_model(mass):
    """A rigid hub on a revolute joint about z carrying the L-frame clamped at its node 0:
    the assembled model's natural frequencies (``fd.modal_analysis``: flexdyn's mass matrix
    and stiffness of the body built from the cantilever reduction) against the full
    finite-element model of hub and frame, whose node 0 turns with the hub
    (``scipy.linalg.eigh``): the first six within 0.5 % with twenty modes, and converging
    from above as modes are added (a Ritz basis) — with lumped masses and with the consistent
    element mass (the body's inertia invariants)."""
    frame = l_frame() if mass == "lumped" else consistent_l_frame()
    J_hub = 0.05
    # the full model: the hub angle θ and the DOFs of nodes 1…; node 0 = [0, 0, 0; 0, 0, θ]
    n_dof = frame.n_dof
    T = np.zeros((n_dof, 1 + n_dof - 6))
    T[5, 0] = 1.0
    T[6:, 1:] = np.eye(n_dof - 6)
    K_full, M_full = T.T @ frame.stiffness @ T, T.T @ frame.mass @ T
    M_full[0, 0] += J_hub
    exact = np.sqrt(np.maximum(scipy.linalg.eigh(K_full, M_full, eigvals_only=True), 0.0))
    exact = exact[1:7] / (2 * np.pi)  # the first is the free rotation
    previous = np.full(6, np.inf)
    for n_modes in (6, 12, 20):
        model = fd.ModelBuilder("hub+frame", gravity=(0, 0, 0)).add_body(
            "frame", joint={"type": "revolute", "axis": [0, 0, 1], "child_node": 0},
            rigid={"mass": 1.0, "inertia": np.diag([J_hub, J_hub, J_hub])},
            flex=frame.reduce(0, n_modes=n_modes, method="cantilever")).build()
        modal = fd.modal_analysis(model, fidelity="full")
        assert modal.n_rigid == 1
        got = modal.frequencies[~modal.rigid][:6]
        assert np.all(got >= exact * (1 - 1e-9)) and np.all(got <= previous * (1 + 1e-9))
        previous = got
    np.testing.assert_allclose(previous, exact, rtol=5e-3)


def test_files_and_errors(tmp_path):
    """The ``.npz`` component file round-trips; bad input is named."""
    component = beam_component()
    component.save(tmp_path / "beam.npz")
    back = load_component(tmp_path / "beam.npz")
    np.testing.assert_array_equal(back.mass, component.mass)
    np.testing.assert_array_equal(back.stiffness, component.stiffness)
    assert back.name == "beam" and back.dofs_per_node == 6
    M, K, nodes = component.mass, component.stiffness, component.nodes
    with pytest.raises(ValueError, match="mass must have shape \\(54, 54\\)"):
        Component(nodes, M[:-1, :-1], K)
    asymmetric = K.copy()
    asymmetric[0, 7] += 1.0
    with pytest.raises(ValueError, match="stiffness is not symmetric"):
        Component(nodes, M, asymmetric)
    with pytest.raises(ValueError, match="stiffness is not positive semi-definite"):
        Component(nodes, M, -K)
    with pytest.raises(ValueError, match="dofs_per_node must be 6 or 3"):
        Component(nodes, M, K, dofs_per_node=2)
    with pytest.raises(ValueError, match="attach node 99 is not a node index"):
        component.reduce(99, n_modes=2)
    with pytest.raises(ValueError, match="more than the"):
        component.reduce(0, n_modes=500, method="cantilever")
    with pytest.raises(ValueError, match="give one of n_modes and max_frequency"):
        component.reduce(0, method="cantilever")
    # by frequency: every mode up to it, the same as by their count
    reference = beam_modes(L, MU, EI_y=EI_Y, EI_z=EI_Z, EA=EA, GJ=GJ,
                           polar_inertia_per_length=IP, n_elements=NE, n_modes=6).frequencies
    cut = 0.5 * (reference[3] + reference[4]) / (2 * np.pi)
    by_frequency = component.reduce(0, max_frequency=cut, method="cantilever")
    np.testing.assert_allclose(np.sqrt(np.diag(by_frequency["stiffness"])), reference[:4],
                               rtol=1e-9)
    consistent = M.copy()
    consistent[0, 6] = consistent[6, 0] = 0.1 * M[0, 0]
    assert "consistent mass" in Component(nodes, consistent, K).info()
    assert "inertia_invariants_0" in Component(nodes, consistent, K).reduce(0, n_modes=2)


# ----------------------------------------------------------------------------------------------
# consistent mass: the inertia invariants of the kinetic energy
# ----------------------------------------------------------------------------------------------
def consistent_l_frame() -> Component:
    """:func:`l_frame`'s geometry and stiffness with the consistent element mass
    (:func:`flexdyn.beam.frame_element_mass`, 1.5 kg/m, polar inertia 3e-3 kg m²/m), each
    element turned into the frame's axes."""
    lumped = l_frame()
    points, n = lumped.nodes, lumped.n_nodes
    order = np.r_[FE_ORDER, 6 + np.array(FE_ORDER)]
    M = np.zeros((6 * n, 6 * n))
    for e in range(n - 1):
        d = points[e + 1] - points[e]
        h = float(np.linalg.norm(d))
        x = d / h
        R = np.column_stack([x, np.cross([0.0, 0.0, 1.0], x), [0.0, 0.0, 1.0]])
        T = scipy.linalg.block_diag(R, R, R, R)
        me = frame_element_mass(h, 1.5, 3e-3)[np.ix_(order, order)]
        M[6 * e:6 * e + 12, 6 * e:6 * e + 12] += T @ me @ T.T
    return Component(points, M, lumped.stiffness, name="L-frame (consistent)")


def test_consistent_mass_rigid_body_properties_are_the_frames():
    """The consistent element reproduces rigid motion exactly, so the component's mass, centre
    of mass and inertia are those of two uniform bars (closed forms), and the reduced body's
    ``M_m`` at rest carries them: its rigid block is the spatial inertia about the frame's
    origin, and its total mass is the component's."""
    frame = consistent_l_frame()
    assert not frame.is_lumped()
    rb = frame.rigid_body()
    mu, ip = 1.5, 3e-3
    bars = [(np.array([0.4, 0.0, 0.0]), 0.8, 0), (np.array([0.8, 0.3, 0.0]), 0.6, 1)]
    mass = mu * 1.4
    com = sum(mu * length * c for c, length, _ in bars) / mass
    inertia = np.zeros((3, 3))
    for c, length, axis in bars:
        own = np.full(3, mu * length ** 3 / 12.0)
        own[axis] = ip * length  # the twist about the bar's own axis
        own[2] = mu * length ** 3 / 12.0
        r = c - com
        inertia += np.diag(own) + mu * length * (r @ r * np.eye(3) - np.outer(r, r))
    assert rb.mass == pytest.approx(mass, rel=1e-13)
    np.testing.assert_allclose(rb.com, com, atol=1e-13)
    np.testing.assert_allclose(rb.inertia, inertia, atol=1e-12)
    block = frame.reduce(0, n_modes=6, method="cantilever")
    assert not np.any(block["node_masses"])
    model = fd.ModelBuilder("frame").add_body("frame", joint={"type": "fixed"},
                                              flex=block).build()
    body = model.bodies[0]
    c = np.array([[0, -com[2], com[1]], [com[2], 0, -com[0]], [-com[1], com[0], 0]])
    spatial = np.block([[inertia - mass * c @ c, mass * c], [-mass * c, mass * np.eye(3)]])
    np.testing.assert_allclose(body.M_m0[6:, 6:], spatial, atol=1e-12)
    assert body.total_mass == pytest.approx(mass, rel=1e-13)


def _rotation(axis: np.ndarray, angle) -> np.ndarray:
    """Rodrigues' rotation (complex-analytic in ``angle``)."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def test_consistent_mass_equations_are_the_lagrangian_of_the_finite_element_mass():
    """A rigid link on a revolute joint about a random axis, carrying the consistent L-frame
    (Craig–Bampton: three fixed-interface modes and the constraint modes of its free end) on
    a second revolute joint about another random axis, turned and offset: ``M(q)`` and
    ``c(q, u)`` of both backends against Lagrange's equations of ``T = ½ Wᵀ 𝕄 W`` written here
    from the finite-element mass itself (each node's velocity ``[ω + Π_r η̇; v + ω × (l0 +
    Π_t η) + Π_t η̇]`` in the frame's axes), with complex-step derivatives."""
    rng = np.random.default_rng(7)
    a1, a2 = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 3)))
    R_p, p_p = _rotation(a2[::-1] / np.linalg.norm(a2), 0.7), np.array([0.3, -0.2, 0.1])
    frame = consistent_l_frame()
    block = frame.reduce(0, interface=[8], n_modes=3)
    J1 = np.diag([0.02, 0.03, 0.04])
    model = (fd.ModelBuilder("arm", gravity=(0, 0, 0))
             .add_body("link", joint={"type": "revolute", "axis": a1},
                       rigid={"mass": 2.0, "inertia": J1})
             .add_body("frame", "link", flex=block,
                       joint={"type": "revolute", "axis": a2, "child_node": 0,
                              "placement": {"rotation": R_p, "translation": p_p}})
             .build())
    m = block["stiffness"].shape[0]
    Pi = np.asarray(block["modes"]).reshape(frame.n_nodes, 6, m)
    # the finite-element mass in flexdyn's node rows [r; t]
    order = (6 * np.arange(frame.n_nodes)[:, None] + np.array([3, 4, 5, 0, 1, 2])).ravel()
    mass = frame.mass[np.ix_(order, order)]

    def velocities(q, u):
        """``W`` (6n,) of the frame's nodes and the link's angular velocity."""
        R1 = _rotation(a1, q[0])
        R_F = R1 @ R_p @ _rotation(a2, q[1])
        w_world = a1 * u[0] + R1 @ R_p @ a2 * u[1]
        w, v = R_F.T @ w_world, R_F.T @ np.cross(a1 * u[0], R1 @ p_p)
        eta, eta_dot = q[2:], u[2:]
        W = np.zeros((frame.n_nodes, 6), dtype=complex)
        for j in range(frame.n_nodes):
            p = frame.nodes[j] + Pi[j, 3:] @ eta
            W[j, :3] = w + Pi[j, :3] @ eta_dot
            W[j, 3:] = v + np.cross(w, p) + Pi[j, 3:] @ eta_dot
        return W.ravel(), a1 * u[0]

    def mass_matrix(q):
        cols = [velocities(q, e) for e in np.eye(model.nu)]
        Jw = np.column_stack([c[0] for c in cols])
        Jl = np.column_stack([c[1] for c in cols])
        return Jw.T @ mass @ Jw + Jl.T @ J1 @ Jl  # J1 is about the axis through the origin

    h = 1e-30
    for _ in range(3):
        q = np.r_[rng.uniform(-np.pi, np.pi, 2), 0.02 * rng.normal(size=m)]
        u = np.r_[rng.normal(size=2), 0.5 * rng.normal(size=m)]
        M = mass_matrix(q.astype(complex)).real
        dM = [mass_matrix(q + 1j * h * e).imag / h for e in np.eye(model.nq)]
        c = sum(u[k] * dM[k] @ u for k in range(model.nq)) - 0.5 * np.array(
            [u @ dMk @ u for dMk in dM])
        c[2:] += block["stiffness"] @ q[2:]
        tau = rng.normal(size=model.nu)
        udot = np.linalg.solve(M, tau - c)
        for backend in ("engine", "reference"):
            np.testing.assert_allclose(fd.mass_matrix(model, q, backend=backend), M,
                                       rtol=0, atol=1e-13 * np.max(np.abs(M)))
            np.testing.assert_allclose(fd.bias_forces(model, q, u, backend=backend), c,
                                       rtol=0, atol=1e-12 * np.max(np.abs(c)))
            for method in ("articulated", "articulated-split", "composite"):
                np.testing.assert_allclose(
                    fd.forward_dynamics(model, q, u, tau, method=method, backend=backend), udot,
                    rtol=0, atol=1e-9 * np.max(np.abs(udot)), err_msg=f"{method}, {backend}")


def test_free_floating_spacecraft_with_a_consistent_mass_conserves_energy_and_momentum():
    """A bus on a free joint carrying the consistent L-frame (six cantilever modes), spun
    about a skew axis with the frame vibrating, no gravity: over 5 s (DOP853 at rtol 1e-11)
    the energy and the angular and linear momentum stay constant to 1e-8 relative — the
    inertia terms of the invariants are those of one kinetic energy."""
    block = consistent_l_frame().reduce(0, n_modes=6, method="cantilever")
    model = (fd.ModelBuilder("spacecraft", gravity=(0, 0, 0))
             .add_body("bus", joint={"type": "free"},
                       rigid={"mass": 20.0, "inertia": np.diag([1.0, 1.4, 1.8])})
             .add_body("frame", "bus", flex=block,
                       joint={"type": "fixed", "child_node": 0,
                              "placement": {"translation": [0.4, 0.2, 0.0],
                                            "axis_angle": [1.0, 0.0, 0.0, 0.4]}})
             .build())
    q0 = model.neutral_configuration()
    u0 = np.zeros(model.nu)
    u0[:6] = [0.3, -0.5, 1.1, 0.2, 0.1, -0.3]
    u0[6:] = 0.5 * np.random.default_rng(3).normal(size=6)
    result = fd.simulate(model, q0, u0, (0.0, 5.0), t_eval=[0.0, 2.5, 5.0],
                         integrator=fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-12))
    energy = fd.total_energy(model, result.q, result.u)
    momentum = np.array([fd.momentum(model, q, u) for q, u in zip(result.q, result.u,
                                                                   strict=True)])
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * abs(energy[0])
    assert np.max(np.abs(momentum - momentum[0])) < 1e-8 * np.max(np.abs(momentum[0]))
    assert np.ptp(result.q[:, 7:], axis=0).max() > 1e-3  # the frame does vibrate


def test_invariants_of_point_masses_are_the_lumped_body():
    """The invariants of a mass matrix of point masses (no rotary inertia) give a body that
    is the lumped-node body of the same masses: ``M``, ``c`` and the potential energy under
    gravity, on random modes, at a random state, both backends and every fidelity."""
    from flexdyn.body import InertiaInvariants

    rng = np.random.default_rng(0)
    n, m = 5, 3
    nodes, masses = rng.normal(size=(n, 3)), rng.uniform(1.0, 2.0, n)
    Pi = 0.3 * rng.normal(size=(n, 6, m))
    point_masses = np.zeros((6 * n, 6 * n))
    for j in range(n):
        point_masses[6 * j + 3:6 * j + 6, 6 * j + 3:6 * j + 6] = masses[j] * np.eye(3)
    inv = InertiaInvariants.of(nodes, point_masses, Pi[:, :3], Pi[:, 3:])

    def build(lumped: bool) -> fd.Model:
        flex = {"nodes": nodes, "node_masses": masses if lumped else np.zeros(n),
                "modes": Pi.reshape(6 * n, m), "stiffness": np.diag([10.0, 20.0, 30.0])}
        if not lumped:
            flex |= {f"inertia_invariants_{k}": a for k, a in enumerate((inv.I0, inv.I1, inv.I2))}
        axis = np.array([0.3, 0.5, 0.8]) / np.linalg.norm([0.3, 0.5, 0.8])
        return (fd.ModelBuilder("t", gravity=(0.0, 0.0, -9.81))
                .add_body("a", joint={"type": "revolute", "axis": axis},
                          rigid={"mass": 1.0, "inertia": np.eye(3)})
                .add_body("b", "a", flex=flex, joint={"type": "spherical", "placement": {
                    "translation": [0.5, 0.1, 0.0]}})
                .build())

    lumped, consistent = build(True), build(False)
    q = lumped.neutral_configuration()
    q[0], q[1:5] = 0.4, np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])
    q[5:] = 0.2 * rng.normal(size=m)
    u = rng.normal(size=lumped.nu)
    for backend in ("engine", "reference"):
        for fidelity in ("full", "ruthless"):
            M = fd.mass_matrix(lumped, q, fidelity=fidelity, backend=backend)
            np.testing.assert_allclose(
                fd.mass_matrix(consistent, q, fidelity=fidelity, backend=backend), M,
                rtol=0, atol=1e-14 * np.max(np.abs(M)))
            c = fd.bias_forces(lumped, q, u, fidelity=fidelity, backend=backend)
            np.testing.assert_allclose(
                fd.bias_forces(consistent, q, u, fidelity=fidelity, backend=backend), c,
                rtol=0, atol=1e-14 * np.max(np.abs(c)))
        V = fd.potential_energy(lumped, q, backend=backend)
        assert fd.potential_energy(consistent, q, backend=backend) == pytest.approx(V,
                                                                                    rel=1e-13)


def test_consistent_mass_model_file_round_trip_and_errors(tmp_path):
    """A body with inertia invariants saves and loads to the same equations; incomplete or
    inconsistent invariants are named."""
    block = consistent_l_frame().reduce(0, n_modes=4, method="cantilever")
    model = fd.ModelBuilder("frame", gravity=(0, 0, -9.81)).add_body(
        "frame", joint={"type": "revolute", "axis": [0, 1, 0], "child_node": 0},
        flex=block).build()
    fd.save_model(model, tmp_path / "frame.json")
    loaded = fd.load_model(tmp_path / "frame.json")
    q = np.r_[0.3, 0.01 * np.arange(1, 5)]
    u = np.r_[0.5, 0.1 * np.arange(1, 5)]
    np.testing.assert_array_equal(fd.bias_forces(loaded, q, u), fd.bias_forces(model, q, u))
    partial = dict(block)
    del partial["inertia_invariants_2"]
    with pytest.raises(ValueError, match="inertia_invariants_0 is given without "
                                         "flex.inertia_invariants_2"):
        fd.ModelBuilder("x").add_body("frame", joint={"type": "fixed"}, flex=partial).build()
    bad = dict(block)
    bad["inertia_invariants_2"] = np.array(block["inertia_invariants_2"]) + np.eye(3)[None, None] \
        * np.arange(4)[:, None, None, None]
    with pytest.raises(ValueError, match=r"inertia_invariants_2\[k, l\] must equal"):
        fd.ModelBuilder("x").add_body("frame", joint={"type": "fixed"}, flex=bad).build()
    with pytest.raises(NotImplementedError, match="body 'frame' carries a consistent"):
        fd.coriolis_matrix(model, q, u)


def test_node_motion_and_section_forces_by_modal_superposition():
    """The beam clamped at node 0 under a small tip force ``P`` along y, at its static
    equilibrium (a Craig–Bampton basis with the tip on the interface spans the static
    response): ``node_motion`` gives the tip deflection ``P L³/3EI`` of the frame elements
    (exact at the nodes), and the root element's end forces by modal superposition of the
    element stiffness times the modes are the support's reactions ``Fy = −P``,
    ``Mz = −P L`` (statics)."""
    block = beam_component().reduce(0, interface=[NE], n_modes=2)
    model = fd.ModelBuilder("beam", gravity=(0, 0, 0)).add_body(
        "beam", joint={"type": "fixed"}, flex=block).build()
    P = 1e-3
    eq = fd.equilibrium(model, f_nodes={("beam", NE): [0, 0, 0, 0, P, 0]}, fidelity="full")
    result = fd.SimulationResult(t=np.zeros(1), q=eq.q[None], u=np.zeros((1, model.nu)),
                                 model=model)
    motion = result.node_motion("beam")
    assert motion.shape == (1, NE + 1, 6)
    assert motion[0, -1, 4] == pytest.approx(P * L ** 3 / (3 * EI_Z), rel=1e-6)
    np.testing.assert_array_equal(motion[0, 0], 0.0)  # the clamped node
    body = model.bodies[0]
    ke = frame_element_stiffness(L / NE, EA=EA, GJ=GJ, EI_y=EI_Y, EI_z=EI_Z)
    modes = np.concatenate([np.concatenate([body.Pi_r[j], body.Pi_t[j]]) for j in (0, 1)])
    root = result.modal_superposition("beam", (ke @ modes)[[2, 4]])  # Mz, Fy at node 0
    np.testing.assert_allclose(root[0], [-P * L, -P], rtol=1e-6)
    with pytest.raises(ValueError, match=r"must have shape \(k, 8\)"):
        result.modal_superposition("beam", np.zeros((3, 5)))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(d=models(max_bodies=5, max_modes=4), seed=st.integers(0, 2**32 - 1),
       fidelity=st.sampled_from(fd.FIDELITIES))
def test_random_trees_with_consistent_masses_on_both_backends(d, seed, fidelity):
    """Random trees of every joint kind whose flexible bodies carry, on top of their node
    masses, the invariants of a random coupled mass matrix on their nodes: the engine's mass
    matrix, bias forces, forward dynamics (every method), inverse dynamics and energies equal
    the reference tier's, and ``½ uᵀ M u`` is the kinetic energy."""
    from flexdyn.body import InertiaInvariants

    rng = np.random.default_rng(seed)
    for body in d["bodies"]:
        flex = body.get("flex") or {}
        if not flex.get("modes"):
            continue
        nodes = np.array(flex["nodes"])
        n, m = len(nodes), len(flex["modes"][0])
        Pi = np.array(flex["modes"]).reshape(n, 6, m)
        A = rng.normal(size=(6 * n, 6 * n)) * 0.3
        inv = InertiaInvariants.of(nodes, A @ A.T, Pi[:, :3], Pi[:, 3:])
        flex.update({f"inertia_invariants_{k}": a
                     for k, a in enumerate((inv.I0, inv.I1, inv.I2))})
    model = fd.Model.from_dict(d)
    if not any(b.inertia_invariants is not None for b in model.bodies):
        return
    q, u, udot = random_state(model, rng, eta_scale=0.2)
    tau, f_ext = rng.normal(size=model.nu), random_f_ext(model, rng)
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    scale = np.max(np.abs(M))
    np.testing.assert_allclose(fd.mass_matrix(model, q, fidelity), M, rtol=0,
                               atol=1e-12 * scale)
    c = fd.bias_forces(model, q, u, fidelity, f_ext=f_ext, backend="reference")
    np.testing.assert_allclose(fd.bias_forces(model, q, u, fidelity, f_ext=f_ext), c,
                               rtol=0, atol=1e-11 * (scale + np.max(np.abs(c))))
    ref = fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f_ext, backend="reference")
    np.testing.assert_allclose(fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f_ext),
                               ref, rtol=0, atol=1e-11 * (scale + np.max(np.abs(ref))))
    for method in ("articulated", "articulated-split", "composite"):
        want = np.linalg.solve(M, tau - c)
        np.testing.assert_allclose(
            fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f_ext,
                                method=method), want, rtol=0,
            atol=1e-7 * max(1.0, np.max(np.abs(want))), err_msg=method)
    on_engine, on_reference = (fd.energy.energies(model, q, u, fidelity, backend=b)
                               for b in ("engine", "reference"))
    np.testing.assert_allclose(on_engine, on_reference, rtol=1e-11, atol=1e-11)
    if fidelity != "ruthless":
        assert fd.kinetic_energy(model, q, u, fidelity) == pytest.approx(0.5 * u @ M @ u,
                                                                          rel=1e-11)


def test_solid_element_nodes_with_a_consistent_mass():
    """A component of translational nodes only (``dofs_per_node=3``, as solid elements
    export): a small cube of eight nodes with springs along its edges and face diagonals and
    a consistent mass (linear-bar elements, ``m/6 [[2, 1], [1, 2]]`` per edge and diagonal).
    Reduced at a corner (cantilever modes, every one of the pinned cube), its body has the
    component's rigid-body properties, and a rigid hub carrying it on a revolute joint has
    the full model's frequencies (the basis spans every DOF of the pinned cube)."""
    nodes = np.array([[x, y, z] for x in (0.0, 0.2) for y in (0.0, 0.2) for z in (0.0, 0.2)])
    n = len(nodes)
    K, M = np.zeros((3 * n, 3 * n)), np.zeros((3 * n, 3 * n))
    for a in range(n):
        for b in range(a + 1, n):
            d = nodes[b] - nodes[a]
            length = float(np.linalg.norm(d))
            if length > 0.2 * np.sqrt(2) + 1e-9:  # no body diagonals
                continue
            e = d / length
            k = 5e3 / length * np.outer(e, e)
            m = 0.3 * length / 6.0 * np.eye(3)
            ia, ib = slice(3 * a, 3 * a + 3), slice(3 * b, 3 * b + 3)
            K[ia, ia] += k
            K[ib, ib] += k
            K[ia, ib] -= k
            K[ib, ia] -= k
            M[ia, ia] += 2 * m
            M[ib, ib] += 2 * m
            M[ia, ib] += m
            M[ib, ia] += m
    cube = Component(nodes, M, K, dofs_per_node=3, name="cube")
    assert not cube.is_lumped()
    block = cube.reduce(0, n_modes=3 * (n - 1), method="cantilever")
    J_hub = 0.02
    model = fd.ModelBuilder("hub+cube", gravity=(0, 0, 0)).add_body(
        "cube", joint={"type": "revolute", "axis": [0, 0, 1], "child_node": 0},
        rigid={"mass": 1.0, "inertia": J_hub * np.eye(3)}, flex=block).build()
    rb = cube.rigid_body()
    c = np.array([[0, -rb.com[2], rb.com[1]], [rb.com[2], 0, -rb.com[0]],
                  [-rb.com[1], rb.com[0], 0]])
    spatial = np.block([[rb.inertia - rb.mass * c @ c, rb.mass * c],
                        [-rb.mass * c, rb.mass * np.eye(3)]])
    m_body = model.bodies[0]
    np.testing.assert_allclose(m_body.M_m0[-6:, -6:] - m_body.M_rigid, spatial, atol=1e-12)
    # the full model: the hub angle θ and the translations of nodes 1…; node 0 fixed
    T = np.zeros((3 * n, 1 + 3 * (n - 1)))
    T[3:, 1:] = np.eye(3 * (n - 1))
    # node j moves by θ ẑ × p_j with the hub (node 0 sits on the axis)
    T[:, 0] = np.concatenate([np.cross([0.0, 0.0, 1.0], p) for p in nodes])
    K_full, M_full = T.T @ K @ T, T.T @ M @ T
    M_full[0, 0] += J_hub
    exact = np.sqrt(np.maximum(scipy.linalg.eigh(K_full, M_full, eigvals_only=True), 0.0))
    got = np.sort(fd.modal_analysis(model).frequencies * 2 * np.pi)
    # the hub's turn and the cube's three rotations about its pinned corner (a pin-jointed
    # lattice held at one node) are free: zero in both, to round-off in the full model's
    assert np.sum(got < 1.0) == np.sum(exact < 1.0) == 4
    np.testing.assert_allclose(got[4:], np.sort(exact)[4:], rtol=1e-8)


def test_the_shipped_solar_array_is_what_its_script_writes():
    """``examples/solar_array.npz`` (example 8's finite-element panel) is the component that
    ``examples/make_solar_array.py`` assembles: the same nodes and matrices, a consistent
    mass of 9.5 kg (0.5 kg/m over 19 m of tubes) and six free rigid-body motions."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent / "examples"
    spec = importlib.util.spec_from_file_location("make_solar_array",
                                                  root / "make_solar_array.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    built, shipped = script.solar_array(), load_component(root / "solar_array.npz")
    for a, b in ((built.nodes, shipped.nodes), (built.mass, shipped.mass),
                 (built.stiffness, shipped.stiffness)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.max(np.abs(a)))
    assert shipped.rigid_body().mass == pytest.approx(9.5, rel=1e-12)
    assert shipped.free_motions == 6 and not shipped.is_lumped()
