"""The rigid tree's entries of the engine (:func:`~flexdyn.engine.rigid_tree.is_rigid_tree`: rigid
bodies on revolute, prismatic and screw joints), which the articulated method takes for such
models, against the general entries on the same packed model and against the numpy reference:
forward dynamics, the state derivative, batches, joint forces, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import flexdyn as fd  # noqa: E402
from flexdyn.engine import Engine, kernels  # noqa: E402
from flexdyn.linalg import SingularInertiaError  # noqa: E402
from helpers import assert_close, massless_slider  # noqa: E402
from strategies import models, random_f_ext, random_state  # noqa: E402

pytestmark = pytest.mark.usefixtures("quiet_numba")

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
RIGID_TREES = models(max_bodies=7, joint_types=("revolute", "prismatic", "screw"),
                     rigid_probability=1.0, max_nodes=0)
FORCES = {"stiffness": 12.0, "rest": 0.3, "preload": 0.5, "damping": 0.4, "coulomb": 0.2,
          "lower": -0.4, "upper": 0.6, "limit_stiffness": 300.0, "limit_damping": 2.0,
          "torque_limit": 1.5}


def _state(model: fd.Model, seed: int):
    rng = np.random.default_rng(seed)
    q, u, _ = random_state(model, rng)
    return q, u, rng.normal(size=model.nu), random_f_ext(model, rng)


def _general(engine: Engine, q, u, tau, f_ext) -> tuple[int, np.ndarray]:
    """The general articulated entry on the engine's packed model."""
    udot = np.empty(engine.model.nu)
    return kernels.forward_articulated(*engine.stage_buffers("articulated"), q, u, tau, f_ext,
                                       udot), udot


@SETTINGS
@given(d=RIGID_TREES, seed=st.integers(0, 2**32 - 1))
def test_forward_dynamics_equals_the_general_entry_and_the_reference(d, seed):
    model = fd.Model.from_dict(d)
    engine = Engine(model)
    assert engine.rigid_tree
    q, u, tau, f_ext = _state(model, seed)
    status, general = _general(engine, q, u, tau, f_ext)
    assert status == -1
    got = engine.forward_dynamics(q, u, tau, f_ext)
    scale = max(1.0, float(np.max(np.abs(general))))
    assert np.max(np.abs(got - general)) <= 1e-12 * scale
    ref = fd.forward_dynamics(model, q, u, tau, f_ext=f_ext, backend="reference")
    assert_close(got, ref, "u̇", tol=1e-9, scale=scale)


@SETTINGS
@given(d=RIGID_TREES, seed=st.integers(0, 2**32 - 1))
def test_state_derivative_and_batch_equal_the_general_entries(d, seed):
    model = fd.Model.from_dict(d)
    engine = Engine(model)
    q, u, tau, f_ext = _state(model, seed)
    x = np.concatenate([q, u])
    n = model.nq + model.nu
    general = np.empty(n + 3)  # with the energy-balance integrands
    assert kernels.derivative_articulated(*engine.stage_buffers("articulated"), x, tau, f_ext,
                                          general) == -1
    got = np.empty(n + 3)
    assert engine.derivative_status(x, tau, f_ext, "articulated", got) == -1
    assert np.max(np.abs(got - general)) <= 1e-12 * max(1.0, float(np.max(np.abs(general))))
    rng = np.random.default_rng(seed)
    qs, us, taus = (np.stack([v + 0.1 * rng.normal(size=v.shape) for _ in range(5)])
                    for v in (q, u, tau))
    batch = engine.batch("articulated", qs, us, taus)
    for b in range(5):  # the batch entry runs the same kernel as the single call
        np.testing.assert_array_equal(batch[b], engine.forward_dynamics(qs[b], us[b], taus[b]))


def test_joint_forces_and_gravity_agree_with_the_general_entry():
    """Springs, dampers, friction, limits and torque limits (:mod:`flexdyn.joint_forces`) on
    a branched tree of all three joint kinds, under gravity."""
    builder = fd.ModelBuilder("forced tree", gravity=(0.0, -9.81, 0.0))
    rng = np.random.default_rng(7)
    for i, (kind, parent) in enumerate([("revolute", None), ("prismatic", "b0"),
                                        ("screw", "b0"), ("revolute", "b2")]):
        axis = rng.normal(size=3)
        joint = {"type": kind, "axis": list(axis / np.linalg.norm(axis)), "forces": FORCES,
                 "placement": {"translation": list(rng.uniform(-0.4, 0.4, size=3))}}
        if kind == "screw":
            joint["pitch"] = 0.05
        builder.add_body(f"b{i}", parent, joint=joint,
                         rigid={"mass": 1.0 + i, "com": list(rng.uniform(-0.3, 0.3, size=3)),
                                "inertia": np.diag([0.2, 0.3, 0.4]) * (1 + i)})
    model = builder.build()
    engine = Engine(model)
    assert engine.rigid_tree
    for seed in range(5):  # states inside and outside the limits, torques beyond the limit
        q, u, tau, f_ext = _state(model, seed)
        q, tau = 1.5 * q, 3.0 * tau
        general = _general(engine, q, u, tau, f_ext)[1]
        got = engine.forward_dynamics(q, u, tau, f_ext)
        assert np.max(np.abs(got - general)) <= 1e-12 * max(1.0, np.max(np.abs(general)))
        ref = fd.forward_dynamics(model, q, u, tau, f_ext=f_ext, backend="reference")
        assert_close(got, ref, "u̇", tol=1e-9, scale=max(1.0, np.max(np.abs(ref))))


def test_same_errors_as_the_general_entry():
    """A massless slider names the same body as the reference; a non-finite input is
    rejected (batches name the state)."""
    model = massless_slider()
    engine = Engine(model)
    assert engine.rigid_tree
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    with pytest.raises(SingularInertiaError) as ref:
        fd.forward_dynamics(model, q, z, z, backend="reference")
    with pytest.raises(SingularInertiaError) as got:
        engine.forward_dynamics(q, z, z)
    assert str(got.value) == str(ref.value)
    with pytest.raises(SingularInertiaError, match="^batch item 0: articulated inertia D of "
                                                   "body 1 'slider'"):
        engine.batch("articulated", np.stack([q + 1.0, q]), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="not finite"):
        engine.forward_dynamics(q, np.array([np.inf, 0.0]), z)


@pytest.mark.parametrize("d, expected", [
    ({"bodies": [{"name": "a", "joint": {"type": "spherical"},
                  "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]}, False),
    ({"bodies": [{"name": "a", "joint": {"type": "revolute", "axis": [0, 0, 1]},
                  "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}},
                 {"name": "b", "parent": "a", "joint": {"type": "fixed"},
                  "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]}, False),
    ({"bodies": [{"name": "a", "joint": {"type": "screw", "axis": [0, 0, 1], "pitch": 0.1},
                  "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}},
                 {"name": "b", "parent": "a", "joint": {"type": "prismatic", "axis": [1, 0, 0]},
                  "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]}, True),
])
def test_which_models_are_rigid_trees(d, expected):
    assert Engine(fd.Model.from_dict({"name": "m", **d})).rigid_tree is expected


def test_a_flexible_body_keeps_the_general_entries():
    model = fd.models.spinup_beam()
    assert model.n_modes.sum() > 0
    assert not Engine(model).rigid_tree
