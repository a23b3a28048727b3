"""Symbolic equations of motion in Poincaré's form (:mod:`flexdyn.symbolic`, sympy).

Checked: Kwatny & Blankenship's thin disk on a simple spherical joint (Eqs 54a–b) and on the
compound joint of its axes (Eqs 55a–b) as exact expressions; a flexible arm (a hub, a
flexible link whose nodes rotate by the default exponential map, a payload on a universal
joint at its tip) against the compiled engine's ``"full"`` model — mass matrix, bias,
forward dynamics, ``Γ`` — at rest and at random states, and a link for the other tip
kinematics; ``Ṁ = 𝒞 + 𝒞ᵀ`` by complex step of the generated ``M``; the generated C source,
compiled and called, against the numpy functions.  Models stay small: symbolic expressions
grow fast with the number of bodies (``docs/symbolic.md``).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.beam import beam_modes
from helpers import rel_err
from oracles import kwatny_arm, kwatny_disk

sp = pytest.importorskip("sympy")
symbolic = pytest.importorskip("flexdyn.symbolic")

DISK_H = np.vstack([np.eye(3), np.zeros((3, 3))])


def _disk(joint: dict) -> fd.Model:
    return (fd.ModelBuilder("thin disk", gravity=(0.0, 0.0, 0.0))
            .add_body("disk", joint=joint,
                      rigid={"mass": 5.0, "inertia": np.diag([5.0, 5.0, 10.0])}).build())


def _zero(expr) -> bool:
    return all(sp.simplify(e) == 0 for e in sp.Matrix(expr))


def test_thin_disk_simple_spherical_joint_eqs_54():
    """``Γ`` of Eq 54a, ``𝓜 = diag(5, 5, 10)`` and ``𝒞 p = ω × Iω`` (Euler's equations; K&B
    print the right-hand side ``F = −𝒞 p``)."""
    sm = symbolic.symbolic_model(_disk({"type": "map", "map": DISK_H.tolist()}), simplify=True)
    t1, t2, _ = sm.q
    w1, w2, w3 = sm.p
    Gamma = sp.Matrix([[1, sp.sin(t1) * sp.tan(t2), sp.cos(t1) * sp.tan(t2)],
                       [0, sp.cos(t1), -sp.sin(t1)],
                       [0, sp.sin(t1) / sp.cos(t2), sp.cos(t1) / sp.cos(t2)]])
    assert _zero(sm.Gamma - Gamma)
    assert sm.M == sp.diag(5, 5, 10)
    assert _zero(sm.C * sm.p + sp.Matrix([-5 * w2 * w3, 5 * w1 * w3, 0]))
    assert _zero(sm.F)


@pytest.mark.slow
def test_thin_disk_compound_joint_eqs_55():
    """Eq 55a (its last entry ``… + 5 sin² t₂``: the square is lost in print), ``Γ = I`` and
    ``𝒞 u = −F`` of Eq 55b."""
    model = _disk({"type": "compound", "factors": [DISK_H[:, [k]].tolist() for k in range(3)]})
    sm = symbolic.symbolic_model(model, simplify=True)
    M = sp.Matrix(kwatny_disk.mass_matrix(sm.q, sp))
    F = sp.Matrix(kwatny_disk.right_hand_side(sm.q, sm.p, sp))
    assert sm.Gamma == sp.eye(3)
    assert _zero(sm.M - M)
    assert _zero(sm.C * sm.p + F)


@pytest.fixture(scope="module")
def arm():
    """A hub on a revolute joint, a flexible link (two bending modes in the x-y plane: its
    nodes rotate, by the default exponential map), a payload on a universal joint at the
    tip."""
    link = beam_modes(1.0, 2.0, EI_z=40.0, n_elements=2, n_modes=2,
                      damping_ratio=0.02).to_flex_dict()
    model = (fd.ModelBuilder("flexible arm", gravity=(0.0, -9.81, 0.0))
             .add_body("hub", joint={"type": "revolute", "axis": [0, 0, 1]},
                       rigid={"mass": 3.0, "inertia": np.diag([0.1, 0.1, 0.2])})
             .add_body("link", "hub", joint={"type": "fixed"}, flex=link)
             .add_body("payload", "link",
                       joint={"type": "universal", "axes": [[0, 0, 1], [0, 1, 0]],
                              "parent_node": 2},
                       rigid={"mass": 0.5, "com": [0.1, 0.0, 0.0],
                              "inertia": np.diag([1e-3, 2e-3, 2e-3])})
             .build())
    sm = symbolic.symbolic_model(model)
    return model, sm, sm.functions()


def _states(model, n=3):
    """The undeformed configuration (where the exponential map's coefficients are at their
    series' centre), then random states."""
    rng = np.random.default_rng(1)
    for k in range(n):
        yield (np.zeros(model.nq) if k == 0 else 0.3 * rng.normal(size=model.nq),
               rng.normal(size=model.nu), rng.normal(size=model.nu))


@pytest.mark.slow
def test_arm_equals_the_engine(arm):
    model, sm, f = arm
    D = np.array(sm.D, dtype=float)
    for q, u, tau in _states(model):
        M = fd.mass_matrix(model, q, fidelity="full")
        assert rel_err(f["M"](q), M) < 1e-10
        assert rel_err(f["C"](q, u) @ u + f["F"](q) + D @ u,
                       fd.bias_forces(model, q, u, fidelity="full")) < 1e-10
        assert rel_err(f["forward_dynamics"](q, u, tau),
                       fd.forward_dynamics(model, q, u, tau, fidelity="full")) < 1e-10
        assert rel_err(f["Gamma"](q), model.Gamma(q)) < 1e-14
        assert rel_err(f["C"](q, u), fd.coriolis_matrix(model, q, u, fidelity="full")) < 1e-10


def test_joint_springs_and_dampers_are_in_f_and_d():
    """Springs with preload and dampers on a revolute and a universal joint: ``𝓕`` gains
    ``k (q − q₀) − τ₀`` and ``D`` the dampers, so the symbolic equations equal the engine's
    with its joint forces; friction, limits and torque limits are refused by name."""
    forces = {"stiffness": [3.0, 5.0], "rest": [0.2, -0.1], "preload": [0.5, 0.0],
              "damping": [0.3, 0.7]}
    model = (fd.ModelBuilder("springs", gravity=(0.0, -9.81, 0.0))
             .add_body("hub", joint={"type": "revolute", "axis": [0, 0, 1],
                                     "forces": {"stiffness": 2.0, "preload": 0.4,
                                                "damping": 0.1}},
                       rigid={"mass": 3.0, "com": [0.2, 0, 0], "inertia": np.diag([0.1, 0.1, 0.2])})
             .add_body("payload", "hub",
                       joint={"type": "universal", "axes": [[0, 0, 1], [0, 1, 0]],
                              "placement": {"translation": [0.5, 0, 0]}, "forces": forces},
                       rigid={"mass": 0.5, "com": [0.1, 0.0, 0.0],
                              "inertia": np.diag([1e-3, 2e-3, 2e-3])})
             .build())
    sm = symbolic.symbolic_model(model)
    f = sm.functions()
    D = np.array(sm.D, dtype=float)
    assert np.array_equal(D, np.diag([0.1, 0.3, 0.7]))
    for q, u, tau in _states(model):
        assert rel_err(f["C"](q, u) @ u + f["F"](q) + D @ u, fd.bias_forces(model, q, u)) < 1e-10
        assert rel_err(f["forward_dynamics"](q, u, tau), fd.forward_dynamics(model, q, u, tau)
                       ) < 1e-10
    rough = model.to_dict()
    rough["bodies"][1]["joint"]["forces"] = {**forces, "coulomb": 0.1}
    with pytest.raises(ValueError, match="'payload' have friction, limits or a torque limit"):
        symbolic.symbolic_model(fd.Model.from_dict(rough))


def test_arm_mass_matrix_rate_is_c_plus_c_transpose(arm):
    model, _, f = arm
    h = 1e-30
    for q, u, _ in _states(model):
        M_dot = f["M"](q + 1j * h * (f["Gamma"](q) @ u)).imag / h
        C = f["C"](q, u)
        assert np.max(np.abs(M_dot - C - C.T)) <= 1e-12 * max(1.0, np.max(np.abs(M_dot)))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_generated_c_source_compiles_and_agrees(arm, tmp_path):
    model, sm, f = arm
    (tmp_path / "arm.c").write_text(sm.c_source("arm"))
    lib = tmp_path / "arm.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "arm.c"),
                    "-lm"], check=True)
    so = ctypes.CDLL(str(lib))
    ptr = ctypes.POINTER(ctypes.c_double)
    q, u, _ = list(_states(model, 2))[1]  # deformed: the series away from their centre
    q, u = np.ascontiguousarray(q), np.ascontiguousarray(u)
    outputs = {"M": (model.nu, model.nu), "C": (model.nu, model.nu), "F": (model.nu,),
               "Gamma": (model.nq, model.nu)}
    for name, shape in outputs.items():
        out = np.zeros(shape)
        args = [q.ctypes.data_as(ptr)] + ([u.ctypes.data_as(ptr)] if name == "C" else [])
        getattr(so, f"arm_{name}")(*args, out.ctypes.data_as(ptr))
        ref = f[name](q, u) if name == "C" else f[name](q)
        assert rel_err(out, ref.reshape(shape)) < 1e-12, name


@pytest.mark.parametrize("tip", ["euler-321", "euler-123", "neglect"])
def test_other_tip_kinematics_equal_the_engine(tip):
    """A link bending and twisting (its nodes rotate about every axis) for the other node
    rotations of the tip-kinematics option."""
    link = beam_modes(1.0, 2.0, EI_z=40.0, GJ=10.0, polar_inertia_per_length=1e-2,
                      n_elements=2, n_modes=2).to_flex_dict()
    model = (fd.ModelBuilder("link", gravity=(0.0, -9.81, 0.0), tip_kinematics=tip)
             .add_body("link", joint={"type": "revolute", "axis": [0, 1, 0]}, flex=link)
             .build())
    f = symbolic.symbolic_model(model).functions()
    for q, u, _ in _states(model, 2):
        assert rel_err(f["M"](q), fd.mass_matrix(model, q, fidelity="full")) < 1e-10
        assert rel_err(f["C"](q, u) @ u + f["F"](q),
                       fd.bias_forces(model, q, u, fidelity="full")) < 1e-10


_EX, _EY, _EZ = (np.eye(6)[:, [k]] for k in range(3))


def kwatny_arm_model(simple_wrist: bool) -> fd.Model:
    """Kwatny & Blankenship's six-dof arm (Sec IV): a two-axis shoulder (y then z), a y
    elbow, a three-axis wrist (y, z, x) — compound (``Γ = I``) or simple (the joint map of
    all three: the gripper's angular velocity as speeds).  The shoulder's two axes do not
    span a subalgebra, so its simple form is not a joint of its own (a joint map's columns
    must): it is the compound joint in both models."""
    rod = {"mass": 1.0, "com": [0, 0, 1.5], "inertia": np.diag([0.75, 0.75, 0.0])}
    m3, L3, R3 = 0.5, 0.7, 0.35
    grip = {"mass": m3, "com": [0, 0, L3 / 2],
            "inertia": np.diag([m3 * (L3**2 + 3 * R3**2) / 12] * 2 + [m3 * R3**2 / 12])}
    wrist = ({"type": "map", "map": np.hstack([_EY, _EZ, _EX]).tolist()} if simple_wrist
             else {"type": "compound", "factors": [c.tolist() for c in (_EY, _EZ, _EX)]})
    at_tip = {"rotation": np.eye(3), "translation": [0, 0, 3.0]}
    return (fd.ModelBuilder("six-dof arm", gravity=(0.0, 0.0, -9.81))
            .add_body("upper", joint={"type": "compound",
                                      "factors": [_EY.tolist(), _EZ.tolist()]}, rigid=rod)
            .add_body("lower", "upper", joint={"type": "revolute", "axis": [0, 1, 0],
                                               "placement": at_tip}, rigid=rod)
            .add_body("gripper", "lower", joint={**wrist, "placement": at_tip}, rigid=grip)
            .build())


@pytest.mark.slow
@pytest.mark.parametrize("simple_wrist", [False, True])
def test_six_dof_arm_end_effector_and_wrist_inertia_sec_iv(simple_wrist):
    """The printed end-effector configuration ``XEndEf`` (all 16 entries, to round-off: the
    joint maps' factor order) and the wrist's entries of the printed last row of the inertia
    matrix, compound (``−0.0969792 sin t₂``, ``−0.091875 cos t₁ cos t₂ sin t₁``, …) and
    simple (``0, 0, 0.0969792``), from the generated ``M``.  (The printed shoulder and
    elbow entries of those rows do not vanish at ``t = 0``, where the gripper's x axis is
    perpendicular to both joints' motion of its centre of mass; we do not reproduce them —
    see ``docs/symbolic.md``.)"""
    model = kwatny_arm_model(simple_wrist)
    M_of = symbolic.symbolic_model(model).functions()["M"]
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(-2, 2, 6)
        pos = fd.compute_kinematics(model, q)
        X = kwatny_arm.end_effector(q)
        assert np.max(np.abs(pos.pose[2].R - X[:3, :3])) < 1e-14
        assert np.max(np.abs(pos.pose[2].apply(np.array([0, 0, 0.7])) - X[:3, 3])) < 1e-14
        M = M_of(q)
        assert rel_err(M, fd.mass_matrix(model, q, fidelity="full")) < 1e-12
        assert np.max(np.abs(M[5, 3:] - kwatny_arm.last_row_wrist(q, not simple_wrist))) < 5e-7


@pytest.mark.slow
def test_benchmark_quick():
    """``benchmarks/bench_symbolic.py --quick``: the expressions grow with the chain."""
    import sys
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if benchmarks not in sys.path:  # the developer instruments are not installed
        sys.path.insert(0, benchmarks)
    import bench_symbolic

    rows = bench_symbolic.main(["--quick"])
    assert len(rows) == 4
    for flexible in (False, True):
        one, two = (r for r in rows if r["flexible"] is flexible)
        assert two["ops_C"] > one["ops_C"] and two["c_chars"] > one["c_chars"]
