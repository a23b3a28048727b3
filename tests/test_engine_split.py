"""The flexible/hinge split of the compiled engine (:mod:`flexdyn.engine.split`, Eqs 62–64,
Eq B3) against the reference (:func:`flexdyn.articulated_body.articulated_body_inertias_split`
and :func:`~flexdyn.articulated_body.articulated_forward_dynamics_split` with the body models'
``flexible_step``).

On hypothesis trees of rigid and flexible bodies (every joint type, random attachment nodes,
gravity, stiffness, damping, external wrenches), for every fidelity and for the Eq B3 rules
``indirect_min_modes`` = 1 (push-through for every ruthless body with children), 99 (explicit
Cholesky inverses) and 8 (the default mix), the engine's factors of Eq 63 and its ``u̇`` equal
the reference's; likewise on a fixed tree where both ``D_f⁻¹`` procedures occur, a chain of
free-free beams and the built-in models.  A singular ``D_f`` or ``D_R`` raises the
reference's message; batches and the front door run the split on the engine, and the plain
entries do not compile it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import flexdyn as fd  # noqa: E402
from flexdyn import dynamics  # noqa: E402
from flexdyn.articulated_body import (  # noqa: E402
    articulated_body_inertias_split,
    articulated_forward_dynamics_split,
)
from flexdyn.beam import beam_modes  # noqa: E402
from flexdyn.engine import Engine  # noqa: E402
from flexdyn.linalg import SingularInertiaError  # noqa: E402
from flexdyn.ruthless import RuthlessBodyModel  # noqa: E402
from flexdyn.terms import body_models, position_terms, velocity_terms  # noqa: E402
from helpers import RTOL, assert_close, massless_slider  # noqa: E402
from strategies import models_and_states, random_model_dict, random_state  # noqa: E402

#: ``indirect_min_modes``: Eq B3 for every ruthless body with children / explicit
#: everywhere / the default mix
RULES = (1, 99, 8)
#: the engine against the same algorithm of the reference (same operations, another order of
#: summation) on the fixed models
TOL = 1e-12
#: ... and on random trees, some of which have nearly singular articulated inertias (e.g. a
#: spherical joint's ``D_R`` of condition 5e3): the difference in rounding grows with the
#: condition (worst seen in 2000 trees: 1.2e-11 for u̇, 4e-12 for ``D_R⁻¹``)
TOL_RANDOM = RTOL
SPLIT = "articulated-split"
FIELDS = ("Df_inv", "g", "P_R", "DR_inv", "G_R", "P_R_plus")

SAMPLES = models_and_states(max_bodies=8, max_nodes=5, max_modes=12)
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


pytestmark = pytest.mark.usefixtures("quiet_numba")


def reference_models(model: fd.Model, fidelity: str, rule: int | None) -> tuple:
    """The front door's body models of ``fidelity``, the ruthless ones with the Eq B3 rule
    ``rule`` (None: their own)."""
    return tuple(RuthlessBodyModel(model, i, rule)
                 if rule is not None and isinstance(bm, RuthlessBodyModel) else bm
                 for i, bm in enumerate(body_models(model, fidelity)))


def reference(model, fidelity, rule, q, u=None, tau=None, f_ext=None):
    """``(SplitFactors, u̇ or None)`` of the reference split."""
    pos = position_terms(model, q, reference_models(model, fidelity, rule), fidelity)
    factors = articulated_body_inertias_split(model, pos)
    if u is None:
        return factors, None
    vel = velocity_terms(model, pos, u)
    return factors, articulated_forward_dynamics_split(model, pos, vel, tau, f_ext, factors)


def assert_factors_equal(got, want, n_bodies: int, tol: float = TOL) -> None:
    for field in FIELDS:
        for i in range(n_bodies):
            # P_R⁺ vanishes on a free joint: compare it on the scale of P_R
            scale = float(np.max(np.abs(want.P_R[i]))) if field == "P_R_plus" else 0.0
            assert_close(getattr(got, field)[i], getattr(want, field)[i], f"{field}[{i}]",
                         tol=tol, scale=scale)
    for i in range(n_bodies):
        if want.P[i] is None:
            assert got.P[i] is None
        else:
            assert_close(got.P[i], want.P[i], f"P[{i}]", tol=tol)


def tree_model(seed: int = 3) -> fd.Model:
    """A fixed tree whose flexible bodies have children and 2–12 modes (both ``D_f⁻¹``
    procedures are used with ``indirect_min_modes = 8``)."""
    rng = np.random.default_rng(seed)
    parents = [-1, 0, 0, 1, 1, 2, 5, 3]
    joints = ["revolute", "universal", "spherical", "prismatic", "screw", "cylindrical",
              "revolute", "free"]
    d = random_model_dict(rng, parents, joints, [5, 4, 3, 2, 0, 4, 2, 1],
                          [12, 9, 3, 6, 0, 8, 4, 2], gravity=True, damping=True)
    return fd.Model.from_dict(d)


def rigid_tree() -> fd.Model:
    rng = np.random.default_rng(4)
    return fd.Model.from_dict(random_model_dict(
        rng, [-1, 0, 1, 1, 0], ["free", "revolute", "universal", "spherical", "screw"],
        [0] * 5, [0] * 5, gravity=True, name="rigid-tree"))


def beam_chain(n_bodies: int = 4, n_modes: int = 10) -> fd.Model:
    """Revolute chain of free-free beams, each attached at the previous one's last node."""
    bm = beam_modes(1.0, 2.0, EI_y=3.0, EI_z=2.0, EA=50.0, GJ=1.0,
                    polar_inertia_per_length=0.01, n_elements=6, n_modes=n_modes,
                    boundary="free-free", damping_ratio=0.02)
    bodies = [{"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
               "joint": {"type": "revolute", "axis": [0.0, 0.0, 1.0] if i % 2 else [0, 1.0, 0],
                         "parent_node": None if i == 0 else bm.n_nodes - 1},
               "flex": bm.to_flex_dict()} for i in range(n_bodies)]
    return fd.Model.from_dict({"name": "beams", "gravity": [0, 0, -9.81], "bodies": bodies})


# ---------------------------------------------------------------------------------------------
# random trees
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=st.sampled_from(fd.FIDELITIES), rule=st.sampled_from(RULES),
       use_f_ext=st.booleans())
def test_forward_dynamics_equals_the_reference(sample, fidelity, rule, use_f_ext):
    model, q, u = sample.model, sample.q, sample.u
    tau = np.random.default_rng(int(np.abs(q).sum() * 1e6) % 2**32).normal(size=model.nu)
    f_ext = sample.f_ext if use_f_ext else None
    _, want = reference(model, fidelity, rule, q, u, tau, f_ext)
    got = Engine(model, fidelity, rule).forward_dynamics(q, u, tau, f_ext, SPLIT)
    assert_close(got, want, "u̇", tol=TOL_RANDOM, scale=1.0)


@SETTINGS
@given(sample=SAMPLES, fidelity=st.sampled_from(fd.FIDELITIES), rule=st.sampled_from(RULES))
def test_split_factors_field_by_field(sample, fidelity, rule):
    model, q = sample.model, sample.q
    want, _ = reference(model, fidelity, rule, q)
    assert_factors_equal(Engine(model, fidelity, rule).split_factors(q), want, model.n_bodies,
                         TOL_RANDOM)


@SETTINGS
@given(sample=SAMPLES, fidelity=st.sampled_from(fd.FIDELITIES))
def test_front_door_runs_the_split_on_the_engine(sample, fidelity):
    """The default backend equals ``backend="reference"`` (and the composite-body result)."""
    model, q, u, f = sample.model, sample.q, sample.u, sample.f_ext
    tau = np.random.default_rng(7).normal(size=model.nu)
    got = fd.forward_dynamics(model, q, u, tau, method=SPLIT, fidelity=fidelity, f_ext=f)
    want = fd.forward_dynamics(model, q, u, tau, method=SPLIT, fidelity=fidelity, f_ext=f,
                               backend="reference")
    assert_close(got, want, "u̇", tol=TOL_RANDOM, scale=1.0)
    composite = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity=fidelity,
                                    f_ext=f, backend="reference")
    assert_close(got, composite, "u̇ vs composite body", tol=1e-8, scale=1.0)


# ---------------------------------------------------------------------------------------------
# fixed models
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [1, 4, 8, 9, 13, 99])
def test_tree_both_inverse_procedures(rule):
    model = tree_model()
    with_children = [int(model.n_modes[i]) for i in range(model.n_bodies) if model.children[i]]
    assert min(m for m in with_children if m) < 8 <= max(with_children)  # both procedures
    rng = np.random.default_rng(rule)
    q, u, _ = random_state(model, rng)
    tau = rng.normal(size=model.nu)
    engine = Engine(model, "ruthless", rule)
    want_factors, want = reference(model, "ruthless", rule, q, u, tau)
    assert_factors_equal(engine.split_factors(q), want_factors, model.n_bodies)
    assert_close(engine.forward_dynamics(q, u, tau, method=SPLIT), want, "u̇", tol=TOL,
                 scale=1.0)


@pytest.mark.parametrize("rule", [1, 99])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_beam_chain(fidelity, rule):
    """The benchmark's setting: revolute chain of free-free beams, attached at last nodes."""
    model = beam_chain()
    rng = np.random.default_rng(5)
    q, u, _ = random_state(model, rng, eta_scale=0.05)
    tau = rng.normal(size=model.nu)
    _, want = reference(model, fidelity, rule, q, u, tau)
    got = Engine(model, fidelity, rule).forward_dynamics(q, u, tau, method=SPLIT)
    assert_close(got, want, "u̇", tol=TOL, scale=1.0)


@pytest.mark.parametrize("name", [*fd.models.list_builtin_models(), "rigid-tree"])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_named_models(name, fidelity):
    model = rigid_tree() if name == "rigid-tree" else fd.models.builtin_model(name)
    rng = np.random.default_rng(11)
    q, u, _ = random_state(model, rng, eta_scale=0.05)
    tau, f = rng.normal(size=model.nu), rng.normal(size=(model.n_bodies, 6))
    want_factors, want = reference(model, fidelity, None, q, u, tau, f)
    engine = Engine(model, fidelity)
    assert_factors_equal(engine.split_factors(q), want_factors, model.n_bodies)
    assert_close(engine.forward_dynamics(q, u, tau, f, SPLIT), want, "u̇", tol=TOL, scale=1.0)


def test_batch_equals_single_states():
    model = tree_model()
    rng = np.random.default_rng(2)
    states = [random_state(model, rng) for _ in range(3)]
    q = model.unit_quaternions(np.stack([s[0] for s in states]))  # as the front door's
    u = np.stack([s[1] for s in states])
    tau = rng.normal(size=u.shape)
    engine = Engine(model, "ruthless", 1)
    got = engine.batch(SPLIT, q, u, tau)
    for b in range(3):
        np.testing.assert_array_equal(got[b], engine.forward_dynamics(q[b], u[b], tau[b],
                                                                      method=SPLIT))
        _, want = reference(model, "ruthless", 1, q[b], u[b], tau[b])
        assert_close(got[b], want, f"u̇[{b}]", tol=TOL, scale=1.0)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def massless_mode() -> fd.Model:
    """A rigid base carrying a body whose one mode moves only a massless node, its frame on
    the joint (no ``Q`` coupling): ``D_f`` of body 1 is zero."""
    flex = {"nodes": [[0.5, 0.0, 0.0]], "node_masses": [0.0],
            "modes": [[0.0], [0.0], [0.0], [0.0], [1.0], [0.0]], "stiffness": [[1.0]]}
    return (fd.ModelBuilder("massless-mode")
            .add_body("base", None, joint={"type": "revolute", "axis": [0, 0, 1]},
                      rigid={"mass": 1.0, "com": [0.5, 0, 0],
                             "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]})
            .add_body("beam", "base", joint={"type": "revolute", "axis": [0, 1, 0]},
                      rigid={"mass": 1.0, "com": [0.2, 0, 0],
                             "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]}, flex=flex)
            .build())


@pytest.mark.parametrize("case", ["D_R", "D_f"])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_singular_inertia_same_message(case, fidelity):
    model = massless_slider() if case == "D_R" else massless_mode()
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    with pytest.raises(SingularInertiaError) as want:
        fd.forward_dynamics(model, q, z, z, method=SPLIT, fidelity=fidelity,
                            backend="reference")
    with pytest.raises(SingularInertiaError) as got:
        Engine(model, fidelity).forward_dynamics(q, z, z, method=SPLIT)
    assert str(got.value) == str(want.value)
    if fidelity == "full" or case == "D_R":  # a ruthless D_f⁰ fails when the model is built
        what = f"articulated inertia {case} of body 1 "
        assert str(got.value).startswith(what)
        with pytest.raises(SingularInertiaError, match=f"^{what}"):
            Engine(model, fidelity).split_factors(q)
        with pytest.raises(SingularInertiaError, match=f"^batch item 0: {what}"):
            Engine(model, fidelity).batch(SPLIT, np.stack([q, q]), np.zeros((2, model.nu)))


def test_engine_names_a_wrong_argument():
    model = tree_model()
    engine = Engine(model, "ruthless")
    with pytest.raises(ValueError, match=r"^q has shape \(3,\)"):
        engine.split_factors(np.zeros(3))
    with pytest.raises(ValueError, match="not finite"):
        engine.split_factors(np.full(model.nq, np.nan))
    z = np.zeros(model.nu)
    with pytest.raises(ValueError, match="not finite"):
        engine.forward_dynamics(model.neutral_configuration(), z + np.inf, z, method=SPLIT)


def test_the_plain_entries_do_not_compile_the_split():
    """Another process runs the other methods: the split's entries stay uncompiled and its
    buffers unpacked."""
    code = """if True:
        import numpy as np, flexdyn as fd
        from flexdyn import dynamics
        from flexdyn.engine import split
        model = fd.models.builtin_model("two_link_arm")
        q, z = model.neutral_configuration(), np.zeros(model.nu)
        for method in ("articulated", "composite"):
            fd.forward_dynamics(model, q, z, z, method=method)
        assert dynamics.cached_engine(model)._split is None
        print(sum(len(f.signatures) for f in (split.forward_split, split.factors, split.batch)))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "0"
    assert dynamics.ENGINE_METHODS >= {SPLIT}
