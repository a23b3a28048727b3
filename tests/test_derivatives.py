"""The derivatives of the dynamics (:func:`flexdyn.forward_dynamics_derivatives`,
:func:`flexdyn.inverse_dynamics_derivatives`) and the linearization built on them.

Oracles: closed forms (a pendulum), complex steps of the **numpy reference tier's** forward
dynamics through :func:`flexdyn.linearize` (``derivative="complex-step"``: the charts' full
retractions, the articulated-body recursion in complex numbers), the reference tier's own
derivatives (complex steps of its Newton–Euler recursion) for the engine's, and Pinocchio's
``computeABADerivatives`` on rigid trees (optional).  Accuracy is checked block by block —
each body's joint speeds and each body's modal speeds, rows against columns — relative to the
block's own size, since one scale for the whole matrix would hide the errors of small blocks
beside the stiff ``ω²`` entries.
"""

from __future__ import annotations

import time

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.linalg import SingularInertiaError
from flexdyn.tip_kinematics import TIP_KINEMATICS
from helpers import PENDULUM, pendulum
from strategies import models_and_states, random_model_dict, random_state
from test_closed_chains import fourbar
from test_joint_forces import forced_pair, random_forces
from test_nodal import random_nodal_dict
from test_rigid_limit import random_rigid_state, rigid_models

try:  # the peer of the rigid trees (optional)
    from test_pinocchio import PinModel, pin
except (ImportError, pytest.skip.Exception):
    PinModel = pin = None

FIDELITIES = fd.FIDELITIES
HYP = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-9


def speed_blocks(model: fd.Model) -> list[range]:
    """Index ranges of the speeds: per body its joint speeds, then its modal speeds."""
    out = []
    for i in range(model.n_bodies):
        us, nj, m = int(model.u_start[i]), int(model.nu_joint[i]), int(model.n_modes[i])
        out += [r for r in (range(us, us + nj), range(us + nj, us + nj + m)) if len(r)]
    return out


def assert_blocks(got: np.ndarray, ref: np.ndarray, model: fd.Model, what: str,
                  tol: float = TOL, scale: float = 0.0) -> None:
    """Every (row block, column block) of ``got`` within ``tol`` of ``ref`` relative to the
    block's largest entry of ``ref``; a block near zero (a structural zero) to ``tol`` times
    1e-3 of ``scale``, the largest entry of the derivatives computed with it (their
    round-off reaches a structural zero of this matrix, which may be all zeros), or of this
    matrix's largest entry where larger (or 1e-6: entries of order one)."""
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    floor = 1e-3 * max(float(np.abs(ref).max()), scale, 1e-3)
    blocks = speed_blocks(model)
    for a in blocks:
        for b in blocks:
            R, G = ref[np.ix_(a, b)], got[np.ix_(a, b)]
            block_scale = max(float(np.abs(R).max()), floor)
            err = float(np.abs(G - R).max()) / block_scale
            assert err < tol, (f"{what}: rows {a.start}:{a.stop}, columns {b.start}:{b.stop} "
                               f"off by {err:.1e} of {block_scale:.1e}")


def assert_derivatives(got: tuple, ref: tuple, model: fd.Model, what: str,
                       tol: float = TOL) -> None:
    """:func:`assert_blocks` on each matrix of the named tuple ``got`` (``d_q``, ``d_u`` and
    ``d_tau`` or ``M``) against ``ref``, with the largest entry of the three as the scale of
    their structural zeros."""
    scale = max(float(np.abs(r).max()) for r in ref)
    for name, g, r in zip(got._fields, got, ref, strict=True):
        assert_blocks(g, r, model, f"{what} {name}", tol, scale)


def complex_step_oracle(model: fd.Model, q, u, tau, fidelity: str, f_ext=None, f_nodes=None):
    """``(∂u̇/∂δ, ∂u̇/∂u, ∂u̇/∂τ)`` by complex steps of the reference tier's forward dynamics
    (``fd.linearize(derivative="complex-step")``)."""
    lin = fd.linearize(model, q, u, tau, fidelity=fidelity, f_ext=f_ext, f_nodes=f_nodes,
                       derivative="complex-step")
    nu = model.nu
    return lin.A[nu:, :nu], lin.A[nu:, nu:], lin.B[nu:]


def assert_forward_matches(model, q, u, tau, fidelity, f_ext=None, f_nodes=None, tol=TOL):
    got = fd.forward_dynamics_derivatives(model, q, u, tau, fidelity=fidelity, f_ext=f_ext,
                                          f_nodes=f_nodes)
    ref = complex_step_oracle(model, q, u, tau, fidelity, f_ext, f_nodes)
    assert_derivatives(got, ref, model, f"{model.name} {fidelity}", tol)
    return got


# ----------------------------------------------------------------------------------------------
# closed form
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", fd.dynamics.BACKENDS)
def test_pendulum_is_the_closed_form(backend):
    """``I_O θ̈ = τ − m g l cos θ``: ``∂θ̈/∂θ = m g l sin θ / I_O``, ``∂θ̈/∂θ̇ = 0``,
    ``∂θ̈/∂τ = 1 / I_O``; and ``∂τ/∂θ = −m g l sin θ``, ``M = I_O``."""
    p, model = PENDULUM, pendulum()
    I_O = p["I_c"] + p["m"] * p["l"] ** 2
    mgl = p["m"] * p["g"] * p["l"]
    for theta in (-1.2, 0.3, 2.0):
        q, u, tau = np.array([theta]), np.array([0.7]), np.array([0.4])
        fwd = fd.forward_dynamics_derivatives(model, q, u, tau, backend=backend)
        np.testing.assert_allclose(fwd.d_q, [[mgl * np.sin(theta) / I_O]], rtol=1e-13)
        np.testing.assert_allclose(fwd.d_u, [[0.0]], atol=1e-15)
        np.testing.assert_allclose(fwd.d_tau, [[1.0 / I_O]], rtol=1e-13)
        inv = fd.inverse_dynamics_derivatives(model, q, u, np.array([1.5]), backend=backend)
        np.testing.assert_allclose(inv.d_q, [[-mgl * np.sin(theta)]], rtol=1e-13)
        np.testing.assert_allclose(inv.M, [[I_O]], rtol=1e-13)


# ----------------------------------------------------------------------------------------------
# against complex steps of the reference tier
# ----------------------------------------------------------------------------------------------
def _state(model: fd.Model, seed: int):
    rng = np.random.default_rng(seed)
    q, u, _ = random_state(model, rng, eta_scale=0.05)
    return q, u, rng.normal(size=model.nu), rng.normal(size=(model.n_bodies, 6))


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("name", fd.models.list_builtin_models())
def test_builtin_models_against_complex_steps(name, fidelity):
    """The spacecraft (a free base: quaternion tangents), the spin-up beam (stretch modes,
    geometric stiffening) and the two-link arm, with body wrenches."""
    model = fd.models.builtin_model(name)
    q, u, tau, f_ext = _state(model, 3)
    assert_forward_matches(model, q, u, tau, fidelity, f_ext)


@pytest.mark.parametrize("fidelity", FIDELITIES)
@settings(HYP)
@given(sample=models_and_states(max_bodies=5, max_nodes=4, max_modes=4, eta_scale=0.1))
def test_random_trees_against_complex_steps(fidelity, sample):
    """Random trees of every joint kind (stiffening data on the flexible bodies), forward
    derivatives against the reference tier's complex steps; the engine's inverse derivatives
    against the reference tier's."""
    model, q, u = sample.model, sample.q, sample.u
    tau = np.sin(np.arange(model.nu) + 1.0)
    assert_forward_matches(model, q, u, tau, fidelity, sample.f_ext)
    got = fd.inverse_dynamics_derivatives(model, q, u, sample.udot, fidelity=fidelity,
                                          f_ext=sample.f_ext)
    ref = fd.inverse_dynamics_derivatives(model, q, u, sample.udot, fidelity=fidelity,
                                          f_ext=sample.f_ext, backend="reference")
    assert_derivatives(got, ref, model, f"inverse {fidelity}")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_joint_forces_and_torque_limits(seed):
    """Springs, dampers, friction and limits enter ``d_q`` and ``d_u``; a torque held at its
    limit gives a zero column of ``d_tau``."""
    model, _, blocks = forced_pair(seed)
    q, u, _, f_ext = _state(model, seed)
    tau = np.full(model.nu, 10.0)  # beyond every torque limit (at most 3)
    got = assert_forward_matches(model, q, u, tau, "exact", f_ext)
    limited = np.zeros(model.nu, dtype=bool)
    for i in blocks:
        us = int(model.u_start[i])
        limited[us:us + int(model.nu_joint[i])] = True
    assert limited.any()
    assert np.all(got.d_tau[:, limited] == 0.0)
    assert_forward_matches(model, q, u, 0.01 * tau, "exact", f_ext)  # inside the limits


@settings(HYP)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7))
def test_rigid_trees_on_one_dof_joints(seed, n):
    """Random rigid trees of revolute, prismatic and screw joints (unaligned axes, rotated
    placements, off-axis centres of mass) with joint forces and body wrenches, in gravity: the
    engine's analytic recursion for rigid trees (``rigid_tree_derivatives``, asserted to be
    the path taken) against the complex steps of the reference tier, forward and inverse."""
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    types = [str(rng.choice(["revolute", "prismatic", "screw"])) for _ in range(n)]
    d = random_model_dict(rng, parents, types, [0] * n, [0] * n, gravity=True)
    for body in d["bodies"]:
        if rng.random() < 0.7:
            body["joint"]["forces"] = random_forces(rng, 1)
    model = fd.Model.from_dict(d)
    assert fd.dynamics.cached_engine(model).rigid_tree
    q, u, tau, f_ext = _state(model, seed)
    assert_forward_matches(model, q, u, 0.1 * tau, "exact", f_ext)
    udot = rng.normal(size=model.nu)
    got = fd.inverse_dynamics_derivatives(model, q, u, udot, f_ext=f_ext)
    ref = fd.inverse_dynamics_derivatives(model, q, u, udot, f_ext=f_ext, backend="reference")
    assert_derivatives(got, ref, model, "inverse")


@pytest.mark.parametrize("tip", TIP_KINEMATICS)
@pytest.mark.parametrize("seed", [11, 12])
def test_every_tip_kinematics_against_complex_steps(tip, seed):
    """The slopes of the node frames along the modes: in closed form for the exponential map
    and ``neglect``, from complex steps of the frames for the Euler angles; on a tree whose
    bodies hang from nodes and on their own attach nodes, with universal and spherical
    joints, in the full and exact fidelities."""
    rng = np.random.default_rng(seed)
    d = random_model_dict(rng, [-1, 0, 1, 0], ["universal", "revolute", "spherical", "free"],
                          [4, 3, 3, 2], [3, 2, 3, 2], gravity=True)
    d["tip_kinematics"] = tip
    for body in d["bodies"][1:]:
        body["joint"]["parent_node"] = 1
    for body in d["bodies"]:
        body["joint"]["child_node"] = 0
    model = fd.Model.from_dict(d)
    q, u, tau, f_ext = _state(model, seed)
    for fidelity in ("full", "exact"):
        assert_forward_matches(model, q, u, tau, fidelity, f_ext)


def test_nodal_bodies_and_nodal_loads():
    """Rodriguez's nodal bodies on the engine, and nodal loads on the spin-up beam's tip."""
    rng = np.random.default_rng(4)
    model = fd.Model.from_dict(random_nodal_dict(rng, [-1, 0, 1], ["revolute", "universal",
                                                                   "revolute"],
                                                 [False, True, True]))
    q, u, tau, f_ext = _state(model, 5)
    assert_forward_matches(model, q, u, tau, "exact", f_ext)
    spin = fd.models.spinup_beam()
    q, u, tau, _ = _state(spin, 6)
    tip = spin.bodies[0].n_nodes - 1
    f_nodes = {(spin.names[0], tip): np.array([0.1, -0.2, 0.3, 1.0, 2.0, -0.5])}
    assert_forward_matches(spin, q, u, tau, "exact", f_nodes=f_nodes)


@pytest.mark.parametrize("fidelity", FIDELITIES)
@settings(HYP)
@given(sample=models_and_states(max_bodies=4, max_nodes=4, max_modes=3, eta_scale=0.1),
       seed=st.integers(0, 2**32 - 1))
def test_nodal_loads_on_random_trees(fidelity, sample, seed):
    """Nodal loads on one or two nodes of random trees, with body wrenches: the engine holds
    them as body wrenches and modal forces and adds their slopes in the loaded bodies' ``η``;
    the oracle takes complex steps of the reference tier, whose node frames turn inside each
    step.  Forward derivatives, inverse derivatives, and a batch of two states."""
    model, q, u = sample.model, sample.q, sample.u
    loaded = [i for i, body in enumerate(model.bodies) if body.n_nodes > 0]
    assume(loaded)
    rng = np.random.default_rng(seed)
    f_nodes = {(model.names[i], int(rng.integers(model.bodies[i].n_nodes))): rng.normal(size=6)
               for i in rng.choice(loaded, size=min(2, len(loaded)), replace=False)}
    tau = np.sin(np.arange(model.nu) + 1.0)
    got = assert_forward_matches(model, q, u, tau, fidelity, sample.f_ext, f_nodes)
    inverse = [fd.inverse_dynamics_derivatives(model, q, u, sample.udot, fidelity=fidelity,
                                               f_ext=sample.f_ext, f_nodes=f_nodes,
                                               backend=backend)
               for backend in ("engine", "reference")]
    assert_derivatives(*inverse, model, f"inverse {fidelity}")
    q2 = model.neutral_configuration()
    batch = fd.forward_dynamics_derivatives(model, np.stack([q, q2]), np.stack([u, 0 * u]),
                                            np.stack([tau, tau]), fidelity=fidelity,
                                            f_ext=sample.f_ext, f_nodes=f_nodes)
    for name, b, g in zip(got._fields, batch, got, strict=True):
        np.testing.assert_allclose(b[0], g, rtol=1e-12, atol=1e-12 * np.abs(g).max(),
                                   err_msg=name)
    second = assert_forward_matches(model, q2, 0 * u, tau, fidelity, sample.f_ext, f_nodes)
    for name, b, g in zip(got._fields, batch, second, strict=True):
        np.testing.assert_allclose(b[1], g, rtol=1e-12, atol=1e-12 * np.abs(g).max(),
                                   err_msg=name)


# ----------------------------------------------------------------------------------------------
# the interface
# ----------------------------------------------------------------------------------------------
def test_batches_out_and_the_bound_interface():
    model = fd.models.spacecraft()
    states = [_state(model, s) for s in range(3)]
    q, u, tau, f_ext = (np.stack(a) for a in zip(*states, strict=True))
    dyn = fd.bind(model, fidelity="full")
    batch = dyn.forward_dynamics_derivatives(q, u, tau, f_ext=f_ext)
    for b in range(3):
        single = fd.forward_dynamics_derivatives(model, q[b], u[b], tau[b], fidelity="full",
                                                 f_ext=f_ext[b])
        for part, one in zip(batch, single, strict=True):
            np.testing.assert_array_equal(part[b], one)
    out = tuple(np.empty((model.nu, model.nu)) for _ in range(3))
    got = dyn.inverse_dynamics_derivatives(q[0], u[0], tau[0], out=out)
    assert all(g is o for g, o in zip(got, out, strict=True))
    np.testing.assert_allclose(got.M, fd.mass_matrix(model, q[0], "full"), rtol=1e-14,
                               atol=1e-14)
    with pytest.raises(ValueError, match="batch item 1"):
        bad = q.copy()
        bad[1, 0] = np.nan
        dyn.forward_dynamics_derivatives(bad, u, tau)
    with pytest.raises(ValueError, match="leading axis of 3"):
        dyn.forward_dynamics_derivatives(q, u[:2], tau)


@pytest.mark.parametrize("rigid", [True, False])
def test_any_input_type_gives_the_derivatives_of_the_compiled_type(rigid):
    """A single state goes to the compiled code unchecked only as writable C-contiguous
    ``float64`` arrays of the right shapes; lists, strided, read-only and other arrays give
    the same derivatives by the general path (a strided array read as contiguous would not):
    a rigid tree (its analytic sweeps) and a flexible arm (complex steps), forward and
    inverse, with and without body wrenches."""
    rng = np.random.default_rng(7)
    if rigid:
        d = random_model_dict(rng, [-1, 0, 1], ["revolute", "prismatic", "screw"], [0] * 3,
                              [0] * 3, gravity=True)
        model = fd.Model.from_dict(d)
        assert fd.dynamics.cached_engine(model).rigid_tree
    else:
        model = fd.models.two_link_arm()
    dyn = fd.bind(model)
    q, u, tau, f_ext = _state(model, 3)
    for forward in (True, False):
        call = dyn.forward_dynamics_derivatives if forward else \
            dyn.inverse_dynamics_derivatives
        for wrenches in (None, f_ext):
            expected = call(q, u, tau, f_ext=wrenches)
            for position in range(3):
                for kind, variant in _variants([q, u, tau][position]).items():
                    args = [q, u, tau]
                    args[position] = variant
                    got = call(*args, f_ext=wrenches)
                    for name, g, e in zip(got._fields, got, expected, strict=True):
                        np.testing.assert_allclose(
                            g, e, rtol=1e-12, atol=1e-12,
                            err_msg=f"{name} with argument {position} {kind}")


def test_a_rigid_trees_batch_equals_its_states_one_by_one():
    """A rigid tree's batch entry and its single-state entry share the state's arithmetic:
    bit for bit, forward and inverse."""
    rng = np.random.default_rng(11)
    model = fd.Model.from_dict(random_model_dict(rng, [-1, 0, 0, 2], ["revolute", "screw",
                                                                      "prismatic", "revolute"],
                                                 [0] * 4, [0] * 4, gravity=True))
    assert fd.dynamics.cached_engine(model).rigid_tree
    states = [_state(model, s) for s in range(3)]
    q, u, tau, f_ext = (np.stack(a) for a in zip(*states, strict=True))
    dyn = fd.bind(model)
    for forward in (True, False):
        call = dyn.forward_dynamics_derivatives if forward else \
            dyn.inverse_dynamics_derivatives
        batch = call(q, u, tau, f_ext=f_ext)
        for b in range(3):
            for name, part, one in zip(batch._fields, batch, call(q[b], u[b], tau[b],
                                                                   f_ext=f_ext[b]),
                                       strict=True):
                np.testing.assert_array_equal(part[b], one, err_msg=f"{name}, state {b}")


def _variants(x: np.ndarray) -> dict[str, object]:
    """``x`` (n,) as a list, a strided view and a read-only array."""
    wide = np.zeros((len(x), 3))
    wide[:, 1] = x
    frozen = x.copy()
    frozen.flags.writeable = False
    return {"list": x.tolist(), "strided": wide[:, 1], "read-only": frozen}


def test_complex_states_are_refused():
    model = fd.models.two_link_arm()
    q = model.neutral_configuration().astype(complex)
    with pytest.raises(TypeError, match="real state"):
        fd.forward_dynamics_derivatives(model, q, np.zeros(model.nu))


def test_loop_closures_are_refused_by_name():
    model = fourbar()
    q = model.neutral_configuration()
    with pytest.raises(ValueError, match="loop closures"):
        fd.forward_dynamics_derivatives(model, q, np.zeros(model.nu))


# ----------------------------------------------------------------------------------------------
# the linearization
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [fd.joints.SphericalJoint, fd.joints.FreeJoint])
def test_tangent_directions_are_the_slopes_of_the_retraction(kind):
    """A quaternion chart's closed-form ``∂q/∂δ`` against complex steps of its retraction,
    at quaternions off unit norm by up to 1e-6 (what a configuration may carry): each
    rotation column orthogonal to ``Q₀``, the position block ``R(Q₀)``.  A chart built
    without ``direction`` (positionally, as before it had one) takes those complex steps."""
    from flexdyn.tangent import TANGENT_CHARTS, TangentChart, complex_step_jacobian

    joint, chart = kind(), TANGENT_CHARTS[kind]
    plain = TangentChart(chart.retract, chart.rate, chart.names)
    rng = np.random.default_rng(3)
    for _ in range(5):
        Q = rng.normal(size=4)
        q0 = np.concatenate([Q / np.linalg.norm(Q) * (1 + 1e-6 * rng.uniform(-1, 1)),
                             rng.normal(size=joint.nq - 4)])
        ref = complex_step_jacobian(lambda d, q0=q0: chart.retract(joint, q0, d),
                                    np.zeros(joint.nu))
        got = chart.jacobian(joint, q0)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(plain.jacobian(joint, q0), ref)
        np.testing.assert_allclose(q0[:4] @ got[:4], 0.0, atol=1e-15)


def test_linearize_compiled_equals_complex_steps():
    """The compiled derivatives and the reference tier's complex steps give the same ``A``,
    ``B`` and ``C``, with outputs and with a prescribed hub (hybrid dynamics)."""
    model = fd.models.spinup_beam()
    q, u, tau, _ = _state(model, 7)
    kw = {"outputs": [f"{model.names[0]}.tip"]}
    hub = {model.names[0]: lambda t: (np.array([0.4 * t]), np.array([0.4]), np.array([0.1]))}
    for extra in ({}, {"prescribed": hub, "t": 3.0}):
        fast = fd.linearize(model, q, u, tau, derivative="compiled", **kw, **extra)
        slow = fd.linearize(model, q, u, tau, derivative="complex-step", **kw, **extra)
        assert fast.state_names == slow.state_names
        for a, b in ((fast.A, slow.A), (fast.B, slow.B), (fast.C, slow.C)):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())


def _linearize_by(monkeypatch, ready: bool, spent: float) -> str:
    """Which derivatives ``fd.linearize``'s default takes for the arm when the compiled ones
    are ``ready`` (compiled or cached) or not and the process has spent ``spent`` seconds in
    the reference tier: ``"compiled"`` or ``"complex-step"``, seen by which of the two
    functions it calls."""
    from flexdyn import control
    from flexdyn.engine import Engine

    model = fd.models.two_link_arm()
    q, u, tau, _ = _state(model, 3)
    taken = []
    compiled, reference = control._compiled_jacobians, control.DERIVATIVES["complex-step"]
    monkeypatch.setattr(Engine, "derivatives_ready", lambda self: ready)
    monkeypatch.setattr(control._ReferenceTime, "seconds", spent)
    monkeypatch.setattr(control, "_compiled_jacobians",
                        lambda *a: taken.append("compiled") or compiled(*a))
    monkeypatch.setitem(control.DERIVATIVES, "complex-step",
                        lambda *a, **k: taken.append("complex-step") or reference(*a, **k))
    fd.linearize(model, q, u, tau)
    assert len(set(taken)) == 1, taken
    return taken[0]


def test_linearize_by_default_compiles_only_where_it_pays(monkeypatch):
    """``linearize``'s default takes the compiled derivatives where they are compiled or
    cached; otherwise the reference tier's complex steps (the seconds they take counted)
    until the process has spent ``COMPILE_AFTER`` seconds in them."""
    from flexdyn import control

    assert _linearize_by(monkeypatch, ready=True, spent=0.0) == "compiled"
    assert _linearize_by(monkeypatch, ready=False, spent=0.0) == "complex-step"
    assert 0.0 < control._ReferenceTime.seconds < control.COMPILE_AFTER
    assert _linearize_by(monkeypatch, ready=False,
                         spent=control.COMPILE_AFTER) == "compiled"
    # a call whose complex steps would pass the budget, priced by one of them, compiles
    monkeypatch.setattr(control._ReferenceTime, "seconds", 0.0)
    model = fd.models.two_link_arm()
    x0 = np.zeros(2 * model.nu)

    def step(x):  # a reference evaluation of 10 ms
        time.sleep(0.01)
        return x

    assert control._default_derivative(model, "full", step, x0, 10) == "complex-step"
    assert control._default_derivative(model, "full", step, x0, 1000) == "compiled"


def test_derivatives_ready_reads_the_cache_without_compiling():
    """``Engine.derivatives_ready`` is True once the derivatives' code is compiled, and
    ``caching.compiled`` False for argument types never compiled (float32 arrays), which
    it neither compiles nor loads."""
    from flexdyn.engine import caching, derivatives

    model = fd.models.two_link_arm()
    engine = fd.dynamics.cached_engine(model)
    engine.derivatives_code()
    assert engine.derivatives_ready()
    entry, args = engine._derivatives_one()
    odd = tuple(a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == float else a
                for a in args)
    before = len(derivatives.derivatives.overloads)
    assert not caching.compiled(entry, tuple(numba.typeof(a) for a in (
        *engine.stage_buffers("derivatives"), *odd)))
    assert len(derivatives.derivatives.overloads) == before


@pytest.mark.skipif(pin is None, reason="needs pinocchio (the compare extra)")
@settings(HYP)
@given(d=rigid_models())
def test_pinocchio_aba_derivatives(d):
    """Rigid trees (free, spherical and one-dof joints) against Pinocchio's
    ``computeABADerivatives``: ``∂q̈/∂q``, ``∂q̈/∂v`` in its tangent space (the local
    frame, as flexdyn's charts) and ``M⁻¹``.  Universal and cylindrical joints become
    revolute ones: Pinocchio models them as composite joints, whose ABA derivatives it
    returns as zero (Pinocchio 4.1; flexdyn's agree with the complex steps above).  The
    tolerance is 1e-8 of each matrix's largest entry: on trees of free joints Pinocchio's
    results differ from the reference tier's complex steps by up to 2e-9 of it where
    flexdyn's agree with them to 1e-12 (a case of eight bodies, κ(M) = 1.4e4)."""
    d = dict(d)
    seed = d.pop("_seed")
    for body in d["bodies"]:  # Pinocchio's composite joints: one revolute about the first axis
        joint = body["joint"]
        if joint["type"] in ("universal", "cylindrical"):
            axis = joint.pop("axes", [joint.pop("axis", None)])[0]
            joint.update(type="revolute", axis=axis)
    pm, model = PinModel(d), fd.Model.from_dict(d)
    assume(model.nu > 0)
    q, u, _, tau = random_rigid_state(model, seed)
    P = pm.P
    pin.computeABADerivatives(pm.model, pm.data, pm.q(q), P @ u, P @ tau)
    Minv = np.triu(pm.data.Minv) + np.triu(pm.data.Minv, 1).T
    got = fd.forward_dynamics_derivatives(model, q, u, tau)
    for g, r, name in ((P @ got.d_q @ P.T, pm.data.ddq_dq, "d_q"),
                       (P @ got.d_u @ P.T, pm.data.ddq_dv, "d_u"),
                       (P @ got.d_tau @ P.T, Minv, "d_tau")):
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-8 * max(np.abs(r).max(), 1e-3),
                                   err_msg=name)


def test_benchmark_quick():
    """``benchmarks/bench_derivatives.py --quick``: the steel chain's derivatives (full and
    exact) within 1e-9 of the reference tier's complex steps block by block, and the rigid
    7-link chain's within 1e-9 of Pinocchio's where it is installed (times are printed, not
    asserted)."""
    import sys
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if benchmarks not in sys.path:  # the developer instruments are not installed
        sys.path.insert(0, benchmarks)
    import bench_derivatives

    result = bench_derivatives.main(["--quick"])
    assert [r["fidelity"] for r in result["steel"]] == ["full", "exact"]
    assert all(r["error"] < TOL for r in result["steel"])
    assert all(r["error"] < TOL for r in result["rigid"] if pin is not None)


def test_invalid_states_are_named():
    """One state of the engine's own arrays: a NaN speed is named as the general path names
    it, for inverse and forward derivatives."""
    model = fd.models.two_link_arm()
    q, u = model.neutral_configuration(), np.zeros(model.nu)
    u[1] = np.nan
    for call in (lambda: fd.inverse_dynamics_derivatives(model, q, u, np.zeros(model.nu)),
                 lambda: fd.forward_dynamics_derivatives(model, q, u)):
        with pytest.raises(ValueError, match=r"u contains non-finite values at indices \[1\]"):
            call()


def test_a_singular_rigid_tree_is_named_as_forward_dynamics_names_it():
    """Two prismatic joints along one axis, the first body massless: ``M`` is singular.  The
    rigid trees' entry solves for ``u̇`` itself; one state's error is forward dynamics' own
    (naming the body, no batch index), a batch's names the batch item."""
    b = fd.ModelBuilder("redundant slides")
    b.add_body("carriage", None, joint={"type": "prismatic", "axis": [1, 0, 0]},
               rigid={"mass": 0.0, "com": [0, 0, 0], "inertia": np.zeros((3, 3))})
    b.add_body("block", "carriage", joint={"type": "prismatic", "axis": [1, 0, 0]},
               rigid={"mass": 1.0, "com": [0, 0, 0], "inertia": np.eye(3) * 0.01})
    model = b.build()
    assert fd.dynamics.cached_engine(model).rigid_tree
    zero = np.zeros(model.nu)
    with pytest.raises(SingularInertiaError, match=r"^articulated inertia D of body 0 "
                                                      r"'carriage'"):
        fd.forward_dynamics_derivatives(model, zero, zero)
    with pytest.raises(SingularInertiaError, match=r"^batch item 0: "):
        fd.forward_dynamics_derivatives(model, np.zeros((2, 2)), np.zeros((2, 2)))


@pytest.mark.parametrize("derivative", [None, "complex-step", "central"])
def test_linearize_with_every_joint_prescribed_is_empty(derivative):
    """A rigid pendulum whose one joint is prescribed keeps no state: ``A`` (0, 0), ``B``
    (0, 1), for every derivative scheme."""
    hub = {"bob": lambda t: (np.array([0.1 * t]), np.array([0.1]), np.zeros(1))}
    lin = fd.linearize(pendulum(), np.zeros(1), prescribed=hub, derivative=derivative)
    assert lin.A.shape == (0, 0) and lin.B.shape == (0, 1) and lin.state_names == []
