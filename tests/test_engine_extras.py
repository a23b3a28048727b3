"""The engine's extras (``flexdyn.engine.extras``) on the default path: ``mass_matrix_inverse``
(Lemma 4 on a block of right-hand sides) and the energies and momentum.

* On hypothesis trees with every joint type, for every fidelity, the default backend equals
  ``backend="reference"``.
* Independent checks: ``M⁻¹ M = I``; ``T = ½ uᵀ M u``; the rate of ``V`` along a motion is the
  power of the conservative forces ``uᵀ C(q, 0)`` (full fidelity); the momentum of a free
  floating system changes at the rate of its weight (full fidelity).
* Batches of 1 and 7 states equal the loop over the states, run in one engine call, and do
  not depend on how many threads share them.
* Complex inputs run the reference; bad inputs raise the reference's errors and messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn import dynamics, engine
from flexdyn.articulated_body import apply_mass_matrix_inverse
from flexdyn.energy import energies
from flexdyn.linalg import SingularInertiaError
from flexdyn.terms import state_terms
from helpers import RTOL, assert_close, massless_slider
from strategies import JOINT_TYPES, models, models_and_states, random_model_dict, random_state

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=6, max_modes=4)
FIDELITY = st.sampled_from(fd.FIDELITIES)

#: the functions moved to the engine, as ``(model, q, u, fidelity, **kw) -> result``
FUNCTIONS = {
    "mass_matrix_inverse": lambda m, q, u, f, **kw: fd.mass_matrix_inverse(m, q, f, **kw),
    "kinetic_energy": lambda m, q, u, f, **kw: fd.kinetic_energy(m, q, u, f, **kw),
    "potential_energy": lambda m, q, u, f, **kw: fd.potential_energy(m, q, f, **kw),
    "total_energy": lambda m, q, u, f, **kw: fd.total_energy(m, q, u, f, **kw),
    "momentum": lambda m, q, u, f, **kw: fd.momentum(m, q, u, f, **kw),
    "energies": lambda m, q, u, f, **kw: np.array(energies(m, q, u, f, **kw)),
}


pytestmark = pytest.mark.usefixtures("quiet_numba")  # numba hints, reference overflow


def _tree(seed: int = 11) -> fd.Model:
    """A tree with one body per joint type, rigid and flexible bodies, gravity."""
    rng = np.random.default_rng(seed)
    parents = [-1, 0, 0, 1, 2, 2, 4, 3]
    return fd.Model.from_dict(random_model_dict(rng, parents, JOINT_TYPES,
                                                [3, 0, 4, 2, 0, 3, 2, 1],
                                                [2, 0, 3, 2, 0, 2, 2, 1], gravity=True))


def _states(model: fd.Model, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = [random_state(model, rng) for _ in range(n)]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _scale(model: fd.Model, q: np.ndarray, u: np.ndarray, fidelity: str) -> float:
    """A size of the energies and momenta of the state: ``|u|² max |M|`` plus the size of
    the gravitational and elastic terms (for comparisons of quantities that may cancel)."""
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    mass = sum(b.mass + float(np.sum(b.node_masses)) for b in model.bodies)
    return float(np.max(np.abs(M)) * (1.0 + u @ u) + mass * (1.0 + np.linalg.norm(model.gravity))
                 * (1.0 + np.max(np.abs(q))) + sum(np.max(b.K, initial=0.0) for b in model.bodies))


# ---------------------------------------------------------------------------------------------
# the same results as the reference
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_default_backend_equals_the_reference(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    scale = _scale(model, q, u, fidelity)
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    inverse_tol = max(RTOL, 10.0 * np.finfo(float).eps * np.linalg.cond(M))  # κ(M) ε each
    for name, fn in FUNCTIONS.items():
        got, ref = fn(model, q, u, fidelity), fn(model, q, u, fidelity, backend="reference")
        assert np.shape(got) == np.shape(ref), name
        if name == "mass_matrix_inverse":
            assert_close(got, ref, name, tol=inverse_tol)
        else:
            assert_close(got, ref, name, scale=scale)


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, k=st.integers(1, 4))
def test_block_of_right_hand_sides_equals_the_reference(sample, fidelity, k):
    """``Engine.apply_mass_matrix_inverse`` on b (nu,) and (nu, k) equals the reference's
    sweeps and, independently, ``M⁻¹ M = I``."""
    model, q = sample.model, sample.q
    rng = np.random.default_rng(k)
    run = dynamics.cached_engine(model, fidelity)
    pos = state_terms(model, q, None, fidelity)[0]
    B = rng.normal(size=(model.nu, k))
    got = run.apply_mass_matrix_inverse(q, B)
    assert got.shape == (model.nu, k)
    assert_close(got, apply_mass_matrix_inverse(model, pos, B), "M⁻¹ B")
    one = run.apply_mass_matrix_inverse(q, B[:, 0])
    assert one.shape == (model.nu,)
    assert_close(one, got[:, 0], "M⁻¹ b", tol=1e-13)
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    cond = np.linalg.cond(M)
    assert_close(run.apply_mass_matrix_inverse(q, M), np.eye(model.nu), "M⁻¹ M",
                 tol=max(1e-10, 1e-13 * cond))
    assert_close(fd.mass_matrix_inverse(model, q, fidelity) @ M, np.eye(model.nu), "M⁻¹ M",
                 tol=max(1e-10, 1e-13 * cond))


# ---------------------------------------------------------------------------------------------
# independent checks
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_kinetic_energy_is_half_u_M_u(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    T = fd.kinetic_energy(model, q, u, fidelity)
    assert_close(T, 0.5 * u @ M @ u, "T")
    assert_close(energies(model, q, u, fidelity)[0], T, "T of energies", tol=0.0)


@SETTINGS
@given(sample=models_and_states(max_bodies=5, max_modes=3, gravity=True, eta_scale=0.2))
def test_potential_energy_rate_is_the_power_of_the_conservative_forces(sample):
    """``dV/dt = uᵀ C(q, 0)`` along ``q̇ = q̇(q, u)``: gravity and stiffness are the forces of
    the potential of the full body model (central differences)."""
    model, q, u = sample.model, sample.q, sample.u
    h = 1e-6
    qdot = model.qdot(q, u)
    rate = (fd.potential_energy(model, q + h * qdot)
            - fd.potential_energy(model, q - h * qdot)) / (2 * h)
    C = fd.bias_forces(model, q, np.zeros(model.nu), backend="reference")
    assert_close(rate, u @ C, "dV/dt", tol=1e-6, scale=float(np.abs(u) @ np.abs(C)))


def _free_floating(d: dict, gravity: list[float]) -> fd.Model:
    """The model of ``d`` carried by a rigid hub on a free joint (its bodies on the ground
    moved onto the hub), with ``gravity``."""
    hub = {"name": "hub", "parent": None, "joint": {"type": "free"},
           "rigid": {"mass": 3.0, "com": [0.1, -0.2, 0.05],
                     "inertia": [[0.3, 0.01, 0.0], [0.01, 0.4, 0.02], [0.0, 0.02, 0.5]]}}
    bodies = [{**b, "parent": b["parent"] or "hub"} for b in d["bodies"]]
    return fd.Model.from_dict({**d, "gravity": gravity, "bodies": [hub, *bodies]})


@SETTINGS
@given(d=models(max_bodies=4, max_modes=3), seed=st.integers(0, 99))
def test_momentum_changes_at_the_rate_of_the_weight(d, seed):
    """A free-floating system without external forces: ``ṗ = m g`` and, without gravity,
    ``ḣ = 0`` (joint, elastic and damping forces are internal); central differences along
    the motion of the (engine's) forward dynamics, full fidelity."""
    rng = np.random.default_rng(seed)
    g = (9.81 * rng.normal(size=3) / np.sqrt(3)).tolist()
    for gravity in (g, [0.0, 0.0, 0.0]):
        model = _free_floating(d, gravity)
        q, u, _ = random_state(model, rng, eta_scale=0.2)
        qdot, udot = model.qdot(q, u), fd.forward_dynamics(model, q, u)
        h = 1e-6
        rate = (fd.momentum(model, q + h * qdot, u + h * udot)
                - fd.momentum(model, q - h * qdot, u - h * udot)) / (2 * h)
        mass = sum(b.mass + float(np.sum(b.node_masses)) for b in model.bodies)
        expected = np.concatenate([rate[:3] if any(gravity) else np.zeros(3),
                                   mass * np.asarray(gravity)])
        scale = float(np.max(np.abs(fd.momentum(model, q, u)))) * (1.0 + np.max(np.abs(udot)))
        assert_close(rate, expected, "dP/dt", tol=1e-6, scale=scale + mass * 9.81)


# ---------------------------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("n", [1, 7])
def test_batch_equals_the_loop_in_one_engine_call(monkeypatch, name, fidelity, n):
    model = _tree()
    q, u = _states(model, n)
    calls = []
    batch = engine.Engine.batch

    def spy(self, op, *args, **kwargs):
        calls.append(op)
        return batch(self, op, *args, **kwargs)

    monkeypatch.setattr(engine.Engine, "batch", spy)
    fn = FUNCTIONS[name]
    got = fn(model, q, u, fidelity)
    assert calls == ["mass_inverse" if name == "mass_matrix_inverse" else "energy_momentum"]
    loop = np.stack([fn(model, q[b], u[b], fidelity) for b in range(n)])
    if name == "energies":
        loop = np.moveaxis(loop, 0, 1)
    assert got.shape == loop.shape
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12 * np.max(np.abs(loop)))
    ref = fn(model, q, u, fidelity, backend="reference")
    assert_close(got, ref, name, tol=1e-10, scale=_scale(model, q[0], u[0], fidelity))


@pytest.mark.parametrize("per_thread", [1, 10**9])
def test_batch_does_not_depend_on_the_thread_count(monkeypatch, per_thread):
    monkeypatch.setattr(engine, "STATES_PER_THREAD", per_thread)
    model = _tree(5)
    q, u = _states(model, 150, seed=4)
    Minv = fd.mass_matrix_inverse(model, q, "ruthless")
    E = energies(model, q, u)
    P = fd.momentum(model, q, u)
    for b in (0, 77, 149):
        np.testing.assert_array_equal(Minv[b], fd.mass_matrix_inverse(model, q[b], "ruthless"))
        np.testing.assert_array_equal([E[0][b], E[1][b]], energies(model, q[b], u[b]))
        np.testing.assert_array_equal(P[b], fd.momentum(model, q[b], u[b]))


# ---------------------------------------------------------------------------------------------
# complex inputs, bad inputs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_complex_inputs_run_the_reference(name):
    model = _tree(3)
    q, u = _states(model, 1, seed=1)
    q, u = q[0] + 1e-30j * np.linspace(-1.0, 1.0, model.nq), u[0] + 0j
    fn = FUNCTIONS[name]
    got = fn(model, q, u, "full")
    assert np.iscomplexobj(got)
    np.testing.assert_array_equal(got, fn(model, q, u, "full", backend="reference"))


def _messages(error: type[Exception], fn, *args) -> tuple[str, str]:
    out = []
    for backend in dynamics.BACKENDS:
        with pytest.raises(error) as info:
            fn(*args, backend=backend)
        out.append(str(info.value))
    return out[0], out[1]


#: bad inputs: how to make one from a state ``(q, u)`` of the spacecraft (a quaternion on the
#: hub) and a batch of 4 ``(qs, us)``, and whether it concerns ``u``
BAD_INPUTS = {
    "q shape": (lambda q, u, qs, us: (np.zeros(q.size + 1), u), False),
    "u shape": (lambda q, u, qs, us: (q, u[:, None]), True),
    "q nan": (lambda q, u, qs, us: (np.where(np.arange(q.size) == q.size - 1, np.nan, q), u),
              False),
    "u inf": (lambda q, u, qs, us: (q, np.where(np.arange(u.size) == 0, -np.inf, u)), True),
    "quaternion": (lambda q, u, qs, us: (np.where(np.arange(q.size) < 4, 1.5 * q, q), u),
                   False),
    "q strings": (lambda q, u, qs, us: (np.array(["0"] * q.size), u), False),
    "q booleans": (lambda q, u, qs, us: (np.ones(q.size, bool), u), False),
    "u list of strings": (lambda q, u, qs, us: (q, ["x"] * u.size), True),
    "fidelity": (lambda q, u, qs, us: (q, u), False),
    "batch quaternion": (lambda q, u, qs, us: (qs * np.where(
        (np.arange(4) == 2)[:, None] & (np.arange(q.size) < 4), 0.5, 1.0), us), False),
    "batch u nan": (lambda q, u, qs, us: (qs, np.where(us == us[3, 1], np.nan, us)), True),
    "batch sizes": (lambda q, u, qs, us: (qs, us[:3]), True),
}
#: (function, case) pairs where the case applies
BAD_CASES = [(name, case) for name in FUNCTIONS for case, (_, of_u) in BAD_INPUTS.items()
             if not of_u or name not in ("mass_matrix_inverse", "potential_energy")]


@pytest.mark.parametrize(("name", "case"), BAD_CASES)
def test_bad_inputs_same_errors(name, case):
    model = fd.models.builtin_model("spacecraft")
    qs, us = _states(model, 4, seed=2)
    q, u = BAD_INPUTS[case][0](qs[0], us[0], qs, us)
    fidelity = "stiff" if case == "fidelity" else "full"
    error = TypeError if case in ("q strings", "q booleans", "u list of strings") else ValueError
    got, ref = _messages(error, FUNCTIONS[name], model, q, u, fidelity)
    assert got == ref
    assert got.startswith("batch item ") == (case in ("batch quaternion", "batch u nan"))


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_lists_and_unusual_dtypes(name):
    """Lists, integers, float32 and read-only arrays run the engine; extended precision runs
    the reference on both backends."""
    model = fd.models.builtin_model("spacecraft")
    qs, us = _states(model, 1, seed=3)
    q, u = qs[0], us[0]
    fn = FUNCTIONS[name]
    expected = fn(model, q, u, "full")
    assert_close(fn(model, q.tolist(), u.tolist(), "full"), expected, name, tol=0.0)
    q_ro = q.copy()
    q_ro.setflags(write=False)
    assert_close(fn(model, q_ro, u.astype(np.float32), "full"), expected, name, tol=1e-6)
    zeros = np.zeros(model.nu, dtype=int)
    assert_close(fn(model, q, zeros, "full"), fn(model, q, np.zeros(model.nu), "full"), name,
                 tol=0.0)
    wide = q.astype(np.longdouble)
    np.testing.assert_array_equal(fn(model, wide, u, "full"),
                                  fn(model, wide, u, "full", backend="reference"))


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_bad_backend_names_the_allowed_values(name):
    model = fd.models.builtin_model("two_link_arm")
    q, u = model.neutral_configuration(), np.zeros(model.nu)
    for bad in ("numba", None, 1):
        with pytest.raises(ValueError, match="'engine', 'reference'"):
            FUNCTIONS[name](model, q, u, "full", backend=bad)


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_singular_inertia_same_message(fidelity):
    model = massless_slider()
    q = model.neutral_configuration()
    got, ref = _messages(SingularInertiaError, fd.mass_matrix_inverse, model, q, fidelity)
    assert got == ref and "articulated inertia D of body 1 'slider'" in got
    got, ref = _messages(SingularInertiaError, fd.mass_matrix_inverse, model,
                         np.stack([q, q]), fidelity)
    assert got == ref and got.startswith("batch item 0: ")


def test_right_hand_sides_of_a_wrong_shape():
    model = fd.models.builtin_model("two_link_arm")
    run = dynamics.cached_engine(model)
    q = model.neutral_configuration()
    for b in (np.zeros(model.nu + 1), np.zeros((model.nu, 2, 2)), np.zeros(())):
        with pytest.raises(ValueError, match=r"^b has shape"):
            run.apply_mass_matrix_inverse(q, b)
    with pytest.raises(TypeError, match=r"^b has dtype complex128"):
        run.apply_mass_matrix_inverse(q, np.zeros(model.nu, complex))
