"""A model as a C library that runs without Python: :func:`export_c`.

The library is the engine's own compiled code (:mod:`flexdyn.engine.export`: the entries of
forward dynamics, the state derivative, inverse dynamics and the mass matrix as one native
object, compiled once per engine version and CPU) linked with a small generated C shell that
holds the model as constant data (the packed buffers of :mod:`flexdyn.engine.pack`) and
exposes a plain C interface.  The numbers it computes are those of the engine; it calls no
Python and allocates nothing per call (one workspace per thread, ``_Thread_local``).

Not covered: loop closures (the closed chain's state derivative needs the constraint solve
of :func:`flexdyn.rhs`), nodal loads, prescribed motion, and the composite and split methods
(the library runs the articulated method, Eqs 51/58).  Loads other than ``τ``: body wrenches
``f_ext`` through the ``*_ext`` functions; joint springs, dampers and saturation are part of
the model.  The object targets this machine's processor by default (``cpu="generic"``: the
baseline of the architecture, for another machine of the same architecture and operating
system).
"""

from __future__ import annotations

import importlib.metadata
import keyword
import math
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .chain import Model, state_layout
from .files import write_atomically
from .terms import DEFAULT_FIDELITY

__all__ = ["CExport", "ERROR_CODES", "c_compiler", "export_c", "link_shared", "require_linux"]

#: the return codes of the exported functions (``<NAME>_<CODE>`` in the header)
ERROR_CODES = {
    "OK": (0, "success"),
    "INVALID_INPUT": (1, "an input is not finite, or a joint quaternion is zero (or, outside "
                         "the state derivative, off unit norm by more than 1e-6)"),
    "NONFINITE_RESULT": (2, "the result overflowed (inputs too large)"),
    "SINGULAR": (3, "a body's articulated inertia is singular (<name>_singular_body() names "
                    "its index)"),
    "INTERNAL_ERROR": (4, "the compiled code raised (report it: it should not happen)"),
}


@dataclass(frozen=True)
class CExport:
    """What :func:`export_c` wrote: the ``header``, the C ``source`` (the shell with the
    model's data), the engine's ``object``, the ``makefile``, and the shared ``library``
    (None when it was not built: ``build=False`` or no C compiler)."""

    name: str
    header: Path
    source: Path
    object: Path
    makefile: Path
    library: Path | None


def _c_name(name: str) -> str:
    """``name`` as a C identifier (other characters as ``_``; a leading digit prefixed)."""
    out = re.sub(r"\W", "_", name, flags=re.ASCII)
    if not out or out[0].isdigit():
        out = f"m_{out}"
    return out


def _double(x: float) -> str:
    """``x`` as a C literal that reads back to the same double."""
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return repr(float(x))


def _array(values: np.ndarray, fmt, per_line: int = 6) -> str:
    items = [fmt(v) for v in values.ravel()]
    return ",\n".join("    " + ", ".join(items[k:k + per_line])
                      for k in range(0, len(items), per_line))


def _strings(names: list[str]) -> str:
    return ",\n".join("    \"{}\"".format(n.replace("\\", "\\\\").replace('"', '\\"'))
                      for n in names)


_HEADER = """\
/* {name}.h: the model "{model}" as a C library, exported by flexdyn {version}
 * (fidelity "{fidelity}", {n} bodies, nq = {nq}, nu = {nu}).
 *
 * x = [q; u] (nx = nq + nu); q and u as flexdyn.state_layout names them ({name}_q_name,
 * {name}_u_name); tau (nu) the generalized forces of the joints' and modal speeds; f_ext
 * (n_bodies x 6, row-major) each body's external wrench [torque; force] about its frame's
 * origin in its frame; M (nu x nu) row-major.  tau and f_ext may be NULL (zeros).
 * SI units.  Every function returns {NAME}_OK (0) or an error code below, allocates nothing
 * and may run on several threads at once (one workspace per thread).
 */
#ifndef {NAME}_H
#define {NAME}_H

#ifdef __cplusplus
extern "C" {{
#endif

#define {NAME}_NQ {nq}
#define {NAME}_NU {nu}
#define {NAME}_NX {nx}
#define {NAME}_N_BODIES {n}

{codes}

int {name}_nq(void);
int {name}_nu(void);
int {name}_nx(void);
int {name}_n_bodies(void);
/* the name of q[k] / u[k] ("link1.theta", "link1.eta[0]"), or NULL outside the range */
const char *{name}_q_name(int k);
const char *{name}_u_name(int k);
/* xdot = [qdot; udot] of x (the model is time-invariant: t is not used); quaternions are
 * scaled to unit length, udot by the articulated-body algorithm */
int {name}_state_derivative(double t, const double *x, const double *tau, double *xdot);
int {name}_state_derivative_ext(double t, const double *x, const double *tau,
                                const double *f_ext, double *xdot);
/* udot of (q, u, tau) */
int {name}_forward_dynamics(const double *q, const double *u, const double *tau, double *udot);
int {name}_forward_dynamics_ext(const double *q, const double *u, const double *tau,
                                const double *f_ext, double *udot);
/* tau of (q, u, udot): the motor forces, less the joint springs' and dampers' */
int {name}_inverse_dynamics(const double *q, const double *u, const double *udot, double *tau);
int {name}_inverse_dynamics_ext(const double *q, const double *u, const double *udot,
                                const double *f_ext, double *tau);
/* the mass matrix M(q) */
int {name}_mass_matrix(const double *q, double *M);
/* the index of the body whose inertia was singular in this thread's last {NAME}_SINGULAR */
int {name}_singular_body(void);

#ifdef __cplusplus
}}
#endif

#endif
"""

_SOURCE = """\
/* {name}.c: the C shell of the model "{model}" around the engine's object {name}_engine.o
 * (written by flexdyn.export_c; build with the Makefile beside it). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "{name}.h"

#define HIDDEN __attribute__((visibility("hidden")))

/* the engine's entries (numba's native calling convention: 0 when the entry ran, its
 * status in *status; read it after the call) */
{entries}

/* numba's runtime functions that the object references and no call reaches (the engine
 * allocates nothing here): stand-ins that fail */
{stubs}

static const int64_t ib[{n_ib}] = {{
{ib}
}};

static const double fb[{n_fb}] = {{
{fb}
}};

static const double zeros[{n_zeros}];
static _Thread_local double work[{n_work}];
static _Thread_local int singular_body = -1;

static const char *const q_names[{nq_names}] = {{
{q_names}
}};

static const char *const u_names[{nu_names}] = {{
{u_names}
}};

static int code(int32_t ran, int64_t status)
{{
    if (ran != 0) return {NAME}_INTERNAL_ERROR;
    if (status == -1) return {NAME}_OK;
    if (status == -2) return {NAME}_INVALID_INPUT;
    if (status == -3) return {NAME}_NONFINITE_RESULT;
    if (status >= 0) {{
        singular_body = (int)status;
        return {NAME}_SINGULAR;
    }}
    return {NAME}_INTERNAL_ERROR;
}}

#define IN(p) ((double *)((p) ? (p) : zeros))
#define OUT(p) ((double *)(p))

int {name}_nq(void) {{ return {NAME}_NQ; }}
int {name}_nu(void) {{ return {NAME}_NU; }}
int {name}_nx(void) {{ return {NAME}_NX; }}
int {name}_n_bodies(void) {{ return {NAME}_N_BODIES; }}
const char *{name}_q_name(int k) {{ return k >= 0 && k < {NAME}_NQ ? q_names[k] : NULL; }}
const char *{name}_u_name(int k) {{ return k >= 0 && k < {NAME}_NU ? u_names[k] : NULL; }}
int {name}_singular_body(void) {{ return singular_body; }}

int {name}_state_derivative_ext(double t, const double *x, const double *tau,
                                const double *f_ext, double *xdot)
{{
    int64_t status;
    void *exception = NULL;
    (void)t;
    if (!x || !xdot) return {NAME}_INVALID_INPUT;
    int32_t ran = flexdyn_engine_state_derivative(&status, &exception, ib, fb, work, OUT(x),
                                                  IN(tau), IN(f_ext), xdot);
    return code(ran, status);
}}

int {name}_state_derivative(double t, const double *x, const double *tau, double *xdot)
{{
    return {name}_state_derivative_ext(t, x, tau, NULL, xdot);
}}

int {name}_forward_dynamics_ext(const double *q, const double *u, const double *tau,
                                const double *f_ext, double *udot)
{{
    int64_t status;
    void *exception = NULL;
    if (!q || !u || !udot) return {NAME}_INVALID_INPUT;
    int32_t ran = flexdyn_engine_forward_dynamics(&status, &exception, ib, fb, work, OUT(q),
                                                  OUT(u), IN(tau), IN(f_ext), udot);
    return code(ran, status);
}}

int {name}_forward_dynamics(const double *q, const double *u, const double *tau, double *udot)
{{
    return {name}_forward_dynamics_ext(q, u, tau, NULL, udot);
}}

int {name}_inverse_dynamics_ext(const double *q, const double *u, const double *udot,
                                const double *f_ext, double *tau)
{{
    int64_t status;
    void *exception = NULL;
    if (!q || !u || !udot || !tau) return {NAME}_INVALID_INPUT;
    int32_t ran = flexdyn_engine_inverse_dynamics(&status, &exception, ib, fb, work, OUT(q),
                                                  OUT(u), OUT(udot), IN(f_ext), tau);
    return code(ran, status);
}}

int {name}_inverse_dynamics(const double *q, const double *u, const double *udot, double *tau)
{{
    return {name}_inverse_dynamics_ext(q, u, udot, NULL, tau);
}}

int {name}_mass_matrix(const double *q, double *M)
{{
    int64_t status;
    void *exception = NULL;
    if (!q || !M) return {NAME}_INVALID_INPUT;
    int32_t ran = flexdyn_engine_mass_matrix(&status, &exception, ib, fb, work, OUT(q), M);
    return code(ran, status);
}}
"""

#: the compiler flags of a shared library (besides the optimization level): C11,
#: position-independent code, and every symbol resolved when it is linked
_SHARED = ("-std=c11", "-fPIC", "-shared", "-Wl,-z,defs")

_MAKEFILE = """\
# The model "{model}" as a C library (flexdyn.export_c): `make` builds the shared library
# lib{name}.so, `make lib{name}.a` a static one (link it with -lm).
CC ?= cc
CFLAGS ?= -O2
AR ?= ar

lib{name}.so: {name}.c {name}.h {name}_engine.o
\t$(CC) $(CFLAGS) {shared} -o $@ {name}.c {name}_engine.o -lm

lib{name}.a: {name}.c {name}.h {name}_engine.o
\t$(CC) $(CFLAGS) -std=c11 -fPIC -c -o {name}.o {name}.c
\t$(AR) rcs $@ {name}.o {name}_engine.o

clean:
\trm -f lib{name}.so lib{name}.a {name}.o
"""


def export_c(model: Model, directory: str | Path, *, fidelity: str | None = None,
             name: str | None = None, build: bool = True, cpu: str = "host") -> CExport:
    """Write ``model`` as a C library that needs no Python: a header ``<name>.h``, the C
    shell ``<name>.c`` with the model's data, the engine's object ``<name>_engine.o`` and a
    ``Makefile`` (which also builds a static ``lib<name>.a``), and (``build=True``, with a C
    compiler ``cc`` on the path) build ``lib<name>.so`` (``<name>``: ``name``, default the
    model's name as a C identifier).

    The functions (``<name>_state_derivative``, ``_forward_dynamics``,
    ``_inverse_dynamics``, ``_mass_matrix``, their ``_ext`` forms with body wrenches, the
    sizes and coordinate names) are documented in the header; they compute what
    :func:`flexdyn.rhs`, :func:`flexdyn.forward_dynamics` (articulated),
    :func:`flexdyn.inverse_dynamics` and :func:`flexdyn.mass_matrix` compute for
    ``fidelity`` (default :data:`flexdyn.DEFAULT_FIDELITY`), to round-off: ``ẋ = [Γ(q) u;
    u̇]`` of ``x = [q; u]`` (nq + nu) with ``u̇`` by the articulated-body algorithm (Eqs
    51/58), ``τ`` (nu; N, N m) by Newton–Euler (Eq 44), ``M`` (nu × nu, row-major) by
    composite bodies (Eqs 47/50); ``f_ext`` (n_bodies × 6, row-major) each body's wrench
    ``[torque; force]`` (N m, N) about its frame's origin in its frame.

    The engine's object is compiled on the first export of an installation (about a minute
    with the engine's cache warm, with a notice) and kept in
    ``$NUMBA_CACHE_DIR/flexdyn-export`` (else ``~/.cache/flexdyn/flexdyn-export``); later
    exports write files and run the compiler only.  ``cpu``: ``"host"`` (this processor's
    instruction set) or ``"generic"`` (the architecture's baseline, for other machines).

    ``ValueError`` for a model with loop closures (not covered: see the module docstring)
    or a ``name`` that is a C keyword; ``RuntimeError`` naming the compiler's message when the
    build fails."""
    from .engine import Engine
    from .engine.export import ENTRIES, RUNTIME_STUBS, SYMBOL_PREFIX, native_object, work_length

    require_linux("export_c")
    if model.constraints:
        raise ValueError(f"export_c covers trees; model {model.name!r} has loop closures "
                         f"({', '.join(c.name for c in model.constraints)})")
    fidelity = DEFAULT_FIDELITY if fidelity is None else fidelity
    c_name = _c_name(model.name if name is None else name)
    if name is not None and c_name != name:
        raise ValueError(f"name {name!r} is not a C identifier (letters, digits, '_')")
    if keyword.iskeyword(c_name) or c_name in ("int", "double", "void", "const", "static"):
        raise ValueError(f"name {c_name!r} is a keyword")
    engine = Engine(model, fidelity)
    ib, fb = engine.packed
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    obj = native_object(cpu)
    layout = state_layout(model)
    fields = {"name": c_name, "NAME": c_name.upper(), "model": model.name.replace("*/", "* /"),
              "version": _version(), "fidelity": fidelity, "n": model.n_bodies,
              "nq": model.nq, "nu": model.nu, "nx": model.nq + model.nu}
    codes = "\n".join(
        f"#define {c_name.upper()}_{key} {value}  /* {what.replace('<name>', c_name)} */"
        for key, (value, what) in ERROR_CODES.items())
    entries = "\n".join(
        f"extern int32_t {SYMBOL_PREFIX}{entry}(int64_t *status, void **exception, "
        "const int64_t *ib, const double *fb, double *work, "
        + ", ".join(f"double *{a}" for a in args) + ");"
        for entry, (_, args) in ENTRIES.items())
    stubs = "\n".join(f"HIDDEN {body}" for body in RUNTIME_STUBS.values())
    source = _SOURCE.format(
        **fields, entries=entries, stubs=stubs, n_ib=ib.size, n_fb=max(fb.size, 1),
        ib=_array(ib, str, 12), fb=_array(fb, _double) if fb.size else "    0.0",
        n_zeros=max(model.nu, 6 * model.n_bodies, 1), n_work=work_length(engine.packed),
        nq_names=max(model.nq, 1), nu_names=max(model.nu, 1),
        q_names=_strings([e.name for e in layout["q"]]) or "    \"\"",
        u_names=_strings([e.name for e in layout["u"]]) or "    \"\"")
    paths = {"header": folder / f"{c_name}.h", "source": folder / f"{c_name}.c",
             "object": folder / f"{c_name}_engine.o", "makefile": folder / "Makefile"}
    texts = {"header": _HEADER.format(**fields, codes=codes), "source": source,
             "makefile": _MAKEFILE.format(**fields, shared=" ".join(_SHARED))}
    for key, text in texts.items():
        write_atomically(paths[key], lambda fh, text=text: fh.write(text))
    write_atomically(paths["object"], lambda fh: fh.write(obj), binary=True)
    library = (link_shared(folder / f"lib{c_name}.so", [paths["source"], paths["object"]])
               if build and c_compiler() is not None else None)
    if time.perf_counter() - start > 3.0:
        print(f"flexdyn: exported {model.name!r} to {folder} in "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    return CExport(c_name, library=library, **paths)


def require_linux(what: str) -> None:
    """``RuntimeError`` naming ``what`` on an operating system other than Linux, whose object
    files, shared libraries and FMU binaries the export writes."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError(f"{what} builds Linux libraries (ELF, binaries/linux64); this is "
                           f"{sys.platform}")


def _version() -> str:
    """The installed flexdyn's version (as the package metadata gives it)."""
    try:
        return importlib.metadata.version("flexdyn")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def c_compiler() -> str | None:
    """The system's C compiler (``cc``, else ``gcc`` or ``clang`` on the path), or None."""
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def link_shared(output: Path, inputs: list[Path], extra: tuple[str, ...] = ()) -> Path:
    """``output``, a shared library built from the C sources and objects ``inputs`` by
    :func:`c_compiler` with the flags of the generated Makefile and ``extra``;
    ``RuntimeError`` without a compiler, or naming the compiler's message when the build
    fails."""
    compiler = c_compiler()
    if compiler is None:
        raise RuntimeError(f"building {output.name} needs a C compiler (cc, gcc or clang) on "
                           "the path")
    run = subprocess.run([compiler, "-O2", *_SHARED, *extra, "-o", str(output),
                          *map(str, inputs), "-lm"], capture_output=True, text=True,
                         check=False)
    if run.returncode != 0:
        raise RuntimeError(f"building {output} failed ({compiler}):\n{run.stderr.strip()}")
    return output
