"""The engine's state derivative ``ẋ = [Γ(q) u; u̇]``
(:func:`flexdyn.engine.kernels.derivative_articulated`), its C entry (:mod:`flexdyn.engine.ccall`)
and :func:`flexdyn.simulate` on it, against the reference path (``backend="reference"``:
numpy forward dynamics and ``Model.qdot``).

On hypothesis trees with every joint type and both fidelities, with joint quaternions off unit
norm (the derivative scales them first), the engine's ẋ equals the reference ``rhs``; its
energy-balance integrands equal ``τ·u``, ``Σ f_ext·V`` (the reference's body twists, Eq 11)
and ``Σ η̇ᵀ C η̇``.  The C function called through ctypes gives the same numbers and the
documented statuses.  ``simulate`` on the engine and on the reference reach the same state
and the same work integrals to integration tolerance.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.beam import beam_modes
from flexdyn.engine import DERIVATIVE_METHODS, Engine, kernels
from flexdyn.linalg import SingularInertiaError
from flexdyn.terms import modal_velocities, state_terms
from helpers import assert_close, massless_slider
from strategies import models_and_states

SAMPLES = models_and_states(max_bodies=6, max_nodes=4, max_modes=5)
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FIDELITIES = ("full", "ruthless")
METHODS = tuple(DERIVATIVE_METHODS)


def _off_norm(model: fd.Model, q: np.ndarray, factor: float) -> np.ndarray:
    """``q`` with every joint quaternion scaled by ``factor``."""
    q = np.array(q, dtype=float)
    for i, j in enumerate(model.joints):
        if j.quaternion:
            s = int(model.q_start[i])
            q[s:s + 4] *= factor
    return q


def _power(model: fd.Model, fidelity: str, q, u, tau, f_ext) -> np.ndarray:
    """``[τ·u, Σ f_ext(i)·V(i), Σ η̇ᵀ C η̇]`` from the reference's terms."""
    pos, _ = state_terms(model, model.normalize_configuration(q), None, fidelity)
    V_m = modal_velocities(model, pos, u)
    p_ext = sum(f_ext[i] @ V_m[i][int(model.n_modes[i]):] for i in range(model.n_bodies))
    p_d = sum(model.eta_dot(u, i) @ b.C @ model.eta_dot(u, i)
              for i, b in enumerate(model.bodies) if b.n_modes)
    return np.array([tau @ u, p_ext, p_d])


@SETTINGS
@given(sample=SAMPLES, fidelity=st.sampled_from(FIDELITIES), method=st.sampled_from(METHODS),
       factor=st.sampled_from([1.0, 0.7, 1.6]))
def test_state_derivative_equals_the_reference_rhs(sample, fidelity, method, factor):
    model, u, f_ext = sample.model, sample.u, sample.f_ext
    q = _off_norm(model, sample.q, factor)
    tau = np.random.default_rng(5).normal(size=model.nu)
    x = np.concatenate([q, u])
    ref = fd.rhs(model, fidelity, method, f_ext=f_ext, backend="reference")(0.0, x, tau)
    engine = Engine(model, fidelity)
    assert_close(engine.state_derivative(x, tau, f_ext, method), ref, "ẋ")
    assert_close(fd.rhs(model, fidelity, method, f_ext=f_ext)(0.0, x, tau), ref, "rhs")
    out = np.empty(model.nq + model.nu + 3)
    assert engine.derivative_status(x, tau, f_ext, method, out) == -1
    assert_close(out[:-3], ref, "ẋ with the integrands")
    assert_close(out[-3:], _power(model, fidelity, q, u, tau, f_ext), "power integrands",
                 scale=1.0)


def _pointer(a: np.ndarray, kind):
    return a.ctypes.data_as(ctypes.POINTER(kind))


def _call_c(entry, method: int, x, tau, f_ext) -> tuple[int, np.ndarray]:
    xdot = np.full(x.size, np.nan)
    status = entry.function(_pointer(entry.ib, ctypes.c_int64),
                            _pointer(entry.fb, ctypes.c_double), method,
                            _pointer(x, ctypes.c_double), _pointer(tau, ctypes.c_double),
                            _pointer(f_ext, ctypes.c_double), _pointer(xdot, ctypes.c_double))
    return status, xdot


@pytest.mark.parametrize("name", fd.models.list_builtin_models())
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_c_entry_equals_the_engine_call(name, fidelity):
    model = fd.models.builtin_model(name)
    rng = np.random.default_rng(11)
    q = _off_norm(model, model.neutral_configuration() + 0.1 * rng.normal(size=model.nq), 1.2)
    x = np.concatenate([q, rng.normal(size=model.nu)])
    tau = rng.normal(size=model.nu)
    f_ext = rng.normal(size=(model.n_bodies, 6))
    engine = Engine(model, fidelity)
    entry = engine.c_state_derivative()
    for method, code in DERIVATIVE_METHODS.items():
        status, xdot = _call_c(entry, code, x, tau, f_ext)
        assert status == -1
        # another compilation of the same kernels: equal up to the order of operations
        assert_close(xdot, engine.state_derivative(x, tau, f_ext, method), "C vs engine",
                     tol=1e-14)
        ref = fd.rhs(model, fidelity, method, f_ext=f_ext, backend="reference")(0.0, x, tau)
        assert_close(xdot, ref, f"C entry, {method}")


def test_c_entry_statuses():
    model = fd.models.builtin_model("spacecraft")
    entry = Engine(model).c_state_derivative()
    x = np.concatenate([model.neutral_configuration(), np.zeros(model.nu)])
    tau, f_ext = np.zeros(model.nu), np.zeros((model.n_bodies, 6))
    bad = x.copy()
    bad[-1] = np.nan
    assert _call_c(entry, 0, bad, tau, f_ext)[0] == kernels.INVALID
    zero_quaternion = x.copy()
    zero_quaternion[:4] = 0.0
    assert _call_c(entry, 0, zero_quaternion, tau, f_ext)[0] == kernels.INVALID
    huge = np.full(model.nu, 1e308)
    assert _call_c(entry, 0, x, huge, f_ext)[0] == kernels.OVERFLOW
    slider = massless_slider()
    entry = Engine(slider).c_state_derivative()
    x = np.zeros(slider.nq + slider.nu)
    z, w = np.zeros(slider.nu), np.zeros((slider.n_bodies, 6))
    assert _call_c(entry, 0, x, z, w)[0] == 1  # D of body 1 is singular
    assert _call_c(entry, 1, x, z, w)[0] == 0  # the mass matrix is singular


def test_engine_state_derivative_names_bad_input():
    model = fd.models.builtin_model("two_link_arm")
    engine = Engine(model)
    with pytest.raises(ValueError, match="x has shape"):
        engine.state_derivative(np.zeros(3))
    with pytest.raises(ValueError, match="not finite"):
        engine.state_derivative(np.full(model.nq + model.nu, np.nan))
    with pytest.raises(ValueError, match="unknown method"):
        engine.state_derivative(np.zeros(model.nq + model.nu), method="featherstone")
    with pytest.raises(SingularInertiaError, match="body 1"):
        slider = massless_slider()
        Engine(slider).state_derivative(np.zeros(slider.nq + slider.nu))


def damped_arm() -> fd.Model:
    """Two aluminium beams (0.5 m, 2 cm square, 2 cantilever modes, 2 % modal damping), the
    first on a revolute joint, the second on a universal joint at the first one's tip."""
    a, E, rho = 0.02, 70e9, 2700.0
    EI = E * a**4 / 12.0
    beam = beam_modes(0.5, rho * a * a, EI_y=EI, EI_z=EI, n_elements=4, n_modes=2,
                      damping_ratio=0.02).to_flex_dict()
    joints = ({"type": "revolute", "axis": [0.0, 0.0, 1.0], "child_node": 0},
              {"type": "universal", "axes": [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], "child_node": 0,
               "parent_node": 4})
    bodies = [{"name": f"link{i}", "parent": None if i == 0 else "link0", "joint": joints[i],
               "flex": beam} for i in range(2)]
    return fd.Model.from_dict({"name": "damped arm", "gravity": [0.0, 0.0, -9.81],
                               "bodies": bodies})


@pytest.mark.slow
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_simulate_on_the_engine_equals_the_reference(fidelity):
    """A damped flexible arm driven by a state-dependent torque and a constant wrench: the
    two backends reach the same state and work integrals within the integration tolerance."""
    model = damped_arm()

    def tau(t, q, u):
        out = np.zeros(model.nu)
        out[0] = 2.0 * np.sin(3.0 * t) - 0.5 * u[0]
        return out

    f_ext = np.zeros((model.n_bodies, 6))
    f_ext[1] = [0.0, 0.0, 0.03, 0.5, -0.2, 0.0]
    runs = {backend: fd.simulate(model, t_span=(0.0, 0.4), tau=tau, f_ext=f_ext,
                                 fidelity=fidelity,
                                 t_eval=np.linspace(0.0, 0.4,
                                 9), backend=backend, integrator=fd.Auto(rtol=1e-11, atol=1e-12))
            for backend in ("engine", "reference")}
    eng, ref = runs["engine"], runs["reference"]
    for field in ("q", "u", "work", "external_work", "dissipation"):
        assert_close(getattr(eng, field), getattr(ref, field), field, tol=1e-7, scale=1e-3)
    assert abs(eng.work[-1]) > 1e-3 and eng.dissipation[-1] > 0.0  # the integrals are exercised


def test_simulate_reports_a_singular_inertia_on_the_engine():
    slider = massless_slider()
    with pytest.raises(fd.SimulationError, match="forward dynamics failed.*body 1"):
        fd.simulate(slider, t_span=(0.0, 0.1))


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("backend", ["engine", "reference"])
def test_jacobian_of_the_implicit_integrators(fidelity, backend):
    """The Jacobian ``simulate`` hands to Radau/BDF/LSODA on either backend: its ``u̇`` rows
    equal central differences of the reference forward dynamics, its ``q̇`` rows are ``Γ(q)``
    in ``u``, and the rows of the work integrals are zero."""
    from flexdyn.simulation.loop import implicit_jacobian
    from flexdyn.simulation.problem import Problem

    model = damped_arm()
    nq, nu = model.nq, model.nu
    rng = np.random.default_rng(2)
    q = model.neutral_configuration() + 0.2 * rng.normal(size=nq)
    u = rng.normal(size=nu)
    tau = rng.normal(size=nu)
    x = np.concatenate([q, u, np.zeros(3)])
    ode = Problem(model, fidelity, "articulated", backend, lambda t, q, u: tau, None, None,
                  None)
    jac = implicit_jacobian(ode)
    J = jac(0.0, x)
    assert J.shape == (nq + nu + 3, nq + nu + 3)
    central = np.empty((nu, nq + nu))
    for j in range(nq + nu):
        h = 1e-6 * max(abs(x[j]), 1.0)
        plus, minus = x[:nq + nu].copy(), x[:nq + nu].copy()
        plus[j] += h
        minus[j] -= h
        f = [fd.forward_dynamics(model, z[:nq], z[nq:], tau, fidelity=fidelity,
                                 backend="reference") for z in (plus, minus)]
        central[:, j] = (f[0] - f[1]) / (2 * h)
    assert_close(J[nq:nq + nu, :nq + nu], central, "∂u̇/∂x", tol=1e-5)
    np.testing.assert_array_equal(J[:nq, nq:nq + nu], model.Gamma(q))
    assert not J[nq + nu:].any() and not J[:, nq + nu:].any()
