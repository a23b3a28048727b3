"""A model as a C library without Python (:func:`flexdyn.export.export_c`).

The exported functions are checked against the numpy reference tier (``backend="reference"``),
an independent implementation of the same equations: the state derivative against
``fd.rhs``, forward and inverse dynamics and the mass matrix against the module functions, on
the built-in models in every fidelity and on hypothesis trees of every joint kind, with body
wrenches.  The library depends on the C runtime and libm only (``ldd``, ``nm``), a plain C
program that loads it with ``dlopen`` prints the reference's numbers, the documented error
codes come back for invalid inputs and singular inertias, and threads share it.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flexdyn as fd
from flexdyn.export import ERROR_CODES, export_c
from helpers import assert_close, massless_slider
from strategies import models_and_states
from test_closed_chains import fourbar

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

_P = ctypes.POINTER(ctypes.c_double)
CODE = {key: value for key, (value, _) in ERROR_CODES.items()}


def _ptr(a: np.ndarray | None):
    return None if a is None else a.ctypes.data_as(_P)


class Library:
    """An exported model loaded with ctypes: its functions by their short names."""

    def __init__(self, model: fd.Model, folder: Path, fidelity: str | None = None,
                 name: str = "plant", cpu: str = "host"):
        self.model = model
        self.export = export_c(model, folder, fidelity=fidelity, name=name, cpu=cpu)
        self.lib = ctypes.CDLL(str(self.export.library))
        self.name = name

    def __getattr__(self, short: str):
        return getattr(self.lib, f"{self.name}_{short}")

    def state_derivative(self, x, tau=None, f_ext=None) -> tuple[int, np.ndarray]:
        xdot = np.full(x.size, np.nan)
        rc = self.lib[f"{self.name}_state_derivative_ext"](
            ctypes.c_double(0.0), _ptr(x), _ptr(tau), _ptr(f_ext), _ptr(xdot))
        return rc, xdot

    def forward(self, q, u, tau=None, f_ext=None) -> tuple[int, np.ndarray]:
        udot = np.full(self.model.nu, np.nan)
        rc = self.lib[f"{self.name}_forward_dynamics_ext"](_ptr(q), _ptr(u), _ptr(tau),
                                                            _ptr(f_ext), _ptr(udot))
        return rc, udot

    def inverse(self, q, u, udot, f_ext=None) -> tuple[int, np.ndarray]:
        tau = np.full(self.model.nu, np.nan)
        rc = self.lib[f"{self.name}_inverse_dynamics_ext"](_ptr(q), _ptr(u), _ptr(udot),
                                                            _ptr(f_ext), _ptr(tau))
        return rc, tau

    def mass(self, q) -> tuple[int, np.ndarray]:
        M = np.full((self.model.nu, self.model.nu), np.nan)
        return self.lib[f"{self.name}_mass_matrix"](_ptr(q), _ptr(M)), M


def _check_against_reference(lib: Library, fidelity: str, q, u, udot, f_ext, seed: int):
    model = lib.model
    tau = np.random.default_rng(seed).normal(size=model.nu)
    x = np.concatenate([q, u])
    rc, xdot = lib.state_derivative(x, tau, f_ext)
    assert rc == CODE["OK"]
    ref = fd.rhs(model, fidelity, f_ext=f_ext, backend="reference")(0.0, x, tau)
    assert_close(xdot, ref, "state derivative")
    rc, got = lib.forward(q, u, tau, f_ext)
    assert rc == CODE["OK"]
    assert_close(got, fd.forward_dynamics(model, q, u, tau, fidelity=fidelity, f_ext=f_ext,
                                          backend="reference"), "forward dynamics")
    rc, got = lib.inverse(q, u, udot, f_ext)
    assert rc == CODE["OK"]
    assert_close(got, fd.inverse_dynamics(model, q, u, udot, fidelity=fidelity, f_ext=f_ext,
                                          backend="reference"), "inverse dynamics")
    rc, got = lib.mass(q)
    assert rc == CODE["OK"]
    assert_close(got, fd.mass_matrix(model, q, fidelity=fidelity, backend="reference"),
                 "mass matrix")


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
@pytest.mark.parametrize("name", fd.models.list_builtin_models())
def test_builtin_models_equal_the_reference(name, fidelity, tmp_path):
    model = fd.models.builtin_model(name)
    if model.constraints:
        pytest.skip("loop closures are not exported")
    rng = np.random.default_rng(3)
    q = model.normalize_configuration(model.neutral_configuration()
                                      + 0.2 * rng.normal(size=model.nq))
    lib = Library(model, tmp_path, fidelity)
    _check_against_reference(lib, fidelity, q, rng.normal(size=model.nu),
                             rng.normal(size=model.nu), rng.normal(size=(model.n_bodies, 6)), 4)
    # tau and f_ext omitted (NULL): zeros
    x = np.concatenate([q, np.zeros(model.nu)])
    assert_close(lib.state_derivative(x)[1],
                 fd.rhs(model, fidelity, backend="reference")(0.0, x, np.zeros(model.nu)),
                 "state derivative without loads")


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(sample=models_and_states(max_bodies=5, max_nodes=4, max_modes=4))
def test_random_trees_equal_the_reference(sample, tmp_path_factory):
    for fidelity in fd.FIDELITIES:
        lib = Library(sample.model, tmp_path_factory.mktemp("tree"), fidelity)
        _check_against_reference(lib, fidelity, sample.q, sample.u, sample.udot, sample.f_ext,
                                 7)


@pytest.fixture(scope="module")
def arm(tmp_path_factory) -> Library:
    return Library(fd.models.two_link_arm(), tmp_path_factory.mktemp("arm"), name="arm")


def test_no_python_in_the_library(arm):
    path = str(arm.export.library)
    assert "python" not in subprocess.run(["ldd", path], capture_output=True, text=True,
                                          check=True).stdout.lower()
    undefined = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True,
                               text=True, check=True).stdout.split("\n")
    names = {line.split()[-1].split("@")[0] for line in undefined if line.strip()}
    assert names, "nm listed nothing"
    assert not {n for n in names if n.startswith(("Py", "_Py", "NRT", "numba"))}, names
    exported = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                              text=True, check=True).stdout
    assert "arm_state_derivative" in exported
    assert "flexdyn_engine" not in exported and "NRT_" not in exported  # kept inside


def test_sizes_and_names(arm):
    model = arm.model
    assert (arm.nq(), arm.nu(), arm.nx(), arm.n_bodies()) == (
        model.nq, model.nu, model.nq + model.nu, model.n_bodies)
    arm.q_name.restype = arm.u_name.restype = ctypes.c_char_p
    layout = fd.state_layout(model)
    assert [arm.q_name(k).decode() for k in range(model.nq)] == [e.name for e in layout["q"]]
    assert [arm.u_name(k).decode() for k in range(model.nu)] == [e.name for e in layout["u"]]
    assert arm.q_name(model.nq) is None and arm.u_name(-1) is None


def test_error_codes(tmp_path, arm):
    model = arm.model
    x = np.concatenate([model.neutral_configuration(), np.zeros(model.nu)])
    bad = x.copy()
    bad[-1] = np.nan
    assert arm.state_derivative(bad)[0] == CODE["INVALID_INPUT"]
    assert arm.mass(np.full(model.nq, np.inf))[0] == CODE["INVALID_INPUT"]
    assert arm.state_derivative(x, np.full(model.nu, 1e308))[0] == CODE["NONFINITE_RESULT"]
    assert arm.lib.arm_state_derivative(ctypes.c_double(0.0), None, None, _ptr(x)) == CODE[
        "INVALID_INPUT"]
    spacecraft = Library(fd.models.builtin_model("spacecraft"), tmp_path / "sc")
    xs = np.concatenate([spacecraft.model.neutral_configuration(),
                         np.zeros(spacecraft.model.nu)])
    xs[:4] = 0.0  # a zero quaternion
    assert spacecraft.state_derivative(xs)[0] == CODE["INVALID_INPUT"]
    slider = Library(massless_slider(), tmp_path / "slider")
    rc, _ = slider.state_derivative(np.zeros(slider.model.nq + slider.model.nu))
    assert rc == CODE["SINGULAR"]
    assert slider.singular_body() == 1


def test_threads_share_the_library(arm):
    model = arm.model
    rng = np.random.default_rng(8)
    states = [np.concatenate([rng.normal(size=model.nq), rng.normal(size=model.nu)])
              for _ in range(8)]
    expected = [arm.state_derivative(x)[1] for x in states]
    results: dict[int, list[np.ndarray]] = {}

    def work(k: int) -> None:
        results[k] = [arm.state_derivative(x)[1] for _ in range(200) for x in states[k:k + 1]]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(8):
        for got in results[k]:
            np.testing.assert_array_equal(got, expected[k])


_HOST = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*derivative)(double, const double *, const double *, double *);
typedef int (*size)(void);

int main(int argc, char **argv)
{
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    size nx = (size)dlsym(lib, "arm_nx"), nu = (size)dlsym(lib, "arm_nu");
    derivative f = (derivative)dlsym(lib, "arm_state_derivative");
    int n = nx(), m = nu();
    double *x = malloc(n * sizeof *x), *tau = malloc(m * sizeof *tau);
    double *xdot = malloc(n * sizeof *xdot);
    for (int k = 0; k < n; k++) x[k] = atof(argv[2 + k]);
    for (int k = 0; k < m; k++) tau[k] = atof(argv[2 + n + k]);
    int rc = f(0.0, x, tau, xdot);
    printf("%d\n", rc);
    for (int k = 0; k < n; k++) printf("%.17g\n", xdot[k]);
    return 0;
}
"""


def test_a_plain_c_program_runs_the_model(arm, tmp_path):
    source = tmp_path / "host.c"
    source.write_text(_HOST)
    host = tmp_path / "host"
    subprocess.run(["cc", "-O1", "-o", str(host), str(source), "-ldl"], check=True)
    model = arm.model
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.normal(size=model.nq), rng.normal(size=model.nu)])
    tau = rng.normal(size=model.nu)
    numbers = [repr(float(v)) for v in (*x, *tau)]
    run = subprocess.run([str(host), str(arm.export.library), *numbers], capture_output=True,
                         text=True, check=True, env={})
    lines = run.stdout.split()
    assert int(lines[0]) == CODE["OK"]
    assert_close(np.array([float(v) for v in lines[1:]]),
                 fd.rhs(model, backend="reference")(0.0, x, tau), "C program")


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="loop closures"):
        export_c(fourbar(), tmp_path)
    with pytest.raises(ValueError, match="C identifier"):
        export_c(fd.models.two_link_arm(), tmp_path, name="my-arm")
    with pytest.raises(ValueError, match="cpu"):
        from flexdyn.engine.export import native_object

        native_object("pentium")


def test_other_systems_are_told(monkeypatch, tmp_path):
    import flexdyn.native_fmu  # noqa: F401 (imported before the platform is patched)
    from flexdyn.fmu import build_fmu

    arm = fd.models.two_link_arm()
    monkeypatch.setattr("sys.platform", "darwin")
    with pytest.raises(RuntimeError, match="Linux.*darwin"):
        export_c(arm, tmp_path)
    with pytest.raises(RuntimeError, match="native FMU builds Linux"):
        build_fmu(arm, tmp_path, dt=0.01, overwrite=True)
    assert not list(tmp_path.iterdir())


def test_makefile_builds_the_same_library(arm, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    folder = arm.export.header.parent
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "libarm.so").unlink()
    subprocess.run(["make", "-s", "-C", str(copy)], check=True, capture_output=True)
    lib = ctypes.CDLL(str(copy / "libarm.so"))
    x = np.concatenate([arm.model.neutral_configuration() + 0.3, np.ones(arm.model.nu)])
    xdot = np.empty(x.size)
    assert lib.arm_state_derivative(ctypes.c_double(0.0), _ptr(x), None, _ptr(xdot)) == 0
    np.testing.assert_array_equal(xdot, arm.state_derivative(x)[1])
    # the static library, linked into a program
    subprocess.run(["make", "-s", "-C", str(copy), "libarm.a"], check=True, capture_output=True)
    (copy / "main.c").write_text(_STATIC_HOST)
    subprocess.run(["cc", "-O1", "-o", str(copy / "main"), str(copy / "main.c"),
                    str(copy / "libarm.a"), "-lm"], check=True)
    run = subprocess.run([str(copy / "main"), *(repr(float(v)) for v in x)],
                         capture_output=True, text=True, check=True, env={})
    np.testing.assert_array_equal(np.array([float(v) for v in run.stdout.split()]), xdot)


_STATIC_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include "arm.h"

int main(int argc, char **argv)
{
    double x[ARM_NX], xdot[ARM_NX];
    for (int k = 0; k < ARM_NX && k + 1 < argc; k++) x[k] = strtod(argv[k + 1], NULL);
    if (arm_state_derivative(0.0, x, NULL, xdot) != ARM_OK) return 1;
    for (int k = 0; k < ARM_NX; k++) printf("%.17g\n", xdot[k]);
    return 0;
}
"""


def test_the_generic_cpu_computes_the_same(arm, tmp_path):
    generic = Library(arm.model, tmp_path, name="arm", cpu="generic")
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.normal(size=arm.model.nq), rng.normal(size=arm.model.nu)])
    tau = rng.normal(size=arm.model.nu)
    rc, xdot = generic.state_derivative(x, tau)
    assert rc == CODE["OK"]
    assert_close(xdot, arm.state_derivative(x, tau)[1], "generic vs host", tol=1e-12)
