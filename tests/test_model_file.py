"""Tests of flexdyn.model_file: normalisation, round trips and validation messages."""

from __future__ import annotations

import copy
import json
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.model_file import (
    normalize_model_dict,
    read_model_dict,
    to_plain_dict,
    write_model_dict,
)

EYE = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
MODES = [[0.0]] * 8 + [[1.1], [0.0], [0.35], [0.0], [0.0], [0.0], [1.3], [0.0], [1.0], [0.0]]


def example() -> dict[str, Any]:
    """Return a fresh copy of the example of model-format.md."""
    return {
        "format": "flexdyn-model",
        "version": 1,
        "name": "two-link flexible arm",
        "gravity": [0.0, 0.0, -9.81],
        "bodies": [
            {
                "name": "link1",
                "parent": None,
                "joint": {
                    "type": "revolute",
                    "axis": [0, 0, 1],
                    "parent_node": None,
                    "placement": {"translation": [0, 0, 0], "rotation": copy.deepcopy(EYE)},
                    "child_node": 0,
                    "child_placement": {"translation": [0, 0, 0], "rotation": copy.deepcopy(EYE)},
                },
                "rigid": {
                    "mass": 2.0,
                    "com": [0.5, 0, 0],
                    "inertia": [[0.01, 0, 0], [0, 0.2, 0], [0, 0, 0.2]],
                },
                "flex": {
                    "nodes": [[0, 0, 0], [0.5, 0, 0], [1.0, 0, 0]],
                    "node_masses": [0.0, 1.0, 0.5],
                    "node_inertias": None,
                    "modes": copy.deepcopy(MODES),
                    "stiffness": [[40.0]],
                    "damping": [[0.0]],
                },
            },
            {
                "name": "link2",
                "parent": "link1",
                "joint": {
                    "type": "revolute",
                    "axis": [0, 0, 1],
                    "parent_node": 2,
                    "child_node": None,
                },
                "rigid": {
                    "mass": 1.0,
                    "com": [0.4, 0, 0],
                    "inertia": [[0.01, 0, 0], [0, 0.1, 0], [0, 0, 0.1]],
                },
            },
        ],
    }


def rich_model() -> dict[str, Any]:
    """Return a model exercising every joint type, odd floats and non-default values."""
    rng = np.random.default_rng(7)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    rot = q * np.sign(np.linalg.det(q))
    a = rng.normal(size=(3, 3))
    stiff = a @ a.T
    d = example()
    d["gravity"] = [-0.0, 5e-324, -9.80665]
    d["bodies"][0]["flex"]["node_inertias"] = np.stack([np.diag([1e-3, 2e-3, 2.5e-3])] * 3)
    d["bodies"][0]["joint"]["placement"] = {"rotation": rot, "translation": rng.normal(size=3)}
    d["bodies"] += [
        {
            "name": "hub",
            "parent": "link2",
            "joint": {"type": "screw", "axis": [1, 0, 0], "pitch": 0.1},
        },
        {
            "name": "u",
            "parent": "hub",
            "joint": {"type": "universal", "axes": [[1, 0, 0], [0, 1, 0]]},
            "rigid": {"mass": 0.3},
            "flex": {
                "nodes": rng.normal(size=(3, 3)),
                "node_masses": [0.1, 0.2, 0.3],
                "modes": rng.normal(size=(18, 3)),
                "stiffness": stiff,
                "damping": 1e-3 * stiff,
            },
        },
        {
            "name": "pts",
            "parent": "u",
            "joint": {"type": "fixed", "parent_node": 1, "child_node": 0},
            "flex": {"nodes": [[0.1, 0.2, 0.3]], "node_masses": [1.0 / 3.0]},
        },
        {
            "name": "nodeless",
            "parent": "pts",
            "joint": {"type": "cylindrical", "axis": [0, 1, 0]},
            "rigid": {"mass": 1.0},
            "flex": {"nodes": [], "node_masses": [], "modes": [], "stiffness": [[2.0]]},
        },
        {
            "name": "ball",
            "parent": "link1",
            "joint": {"type": "spherical", "parent_node": 1},
            "rigid": {"mass": 0.1, "inertia": np.diag([1.0, 1.0, 2.0])},
        },
        {"name": "float", "parent": None, "joint": {"type": "free"}, "rigid": {"mass": 1.0}},
        {
            "name": "slider",
            "parent": "float",
            "joint": {"type": "prismatic", "axis": [0, 0, -1]},
            "rigid": {"mass": 0.5, "com": [0.1, -0.0, 1e-300]},
        },
    ]
    return d


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Assert that two normalised structures are identical, arrays bit for bit."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype == np.float64, path
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), path
        assert np.array_equal(a, b), path
    else:
        assert type(a) is type(b) and a == b, path


def arrays(obj: Any) -> list[np.ndarray]:
    """Return all numpy arrays inside a nested structure."""
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in arrays(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in arrays(v)]
    return [obj] if isinstance(obj, np.ndarray) else []


def file_round_trip(nd: dict, tmp_path: Path) -> dict:
    """Write ``nd`` through to_plain_dict and JSON, read it back and normalise."""
    path = tmp_path / "model.json"
    write_model_dict(to_plain_dict(nd), path)
    return normalize_model_dict(read_model_dict(path))


# ----------------------------------------------------------------------------- valid models


def test_example_normalises_with_defaults() -> None:
    nd = normalize_model_dict(example())
    assert set(nd) == {"name", "gravity", "tip_kinematics", "bodies", "constraints"}
    assert nd["constraints"] == []
    assert nd["name"] == "two-link flexible arm"
    assert nd["tip_kinematics"] == "exponential"
    np.testing.assert_array_equal(nd["gravity"], [0, 0, -9.81])
    link1, link2 = nd["bodies"]
    assert (link1["name"], link1["parent"], link2["parent"]) == ("link1", -1, 0)
    j1, j2 = link1["joint"], link2["joint"]
    assert (j1["type"], j1["axes"], j1["pitch"], j1["parent_node"], j1["child_node"]) == (
        "revolute",
        None,
        0.0,
        None,
        0,
    )
    assert (j2["parent_node"], j2["child_node"]) == (2, None)
    for placement in (j2["placement"], j2["child_placement"]):
        np.testing.assert_array_equal(placement["rotation"], np.eye(3))
        np.testing.assert_array_equal(placement["translation"], np.zeros(3))
    f1, f2 = link1["flex"], link2["flex"]
    assert {k: v.shape for k, v in f1.items()} == {
        "nodes": (3, 3),
        "node_masses": (3,),
        "node_inertias": (3, 3, 3),
        "modes": (18, 1),
        "stiffness": (1, 1),
        "damping": (1, 1),
    }
    assert not f1["node_inertias"].any()
    assert {k: v.shape for k, v in f2.items()} == {
        "nodes": (0, 3),
        "node_masses": (0,),
        "node_inertias": (0, 3, 3),
        "modes": (0, 0),
        "stiffness": (0, 0),
        "damping": (0, 0),
    }
    assert link2["rigid"]["mass"] == 1.0 and isinstance(link2["rigid"]["mass"], float)
    for arr in arrays(nd):
        assert arr.dtype == np.float64 and not arr.flags.writeable


def test_defaults_for_minimal_bodies() -> None:
    nd = normalize_model_dict(
        {
            "bodies": [
                {"name": "base", "joint": {"type": "fixed"}},
                {
                    "name": "tip",
                    "parent": "base",
                    "joint": {"type": "revolute", "axis": [1, 0, 0]},
                    "flex": {"nodes": [[0, 0, 0]], "node_masses": [1.0]},
                },
            ]
        }
    )
    base, tip = nd["bodies"]
    assert nd["name"] == "" and not nd["gravity"].any()
    assert base["rigid"]["mass"] == 0.0 and base["rigid"]["inertia"].shape == (3, 3)
    assert tip["flex"]["modes"].shape == (6, 0) and tip["flex"]["stiffness"].shape == (0, 0)


def test_inputs_are_copied() -> None:
    axis = np.array([0.0, 0.0, 1.0])
    d = example()
    d["bodies"][0]["joint"]["axis"] = axis
    nd = normalize_model_dict(d)
    axis[2] = 5.0
    assert nd["bodies"][0]["joint"]["axis"][2] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        nd["bodies"][0]["joint"]["axis"][0] = 1.0


@pytest.mark.parametrize("make", [example, rich_model])
def test_round_trip_is_bit_identical(make: Any, tmp_path: Path) -> None:
    nd = normalize_model_dict(make())
    plain = to_plain_dict(nd)
    assert json.loads(json.dumps(plain)) == plain  # plain JSON types only
    assert_same(nd, file_round_trip(nd, tmp_path))
    assert_same(nd, normalize_model_dict(plain))
    assert_same(nd, normalize_model_dict(nd))  # idempotent


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=4, max_size=4))
def test_round_trip_of_arbitrary_floats(values: list[float]) -> None:
    d = example()
    d["gravity"] = values[:3]
    d["bodies"][1]["rigid"]["com"] = values[1:]
    d["bodies"][1]["joint"]["placement"] = {"translation": values[:3][::-1]}
    nd = normalize_model_dict(d)
    assert_same(nd, normalize_model_dict(json.loads(json.dumps(to_plain_dict(nd)))))


def test_massless_link_with_child_is_allowed() -> None:
    d = example()
    d["bodies"][0]["rigid"]["mass"] = 0.0
    d["bodies"][0]["flex"]["node_masses"] = [0.0, 0.0, 0.0]
    assert normalize_model_dict(d)["bodies"][0]["rigid"]["mass"] == 0.0


def test_write_read_file(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_model_dict(normalize_model_dict(example()), path)  # normalised dicts can be written too
    text = path.read_text()
    assert "[0.0, 0.0, -9.81]" in text and text.endswith("\n")
    assert_same(normalize_model_dict(read_model_dict(path)), normalize_model_dict(example()))


# ----------------------------------------------------------------------------- file errors


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("m.txt", "{}", "unsupported model file type '.txt'"),
        ("m.json", "{", "invalid JSON"),
        ("m.json", '{"bodies": [], "bodies": []}', "duplicate key 'bodies'"),
        ("m.json", "[1, 2]", "top level must be an object"),
    ],
)
def test_read_errors(tmp_path: Path, name: str, text: str, match: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_model_dict(path)


def test_yaml_needs_pyyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("bodies: []\n")
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(ValueError, match="needs PyYAML"):
        read_model_dict(path)


def test_yaml_read(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    nd = normalize_model_dict(example())
    path = tmp_path / "m.yml"
    path.write_text(yaml.safe_dump(to_plain_dict(nd)))
    assert_same(nd, normalize_model_dict(read_model_dict(path)))


def test_a_yaml_alias_bomb_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """Six levels of ten aliases (a few hundred bytes) expand to over a million nodes: refused
    from the composed graph, before a Python object is built; a model file that repeats a
    block by an alias (a few nodes added) reads as its expansion."""
    pytest.importorskip("yaml")
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 6)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"aliases add \d+ nodes .* an alias bomb"):
        read_model_dict(bomb)
    repeated = tmp_path / "repeated.yaml"
    repeated.write_text("gravity: &g [0.0, -9.81, 0.0]\nother: *g\n")
    assert read_model_dict(repeated) == {"gravity": [0.0, -9.81, 0.0],
                                         "other": [0.0, -9.81, 0.0]}


@pytest.mark.parametrize(
    ("name", "model", "match"),
    [
        ("m.yaml", {}, "written as JSON only"),
        ("m.json", {"gravity": [float("nan")]}, "cannot write model"),
        ("m.json", {"x": object()}, r"model\.x: cannot write a value of type object"),
    ],
)
def test_write_errors(tmp_path: Path, name: str, model: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        write_model_dict(model, tmp_path / name)


# ----------------------------------------------------------------------------- validation

DELETE = object()
B0 = ("bodies", 0)
B1 = ("bodies", 1)
L1 = r'bodies\[0\] "link1": '
L2 = r'bodies\[1\] "link2": '
J0, J1 = (*B0, "joint"), (*B1, "joint")
F0 = (*B0, "flex")
R1 = (*B1, "rigid")


def apply(d: dict, path: Sequence[Any], value: Any) -> None:
    """Set (or with ``DELETE`` remove) the item at ``path`` of a nested dict/list."""
    target = d
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


def ident(match: str) -> str:
    """Return a readable test id for an expected-message regex."""
    return re.sub(r"\W+", "_", match.split(": ", 1)[-1])[:60]


UNIVERSAL = [((*J1, "type"), "universal"), ((*J1, "axis"), None)]
TWO_MODES = [((*F0, "modes"), np.ones((18, 2)).tolist())]

ERRORS = [
    # top level
    ([(("extra",), 1)],
     r"model has unknown key 'extra'; allowed keys: \$schema, format, version, name"),
    ([(("format",), "other")], r"model: format must be 'flexdyn-model', got str 'other'"),
    ([(("version",), 2)], r"model: version must be 1, got int 2"),
    ([(("version",), True)], r"model: version must be 1, got bool True"),
    ([(("name",), 3)], r"model: name must be a string"),
    ([(("bodies",), DELETE)], r"model is missing the required key 'bodies'"),
    ([(("bodies",), [])], r"model: bodies is empty; a model needs at least one body"),
    ([(("bodies",), {"a": 1})], r"model: bodies must be a list of bodies, got dict"),
    ([(("gravity",), [0, -9.81])], r"model: gravity has shape \(2,\), expected \(3,\)"),
    ([(("gravity",), [0, 0, "g"])], r"model: gravity\[2\] must be a number .*got str 'g'"),
    ([(("gravity",), [0, 0, False])], r"model: gravity\[2\] must be a number .*got bool"),
    ([(("gravity",), np.array([0, 0, 1], dtype=bool))], r"gravity must be numeric, .*dtype bool"),
    ([(("gravity",), [0, 0, float("inf")])], r"gravity contains a non-finite number \(inf\)"),
    # bodies, names, parents
    ([(B1, [1, 2])], r"bodies\[1\] must be an object \(dict\), got list"),
    ([((*B1, "colour"), "red")], L2 + r"has unknown key 'colour'; allowed keys: name, parent"),
    ([((*B1, "name"), DELETE)], r"bodies\[1\] is missing the required key 'name'"),
    ([((*B1, "name"), "")], r"bodies\[1\]: name must be a non-empty string"),
    ([((*B1, "name"), "link1")], r'bodies\[1\] "link1": name is a duplicate of bodies\[0\]'),
    ([((*B1, "parent"), "nope")], L2 + r'parent "nope" does not exist; known bodies: "link1"'),
    ([((*B0, "parent"), "link2")], L1 + r'parent "link2" comes later in the list \(bodies\[1\]\)'),
    ([((*B1, "parent"), "link2")], L2 + r"parent refers to the body itself"),
    ([((*B1, "parent"), 2.5)], L2 + r"parent must be a body name or null, got float 2.5"),
    ([((*B1, "parent"), 7)], L2 + r"parent index 7 is out of range"),
    # joints
    ([((*B1, "joint"), DELETE)], L2 + r"is missing the required key 'joint'"),
    ([(J1, "revolute")], L2 + r"joint must be an object \(dict\), got str"),
    ([((*J1, "angle"), 0)], L2 + r"joint has unknown key 'angle'; allowed keys: type, axis"),
    ([((*J1, "type"), DELETE)], L2 + r"joint is missing the required key 'type'"),
    ([((*J1, "type"), "hinge")], L2 + r"joint\.type must be one of fixed, revolute, .*'hinge'"),
    ([((*J1, "axis"), DELETE)], L2 + r"joint\.axis is required for a revolute joint"),
    ([((*J1, "type"), "spherical")], L2 + r"joint\.axis is not allowed for a spherical joint"),
    ([((*J1, "axis"), [0, 0, 2])], L2 + r"joint\.axis has norm 2\.0, expected a unit vector"),
    ([((*J1, "axis"), [0, 0, 1 + 1e-6])], L2 + r"joint\.axis has norm 1\.000001"),
    ([((*J1, "axis"), [0, 0, 0])], L2 + r"joint\.axis is the zero vector"),
    ([((*J1, "axis"), [0, 1])], L2 + r"joint\.axis has shape \(2,\), expected \(3,\)"),
    ([((*J1, "axis"), {"z": 1})], L2 + r"joint\.axis must be a number or a list .*got dict"),
    (
        [((*J1, "type"), "universal"), ((*J1, "axis"), DELETE)],
        L2 + r"joint\.axes is required for a universal joint",
    ),
    (
        [*UNIVERSAL, ((*J1, "axes"), [[1, 0, 0], [0, 0.5, 0]])],
        L2 + r"joint\.axes\[1\] has norm 0\.5, expected a unit vector",
    ),
    ([*UNIVERSAL, ((*J1, "axes"), [[1, 0, 0], [1, 0, 0]])], L2 + r"joint\.axes are parallel"),
    (
        [*UNIVERSAL, ((*J1, "axes"), [[1, 0, 0]])],
        L2 + r"joint\.axes has shape \(1, 3\), expected \(2, 3\)",
    ),
    ([((*J1, "type"), "screw")], L2 + r"joint\.pitch is required for a screw joint"),
    ([((*J1, "type"), "screw"), ((*J1, "pitch"), "1mm")], L2 + r"joint\.pitch must be a number"),
    ([((*J1, "pitch"), 0.1)], L2 + r"joint\.pitch is not allowed for a revolute joint"),
    (
        [((*J1, "placement"), {"scale": 2})],
        L2 + r"joint\.placement has unknown key 'scale'; allowed keys: rotation, axis_angle, "
        r"quaternion, euler, translation",
    ),
    (
        [((*J1, "placement"), {"rotation": [[1, 0, 0], [0, 1, 0.1], [0, 0, 1]]})],
        L2 + r"joint\.placement\.rotation is not orthonormal",
    ),
    (
        [((*J1, "placement"), {"rotation": np.diag([1.0, 1.0, -1.0])})],
        L2 + r"joint\.placement\.rotation has determinant -1; a rotation needs det = \+1",
    ),
    (
        [((*J1, "child_placement"), {"translation": [0, float("nan"), 0]})],
        L2 + r"joint\.child_placement\.translation contains a non-finite number \(nan\) at index",
    ),
    (
        [((*J1, "parent_node"), 3)],
        L2 + r'joint\.parent_node = 3 is out of range: bodies\[0\] "link1" has 3 nodes',
    ),
    ([((*J1, "parent_node"), True)], L2 + r"joint\.parent_node must be an integer .*got bool"),
    ([((*J1, "parent_node"), 1.0)], L2 + r"joint\.parent_node must be an integer .*got float"),
    ([((*J0, "parent_node"), 0)], L1 + r"joint\.parent_node must be null for a body jointed to"),
    ([((*J1, "child_node"), 0)], L2 + r"joint\.child_node = 0 is out of range: the body has 0"),
    ([((*J0, "child_node"), -1)], L1 + r"joint\.child_node = -1 is out of range"),
    # rigid
    ([(R1, [1.0])], L2 + r"rigid must be an object \(dict\), got list"),
    ([((*R1, "volume"), 1)], L2 + r"rigid has unknown key 'volume'; allowed keys: mass, com"),
    ([((*R1, "mass"), -1.0)], L2 + r"rigid\.mass is negative \(-1\.0\)"),
    ([((*R1, "mass"), "1kg")], L2 + r"rigid\.mass must be a number, got str '1kg'"),
    ([((*R1, "mass"), True)], L2 + r"rigid\.mass must be a number, got bool"),
    ([((*R1, "mass"), float("inf"))], L2 + r"rigid\.mass must be a finite number, got inf"),
    ([((*R1, "com"), {"x": 0})], L2 + r"rigid\.com must be a number or a list of numbers"),
    ([((*R1, "inertia"), [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]])], L2 + r"rigid\.inertia is not symm"),
    ([((*R1, "inertia"), np.diag([1, 1, -0.1]))], L2 + r"rigid\.inertia is not positive semi-def"),
    (
        [((*R1, "inertia"), np.diag([0.01, 0.01, 1]))],
        L2 + r"rigid\.inertia violates the triangle inequality",
    ),
    (
        [((*R1, "inertia"), [[1, 0, 0], [0, 1], [0, 0, 1]])],
        L2 + r"rigid\.inertia is not a regular array",
    ),
    # flex
    ([(F0, [])], L1 + r"flex must be an object \(dict\), got list"),
    (
        [((*F0, "strain"), 0)],
        L1 + r"flex has unknown key 'strain'; allowed keys: nodes, node_masses",
    ),
    ([((*F0, "nodes"), DELETE)], L1 + r"flex is missing the required key 'nodes'"),
    ([((*F0, "node_masses"), DELETE)], L1 + r"flex is missing the required key 'node_masses'"),
    ([((*F0, "modes"), MODES[:17])], L1 + r"flex\.modes has 17 rows, expected 6 × 3 nodes = 18"),
    (TWO_MODES, L1 + r"flex\.modes has 2 columns, expected the size of flex\.stiffness = 1"),
    ([((*F0, "modes", 8, 0), "x")], L1 + r"flex\.modes\[8\]\[0\] must be a number"),
    ([((*F0, "modes", 8, 0), float("-inf"))], L1 + r"flex\.modes contains a non-finite number"),
    ([((*F0, "modes"), DELETE)], L1 + r"flex\.stiffness is given without flex\.modes"),
    ([((*F0, "stiffness"), DELETE)], L1 + r"flex\.modes is given without flex\.stiffness"),
    (
        [((*F0, "nodes"), [[0, 0], [1, 0], [2, 0]])],
        L1 + r"flex\.nodes has shape \(3, 2\), expected \(any, 3\)",
    ),
    (
        [((*F0, "node_masses"), [1.0, 1.0])],
        L1 + r"flex\.node_masses has 2 entries, expected one per node, 3 nodes = 3",
    ),
    ([((*F0, "node_masses"), [0.0, -1.0, 0.5])], L1 + r"flex\.node_masses\[1\] is negative"),
    (
        [((*F0, "node_inertias"), np.eye(3))],
        L1 + r"flex\.node_inertias must be a 3-D array of shape \(3, 3, 3\), got shape \(3, 3\)",
    ),
    (
        [((*F0, "node_inertias"), [np.zeros((3, 3))] * 2 + [np.triu(np.ones((3, 3)))])],
        L1 + r"flex\.node_inertias\[2\] is not symmetric",
    ),
    (
        [((*F0, "node_inertias"), [np.diag([1.0, 0.1, 0.1])] * 3)],
        L1 + r"flex\.node_inertias\[0\] violates the triangle inequality",
    ),
    ([((*F0, "stiffness"), [[-1.0]])], L1 + r"flex\.stiffness is not positive semi-definite"),
    (
        [*TWO_MODES, ((*F0, "stiffness"), [[1, 2], [0, 1]]), ((*F0, "damping"), None)],
        L1 + r"flex\.stiffness is not symmetric",
    ),
    ([((*F0, "stiffness"), [[1.0, 0.0]])], L1 + r"flex\.stiffness must be square"),
    ([((*F0, "damping"), [[-1.0]])], L1 + r"flex\.damping is not positive semi-definite"),
    (
        [*TWO_MODES, ((*F0, "stiffness"), np.eye(2)), ((*F0, "damping"), [[1, 1], [0, 1]])],
        L1 + r"flex\.damping is not symmetric",
    ),
    ([((*F0, "damping"), [[0, 0]])], L1 + r"flex\.damping has shape \(1, 2\), expected \(1, 1\)"),
    # mass
    (
        [((*R1, "mass"), 0.0), ((*R1, "inertia"), [[0, 0, 0], [0, 0, 0], [0, 0, 0]])],
        L2 + r"has no mass, no rotary inertia and no children; a body without inertia must carry",
    ),
]


@pytest.mark.parametrize(("changes", "match"), ERRORS, ids=[ident(m) for _, m in ERRORS])
def test_invalid_models_are_rejected(changes: list[tuple[tuple, Any]], match: str) -> None:
    d = example()
    for path, value in changes:
        apply(d, path, value)
    with pytest.raises(ValueError, match=match) as info:
        normalize_model_dict(d)
    assert info.value.__cause__ is None and "\n" not in str(info.value)


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match=r"model must be an object \(dict\), got list"):
        normalize_model_dict([])  # type: ignore[arg-type]


def test_every_problem_of_a_file_is_reported() -> None:
    """Three mistakes in three places: one error listing all three, each named, with the
    closest key or joint type suggested and a dropped node row blamed on ``nodes``."""
    from flexdyn.model_file import ModelFileError

    d = fd.models.two_link_arm().to_dict()
    d["bodies"][0]["flex"]["nodes"] = d["bodies"][0]["flex"]["nodes"][:-1]
    d["bodies"][1]["joint"]["type"] = "revolut"
    d["bodies"][1]["rigid"]["mas"] = 1.0
    with pytest.raises(ModelFileError) as info:
        normalize_model_dict(d)
    errors = info.value.errors
    assert len(errors) == 3 and str(info.value).startswith("3 problems in the model:")
    assert "flex.nodes describes 6 nodes, but flex.node_masses, flex.modes describe 7" in errors[0]
    assert "unknown key 'mas' (did you mean 'mass'?)" in errors[1]
    assert "got str 'revolut' (did you mean 'revolute'?)" in errors[2]


def test_numbers_in_messages_are_plain() -> None:
    d = example()
    d["bodies"][0]["flex"]["node_masses"][1] = np.float64(-0.08)
    with pytest.raises(ValueError, match=r"node_masses\[1\] is negative \(-0.08\)") as info:
        normalize_model_dict(d)
    assert "np.float64" not in str(info.value)


def _placed(placement: dict) -> np.ndarray:
    """The joint placement's rotation of a one-body model placed by ``placement``."""
    d = {"name": "m", "bodies": [{
        "name": "b", "parent": None,
        "joint": {"type": "revolute", "axis": [0, 0, 1], "placement": placement},
        "rigid": {"mass": 1.0, "com": [0.1, 0.2, 0.3], "inertia": np.eye(3).tolist()}}]}
    return np.array(fd.Model.from_dict(d).to_dict()["bodies"][0]["joint"]["placement"]
                    ["rotation"])


def _rodrigues(axis, angle: float) -> np.ndarray:
    """``exp(angle [n]×)`` for the unit axis of ``axis`` (Rodrigues' formula)."""
    n = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


@pytest.mark.parametrize("scale", [1e-200, 1e-5, 1.0, 1e8, 1e200])
def test_placement_axes_and_quaternions_of_any_scale(scale):
    """An axis or a quaternion of any finite, non-zero length gives the rotation of its
    direction (the norm of ``[1e200, 1e200, 0]`` overflows and that of ``1e-200`` underflows
    unless scaled first), and an angle of any finite size gives the rotation of its sine and
    cosine (the rotation vector of 1e300 rad overflows)."""
    expected = _rodrigues([1, 1, 0], 0.5)
    got = _placed({"axis_angle": [scale, scale, 0.0, 0.5]})
    np.testing.assert_allclose(got, expected, atol=1e-15)
    # the quaternion of the same rotation: [cos(a/2), sin(a/2) n]
    n = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
    quat = scale * np.concatenate([[np.cos(0.25)], np.sin(0.25) * n])
    np.testing.assert_allclose(_placed({"quaternion": quat.tolist()}), expected, atol=1e-15)
    for big in (2.0**70, 1e300):
        np.testing.assert_allclose(_placed({"axis_angle": [0, 0, scale, big]}),
                                   _rodrigues([0, 0, 1], big), atol=1e-14)


def _arm_with_constraint() -> dict[str, Any]:
    """The two-link arm with a closure pinning the second link's tip to the ground."""
    d = copy.deepcopy(fd.models.two_link_arm().to_dict())
    d["constraints"] = [{"name": "pin", "type": "ball", "body": "link2", "node": 0,
                         "other_point": [1.0, 0.0, 0.0]}]
    return d


def _errors_of(d: dict[str, Any]) -> list[str]:
    from flexdyn.model_file import ModelFileError

    with pytest.raises(ModelFileError) as info:
        normalize_model_dict(d)
    assert str(info.value).startswith(f"{len(info.value.errors)} problems in the model:") or (
        len(info.value.errors) == 1)
    return info.value.errors


def test_header_body_block_and_constraint_errors_are_reported_together() -> None:
    """A header error, an unknown top-level key, an unknown body key, three mistakes in one
    rigid block, a joint mistake and a constraint mistake: one report naming each."""
    d = _arm_with_constraint()
    d["version"] = 2
    d["gravty"] = [0, 0, -9.81]
    d["bodies"][0]["colour"] = "red"
    d["bodies"][1]["rigid"] = {"mass": -1.0, "com": [0.0, 0.0], "inertia": [[1, 2, 0], [0, 1, 0],
                                                                           [0, 0, 1]]}
    d["bodies"][1]["joint"]["axis"] = [0.0, 0.0, 2.0]
    d["constraints"][0]["type"] = "bal"
    errors = _errors_of(d)
    expected = [
        "model has unknown key 'gravty' (did you mean 'gravity'?)",
        "model: version must be 1, got int 2",
        'bodies[0] "link1": has unknown key \'colour\'',
        'bodies[1] "link2": rigid.mass is negative (-1.0)',
        'bodies[1] "link2": rigid.inertia is not symmetric',
        'bodies[1] "link2": rigid.com has shape (2,), expected (3,)',
        'bodies[1] "link2": joint.axis has norm 2.0',
        'constraints[0] "pin": type must be one of',
    ]
    assert len(errors) == len(expected), errors
    for want in expected:
        assert sum(want in e for e in errors) == 1, (want, errors)


def test_constraints_are_checked_when_a_body_failed() -> None:
    """A closure's node is checked against a body whose flex block failed as against any
    number of nodes; its other mistakes are still reported."""
    d = _arm_with_constraint()
    d["bodies"][1]["flex"]["node_masses"][0] = -1.0
    d["constraints"][0]["other_point"] = [1.0, 0.0]
    errors = _errors_of(d)
    assert len(errors) == 2
    assert "node_masses[0] is negative" in errors[0]
    assert 'constraints[0] "pin".other_point has shape (2,), expected (3,)' in errors[1]


def test_bad_body_names_do_not_hide_the_others() -> None:
    d = fd.models.two_link_arm().to_dict()
    d["bodies"][0]["name"] = "link.1"
    d["bodies"][1]["parent"] = "link.1"
    d["bodies"][1]["rigid"] = {"mass": "heavy"}
    errors = _errors_of(d)
    assert "name 'link.1' contains '.'" in errors[0]
    assert any('bodies[1] "link2": parent "link.1" does not exist' in e for e in errors)
    assert any("rigid.mass must be a number, got str 'heavy'" in e for e in errors)


def test_unknown_keys_in_every_block_are_all_reported() -> None:
    d = fd.models.two_link_arm().to_dict()
    d["bodies"][0]["joint"]["axes"] = None
    d["bodies"][0]["joint"]["axs"] = [0, 0, 1]
    d["bodies"][0]["flex"]["mode"] = []
    d["bodies"][1]["rigid"]["mas"] = 1.0
    d["bodies"][1]["rigid"]["comm"] = [0, 0, 0]
    errors = _errors_of(d)
    for key in ("axs", "mode", "mas", "comm"):
        assert sum(f"unknown key {key!r}" in e for e in errors) == 1, (key, errors)


def test_a_negative_stiffness_cannot_hide_behind_a_large_one() -> None:
    """``diag(1e14, −1)`` has the eigenvalue −1 (a growth rate of 1/s for a unit modal
    mass), whatever the other mode's stiffness: rejected; a singular finite-element
    stiffness (six rigid-body motions, eigenvalues at round-off) is accepted."""
    from flexdyn.beam import nodal_beam

    d = example()
    d["bodies"][0]["flex"]["stiffness"] = [[1e14, 0.0], [0.0, -1.0]]
    d["bodies"][0]["flex"]["modes"] = [[row[0], 0.0] for row in MODES]
    with pytest.raises(ValueError, match=r"flex.stiffness is not positive semi-definite "
                                         r"\(smallest eigenvalue -1;"):
        normalize_model_dict(d)
    boom = nodal_beam(2.0, 1.5, EI_y=30.0, EI_z=3e4, EA=1e9, GJ=20.0,
                      polar_inertia_per_length=1e-3, n_elements=40)
    assert np.linalg.eigvalsh(boom["nodal_stiffness"])[0] < 0  # round-off of the zeros
    fd.ModelBuilder("boom").add_body("boom", joint={"type": "revolute", "axis": [0, 0, 1]},
                                     flex=boom).build()


@pytest.mark.parametrize("placement", [
    {"rotation": [[1e300, 0, 0], [0, 1, 0], [0, 0, 1]]},
    {"quaternion": [1e308, 1e308, float("nan"), 0]},
    {"euler": {"sequence": "ZYX", "angles": [0.1, float("inf"), 0]}},
])
def test_placement_errors_name_the_body_and_key(placement: dict) -> None:
    d = example()
    d["bodies"][1]["joint"]["placement"] = placement
    key = next(iter(placement))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf'bodies\[1\] "link2": joint.placement.{key}'):
            normalize_model_dict(d)


def test_euler_angles_of_any_size() -> None:
    for big in (2.0**70, 1e300):
        np.testing.assert_allclose(
            _placed({"euler": {"sequence": "ZYX", "angles": [big, 0.0, 0.0]}}),
            _rodrigues([0, 0, 1], big), atol=1e-14)
