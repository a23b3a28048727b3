"""Rigid limit: flexdyn against an independent classical rigid-body implementation.

Random rigid chains and trees (hypothesis) are built as flexdyn model dicts and solved
both by flexdyn and by :mod:`oracles.rigid_reference` (Featherstone's RNEA, CRBA and ABA); two
textbook cases are checked against closed forms computed here by hand.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from helpers import RTOL, rel_err
from oracles.rigid_reference import RigidModel
from strategies import random_inertia, random_joint, random_placement, random_state

#: Floor of the denominators of :func:`helpers.rel_err` here: the compared quantities (mass
#: matrices, forces, accelerations of bodies of 0.5–2 kg) are of order one.
SCALE = 1.0
EYE = np.eye(3).tolist()

JOINT_TYPES = (
    "revolute",
    "prismatic",
    "screw",
    "cylindrical",
    "universal",
    "spherical",
    "free",
    "fixed",
)


def _have_articulated() -> bool:
    try:
        return importlib.util.find_spec("flexdyn.articulated_body") is not None
    except ImportError:  # pragma: no cover
        return False


_needs_aba = pytest.mark.skipif(
    not _have_articulated(), reason="flexdyn.articulated_body is not available"
)
METHODS = [
    "composite",
    pytest.param("articulated", marks=_needs_aba),
    pytest.param("articulated-split", marks=_needs_aba),
]


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def rigid_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """Inertia about the com of a body of mass ``mass`` (second moments 0.001–0.05 mass)."""
    return random_inertia(rng, 0.001 * mass, 0.05 * mass)


@st.composite
def rigid_models(draw, max_bodies: int = 10, nodes: bool = False) -> dict[str, Any]:
    """A random rigid tree as a flexdyn model dict.

    ``nodes=True`` gives some bodies a ``flex`` block without modes whose nodes are extra
    point masses (with rotary inertias) and attachment points for joints.
    """
    n = draw(st.integers(1, max_bodies))
    topology = draw(st.sampled_from(["chain", "tree"]))
    floating = draw(st.booleans())
    types = [draw(st.sampled_from(JOINT_TYPES)) for _ in range(n)]
    if floating:
        types[0] = "free"
    if topology == "chain":
        parents = [i - 1 for i in range(n)]
    else:
        parents = [-1] + [draw(st.integers(-1 if not floating else 0, i - 1))
                          for i in range(1, n)]
    with_gravity = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bodies: list[dict[str, Any]] = []
    n_nodes = [0] * n
    for i in range(n):
        mass = float(rng.uniform(0.5, 2.0))
        body: dict[str, Any] = {
            "name": f"b{i}",
            "parent": None if parents[i] < 0 else f"b{parents[i]}",
            "joint": random_joint(rng, types[i]),
            "rigid": {
                "mass": mass,
                "com": rng.uniform(-0.5, 0.5, size=3).tolist(),
                "inertia": rigid_inertia(rng, mass).tolist(),
            },
        }
        j = body["joint"]
        if rng.random() < 0.8:
            j["placement"] = random_placement(rng, scale=0.5)
        if rng.random() < 0.5:
            j["child_placement"] = random_placement(rng, scale=0.5)
        if nodes and rng.random() < 0.7:
            k = int(rng.integers(1, 4))
            masses = rng.uniform(0.0, 1.0, size=k)
            flex: dict[str, Any] = {
                "nodes": rng.uniform(-0.6, 0.6, size=(k, 3)).tolist(),
                "node_masses": masses.tolist(),
                "node_inertias": [rigid_inertia(rng, m + 0.1).tolist() for m in masses],
            }
            if rng.random() < 0.5:
                flex["modes"] = [[] for _ in range(6 * k)]
                flex["stiffness"] = []
            body["flex"] = flex
            n_nodes[i] = k
            if rng.random() < 0.5:
                j["child_node"] = int(rng.integers(0, k))
        p = parents[i]
        if nodes and p >= 0 and n_nodes[p] and rng.random() < 0.7:
            j["parent_node"] = int(rng.integers(0, n_nodes[p]))
        bodies.append(body)
    gravity = rng.uniform(-10.0, 10.0, size=3).tolist() if with_gravity else [0.0, 0.0, 0.0]
    return {
        "format": "flexdyn-model",
        "version": 1,
        "name": "random rigid tree",
        "gravity": gravity,
        "bodies": bodies,
        "_seed": int(rng.integers(0, 2**32 - 1)),  # state seed, removed before loading
    }


def random_rigid_state(model: fd.Model, seed: int):
    """Random ``q`` (unit quaternions), ``u``, ``u̇`` (:func:`strategies.random_state`) and
    ``τ`` in the model-file layout."""
    rng = np.random.default_rng(seed)
    q, u, udot = random_state(model, rng)
    return q, u, udot, 5.0 * rng.normal(size=model.nu)


def build(d: dict[str, Any]):
    d = dict(d)
    seed = d.pop("_seed")
    model = fd.Model.from_dict(d)
    ref = RigidModel(d)
    return model, ref, random_rigid_state(model, seed)


HYP = settings(max_examples=20, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------
# the reference itself
# ---------------------------------------------------------------------------------------------
@settings(HYP, max_examples=20)
@given(rigid_models(nodes=True))
def test_reference_is_self_consistent(d):
    """ABA of the reference equals M⁻¹(τ − C) of its CRBA and RNEA; RNEA = M u̇ + C."""
    _, ref, (q, u, udot, tau) = build(d)
    M = ref.crba(q)
    C = ref.bias(q, u)
    assert rel_err(ref.rnea(q, u, udot), M @ udot + C, SCALE) < RTOL
    if ref.nu:
        assert np.allclose(M, M.T, atol=1e-13 * max(1.0, np.abs(M).max()))
        assert np.linalg.eigvalsh(M)[0] > 0
        assert rel_err(ref.aba(q, u, tau), np.linalg.solve(M, tau - C), SCALE) < 1e-9


def test_reference_layout_matches_flexdyn():
    d = {
        "gravity": [0, 0, -9.81],
        "bodies": [
            {"name": "a", "parent": None, "joint": {"type": "free"},
             "rigid": {"mass": 1.0, "inertia": (0.1 * np.eye(3)).tolist()}},
            {"name": "b", "parent": "a", "joint": {"type": "spherical"},
             "rigid": {"mass": 1.0, "com": [0.2, 0, 0], "inertia": (0.1 * np.eye(3)).tolist()}},
            {"name": "c", "parent": "b", "joint": {"type": "cylindrical", "axis": [1, 0, 0]},
             "rigid": {"mass": 1.0, "inertia": (0.1 * np.eye(3)).tolist()}},
        ],
    }
    model, ref = fd.Model.from_dict(d), RigidModel(d)
    assert (model.nq, model.nu) == (ref.nq, ref.nu) == (13, 11)
    assert np.array_equal(model.neutral_configuration(), ref.neutral())


# ---------------------------------------------------------------------------------------------
# flexdyn against the reference
# ---------------------------------------------------------------------------------------------
def reference_errors(d, methods=(), dynamics=True) -> dict[str, float]:
    """Relative errors of flexdyn against the reference for the model dict ``d``."""
    model, ref, (q, u, udot, tau) = build(d)
    assert (model.nq, model.nu) == (ref.nq, ref.nu)
    errs = {}
    if dynamics:
        errs["mass_matrix"] = rel_err(fd.mass_matrix(model, q), ref.crba(q), SCALE)
        errs["bias_forces"] = rel_err(fd.bias_forces(model, q, u), ref.bias(q, u), SCALE)
        errs["inverse_dynamics"] = rel_err(fd.inverse_dynamics(model, q, u, udot),
                                           ref.rnea(q, u, udot), SCALE)
    if methods:
        a_ref = ref.aba(q, u, tau)
        for method in methods:
            a = fd.forward_dynamics(model, q, u, tau, method=method)
            errs[method] = rel_err(a, a_ref, SCALE)
    return errs


def _check_against_reference(d, methods=(), dynamics=True):
    errs = reference_errors(d, methods, dynamics)
    bad = {k: v for k, v in errs.items() if not v < RTOL}
    assert not bad, f"errors {bad} for model {d!r}"


@settings(HYP, max_examples=30)
@given(rigid_models())
def test_dynamics_match_reference(d):
    _check_against_reference(d)


@settings(HYP, max_examples=20)
@given(rigid_models(nodes=True))
def test_dynamics_match_reference_with_node_masses(d):
    _check_against_reference(d)


@pytest.mark.parametrize("method", METHODS)
@settings(HYP, max_examples=15)
@given(d=rigid_models(nodes=True))
def test_forward_dynamics_methods_match_reference(method, d):
    _check_against_reference(d, [method], dynamics=False)


@pytest.mark.parametrize("method", METHODS)
def test_floating_base_tree_all_joints(method):
    """A deterministic free-floating tree with every joint type, in gravity."""
    rng = np.random.default_rng(7)
    types = ["free", "revolute", "prismatic", "screw", "cylindrical", "universal",
             "spherical", "fixed", "revolute", "spherical"]
    parents = [-1, 0, 1, 0, 3, 4, 0, 6, 7, 2]
    bodies = []
    for i, (t, p) in enumerate(zip(types, parents, strict=True)):
        mass = float(rng.uniform(0.5, 2.0))
        bodies.append({
            "name": f"b{i}", "parent": None if p < 0 else f"b{p}",
            "joint": {**random_joint(rng, t), "placement": random_placement(rng, scale=0.5),
                      "child_placement": random_placement(rng, scale=0.5)},
            "rigid": {"mass": mass, "com": rng.uniform(-0.5, 0.5, 3).tolist(),
                      "inertia": rigid_inertia(rng, mass).tolist()},
        })
    d = {"gravity": [0.3, -1.0, -9.81], "bodies": bodies, "_seed": 11}
    _check_against_reference(d, [method])
    # without modes the ruthless linearization is exact
    model, ref, (q, u, _, tau) = build(d)
    a = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless")
    assert rel_err(a, ref.aba(q, u, tau), SCALE) < RTOL
    assert rel_err(fd.mass_matrix(model, q, fidelity="ruthless"), ref.crba(q), SCALE) < RTOL
    C = fd.bias_forces(model, q, u, fidelity="ruthless")
    assert rel_err(C, ref.bias(q, u), SCALE) < RTOL


# ---------------------------------------------------------------------------------------------
# textbook cases
# ---------------------------------------------------------------------------------------------
def double_pendulum(m1, m2, l1, r1, r2, J1, J2, g):
    """Planar double pendulum in the x–y plane, revolute z axes, gravity −g ŷ.

    Link k has mass m_k, com at distance r_k along its x axis and inertia J_k about the
    com (z); link 2's joint sits at distance l1 along link 1.  θ is measured from x̂.
    """
    def rod(m, r, J):
        return {"mass": m, "com": [r, 0, 0], "inertia": [[J, 0, 0], [0, J, 0], [0, 0, J]]}

    return {
        "gravity": [0.0, -g, 0.0],
        "bodies": [
            {"name": "l1", "parent": None, "joint": {"type": "revolute", "axis": [0, 0, 1]},
             "rigid": rod(m1, r1, J1)},
            {"name": "l2", "parent": "l1",
             "joint": {"type": "revolute", "axis": [0, 0, 1],
                       "placement": {"translation": [l1, 0, 0], "rotation": EYE}},
             "rigid": rod(m2, r2, J2)},
        ],
    }


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("state", [(0.3, -1.1, 0.7, 2.0), (2.5, 0.4, -1.5, -0.3),
                                   (0.0, 0.0, 0.0, 0.0)])
def test_double_pendulum_closed_form(state, method):
    m1, m2, l1, r1, r2, J1, J2, g = 1.3, 0.7, 1.1, 0.6, 0.45, 0.02, 0.015, 9.81
    model = fd.Model.from_dict(double_pendulum(m1, m2, l1, r1, r2, J1, J2, g))
    t1, t2, w1, w2 = state
    q, u = np.array([t1, t2]), np.array([w1, w2])
    c2, s2 = np.cos(t2), np.sin(t2)
    h = m2 * l1 * r2
    M = np.array([
        [J1 + J2 + m1 * r1**2 + m2 * (l1**2 + r2**2 + 2 * l1 * r2 * c2), J2 + m2 * r2**2 + h * c2],
        [J2 + m2 * r2**2 + h * c2, J2 + m2 * r2**2],
    ])
    coriolis = np.array([-h * s2 * (2 * w1 * w2 + w2**2), h * s2 * w1**2])
    grav = np.array([
        (m1 * r1 + m2 * l1) * g * np.cos(t1) + m2 * r2 * g * np.cos(t1 + t2),
        m2 * r2 * g * np.cos(t1 + t2),
    ])
    C = coriolis + grav
    assert rel_err(fd.mass_matrix(model, q), M, SCALE) < 1e-13
    assert rel_err(fd.bias_forces(model, q, u), C, SCALE) < 1e-13
    tau = np.array([0.4, -0.25])
    a = fd.forward_dynamics(model, q, u, tau, method=method)
    assert rel_err(a, np.linalg.solve(M, tau - C), SCALE) < 1e-12


@pytest.mark.parametrize("method", METHODS)
def test_free_body_euler_equations(method):
    """A free rigid body, com at the body origin, zero gravity: Euler's equations."""
    rng = np.random.default_rng(3)
    m = 2.5
    J = rigid_inertia(rng, m)
    model = fd.Model.from_dict({
        "gravity": [0, 0, 0],
        "bodies": [{"name": "b", "parent": None, "joint": {"type": "free"},
                    "rigid": {"mass": m, "com": [0, 0, 0], "inertia": J.tolist()}}],
    })
    for _ in range(5):
        quat = rng.normal(size=4)
        q = np.concatenate([quat / np.linalg.norm(quat), rng.normal(size=3)])
        w, v = rng.normal(size=3) * 2, rng.normal(size=3)
        n, f = rng.normal(size=3), rng.normal(size=3)
        u, tau = np.concatenate([w, v]), np.concatenate([n, f])
        wdot = np.linalg.solve(J, n - np.cross(w, J @ w))
        vdot = f / m - np.cross(w, v)  # body-frame components of the origin's velocity
        a = fd.forward_dynamics(model, q, u, tau, method=method)
        assert rel_err(a, np.concatenate([wdot, vdot]), SCALE) < 1e-12
        M = fd.mass_matrix(model, q)
        M_ref = np.block([[J, np.zeros((3, 3))], [np.zeros((3, 3)), m * np.eye(3)]])
        assert rel_err(M, M_ref, SCALE) < 1e-14
