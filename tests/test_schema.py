"""The JSON Schema of the model-file format (``flexdyn/model.schema.json``) agrees with the
validator: every model the validator accepts passes the schema (built-in files, the
documentation's example, built-in and random models, nodal bodies, closed chains), and
every structural mistake of the validator's test corpus (unknown keys, wrong types, names
of kinds, missing keys) fails both.
"""

from __future__ import annotations

import copy
import json
from importlib import resources

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.beam import nodal_beam
from flexdyn.fe import Component
from flexdyn.model_file import json_schema, normalize_model_dict
from strategies import random_model_dict
from test_model_file import ERRORS, apply, example

jsonschema = pytest.importorskip("jsonschema")

STRUCTURAL = ("unknown key", "must be a number", "must be one of", "missing the required key",
              "must be an object", "must be a list", "must be a string", "format must be",
              "version must be")


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _plain(d):
    return json.loads(json.dumps(d, default=lambda a: np.asarray(a).tolist()))


def test_shipped_schema_is_the_generated_one():
    shipped = resources.files("flexdyn").joinpath("model.schema.json").read_text("utf-8")
    assert json.loads(shipped) == json_schema()


def _valid_corpus() -> list[dict]:
    data = resources.files("flexdyn").joinpath("data")
    corpus = [json.loads(p.read_text("utf-8")) for p in data.iterdir()
              if p.name.endswith(".json")]
    corpus.append(example())
    corpus += [m.to_dict() for m in (fd.models.spacecraft(), fd.models.two_link_arm(),
                                     fd.models.spinup_beam(), fd.models.spacecraft(
                                         array_joint="revolute"))]
    rng = np.random.default_rng(11)
    for joints in (["revolute", "spherical"], ["free", "universal"], ["prismatic", "screw"]):
        corpus.append(random_model_dict(rng, [-1, 0], joints, [3, 2], [2, 1], gravity=True,
                                        damping=True))
    boom = nodal_beam(2.0, 1.5, EI_y=30.0, EI_z=30.0, EA=1e5, GJ=20.0,
                      polar_inertia_per_length=1e-3, n_elements=3)
    corpus.append(fd.ModelBuilder("boom").add_body(
        "boom", joint={"type": "revolute", "axis": [0, 0, 1]}, flex=boom).build().to_dict())
    rev = {"type": "revolute", "axis": [0, 0, 1]}
    rod = {"mass": 1.0, "com": [0, -0.5, 0], "inertia": np.diag([0.1, 0.0, 0.1])}
    loop = (fd.ModelBuilder("four-bar", gravity=(0, -9.81, 0))
            .add_body("a", joint=rev, rigid=rod)
            .add_body("b", "a", joint={**rev, "placement": {"translation": [0, -1, 0]}},
                      rigid=rod)
            .add_body("c", joint={**rev, "placement": {"translation": [1, 0, 0]}}, rigid=rod)
            .add_constraint("loop", "pin", "b", "c", point=[1, 0, 0], other_point=[0, -1, 0],
                            axis=[0, 0, 1]))
    corpus.append(loop.build().to_dict())
    frame = np.zeros((12, 12))
    frame[:6, :6] = frame[6:, 6:] = np.eye(6)
    frame[:6, 6:] = frame[6:, :6] = 0.5 * np.eye(6)  # a coupled (consistent) mass
    spring = np.kron([[1.0, -1.0], [-1.0, 1.0]], np.eye(6))
    component = Component([[0, 0, 0], [1, 0, 0]], frame, spring, name="pair")
    corpus.append(fd.ModelBuilder("component").add_body(
        "pair", joint={"type": "revolute", "axis": [0, 0, 1], "child_node": 0},
        flex=component.reduce(0, n_modes=2, method="cantilever")).build().to_dict())
    corpus.append(_forced())
    corpus += _beams()
    return [_plain(d) for d in corpus]


def _beams() -> list[dict]:
    """Models with beam blocks: every form of geometry, material, section and modes."""
    rev = {"type": "revolute", "axis": [0, 0, 1]}
    blocks = [
        {"length": 0.6, "material": "aluminium",
         "section": {"shape": "rectangle", "size_y": 0.04, "size_z": 0.005},
         "modes": {"plane": "xy", "count": 2}},
        {"start": [0.1, 0, 0], "end": [0.1, 0.5, 0.5], "y_axis": [1, 0, 0],
         "material": {"E": 200e9, "rho": 7800.0, "nu": 0.3},
         "section": {"shape": "tube", "outer_radius": 0.02, "wall": 0.002},
         "modes": {"transverse_y": 1, "transverse_z": 1, "axial": 0, "torsion": 1},
         "elements": 4, "basis": "lumped", "boundary": "free-free",
         "damping_ratio": [0.01, 0.02, 0.03], "stiffening": True},
        {"length": 1.0, "axis": [0, 0, -2], "material": {"E": 70e9, "rho": 2700.0, "G": 26e9},
         "section": {"A": 1e-4, "Iy": 1e-9, "Iz": 2e-9, "J": 2e-9},
         "modes": {"transverse_z": 2}, "basis": "natural", "damping_ratio": 0.01},
        {"length": 0.4, "material": "steel", "section": {"shape": "circle", "radius": 0.01},
         "modes": {"axial": 1}, "basis": "finite", "elements": 2},
    ]
    out = []
    for k, beam in enumerate(blocks):
        model = fd.ModelBuilder(f"beam{k}").add_body("beam", joint=rev, beam=beam).build()
        out += [{"name": f"beam{k}", "bodies": [{"name": "beam", "joint": rev, "beam": beam}]},
                model.to_dict()]
    return out


@pytest.mark.parametrize("beam", [
    {"section": {"shape": "rectangle", "width": 0.04, "height": 0.005}},
    {"section": {"shape": "rectangle", "size_y": 0.04}},
    {"section": {"shape": "tube", "radius": 0.01}},
    {"material": "alumnium"},
    {"material": {"E": 1e9}},
    {"modes": {"bending_y": 1}},
    {"modes": {"plane": "yz", "count": 1}},
    {"modes": 3},
    {"length": "1"},
    {"end": [1, 0, 0]},
    {"basis": "modal"},
    {"stiffening": 1},
])
def test_beam_mistakes_fail_both(validator, beam):
    good = {"length": 0.6, "material": "aluminium",
            "section": {"shape": "rectangle", "size_y": 0.04, "size_z": 0.005},
            "modes": {"transverse_y": 1}}
    d = {"bodies": [{"name": "b", "joint": {"type": "revolute", "axis": [0, 0, 1]},
                     "beam": {**good, **beam}}]}
    with pytest.raises(ValueError):
        normalize_model_dict(copy.deepcopy(d))
    assert list(validator.iter_errors(d))


def _forced() -> dict:
    """A model with joint forces: every key, as numbers and as per-speed lists."""
    forces = {"stiffness": 4.0, "rest": [0.1, 0.0], "preload": 0.5, "damping": [0.2, 0.1],
              "coulomb": 0.3, "smoothing": 0.02, "lower": [-1.0, -0.2], "upper": 1.0,
              "limit_stiffness": 1e3, "limit_damping": 5.0, "torque_limit": [8.0, 3.0]}
    return (fd.ModelBuilder("forced")
            .add_body("base", joint={"type": "cylindrical", "axis": [0, 0, 1],
                                     "forces": forces},
                      rigid={"mass": 1.0, "inertia": np.eye(3)})
            .build().to_dict())


@pytest.mark.parametrize("forces", [{"stifness": 1.0}, {"damping": "0.2"},
                                    {"damping": [[0.1]]}, [1.0]])
def test_forces_mistakes_fail_both(validator, forces):
    d = _plain(_forced())
    d["bodies"][0]["joint"]["forces"] = forces
    with pytest.raises(ValueError):
        normalize_model_dict(copy.deepcopy(d))
    assert list(validator.iter_errors(d))


def test_valid_models_pass_the_schema(validator):
    for d in _valid_corpus():
        normalize_model_dict(d)  # the validator accepts it ...
        errors = [e.message for e in validator.iter_errors(d)]
        assert not errors, (d.get("name"), errors[:3])  # ... and so does the schema


@pytest.mark.parametrize("changes, match", ERRORS)
def test_structural_mistakes_fail_both(validator, changes, match):
    d = example()
    for path, value in changes:
        apply(d, path, value)
    with pytest.raises(ValueError) as info:
        normalize_model_dict(copy.deepcopy(d))
    if any(word in str(info.value) for word in STRUCTURAL):
        try:
            plain = _plain(d)
        except (TypeError, ValueError):
            return  # not JSON at all (a NaN, an object): no file holds it
        assert list(validator.iter_errors(plain)), str(info.value)


def test_schema_command(capsys):
    from flexdyn.__main__ import main

    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"] == json_schema()["$id"]

