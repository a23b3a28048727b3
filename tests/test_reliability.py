"""Reliability contract: quaternion tolerance, atomic writes, hostile model files, model
validation, modes without inertia of their own, partial simulation results, input
consistency and linear-time validation.

Each test builds the situation that used to go wrong (a slightly non-unit quaternion, a write
that fails half-way, a file nested 100,000 levels deep, ...) and checks the documented
behaviour: a result equal to the well-posed case, or one clear exception.
"""

from __future__ import annotations

import csv
import errno
import gc
import json
import math
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate

import flexdyn as fd
import flexdyn.__main__ as cli
import flexdyn.model_file as model_file
from flexdyn.beam import beam_modes
from flexdyn.chain import QUATERNION_TOL
from helpers import assert_close
from strategies import random_state

GRAVITY = [0.0, 0.0, -9.81]
EYE3 = np.eye(3).tolist()


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def exit_status(argv: list[str]) -> int:
    """Exit status of the command line: ``main``'s return value or a ``SystemExit`` code."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


def assert_one_error_line(err: str) -> None:
    assert err.startswith("flexdyn: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err


def within(seconds: float, fn, unblock=None):
    """Run ``fn()`` in a daemon thread; return ``("ok", value)`` or ``("raised", exc)``.

    Fails the test if ``fn`` has not finished after ``seconds`` (then ``unblock()`` is called
    so that a thread blocked on a FIFO can end)."""
    box: dict = {}

    def target():
        try:
            box["out"] = ("ok", fn())
        except BaseException as exc:  # reported to the caller
            box["out"] = ("raised", exc)

    thread = threading.Thread(target=target, daemon=True)
    start = time.perf_counter()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            unblock()
        pytest.fail(f"still running after {seconds} s (blocked or expanding without bound)")
    assert time.perf_counter() - start < seconds
    return box["out"]


def dot_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def spacecraft_with_gravity() -> fd.Model:
    """The spacecraft (free hub, q[0:4]) in a gravity field, so that every result depends on
    the hub's orientation."""
    d = fd.models.builtin_model("spacecraft").to_dict()
    d["gravity"] = GRAVITY
    return fd.Model.from_dict(d)


def spherical_chain() -> fd.Model:
    b = fd.ModelBuilder("spherical_chain", gravity=GRAVITY)
    b.add_body("upper", None, joint={"type": "spherical"},
               rigid={"mass": 1.0, "com": [0.3, 0.0, 0.0],
                      "inertia": np.diag([0.02, 0.05, 0.06])})
    b.add_body("lower", "upper",
               joint={"type": "spherical", "placement": {"translation": [0.6, 0.0, 0.0]}},
               rigid={"mass": 0.7, "com": [0.2, 0.05, 0.0],
                      "inertia": np.diag([0.01, 0.03, 0.035])})
    return b.build()


def per_state_functions():
    """Every per-state function that validates ``q`` with ``Model.check_state``."""
    return {
        "forward_dynamics": lambda m, q, u, a: fd.forward_dynamics(m, q, u, a),
        "inverse_dynamics": lambda m, q, u, a: fd.inverse_dynamics(m, q, u, a),
        "bias_forces": lambda m, q, u, a: fd.bias_forces(m, q, u),
        "mass_matrix": lambda m, q, u, a: fd.mass_matrix(m, q),
        "kinetic_energy": lambda m, q, u, a: fd.kinetic_energy(m, q, u),
        "potential_energy": lambda m, q, u, a: fd.potential_energy(m, q),
        "momentum": lambda m, q, u, a: fd.momentum(m, q, u),
        "compute_kinematics": lambda m, q, u, a: np.array(
            [np.concatenate([p.R.ravel(), p.p]) for p in fd.compute_kinematics(m, q).pose]),
    }


PER_STATE = per_state_functions()


# ---------------------------------------------------------------------------------------------
# 1. quaternions
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spacecraft_state():
    model = spacecraft_with_gravity()
    q, u, udot = random_state(model, np.random.default_rng(11), eta_scale=0.1)
    return model, q, u, udot


@pytest.fixture(scope="module", params=["spacecraft", "spherical_chain"])
def quaternion_case(request, spacecraft_state):
    """``(model, q, u, udot, s, name)``: the quaternion ``q[s:s + 4]`` of body ``name`` (the
    spacecraft's free hub, or the outer body of a chain of spherical joints)."""
    if request.param == "spacecraft":
        return (*spacecraft_state, 0, "hub")
    model = spherical_chain()
    q, u, udot = random_state(model, np.random.default_rng(12))
    return model, q, u, udot, 4, "lower"


@pytest.mark.parametrize("name", sorted(PER_STATE))
def test_quaternion_within_tolerance_is_normalised(name, quaternion_case):
    model, q, u, udot, s, _ = quaternion_case
    fn = PER_STATE[name]
    ref = np.asarray(fn(model, q, u, udot))
    scaled = q.copy()
    scaled[s:s + 4] *= 1.0 + 5e-7
    assert abs(np.linalg.norm(scaled[s:s + 4]) - 1.0) < QUATERNION_TOL
    assert_close(np.asarray(fn(model, scaled, u, udot)), ref, name, tol=1e-12)


@pytest.mark.parametrize("norm", [1.01, 2.0])
@pytest.mark.parametrize("name", sorted(PER_STATE))
def test_quaternion_beyond_tolerance_raises(name, norm, quaternion_case):
    model, q, u, udot, s, body = quaternion_case
    bad = q.copy()
    bad[s:s + 4] *= norm
    with pytest.raises(ValueError, match="norm") as info:
        PER_STATE[name](model, bad, u, udot)
    assert repr(body) in str(info.value)


@pytest.mark.parametrize("name", sorted(PER_STATE))
def test_zero_quaternion_raises(name, quaternion_case):
    model, q, u, udot, s, body = quaternion_case
    bad = q.copy()
    bad[s:s + 4] = 0.0
    with pytest.raises(ValueError, match="is zero") as info:
        PER_STATE[name](model, bad, u, udot)
    assert repr(body) in str(info.value)


def test_complex_step_through_quaternion_matches_central_difference(spacecraft_state):
    model, q, u, udot = spacecraft_state
    tau = fd.inverse_dynamics(model, q, u, udot)
    rng = np.random.default_rng(5)
    d = np.zeros(model.nq)
    Q = q[0:4]
    t = rng.normal(size=4)
    t -= (t @ Q) * Q  # tangent to the unit quaternion
    d[0:4] = t / np.linalg.norm(t)
    d[4:] = rng.normal(size=model.nq - 4)
    h = 1e-30
    cs = fd.forward_dynamics(model, q + 1j * h * d, u, tau).imag / h
    eps = 1e-5
    cd = (fd.forward_dynamics(model, q + eps * d, u, tau)
          - fd.forward_dynamics(model, q - eps * d, u, tau)) / (2 * eps)
    assert np.max(np.abs(cd)) > 1e-3  # the direction matters
    assert_close(cs, cd, "complex step vs central difference", tol=1e-7)
    # scaling the quaternion changes nothing: no derivative along Q itself
    radial = np.zeros(model.nq)
    radial[0:4] = Q
    cs_radial = fd.forward_dynamics(model, q + 1j * h * radial, u, tau).imag / h
    assert np.max(np.abs(cs_radial)) <= 1e-9 * np.max(np.abs(cd))


def test_spherical_chain_inverse_dynamics_quaternions():
    model = spherical_chain()
    q, u, udot = random_state(model, np.random.default_rng(3))
    ref = fd.inverse_dynamics(model, q, u, udot)
    for s in (0, 4):  # either body's quaternion
        near = q.copy()
        near[s:s + 4] *= 1.0 - 5e-7
        assert_close(fd.inverse_dynamics(model, near, u, udot), ref, "|Q| = 1 - 5e-7",
                     tol=1e-12)
    name = {0: "'upper'", 4: "'lower'"}
    for s in (0, 4):
        for norm in (1.01, 2.0):
            bad = q.copy()
            bad[s:s + 4] *= norm
            with pytest.raises(ValueError, match="norm") as info:
                fd.inverse_dynamics(model, bad, u, udot)
            assert name[s] in str(info.value)
        zero = q.copy()
        zero[s:s + 4] = 0.0
        with pytest.raises(ValueError, match="is zero") as info:
            fd.inverse_dynamics(model, zero, u, udot)
        assert name[s] in str(info.value)


# ---------------------------------------------------------------------------------------------
# 2. atomic writes, CLI output paths
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arm_results():
    model = fd.models.builtin_model("two_link_arm")
    a = fd.simulate(model, t_span=(0, 0.05), t_eval=np.linspace(0, 0.05, 6))
    b = fd.simulate(model, t_span=(0, 0.05), t_eval=np.linspace(0, 0.05, 3),
                    tau=np.array([0.2, -0.1, 0.0, 0.0]))
    return a, b


def test_lone_surrogate_body_name_is_rejected():
    d = fd.models.builtin_model("two_link_arm").to_dict()
    d["bodies"][1]["name"] = "\ud800"
    with pytest.raises(ValueError, match=r"bodies\[1\]"):
        fd.Model.from_dict(d)
    b = fd.ModelBuilder("surrogate").add_body(
        "\ud800", None, joint={"type": "revolute", "axis": [0, 0, 1]},
        rigid={"mass": 1.0, "inertia": EYE3})
    with pytest.raises(ValueError, match=r"bodies\[0\]"):
        b.build()


def test_save_model_failure_leaves_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "arm.json"
    fd.save_model(fd.models.builtin_model("spacecraft"), path)
    old = path.read_bytes()
    # the text cannot be encoded (as a lone surrogate once could reach the writer)
    monkeypatch.setattr(model_file, "_dumps", lambda obj, indent=0: '{"name": "\ud800"}')
    with pytest.raises(ValueError):
        fd.save_model(fd.models.builtin_model("two_link_arm"), path)
    assert path.read_bytes() == old
    assert dot_files(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arm.json"]


def test_to_csv_failure_leaves_file_intact(tmp_path, monkeypatch, arm_results):
    new, previous = arm_results
    path = tmp_path / "run.csv"
    previous.to_csv(path)
    old = path.read_bytes()
    real_writer = csv.writer

    class FullDisk:
        """A csv writer whose file system fills up after two rows."""

        def __init__(self, fh, *args, **kwargs):
            self._w = real_writer(fh, *args, **kwargs)
            self._rows = 0

        def writerow(self, row):
            if self._rows == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            self._rows += 1
            return self._w.writerow(row)

        def writerows(self, rows):
            for row in rows:
                self.writerow(row)

    monkeypatch.setattr(csv, "writer", FullDisk)
    with pytest.raises(OSError):
        new.to_csv(path)
    assert path.read_bytes() == old
    assert dot_files(tmp_path) == []
    monkeypatch.undo()
    new.to_csv(path)  # and a write that succeeds replaces it
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("t,q:link1.") and len(lines) == 1 + len(new)


def test_to_npz_failure_leaves_file_intact(tmp_path, monkeypatch, arm_results):
    new, previous = arm_results
    path = tmp_path / "run.npz"
    previous.to_npz(path)
    old = path.read_bytes()

    def fails_half_way(file, *args, **kwargs):
        if hasattr(file, "write"):
            file.write(b"PK\x03\x04 half an archive")
        else:
            with open(file, "wb") as fh:
                fh.write(b"PK\x03\x04 half an archive")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", fails_half_way)
    with pytest.raises(OSError):
        new.to_npz(path)
    assert path.read_bytes() == old
    assert dot_files(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]


def test_to_npz_writes_the_name_given(tmp_path, arm_results):
    res, _ = arm_results
    res.to_npz(tmp_path / "RUN.NPZ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["RUN.NPZ"]
    back = fd.SimulationResult.from_npz(tmp_path / "RUN.NPZ")
    np.testing.assert_array_equal(back.t, res.t)
    np.testing.assert_array_equal(back.q, res.q)


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if the command line starts integrating."""

    def refuse(*args, **kwargs):
        raise AssertionError("the command simulated before checking its arguments")

    monkeypatch.setattr(cli, "simulate", refuse)


SIMULATE_ARGS = ["simulate", "two_link_arm", "--t", "0.05", "--samples", "5"]


def test_cli_refuses_to_overwrite_without_force(tmp_path, capsys, no_simulation):
    path = tmp_path / "run.npz"
    path.write_bytes(b"precious")
    assert exit_status([*SIMULATE_ARGS, "--out", str(path)]) == 2
    captured = capsys.readouterr()
    assert_one_error_line(captured.err)
    assert "--force" in captured.err
    assert captured.out == ""
    assert path.read_bytes() == b"precious"


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_cli_force_overwrites(tmp_path, capsys, suffix):
    path = tmp_path / f"run{suffix}"
    path.write_bytes(b"precious")
    assert exit_status([*SIMULATE_ARGS, "--out", str(path), "--force"]) == 0
    assert path.read_bytes() != b"precious"
    if suffix == ".npz":
        assert len(fd.SimulationResult.from_npz(path)) == 5
    else:
        assert len(path.read_text(encoding="utf-8").splitlines()) == 1 + 5
    assert dot_files(tmp_path) == []


def test_cli_out_in_missing_folder_exits_before_simulating(tmp_path, capsys, no_simulation):
    out = tmp_path / "missing" / "run.csv"
    assert exit_status([*SIMULATE_ARGS, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert_one_error_line(captured.err)
    assert captured.out == ""  # no summary: nothing was simulated
    assert not out.parent.exists()


def test_cli_plot_in_missing_folder_exits_2(capsys):
    assert not Path("/nonexistent").exists()
    assert exit_status(["demo", "--t", "0.05", "--plot", "/nonexistent/x.png"]) == 2
    assert_one_error_line(capsys.readouterr().err)


def test_cli_too_many_samples_exits_2(capsys, no_simulation):
    assert exit_status(["simulate", "two_link_arm", "--t", "0.05",
                        "--samples", "100000000"]) == 2
    err = capsys.readouterr().err
    assert "--samples" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------
# 3. hostile files
# ---------------------------------------------------------------------------------------------


def alias_bomb_yaml() -> str:
    """A valid-looking model whose flex.nodes expand through 9 levels of 10 aliases each to
    10⁹ numbers."""
    levels = ["&a0 [" + ", ".join(["1.0"] * 10) + "]"]
    for k in range(1, 9):
        levels.append(f"&a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]")
    return ("name: bomb\nbodies:\n- name: b\n  parent: null\n"
            "  joint: {type: revolute, axis: [0, 0, 1]}\n"
            "  rigid: {mass: 1.0, inertia: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}\n"
            "  flex:\n    node_masses: [1.0]\n    nodes: [" + ", ".join(levels) + "]\n")


def big_integer_mass_json() -> str:
    d = fd.models.builtin_model("two_link_arm").to_dict()
    d["bodies"][0]["rigid"]["mass"] = 123456789.0
    text = json.dumps(d)
    assert text.count("123456789.0") == 1
    return text.replace("123456789.0", "9" * 4000)


HOSTILE = {
    "deep.json": lambda: "[" * 100_000 + "]" * 100_000,
    "deep.yaml": lambda: "[" * 50_000 + "]" * 50_000,
    "big_mass.json": big_integer_mass_json,
    "bomb.yaml": alias_bomb_yaml,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_load_model_raises_value_error(name, tmp_path):
    path = tmp_path / name
    path.write_text(HOSTILE[name](), encoding="utf-8")
    status, value = within(5.0, lambda: fd.load_model(path))
    assert status == "raised" and isinstance(value, ValueError), value


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_cli_exits_2(name, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(HOSTILE[name](), encoding="utf-8")
    status, value = within(5.0, lambda: exit_status(["info", str(path)]))
    assert (status, value) == ("ok", 2)
    assert_one_error_line(capsys.readouterr().err)


def test_alias_bomb_is_rejected_quickly(tmp_path):
    text = alias_bomb_yaml()
    assert len(text) < 2000
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    status, value = within(2.0, lambda: fd.load_model(path))
    assert status == "raised" and isinstance(value, ValueError), value


@pytest.mark.parametrize("where", ["mass", "inertia", "gravity"])
def test_huge_integer_from_dict_is_a_value_error(where):
    d = fd.models.builtin_model("two_link_arm").to_dict()
    if where == "mass":
        d["bodies"][0]["rigid"]["mass"] = 10**400
    elif where == "inertia":
        d["bodies"][0]["rigid"]["inertia"][0][0] = 10**400
    else:
        d["gravity"] = [0, 0, -(10**400)]
    with pytest.raises(ValueError, match=where) as info:
        fd.Model.from_dict(d)
    assert not isinstance(info.value, OverflowError)


def test_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "m.json"
    os.mkfifo(fifo)

    def unblock():  # give a blocked reader its end of file
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    status, value = within(5.0, lambda: fd.load_model(fifo), unblock)
    assert status == "raised" and isinstance(value, OSError), value
    status, value = within(5.0, lambda: exit_status(["info", str(fifo)]), unblock)
    assert (status, value) == ("ok", 2)
    assert_one_error_line(capsys.readouterr().err)


def duplicate_top_level_yaml() -> str:
    import yaml

    return yaml.safe_dump(fd.models.builtin_model("two_link_arm").to_dict()) + "name: other\n"


DUPLICATE_NESTED_YAML = """\
name: dup
bodies:
- name: a
  parent: null
  joint: {type: revolute, axis: [0, 0, 1]}
  rigid: {mass: 1.0, mass: 2.0, inertia: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}
"""


@pytest.mark.parametrize("key", ["name", "mass"])
def test_yaml_duplicate_keys_are_rejected(key, tmp_path, capsys):
    path = tmp_path / "dup.yaml"
    text = duplicate_top_level_yaml() if key == "name" else DUPLICATE_NESTED_YAML
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate") as info:
        fd.load_model(path)
    assert repr(key) in str(info.value)
    assert exit_status(["info", str(path)]) == 2
    assert_one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------------------------------------
# 4. validation
# ---------------------------------------------------------------------------------------------


def rigid_body(name="b", parent=None, joint=None, **extra):
    body = {"name": name, "parent": parent,
            "joint": joint or {"type": "revolute", "axis": [0, 0, 1]},
            "rigid": {"mass": 1.0, "inertia": EYE3}}
    body.update(extra)
    return body


def rotation_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotation_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rotation_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rodrigues(axis, angle: float) -> np.ndarray:
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def quaternion_matrix(wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(wxyz, float) / np.linalg.norm(wxyz)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


@pytest.mark.parametrize("rotated", [False, True])
def test_inertia_with_negative_principal_moment_is_rejected(rotated):
    I = np.diag([-1e-2, 1e10, 1e10])
    if rotated:
        R = rodrigues([0.3, -1.2, 0.5], 0.9)
        I = R @ I @ R.T
    d = {"bodies": [rigid_body(rigid={"mass": 1.0, "inertia": I.tolist()})]}
    with pytest.raises(ValueError, match="positive semi-definite") as info:
        fd.Model.from_dict(d)
    assert "inertia" in str(info.value)


def test_indefinite_stiffness_is_rejected():
    flex = {"nodes": [[1.0, 0.0, 0.0]], "node_masses": [1.0],
            "modes": np.eye(6)[:, [4, 5]].tolist(),
            "stiffness": np.diag([1e6, -1e-4]).tolist()}
    with pytest.raises(ValueError, match="positive semi-definite") as info:
        fd.Model.from_dict({"bodies": [rigid_body(flex=flex)]})
    assert "stiffness" in str(info.value)


def test_massless_rotor_leaf_is_accepted():
    Izz = 0.2
    d = {"gravity": GRAVITY, "bodies": [
        rigid_body("arm"),
        rigid_body("rotor", "arm",
                   joint={"type": "revolute", "axis": [0, 0, 1],
                          "placement": {"translation": [1.0, 0.0, 0.0]}},
                   rigid={"mass": 0.0, "inertia": np.diag([0.1, 0.1, Izz]).tolist()}),
    ]}
    model = fd.Model.from_dict(d)
    q = np.array([0.3, -1.1])
    u = np.array([0.7, 2.0])
    tau = np.array([0.5, 1.0])
    udot = fd.forward_dynamics(model, q, u, tau)
    assert np.all(np.isfinite(udot))
    # the rotor's own equation: Izz (θ̈_arm + θ̈_rotor) = τ_rotor
    assert Izz * (udot[0] + udot[1]) == pytest.approx(tau[1], rel=1e-12)


def test_rounded_rotation_matrix_is_rejected_with_alternatives():
    R6 = np.round(rotation_z(math.radians(30.0)), 6)
    joint = {"type": "revolute", "axis": [0, 0, 1], "placement": {"rotation": R6.tolist()}}
    with pytest.raises(ValueError, match="axis_angle") as info:
        fd.Model.from_dict({"bodies": [rigid_body(joint=joint)]})
    assert "placement" in str(info.value)


def test_rotation_forms_build_the_exact_rotation_and_round_trip(tmp_path):
    a, b, c = 0.7, -0.4, 1.9
    wxyz = [0.9, -0.3, 0.2, 0.5]
    forms = [
        ({"axis_angle": [0.0, 0.0, 1.0, 0.4]}, rotation_z(0.4)),
        ({"axis_angle": [1.0, -2.0, 0.5, 2.5]}, rodrigues([1.0, -2.0, 0.5], 2.5)),
        ({"quaternion": wxyz}, quaternion_matrix(wxyz)),
        ({"quaternion": (3.0 * np.array(wxyz)).tolist()}, quaternion_matrix(wxyz)),
        ({"euler": {"sequence": "ZYX", "angles": [a, b, c]}},
         rotation_z(a) @ rotation_y(b) @ rotation_x(c)),
    ]
    bodies, parent = [], None
    for k, (rotation, _) in enumerate(forms):
        placement = {**rotation, "translation": [0.1 * k, 0.0, 0.2]}
        bodies.append(rigid_body(f"b{k}", parent, joint={
            "type": "revolute", "axis": [0, 0, 1], "placement": placement,
            "child_placement": rotation}))
        parent = f"b{k}"
    model = fd.Model.from_dict({"name": "forms", "bodies": bodies})
    for k, (rotation, exact) in enumerate(forms):
        for got in (model.placement[k].R, model.child_placement[k].R):
            err = float(np.max(np.abs(got - exact)))
            assert err <= 1e-14, f"{rotation}: max |R - R_exact| = {err:.2e}"
    path = tmp_path / "forms.json"
    fd.save_model(model, path)
    back = fd.load_model(path)
    assert json.dumps(back.to_dict()) == json.dumps(model.to_dict())
    for k in range(len(forms)):
        assert back.placement[k].R.tobytes() == model.placement[k].R.tobytes()


@pytest.mark.parametrize("name", ["link.1", "link\x00", "li\nnk"])
def test_body_names_with_separator_or_control_characters_are_rejected(name):
    with pytest.raises(ValueError, match=r"bodies\[1\]"):
        fd.Model.from_dict({"bodies": [rigid_body("base"), rigid_body(name, "base")]})
    b = fd.ModelBuilder("names")
    b.add_body("base", None, joint={"type": "revolute", "axis": [0, 0, 1]},
               rigid={"mass": 1.0, "inertia": EYE3})
    b.add_body(name, "base", joint={"type": "revolute", "axis": [0, 0, 1]},
               rigid={"mass": 1.0, "inertia": EYE3})
    with pytest.raises(ValueError, match=r"bodies\[1\]"):
        b.build()


# ---------------------------------------------------------------------------------------------
# 5. modes without inertia of their own
# ---------------------------------------------------------------------------------------------


def repeated_mode_model() -> fd.Model:
    flex = beam_modes(1.0, 2.0, EI_y=60.0, EI_z=50.0, n_elements=4, n_modes=3).to_flex_dict()
    modes = np.array(flex["modes"])
    modes[:, 1] = modes[:, 0]
    flex["modes"] = modes.tolist()
    return fd.Model.from_dict({"name": "repeated", "bodies": [
        rigid_body("beam", rigid={"mass": 1.0, "inertia": (0.1 * np.eye(3)).tolist()},
                   flex=flex)]})


def massless_mode_model() -> fd.Model:
    """``arm``'s mode 0 moves only its massless tip node, where ``tip`` is attached."""
    return fd.Model.from_dict({"name": "massless_mode", "gravity": GRAVITY, "bodies": [
        rigid_body("arm", joint={"type": "revolute", "axis": [0, 1, 0]},
                   rigid={"mass": 1.0, "com": [0.5, 0.0, 0.0],
                          "inertia": np.diag([0.01, 0.1, 0.1]).tolist()},
                   flex={"nodes": [[0.5, 0.0, 0.0], [1.0, 0.0, 0.0]],
                         "node_masses": [1.0, 0.0],
                         # mode 0: tip node (1) along z; mode 1: middle node (0) along z
                         "modes": np.eye(12)[:, [11, 5]].tolist(),
                         "stiffness": np.diag([100.0, 50.0]).tolist()}),
        rigid_body("tip", "arm",
                   joint={"type": "revolute", "axis": [0, 1, 0], "parent_node": 1},
                   rigid={"mass": 0.5, "com": [0.2, 0.0, 0.0],
                          "inertia": np.diag([0.01, 0.02, 0.02]).tolist()}),
    ]})


@pytest.mark.parametrize("build", [repeated_mode_model, massless_mode_model])
def test_info_reports_modes_without_inertia(build, tmp_path, capsys):
    path = tmp_path / "model.json"
    fd.save_model(build(), path)
    assert exit_status(["info", str(path)]) == 0
    captured = capsys.readouterr()
    assert "inf" in captured.out
    assert captured.err == ""


def test_ruthless_names_the_repeated_modes():
    model = repeated_mode_model()
    with pytest.raises(ValueError) as info:
        fd.forward_dynamics(model, model.neutral_configuration(), np.zeros(model.nu),
                            fidelity="ruthless")
    msg = str(info.value)
    assert "'beam'" in msg and "[0, 1]" in msg


def test_mode_moving_only_massless_nodes():
    model = massless_mode_model()
    q, u, _ = random_state(model, np.random.default_rng(2), eta_scale=0.05)
    M = fd.mass_matrix(model, q)
    eig = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert eig[0] > 1e-6 * eig[-1]  # the tip body lends the mode its inertia
    assert np.all(np.isfinite(fd.forward_dynamics(model, q, u)))
    with pytest.raises(ValueError) as info:
        fd.forward_dynamics(model, q, u, fidelity="ruthless")
    msg = str(info.value)
    assert "'arm'" in msg and "[0]" in msg and "massless" in msg


# ---------------------------------------------------------------------------------------------
# 6. partial results
# ---------------------------------------------------------------------------------------------

T_EVAL = np.linspace(0.0, 0.1, 11)


@pytest.fixture(scope="module")
def nan_torque_run():
    model = fd.models.builtin_model("two_link_arm")

    def tau(t, q, u):
        if t > 0.03:
            return np.full(model.nu, np.nan)
        return np.array([0.5, -0.3, 0.0, 0.0])

    dop853 = fd.ScipyIVP("DOP853")  # a run to 0.03 s takes the same steps as one to 0.1 s
    with pytest.raises(fd.SimulationError) as info:
        fd.simulate(model, t_span=(0.0, 0.1), tau=tau, t_eval=T_EVAL, integrator=dop853)
    reference = fd.simulate(model, t_span=(0.0, 0.03), tau=tau, t_eval=T_EVAL[:4],
                            integrator=dop853)
    return info.value, reference


def test_simulation_error_reports_the_failure_time(nan_torque_run):
    err, _ = nan_torque_run
    assert math.isfinite(err.t)
    assert 0.03 < err.t <= 0.045
    assert err.t not in T_EVAL
    assert "tau" in str(err)


def test_simulation_error_partial_matches_a_run_stopped_early(nan_torque_run):
    err, reference = nan_torque_run
    partial = err.partial
    assert isinstance(partial, fd.SimulationResult)
    n = len(partial)
    assert n >= 3
    np.testing.assert_array_equal(partial.t, T_EVAL[:n])
    for name in ("q", "u", "tau", "work"):
        got, ref = getattr(partial, name), getattr(reference, name)[:n]
        assert_close(got, ref, f"partial.{name}", tol=1e-6, scale=1e-8)
    assert np.all(np.isfinite(partial.total_energy))


def test_simulation_error_partial_has_every_sample_before_the_failure(nan_torque_run):
    err, reference = nan_torque_run
    partial = err.partial
    np.testing.assert_array_equal(partial.t, T_EVAL[T_EVAL < err.t])  # 0, 0.01, 0.02, 0.03
    assert_close(partial.q, reference.q, "partial.q", tol=1e-6, scale=1e-8)


def test_solver_failure_reports_time_and_partial():
    model = fd.models.builtin_model("two_link_arm")

    class FailingRK45(scipy.integrate.RK45):
        def _step_impl(self):
            if self.t >= 0.025:
                return False, "injected step failure"
            return super()._step_impl()

    with pytest.raises(fd.SimulationError) as info:
        fd.simulate(model, t_span=(0.0, 0.1), tau=np.array([0.5, -0.3, 0.0, 0.0]),
                    t_eval=T_EVAL, integrator=FailingRK45, max_step=0.004)
    err = info.value
    assert 0.025 <= err.t < 0.03
    assert "injected step failure" in err.solver_message
    np.testing.assert_array_equal(err.partial.t, T_EVAL[:3])


@pytest.mark.parametrize("h", [0.03, 0.01])
def test_a_diverging_explicit_integrator_is_named_as_the_cause(h):
    """RK4 on the two-link arm with two modes per link, whose stiffest mode (30 Hz) allows
    steps below 0.015 s (``max_stable_step``): at twice that step the state grows until an
    articulated inertia is singular, and the error says the integrator diverged and what to
    use instead; at two thirds of it the run succeeds, and a failure of the model itself
    (a NaN torque) carries no such advice."""
    arm = fd.models.two_link_arm(n_modes=2)
    limit = fd.max_stable_step(arm, "rk4")
    assert 0.01 < limit < 0.03
    tau = np.r_[5.0, np.zeros(arm.nu - 1)]
    if h > limit:
        with pytest.raises(fd.SimulationError, match="singular") as info:
            fd.simulate(arm, t_span=(0.0, 2.0), tau=tau, integrator=fd.RK4(h=h))
        assert "most likely the explicit integrator diverging" in str(info.value)
        assert "RadauIIA" in str(info.value) and f"{limit:.2g} s" in str(info.value)
        return
    fd.simulate(arm, t_span=(0.0, 2.0), tau=tau, integrator=fd.RK4(h=h))
    with pytest.raises(fd.SimulationError) as info:
        fd.simulate(arm, t_span=(0.0, 2.0), integrator=fd.RK4(h=h),
                    tau=lambda t, q, u: tau * (np.nan if t > 0.5 else 1.0))
    assert "diverging" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# 7. input consistency
# ---------------------------------------------------------------------------------------------


def test_python_lists_are_accepted():
    model = spacecraft_with_gravity()
    q, u, udot = random_state(model, np.random.default_rng(4), eta_scale=0.1)
    tau = fd.inverse_dynamics(model, q, u, udot)
    assert_close(fd.forward_dynamics(model, q.tolist(), u.tolist(), tau.tolist()),
                 fd.forward_dynamics(model, q, u, tau), "forward_dynamics(lists)", tol=0)
    assert_close(fd.inverse_dynamics(model, q.tolist(), u.tolist(), udot.tolist()),
                 tau, "inverse_dynamics(lists)", tol=0)
    assert_close(fd.bias_forces(model, q.tolist(), u.tolist()),
                 fd.bias_forces(model, q, u), "bias_forces(lists)", tol=0)
    assert_close(model.qdot(q.tolist(), u.tolist()), model.qdot(q, u), "qdot(lists)", tol=0)


NON_NUMERIC = {
    "str": lambda a: a.astype(str),
    "object": lambda a: a.astype(object),
    "bool": lambda a: a != 0,
}


def _arm_arrays():
    model = fd.models.builtin_model("two_link_arm")
    q, u, udot = random_state(model, np.random.default_rng(8))
    return model, {"q": q, "u": u, "udot": udot, "tau": udot}


@pytest.mark.parametrize("kind", sorted(NON_NUMERIC))
@pytest.mark.parametrize("function, arg", [
    ("forward_dynamics", "q"), ("forward_dynamics", "u"), ("forward_dynamics", "tau"),
    ("inverse_dynamics", "q"), ("inverse_dynamics", "u"), ("inverse_dynamics", "udot"),
    ("bias_forces", "q"), ("bias_forces", "u"),
])
def test_non_numeric_arrays_raise_type_error(function, arg, kind):
    model, a = _arm_arrays()
    a[arg] = NON_NUMERIC[kind](a[arg])
    calls = {
        "forward_dynamics": lambda: fd.forward_dynamics(model, a["q"], a["u"], a["tau"]),
        "inverse_dynamics": lambda: fd.inverse_dynamics(model, a["q"], a["u"], a["udot"]),
        "bias_forces": lambda: fd.bias_forces(model, a["q"], a["u"]),
    }
    with pytest.raises(TypeError) as info:
        calls[function]()
    assert re.match(rf"{arg}\b", str(info.value)), str(info.value)


@pytest.mark.parametrize("kind", sorted(NON_NUMERIC))
@pytest.mark.parametrize("arg", ["q", "u"])
def test_qdot_non_numeric_arrays_raise_type_error(arg, kind):
    model, a = _arm_arrays()
    a[arg] = NON_NUMERIC[kind](a[arg])
    with pytest.raises(TypeError) as info:
        model.qdot(a["q"], a["u"])
    assert arg in str(info.value)


@pytest.mark.parametrize("method", ["articulated", "articulated-split", "composite"])
def test_overflowing_inputs_raise_floating_point_error(method):
    model, a = _arm_arrays()
    huge_u = a["u"].copy()
    huge_u[0] = 1e200
    with pytest.raises(FloatingPointError):
        fd.forward_dynamics(model, a["q"], huge_u, a["tau"], method=method)
    huge_tau = np.full(model.nu, 1e308)
    with pytest.raises(FloatingPointError):
        fd.forward_dynamics(model, a["q"], a["u"], huge_tau, method=method)


def test_overflowing_speeds_raise_floating_point_error_in_newton_euler():
    model, a = _arm_arrays()
    huge_u = a["u"].copy()
    huge_u[0] = 1e200
    with pytest.raises(FloatingPointError):
        fd.inverse_dynamics(model, a["q"], huge_u, a["udot"])
    with pytest.raises(FloatingPointError):
        fd.bias_forces(model, a["q"], huge_u)


def alternating_chain(ratio: float) -> fd.Model:
    """Six revolute links whose masses and inertias alternate 1 : ratio."""
    b = fd.ModelBuilder("alternating", gravity=GRAVITY)
    parent = None
    for k in range(6):
        s = 1.0 if k % 2 == 0 else ratio
        b.add_body(f"l{k}", parent,
                   joint={"type": "revolute", "axis": [0, 1, 0] if k % 2 else [0, 0, 1],
                          "placement": {"translation": [0.0 if k == 0 else 0.5, 0.0, 0.0]}},
                   rigid={"mass": s, "com": [0.25, 0.0, 0.0],
                          "inertia": s * np.diag([0.01, 0.03, 0.03])})
        parent = f"l{k}"
    return b.build()


@pytest.mark.parametrize("ratio", [1e-6, 1e-14])
def test_composite_solves_widely_different_masses(ratio):
    model = alternating_chain(ratio)
    rng = np.random.default_rng(6)
    q = rng.uniform(-1.0, 1.0, model.nq)
    u = rng.normal(size=model.nu)
    tau = rng.normal(size=model.nu) * np.where(np.arange(model.nu) % 2, ratio, 1.0)
    ab = fd.forward_dynamics(model, q, u, tau, method="articulated")
    cb = fd.forward_dynamics(model, q, u, tau, method="composite")
    assert_close(cb, ab, "composite vs articulated", tol=1e-8)


# ---------------------------------------------------------------------------------------------
# 8. smaller
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, name", [
    ({"max_step": "0.1"}, "max_step"),
    ({"max_step": True}, "max_step"),
    ({"max_step": -1.0}, "max_step"),
    ({"integrator": 42}, "integrator"),
    ({"integrator": "Euler"}, "integrator"),
])
def test_simulate_argument_errors_name_the_argument(kwargs, name):
    model = fd.models.builtin_model("two_link_arm")
    with pytest.raises(ValueError, match=name):
        fd.simulate(model, t_span=(0.0, 0.1), **kwargs)


def _chain_dict(n: int) -> dict:
    return {"name": "chain", "bodies": [
        {"name": f"b{i}", "parent": None if i == 0 else f"b{i - 1}",
         "joint": {"type": "revolute", "axis": [0, 0, 1]},
         "rigid": {"mass": 1.0, "inertia": EYE3}} for i in range(n)]}


def _build_time(d: dict, repeat: int) -> float:
    """The least CPU time of this thread (not wall time, which a busy machine or a parallel
    test worker stretches) that building ``d`` took in ``repeat`` tries."""
    best = math.inf
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.thread_time()
            fd.Model.from_dict(d)
            best = min(best, time.thread_time() - start)
    finally:
        gc.enable()
    return best


@pytest.mark.slow
def test_validation_time_is_linear_in_the_number_of_bodies():
    small, large = _chain_dict(2000), _chain_dict(8000)
    t_small = _build_time(small, repeat=3)
    t_large = _build_time(large, repeat=3)
    ratio = t_large / t_small
    # linear: 4; the former per-body name look-ups gave 6.1 at these sizes, quadratic is 16
    assert ratio < 5.5, f"4× the bodies took {ratio:.1f}× the time (linear: 4, quadratic: 16)"
