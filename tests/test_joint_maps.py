"""Joints from joint maps (Kwatny & Blankenship, "Symbolic construction of models for
multibody dynamics", Sec II–III): the kinds ``map``, ``compound``, ``planar``, ``euler`` and
``free-euler`` of :mod:`flexdyn.joints`.

Independent checks:

* the paper's Table II ``Γ(ε)`` expressions and Eqs 35a/35c/36 (written here from the paper)
  against :func:`~flexdyn.joints.kinematic_map`, :func:`~flexdyn.joints.compound_joint_map`
  and the joints;
* the thin disk on a simple spherical joint (Eqs 54a/54b: Euler's equations) and on the
  compound 3-dof universal joint without helper bodies (Eqs 55a/55b: Lagrange's equations,
  their bias forces derived here from the paper's mass matrix);
* random flexible chains and trees with every new kind against the brute-force oracle
  (:mod:`oracles.brute_force`, which parses the joint blocks itself: matrix exponentials and
  textbook Euler-rate matrices), every fidelity of the compiled engine against the reference
  field by field, and Pinocchio's planar and spherical-ZYX joints;
* singularity reporting, model-file validation and the round trip.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.joints import (
    JointSingularityError,
    JointSingularityWarning,
    compound_joint_map,
    is_subalgebra,
    kinematic_map,
    make_joint,
)
from helpers import assert_close, rel_err
from oracles.brute_force import BruteModel
from strategies import random_f_ext, random_model_dict, random_state
from test_lagrangian import TOL_C, TOL_M, bias_floor, check_full, ruthless_reference

NEW_KINDS = ("map", "compound", "planar", "euler", "free-euler")
sin, cos, tan = np.sin, np.cos, np.tan
E = np.eye(3)


def col(w=(0, 0, 0), v=(0, 0, 0)) -> list[float]:
    return [*map(float, w), *map(float, v)]


def hmat(*cols) -> np.ndarray:
    """A joint map (6 × r) from its columns."""
    return np.array(cols, dtype=float).T


# ---------------------------------------------------------------------------------------------
# Table II, Eqs 35 and 36
# ---------------------------------------------------------------------------------------------
S = 0.37  #: the screw pitch ``s`` of Table II


def _spherical_gamma(y):
    """Table II, spherical (and Eq 36b)."""
    return [[1, sin(y[0]) * tan(y[1]), cos(y[0]) * tan(y[1])],
            [0, cos(y[0]), -sin(y[0])],
            [0, sin(y[0]) / cos(y[1]), cos(y[0]) / cos(y[1])]]


#: name: (H, Γ(ε), whether span H is a subalgebra)
TABLE_II = {
    "revolute": (hmat(col((0, 0, 1))), lambda e: [[1]], True),
    "prismatic": (hmat(col(v=(1, 0, 0))), lambda e: [[1]], True),
    "screw": (hmat(col((1, 0, 0), (S, 0, 0))), lambda e: [[1]], True),
    "simple universal-screw": (hmat(col((0, 0, 1)), col((1, 0, 0), (S, 0, 0))),
                               lambda z: [[1, 0], [0, cos(z[0])]], False),
    "simple universal": (hmat(col((0, 0, 1)), col((1, 0, 0))),
                         lambda z: [[1, 0], [0, cos(z[0])]], False),
    "spherical": (hmat(col(E[0]), col(E[1]), col(E[2])), _spherical_gamma, True),
}


@pytest.mark.parametrize("name", TABLE_II)
def test_table_II_gamma(name):
    """Prop 2 reproduces Table II. For the closed maps ``ε̇ = Γ β`` is exact and the ``map``
    joint uses it; the "simple universal" maps span no subalgebra, so the paper's ``Γ`` is
    only the least-squares left inverse (the motion's twist leaves ``span H``), and the
    ``map`` joint takes the speeds ``ε̇`` (``Γ = I``) with ``H*(ε)`` of Prop 3 instead."""
    H, gamma, closed = TABLE_II[name]
    rng = np.random.default_rng(len(name))
    joint = make_joint({"type": "map", "map": H})
    assert is_subalgebra(H) == closed
    for _ in range(5):
        eps = rng.uniform(-1.3, 1.3, size=H.shape[1])
        np.testing.assert_allclose(kinematic_map(H, eps), gamma(eps), rtol=0, atol=1e-13)
        if closed:
            np.testing.assert_allclose(joint.Gamma(eps), gamma(eps), rtol=0, atol=1e-13)
            np.testing.assert_array_equal(joint.motion_subspace(eps), H)
        else:
            np.testing.assert_array_equal(joint.Gamma(eps), np.eye(H.shape[1]))
            assert joint.rates and not joint.constant_subspace


def test_free_joint_gamma_eq_36():
    """``H = I_6`` (Eq 36): ``Γ = diag(Γ_1, Γ_2)`` with the 3-2-1 Euler-rate matrix (36b) and
    the rotation matrix (36c); the ``free-euler`` 321 joint is this map."""
    rng = np.random.default_rng(36)
    joint = make_joint({"type": "free-euler", "sequence": "321"})
    for _ in range(5):
        ax, ay, az = a = rng.uniform(-1.3, 1.3, size=3)
        eps = np.concatenate([a, rng.normal(size=3)])
        G2 = [[cos(ay) * cos(az), cos(az) * sin(ax) * sin(ay) - cos(ax) * sin(az),
               cos(ax) * cos(az) * sin(ay) + sin(ax) * sin(az)],
              [cos(ay) * sin(az), cos(ax) * cos(az) + sin(ax) * sin(ay) * sin(az),
               -cos(az) * sin(ax) + cos(ax) * sin(ay) * sin(az)],
              [-sin(ay), cos(ay) * sin(ax), cos(ax) * cos(ay)]]
        want = np.zeros((6, 6))
        want[:3, :3], want[3:, 3:] = _spherical_gamma(a), G2
        np.testing.assert_allclose(kinematic_map(np.eye(6), eps), want, rtol=0, atol=1e-13)
        np.testing.assert_allclose(joint.Gamma(eps), want, rtol=0, atol=1e-13)
        np.testing.assert_allclose(joint.transform(eps).R, G2, rtol=0, atol=1e-15)  # Eq 35b
        np.testing.assert_allclose(joint.transform(eps).p, eps[3:], rtol=0, atol=1e-15)


def _eq_35a(t):
    return np.array([[1, 0, -sin(t[1])],
                     [0, cos(t[0]), cos(t[1]) * sin(t[0])],
                     [0, -sin(t[0]), cos(t[0]) * cos(t[1])],
                     [0, 0, 0], [0, 0, 0], [0, 0, 0]])


def test_compound_universal_joint_eqs_35():
    """The 3-dof universal joint as a compound of three one-column factors: ``H(ε)`` of
    Eq 35a, ``Γ = I`` (35c), the pose (35b) that of the simple spherical joint."""
    rng = np.random.default_rng(35)
    factors = [hmat(col(E[k])) for k in range(3)]
    joint = make_joint({"type": "compound", "factors": factors})
    simple = make_joint({"type": "map", "map": hmat(*(col(E[k]) for k in range(3)))})
    for _ in range(5):
        t = rng.uniform(-1.3, 1.3, size=3)
        np.testing.assert_allclose(compound_joint_map(factors, t), _eq_35a(t), atol=1e-15)
        np.testing.assert_allclose(joint.motion_subspace(t), _eq_35a(t), atol=1e-15)
        np.testing.assert_array_equal(joint.Gamma(t), np.eye(3))
        np.testing.assert_allclose(joint.transform(t).R, simple.transform(t).R, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# the thin disk, Eqs 54 and 55
# ---------------------------------------------------------------------------------------------
def disk(joint: dict) -> fd.Model:
    """Kwatny & Blankenship's thin disk: m = 5 kg, R = 2 m, I = diag(mR²/4, mR²/4, mR²/2)
    about its centre, free to rotate about it, no gravity."""
    m, R = 5.0, 2.0
    inertia = np.diag([m * R**2 / 4, m * R**2 / 4, m * R**2 / 2]).tolist()
    return fd.Model.from_dict({"bodies": [{"name": "disk", "joint": joint, "rigid": {
        "mass": m, "com": [0.0, 0.0, 0.0], "inertia": inertia}}]})


@pytest.mark.parametrize("joint", [{"type": "map", "map": hmat(*(col(E[k]) for k in range(3)))},
                                   {"type": "euler", "sequence": "321"}],
                         ids=["map", "euler"])
def test_disk_on_a_simple_spherical_joint_eq_54(joint):
    """Eq 54a: ``Γ`` the 3-2-1 Euler-rate matrix; Eq 54b: ``ℳ = diag(5, 5, 10)`` constant and
    Euler's equations ``ℳ ẇ + w × ℳ w = 0``. The printed ``F(t, w) = [−5 w₂w₃, 5 w₁w₃, 0]``
    is ``−w × ℳ w`` (the right-hand side ``ℳ ẇ = F``), so the bias forces are ``−F``."""
    model = disk(joint)
    rng = np.random.default_rng(54)
    for _ in range(5):
        t = rng.uniform(-1.3, 1.3, size=3)
        w1, w2, w3 = w = rng.normal(size=3)
        np.testing.assert_allclose(model.Gamma(t), _spherical_gamma(t), rtol=0, atol=1e-13)
        np.testing.assert_allclose(fd.mass_matrix(model, t), np.diag([5.0, 5.0, 10.0]),
                                   rtol=0, atol=1e-13)
        F = np.array([-5 * w2 * w3, 5 * w1 * w3, 0.0])
        C = fd.bias_forces(model, t, w)
        np.testing.assert_allclose(C, -F, rtol=0, atol=1e-12)
        np.testing.assert_allclose(C, np.cross(w, [5 * w1, 5 * w2, 10 * w3]), atol=1e-12)


def _eq_55a(t):
    """Eq 55a (its last entry printed ``+5 sin t₂``: the square is lost in the print, as
    ``Bᵀ diag(5, 5, 10) B`` with ``B`` of Eq 35a shows)."""
    t1, t2 = t[0], t[1]
    return np.array([
        [5, 0, -5 * sin(t2)],
        [0, 5 / 2 * (3 - cos(2 * t1)), -5 / 2 * cos(t2) * sin(2 * t1)],
        [-5 * sin(t2), -5 / 2 * cos(t2) * sin(2 * t1),
         10 * cos(t1)**2 * cos(t2)**2 + 5 * cos(t2)**2 * sin(t1)**2 + 5 * sin(t2)**2]])


def _lagrange_bias(mass, t, u):
    """``C_k = Σ_ij (∂M_kj/∂t_i − ½ ∂M_ij/∂t_k) u_i u_j`` of a mass matrix ``mass(t)``
    (Lagrange's equations), its derivatives by the complex step."""
    h = 1e-30
    dM = [mass(t + 1j * h * np.eye(3)[k]).imag / h for k in range(3)]
    return np.array([sum((dM[i][k, j] - 0.5 * dM[k][i, j]) * u[i] * u[j]
                         for i in range(3) for j in range(3)) for k in range(3)])


def _eq_55b(t, u):
    """Eq 55b as printed."""
    t1, t2 = t[0], t[1]
    u1, u2, u3 = u
    F1 = (u3 * (-5 * u2 * cos(2 * t1) * cos(t2) - 5 * u3 * cos(t2)**2 * sin(2 * t1)) / 2
          + u2 * (5 * u3 * cos(t2) + (-5 * u3 * cos(2 * t1) * cos(t2)
                                      + 5 * u2 * sin(2 * t1)) / 2))
    F2 = (u1 * (-5 * u3 * cos(t2) / 2 + 5 * u3 * cos(2 * t1) * cos(t2) - 5 * u2 * sin(2 * t1))
          - 5 * u2 * u3 * sin(2 * t1) * sin(t2) / 4
          + (u3 * (-5 * u1 * cos(t2) + 5 * u2 * sin(2 * t1) * sin(t2) / 2
                   - 5 * u3 * cos(t1)**2 * sin(2 * t2))) / 2)
    F3 = (u1 * (5 * u2 * cos(2 * t1) * cos(t2) + 5 * u3 * cos(t2)**2 * sin(2 * t1))
          + u2 * (5 * u1 * cos(t2) - 5 * u2 * sin(2 * t1) * sin(t2) / 2
                  + 5 * u3 * cos(t1)**2 * sin(2 * t2)))
    return np.array([F1, F2, F3])


def test_disk_on_a_compound_universal_joint_eq_55():
    """The disk on the compound 3-dof universal joint (three one-column factors, no massless
    helper bodies): ``Γ = I``, ``ℳ`` of Eq 55a, and the bias forces of Lagrange's equations
    from that ``ℳ``; the printed Eq 55b is their negative (as in Eq 54b)."""
    model = disk({"type": "compound", "factors": [hmat(col(E[k])) for k in range(3)]})
    rng = np.random.default_rng(55)
    for _ in range(5):
        t, u = rng.uniform(-1.3, 1.3, size=3), rng.normal(size=3)
        np.testing.assert_array_equal(model.Gamma(t), np.eye(3))
        np.testing.assert_allclose(fd.mass_matrix(model, t), _eq_55a(t), rtol=0, atol=1e-13)
        C = fd.bias_forces(model, t, u)
        np.testing.assert_allclose(C, _lagrange_bias(_eq_55a, t, u), rtol=0, atol=1e-12)
        np.testing.assert_allclose(C, -_eq_55b(t, u), rtol=0, atol=1e-12)


@pytest.mark.parametrize("sequence", ["321", "123"])
def test_euler_disk_tumbles_as_the_quaternion_disk(sequence):
    """The same torque-free tumbling of the disk (reference backend, away from the gimbal
    lock) integrated in Euler angles and in a quaternion: the same attitude and angular
    velocity after 2 s."""
    from flexdyn.spatial import quat_to_rot, rot_to_quat

    euler = disk({"type": "euler", "sequence": sequence})
    quat = disk({"type": "spherical"})
    q0, u0 = np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.1, 2.0])
    options = {"t_span": (0.0, 2.0), "backend": "reference", "rtol": 1e-10, "atol": 1e-12}
    a = fd.simulate(euler, q0, u0, **options)
    b = fd.simulate(quat, rot_to_quat(euler.joints[0].transform(q0).R), u0, **options)
    np.testing.assert_allclose(euler.joints[0].transform(a.q[-1]).R, quat_to_rot(b.q[-1]),
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.u[-1], b.u[-1], rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# random models with the new kinds
# ---------------------------------------------------------------------------------------------
def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def screw_line(rng: np.random.Generator, pitch: float = 0.0) -> list[float]:
    """A screw of ``pitch`` about a random line (through a random point)."""
    a, c = unit(rng), rng.normal(size=3)
    return col(a, np.cross(c, a) + pitch * a)


def rotations_about_a_point(rng: np.random.Generator) -> np.ndarray:
    """so(3) about a random point in a random basis: a subalgebra of three columns."""
    c = rng.normal(size=3)
    A = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    return hmat(*(col(A[:, k], np.cross(c, A[:, k])) for k in range(3)))


def product_joint(rng: np.random.Generator, kind: str, variant: int = 0) -> dict:
    """The kind-specific keys of a random joint of a new ``kind``."""
    if kind == "planar":
        return {"type": kind, "axis": unit(rng).tolist()}
    if kind in ("euler", "free-euler"):
        return {"type": kind, "sequence": ("321", "123")[variant % 2]}
    if kind == "map":
        if variant % 2:
            return {"type": kind, "map": rotations_about_a_point(rng).tolist()}
        return {"type": kind, "map": hmat(screw_line(rng), screw_line(rng, 0.3),
                                          col(v=unit(rng))).tolist()}
    return {"type": kind, "factors": [rotations_about_a_point(rng).tolist(),
                                      hmat(screw_line(rng, 0.2)).tolist(),
                                      hmat(col(v=unit(rng))).tolist()]}


def random_product_model(rng: np.random.Generator, kinds, parents, n_nodes, n_modes,
                         **options) -> tuple[dict, fd.Model, np.ndarray, np.ndarray]:
    """A random flexible model (:func:`strategies.random_model_dict`, drawn with free joints,
    whose six speeds keep the modes clear of the joint's motions) with the joints replaced by
    new kinds, and a random state (product-joint angles in [−1.2, 1.2])."""
    d = random_model_dict(rng, parents, ["free"] * len(parents), n_nodes, n_modes, **options)
    for i, (body, kind) in enumerate(zip(d["bodies"], kinds, strict=True)):
        body["joint"] = {**body["joint"], **product_joint(rng, kind, i)}
    model = fd.Model.from_dict(d)
    q, u, _ = random_state(model, rng)
    for i, joint in enumerate(model.joints):
        s = model.q_slice(i).start
        q[s:s + joint.nq] = rng.uniform(-1.2, 1.2, size=joint.nq)
    return d, model, q, u


@pytest.mark.slow
@pytest.mark.parametrize("kind", NEW_KINDS)
@pytest.mark.parametrize("topology", ["chain", "tree"])
def test_against_brute_force(kind, topology):
    """Three flexible bodies on joints of ``kind`` (and a mix of all kinds): poses, ``Γ``,
    energies, ``M`` and ``C`` of every fidelity against the brute-force oracle."""
    rng = np.random.default_rng([NEW_KINDS.index(kind), topology == "tree"])
    parents = [-1, 0, 1] if topology == "chain" else [-1, 0, 0]
    for kinds in ([kind] * 3, [kind, *rng.choice(NEW_KINDS, size=2)]):
        d, model, q, u = random_product_model(rng, kinds, parents, [3, 2, 3], [3, 2, 4],
                                              gravity=True)
        f_ext = random_f_ext(model, rng)
        check_full(d, model, q, u, f_ext)
        M_ref, C_ref = ruthless_reference(BruteModel(d), q, u, f_ext)
        assert rel_err(fd.mass_matrix(model, q, "ruthless"), M_ref) < TOL_M
        C = fd.bias_forces(model, q, u, "ruthless", f_ext=f_ext)
        assert rel_err(C, C_ref, scale=bias_floor(M_ref, u)) < TOL_C


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_engine_equals_the_reference(kind):
    """Every fidelity of the compiled engine against the reference tier, field by field
    (``H*`` through ℋ, the velocity products with ``Ḣ* β`` through ``a_m``), and its
    outputs: ``M``, inverse and forward dynamics, ``ẋ = [Γ u; u̇]``."""
    pytest.importorskip("numba")
    from flexdyn.engine import Engine

    rng = np.random.default_rng([7, NEW_KINDS.index(kind)])
    kinds = [kind, kind, rng.choice(NEW_KINDS)]
    d, model, q, u = random_product_model(rng, kinds, [-1, 0, 0], [3, 2, 3], [2, 2, 3],
                                          gravity=True)
    f, udot = random_f_ext(model, rng), rng.normal(size=model.nu)
    tau = rng.normal(size=model.nu)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=Warning)  # numba performance hints
        for fidelity in fd.FIDELITIES:
            engine = Engine(model, fidelity)
            w = engine.terms(q, u, f)
            ref = fd.compute_kinematics(model, q, fidelity)
            vel = fd.compute_velocities(model, ref, u)
            for i in range(model.n_bodies):
                m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
                assert_close(w.phi[i], ref.phi[i], f"φ({i})", scale=1.0)
                assert_close(w.Hcal[i, :nj + m, :m + 6], ref.Hcal[i], f"ℋ({i})", scale=1.0)
                scale = max(1.0, float(np.max(np.abs(vel.b_m[i]))))
                assert_close(w.V_m[i, :m + 6], vel.V_m[i], f"V_m({i})", scale=1.0)
                assert_close(w.a_m[i, :m + 6], vel.a_m[i], f"a_m({i})", scale=scale)
            M = fd.mass_matrix(model, q, fidelity)
            assert_close(engine.mass_matrix(q), M, "M")
            scale = float(np.max(np.abs(M)))
            ref_tau = fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f)
            assert_close(engine.inverse_dynamics(q, u, udot, f), ref_tau, "τ", scale=scale)
            ref_udot = fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f)
            xdot = engine.state_derivative(np.concatenate([q, u]), tau, f)
            assert_close(xdot[:model.nq], model.qdot(q, u), "q̇", scale=1.0)
            assert_close(xdot[model.nq:], ref_udot, "u̇", tol=1e-8, scale=1.0)


# ---------------------------------------------------------------------------------------------
# Pinocchio: planar and spherical ZYX joints
# ---------------------------------------------------------------------------------------------
def _rigid_chain(rng: np.random.Generator, joints: list[dict]) -> dict:
    bodies = []
    for i, joint in enumerate(joints):
        A = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        inertia = A @ np.diag(rng.uniform(0.1, 0.2, size=3)) @ A.T  # triangle inequality
        bodies.append({
            "name": f"b{i}", "parent": None if i == 0 else f"b{i - 1}",
            "joint": {**joint, "placement": {
                "axis_angle": [*unit(rng), float(rng.uniform(-2, 2))],
                "translation": rng.normal(size=3).tolist()}},
            "rigid": {"mass": float(rng.uniform(0.5, 2.0)), "com": rng.normal(size=3).tolist(),
                      "inertia": inertia.tolist()}})
    return {"gravity": [0.3, -0.2, -9.81], "bodies": bodies}


@pytest.mark.parametrize("kind", ["planar", "euler"])
def test_against_pinocchio(kind):
    """A chain euler/planar – revolute – euler/planar against ``JointModelPlanar`` (``q =
    (x, y, cos θ, sin θ)``, ``v = (v_x, v_y, ω)`` in the moving frame: the same speeds) and
    ``JointModelSphericalZYX`` (``q = (ψ, θ, φ)``, ``v = q̇``: flexdyn's speeds are
    ``u = T(q) v`` with ``T⁻¹ = P Γ``, ``P`` reversing the angles), by ``crba`` and ``rnea``:
    ``M_pin = Tᵀ M T``, ``rnea(q, v, a) = Tᵀ τ(q, T v, T a + Ṫ v)``."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(["planar", "euler"].index(kind))
    spec = ({"type": "planar", "axis": [0.0, 0.0, 1.0]} if kind == "planar"
            else {"type": "euler", "sequence": "321"})
    d = _rigid_chain(rng, [spec, {"type": "revolute", "axis": unit(rng).tolist()}, spec])
    model = fd.Model.from_dict(d)
    pm = pin.Model()
    pm.gravity = pin.Motion(np.array(d["gravity"]), np.zeros(3))
    jid = 0
    for i, body in enumerate(d["bodies"]):
        jm = (pin.JointModelRevoluteUnaligned(np.array(body["joint"]["axis"]))
              if body["joint"]["type"] == "revolute"
              else pin.JointModelPlanar() if kind == "planar" else pin.JointModelSphericalZYX())
        place = model.placement[i]
        jid = pm.addJoint(jid, jm, pin.SE3(place.R, place.p), f"j{i}")
        r = body["rigid"]
        pm.appendBodyToJoint(jid, pin.Inertia(r["mass"], np.array(r["com"]),
                                              np.array(r["inertia"])), pin.SE3.Identity())
    data = pm.createData()
    q = rng.uniform(-1.2, 1.2, size=model.nq)

    def to_pin(q):
        out = []
        for i, joint in enumerate(model.joints):
            qj = q[model.q_slice(i)][:joint.nq]
            if joint.type == "planar":
                out += [qj[0], qj[1], cos(qj[2]), sin(qj[2])]
            else:
                out += list(qj[::-1]) if joint.type == "euler" else list(qj)
        return np.array(out)

    def T(q):  # u = T(q) v
        G = np.eye(model.nu)
        for i, joint in enumerate(model.joints):
            if joint.type == "euler":
                s = model.u_slice(i)
                G[s, s] = np.linalg.inv(joint.Gamma(q[model.q_slice(i)])[::-1])
        return G

    qp = to_pin(q)
    pin.forwardKinematics(pm, data, qp)
    kin = fd.compute_kinematics(model, q)
    for i in range(model.n_bodies):
        np.testing.assert_allclose(data.oMi[i + 1].rotation, kin.pose[i].R, atol=1e-12)
        np.testing.assert_allclose(data.oMi[i + 1].translation, kin.pose[i].p, atol=1e-12)
    v, a = rng.normal(size=model.nu), rng.normal(size=model.nu)
    Tq = T(q)
    qdot = model.Gamma(q) @ Tq @ v
    step = 1e-4
    Tdot_v = sum(wk * (T(q + k * step * qdot) - T(q - k * step * qdot)) @ v
                 for k, wk in enumerate((4 / 5, -1 / 5, 4 / 105, -1 / 280), start=1)) / step
    M = pin.crba(pm, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    assert rel_err(M, Tq.T @ fd.mass_matrix(model, q) @ Tq) < 1e-12
    tau = fd.inverse_dynamics(model, q, Tq @ v, Tq @ a + Tdot_v)
    assert rel_err(pin.rnea(pm, data, qp, v, a), Tq.T @ tau) < 1e-9


# ---------------------------------------------------------------------------------------------
# singularities
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["euler", "free-euler", "map"])
@pytest.mark.parametrize("sequence", ["321", "123"])
def test_euler_singularity_is_reported(kind, sequence):
    """``μ = |cos θ|``: warning within 1e-2 of the gimbal lock, ``JointSingularityError`` at
    it (naming the joint and the gimbal lock for Euler kinds); the dynamics (speeds: angular
    velocity) stay regular there; the engine's ``q̇`` is not finite there."""
    cols = [col(E[k]) for k in ((0, 1, 2) if sequence == "321" else (2, 1, 0))]
    spec = ({"type": "map", "map": hmat(*cols)} if kind == "map"
            else {"type": kind, "sequence": sequence})
    model = disk(spec)
    q = np.zeros(model.nq)
    q[0], q[2] = 0.3, -0.4
    q[1] = np.pi / 2 - 0.2
    u = np.ones(model.nu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.qdot(q, u)  # μ ≈ 0.2: no report
    joint = model.joints[0]
    q[1] = np.pi / 2 - 5e-3
    assert joint.singularity(q) == pytest.approx(np.sin(5e-3), rel=1e-9)
    with pytest.warns(JointSingularityWarning, match="approach a singularity"):
        model.qdot(q, u)
    q[1] = -np.pi / 2
    match = "gimbal lock" if kind != "map" else "singular"
    with pytest.raises(JointSingularityError, match=match):
        model.Gamma(q)
    with pytest.raises(ValueError, match="Γ"):
        model.qdot(q, u)
    M = fd.mass_matrix(model, q)
    assert np.all(np.isfinite(M)) and np.linalg.cond(M) < 10
    pytest.importorskip("numba")
    from flexdyn.engine import Engine

    xdot = Engine(model).state_derivative(np.concatenate([q, u]))
    assert not np.all(np.isfinite(xdot[:3]))
    # the state derivative of simulation names the joint and its singularity
    with pytest.raises(fd.SimulationError, match="joint coordinates of 'disk' are at a "
                                                 "singularity"):
        fd.rhs(model)(0.0, np.concatenate([q, u]))
    assert np.all(np.isfinite(xdot[model.nq:]))


# ---------------------------------------------------------------------------------------------
# model file
# ---------------------------------------------------------------------------------------------
def _one_body(joint: dict) -> dict:
    return {"bodies": [{"name": "link", "joint": joint,
                        "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]}


X, Y, Z = col(E[0]), col(E[1]), col(E[2])


@pytest.mark.parametrize("joint, message", [
    ({"type": "map"}, "joint.map is required for a map joint"),
    ({"type": "map", "map": [X, Y]},
     r"joint.map has 2 rows, expected a twist \[ω; v\] per column = 6"),
    ({"type": "map", "map": hmat(*[X] * 7).tolist()}, "has 7 columns, expected 1 to 6"),
    ({"type": "map", "map": hmat(X, col()).tolist()}, "joint.map column 1 is zero"),
    ({"type": "map", "map": hmat(col((2, 0, 0))).tolist()},
     r"joint.map column 0 has a rotation part of norm 2\.0, expected a unit vector"),
    ({"type": "map", "map": hmat(X, Y, X).tolist()},
     "linearly dependent columns"),
    ({"type": "compound", "factors": []}, "non-empty list of joint maps"),
    ({"type": "compound", "factors": [hmat(Z, X).tolist()]},
     r"joint.factors\[0\] does not span a subalgebra"),
    ({"type": "compound", "factors": [hmat(X).tolist(), hmat(X).tolist()]},
     "linearly dependent columns"),
    ({"type": "euler", "sequence": "313"}, r"joint.sequence must be one of 321, 123"),
    ({"type": "free-euler"}, "joint.sequence is required for a free-euler joint"),
    ({"type": "revolute", "axis": [0, 0, 1], "sequence": "321"},
     "joint.sequence is not allowed for a revolute joint"),
    ({"type": "planar", "axis": [0, 0, 2]}, "joint.axis has norm 2.0"),
])
def test_file_validation(joint, message):
    with pytest.raises(ValueError, match=message) as err:
        fd.Model.from_dict(_one_body(joint))
    assert 'bodies[0] "link"' in str(err.value)


def test_round_trip(tmp_path):
    """Every new kind through ``to_dict``/``from_dict``, JSON and ``save_model``/
    ``load_model``: the same joints and state layout, the same dynamics bit for bit."""
    rng = np.random.default_rng(11)
    d, model, q, u = random_product_model(rng, list(NEW_KINDS), [-1, 0, 1, 0, 3],
                                          [2, 2, 2, 2, 2], [1, 1, 1, 1, 1], gravity=True)
    again = fd.Model.from_dict(json.loads(json.dumps(model.to_dict())))
    fd.save_model(model, tmp_path / "m.json")
    loaded = fd.load_model(tmp_path / "m.json")
    for other in (again, loaded):
        assert [repr(j) for j in other.joints] == [repr(j) for j in model.joints]
        assert fd.state_layout(other) == fd.state_layout(model)
        np.testing.assert_array_equal(fd.mass_matrix(other, q), fd.mass_matrix(model, q))
        np.testing.assert_array_equal(other.qdot(q, u), model.qdot(q, u))
    names = [e.name for e in fd.state_layout(model)["u"]]
    assert any(n.endswith(".beta1") for n in names)
    assert any(n.endswith(".theta_dot") for n in names)


def test_generalized_alpha_needs_rates():
    """Quasi-velocities (``euler``) are refused by the generalized-α integrator; a ``map``
    of skew axes (speeds ``ε̇``) is accepted."""
    gimbal = disk({"type": "map", "map": hmat(X, col((0, 0.6, 0.8))).tolist()})
    assert gimbal.joints[0].rates
    euler = disk({"type": "euler", "sequence": "321"})
    assert not euler.joints[0].rates
    with pytest.raises(ValueError, match="own rates"):
        fd.simulate(euler, t_span=(0.0, 0.1), integrator="generalized-alpha")
