"""The compiled engine against the reference tier, stage by stage (position terms, velocity
terms, outputs), for every body kernel (rigid, full, ruthless) on hypothesis trees with every
joint type, and the same singular-inertia errors."""

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
from strategies import models_and_states  # noqa: E402

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=6, max_modes=4)
FIDELITY = st.sampled_from(fd.FIDELITIES)


pytestmark = pytest.mark.usefixtures("quiet_numba")


def _block(x, i, model, rows=None):
    m = int(model.n_modes[i])
    return x[i, :m + 6] if rows is None else x[i, :rows, :m + 6]


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_terms_field_by_field(sample, fidelity):
    model, q, u = sample.model, sample.q, sample.u
    engine = Engine(model, fidelity)
    w = engine.terms(q, u, sample.f_ext)
    ref = fd.compute_kinematics(model, q, fidelity)
    vel = fd.compute_velocities(model, ref, u)
    phi, A, Hcal, M_m, Q = w.phi, w.A, w.Hcal, w.M_m, w.Q
    V_m, a_m, bias = w.V_m, w.a_m, w.bias
    for i in range(model.n_bodies):
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        assert_close(phi[i], ref.phi[i], f"φ({i})", scale=1.0)
        assert_close(Hcal[i, :nj + m, :m + 6], ref.Hcal[i], f"ℋ({i})", scale=1.0)
        assert_close(M_m[i, :m + 6, :m + 6], ref.M_m[i], f"M_m({i})")
        assert_close(Q[i, :, :m], ref.Q[i], f"Q({i})", scale=1.0)
        p = int(model.parent[i])
        if p >= 0:
            assert_close(A[i, :int(model.n_modes[p]) + 6], ref.A[i], f"A({i})", scale=1.0)
        scale = max(1.0, float(np.max(np.abs(vel.b_m[i]))))
        assert_close(V_m[i, :m + 6], vel.V_m[i], f"V_m({i})", scale=1.0)
        assert_close(a_m[i, :m + 6], vel.a_m[i], f"a_m({i})", scale=scale)
        assert_close(bias[i, :m + 6], vel.bias_force(model, i, sample.f_ext), f"bias({i})",
                     scale=scale)


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_outputs_equal_the_reference(sample, fidelity):
    model, q, u, udot, f = sample.model, sample.q, sample.u, sample.udot, sample.f_ext
    engine = Engine(model, fidelity)
    tau = np.random.default_rng(1).normal(size=model.nu)
    M = fd.mass_matrix(model, q, fidelity, backend="reference")
    scale = float(np.max(np.abs(M)))
    assert_close(engine.mass_matrix(q), M, "M")
    ref = fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f, backend="reference")
    assert_close(engine.inverse_dynamics(q, u, udot, f), ref, "τ", scale=scale)
    for method in ("articulated", "composite"):
        ref = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity, f_ext=f,
                                  backend="reference")
        assert_close(engine.forward_dynamics(q, u, tau, f, method), ref, f"u̇ ({method})",
                     tol=1e-8, scale=1.0)


def test_same_singular_inertia_error_as_the_reference():
    """A massless slider at the tip has no inertia on its joint."""
    model = massless_slider()
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    with pytest.raises(SingularInertiaError) as ref:
        fd.forward_dynamics(model, q, z, z)
    with pytest.raises(SingularInertiaError) as got:
        Engine(model).forward_dynamics(q, z, z)
    assert str(got.value) == str(ref.value)


def test_engine_names_a_wrong_argument():
    model = fd.models.builtin_model("two_link_arm")
    engine = Engine(model)
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    with pytest.raises(ValueError, match=r"^u has shape \(3,\), expected \(4,\)"):
        engine.forward_dynamics(q, z[:3], z)
    with pytest.raises(TypeError, match=r"^tau has dtype complex128"):
        engine.forward_dynamics(q, z, z + 0j)
    with pytest.raises(ValueError, match=r"^unknown method 'featherstone'"):
        engine.forward_dynamics(q, z, z, method="featherstone")
    with pytest.raises(ValueError, match=r"^f_ext has shape \(1, 6\), expected \(2, 6\)"):
        engine.inverse_dynamics(q, z, z, np.zeros((1, 6)))
    with pytest.raises(ValueError, match=r"^q has shape \(4,\); a batch needs"):
        engine.batch("mass", z)
    with pytest.raises(ValueError, match="not finite"):
        engine.forward_dynamics(np.full(model.nq, np.nan), z, z)


def test_view_is_the_reshaped_slice():
    """``layout.view`` (the intrinsic behind every named view of the packed model and the
    workspace) equals numpy's reshape of the slice, C-contiguous, on the buffer's memory."""
    import numba

    from flexdyn.engine.layout import view

    @numba.njit
    def views(buf, ints):
        a = view(buf, 5, (2, 3, 4))
        b = view(buf, 29, (ints[0], 3))
        a[1, 2, 3] = -1.0  # writes reach the buffer
        return a.copy(), b.copy(), view(ints, 1, (2, 2)).copy()

    buf, ints = np.arange(50.0), np.array([4, 10, 11, 12, 13])
    a, b, c = views(buf, ints)
    want = np.arange(5.0, 29.0).reshape(2, 3, 4)
    want[1, 2, 3] = -1.0
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, np.arange(29.0, 41.0).reshape(4, 3))
    np.testing.assert_array_equal(c, [[10, 11], [12, 13]])
    assert buf[28] == -1.0 and buf[27] == 27.0
    layouts = {str(t) for sig in views.nopython_signatures for t in sig.return_type}
    assert layouts == {"array(float64, 3d, C)", "array(float64, 2d, C)", "array(int64, 2d, C)"}


def test_an_entry_calls_the_stages_of_its_table_and_refuses_a_missing_one():
    """The entries call the stages they share through the table of addresses that their
    caller passes (:mod:`flexdyn.engine.stages`): with the engine's table the forward
    dynamics equal the reference's; with a table of zeros the entry raises, naming the first
    stage it needs, instead of calling address zero."""
    model = fd.models.two_link_arm()
    ib, fb, table = Engine(model).stage_buffers("articulated")
    q, u, tau = model.neutral_configuration(), np.full(model.nu, 0.1), np.ones(model.nu)
    f_ext, udot = np.zeros((model.n_bodies, 6)), np.empty(model.nu)
    assert kernels.forward_articulated(ib, fb, table, q, u, tau, f_ext, udot) == -1
    assert_close(udot, fd.forward_dynamics(model, q, u, tau, backend="reference"), "u̇")
    with pytest.raises(RuntimeError, match="stage 'position' was called before it was "
                                           "compiled"):
        kernels.forward_articulated(ib, fb, np.zeros_like(table), q, u, tau, f_ext, udot)


def test_the_stage_tables_name_an_unknown_operation_or_stage():
    """An operation without stages and a stage the engine does not have are refused by
    name, with the known ones."""
    from flexdyn.engine import stages

    with pytest.raises(ValueError, match=r"unknown operation 'forward'.*'articulated'"):
        Engine(fd.models.two_link_arm()).stage_buffers("forward")
    with pytest.raises(ValueError, match=r"unknown stages \['crba'\].*'composite'"):
        stages.table(("position", "crba"))
