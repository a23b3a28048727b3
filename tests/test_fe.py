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

import flexdyn as fd
from flexdyn.beam import beam_modes, frame_element_stiffness
from flexdyn.fe import Component, load_component, read_matrix_market

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


def test_hub_and_frame_frequencies_converge_to_the_full_model():
    """A rigid hub on a revolute joint about z carrying the L-frame clamped at its node 0:
    the assembled model's natural frequencies (``fd.modal_analysis``: flexdyn's mass matrix
    and stiffness of the body built from the cantilever reduction) against the full
    finite-element model of hub and frame, whose node 0 turns with the hub
    (``scipy.linalg.eigh``): the first six within 0.5 % with twenty modes, and converging
    from above as modes are added (a Ritz basis)."""
    frame = l_frame()
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
    with pytest.raises(NotImplementedError, match="consistent"):
        Component(nodes, consistent, K).reduce(0, n_modes=2)
