"""The compiled ruthless tier (:mod:`flexdyn.fast`) against the reference implementation.

On random chains and trees of rigid and flexible bodies (every joint type, 0 or 1–12 modes
per body, random attachment nodes, gravity, stiffness, damping) the compiled articulated-body
and composite-body forward dynamics, the mass matrix, the inverse dynamics and every
articulated-body quantity of Eq 63 must equal the numpy implementation of
:mod:`flexdyn.ruthless` / ``fidelity="ruthless"`` to 1e-10 relative, with ``D_f⁻¹`` formed
both explicitly and by the push-through form of Eq B3.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn import fast  # noqa: E402
from flexdyn.fast import CompiledRuthlessModel  # noqa: E402
from flexdyn.ruthless import RuthlessModel  # noqa: E402
from helpers import assert_close  # noqa: E402
from ruthless_terms import precomputed_forward_dynamics, precomputed_split_factors  # noqa: E402
from strategies import models_and_states, random_model_dict, random_state  # noqa: E402

#: ``indirect_min_modes`` values: Eq B3 for every body with children / explicit everywhere /
#: the default mix.
RULES = (1, 99, 8)

SAMPLES = models_and_states(max_bodies=8, max_nodes=5, max_modes=12)
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile (or load) the kernels once, outside hypothesis' timing."""
    model = fd.Model.from_dict(random_model_dict(
        np.random.default_rng(0), [-1, 0, 1, 1], ["free", "universal", "revolute", "fixed"],
        [2, 3, 2, 0], [3, 4, 2, 0]))
    CompiledRuthlessModel(model).warmup()


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


# ---------------------------------------------------------------------------------------------
# forward dynamics, mass matrix, inverse dynamics on random models
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, rule=st.sampled_from(RULES), use_f_ext=st.booleans())
def test_forward_dynamics_matches_reference(sample, rule, use_f_ext):
    model, q, u = sample.model, sample.q, sample.u
    rng = np.random.default_rng(int(np.abs(q).sum() * 1e6) % 2**32)
    tau = rng.normal(size=model.nu)
    f_ext = sample.f_ext if use_f_ext else None
    ref = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity="ruthless",
                              f_ext=f_ext)
    cm = CompiledRuthlessModel(model, indirect_min_modes=rule)
    assert_close(cm.forward_dynamics(q, u, tau, f_ext), ref, "articulated body")
    assert_close(cm.composite_forward_dynamics(q, u, tau, f_ext), ref, "composite body")
    ab_ref = precomputed_forward_dynamics(RuthlessModel(model, rule), q, u, tau, f_ext)
    assert_close(cm.forward_dynamics(q, u, tau, f_ext), ab_ref, "articulated vs numpy split")


@SETTINGS
@given(sample=SAMPLES)
def test_mass_matrix_matches_reference(sample):
    model, q = sample.model, sample.q
    M = CompiledRuthlessModel(model).mass_matrix(q)
    assert_close(M, fd.mass_matrix(model, q, "ruthless"), "mass matrix")
    assert np.array_equal(M, M.T)


@SETTINGS
@given(sample=SAMPLES, use_f_ext=st.booleans())
def test_inverse_dynamics_matches_reference(sample, use_f_ext):
    model, q, u, udot = sample.model, sample.q, sample.u, sample.udot
    f_ext = sample.f_ext if use_f_ext else None
    ref = fd.inverse_dynamics(model, q, u, udot, "ruthless", f_ext)
    assert_close(CompiledRuthlessModel(model).inverse_dynamics(q, u, udot, f_ext), ref,
                 "inverse dynamics")


@SETTINGS
@given(sample=SAMPLES, rule=st.sampled_from(RULES))
def test_split_factors_field_by_field(sample, rule):
    model, q = sample.model, sample.q
    rm = RuthlessModel(model, rule)
    ref = precomputed_split_factors(rm, q)
    got = CompiledRuthlessModel(rm).split_factors(q)
    for field in ("Df_inv", "g", "P_R", "DR_inv", "G_R", "P_R_plus"):
        for i in range(model.n_bodies):
            r = getattr(ref, field)[i]
            # P_R⁺ vanishes on a free joint: compare it on the scale of P_R
            scale = float(np.max(np.abs(ref.P_R[i]))) if field == "P_R_plus" else 0.0
            assert_close(getattr(got, field)[i], r, f"{field}[{i}]", scale=scale)


# ---------------------------------------------------------------------------------------------
# both D_f⁻¹ procedures on a fixed tree
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [1, 4, 8, 9, 13, 99])
def test_tree_both_inverse_procedures(rule):
    model = tree_model()
    kids_modes = [int(model.n_modes[i]) for i in range(model.n_bodies) if model.children[i]]
    assert min(m for m in kids_modes if m) < 8 <= max(kids_modes)  # both procedures occur
    rng = np.random.default_rng(rule)
    q, u, _ = random_state(model, rng)
    tau = rng.normal(size=model.nu)
    cm = CompiledRuthlessModel(model)
    cm.indirect_min_modes = rule  # switch the procedure on the instance: no recompilation
    rm = RuthlessModel(model, rule)
    ref = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity="ruthless")
    assert_close(cm.forward_dynamics(q, u, tau), ref, "articulated body")
    assert_close(cm.forward_dynamics(q, u, tau), precomputed_forward_dynamics(rm, q, u, tau),
                 "vs numpy")
    got, want = cm.split_factors(q), precomputed_split_factors(rm, q)
    for i in range(model.n_bodies):
        assert_close(got.Df_inv[i], want.Df_inv[i], f"Df_inv[{i}]")
    assert_close(cm.composite_forward_dynamics(q, u, tau), ref, "composite body")


def test_beam_chain_matches_reference():
    """The benchmark's setting: revolute chain of free-free beams, attached at last nodes."""
    from flexdyn.beam import beam_modes

    bm = beam_modes(1.0, 2.0, EI_y=3.0, EI_z=2.0, EA=50.0, GJ=1.0,
                    polar_inertia_per_length=0.01, n_elements=6, n_modes=10,
                    boundary="free-free", damping_ratio=0.02)
    flex = bm.to_flex_dict()
    bodies = [{"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
               "joint": {"type": "revolute", "axis": [0.0, 0.0, 1.0] if i % 2 else [0, 1.0, 0],
                         "parent_node": None if i == 0 else bm.n_nodes - 1},
               "flex": flex} for i in range(4)]
    model = fd.Model.from_dict({"name": "beams", "gravity": [0, 0, -9.81], "bodies": bodies})
    rng = np.random.default_rng(5)
    q, u, _ = random_state(model, rng, eta_scale=0.05)
    tau = rng.normal(size=model.nu)
    ref = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity="ruthless")
    for rule in (1, 99):
        cm = CompiledRuthlessModel(model, indirect_min_modes=rule)
        assert_close(cm.forward_dynamics(q, u, tau), ref, f"articulated body, rule {rule}")
        assert_close(cm.composite_forward_dynamics(q, u, tau), ref, "composite body")


# ---------------------------------------------------------------------------------------------
# API details
# ---------------------------------------------------------------------------------------------
def test_defaults_and_validation():
    model = tree_model()
    rm = RuthlessModel(model, 5)
    assert CompiledRuthlessModel(rm).indirect_min_modes == 5
    cm = CompiledRuthlessModel(model)
    assert cm.indirect_min_modes == fd.ruthless.INDIRECT_MIN_MODES
    assert "CompiledRuthlessModel" in repr(cm)
    q = model.neutral_configuration()
    z = np.zeros(model.nu)
    assert_close(cm.forward_dynamics(q, z), cm.forward_dynamics(q, z, z), "tau=None")
    with pytest.raises(ValueError, match="q has shape"):
        cm.forward_dynamics(q[:-1], z, z)
    with pytest.raises(ValueError, match="u has shape"):
        cm.composite_forward_dynamics(q, z[:-1], z)
    with pytest.raises(ValueError, match="f_ext has shape"):
        cm.forward_dynamics(q, z, z, np.zeros((1, 6)))


def test_singular_articulated_inertia_is_reported():
    """A point mass on its revolute axis (no inertia about the axis): both tiers raise
    ValueError naming the body."""
    d = random_model_dict(np.random.default_rng(2), [-1, 0], ["revolute", "revolute"],
                          [2, 0], [2, 0])
    d["bodies"][1]["joint"] = {"type": "revolute", "axis": [0.0, 0.0, 1.0]}
    d["bodies"][1]["rigid"] = {"mass": 1.0, "com": [0.0, 0.0, 0.0],
                               "inertia": np.zeros((3, 3)).tolist()}
    model = fd.Model.from_dict(d)
    q = model.neutral_configuration()
    z = np.zeros(model.nu)
    with pytest.raises(ValueError, match="b1"):
        precomputed_forward_dynamics(RuthlessModel(model), q, z, z)
    cm = CompiledRuthlessModel(model)
    with pytest.raises(ValueError, match="D_R of body 1 'b1'"):
        cm.forward_dynamics(q, z, z)
    with pytest.raises(ValueError, match="not positive definite"):
        cm.composite_forward_dynamics(q, z, z)


def test_missing_numba_raises_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # makes ``import numba`` fail
    assert not fast.numba_available()
    with pytest.raises(ImportError, match=r"flexdyn\[fast\]"):
        CompiledRuthlessModel(tree_model())


def test_singular_articulated_inertia_raises_naming_the_body():
    """A massless slider carrying a cart along the same axis: ``D(slider)`` is zero up to
    round-off; the compiled tier reports it like the reference does."""
    slider = {"name": "slider", "parent": None, "joint": {"type": "prismatic", "axis": [1, 0, 0]}}
    cart = {"name": "cart", "parent": "slider",
            "joint": {"type": "prismatic", "axis": [1, 0, 0]},
            "rigid": {"mass": 2.0, "com": [0.3, 0.1, 0], "inertia": np.diag([0.1, 0.2, 0.25])}}
    model = fd.Model.from_dict({"name": "s", "gravity": [0, 0, -9.81], "bodies": [slider, cart]})
    cm = CompiledRuthlessModel(model)
    with pytest.raises(ValueError, match="'slider'"):
        cm.forward_dynamics(np.zeros(2), np.zeros(2), np.zeros(2))


def test_first_build_from_several_threads():
    """Four threads loading the kernels at once (each wraps the kernels with numba.njit the
    first time): none fails, every kernel is wrapped once."""
    import importlib.util
    import threading

    spec = importlib.util.spec_from_file_location("flexdyn._fast_race", fast.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    barrier, errors = threading.Barrier(4), []

    def load():
        barrier.wait()
        try:
            mod._load_kernels()
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    import numba

    for name in mod._KERNEL_NAMES:
        kernel = getattr(mod, name)
        assert isinstance(kernel, numba.core.registry.CPUDispatcher), name
        assert not isinstance(kernel.py_func, numba.core.registry.CPUDispatcher), name


def test_body_models_built_once_from_several_threads():
    import threading

    model = fd.models.spacecraft(name="threads")  # a model no other test has cached
    barrier, results = threading.Barrier(4), []

    def build():
        barrier.wait()
        results.append(fd.terms.body_models(model, "ruthless"))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r is results[0] for r in results)
