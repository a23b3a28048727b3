"""A leading batch axis on every per-state function of the front door (and the energies):
the result equals the loop over the states, invalid states are reported with their index."""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.linalg import SingularInertiaError
from helpers import massless_slider
from strategies import random_f_ext, random_state

FUNCTIONS = {
    "forward_dynamics articulated": lambda m, s: fd.forward_dynamics(
        m, s["q"], s["u"], s["tau"], method="articulated", f_ext=s["f_ext"]),
    "forward_dynamics articulated-split ruthless": lambda m, s: fd.forward_dynamics(
        m, s["q"], s["u"], s["tau"], method="articulated-split", fidelity="ruthless",
        f_ext=s["f_ext"]),
    "forward_dynamics composite": lambda m, s: fd.forward_dynamics(
        m, s["q"], s["u"], s["tau"], method="composite", f_ext=s["f_ext"]),
    "inverse_dynamics": lambda m, s: fd.inverse_dynamics(m, s["q"], s["u"], s["tau"],
                                                         f_ext=s["f_ext"]),
    "bias_forces": lambda m, s: fd.bias_forces(m, s["q"], s["u"], f_ext=s["f_ext"]),
    "mass_matrix": lambda m, s: fd.mass_matrix(m, s["q"]),
    "mass_matrix_inverse": lambda m, s: fd.mass_matrix_inverse(m, s["q"], "ruthless"),
    "kinetic_energy": lambda m, s: fd.kinetic_energy(m, s["q"], s["u"]),
    "potential_energy": lambda m, s: fd.potential_energy(m, s["q"]),
    "total_energy": lambda m, s: fd.total_energy(m, s["q"], s["u"]),
    "momentum": lambda m, s: fd.momentum(m, s["q"], s["u"]),
}


def states(model: fd.Model, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = [random_state(model, rng) for _ in range(n)]
    return {"q": np.array([r[0] for r in rows]), "u": np.array([r[1] for r in rows]),
            "tau": rng.normal(size=(n, model.nu)),
            "f_ext": np.array([random_f_ext(model, rng) for _ in range(n)])}


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("n", [1, 7])
def test_batch_equals_the_loop(name, n):
    model = fd.models.builtin_model("spacecraft")
    s = states(model, n)
    fn = FUNCTIONS[name]
    got = fn(model, s)
    ref = np.stack([fn(model, {k: v[b] for k, v in s.items()}) for b in range(n)])
    assert got.shape == ref.shape and got.shape[0] == n
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref)))


def test_one_wrench_for_the_whole_batch():
    model = fd.models.builtin_model("two_link_arm")
    s = states(model, 4, seed=1)
    f = s["f_ext"][0]
    got = fd.forward_dynamics(model, s["q"], s["u"], s["tau"], f_ext=f)
    ref = [fd.forward_dynamics(model, s["q"][b], s["u"][b], s["tau"][b], f_ext=f)
           for b in range(4)]
    np.testing.assert_allclose(got, np.array(ref), rtol=1e-12)


def test_invalid_state_is_reported_with_its_index():
    model = fd.models.builtin_model("spacecraft")
    s = states(model, 5, seed=2)
    q = s["q"].copy()
    q[3, :4] *= 1.5  # not a unit quaternion
    with pytest.raises(ValueError, match=r"batch item 3: q: the quaternion of body 0 'hub'"):
        fd.forward_dynamics(model, q, s["u"])
    u = s["u"].copy()
    u[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"batch item 2: u contains non-finite values"):
        fd.inverse_dynamics(model, s["q"], u, s["tau"])


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_an_empty_batch_is_refused_by_name(name):
    """A batch of no states (``q`` of shape (0, nq)) is a ``ValueError`` naming ``q`` and
    its shape, in every batched function (not an ``IndexError`` from inside)."""
    model = fd.models.builtin_model("two_link_arm")
    empty = {"q": np.zeros((0, model.nq)), "u": np.zeros((0, model.nu)),
             "tau": np.zeros((0, model.nu)), "f_ext": None}
    with pytest.raises(ValueError, match=r"q has shape \(0, 4\): an empty batch"):
        FUNCTIONS[name](model, empty)


def test_batch_sizes_must_agree():
    model = fd.models.builtin_model("two_link_arm")
    s = states(model, 4, seed=3)
    with pytest.raises(ValueError, match=r"u has shape \(3, 4\); with a batch of 4 states"):
        fd.forward_dynamics(model, s["q"], s["u"][:3])
    with pytest.raises(ValueError, match=r"f_ext has shape \(2, 2, 6\); with a batch of 4"):
        fd.bias_forces(model, s["q"], s["u"], f_ext=s["f_ext"][:2])


@pytest.mark.parametrize("per_thread", [1, 10**9])
def test_engine_batch_does_not_depend_on_the_thread_count(monkeypatch, per_thread):
    """A large batch is shared among threads: every state equals its single call."""
    from flexdyn import engine

    monkeypatch.setattr(engine, "STATES_PER_THREAD", per_thread)
    model = fd.models.builtin_model("spacecraft")
    s = states(model, 150, seed=4)
    for method in ("articulated", "composite"):
        got = fd.forward_dynamics(model, s["q"], s["u"], s["tau"], method=method,
                                  f_ext=s["f_ext"])
        for b in (0, 77, 149):
            one = fd.forward_dynamics(model, s["q"][b], s["u"][b], s["tau"][b], method=method,
                                      f_ext=s["f_ext"][b])
            np.testing.assert_array_equal(got[b], one)
    M = fd.mass_matrix(model, s["q"])
    np.testing.assert_array_equal(M[42], fd.mass_matrix(model, s["q"][42]))


def test_engine_batch_reports_a_singular_state_by_index():
    model = massless_slider()
    q = np.zeros((3, model.nq))
    with pytest.raises(SingularInertiaError,
                       match=r"^batch item 0: articulated inertia D of body 1 'slider'"):
        fd.forward_dynamics(model, q, np.zeros((3, model.nu)))


def test_engine_batch_leaves_bad_options_to_the_per_state_messages():
    model = fd.models.builtin_model("two_link_arm")
    s = states(model, 3, seed=5)
    with pytest.raises(ValueError, match=r"batch item 0: unknown method \['articulated'\]"):
        fd.forward_dynamics(model, s["q"], s["u"], method=["articulated"])
    with pytest.raises(ValueError, match=r"^unknown fidelity 'stiff'"):  # an option, once
        fd.mass_matrix(model, s["q"], fidelity="stiff")
