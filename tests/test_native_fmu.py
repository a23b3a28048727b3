"""Native FMUs (:mod:`flexdyn.native_fmu`, ``build_fmu(native=True)``): FMI 2.0 model exchange
and co-simulation without Python.

fmpy validates the model exchange, co-simulation and combined FMUs and simulates them: the
co-simulation FMU follows :class:`flexdyn.Stepper` with the same Runge–Kutta steps, the model
exchange FMU (integrated by fmpy's CVode) follows :func:`flexdyn.simulate`.  A plain C host
compiled here loads the FMU's binary with ``dlopen`` (no Python in its process), drives it
through the FMI calls with a staircase torque, and its states equal an independent
high-accuracy integration of the same staircase to 1e-6 relative.  The binary depends on the C
runtime and libm only.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.fmu import build_fmu
from helpers import rel_err

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def arm() -> fd.Model:
    return fd.models.two_link_arm()


@pytest.fixture(scope="module")
def fmus(arm, tmp_path_factory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("fmus")
    return {kind: build_fmu(arm, folder / f"{kind}.fmu", dt=0.01, substeps=4, fmi_type=kind,
                            overwrite=True)
            for kind in ("ModelExchange", "CoSimulation", "both")}


def test_fmpy_validates_every_kind(fmus):
    pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu

    for kind, path in fmus.items():
        assert validate_fmu(str(path)) == [], kind
        root = ET.fromstring(zipfile.ZipFile(path).read("modelDescription.xml"))
        kinds = {child.tag for child in root} & {"ModelExchange", "CoSimulation"}
        assert kinds == ({"ModelExchange", "CoSimulation"} if kind == "both" else {kind})


def test_co_simulation_follows_the_stepper(arm, fmus):
    fmpy = pytest.importorskip("fmpy")
    rows = fmpy.simulate_fmu(str(fmus["CoSimulation"]), stop_time=0.5, step_size=0.02,
                             output_interval=0.02, start_values={"tau.link1.theta_dot": 1.5},
                             output=["link1.theta", "link2.eta_dot[0]"])
    stepper = fd.Stepper(arm, 0.01, integrator="rk4", substeps=4,
                         outputs=["link1.theta", "link2.eta_dot[0]"])
    stepper.set_input("tau.link1.theta_dot", 1.5)
    for row in rows[1:]:
        stepper.step(2)
        assert abs(row["time"] - stepper.t) < 1e-12
        got = np.array([row["link1.theta"], row["link2.eta_dot[0]"]])
        assert rel_err(got, stepper.outputs()) < 1e-9, row["time"]


def test_model_exchange_follows_simulate(arm, fmus):
    fmpy = pytest.importorskip("fmpy")
    for kind in ("ModelExchange", "both"):
        rows = fmpy.simulate_fmu(str(fmus[kind]), fmi_type="ModelExchange", stop_time=0.5,
                                 relative_tolerance=1e-9, output_interval=0.05,
                                 start_values={"tau.link1.theta_dot": 1.5},
                                 output=["link1.theta", "link2.theta"])
        tau = np.zeros(arm.nu)
        tau[0] = 1.5
        res = fd.simulate(arm, t_span=(0.0, 0.5), tau=tau, t_eval=rows["time"],
                          integrator=fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-12))
        for name in ("link1.theta", "link2.theta"):
            k = [e.name for e in fd.state_layout(arm)["q"]].index(name)
            assert rel_err(rows[name], res.q[:, k]) < 1e-6, (kind, name)


_HOST = r"""
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef void *(*instantiate_t)(const char *, int, const char *, const char *, const void *,
                               int, int);
typedef int (*setup_t)(void *, int, double, double, int, double);
typedef int (*mode_t_)(void *);
typedef int (*set_real_t)(void *, const unsigned *, size_t, const double *);
typedef int (*get_real_t)(void *, const unsigned *, size_t, double *);
typedef int (*do_step_t)(void *, double, double, int);
typedef void (*free_t)(void *);

static void logger(void *env, const char *name, int status, const char *category,
                   const char *message, ...)
{
    va_list args;
    (void)env; (void)name; (void)category;
    va_start(args, message);
    fprintf(stderr, "[%d] ", status);
    vfprintf(stderr, message, args);
    fprintf(stderr, "\n");
    va_end(args);
}

struct callbacks { void *logger, *allocate, *release, *finished, *env; };

#define LOAD(type, name) type name = (type)dlsym(lib, #name); if (!name) return 3
int main(int argc, char **argv)
{
    /* binary guid nx nu dt n_steps tau_0 ... tau_{n-1} */
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    LOAD(instantiate_t, fmi2Instantiate);
    LOAD(setup_t, fmi2SetupExperiment);
    LOAD(mode_t_, fmi2EnterInitializationMode);
    LOAD(mode_t_, fmi2ExitInitializationMode);
    LOAD(set_real_t, fmi2SetReal);
    LOAD(get_real_t, fmi2GetReal);
    LOAD(do_step_t, fmi2DoStep);
    LOAD(mode_t_, fmi2Terminate);
    LOAD(free_t, fmi2FreeInstance);
    unsigned nx = (unsigned)atoi(argv[3]), nu = (unsigned)atoi(argv[4]);
    double dt = atof(argv[5]);
    int n = atoi(argv[6]);
    struct callbacks cb = { (void *)logger, (void *)calloc, (void *)free, NULL, NULL };
    void *c = fmi2Instantiate("host", 1, argv[2], "", &cb, 0, 0);
    if (!c) return 4;
    if (fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) || fmi2EnterInitializationMode(c)
        || fmi2ExitInitializationMode(c)) return 5;
    unsigned *vr = malloc(nx * sizeof *vr), input = 2 * nx;
    double *x = malloc(nx * sizeof *x);
    for (unsigned k = 0; k < nx; k++) vr[k] = k;
    (void)nu;
    for (int step = 0; step < n; step++) {
        double tau = atof(argv[7 + step]);
        if (fmi2SetReal(c, &input, 1, &tau) || fmi2DoStep(c, step * dt, dt, 1)) return 6;
        if (fmi2GetReal(c, vr, nx, x)) return 7;
        for (unsigned k = 0; k < nx; k++) printf("%.17g%c", x[k], k + 1 < nx ? ' ' : '\n');
    }
    fmi2Terminate(c);
    fmi2FreeInstance(c);
    free(vr);
    free(x);
    return 0;
}
"""


def test_a_c_host_runs_the_co_simulation_fmu(arm, tmp_path):
    path = build_fmu(arm, tmp_path / "arm.fmu", dt=0.01, substeps=40, overwrite=True)
    with zipfile.ZipFile(path) as z:
        z.extractall(tmp_path / "fmu")
        guid = ET.fromstring(z.read("modelDescription.xml")).get("guid")
    binary = next((tmp_path / "fmu" / "binaries" / "linux64").glob("*.so"))
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True)
    assert "python" not in ldd.stdout.lower()
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(binary)],
                               capture_output=True, text=True, check=True).stdout
    assert "Py" not in undefined and "NRT" not in undefined and "numba" not in undefined
    source = tmp_path / "host.c"
    source.write_text(_HOST)
    host = tmp_path / "host"
    subprocess.run(["cc", "-O1", "-o", str(host), str(source), "-ldl"], check=True)
    dt, n = 0.01, 60
    stairs = [2.0 if (k // 15) % 2 == 0 else -1.0 for k in range(n)]  # a staircase torque
    nx = arm.nq + arm.nu
    run = subprocess.run([str(host), str(binary), guid, str(nx), str(arm.nu), repr(dt), str(n),
                          *map(repr, stairs)], capture_output=True, text=True, env={})
    assert run.returncode == 0, run.stderr
    got = np.array([[float(v) for v in line.split()] for line in run.stdout.splitlines()])
    # the same staircase, integrated stair by stair to high accuracy
    q, u, ref = arm.neutral_configuration(), np.zeros(arm.nu), []
    for k in range(n):
        tau = np.zeros(arm.nu)
        tau[0] = stairs[k]
        res = fd.simulate(arm, q, u, (k * dt, (k + 1) * dt), tau=tau,
                          integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-12))
        q, u = res.q[-1], res.u[-1]
        ref.append(np.concatenate([q, u]))
    ref = np.array(ref)
    assert got.shape == ref.shape
    assert rel_err(got, ref) < 1e-6


def test_an_unstable_co_simulation_step_is_refused(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_engine import steel_chain

    steel = steel_chain()
    limit = fd.max_stable_step(steel, "rk4")
    with pytest.raises(ValueError, match=f"substeps >= {int(np.ceil(0.01 / limit))}"):
        build_fmu(steel, tmp_path, dt=0.01, overwrite=True)
    n = int(np.ceil(0.01 / limit))
    assert build_fmu(steel, tmp_path, dt=0.01, substeps=n, overwrite=True).is_file()
    assert build_fmu(steel, tmp_path / "me.fmu", dt=0.01, fmi_type="ModelExchange",
                     overwrite=True).is_file()


def test_refusals(arm, tmp_path):
    with pytest.raises(ValueError, match="rk4"):
        build_fmu(arm, tmp_path, dt=0.01, integrator="gauss-legendre", overwrite=True)
    with pytest.raises(ValueError, match="state"):
        build_fmu(arm, tmp_path, dt=0.01, outputs=["link2.tip"], overwrite=True)
    with pytest.raises(ValueError, match="fmi_type"):
        build_fmu(arm, tmp_path, dt=0.01, fmi_type="Hybrid", overwrite=True)
    with pytest.raises(ValueError, match="native"):
        build_fmu(arm, tmp_path, dt=0.01, native=False, fmi_type="ModelExchange",
                  overwrite=True)
    assert not list(tmp_path.iterdir())
