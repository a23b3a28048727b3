"""The engine's entries as native machine code for programs without Python.

Four entries take the packed model ``(ib, fb)`` (:mod:`flexdyn.engine.pack`) and a workspace
as raw pointers, so that they allocate nothing and need no Python object:

* ``state_derivative(ib, fb, work, x, tau, f_ext, xdot)``:
  :func:`~flexdyn.engine.kernels.validated_derivative` (u̇ by Eqs 51/58);
* ``forward_dynamics(ib, fb, work, q, u, tau, f_ext, udot)``:
  :func:`~flexdyn.engine.kernels.validated_forward`;
* ``inverse_dynamics(ib, fb, work, q, u, udot, f_ext, tau)``:
  :func:`~flexdyn.engine.kernels.validated_inverse` (Eq 44);
* ``mass_matrix(ib, fb, work, q, M)``: :func:`~flexdyn.engine.kernels.validated_mass`
  (Eqs 47/50).

``work`` holds :func:`work_length` doubles.  :func:`native_object` compiles them with
numba (the same compiled code as the engine's entries, not a second implementation), links
them into one module whose only visible symbols are ``flexdyn_engine_<entry>``, and emits a
relocatable object file for the CPU of this machine.  Each symbol follows numba's native
calling convention::

    int32_t flexdyn_engine_<entry>(int64_t *status, void **exception, <arguments>);

which returns 0 when the entry ran (its result in ``*status``: −1 done, −2 invalid input,
−3 a non-finite result, or the index of a body whose articulated inertia is singular) and
nonzero when compiled code raised.  The object is model-independent: the model travels as
data.  It references ``memset`` and ``libm``, and may reference functions of numba's
runtime that allocation-free calls never reach (``NRT_MemInfo_call_dtor``, which the
inlined reference counting names, and allocation and reshape helpers), whose failing
stand-ins the C shell of :func:`flexdyn.export.export_c` defines
(:data:`RUNTIME_STUBS`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numba
from numba import carray, types

from . import caching, notice
from .jit import OPTIONS, inlined
from .kernels import validated_derivative, validated_forward, validated_inverse, validated_mass
from .layout import workspace, workspace_length
from .pack import HEAD_OFFSETS, HEADER, INT_FIELDS, Packed

__all__ = ["ENTRIES", "RUNTIME_STUBS", "SYMBOL_PREFIX", "native_object", "work_length"]

_HEAD = len(HEADER) + HEAD_OFFSETS  # the header and the field offsets of ib
_I64P, _F64P = types.CPointer(types.int64), types.CPointer(types.float64)
#: prefix of the entries' symbols in the object of :func:`native_object`
SYMBOL_PREFIX = "flexdyn_engine_"
#: symbols of numba's runtime that the object may reference and that no call reaches: the
#: stand-ins a program defines (C definitions)
RUNTIME_STUBS = {
    "NRT_MemInfo_alloc_aligned": "void *NRT_MemInfo_alloc_aligned(size_t size, unsigned align)"
                                 " { (void)size; (void)align; return 0; }",
    "NRT_MemInfo_new_varsize_dtor": "void *NRT_MemInfo_new_varsize_dtor(size_t size, void *dtor)"
                                    " { (void)size; (void)dtor; return 0; }",
    "NRT_MemInfo_call_dtor": "void NRT_MemInfo_call_dtor(void *mi) { (void)mi; }",
    "numba_attempt_nocopy_reshape": "int numba_attempt_nocopy_reshape(long nd, const long *dims,"
                                    " const long *strides, long newnd, const long *newdims,"
                                    " long *newstrides, long itemsize, int is_f_order)"
                                    " { (void)nd; (void)dims; (void)strides; (void)newnd;"
                                    " (void)newdims; (void)newstrides; (void)itemsize;"
                                    " (void)is_f_order; return 0; }",
}


@inlined
def _model(ib_p, fb_p, work_p):
    """``ib``, ``fb`` and the workspace buffer on ``work_p``, from raw pointers (``ib``
    describes the lengths of both buffers)."""
    head = carray(ib_p, (_HEAD,))
    ib = carray(ib_p, (_HEAD + head[0] * len(INT_FIELDS),))
    return (ib, carray(fb_p, (head[_HEAD - 1],)),
            carray(work_p, (workspace_length(ib),)))


def _state_derivative(ib_p, fb_p, work_p, x_p, tau_p, fext_p, xdot_p):
    ib, fb, buf = _model(ib_p, fb_p, work_p)
    n, nu, nq = ib[0], ib[3], ib[4]
    return validated_derivative(None, ib, fb, buf, carray(x_p, (nq + nu,)),
                                carray(tau_p, (nu,)), carray(fext_p, (n, 6)),
                                carray(xdot_p, (nq + nu,)))


def _forward_dynamics(ib_p, fb_p, work_p, q_p, u_p, tau_p, fext_p, udot_p):
    ib, fb, buf = _model(ib_p, fb_p, work_p)
    n, nu, nq = ib[0], ib[3], ib[4]
    return validated_forward(None, ib, fb, buf, carray(q_p, (nq,)), carray(u_p, (nu,)),
                             carray(tau_p, (nu,)), carray(fext_p, (n, 6)), carray(udot_p, (nu,)))


def _inverse_dynamics(ib_p, fb_p, work_p, q_p, u_p, udot_p, fext_p, tau_p):
    ib, fb, buf = _model(ib_p, fb_p, work_p)
    n, nu, nq = ib[0], ib[3], ib[4]
    return validated_inverse(None, ib, fb, buf, carray(q_p, (nq,)), carray(u_p, (nu,)),
                             carray(udot_p, (nu,)), carray(fext_p, (n, 6)),
                             carray(tau_p, (nu,)))


def _mass_matrix(ib_p, fb_p, work_p, q_p, M_p):
    ib, fb, buf = _model(ib_p, fb_p, work_p)
    nu, nq = ib[3], ib[4]
    return validated_mass(None, ib, fb, buf, carray(q_p, (nq,)), carray(M_p, (nu, nu)))


#: the entries by name: the Python function and its pointer arguments after ``(ib, fb, work)``
#: (names of the C arguments, all ``double *``)
ENTRIES = {
    "state_derivative": (_state_derivative, ("x", "tau", "f_ext", "xdot")),
    "forward_dynamics": (_forward_dynamics, ("q", "u", "tau", "f_ext", "udot")),
    "inverse_dynamics": (_inverse_dynamics, ("q", "u", "udot", "f_ext", "tau")),
    "mass_matrix": (_mass_matrix, ("q", "M")),
}


def work_length(packed: Packed) -> int:
    """The number of doubles of the ``work`` buffer of the entries for this packed model."""
    return workspace(packed.ib).buf.size


def _cache_folder() -> Path:
    """Where the objects are kept: ``$NUMBA_CACHE_DIR/flexdyn-export``, else
    ``flexdyn/flexdyn-export`` in the user's cache folder (``$XDG_CACHE_HOME``, ``~/.cache``)."""
    root = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "flexdyn")
    return Path(root) / "flexdyn-export"


def _linked_module(llvm):
    """The entries compiled by numba (not cached: numba gives the LLVM module of what it
    compiles in this process) and linked into one module, each renamed
    ``SYMBOL_PREFIX + name``."""
    module = None
    for name, (function, args) in ENTRIES.items():
        signature = types.int64(_I64P, _F64P, _F64P, *(_F64P,) * len(args))
        compiled = numba.njit(signature, nogil=True, error_model=OPTIONS["error_model"],
                              no_cpython_wrapper=True, no_cfunc_wrapper=True)(function)
        part = llvm.parse_assembly(compiled.inspect_llvm(signature.args))
        part.get_function(compiled.overloads[signature.args].fndesc.mangled_name).name = (
            SYMBOL_PREFIX + name)
        if module is None:
            module = part
        else:
            module.link_in(part)
    return module


def _keep(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a partial file never has the final name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def native_object(cpu: str = "host") -> bytes:
    """The entries of :data:`ENTRIES` as one relocatable, position-independent object file
    (ELF on Linux) for ``cpu`` (``"host"``: this machine's processor and its instruction-set
    extensions, as numba compiles; ``"generic"``: the baseline of this architecture).
    The linked module (LLVM bitcode) and each object are kept in
    ``$NUMBA_CACHE_DIR/flexdyn-export`` (else the user's cache folder), keyed by the engine's
    source stamp: compiled once per engine version, emitted once per CPU."""
    import llvmlite
    import llvmlite.binding as llvm

    if cpu not in ("host", "generic"):
        raise ValueError(f"cpu must be 'host' or 'generic', not {cpu!r}")
    cpu_name = llvm.get_host_cpu_name() if cpu == "host" else ""
    features = llvm.get_host_cpu_features().flatten() if cpu == "host" else ""
    stem = (f"{caching.stamp(Path(__file__).resolve()).hex()[:16]}"
            f"-llvmlite{llvmlite.__version__}")
    path = _cache_folder() / f"{stem}-{cpu_name or 'generic'}.o"
    if path.is_file():
        return path.read_bytes()
    bitcode = path.with_name(f"{stem}.bc")
    if bitcode.is_file():
        module = llvm.parse_bitcode(bitcode.read_bytes())
    else:
        if os.environ.get("FLEXDYN_COMPILE_NOTICE", "1") != "0":
            print("flexdyn: compiling the engine's entries into a native object for export_c "
                  "(about a minute; once per engine version, kept in "
                  f"{path.parent})", file=sys.stderr, flush=True)
        with notice.silenced():
            module = _linked_module(llvm)
        for value in (*module.functions, *module.global_variables):
            if not value.is_declaration and value.linkage not in (llvm.Linkage.internal,
                                                                  llvm.Linkage.private):
                value.visibility = "hidden"
        _keep(bitcode, module.as_bitcode())
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu_name, features=features, opt=3, reloc="pic", codemodel="default")
    module.data_layout = str(machine.target_data)
    obj = machine.emit_object(module)
    _keep(path, obj)
    return obj
