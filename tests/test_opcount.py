"""Operation counter ``benchmarks/flexdyn_bench/opcount.py``: hand-computable counts, the
LAPACK formulas, the seam (counting copies and :func:`flexdyn.linalg.observe`, nothing of
flexdyn patched), what escapes the count, and that counting leaves the results unchanged."""

from __future__ import annotations

import functools
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.linalg import SingularInertiaError, cholesky_solve, observe, spd_inverse
from flexdyn.spatial import Transform
from strategies import models_and_states, random_model_dict, random_state

_BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if _BENCHMARKS not in sys.path:  # the developer instruments are not installed
    sys.path.insert(0, _BENCHMARKS)

from flexdyn_bench import opcount  # noqa: E402
from flexdyn_bench.costs import OpCount, cb_item5_solve  # noqa: E402
from flexdyn_bench.opcount import (  # noqa: E402
    COUNTED_METHODS,
    CountingArray,
    count_forward_dynamics,
    count_forward_dynamics_phases,
    counted_forward_dynamics,
    counting,
    counting_copy,
    lapack_cost,
)

SETTINGS = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def C(x) -> CountingArray:
    return CountingArray.wrap(np.asarray(x, dtype=float))


def counted(fn) -> tuple[object, OpCount]:
    with counting() as c:
        out = fn()
    return out, c.count


def _flexdyn_globals() -> dict[str, dict]:
    """The namespace of every loaded flexdyn module (a copy of each ``vars(module)``)."""
    return {name: dict(vars(mod)) for name, mod in list(sys.modules.items())
            if (name == "flexdyn" or name.startswith("flexdyn.")) and mod is not None}


def _assert_same_globals(before: dict[str, dict], after: dict[str, dict]) -> None:
    """No flexdyn module global was replaced, but the observer slot of flexdyn.linalg."""
    for name, space in before.items():
        changed = [k for k, v in space.items()
                   if after[name].get(k, v) is not v and (name, k) != ("flexdyn.linalg",
                                                                         "_observer")]
        assert not changed, (name, changed)


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
    # two plain operands: not seen (the rule the whole seam rests on)
    assert counted(lambda: a @ b)[1] == OpCount(0, 0)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (2, 7, 3), (6, 6, 6), (5, 1, 4), (3, 0, 2)])
def test_matmul_counts_m_n_k(m, k, n):
    rng = np.random.default_rng(m + 10 * k + 100 * n)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    assert counted(lambda: C(a) @ b)[1] == OpCount(m * n * k, m * n * max(k - 1, 0))


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
    with counting() as c:
        x += b  # in place
    assert c.count == OpCount(0, 6)
    np.testing.assert_array_equal(x, a + b)
    # a fresh buffer (np.zeros: allocation, not arithmetic) counts once it meets a CountingArray
    z = np.zeros(6)
    assert counted(lambda: z + C(a))[1] == OpCount(0, 6)


def test_elementwise_and_free_operations():
    a = C(np.arange(1.0, 10.0).reshape(3, 3))
    assert counted(lambda: a * a)[1] == OpCount(9, 0)
    assert counted(lambda: a / 2.0)[1] == OpCount(9, 0)
    assert counted(lambda: 2.0 * a)[1] == OpCount(9, 0)  # broadcast scalar: one M per element
    assert counted(lambda: a[0] * a)[1] == OpCount(9, 0)  # broadcast row
    assert counted(lambda: -a)[1] == OpCount(0, 0)  # sign change: free
    assert counted(lambda: a.T.copy())[1] == OpCount(0, 0)
    assert counted(lambda: np.concatenate([a, a]))[1] == OpCount(0, 0)
    assert counted(lambda: np.max(np.abs(a)))[1] == OpCount(0, 0)
    assert counted(lambda: a[0, 1] * a[2, 2])[1] == OpCount(1, 0)  # element arithmetic counts
    with counting() as c:
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
    with counting() as outer:
        _ = a + a
        with counting() as inner:
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
    # numpy's inv is gesv with the identity as right-hand side (no getri)
    assert counted(lambda: np.linalg.inv(C(S)))[1] == \
        lapack_cost("getrf", 3) + lapack_cost("getrs", 3, 3) == OpCount(38, 23)
    assert counted(lambda: np.linalg.cholesky(C(S)))[1] == lapack_cost("potrf", 3)
    # slogdet: LU, then log|det| as the sum of the 3 logarithms of the pivots
    with counting() as c:
        np.linalg.slogdet(C(S))
    assert c.count == lapack_cost("getrf", 3) + OpCount(0, 2) and c.other["log"] == 3
    with counting() as c:
        np.linalg.eigvalsh(C(S))
    assert c.uncounted["linalg.eigvalsh"] == 1


def test_lapack_calls_of_flexdyn_linalg_are_observed():
    """The LAPACK calls of flexdyn.linalg are counted as that module reports them — exactly the
    calls made — and nothing of flexdyn is replaced while counting."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4, 4))
    D = X @ X.T + 4 * np.eye(4)
    before = _flexdyn_globals()
    for formulas in ("lawn41", "leading"):
        with counting(lapack_formulas=formulas) as c:
            _assert_same_globals(before, _flexdyn_globals())
            Dinv = spd_inverse(C(D), "D")
        assert c.count == lapack_cost("potrf", 4, formulas=formulas) + lapack_cost(
            "potri", 4, formulas=formulas)
        assert set(c.by_operation) == {"lapack:potrf", "lapack:potri"}
        np.testing.assert_allclose(Dinv @ D, np.eye(4), atol=1e-13)
    assert c.count == OpCount(4**3 / 6 + 4**3 / 3, 4**3 / 6 + 4**3 / 3)
    b = rng.normal(size=4)
    with counting() as c:  # M plain, as crba returns it
        x = cholesky_solve(D, C(b))
    assert c.count == lapack_cost("potrf", 4) + lapack_cost("potrs", 4, 1)
    np.testing.assert_allclose(D @ x, b, rtol=1e-12)
    B = rng.normal(size=(4, 3))  # a block of right-hand sides
    with counting() as c:
        cholesky_solve(D, C(B))
    assert c.count == lapack_cost("potrf", 4) + lapack_cost("potrs", 4, 3)
    # a counting M: its singularity tolerances MASS_MATRIX_RTOL · M_kk are 4 more M
    with counting() as c:
        cholesky_solve(C(D), C(b))
    assert c.count == lapack_cost("potrf", 4) + lapack_cost("potrs", 4, 1) + OpCount(4, 0)
    # a singular matrix stops after the factorization: potri is not performed
    D1 = np.diag([1.0, 2.0, 0.0, 3.0])
    with counting() as c, pytest.raises(SingularInertiaError):
        spd_inverse(C(D1), "D")
    assert c.count == lapack_cost("potrf", 4)
    # the counter's observer nests in the caller's and is removed on exit, also after an
    # exception
    seen: list = []
    with observe(lambda *call: seen.append(call)):
        with pytest.raises(RuntimeError), counting():
            spd_inverse(C(D), "D")
            raise RuntimeError
        spd_inverse(D, "D")
    assert seen == [("potrf", 4, 0), ("potri", 4, 0)]
    _assert_same_globals(before, _flexdyn_globals())


# ---------------------------------------------------------------------------------------------
# counting copies
# ---------------------------------------------------------------------------------------------
def _plain_float_arrays(x, path: str, found: list, seen: set) -> None:
    """Paths of the float arrays in ``x`` (nested lists, tuples, dicts, flexdyn objects) that
    are not CountingArrays: arithmetic between two of them would escape the counter."""
    if id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and not isinstance(x, CountingArray):
            found.append(path)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _plain_float_arrays(v, f"{path}[{i}]", found, seen)
    elif isinstance(x, dict):
        for k, v in x.items():
            _plain_float_arrays(v, f"{path}[{k!r}]", found, seen)
    elif type(x).__module__.startswith("flexdyn.") and hasattr(x, "__dict__"):
        for k, v in vars(x).items():
            _plain_float_arrays(v, f"{path}.{k}", found, seen)


@SETTINGS
@given(sample=models_and_states(max_bodies=6, max_modes=9))
def test_counting_copies_convert_every_float_array(sample):
    """The model, its ruthless body models and the inputs are converted completely (bodies,
    joints, transforms, node frames, Eq B4 constants); the originals stay plain and share
    memory with the copies; the body models refer to the converted bodies."""
    model = sample.model
    setup = opcount.prepare(model, sample.q, sample.u, sample.udot, f_ext=sample.f_ext)
    found: list = []
    _plain_float_arrays(setup, "setup", found, set())
    assert not found, found
    originals: list = []
    models = fd.terms.body_models(model, "ruthless")
    _plain_float_arrays(models, "models", originals, set())
    assert originals  # the originals are untouched
    for bm, cbm, body in zip(models, setup.body_models, setup.model.bodies, strict=True):
        assert cbm is not bm and cbm.body is body
        assert np.shares_memory(cbm.body.M_m0, bm.body.M_m0)
        assert type(bm.body.M_m0) is np.ndarray
    for j, cj in zip(model.joints, setup.model.joints, strict=True):
        assert type(cj) is type(j)
        if j.constant_subspace:
            assert isinstance(cj.motion_subspace(cj.neutral()), CountingArray)
    # converting a per-state result: every array of the terms after conversion counts
    pos = fd.terms.position_terms(setup.model, setup.q, setup.body_models, "ruthless")
    found = []
    _plain_float_arrays(counting_copy(pos), "pos", found, set())
    assert not found, found
    assert isinstance(counting_copy(Transform.identity()).R, CountingArray)


# ---------------------------------------------------------------------------------------------
# forward dynamics
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=models_and_states(max_bodies=6, max_modes=9), method=st.sampled_from(COUNTED_METHODS))
def test_counting_does_not_change_forward_dynamics(sample, method):
    model, q, u, f_ext = sample.model, sample.q, sample.u, sample.f_ext
    tau = sample.udot  # any generalized force
    # the counted run is the reference tier's arithmetic (the engine's differs by round-off)
    ref = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless", f_ext=f_ext,
                              backend="reference")
    before = _flexdyn_globals()
    udot, c = counted_forward_dynamics(model, q, u, tau, method, f_ext=f_ext)
    assert type(udot) is np.ndarray
    np.testing.assert_allclose(udot, ref, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref)))
    assert c.mul > 0 and c.add > 0
    assert not c.uncounted, dict(c.uncounted)  # every array function on the path is modelled
    # the phases (the algorithm's steps run one by one) add up to the total of the whole call,
    # which does not depend on the state
    phases = count_forward_dynamics_phases(model, q, u, tau, method, f_ext=f_ext)
    total = sum((v for k, v in phases.items() if k != "total"), OpCount(0.0, 0.0))
    assert total == phases["total"] == c.count
    q2, u2, _ = random_state(model, np.random.default_rng(0))
    assert count_forward_dynamics(model, q2, u2, None, method, f_ext=f_ext) == c.count
    # nothing of flexdyn was replaced, and it computes on plain arrays afterwards
    _assert_same_globals(before, _flexdyn_globals())
    out = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless")
    assert type(out) is np.ndarray


def _chain(n_bodies: int, n_modes: int) -> fd.Model:
    rng = np.random.default_rng(5)
    d = random_model_dict(rng, list(range(-1, n_bodies - 1)), ["revolute"] * n_bodies,
                          [3 if n_modes else 0] * n_bodies, [n_modes] * n_bodies, attach=False)
    return fd.Model.from_dict(d)


@pytest.mark.parametrize("n_modes", [0, 2])
def test_articulated_count_is_linear_composite_is_not(n_modes):
    """Identical bodies in series: each interior body adds the same articulated-body cost
    (O(N)); the composite-body cost grows faster (O(N²) mass matrix, O(N³) solve)."""
    ab, cb, kin = [], [], []
    for n in (3, 4, 5, 6):
        model = _chain(n, n_modes)
        q, u, tau = random_state(model, np.random.default_rng(n))[0], np.ones(model.nu), None
        ab.append(count_forward_dynamics(model, q, u, tau, "articulated-split").flops)
        ph = count_forward_dynamics_phases(model, q, u, tau, "composite")
        cb.append(ph["total"].flops)
        kin.append(ph["kinematics"].flops + ph["velocities"].flops)
    d_ab, d_cb, d_kin = np.diff(ab), np.diff(cb), np.diff(kin)
    assert np.all(d_ab == d_ab[0]) and d_ab[0] > 0, ab
    assert np.all(np.diff(d_cb) > 0), cb
    assert np.all(d_kin == d_kin[0]) and d_kin[0] > 0, kin  # the state terms: O(N)


def test_composite_phases_match_their_formulas():
    model = _chain(4, 2)
    q, u, tau = random_state(model, np.random.default_rng(6))
    ph = count_forward_dynamics_phases(model, q, u, tau, "composite")
    assert ph["T - C"] == OpCount(0, model.nu)  # paper's item 4: 𝔑 additions
    assert ph["solve"] == lapack_cost("potrf", model.nu) + lapack_cost("potrs", model.nu, 1)


@pytest.mark.parametrize("n_modes", [0, 3, 9])
def test_lapack_calls_per_body(n_modes):
    """The LAPACK work of each method, body by body: Eq 51 inverts ``D`` ((1 + m)²) per body;
    Eq 63 inverts ``D_R`` (1 × 1) per body and ``D_f`` (m × m) explicitly for every body with
    a child (``Λ`` at the tip), or by Eq B3 (numpy's LU of a 6 × 6 with m right-hand sides)."""
    n = 4
    model = _chain(n, n_modes)
    m = n_modes
    q, u, tau = random_state(model, np.random.default_rng(8))

    def lapack(method, imm=None):
        c = counted_forward_dynamics(model, q, u, tau, method, indirect_min_modes=imm)[1]
        return {k: v for k, v in c.by_operation.items() if k.startswith("lapack:")}

    def times(k, count):
        return OpCount(k * count.mul, k * count.add)

    assert lapack("articulated") == {"lapack:potrf": times(n, lapack_cost("potrf", 1 + m)),
                                     "lapack:potri": times(n, lapack_cost("potri", 1 + m))}
    assert lapack("composite") == {"lapack:potrf": lapack_cost("potrf", model.nu),
                                   "lapack:potrs": lapack_cost("potrs", model.nu, 1)}
    explicit = lapack("articulated-split", imm=99)
    k = n - 1 if m else 0  # bodies with a child and a D_f to invert
    assert explicit.get("lapack:potri", OpCount(0, 0)) == \
        times(n, lapack_cost("potri", 1)) + times(k, lapack_cost("potri", m))
    assert "lapack:getrf" not in explicit
    indirect = lapack("articulated-split", imm=1)
    assert indirect["lapack:potri"] == times(n, lapack_cost("potri", 1))
    if m:
        assert indirect["lapack:getrf"] == times(n - 1, lapack_cost("getrf", 6))
        assert indirect["lapack:getrs"] == times(n - 1, lapack_cost("getrs", 6, m))


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


# ---------------------------------------------------------------------------------------------
# what escapes the count
# ---------------------------------------------------------------------------------------------
class _TaggingNumpy(types.ModuleType):
    """Reference only (never used by the counter): ``numpy`` whose functions return
    CountingArrays, so that every array a flexdyn module makes through ``np.*`` counts."""

    def __init__(self) -> None:
        super().__init__("numpy")

    def __getattr__(self, name: str):
        attr = getattr(np, name)
        if (isinstance(attr, (type, np.ufunc, types.ModuleType)) or not callable(attr)
                or name.startswith("_")):
            return attr

        @functools.wraps(attr)
        def tagged(*args, **kwargs):
            return opcount._counting(attr(*args, **kwargs))

        return tagged


@pytest.mark.parametrize("n_bodies, n_modes", [(3, 0), (4, 2), (3, 9)])
def test_what_escapes_the_count(n_bodies, n_modes, monkeypatch):
    """The arithmetic the seam does not see, located.  As a reference, the same phases are
    counted with every array that flexdyn's modules create through numpy tagged (the former
    instrumentation); on a chain of revolute joints the difference is exactly what the module
    docstring lists: ``K @ K`` of each joint rotation (27 M, 18 A), the sums of the spatial
    cross products in the velocity terms (12 A per body), and flexdyn.linalg's bookkeeping on
    LAPACK's outputs (per SPD inverse of order n: 1 M pivot test, n² A mirroring; per
    Cholesky solve of order n: 2n M pivot tests)."""
    model = _chain(n_bodies, n_modes)
    n, m = n_bodies, n_modes
    q, u, tau = random_state(model, np.random.default_rng(9))
    tagging = _TaggingNumpy()
    for method, imm in (("articulated", None), ("articulated-split", 99), ("composite", None)):
        seam = count_forward_dynamics_phases(model, q, u, tau, method, indirect_min_modes=imm)
        with monkeypatch.context() as mp:
            for name, mod in list(sys.modules.items()):
                if name.startswith("flexdyn.") and getattr(mod, "np", None) is np:
                    mp.setattr(mod, "np", tagging)
            ref = count_forward_dynamics_phases(model, q, u, tau, method,
                                                indirect_min_modes=imm)
        escaped = {k: OpCount(ref[k].mul - seam[k].mul, ref[k].add - seam[k].add)
                   for k in seam if k != "total" and ref[k] != seam[k]}
        expected = {"kinematics": OpCount(27 * n, 18 * n), "velocities": OpCount(0, 12 * n)}
        if method == "articulated":  # D (1 + m) per body
            expected["articulated inertias"] = OpCount(n, n * (1 + m) ** 2)
        elif method == "articulated-split":  # D_R (1) per body, D_f (m) with a child
            k = n - 1 if m else 0
            expected["articulated inertias"] = OpCount(n + k, n + k * m**2)
        else:  # per pivot: its square and MASS_MATRIX_RTOL · M_kk
            expected["solve"] = OpCount(2 * model.nu, 0)
        assert escaped == expected, (method, escaped)
