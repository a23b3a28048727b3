"""The compiled engine as the default backend of the per-state functions.

* On hypothesis trees, for every fidelity, the default backend equals ``backend="reference"``
  for ``forward_dynamics`` (every engine method), ``inverse_dynamics``, ``bias_forces`` and
  ``mass_matrix``.
* Complex inputs (complex step) run the reference on the default backend, untruncated.
* Wrenches at nodes (``f_nodes``) run the engine and equal the reference's.
* Both backends raise the same errors with the same messages.
* One engine per (model, fidelity), built once when several threads ask at the same time,
  released with the model; unusual input arrays compile no new specialisation.
* A second process loads the compiled kernels from numba's cache: no compilation.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn import dynamics
from flexdyn.engine import kernels
from flexdyn.linalg import SingularInertiaError
from helpers import assert_close, massless_slider
from strategies import models_and_states

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=6, max_modes=4)
FIDELITY = st.sampled_from(fd.FIDELITIES)
ENGINE_METHODS = ("articulated", "articulated-split", "composite")


pytestmark = pytest.mark.usefixtures("quiet_numba")


def _both(fn, *args, **kwargs):
    """``fn`` on the default backend and on the reference."""
    return fn(*args, **kwargs), fn(*args, backend="reference", **kwargs)


def _dispatchers() -> list:
    """The compiled functions of the engine's kernel module."""
    return [f for f in vars(kernels).values() if isinstance(f, numba.core.dispatcher.Dispatcher)]


def _arm(n_modes: int = 2) -> fd.Model:
    """A freshly built model (not in any cache)."""
    return fd.models.two_link_arm(n_modes=n_modes, gravity=(0.0, -9.81, 0.0))


# ---------------------------------------------------------------------------------------------
# the same results
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_default_backend_equals_the_reference(sample, fidelity):
    model, q, u, udot, f = sample.model, sample.q, sample.u, sample.udot, sample.f_ext
    tau = np.random.default_rng(7).normal(size=model.nu)
    M, M_ref = _both(fd.mass_matrix, model, q, fidelity)
    assert_close(M, M_ref, "M")
    scale = float(np.max(np.abs(M_ref)))
    for f_ext in (None, f):
        got, ref = _both(fd.inverse_dynamics, model, q, u, udot, fidelity, f_ext=f_ext)
        assert_close(got, ref, "τ", scale=scale)
        got, ref = _both(fd.bias_forces, model, q, u, fidelity, f_ext=f_ext)
        assert_close(got, ref, "C", scale=scale)
        for method in ENGINE_METHODS:
            got, ref = _both(fd.forward_dynamics, model, q, u, tau, method=method,
                             fidelity=fidelity, f_ext=f_ext)
            assert_close(got, ref, f"u̇ ({method})", scale=1.0)


def test_batches_run_the_engine_state_by_state():
    model = fd.models.builtin_model("spacecraft")
    rng = np.random.default_rng(3)
    q = np.stack([model.neutral_configuration()] * 3)
    q[:, 7:] = rng.normal(scale=0.1, size=(3, model.nq - 7))
    u = rng.normal(size=(3, model.nu))
    got, ref = _both(fd.forward_dynamics, model, q, u, None)
    assert got.shape == (3, model.nu)
    assert_close(got, ref, "u̇", scale=1.0)


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, seed=st.integers(0, 2**32 - 1))
def test_nodal_loads_on_the_engine_equal_the_reference(sample, fidelity, seed):
    """Wrenches at nodes of random flexible trees enter the engine's forward, inverse and
    bias forces, hybrid dynamics and joint wrenches as the reference's (its node frames,
    Eq 21's node maps), the engine's own path taken (asserted)."""
    model, q, u, udot, f = sample.model, sample.q, sample.u, sample.udot, sample.f_ext
    flexible = [i for i in range(model.n_bodies) if model.n_modes[i] > 0]
    assume(flexible)
    rng = np.random.default_rng(seed)
    loads = {(model.names[int(i)], int(rng.integers(model.bodies[int(i)].n_nodes))):
             rng.normal(size=6) for i in rng.choice(flexible, size=min(2, len(flexible)))}
    tau = rng.normal(size=model.nu)
    mask = rng.random(model.nu) < 0.5  # a random half of the accelerations prescribed
    calls = []
    engine = dynamics.cached_engine

    def spy(*args):
        calls.append(args)
        return engine(*args)

    # the first forward dynamics of a model decides, once, whether its O(N) solves are
    # refined (Dynamics.refines), which an ill-conditioned random tree measures on the
    # engine: made here, before the engine's calls are counted
    fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f, f_nodes=loads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dynamics, "cached_engine", spy)
        patch.setattr(dynamics, "COMPILED_FORWARD", {**dynamics.COMPILED_FORWARD,
                                                     "articulated": spy})
        got = [fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f,
                                   f_nodes=loads),
               fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f, f_nodes=loads),
               fd.bias_forces(model, q, u, fidelity, f_ext=f, f_nodes=loads),
               *fd.hybrid_dynamics(model, q, u, tau, udot, mask, fidelity=fidelity, f_ext=f,
                                   f_nodes=loads),
               fd.joint_wrenches(model, q, u, udot, fidelity, f_ext=f, f_nodes=loads)]
    assert len(calls) == 5, "the engine did not run all five"
    ref = [fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f, f_nodes=loads,
                               backend="reference"),
           fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f, f_nodes=loads,
                               backend="reference"),
           fd.bias_forces(model, q, u, fidelity, f_ext=f, f_nodes=loads, backend="reference"),
           *fd.hybrid_dynamics(model, q, u, tau, udot, mask, fidelity=fidelity, f_ext=f,
                               f_nodes=loads, backend="reference"),
           fd.joint_wrenches(model, q, u, udot, fidelity, f_ext=f, f_nodes=loads,
                             backend="reference")]
    scale = float(np.max(np.abs(fd.mass_matrix(model, q, fidelity, backend="reference"))))
    for what, g, r, s in zip(("u̇", "τ", "C", "hybrid u̇", "hybrid τ", "joint wrenches"), got,
                             ref, (1.0, scale, scale, 1.0, scale, 1.0), strict=True):
        assert_close(g, r, f"{what} with nodal loads", scale=s)


def test_unusual_arrays_compile_nothing_new():
    """Read-only, strided, Fortran-ordered, float32 and integer inputs go to the kernels as
    the one array type they are compiled for."""
    model = fd.models.builtin_model("two_link_arm")
    q, u = model.neutral_configuration(), np.linspace(-1.0, 1.0, model.nu)
    f = np.ones((model.n_bodies, 6))
    expected = fd.forward_dynamics(model, q, u, u, f_ext=f)
    fd.mass_matrix(model, q)
    fd.inverse_dynamics(model, q, u, u, f_ext=f)
    count = sum(len(d.signatures) for d in _dispatchers())
    q_ro = q.copy()
    q_ro.setflags(write=False)
    u_strided = np.repeat(u, 2)[::2]
    f_fortran = np.asfortranarray(f)
    got = fd.forward_dynamics(model, q_ro, u_strided, u.astype(np.float32), f_ext=f_fortran)
    assert_close(got, expected, "u̇", tol=1e-6)
    fd.inverse_dynamics(model, q_ro, u_strided, u_strided, f_ext=f.astype(int))
    fd.mass_matrix(model, q_ro)
    assert sum(len(d.signatures) for d in _dispatchers()) == count


# ---------------------------------------------------------------------------------------------
# complex step
# ---------------------------------------------------------------------------------------------
def test_complex_inputs_run_the_reference_untruncated():
    model = _arm(3)
    rng = np.random.default_rng(5)
    q = rng.normal(scale=0.2, size=model.nq)
    u, udot = rng.normal(size=model.nu), rng.normal(size=model.nu)
    d = rng.normal(size=model.nq)
    h, eps = 1e-30, 1e-6
    got, ref = _both(fd.inverse_dynamics, model, q + 1j * h * d, u, udot)
    assert np.iscomplexobj(got)
    np.testing.assert_array_equal(got, ref)
    central = (fd.inverse_dynamics(model, q + eps * d, u, udot)
               - fd.inverse_dynamics(model, q - eps * d, u, udot)) / (2 * eps)
    assert_close(got.imag / h, central, "dτ/dq·d", tol=1e-6)
    assert_close(got.real, fd.inverse_dynamics(model, q, u, udot), "τ", tol=1e-12)
    for fn, args in ((fd.forward_dynamics, (u, udot)), (fd.bias_forces, (u,)),
                     (fd.mass_matrix, ())):
        got, ref = _both(fn, model, q + 1j * h * d, *args)
        assert np.iscomplexobj(got)
        np.testing.assert_array_equal(got, ref)
    got, ref = _both(fd.forward_dynamics, model, q, u + 1j * h * d[:model.nu], udot)
    assert np.iscomplexobj(got)
    np.testing.assert_array_equal(got, ref)


# ---------------------------------------------------------------------------------------------
# the same errors
# ---------------------------------------------------------------------------------------------
def _messages(error: type[Exception], fn, *args, **kwargs) -> tuple[str, str]:
    out = []
    for backend in dynamics.BACKENDS:
        with pytest.raises(error) as info:
            fn(*args, backend=backend, **kwargs)
        out.append(str(info.value))
    return out[0], out[1]


def test_bad_backend_names_the_allowed_values():
    model = fd.models.builtin_model("two_link_arm")
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    for fn, args in ((fd.forward_dynamics, (z, z)), (fd.inverse_dynamics, (z, z)),
                     (fd.bias_forces, (z,)), (fd.mass_matrix, ())):
        for bad in ("numba", None, 1):
            with pytest.raises(ValueError, match="'engine', 'reference'"):
                fn(model, q, *args, backend=bad)


@pytest.mark.parametrize("method", ENGINE_METHODS)
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_singular_inertia_same_message(method, fidelity):
    model = massless_slider()
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    got, ref = _messages(SingularInertiaError, fd.forward_dynamics, model, q, z, z,
                         method=method, fidelity=fidelity)
    assert got == ref


@pytest.mark.parametrize("case", ["q shape", "u shape", "udot shape", "f_ext shape", "q nan",
                                  "u inf", "fidelity", "q type"])
def test_invalid_inputs_same_message(case):
    model = fd.models.builtin_model("two_link_arm")
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    f = np.zeros((model.n_bodies, 6))
    kw = {"q": q, "u": z, "udot": z, "f_ext": f, "fidelity": "full"}
    error = TypeError if case == "q type" else ValueError
    if case.endswith("shape"):
        name = case.split()[0]
        kw[name] = np.zeros(np.shape(kw[name])[:-1] + (np.shape(kw[name])[-1] + 1,))
    elif case == "q nan":
        kw["q"] = np.where(np.arange(model.nq) == 1, np.nan, q)
    elif case == "u inf":
        kw["u"] = np.where(np.arange(model.nu) == 0, np.inf, z)
    elif case == "fidelity":
        kw["fidelity"] = "medium"
    else:
        kw["q"] = np.array(["a"] * model.nq)
    calls = [
        (fd.forward_dynamics, (kw["q"], kw["u"], kw["udot"]),
         {"f_ext": kw["f_ext"], "fidelity": kw["fidelity"]}),
        (fd.inverse_dynamics, (kw["q"], kw["u"], kw["udot"]),
         {"f_ext": kw["f_ext"], "fidelity": kw["fidelity"]}),
        (fd.bias_forces, (kw["q"], kw["u"]), {"f_ext": kw["f_ext"], "fidelity": kw["fidelity"]}),
        (fd.mass_matrix, (kw["q"],), {"fidelity": kw["fidelity"]}),
    ]
    raised = 0
    for fn, args, kwargs in calls:
        try:
            fn(model, *args, backend="reference", **kwargs)
        except error:
            got, ref = _messages(error, fn, model, *args, **kwargs)
            assert got == ref
            raised += 1
    assert raised >= 1


def test_overflow_raises_on_both_backends():
    model = fd.models.builtin_model("two_link_arm")
    q, u = model.neutral_configuration(), np.zeros(model.nu)
    u[0] = 1e200
    for method in ENGINE_METHODS:
        got, ref = _messages(FloatingPointError, fd.forward_dynamics, model, q, u, None,
                             method=method)
        assert got == ref
    got, ref = _messages(FloatingPointError, fd.bias_forces, model, q, u)
    assert got == ref


# ---------------------------------------------------------------------------------------------
# the engine cache
# ---------------------------------------------------------------------------------------------
def test_four_threads_building_at_once_share_one_engine():
    model = _arm(3)
    q, u = model.neutral_configuration(), np.full(model.nu, 0.2)
    start = threading.Barrier(4)

    def first_call(_):
        start.wait()
        udot = fd.forward_dynamics(model, q, u, None)
        return udot, dynamics.cached_engine(model, fd.DEFAULT_FIDELITY)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(first_call, range(4)))
    expected = fd.forward_dynamics(model, q, u, None, backend="reference")
    for udot, _ in results:
        assert_close(udot, expected, "u̇", scale=1.0)
    assert len({id(engine) for _, engine in results}) == 1
    assert set(dynamics._ENGINES[model]) == {("bound", fd.DEFAULT_FIDELITY, "engine"),
                                             ("bound", fd.DEFAULT_FIDELITY, "reference"),
                                             fd.DEFAULT_FIDELITY}


def test_the_cache_does_not_keep_the_model_alive():
    model = _arm()
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    for fidelity in fd.FIDELITIES:
        fd.forward_dynamics(model, q, z, z, fidelity=fidelity)
    assert {k for k in dynamics._ENGINES[model] if isinstance(k, str)} == set(fd.FIDELITIES)
    assert {k[1] for k in dynamics._ENGINES[model] if k[0] == "bound"} == set(fd.FIDELITIES)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------------------------------------
# numba's on-disk cache
# ---------------------------------------------------------------------------------------------
CHILD = """
import json, warnings
import numba, numpy as np
import flexdyn as fd
from flexdyn.engine import kernels
warnings.simplefilter("ignore")
model = fd.models.builtin_model("two_link_arm")
fd.mass_matrix(model, model.neutral_configuration())  # the entry that compiles fastest
hits = misses = 0
for f in vars(kernels).values():
    if isinstance(f, numba.core.dispatcher.Dispatcher):
        hits += sum(f.stats.cache_hits.values())
        misses += sum(f.stats.cache_misses.values())
print(json.dumps({"hits": hits, "misses": misses}))
"""


@pytest.mark.slow
def test_a_second_process_loads_the_kernels_from_the_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    env.pop("NUMBA_DISABLE_JIT", None)

    def child() -> dict:
        run = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                             text=True, timeout=900, check=True)
        return json.loads(run.stdout.strip().splitlines()[-1])

    first = child()
    assert first["hits"] + first["misses"] > 0, first
    second = child()
    assert second["misses"] == 0 and second["hits"] > 0, (first, second)


def test_the_engine_cache_is_keyed_by_the_sources_each_entry_compiles_from(tmp_path):
    """Every compiled engine function is stamped with the fingerprint of its module, of the
    engine modules it imports (directly or through others) and of the package modules the
    kernels use: editing any of them (a stage inlined into the entries, a tolerance of
    linalg.py) invalidates the entries that depend on it, never leaving one stale, and an
    edit of a module they do not import (the compiled integrators) leaves them cached."""
    from flexdyn.engine import caching, ccall, extras, galpha, split

    names = {p.name for p in caching.SOURCES}
    assert {"kernels.py", "terms.py", "articulated_body.py", "split.py", "extras.py", "pack.py",
            "linalg.py", "scalar_kernels.py", "joints.py"} <= names
    # the model's Python side (chain.py, model files, builders) and the engine's (the cache
    # locators, the compile notice) are edited often: the kernels take nothing from them, so
    # their edits leave the compiled entries cached
    assert not {"chain.py", "caching.py", "notice.py"} & names
    dispatchers = [f for module in (kernels, split, extras, galpha) for f in vars(module).values()
                   if isinstance(f, numba.core.dispatcher.Dispatcher)
                   and f.py_func.__module__.startswith("flexdyn.engine.")]
    assert len(dispatchers) > 20
    expected = {}  # the stamp of each module, from its dependencies
    for f in dispatchers:
        locator = f._cache._impl.locator
        assert isinstance(locator, caching._EngineSources), f
        module = Path(f.py_func.__code__.co_filename).resolve()
        if module not in expected:
            expected[module] = caching.fingerprint((*caching.dependencies(module),
                                                    *caching.SHARED))
        assert locator.get_source_stamp() == expected[module], f
    assert len(set(expected.values())) == len(expected) > 8  # a stamp of its own per module
    assert ccall.flexdyn_state_derivative is not None
    of_kernels = {p.name for p in caching.dependencies(Path(kernels.__file__))}
    assert {"terms.py", "articulated_body.py", "rigid_tree.py", "layout.py"} <= of_kernels
    assert not {"galpha.py", "split.py", "extras.py", "closure.py"} & of_kernels
    assert "kernels.py" in {p.name for p in caching.dependencies(Path(galpha.__file__))}
    stamp = caching.fingerprint()
    copies = []
    for p in caching.SOURCES:
        copy = tmp_path / p.name
        copy.write_bytes(p.read_bytes())
        copies.append(copy)
    assert caching.fingerprint(tuple(copies)) == stamp
    copies[-1].write_bytes(copies[-1].read_bytes() + b"\n")
    assert caching.fingerprint(tuple(copies)) != stamp


def test_checkouts_at_other_paths_share_the_engine_cache(tmp_path, monkeypatch):
    """With ``NUMBA_CACHE_DIR`` set, the engine's entries are cached in its folder
    ``flexdyn-engine`` whatever the path of the sources (numba's own locator names the folder
    by a hash of the path, so a clean clone elsewhere would compile everything again)."""
    from flexdyn.engine import caching

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    function = kernels.mass.py_func
    paths = {caching.EngineUserProvidedLocator.from_function(function, where).get_cache_path()
             for where in (kernels.__file__, "/elsewhere/src/flexdyn/engine/kernels.py")
             if caching.EngineUserProvidedLocator.from_function(function, where) is not None}
    assert paths == {str(tmp_path / "flexdyn-engine")}


def test_cache_files_are_named_by_their_stamp(tmp_path, monkeypatch):
    """numba unpickles a cache index before it compares the stamp, and an index written by
    other sources may name a type that these sources no longer define (an upgrade installed
    over an old cache raised ``AttributeError: Can't get attribute 'Work'``): the engine's
    cache files carry the start of their stamp in their names, so that sources with another
    stamp never open them."""
    from flexdyn.engine import caching

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    names = set()
    for function in (kernels.mass.py_func, kernels.forward_articulated.py_func):
        locator = caching.EngineUserProvidedLocator.from_function(function, kernels.__file__)
        assert locator.get_disambiguator() == (f"{function.__code__.co_firstlineno}-"
                                               f"{locator.get_source_stamp()[:6].hex()}")
        names.add(locator.get_disambiguator())
    assert len(names) == 2


ONE_SPECIALIZATION = """
import json, warnings
warnings.simplefilter("ignore")
import numba, numpy as np
import flexdyn as fd
from flexdyn.engine import closure, extras, galpha, kernels, split

arm = fd.models.two_link_arm()
q, u, tau = arm.neutral_configuration(), np.full(arm.nu, 0.1), np.full(arm.nu, 0.2)
for a in (q, u, tau):
    a.setflags(write=False)  # read-only, as a caller's constants may be
strided = np.stack([u, u], axis=1)[:, 0]  # not contiguous
fd.forward_dynamics(arm, q, u, tau)
fd.forward_dynamics(arm, q.tolist(), strided, tau.astype(np.float32))
fd.mass_matrix(arm, q)
fd.inverse_dynamics(arm, q, strided, tau)
fd.bias_forces(arm, q, u)
fd.simulate(arm, t_span=(0.0, 1e-3), tau=tau, integrator="DOP853")
fd.simulate(arm, t_span=(0.0, 1e-3), tau=fd.of_time(lambda t: tau), integrator="DOP853")
fd.simulate(arm, t_span=(0.0, 1e-3), tau=tau)
fd.simulate(arm, t_span=(0.0, 1e-3), tau=tau.tolist())
print(json.dumps({f"{m.__name__.rpartition('.')[2]}.{name}": [str(s) for s in f.signatures]
                  for m in (kernels, split, extras, closure, galpha)
                  for name, f in vars(m).items()
                  if isinstance(f, numba.core.dispatcher.Dispatcher)
                  and not f.targetoptions.get("no_cpython_wrapper")}))
"""


@pytest.mark.slow
def test_each_engine_entry_is_compiled_for_one_array_type():
    """Whatever arrays a caller passes (read-only, strided, lists, float32), the public
    functions hand the engine's entries one array type, so each entry a process uses is
    compiled once: a second specialization costs a whole compile of the entry (a minute on a
    small machine) on a fresh installation.  Checked in a fresh process, so that only these
    calls count."""
    run = subprocess.run([sys.executable, "-c", ONE_SPECIALIZATION], capture_output=True,
                         text=True, timeout=1200, check=True)
    signatures = json.loads(run.stdout.strip().splitlines()[-1])
    used = {name: s for name, s in signatures.items() if s}
    assert {"kernels.forward_articulated", "kernels.derivative_articulated",
            "galpha.generalized_alpha"} <= set(used), used
    twice = {name: s for name, s in used.items() if len(s) > 1}
    assert not twice, twice
