"""``import flexdyn`` imports nothing heavy; every public name and module loads on first use
and is the object its module defines; the static imports that editors and type checkers
read name the same objects."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import flexdyn as fd

INIT = Path(fd.__file__)


def test_import_flexdyn_loads_no_numerical_library():
    code = ("import sys, flexdyn; heavy = [m for m in ('numpy', 'scipy', 'numba') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_every_public_name_resolves_to_its_module():
    for name in fd.__all__:
        value = getattr(fd, name)
        module = fd._EXPORTS.get(name)
        if module is None:  # a module of the package
            assert value.__name__ == f"flexdyn.{name}"
        else:
            owner = sys.modules[f"flexdyn.{module}"]
            assert getattr(owner, name) is value, name


def test_the_static_imports_name_every_export():
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    static = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imp in node.body:
                for alias in imp.names:
                    static[alias.name] = imp.module
    assert {k: v for k, v in static.items() if v is not None} == fd._EXPORTS
    assert set(fd.__all__) == set(static)


def test_modules_and_former_names_still_resolve():
    assert fd.beam.STEEL.E > 1e11  # a module that was never named in __all__
    assert callable(fd.simulate) and fd.simulation.simulate is fd.simulate
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = fd.no_such_name


def test_a_compiled_simulation_without_events_does_not_import_scipy_integrate():
    # scipy.integrate (and scipy.optimize under it) is a seventh of a fresh process's first
    # simulation; it loads only for the OdeSolver integrators and the stiffness advice
    code = ("import sys, flexdyn as fd; m = fd.models.two_link_arm(); "
            "r = fd.simulate(m, t_span=(0.0, 0.01)); assert 'radau' in r.message, r.message; "
            "print([k for k in ('scipy.integrate', 'scipy.optimize') if k in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_the_collector_is_paused_only_inside_a_load():
    """``uncollected`` pauses the cyclic collector inside its block and restores its state
    after, also through an exception; a caller that paused it keeps it paused; a block that
    compiles (``loading=False``) leaves it as it is.  A call that loads the engine leaves it
    enabled."""
    import gc

    import numpy as np

    import flexdyn as fd
    from flexdyn.startup import uncollected

    assert gc.isenabled()
    with uncollected():
        assert not gc.isenabled()
        with uncollected():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with uncollected(loading=False):
        assert gc.isenabled()
    try:
        with uncollected():
            raise KeyError("inside")
    except KeyError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with uncollected():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    model = fd.models.two_link_arm()
    fd.forward_dynamics(model, model.neutral_configuration(), np.zeros(model.nu),
                        np.ones(model.nu))
    assert gc.isenabled()


def test_compiles_raise_the_full_collection_threshold_and_restore_it():
    """While compiles are under way the collector's third threshold is at least
    ``COMPILE_FULL_COLLECTION``; the last compile to end restores the thresholds, however
    the starts and ends of several interleave; thresholds already higher stay."""
    import gc

    from flexdyn.startup import COMPILE_FULL_COLLECTION, compile_ended, compile_started

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        compile_started()
        assert gc.get_threshold() == (700, 10, COMPILE_FULL_COLLECTION)
        compile_started()  # a second one, ending first
        compile_ended()
        assert gc.get_threshold() == (700, 10, COMPILE_FULL_COLLECTION)
        compile_ended()
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(700, 10, 10 * COMPILE_FULL_COLLECTION)
        compile_started()
        assert gc.get_threshold()[2] == 10 * COMPILE_FULL_COLLECTION
        compile_ended()
        assert gc.get_threshold() == (700, 10, 10 * COMPILE_FULL_COLLECTION)
    finally:
        gc.set_threshold(*before)
