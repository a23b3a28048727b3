"""Operation counter :mod:`flexdyn.opcount`: hand-computable counts, the LAPACK formulas,
the instrumentation of flexdyn and that counting leaves the results unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn import articulated_body, chain, composite_body, opcount, ruthless
from flexdyn.costs import OpCount
from flexdyn.opcount import (
    COUNTED_METHODS,
    CountingArray,
    count_forward_dynamics,
    count_forward_dynamics_phases,
    counted_forward_dynamics,
    counting,
    lapack_cost,
)
from flexdyn.spatial import Transform
from strategies import models_and_states, random_model_dict, random_state

SETTINGS = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def C(x) -> CountingArray:
    return CountingArray.wrap(np.asarray(x, dtype=float))


def counted(fn) -> tuple[object, OpCount]:
    with counting(instrument=False) as c:
        out = fn()
    return out, c.count


# ---------------------------------------------------------------------------------------------
# hand-computable cases
# ---------------------------------------------------------------------------------------------
def test_matmul_3x4_times_4x2():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    for x, y in ((C(a), b), (a, C(b)), (C(a), C(b))):
        out, n = counted(lambda x=x, y=y: x @ y)
        assert n == OpCount(24, 18)  # 3·2·4 M, 3·2·3 A
        assert isinstance(out, CountingArray)
        np.testing.assert_array_equal(out, a @ b)
    _, n = counted(lambda: np.matmul(C(a), b))
    assert n == OpCount(24, 18)


def test_addition_of_two_6_vectors():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=6), rng.normal(size=6)
    for x, y in ((C(a), b), (a, C(b))):
        out, n = counted(lambda x=x, y=y: x + y)
        assert n == OpCount(0, 6)
        np.testing.assert_array_equal(out, a + b)
    _, n = counted(lambda: C(a) - b)
    assert n == OpCount(0, 6)
    x = C(a.copy())
    with counting(instrument=False) as c:
        x += b  # in place
    assert c.count == OpCount(0, 6)
    np.testing.assert_array_equal(x, a + b)


def test_elementwise_and_free_operations():
    a = C(np.arange(1.0, 10.0).reshape(3, 3))
    assert counted(lambda: a * a)[1] == OpCount(9, 0)
    assert counted(lambda: a / 2.0)[1] == OpCount(9, 0)
    assert counted(lambda: 2.0 * a)[1] == OpCount(9, 0)  # broadcast scalar: one M per element
    assert counted(lambda: a[0] * a)[1] == OpCount(9, 0)  # broadcast row
    assert counted(lambda: -a)[1] == OpCount(0, 0)  # sign change: free
    assert counted(lambda: a.T.copy())[1] == OpCount(0, 0)
    assert counted(lambda: np.concatenate([a, a]))[1] == OpCount(0, 0)
    assert counted(lambda: a[0, 1] * a[2, 2])[1] == OpCount(1, 0)  # element arithmetic counts
    with counting(instrument=False) as c:
        np.sqrt(a)
    assert c.count == OpCount(0, 0) and c.other["sqrt"] == 9


def test_matrix_vector_batched_and_reductions():
    rng = np.random.default_rng(2)
    A, v = C(rng.normal(size=(6, 6))), rng.normal(size=6)
    assert counted(lambda: A @ v)[1] == OpCount(36, 30)
    assert counted(lambda: v @ A)[1] == OpCount(36, 30)
    assert counted(lambda: C(v) @ v)[1] == OpCount(6, 5)
    assert counted(lambda: C(rng.normal(size=(5, 3, 4))) @ rng.normal(size=(4, 2)))[1] == \
        OpCount(5 * 24, 5 * 18)
    assert counted(lambda: np.sum(C(v)))[1] == OpCount(0, 5)
    assert counted(lambda: C(np.ones((3, 4))).sum(axis=0))[1] == OpCount(0, 8)
    assert counted(lambda: np.dot(A, v))[1] == OpCount(36, 30)
    assert counted(lambda: A.dot(A))[1] == OpCount(216, 180)
    assert counted(lambda: np.einsum("ij,jk->ik", A, A))[1] == OpCount(216, 180)
    assert counted(lambda: np.outer(C(v), v))[1] == OpCount(36, 0)
    assert counted(lambda: np.cross(C(v[:3]), v[3:]))[1] == OpCount(6, 3)
    assert counted(lambda: np.trace(A))[1] == OpCount(0, 5)


def test_nested_counters_both_record():
    a = C(np.ones((2, 2)))
    with counting(instrument=False) as outer:
        _ = a + a
        with counting(instrument=False) as inner:
            _ = a @ a
    assert inner.count == OpCount(8, 4)
    assert outer.count == OpCount(8, 8)
    # outside any counter nothing is recorded and the arrays still work
    np.testing.assert_array_equal(a @ a, 2 * np.ones((2, 2)))


# ---------------------------------------------------------------------------------------------
# LAPACK formulas
# ---------------------------------------------------------------------------------------------
def test_lapack_formulas():
    # Cholesky of a 3 × 3: 3 reciprocals + 7 products = 10 M (square roots not counted), 4 A
    assert lapack_cost("potrf", 3) == OpCount(10, 4)
    assert lapack_cost("potrf", 1) == OpCount(1, 0)
    assert lapack_cost("potrs", 3, 2) == OpCount(24, 12)
    assert lapack_cost("getrf", 3) == OpCount(11, 5)
    assert lapack_cost("getrs", 3, 2) == OpCount(18, 12)
    assert lapack_cost("getri", 3) == OpCount(25, 7)
    assert lapack_cost("potri", 0) == OpCount(0, 0)
    # leading terms: Cholesky n³/6 M + n³/6 A, inverse from it n³/3 M + n³/3 A
    assert lapack_cost("potrf", 6, formulas="leading") == OpCount(36, 36)
    assert lapack_cost("potri", 6, formulas="leading") == OpCount(72, 72)
    for n in (5, 20, 100):
        lead = lapack_cost("potrf", n, formulas="leading")
        assert lapack_cost("potrf", n).mul == pytest.approx(lead.mul, rel=4.0 / n)
    with pytest.raises(ValueError, match="unknown LAPACK routine"):
        lapack_cost("gesvd", 3)
    # the Cholesky solve has exactly the additions of the paper's composite-body item 5
    from flexdyn.costs import cb_item5_solve

    for n in (1, 7, 40):
        ours = lapack_cost("potrf", n) + lapack_cost("potrs", n, 1)
        assert ours.add == cb_item5_solve(n).add
        assert ours.mul - cb_item5_solve(n).mul == 2 * n


def test_linalg_functions_are_counted_with_the_lapack_formulas():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 3))
    S = X @ X.T + 3 * np.eye(3)
    b = rng.normal(size=(3, 2))
    x, n = counted(lambda: np.linalg.solve(C(S), b))
    assert n == lapack_cost("getrf", 3) + lapack_cost("getrs", 3, 2) == OpCount(29, 17)
    np.testing.assert_allclose(x, np.linalg.solve(S, b), rtol=1e-14)
    assert counted(lambda: np.linalg.inv(C(S)))[1] == OpCount(36, 12)
    assert counted(lambda: np.linalg.cholesky(C(S)))[1] == lapack_cost("potrf", 3)
    with counting(instrument=False) as c:
        np.linalg.eigvalsh(C(S))
    assert c.uncounted["linalg.eigvalsh"] == 1


def test_spd_inverse_and_cholesky_solve_hooks():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4, 4))
    D = X @ X.T + 4 * np.eye(4)
    model = fd.ModelBuilder("one").add_body(
        "b", joint={"type": "revolute", "axis": [0, 0, 1]},
        rigid={"mass": 1.0, "com": [0, 0, 0], "inertia": np.eye(3).tolist()}).build()
    original_spd = articulated_body._spd_inverse
    original_solve = composite_body.solve_mass_matrix
    for formulas in ("lawn41", "leading"):
        with counting(lapack_formulas=formulas) as c:
            assert articulated_body._spd_inverse is not original_spd
            assert ruthless._spd_inverse is articulated_body._spd_inverse
            Dinv = articulated_body._spd_inverse(C(D), model, 0, "D")
        assert c.count == lapack_cost("potrf", 4, formulas=formulas) + lapack_cost(
            "potri", 4, formulas=formulas)
        assert isinstance(Dinv, CountingArray)
        np.testing.assert_allclose(Dinv @ D, np.eye(4), atol=1e-13)
    assert c.count == OpCount(4**3 / 6 + 4**3 / 3, 4**3 / 6 + 4**3 / 3)
    b = rng.normal(size=4)
    with counting() as c:
        x = composite_body.solve_mass_matrix(C(D), C(b))
    assert c.count == lapack_cost("potrf", 4) + lapack_cost("potrs", 4, 1)
    np.testing.assert_allclose(D @ x, b, rtol=1e-12)
    # restored on exit, also after an exception
    with pytest.raises(RuntimeError), counting():
        raise RuntimeError
    assert articulated_body._spd_inverse is original_spd
    assert ruthless._spd_inverse is original_spd
    assert composite_body.solve_mass_matrix is original_solve
    assert chain.np is np and articulated_body.np is np


# ---------------------------------------------------------------------------------------------
# forward dynamics
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=models_and_states(max_bodies=6, max_modes=9), method=st.sampled_from(COUNTED_METHODS))
def test_counting_does_not_change_forward_dynamics(sample, method):
    model, q, u, f_ext = sample.model, sample.q, sample.u, sample.f_ext
    tau = sample.udot  # any generalized force
    ref = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless", f_ext=f_ext)
    udot, c = counted_forward_dynamics(model, q, u, tau, method, f_ext=f_ext)
    assert type(udot) is np.ndarray
    np.testing.assert_allclose(udot, ref, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref)))
    assert c.mul > 0 and c.add > 0
    assert not c.uncounted, dict(c.uncounted)  # every array function on the path is modelled
    # the phases add up to the total, which does not depend on the state
    phases = count_forward_dynamics_phases(model, q, u, tau, method, f_ext=f_ext)
    total = sum((v for k, v in phases.items() if k != "total"), OpCount(0.0, 0.0))
    assert total == phases["total"] == c.count
    q2, u2, _ = random_state(model, np.random.default_rng(0))
    assert count_forward_dynamics(model, q2, u2, None, method, f_ext=f_ext) == c.count
    # after counting, flexdyn is back to plain numpy
    out = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless")
    assert type(out) is np.ndarray
    assert chain.np is np and composite_body.np is np


def _plain_float_arrays(x, path: str, found: list) -> None:
    """Paths of the float arrays in ``x`` (nested lists, transforms, dataclasses) that are not
    CountingArrays: arithmetic between two of them would escape the counter."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and not isinstance(x, CountingArray):
            found.append(path)
    elif isinstance(x, Transform):
        _plain_float_arrays(x.R, path + ".R", found)
        _plain_float_arrays(x.p, path + ".p", found)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _plain_float_arrays(v, f"{path}[{i}]", found)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            if f.name != "model":
                _plain_float_arrays(getattr(x, f.name), f"{path}.{f.name}", found)


@SETTINGS
@given(sample=models_and_states(max_bodies=6, max_modes=9))
def test_every_per_call_array_is_a_counting_array(sample):
    """Constants are converted at the start and the instrumented modules create
    CountingArrays, so no per-call product can bypass the counter."""
    model, q, u = sample.model, sample.q, sample.u
    twin, q, u, tau, _ = opcount._prepare(model, q, u, sample.udot, "articulated-split",
                                          "ruthless", None, None)
    found: list = []
    _plain_float_arrays(twin.consts, "consts", found)
    with counting():
        kin = twin.kinematics(q)
        vel = twin.velocities(kin, u)
        factors = twin.split_factors(kin)
        R = composite_body.composite_inertias(twin.model, kin)
    for name, obj in (("kin", kin), ("vel", vel), ("factors", factors), ("R", R)):
        _plain_float_arrays(obj, name, found)
    assert not found, found


def _chain(n_bodies: int, n_modes: int) -> fd.Model:
    rng = np.random.default_rng(5)
    d = random_model_dict(rng, list(range(-1, n_bodies - 1)), ["revolute"] * n_bodies,
                          [3 if n_modes else 0] * n_bodies, [n_modes] * n_bodies, attach=False)
    return fd.Model.from_dict(d)


@pytest.mark.parametrize("n_modes", [0, 2])
def test_articulated_count_is_linear_composite_is_not(n_modes):
    """Identical bodies in series: each interior body adds the same articulated-body cost
    (O(N)); the composite-body cost grows faster (O(N²) mass matrix, O(N³) solve)."""
    ab, cb = [], []
    for n in (3, 4, 5, 6):
        model = _chain(n, n_modes)
        q, u, tau = random_state(model, np.random.default_rng(n))[0], np.ones(model.nu), None
        ab.append(count_forward_dynamics(model, q, u, tau, "articulated-split").flops)
        cb.append(count_forward_dynamics(model, q, u, tau, "composite").flops)
    d_ab, d_cb = np.diff(ab), np.diff(cb)
    assert np.all(d_ab == d_ab[0]) and d_ab[0] > 0, ab
    assert np.all(np.diff(d_cb) > 0), cb


def test_composite_phases_match_their_formulas():
    model = _chain(4, 2)
    q, u, tau = random_state(model, np.random.default_rng(6))
    ph = count_forward_dynamics_phases(model, q, u, tau, "composite")
    assert ph["T - C"] == OpCount(0, model.nu)  # paper's item 4: 𝔑 additions
    assert ph["solve"] == lapack_cost("potrf", model.nu) + lapack_cost("potrs", model.nu, 1)


def test_bad_arguments():
    model = _chain(2, 1)
    q, u, tau = random_state(model, np.random.default_rng(7))
    with pytest.raises(ValueError, match="ruthless"):
        count_forward_dynamics(model, q, u, tau, "composite", fidelity="full")
    with pytest.raises(ValueError, match="unknown method"):
        count_forward_dynamics(model, q, u, tau, "newton")
    with pytest.raises(ValueError, match="lapack_formulas"):
        with counting(lapack_formulas="exact"):
            pass
