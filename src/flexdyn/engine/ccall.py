"""The state derivative as a C function, for integrators and FMU wrappers outside Python.

One compiled function serves every model: the packed model travels as its two buffers, which
describe their own sizes (the header of ``ib``), so a C, C++ or Fortran caller evaluates
``ẋ = [Γ(q) u; u̇]`` without entering Python::

    int64_t flexdyn_state_derivative(const int64_t *ib, const double *fb, int64_t method,
                                     const double *x, const double *tau,
                                     const double *f_ext, double *xdot);

``ib``, ``fb``: the packed model (:attr:`flexdyn.engine.Engine.packed`, kept alive by the
caller); ``method``: 0 articulated (Eqs 51/58), 1 composite (Eq 46); ``x = [q; u]``
(nq + nu), ``tau`` (nu), ``f_ext`` (n_bodies × 6, row-major; zeros for none) and ``xdot``
(nq + nu, written).  The return value is −1 on success, −2 for a non-finite input or a zero
quaternion, −3 for a non-finite result, or the index of a body whose articulated inertia is
singular (0 for a singular mass matrix with ``method`` 1).  The function holds no global
state and may be called from several threads at once.

This module compiles the function when it is first imported (cached on disk by numba);
:meth:`flexdyn.engine.Engine.c_state_derivative` imports it on demand.
"""

from __future__ import annotations

import ctypes

import numba
from numba import types

from . import kernels
from .jit import OPTIONS
from .pack import HEAD_OFFSETS, HEADER, INT_FIELDS

__all__ = ["CTYPES_PROTOTYPE", "SIGNATURE", "flexdyn_state_derivative"]


_I64P, _F64P = types.CPointer(types.int64), types.CPointer(types.float64)
#: the C signature (numba types) of ``flexdyn_state_derivative``
SIGNATURE = types.int64(_I64P, _F64P, types.int64, _F64P, _F64P, _F64P, _F64P)
_HEAD = len(HEADER) + HEAD_OFFSETS  # the header and the field offsets of ib


@numba.cfunc(SIGNATURE, cache=True, nopython=True, error_model=OPTIONS["error_model"])
def flexdyn_state_derivative(ib_p, fb_p, method, x_p, tau_p, fext_p, xdot_p):
    """``ẋ`` of ``x`` for the packed model ``(ib, fb)``: see the module docstring."""
    head = numba.carray(ib_p, (_HEAD,))
    n, nu, nq = head[0], head[3], head[4]
    ib = numba.carray(ib_p, (_HEAD + n * len(INT_FIELDS),))
    fb = numba.carray(fb_p, (head[_HEAD - 1],))
    return kernels.state_derivative(
        ib, fb, method, numba.carray(x_p, (nq + nu,)), numba.carray(tau_p, (nu,)),
        numba.carray(fext_p, (n, 6)), numba.carray(xdot_p, (nq + nu,)))


#: the ctypes prototype of ``flexdyn_state_derivative``
CTYPES_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double),
    ctypes.c_int64, *(ctypes.POINTER(ctypes.c_double),) * 4)
