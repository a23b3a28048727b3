"""The bound interface, ``fd.bind(model, fidelity=, backend=)``.

* On hypothesis trees, for every fidelity, each method of the engine's :class:`~flexdyn.Dynamics`
  equals the numpy reference tier's (the independent implementation): forward dynamics by
  every engine method, inverse dynamics, bias forces, the mass matrix and its inverse (against
  the reference's ``M``), hybrid dynamics, the joint wrenches and the state derivative
  (``[Γ(q) u; u̇]`` from the reference's kinematic equation and accelerations).
* Inputs of any array type, layout, dtype or Python lists give the same numbers as the
  compiled entries' own type; ``out=`` receives the result and is returned; a wrong ``out``,
  fidelity or backend is refused naming it.
* Batches over a leading axis equal the states one by one.
* A bad state is refused with the message of the module-level functions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from helpers import assert_close
from strategies import models_and_states
from test_closed_chains import fourbar, fourbar_minimal, fourbar_state

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=5, max_modes=3)
FIDELITY = st.sampled_from(fd.FIDELITIES)

pytestmark = pytest.mark.usefixtures("quiet_numba")


def _arm() -> fd.Model:
    return fd.models.two_link_arm(n_modes=2, gravity=(0.0, -9.81, 0.0))


def _state(model: fd.Model, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = model.neutral_configuration() + 0.3 * rng.normal(size=model.nq) * (model.nq == model.nu)
    return q, rng.normal(size=model.nu), rng.normal(size=model.nu)


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_every_method_equals_the_reference_tier(sample, fidelity):
    model, q, u, udot, f = sample.model, sample.q, sample.u, sample.udot, sample.f_ext
    dyn = fd.bind(model, fidelity=fidelity)
    ref = fd.bind(model, fidelity=fidelity, backend="reference")
    tau = np.random.default_rng(11).normal(size=model.nu)
    M = ref.mass_matrix(q)
    scale = float(np.max(np.abs(M)))
    assert_close(dyn.mass_matrix(q), M, "M")
    assert_close(dyn.mass_matrix_inverse(q) @ M, np.eye(model.nu), "M⁻¹ M", tol=1e-8)
    for f_ext in (None, f):
        assert_close(dyn.inverse_dynamics(q, u, udot, f_ext=f_ext),
                     ref.inverse_dynamics(q, u, udot, f_ext=f_ext), "τ", scale=scale)
        C = ref.bias_forces(q, u, f_ext=f_ext)
        assert_close(dyn.bias_forces(q, u, f_ext=f_ext), C, "C", scale=scale)
        for method in ("articulated", "articulated-split", "composite"):
            udot_m = dyn.forward_dynamics(q, u, tau, method=method, f_ext=f_ext)
            assert_close(M @ udot_m + C, tau, f"M u̇ + C ({method})", scale=scale, tol=1e-8)
        assert_close(dyn.joint_wrenches(q, u, udot, f_ext=f_ext),
                     ref.joint_wrenches(q, u, udot, f_ext=f_ext), "joint wrenches",
                     scale=scale)
    prescribed = np.arange(model.nu) % 2 == 0
    got = dyn.hybrid_dynamics(q, u, tau, udot, prescribed, f_ext=f)
    expected = ref.hybrid_dynamics(q, u, tau, udot, prescribed, f_ext=f)
    assert_close(got[0], expected[0], "hybrid u̇", scale=1.0)
    assert_close(got[1], expected[1], "hybrid τ", scale=scale)
    x = np.concatenate([q, u])
    xdot = dyn.state_derivative(0.0, x, tau, f_ext=f)
    assert_close(xdot[:model.nq], model.qdot(q, u), "q̇", scale=1.0)
    assert_close(xdot[model.nq:], ref.forward_dynamics(q, u, tau, f_ext=f), "u̇", scale=1.0)


def test_any_input_type_gives_the_numbers_of_the_compiled_type():
    model = _arm()
    dyn = fd.bind(model)
    q, u, tau = _state(model)
    expected = dyn.forward_dynamics(q, u, tau)
    wide = np.zeros((model.nu, 2))
    wide[:, 0] = tau
    for variant in (tau.tolist(), tau.astype(np.float32).astype(np.float64), wide[:, 0],
                    np.frombuffer(tau.tobytes())):  # a list, a copy, strided, read-only
        assert_close(dyn.forward_dynamics(q, u, variant), expected, "u̇", scale=1.0)
    assert_close(dyn.forward_dynamics(q.astype(complex), u, tau).real, expected, "u̇ (complex)",
                 scale=1.0)
    assert_close(dyn.forward_dynamics(q, u, None), dyn.forward_dynamics(q, u, 0 * tau),
                 "u̇ (τ None)", scale=1.0)


def test_out_receives_the_result():
    model = _arm()
    dyn = fd.bind(model)
    ref = fd.bind(model, backend="reference")
    q, u, tau = _state(model)
    nu, nx = model.nu, model.nq + model.nu
    cases = [
        (lambda out: dyn.forward_dynamics(q, u, tau, out=out), (nu,),
         ref.forward_dynamics(q, u, tau)),
        (lambda out: dyn.inverse_dynamics(q, u, tau, out=out), (nu,),
         ref.inverse_dynamics(q, u, tau)),
        (lambda out: dyn.bias_forces(q, u, out=out), (nu,), ref.bias_forces(q, u)),
        (lambda out: dyn.mass_matrix(q, out=out), (nu, nu), ref.mass_matrix(q)),
        (lambda out: dyn.mass_matrix_inverse(q, out=out), (nu, nu),
         np.linalg.inv(ref.mass_matrix(q))),
        (lambda out: dyn.joint_wrenches(q, u, tau, out=out), (model.n_bodies, 6),
         ref.joint_wrenches(q, u, tau)),
        (lambda out: dyn.state_derivative(0.0, np.concatenate([q, u]), tau, out=out), (nx,),
         np.concatenate([model.qdot(q, u), ref.forward_dynamics(q, u, tau)])),
        (lambda out: dyn.forward_dynamics(q.tolist(), u, tau, out=out), (nu,),  # general path
         ref.forward_dynamics(q, u, tau)),
    ]
    for call, shape, expected in cases:
        out = np.full(shape, np.nan)
        assert call(out) is out
        assert_close(out, expected, f"out {shape}", tol=1e-9, scale=1.0)
        with pytest.raises(ValueError, match=r"out must be an array of shape"):
            call(np.zeros(shape[:-1] + (shape[-1] + 1,)))
    udot, T = np.empty(nu), np.empty(nu)
    mask = np.zeros(nu, dtype=bool)
    mask[0] = True
    got = dyn.hybrid_dynamics(q, u, tau, tau, mask, out=(udot, T))
    assert got[0] is udot and got[1] is T
    assert_close(T, ref.hybrid_dynamics(q, u, tau, tau, mask)[1], "hybrid τ", scale=1.0)


def test_batches_equal_the_states_one_by_one():
    model = _arm()
    dyn = fd.bind(model)
    ref = fd.bind(model, backend="reference")
    rng = np.random.default_rng(5)
    Q = np.stack([_state(model, s)[0] for s in range(4)])
    U, T = rng.normal(size=(4, model.nu)), rng.normal(size=(4, model.nu))
    X = np.concatenate([Q, U], axis=1)
    udot, xdot = dyn.forward_dynamics(Q, U, T), dyn.state_derivative(0.0, X, T)
    M = dyn.mass_matrix(Q)
    assert udot.shape == (4, model.nu) and xdot.shape == (4, model.nq + model.nu)
    for b in range(4):
        assert_close(udot[b], ref.forward_dynamics(Q[b], U[b], T[b]), f"u̇[{b}]", scale=1.0)
        assert_close(xdot[b, model.nq:], udot[b], f"ẋ[{b}]", scale=1.0)
        assert_close(M[b], ref.mass_matrix(Q[b]), f"M[{b}]")
    with pytest.raises(ValueError, match=r"tau has shape \(3, 6\); with a batch of 4 states"):
        dyn.state_derivative(0.0, X, T[:3])


def test_a_bad_state_is_refused_as_by_the_module_level_functions():
    model = fd.models.builtin_model("spacecraft")
    dyn = fd.bind(model)
    q, u = model.neutral_configuration(), np.zeros(model.nu)
    bad_q = q.copy()
    bad_q[0] = 2.0  # the base quaternion off unit norm
    for args in ((bad_q, u), (q, np.full(model.nu, np.nan))):
        with pytest.raises(ValueError) as bound:
            dyn.forward_dynamics(*args)
        with pytest.raises(ValueError) as module:
            fd.forward_dynamics(model, *args)
        assert str(bound.value) == str(module.value)
    with pytest.raises(ValueError, match=r"x has shape \(3,\)"):
        dyn.state_derivative(0.0, np.zeros(3))


def test_bind_refuses_an_unknown_fidelity_or_backend():
    model = _arm()
    with pytest.raises(ValueError, match="fidelity"):
        fd.bind(model, fidelity="exactly")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        fd.bind(model, backend="gpu")
    assert "fidelity='exact'" in repr(fd.bind(model))


def test_a_closed_chain_is_closed_on_the_bound_interface():
    model = fourbar()
    dyn = fd.bind(model)
    t1, w1 = 1.0, 1.5
    q, u = fd.assemble(model, *fourbar_state(t1, w1), fixed=["crank"])
    udot = dyn.forward_dynamics(q, u)
    assert udot[0] == pytest.approx(fourbar_minimal(t1, w1), rel=1e-6, abs=1e-6)
    xdot = dyn.state_derivative(0.0, np.concatenate([q, u]))
    assert_close(xdot[model.nq:], udot, "ẋ", scale=1.0)
