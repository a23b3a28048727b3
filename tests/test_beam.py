"""Tests for flexdyn.beam: lumped-mass modal data of uniform beams."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.beam import BeamModes, beam_modes, frame_element_stiffness

# Damaren-Sharf spin-up beam (planar).
DS_MASS = 12.0  # kg
DS_L = 10.0  # m
DS_MU = DS_MASS / DS_L  # kg/m
DS_EI = 1.4004e4  # N m^2
DS_EA = 3.1724e7  # N

CANTILEVER_BL = np.array([1.875104, 4.694091, 7.854757, 10.995541])
FREE_FREE_BL = np.array([4.730041, 7.853205, 10.995608])

ELEMENT_COUNTS = (10, 20, 40)


def bending_exact(beta_l: np.ndarray, EI: float, mu: float, L: float) -> np.ndarray:
    return beta_l**2 * np.sqrt(EI / (mu * L**4))


def rod_exact(n: int, stiffness: float, inertia_per_length: float, L: float) -> np.ndarray:
    i = np.arange(1, n + 1)
    return (2 * i - 1) * np.pi / (2 * L) * np.sqrt(stiffness / inertia_per_length)


def relative_errors(freqs_by_n: list[np.ndarray], exact: np.ndarray) -> np.ndarray:
    return np.array([(f - exact) / exact for f in freqs_by_n])


def check_convergence(err: np.ndarray) -> None:
    """Lumped-mass frequencies lie below the exact ones and converge as 1/n^2."""
    assert np.all(err < 0.0)
    abs_err = np.abs(err)
    assert np.all(np.diff(abs_err, axis=0) < 0.0)
    # Doubling the element count divides the error by about four.
    ratios = abs_err[:-1] / abs_err[1:]
    assert np.all((ratios > 3.5) & (ratios < 4.5)), ratios


def mass_matrix_from_nodes(b: BeamModes) -> np.ndarray:
    """Lumped mass matrix rebuilt independently, rows [rx,ry,rz,tx,ty,tz] per node."""
    n = b.nodes.shape[0]
    M = np.zeros((6 * n, 6 * n))
    for j in range(n):
        M[6 * j : 6 * j + 3, 6 * j : 6 * j + 3] = b.node_inertias[j]
        M[6 * j + 3 : 6 * j + 6, 6 * j + 3 : 6 * j + 6] = b.node_masses[j] * np.eye(3)
    return M


def assembled_stiffness(b: BeamModes, **stiff: float | None) -> np.ndarray:
    n = b.nodes.shape[0]
    h = b.nodes[1, 0] - b.nodes[0, 0]
    ke = frame_element_stiffness(h, **{k: (v or 0.0) for k, v in stiff.items()})
    K = np.zeros((6 * n, 6 * n))
    for e in range(n - 1):
        K[6 * e : 6 * e + 12, 6 * e : 6 * e + 12] += ke
    return K


def rigid_body_motions(nodes: np.ndarray) -> np.ndarray:
    """(6n, 6) nodal motions of the 6 rigid-body velocities (3 translations, 3 rotations)."""
    n = nodes.shape[0]
    R = np.zeros((6 * n, 6))
    for k in range(3):
        R[3 + k :: 6, k] = 1.0  # translation along axis k
        w = np.zeros(3)
        w[k] = 1.0
        R[k::6, 3 + k] = 1.0  # rotation rows
        v = np.cross(w, nodes)  # omega x x_j
        for c in range(3):
            R[3 + c :: 6, 3 + k] = v[:, c]
    return R


def node_rows(modes: np.ndarray, dof: int) -> np.ndarray:
    """Rows of one nodal DOF (0..5 = rx, ry, rz, tx, ty, tz) of all nodes."""
    return modes[dof::6, :]


# ---------------------------------------------------------------------------
# element
# ---------------------------------------------------------------------------


def test_element_stiffness_symmetric_with_rigid_null_space() -> None:
    h = 0.7
    ke = frame_element_stiffness(h, EA=3.0, GJ=2.0, EI_y=5.0, EI_z=7.0)
    np.testing.assert_allclose(ke, ke.T)
    nodes = np.array([[0.0, 0.0, 0.0], [h, 0.0, 0.0]])
    R = rigid_body_motions(nodes)
    np.testing.assert_allclose(ke @ R, 0.0, atol=1e-12)
    eig = np.linalg.eigvalsh(ke)
    assert np.sum(np.abs(eig) < 1e-9 * eig.max()) == 6
    assert np.all(eig > -1e-9 * eig.max())


@pytest.mark.parametrize(
    ("load_dof", "rot_dof", "EI_kw", "rot_sign"),
    [(4, 2, "EI_z", +1.0), (5, 1, "EI_y", -1.0)],
)
def test_element_tip_load_signs(load_dof: int, rot_dof: int, EI_kw: str, rot_sign: float) -> None:
    """Cantilevered element, tip force P: w = P L^3/(3EI), slope P L^2/(2EI).

    rz = +d(ty)/dx and ry = -d(tz)/dx.
    """
    L, EI, P = 2.0, 3.0, 0.5
    ke = frame_element_stiffness(L, **{EI_kw: EI})
    free = [6 + load_dof, 6 + rot_dof]
    f = np.array([P, 0.0])
    u = np.linalg.solve(ke[np.ix_(free, free)], f)
    np.testing.assert_allclose(u[0], P * L**3 / (3 * EI))
    np.testing.assert_allclose(u[1], rot_sign * P * L**2 / (2 * EI))


# ---------------------------------------------------------------------------
# frequencies vs analytic solutions
# ---------------------------------------------------------------------------


def test_damaren_sharf_cantilever_bending_convergence() -> None:
    exact = bending_exact(CANTILEVER_BL, DS_EI, DS_MU, DS_L)
    freqs = [
        beam_modes(DS_L, DS_MU, EI_z=DS_EI, EA=DS_EA, n_elements=n, n_modes=4).frequencies
        for n in ELEMENT_COUNTS
    ]
    err = relative_errors(freqs, exact)
    check_convergence(err)
    # Measured: 10 el. [-0.46, -1.56, -2.55, -3.57] %, 20 el. [-0.11, -0.40, -0.65, -0.91] %,
    # 40 el. [-0.029, -0.099, -0.16, -0.23] %.
    assert np.all(np.abs(err[0]) < [0.006, 0.017, 0.027, 0.037])
    assert np.all(np.abs(err[1]) < [0.0015, 0.005, 0.007, 0.01])
    assert np.all(np.abs(err[2]) < [0.0004, 0.0012, 0.002, 0.0025])


def test_damaren_sharf_first_axial_mode() -> None:
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, EA=DS_EA, n_elements=20, n_modes=30)
    axial = np.abs(node_rows(b.modes, 3)).max(axis=0) > 0.0
    bending = np.abs(node_rows(b.modes, 4)).max(axis=0) > 0.0
    assert not np.any(axial & bending)
    assert np.all(axial | bending)
    first_axial = b.frequencies[np.argmax(axial)]
    exact = rod_exact(1, DS_EA, DS_MU, DS_L)[0]
    assert abs(first_axial - exact) / exact < 5e-4


def test_free_free_bending_convergence() -> None:
    exact = bending_exact(FREE_FREE_BL, DS_EI, DS_MU, DS_L)
    freqs = [
        beam_modes(
            DS_L, DS_MU, EI_z=DS_EI, n_elements=n, n_modes=3, boundary="free-free"
        ).frequencies
        for n in ELEMENT_COUNTS
    ]
    err = relative_errors(freqs, exact)
    check_convergence(err)
    # Measured: 10 el. [-3.0, -4.9, -6.7] %, 20 el. [-0.77, -1.29, -1.80] %,
    # 40 el. [-0.19, -0.33, -0.46] %.
    assert np.all(np.abs(err[0]) < [0.031, 0.05, 0.068])
    assert np.all(np.abs(err[1]) < [0.008, 0.0135, 0.019])
    assert np.all(np.abs(err[2]) < [0.002, 0.0034, 0.0047])


def test_free_free_bending_in_xz_plane_matches_xy_plane() -> None:
    a = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=12, n_modes=3, boundary="free-free")
    b = beam_modes(DS_L, DS_MU, EI_y=DS_EI, n_elements=12, n_modes=3, boundary="free-free")
    np.testing.assert_allclose(a.frequencies, b.frequencies, rtol=1e-12)
    # Same shapes with ty -> tz and rz -> -ry.
    np.testing.assert_allclose(node_rows(b.modes, 5), node_rows(a.modes, 4), atol=1e-12)
    np.testing.assert_allclose(node_rows(b.modes, 1), -node_rows(a.modes, 2), atol=1e-12)


def test_axial_rod_convergence() -> None:
    EA, mu, L = 2.0e6, 3.0, 4.0
    exact = rod_exact(4, EA, mu, L)
    freqs = [beam_modes(L, mu, EA=EA, n_elements=n, n_modes=4).frequencies for n in ELEMENT_COUNTS]
    err = relative_errors(freqs, exact)
    check_convergence(err)
    # Measured: 10 el. [-0.10, -0.92, -2.55, -4.96] %, 20 el. [-0.026, -0.23, -0.64, -1.25] %.
    assert np.all(np.abs(err[0]) < [0.0011, 0.0095, 0.026, 0.05])
    assert np.all(np.abs(err[1]) < [0.0003, 0.0024, 0.0065, 0.0127])


def test_torsional_rod_convergence() -> None:
    GJ, mu, r2, L = 5.0e3, 2.0, 0.01, 3.0
    ip = mu * r2
    exact = rod_exact(4, GJ, ip, L)
    freqs = [
        beam_modes(L, mu, GJ=GJ, polar_inertia_per_length=ip, n_elements=n, n_modes=4).frequencies
        for n in ELEMENT_COUNTS
    ]
    err = relative_errors(freqs, exact)
    check_convergence(err)
    assert np.all(np.abs(err[0]) < [0.0011, 0.0095, 0.026, 0.05])
    assert np.all(np.abs(err[1]) < [0.0003, 0.0024, 0.0065, 0.0127])


# ---------------------------------------------------------------------------
# modal data consistency
# ---------------------------------------------------------------------------

FULL_3D = dict(EI_y=2.0e4, EI_z=1.4e4, EA=3.0e7, GJ=8.0e3, polar_inertia_per_length=0.02)


@pytest.mark.parametrize("boundary", ["cantilever", "free-free"])
@pytest.mark.parametrize(
    "props",
    [
        dict(EI_z=DS_EI, EA=DS_EA),
        FULL_3D,
        dict(EI_y=DS_EI, GJ=1.0e3),  # torsion without polar inertia: massless
    ],
)
def test_mass_normalisation_and_eigen_equations(boundary: str, props: dict) -> None:
    n_el, n_modes = 8, 6
    b = beam_modes(5.0, 2.5, n_elements=n_el, n_modes=n_modes, boundary=boundary, **props)
    n = n_el + 1
    assert b.nodes.shape == (n, 3)
    assert b.node_masses.shape == (n,)
    assert b.node_inertias.shape == (n, 3, 3)
    assert b.modes.shape == (6 * n, n_modes)
    assert b.stiffness.shape == b.damping.shape == (n_modes, n_modes)
    assert b.frequencies.shape == (n_modes,)
    assert np.all(np.diff(b.frequencies) >= 0.0)
    assert np.all(b.frequencies > 0.0)

    M = mass_matrix_from_nodes(b)
    np.testing.assert_allclose(b.modes.T @ M @ b.modes, np.eye(n_modes), atol=1e-10)
    np.testing.assert_allclose(b.stiffness, np.diag(b.frequencies**2), rtol=1e-14)

    stiff = {k: props.get(k) for k in ("EA", "GJ", "EI_y", "EI_z")}
    K = assembled_stiffness(b, **stiff)
    lam = np.diag(b.stiffness)
    np.testing.assert_allclose(b.modes.T @ K @ b.modes, np.diag(lam), atol=1e-8 * lam.max())
    # K Pi = M Pi Lambda on every unconstrained DOF (massless rows: zero force),
    # which also checks the recovered (condensed) rotations.
    constrained = np.zeros(6 * n, dtype=bool)
    for dof, key in ((0, "GJ"), (1, "EI_y"), (2, "EI_z"), (3, "EA"), (4, "EI_z"), (5, "EI_y")):
        if stiff[key] is None:
            constrained[dof::6] = True
    if boundary == "cantilever":
        constrained[:6] = True
        np.testing.assert_array_equal(b.modes[:6], 0.0)
    residual = K @ b.modes - M @ b.modes * lam
    scale = np.abs(K).max() * np.abs(b.modes).max()
    np.testing.assert_allclose(residual[~constrained], 0.0, atol=1e-10 * scale)
    np.testing.assert_array_equal(b.modes[constrained], 0.0)


@pytest.mark.slow
def test_free_free_modes_orthogonal_to_rigid_body_motions() -> None:
    # All 60 elastic modes: with the cross-section rotary inertia each bending plane has
    # 2 x 11 massive DOFs minus 2 rigid motions = 20 modes; 10 axial and 10 torsional.
    b = beam_modes(DS_L, DS_MU, n_elements=10, n_modes=60, boundary="free-free", **FULL_3D)
    M = mass_matrix_from_nodes(b)
    R = rigid_body_motions(b.nodes)
    np.testing.assert_allclose(R.T @ M @ b.modes, 0.0, atol=1e-10)
    kinds = {
        name: np.any(node_rows(b.modes, dof) != 0.0, axis=0)
        for name, dof in (("torsion", 0), ("xz", 5), ("xy", 4), ("axial", 3))
    }
    assert all(k.sum() == (10 if name in ("axial", "torsion") else 20) for name, k in kinds.items())


def test_cantilever_rotations_follow_slopes() -> None:
    """Recovered bending rotations approximate rz = d(ty)/dx and ry = -d(tz)/dx."""
    b = beam_modes(2.0, 1.0, EI_z=10.0, EI_y=10.0, n_elements=80, n_modes=2)
    x = b.nodes[:, 0]
    ty, rz = node_rows(b.modes, 4)[:, 0], node_rows(b.modes, 2)[:, 0]
    tz, ry = node_rows(b.modes, 5)[:, 1], node_rows(b.modes, 1)[:, 1]
    np.testing.assert_allclose(np.gradient(ty, x), rz, atol=2e-2 * np.abs(rz).max())
    np.testing.assert_allclose(-np.gradient(tz, x), ry, atol=2e-2 * np.abs(ry).max())


def test_planar_beam_has_zero_out_of_plane_rows() -> None:
    b = beam_modes(DS_L, DS_MU, EI_z=1.4e4, n_elements=10, n_modes=4)
    for dof in (0, 1, 3, 5):  # rx, ry, tx, tz
        np.testing.assert_array_equal(node_rows(b.modes, dof), 0.0)
    assert np.all(np.abs(node_rows(b.modes, 4)).max(axis=0) > 0.0)
    assert np.all(np.abs(node_rows(b.modes, 2)).max(axis=0) > 0.0)  # rotations filled


def test_torsion_without_polar_inertia_gives_zero_rx_rows() -> None:
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, GJ=1.0e3, n_elements=6, n_modes=3)
    np.testing.assert_array_equal(node_rows(b.modes, 0), 0.0)
    ref = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=6, n_modes=3)
    np.testing.assert_allclose(b.frequencies, ref.frequencies, rtol=1e-12)


def test_equal_bending_stiffnesses_give_pure_plane_modes() -> None:
    b = beam_modes(DS_L, DS_MU, EI_y=DS_EI, EI_z=DS_EI, n_elements=10, n_modes=4)
    np.testing.assert_allclose(b.frequencies[0::2], b.frequencies[1::2], rtol=1e-10)
    # Degenerate pairs: x-y mode first, then x-z mode; each in a single plane.
    for i in range(4):
        ty = np.abs(node_rows(b.modes, 4)[:, i]).max()
        tz = np.abs(node_rows(b.modes, 5)[:, i]).max()
        assert (ty > 0.0 and tz == 0.0) if i % 2 == 0 else (tz > 0.0 and ty == 0.0)


def test_node_data_and_total_mass() -> None:
    n_el, ip = 7, 0.03
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, GJ=1e3, polar_inertia_per_length=ip, n_elements=n_el)
    np.testing.assert_allclose(b.nodes[:, 0], np.linspace(0.0, DS_L, n_el + 1))
    np.testing.assert_array_equal(b.nodes[:, 1:], 0.0)
    np.testing.assert_allclose(b.node_masses.sum(), DS_MASS, rtol=1e-14)
    assert b.total_mass == pytest.approx(DS_MASS, rel=1e-14)
    h = DS_L / n_el
    np.testing.assert_allclose(b.node_masses[[0, -1]], DS_MU * h / 2)
    np.testing.assert_allclose(b.node_masses[1:-1], DS_MU * h)
    np.testing.assert_allclose(b.node_inertias[:, 0, 0].sum(), ip * DS_L, rtol=1e-14)
    # bending-axis rotary inertia Ip/2: the least that satisfies the triangle inequality
    np.testing.assert_allclose(b.node_inertias[:, 1, 1], 0.5 * b.node_inertias[:, 0, 0])
    np.testing.assert_allclose(b.node_inertias[:, 2, 2], 0.5 * b.node_inertias[:, 0, 0])
    off = b.node_inertias.copy()
    for a in range(3):
        off[:, a, a] = 0.0
    np.testing.assert_array_equal(off, 0.0)
    np.testing.assert_allclose(b.mass_matrix(), mass_matrix_from_nodes(b))


def test_sign_convention_and_reproducibility() -> None:
    kwargs = dict(EI_z=DS_EI, EI_y=2 * DS_EI, EA=DS_EA, n_elements=9, n_modes=6)
    for boundary in ("cantilever", "free-free"):
        a = beam_modes(DS_L, DS_MU, boundary=boundary, **kwargs)
        b = beam_modes(DS_L, DS_MU, boundary=boundary, **kwargs)
        np.testing.assert_array_equal(a.modes, b.modes)
        trans = a.modes.reshape(-1, 6, a.n_modes)[:, 3:, :].reshape(-1, a.n_modes)
        mag = np.abs(trans)
        # Largest translational component (first one in row order on near-ties,
        # e.g. the two ends of an antisymmetric free-free mode) is positive.
        k = np.argmax(mag >= (1.0 - 1e-6) * mag.max(axis=0), axis=0)
        assert np.all(trans[k, np.arange(a.n_modes)] > 0.0)
    # Cantilever bending: tip deflection of the first mode is positive.
    c = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=10, n_modes=1)
    assert c.modes[6 * 10 + 4, 0] > 0.0


def test_damping() -> None:
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=10, n_modes=3, damping_ratio=0.02)
    np.testing.assert_allclose(b.damping, np.diag(0.04 * b.frequencies))
    z = [0.01, 0.02, 0.05]
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=10, n_modes=3, damping_ratio=z)
    np.testing.assert_allclose(b.damping, np.diag(2 * np.array(z) * b.frequencies))
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=10, n_modes=3)
    np.testing.assert_array_equal(b.damping, 0.0)


def test_to_flex_dict_is_json_ready() -> None:
    b = beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=4, n_modes=2, damping_ratio=0.01)
    d = json.loads(json.dumps(b.to_flex_dict()))
    assert set(d) == {"nodes", "node_masses", "node_inertias", "modes", "stiffness", "damping"}
    for key in d:
        np.testing.assert_array_equal(np.array(d[key]), getattr(b, key))


@settings(max_examples=25, deadline=None)
@given(
    length=st.floats(0.5, 20.0),
    mu=st.floats(0.1, 50.0),
    ei=st.floats(1e2, 1e6),
    ea_factor=st.floats(1e1, 1e4),
    n_el=st.integers(2, 12),
    boundary=st.sampled_from(["cantilever", "free-free"]),
)
def test_property_mass_normalised(
    length: float, mu: float, ei: float, ea_factor: float, n_el: int, boundary: str
) -> None:
    b = beam_modes(
        length, mu, EI_z=ei, EA=ea_factor * ei, n_elements=n_el, n_modes=2, boundary=boundary
    )
    M = mass_matrix_from_nodes(b)
    np.testing.assert_allclose(b.modes.T @ M @ b.modes, np.eye(2), atol=1e-9)
    assert b.node_masses.sum() == pytest.approx(mu * length, rel=1e-12)
    if boundary == "free-free":
        R = rigid_body_motions(b.nodes)
        scale = np.sqrt(mu * length) * max(1.0, length)
        np.testing.assert_allclose(R.T @ M @ b.modes, 0.0, atol=1e-9 * scale)


# ---------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(length=0.0), "length"),
        (dict(length=-1.0), "length"),
        (dict(length=float("nan")), "length"),
        (dict(mass_per_length=0.0), "mass_per_length"),
        (dict(mass_per_length=-2.0), "mass_per_length"),
        (dict(EI_z=-1.0), "EI_z"),
        (dict(EI_z=0.0), "EI_z"),
        (dict(EI_y=-1.0), "EI_y"),
        (dict(EA=-5.0), "EA"),
        (dict(GJ=-5.0), "GJ"),
        (dict(EI_z=float("inf")), "EI_z"),
        (dict(polar_inertia_per_length=-0.1), "polar_inertia_per_length"),
        (dict(boundary="pinned"), "boundary"),
        (dict(n_elements=0), "n_elements"),
        (dict(n_elements=2.5), "n_elements"),
        (dict(n_modes=0), "n_modes"),
        (dict(n_modes=12, n_elements=3), r"n_modes=12 exceeds the 3 elastic modes .*n_elements=3"),
        (dict(damping_ratio=-0.1), "damping_ratio"),
        (dict(damping_ratio=[0.1, 0.2]), "damping_ratio"),
        (dict(EI_z=None), "no deformation"),
    ],
)
def test_invalid_arguments(kwargs: dict, match: str) -> None:
    args = dict(length=DS_L, mass_per_length=DS_MU, EI_z=DS_EI, n_elements=10, n_modes=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        beam_modes(**args)


def test_n_modes_limit_free_free_and_massless_torsion() -> None:
    # Free-free bending with 3 elements: 4 massive DOFs - 2 rigid motions = 2 modes.
    beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=3, n_modes=2, boundary="free-free")
    with pytest.raises(ValueError, match="exceeds the 2 elastic modes"):
        beam_modes(DS_L, DS_MU, EI_z=DS_EI, n_elements=3, n_modes=3, boundary="free-free")
    with pytest.raises(ValueError, match="polar_inertia_per_length"):
        beam_modes(DS_L, DS_MU, GJ=1e3, n_elements=3, n_modes=1)


@pytest.mark.parametrize("boundary", ["cantilever", "free-free"])
def test_flexdyn_body_modal_mass_is_identity(boundary: str) -> None:
    """The body model built from the beam data sees M_ff = I (and, free-free, no coupling)."""
    from flexdyn.body import Body

    beam = beam_modes(DS_L, DS_MU, n_elements=6, n_modes=5, boundary=boundary, **FULL_3D)
    flex = {k: np.asarray(v) for k, v in beam.to_flex_dict().items()}
    body = Body.from_spec("beam", None, flex)
    m = beam.n_modes
    M = body.M_m0
    np.testing.assert_allclose(M[:m, :m], np.eye(m), atol=1e-10)
    np.testing.assert_allclose(M[m + 3 :, m + 3 :], DS_MASS * np.eye(3), rtol=1e-12)
    if boundary == "free-free":
        np.testing.assert_allclose(M[:m, m:], 0.0, atol=1e-10)


def test_section_forces_by_modal_superposition_are_the_statics_of_a_tip_load():
    """A cantilever (lumped basis, every in-plane bending mode of its mesh, so that the modes
    span the static response) at its static equilibrium under a small tip force ``P`` along
    y: the section forces by modal superposition of ``section_forces`` are the statics of the
    load at every section, ``Vy = −P`` and ``Mz = −P (L − x)`` (the part before the section
    holds the part after it), and the rows of the stiffnesses the beam lacks are NaN."""
    L, ne, EI = 2.0, 8, 50.0
    beam = beam_modes(L, 1.5, EI_z=EI, n_elements=ne, n_modes={"transverse_y": ne})
    assert beam.section_forces.shape == (ne, 6, ne)
    assert np.all(np.isnan(beam.section_forces[:, [0, 1, 3, 5]]))  # Mx, My, N, Vz
    model = fd.ModelBuilder("cantilever", gravity=(0, 0, 0)).add_body(
        "beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build()
    P = 1e-4
    eq = fd.equilibrium(model, f_nodes={("beam", ne): [0, 0, 0, 0, P, 0]}, fidelity="full")
    result = fd.SimulationResult(t=np.zeros(1), q=eq.q[None], u=np.zeros((1, model.nu)),
                                 model=model)
    x = beam.nodes[:-1, 0]
    Mz = result.modal_superposition("beam", beam.section_forces[:, 2])[0]
    Vy = result.modal_superposition("beam", beam.section_forces[:, 4])[0]
    np.testing.assert_allclose(Mz, -P * (L - x), rtol=1e-6, atol=1e-12 * P * L)
    np.testing.assert_allclose(Vy, -P, rtol=1e-6)
    placed = beam.placed([1.0, 0.0, 0.0], np.eye(3)[:, [1, 2, 0]])
    np.testing.assert_array_equal(placed.section_forces, beam.section_forces)
