"""The stages the engine's entries share, each compiled once and called through its address.

numba links a callee's code into each caller and optimizes it again there, so a stage that
twenty entries call (the position and velocity terms) would be compiled and optimized twenty
times, once inside each.  The stages here are compiled on their own, for one signature each
(:data:`STAGES`), and an entry calls them through a table of their addresses, ``st`` (an
``int64`` array indexed as :data:`NAMES`, :func:`table`), which its Python caller passes:
a new entry compiles only its own code, and an edit of an entry recompiles nothing below it.
The call (``run``, an intrinsic) follows numba's own calling convention, so a stage raises
into its caller as a linked callee would.  The indirect call costs about 10 ns, and the
stage's views of the packed model and the workspace, made again from the buffers, about
0.1 µs (``docs/performance.md``).

Each stage is one algorithm of the reference tier on the packed model ``(ib, fb)`` and the
workspace buffer ``buf`` (:func:`~flexdyn.engine.layout.carve`), and returns a status (−1
done, or the index of a body whose articulated inertia is singular):

* :func:`position`: the position terms (Eqs 11–17, 23, 37; :func:`flexdyn.terms.position_terms`);
* :func:`velocity`: the velocity terms (Eqs 25, 37; :func:`flexdyn.terms.velocity_terms`);
* :func:`articulated`: the articulated-body forward dynamics after the terms (Eqs 51/58);
* :func:`newton_euler`: Newton–Euler after the terms (Eq 44), without the joint forces;
* :func:`composite`: the composite-body mass matrix after the position terms (Eqs 47/50);
* ``derivatives``: the derivatives of inverse or forward dynamics at one state
  (:func:`flexdyn.engine.derivatives.state_derivatives`, defined and registered there), which
  the derivatives' entry and the compiled integrators' exact iteration matrix call.

Where ``st`` is None (the native object of :mod:`flexdyn.engine.export`, which runs without
Python, and the C entry of :mod:`flexdyn.engine.ccall`, which takes no table), ``run``
links the stage into its caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.callconv import excinfo_t
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from ..startup import uncollected
from . import caching, notice
from .articulated_body import articulated_accelerations, articulated_inertias
from .composite_body import crba
from .forces import applied_forces
from .jit import OPTIONS
from .layout import carve, unpack
from .newton_euler import rnea
from .terms import position_terms, velocity_terms

__all__ = ["INTS", "MATRIX", "NAMES", "STAGES", "VECTOR", "articulated", "composite",
           "newton_euler", "position", "run", "stage", "table", "velocity"]

#: the types of a stage's arguments: the packed model's integers (and the table ``st``), a
#: vector and a matrix of floats
INTS = types.Array(types.int64, 1, "C")
VECTOR = types.Array(types.float64, 1, "C")
MATRIX = types.Array(types.float64, 2, "C")
#: the stages in the order of the table ``st``: a stage's index there is its place here,
#: whatever the order in which the modules that define them are imported
NAMES = ("position", "velocity", "articulated", "newton_euler", "composite", "derivatives")
_INDEX = {name: k for k, name in enumerate(NAMES)}  # a stage's entry in the table
#: the stages by name, with the types of their arguments (:func:`stage`)
STAGES: dict[str, tuple[numba.core.registry.CPUDispatcher, tuple[types.Type, ...]]] = {}
_NAME = {}  # a stage's name by its Python function


def stage(name: str, argtypes: tuple[types.Type, ...]) -> Callable:
    """Compile the decorated function as the stage ``name`` of :data:`NAMES` taking
    ``argtypes`` (once, without a Python wrapper or reference counting) and register it in
    :data:`STAGES`: a stage may be defined beside the algorithm it runs, in a module that
    imports this one (:func:`flexdyn.engine.derivatives.state_derivatives`)."""
    if name not in _INDEX:
        raise ValueError(f"unknown stage {name!r}; the table holds {NAMES}")

    def register(py_func: Callable) -> numba.core.registry.CPUDispatcher:
        function = numba.njit(**OPTIONS, no_cpython_wrapper=True, _nrt=False)(py_func)
        STAGES[name] = (function, argtypes)
        _NAME[py_func] = name
        return function

    return register


@stage("position", (INTS, VECTOR, VECTOR, VECTOR))
def position(ib, fb, buf, q):
    """Eqs 11–17, 23, 37: the position terms of ``q`` (nq,) into the workspace carved from
    ``buf`` (:func:`~flexdyn.engine.layout.carve`; ``ib``, ``fb`` the packed model)."""
    position_terms(unpack(ib, fb), q, carve(ib, buf))
    return -1


@stage("velocity", (INTS, VECTOR, VECTOR, VECTOR, VECTOR, MATRIX))
def velocity(ib, fb, buf, q, u, fext):
    """Eqs 25, 37: the velocity terms of ``u`` (nu, m/s, rad/s and modal rates) with the
    external wrenches ``fext`` (n_bodies × 6, N m and N), after the position terms of ``q``
    (nq,)."""
    velocity_terms(unpack(ib, fb), q, u, fext, carve(ib, buf))
    return -1


@stage("articulated", (INTS, VECTOR, VECTOR, VECTOR, VECTOR, VECTOR, VECTOR))
def articulated(ib, fb, buf, q, u, tau, udot):
    """Eqs 51/58 after the terms: ``u̇`` (nu,) of the generalized force ``sat(τ) + τ_J``
    (``tau`` (nu,), the joint forces of ``q`` (nq,) and ``u`` (nu,)); −1, or the index of
    the body whose ``D`` is singular."""
    pm, w = unpack(ib, fb), carve(ib, buf)
    status = articulated_inertias(pm, w, applied_forces(pm, w, q, u, tau), None, None)
    if status < 0:
        articulated_accelerations(pm, w, udot)
    return status


@stage("newton_euler", (INTS, VECTOR, VECTOR, VECTOR, VECTOR))
def newton_euler(ib, fb, buf, udot, tau):
    """Eq 44 after the terms: ``τ`` (nu,) of the accelerations ``u̇`` (nu,), gravity
    included, the joint forces not."""
    rnea(unpack(ib, fb), carve(ib, buf), udot, True, tau)
    return -1


@stage("composite", (INTS, VECTOR, VECTOR, MATRIX))
def composite(ib, fb, buf, Mass):
    """Eqs 47/50 after the position terms: the mass matrix into ``Mass`` (nu × nu)."""
    crba(unpack(ib, fb), carve(ib, buf), Mass)
    return -1


def _field(builder, tuple_type, value, name: str):
    """The field ``name`` of a named tuple's value."""
    return builder.extract_value(value, tuple_type.fields.index(name))


def _writable(t: types.Type) -> types.Type:
    """``t`` with a read-only array as writable: the two have one representation (the
    stages write only into the workspace and their outputs)."""
    return t.copy(readonly=False) if isinstance(t, types.Array) else t


@intrinsic
def run(typingctx, st, function, pm, w, *args):
    """``function(pm.ib, pm.fb, w.buf, *args)`` for a stage ``function`` of :data:`STAGES`:
    called through its address ``st[k]`` (``k`` its index in :data:`NAMES`), or linked
    when ``st`` is None.  A zero address (a stage its Python caller did not compile,
    :func:`table`) raises ``RuntimeError``."""
    if not isinstance(function, types.Dispatcher) or function.dispatcher.py_func not in _NAME:
        return None
    name = _NAME[function.dispatcher.py_func]
    k, argtypes = _INDEX[name], STAGES[name][1]
    given = tuple(_writable(t) for t in (pm.types[pm.fields.index("ib")],
                                          pm.types[pm.fields.index("fb")],
                                          w.types[w.fields.index("buf")], *args))
    if given != argtypes:
        raise numba.core.errors.TypingError(
            f"the stage {name} takes {argtypes}, not {tuple(given)}")
    linked = isinstance(st, types.NoneType)
    if linked:
        target = typingctx.resolve_function_type(function, argtypes, {})
    signature = types.int64(st, function, pm, w, types.StarArgTuple(args))

    def codegen(context, builder, sig, llargs):
        values = [_field(builder, pm, llargs[2], "ib"), _field(builder, pm, llargs[2], "fb"),
                  _field(builder, w, llargs[3], "buf"),
                  *cgutils.unpack_tuple(builder, llargs[4])]
        if linked:
            return context.get_function(function, target)(builder, values)
        cc = context.call_conv
        table_array = make_array(sig.args[0])(context, builder, llargs[0])
        address = builder.load(builder.gep(table_array.data, [context.get_constant(types.intp,
                                                                                   k)]))
        with cgutils.if_unlikely(builder, cgutils.is_null(builder, address)):
            cc.return_user_exc(builder, RuntimeError,
                               (f"the engine's stage {name!r} was called before it was "
                                "compiled (flexdyn.engine.stages.table)",))
        callee = builder.inttoptr(address, cc.get_function_type(types.int64,
                                                                argtypes).as_pointer())
        result = cgutils.alloca_once_value(builder, context.get_constant(types.int64, 0))
        excinfo = cgutils.alloca_once(builder, ir.PointerType(excinfo_t), name="excinfo")
        code = builder.call(callee, [result, excinfo,
                                     *cc._get_arg_packer(argtypes).as_arguments(builder,
                                                                                values)])
        status = cc._get_return_status(builder, code, builder.load(excinfo))
        with cgutils.if_unlikely(builder, status.is_error):
            cc.return_status_propagate(builder, status)
        return builder.load(result)

    return signature, codegen


_TABLE = np.zeros(len(NAMES), dtype=np.int64)
_lock = threading.Lock()


def table(names: tuple[str, ...]) -> np.ndarray:
    """The table of the stages' addresses (``int64``, indexed as :data:`NAMES`) with the
    stages ``names`` compiled (or loaded from the cache) on first use, under one compile
    notice (:func:`flexdyn.engine.notice.compiling`); the others stay zero until some caller
    needs them.  One table per process: its entries never change once set."""
    unknown = set(names) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; the engine's stages are "
                         f"{tuple(STAGES)}")
    missing = [name for name in names if not _TABLE[_INDEX[name]]]
    if missing:
        with _lock, notice.compiling("stages", "the engine's shared stages "
                                     f"({', '.join(missing)})", _estimate(missing)):
            for name in missing:
                function, argtypes = STAGES[name]
                with uncollected(caching.compiled(function, argtypes)):
                    function.compile(argtypes)
                compiled = function.overloads[argtypes]
                _TABLE[_INDEX[name]] = compiled.library.get_pointer_to_function(
                    compiled.fndesc.llvm_func_name)
    return _TABLE


def _estimate(names: list[str]) -> tuple[int, int]:
    """The compile notice's estimate of the stages ``names`` together: the sum of theirs
    (:data:`flexdyn.engine.notice.ESTIMATES`; 10 s and 5 s for a stage it does not list)."""
    first, later = zip(*(notice.ESTIMATES.get(f"stages.{name}", (10, 5)) for name in names),
                       strict=True)
    return sum(first), sum(later)
