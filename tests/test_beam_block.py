"""The ``beam`` block of model files and the builder: its modal data equals
``beam_modes`` called directly, its frequencies are the Euler–Bernoulli closed forms, a beam
placed along any direction has the dynamics of the same beam along x in a rotated body,
``save_model`` writes the block back, the directions of the modes are explicit.

Independent checks: the closed-form frequencies ``β_r² √(EI/μL⁴)`` of a cantilever
(``1 + cos βL cosh βL = 0``) and ``(2r − 1)π/2L √(EA/μ)`` of a clamped-free rod, with the
section's second moments written out by hand (``b h³ / 12``); the mass matrix of two models
related by a rotation of the body frame.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.__main__ import main
from flexdyn.beam import ALUMINIUM, STEEL, beam_modes, rectangle, tube
from flexdyn.model_file import ModelFileError, beam_summary, normalize_model_dict

#: cantilever roots β_r L of 1 + cos βL cosh βL = 0 (Blevins, Table 8-1)
BETA_L = np.array([1.87510407, 4.69409113, 7.85475744, 10.99554073])
REV_Z = {"type": "revolute", "axis": [0.0, 0.0, 1.0]}


def strip(**beam) -> dict:
    """A 0.8 m aluminium strip, 40 mm along y and 5 mm along z, in the x–y plane."""
    return {"length": 0.8, "material": "aluminium",
            "section": {"shape": "rectangle", "size_y": 0.04, "size_z": 0.005},
            "modes": {"transverse_y": 2, "transverse_z": 1, "axial": 1}, **beam}


def one_beam(beam: dict, name: str = "beam") -> dict:
    return {"name": name, "bodies": [{"name": "arm", "joint": REV_Z, "beam": beam}]}


def flex_of(d: dict) -> dict:
    return normalize_model_dict(d)["bodies"][0]["flex"]


@pytest.mark.parametrize("basis", ["lumped", "natural", "finite"])
def test_beam_block_is_beam_modes(basis):
    """Along x from the origin, the block's flex data are ``beam_modes``' bit for bit."""
    beam = strip(basis=basis, elements=6, damping_ratio=0.02, stiffening=True)
    direct = beam_modes(0.8, material=ALUMINIUM, section=rectangle(size_y=0.04, size_z=0.005),
                        EA=ALUMINIUM.E * 0.04 * 0.005, GJ=None,
                        n_modes={"transverse_y": 2, "transverse_z": 1, "axial": 1},
                        n_elements=6, basis=basis, damping_ratio=0.02)
    flex = flex_of(one_beam(beam))
    for key in ("nodes", "node_masses", "node_inertias", "modes", "stiffness", "damping",
                "geometric_stiffness_1", "geometric_stiffness_2", "axial_modes"):
        np.testing.assert_array_equal(flex[key], getattr(direct, key), err_msg=key)


def test_frequencies_are_the_euler_bernoulli_closed_forms():
    """Natural basis: exactly ``β_r² √(EI/μL⁴)`` with ``EI = E b h³/12`` for the deflection
    across the side ``h`` (``size_y`` for deflection along y), and the rod's
    ``(2r − 1)π/2L √(E/ρ)``; the lumped elements converge to them from below."""
    E, rho, L = ALUMINIUM.E, ALUMINIUM.rho, 0.8
    b_y, b_z = 0.04, 0.005
    mu = rho * b_y * b_z
    EI_along_y = E * b_z * b_y**3 / 12  # deflection along y bends across the 40 mm side
    EI_along_z = E * b_y * b_z**3 / 12
    exact_y = BETA_L[:2] ** 2 * math.sqrt(EI_along_y / (mu * L**4))
    exact_z = BETA_L[:1] ** 2 * math.sqrt(EI_along_z / (mu * L**4))
    exact_ax = math.pi / (2 * L) * math.sqrt(E / rho)
    model = fd.Model.from_dict(one_beam(strip(basis="natural", elements=12)))
    w = np.sqrt(np.diag(model.bodies[0].K))
    expected = np.sort(np.concatenate([exact_y, exact_z, [exact_ax]]))
    np.testing.assert_allclose(w, expected, rtol=1e-7)
    lumped = np.sqrt(np.diag(fd.Model.from_dict(one_beam(strip(elements=40))).bodies[0].K))
    assert np.all(lumped < expected) and np.all(lumped > 0.995 * expected)


def test_swapped_sides_are_named_not_silent():
    """The sides are named by axis: the 40 × 5 mm strip deflecting along y is 64 times
    stiffer than the same strip turned (``(40/5)²`` in EI, 8 in frequency)."""
    flat = one_beam(strip(modes={"transverse_y": 1}))
    turned = one_beam(strip(modes={"transverse_y": 1},
                            section={"shape": "rectangle", "size_y": 0.005, "size_z": 0.04}))
    ratio = math.sqrt(flex_of(flat)["stiffness"][0, 0] / flex_of(turned)["stiffness"][0, 0])
    assert abs(ratio - 8.0) < 1e-9
    r = rectangle(size_y=0.04, size_z=0.005)
    assert r.Iz == pytest.approx(0.005 * 0.04**3 / 12, rel=1e-14)
    assert r.Iy == pytest.approx(0.04 * 0.005**3 / 12, rel=1e-14)
    assert rectangle(0.04, 0.005) == r  # width along y, height along z
    with pytest.raises(ValueError, match="give the sides as size_y= and size_z="):
        rectangle(0.04, size_z=0.005)
    with pytest.raises(ModelFileError, match=r"section has unknown key 'width'"):
        normalize_model_dict(one_beam(strip(section={"shape": "rectangle", "width": 0.04,
                                                     "height": 0.005})))


def test_material_and_section_name_their_mode_directions():
    """With material and section both bending directions are enabled: an integer count
    takes the strip's out-of-plane modes first, which ``families`` names; ``plane`` keeps
    the in-plane ones only."""
    sec = rectangle(size_y=0.04, size_z=0.005)
    mixed = beam_modes(0.8, material=ALUMINIUM, section=sec, n_modes=3)
    assert mixed.families[0] == "transverse_z" and "transverse_y" in mixed.families
    planar = beam_modes(0.8, material=ALUMINIUM, section=sec, n_modes=3, plane="xy")
    assert planar.families == ("transverse_y",) * 3
    rows = planar.modes.reshape(-1, 6, 3)
    assert not np.any(rows[:, [0, 1, 3, 5]])  # no rx, ry, tx, tz: only ty and rz
    with pytest.raises(ValueError, match="out of the plane 'xy'"):
        beam_modes(0.8, material=ALUMINIUM, section=sec, n_modes={"transverse_z": 1},
                   plane="xy")


def test_plane_of_motion_in_the_file():
    flex = flex_of(one_beam(strip(modes={"plane": "xz", "count": 2})))
    rows = flex["modes"].reshape(-1, 6, 2)
    assert np.any(rows[:, 5]) and not np.any(rows[:, [0, 2, 4]])  # tz and ry only


def _rotation(rng) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q * np.sign(np.diag(R))
    return Q if np.linalg.det(Q) > 0 else -Q


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_beam_along_any_direction_is_the_rotated_body(seed):
    """A beam from ``start`` to ``end`` with section axis ``y_axis`` in body B has the mass
    matrix of the same beam along x in body A whose frame is B's turned by
    ``R = [e, y, e × y]`` (joint placement R, joint axis Rᵀ a)."""
    rng = np.random.default_rng(seed)
    R = _rotation(rng)
    start = rng.standard_normal(3)
    a = rng.standard_normal(3)
    a /= np.linalg.norm(a)
    beam = strip(modes={"transverse_y": 1, "transverse_z": 1, "torsion": 1, "axial": 1},
                 elements=4)
    placed = {**beam, "start": start.tolist(), "end": (start + 0.8 * R[:, 0]).tolist(),
              "y_axis": (3.0 * R[:, 1]).tolist()}
    placed.pop("length")
    model_b = fd.Model.from_dict({"name": "b", "bodies": [
        {"name": "arm", "joint": {"type": "revolute", "axis": a.tolist()}, "beam": placed}]})
    along_x = {**beam, "start": (R.T @ start).tolist()}
    model_a = fd.Model.from_dict({"name": "a", "bodies": [
        {"name": "arm", "joint": {"type": "revolute", "axis": (R.T @ a).tolist(),
                                  "placement": {"rotation": R.tolist()}},
         "beam": along_x}]})
    q = rng.standard_normal(model_a.nq)
    np.testing.assert_allclose(fd.mass_matrix(model_b, q, backend="reference"),
                               fd.mass_matrix(model_a, q, backend="reference"),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model_b.bodies[0].nodes[-1], start + 0.8 * R[:, 0], atol=1e-12)


def test_save_model_writes_the_block_back(tmp_path):
    d = one_beam(strip(material={"E": 200e9, "rho": 7800.0, "nu": 0.3},
                       section={"shape": "tube", "outer_radius": 0.02, "wall": 0.002},
                       modes={"transverse_y": 2, "torsion": 1}))
    model = fd.Model.from_dict(d)
    path = tmp_path / "beam.json"
    fd.save_model(model, path)
    text = path.read_text()
    written = json.loads(text)["bodies"][0]
    assert "flex" not in written and '"modes": [' not in text
    assert written["beam"]["material"] == {"E": 200e9, "rho": 7800.0, "nu": 0.3}
    assert written["beam"]["section"] == {"shape": "tube", "outer_radius": 0.02, "wall": 0.002}
    again = fd.load_model(path)
    assert again.to_dict() == model.to_dict()
    np.testing.assert_array_equal(again.bodies[0].K, model.bodies[0].K)


def test_builder_takes_a_beam_block():
    beam = strip(modes={"transverse_y": 2}, elements=5)
    built = (fd.ModelBuilder("arm").add_body("upper", joint=REV_Z, beam=beam)
             .add_body("tool", "upper", joint={**REV_Z, "parent_node": "tip"},
                       rigid={"mass": 0.5, "inertia": np.eye(3) * 1e-3}).build())
    assert built.parent_node[1] == 5
    assert built.to_dict()["bodies"][0]["beam"]["elements"] == 5
    with pytest.raises(ValueError, match="is a beam block"):
        fd.ModelBuilder("x").add_body("b", joint=REV_Z, beam=beam).add_payload("b", 1.0)


def test_steel_tube_block_matches_the_helpers():
    """Material by name and a tube: the same data as ``beam_modes`` with STEEL and tube."""
    d = one_beam({"length": 1.2, "material": "steel",
                  "section": {"shape": "tube", "outer_radius": 0.03, "wall": 0.003},
                  "modes": {"transverse_y": 1, "transverse_z": 1, "torsion": 1},
                  "boundary": "free-free", "elements": 8})
    direct = beam_modes(1.2, material=STEEL, section=tube(0.03, 0.003),
                        n_modes={"transverse_y": 1, "transverse_z": 1, "torsion": 1},
                        boundary="free-free", n_elements=8)
    np.testing.assert_array_equal(flex_of(d)["modes"], direct.modes)


BAD_BEAMS = [
    ({"material": "alumnium"}, r"'alumnium' is not a built-in material .*did you mean "
                               r"'aluminium'"),
    ({"material": {"E": 1e9}}, r"beam.material is missing the required key 'rho'"),
    ({"material": {"E": 1e9, "rho": 1e3, "G": 1e8, "nu": 0.3}}, "gives G and nu"),
    ({"section": {"shape": "square", "size_y": 1}}, r"section.shape must be one of"),
    ({"section": {"shape": "tube", "outer_radius": 0.01, "wall": 0.02}}, "thicker"),
    ({"section": {"A": 1e-4, "Iy": 1e-9, "Iz": 1e-9}}, r"missing the required key 'J'"),
    ({"section": {"shape": "circle", "radius": 0.01, "wall": 0.001}},
     r"section.wall does not belong to a circle"),
    ({"modes": {"bending_y": 2}}, r"modes has unknown key 'bending_y'"),
    ({"modes": {"transverse_y": 0}}, "selects no modes"),
    ({"modes": {"plane": "yz", "count": 2}}, r"plane must be one of xy, xz"),
    ({"modes": {"plane": "xy", "count": 2, "torsion": 1}}, "both a plane and counts"),
    ({"modes": {"transverse_y": 40}},
     r"beam: modes\['transverse_y'\]=40 exceeds the 20 transverse_y .* elements=10"),
    ({"length": -1.0}, r"beam.length must be positive"),
    ({"end": [1, 0, 0]}, "gives end and length"),
    ({"y_axis": [1, 1, 0]}, "y_axis is not perpendicular"),
    ({"axis": [0, 0, 0]}, "axis is the zero vector"),
    ({"basis": "modal"}, r"basis must be one of lumped, natural, finite"),
    ({"damping_ratio": [0.1]}, r"damping_ratio has 1 entries, expected one per mode = 4"),
    ({"stiffening": "yes"}, "stiffening must be true or false"),
    ({"colour": "red"}, r"beam has unknown key 'colour'"),
]


@pytest.mark.parametrize(("change", "match"), BAD_BEAMS, ids=[m[:30] for _, m in BAD_BEAMS])
def test_bad_beam_blocks_are_named(change, match):
    with pytest.raises(ModelFileError, match=match) as info:
        normalize_model_dict(one_beam(strip(**change)))
    assert 'bodies[0] "arm": beam' in str(info.value)


def test_torsion_needs_a_shear_modulus():
    with pytest.raises(ModelFileError, match="needs a shear modulus"):
        normalize_model_dict(one_beam(strip(material={"E": 1e9, "rho": 1e3},
                                            modes={"torsion": 1})))


def test_beam_and_flex_together_are_refused():
    d = one_beam(strip())
    d["bodies"][0]["flex"] = {"nodes": [[0, 0, 0]], "node_masses": [1.0]}
    with pytest.raises(ModelFileError, match="gives beam and flex; give one"):
        normalize_model_dict(d)


def test_info_prints_the_beam_frequencies(tmp_path, capsys):
    d = one_beam(strip(basis="natural", modes={"transverse_y": 1}))
    lines = beam_summary(d)
    exact = BETA_L[0] ** 2 * math.sqrt(ALUMINIUM.E * 0.005 * 0.04**3 / 12 / (
        ALUMINIUM.rho * 0.04 * 0.005 * 0.8**4)) / (2 * math.pi)
    assert lines[0].startswith("beam blocks")
    assert f"{exact:.6g} (transverse_y)" in lines[1] and "aluminium, rectangle" in lines[1]
    path = tmp_path / "strip.json"
    path.write_text(json.dumps(d))
    assert main(["info", str(path)]) == 0
    assert f"{exact:.6g} (transverse_y)" in capsys.readouterr().out
    assert beam_summary(fd.models.two_link_arm().to_dict()) == []
