"""Hostile model files and dicts: bounded cost and named errors, never a crash.

Alias bombs, files with more values than a model file may hold, deep and self-referential
lists, lists as mapping keys, a bad leaf deep inside a large array; YAML merge keys are valid
YAML and are read.  The timings of these cases are printed by
``benchmarks/bench_hostile_files.py`` (no time is asserted here).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import flexdyn as fd
from flexdyn import model_file
from flexdyn.model_file import ModelFileError, normalize_model_dict, read_model_dict

REV = {"type": "revolute", "axis": [0, 0, 1]}


def one_body(**rigid) -> dict:
    return {"name": "m", "bodies": [{"name": "b", "joint": REV,
                                     "rigid": {"mass": 1.0, **rigid}}]}


def test_too_many_values_are_refused_before_parsing(tmp_path, monkeypatch):
    """The limit is checked on the text: the JSON parser is not even called."""
    monkeypatch.setattr(model_file, "MAX_JSON_VALUES", 1000)
    path = tmp_path / "big.json"
    d = {"bodies": [{"name": "b", "joint": REV,
                     "flex": {"nodes": [[0.0, 0.0, 0.0]] * 400, "node_masses": [1.0] * 400}}]}
    path.write_text(json.dumps(d))

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(model_file.json, "loads", no_parse)
    with pytest.raises(ValueError, match=r"big.json: the file holds 1\d\d\d commas, more values "
                                         r"than the 1000 a JSON model file may hold"):
        read_model_dict(path)


def test_yaml_value_limit(tmp_path, monkeypatch):
    pytest.importorskip("yaml")
    monkeypatch.setattr(model_file, "MAX_YAML_VALUES", 50)
    path = tmp_path / "big.yaml"
    path.write_text("bodies:\n" + "".join(f"  - {{name: b{i}}}\n" for i in range(60)))
    with pytest.raises(ValueError, match="more values than the 50 a YAML model file may hold"):
        read_model_dict(path)


@pytest.mark.parametrize("depth", [40, 5000])
def test_deep_lists_in_dicts_are_named(depth):
    deep = [1.0]
    for _ in range(depth):
        deep = [deep]
    with pytest.raises(ModelFileError, match=r'bodies\[0\] "b": rigid.inertia holds lists '
                                             r"nested deeper than 32 levels"):
        normalize_model_dict(one_body(inertia=deep))
    with pytest.raises(ModelFileError, match=r"rigid.mass must be a number, got list "
                                             r"\[\[\[\[\.\.\.\]\]\]\]"):
        normalize_model_dict(one_body(mass=deep))


def test_self_referential_lists_are_named():
    loop: list = []
    loop.append(loop)
    d = one_body(com=loop)
    d["gravity"] = loop
    with pytest.raises(ModelFileError) as info:
        fd.Model.from_dict(d)
    assert info.value.errors == [
        "model: gravity holds lists nested deeper than 32 levels (a list that contains itself?)",
        'bodies[0] "b": rigid.com holds lists nested deeper than 32 levels (a list that '
        "contains itself?)"]


def test_a_bad_leaf_deep_in_a_large_array_is_named():
    n = 3000
    modes = np.zeros((6 * n, 2)).tolist()
    modes[17000][1] = "0.5"
    d = {"bodies": [{"name": "b", "joint": REV, "flex": {
        "nodes": np.zeros((n, 3)), "node_masses": np.ones(n), "modes": modes,
        "stiffness": np.eye(2)}}]}
    with pytest.raises(ModelFileError, match=r"flex.modes\[17000\]\[1\] must be a number or a "
                                             r"list of numbers, got str '0.5'"):
        normalize_model_dict(d)
    modes[17000][1] = True
    with pytest.raises(ModelFileError, match=r"flex.modes\[17000\]\[1\] .* got bool True"):
        normalize_model_dict(d)
    modes[17000] = [0.5]
    with pytest.raises(ModelFileError, match=r"flex.modes is not a regular array .* entry "
                                             r"\[17000\] is a list of 1 where most are lists of 2"):
        normalize_model_dict(d)


def test_yaml_list_as_a_key_is_named(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "m.yaml"
    path.write_text("name: m\n? [1, 2]\n: 3\n")
    with pytest.raises(ValueError, match=r"m.yaml: a mapping key must be a plain value \(a "
                                         r"name\), got a list \(line 2\)"):
        read_model_dict(path)


def test_yaml_merge_keys_are_read(tmp_path):
    """``<<: *base`` merges the anchored mapping; the keys given beside it win."""
    pytest.importorskip("yaml")
    path = tmp_path / "m.yaml"
    path.write_text(
        "name: m\n"
        "bodies:\n"
        "  - name: a\n"
        "    joint: &hinge {type: revolute, axis: [0, 0, 1]}\n"
        "    rigid: &rod {mass: 1.0, com: [0.5, 0, 0], inertia: [[0.01, 0, 0], [0, 0.1, 0], "
        "[0, 0, 0.1]]}\n"
        "  - name: b\n"
        "    parent: a\n"
        "    joint:\n"
        "      <<: *hinge\n"
        "      axis: [0, 1, 0]\n"
        "    rigid: {<<: *rod, mass: 2.0}\n")
    d = read_model_dict(path)
    assert d["bodies"][1]["joint"] == {"type": "revolute", "axis": [0, 1, 0]}
    assert d["bodies"][1]["rigid"]["mass"] == 2.0
    assert d["bodies"][1]["rigid"]["com"] == [0.5, 0, 0]
    fd.Model.from_dict(d)
    path.write_text("a: &x {k: 1}\nb: {<<: *x, j: 2, j: 3}\n")
    with pytest.raises(ValueError, match="duplicate key 'j'"):
        read_model_dict(path)


def test_json_nesting_is_bounded_and_brackets_in_strings_are_not_nesting(tmp_path):
    path = tmp_path / "m.json"
    d = {"name": "[" * 40 + "{" * 40, "bodies": [{"name": "b", "joint": REV,
                                                   "rigid": {"mass": 1.0}}]}
    path.write_text(json.dumps(d))
    assert read_model_dict(path)["name"] == d["name"]
    path.write_text('{"bodies": ' + "[" * 40 + "]" * 40 + "}")
    with pytest.raises(ValueError, match=r"m.json: nesting deeper than 32 levels \(33\)"):
        read_model_dict(path)
