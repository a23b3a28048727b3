"""How the engine's functions are compiled (numba, ``cache=True``, the GIL released), by role.

numba links a callee's code into each caller and optimizes the whole again, so the stages
that many entries share are compiled once and called through their addresses
(:mod:`flexdyn.engine.stages`), thin orchestration levels are inlined at numba's IR level
(:data:`inlined`), and functions called
only from compiled code get no CPython wrapper (:data:`helper`, :data:`allocating_helper`);
only the entries called from Python (:data:`entry_point`) have one.  Small helpers that take
the packed model or the workspace are inlined too: a call would copy their dozens of array
headers.

:data:`helper` allocates nothing and counts no references (numba's ``_nrt=False``): numba
would otherwise add and drop a reference, each an atomic operation in a runtime function that
cannot be inlined, for every block view such as ``w.P[i]``, which cost more than the
arithmetic of a rigid body's step.  A helper returns no array, since its caller would release
a reference it never took.  What allocates (:data:`allocating_helper`, :data:`entry_point`)
counts references as usual.  numba passes an unset ``_nrt`` from caller to callee, so the
decorators that allocate set it explicitly.

Importing this module installs the engine's cache (:mod:`flexdyn.engine.caching`) and the
compile notice (:mod:`flexdyn.engine.notice`) before anything compiles.
"""

from __future__ import annotations

import numba

from . import caching, notice

__all__ = ["OPTIONS", "allocating_helper", "entry_point", "helper", "inlined"]


caching.install()  # the engine's cache keyed by all its sources, before anything compiles
notice.install()  # a line on standard error while an entry compiles for long

#: every engine function: cached, the GIL released, and numpy's error model (a float division
#: by zero gives ±inf or nan, which the entries' finiteness checks report by status), since
#: numba's default adds a zero test and an exception path to every division
OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}
#: compiled code called from compiled code only: no allocation, no reference counting
helper = numba.njit(**OPTIONS, no_cpython_wrapper=True, _nrt=False)
#: compiled code called from compiled code only that allocates
allocating_helper = numba.njit(**OPTIONS, no_cpython_wrapper=True, _nrt=True)
#: inlined into its caller at numba's IR level
inlined = numba.njit(**OPTIONS, no_cpython_wrapper=True, inline="always")
#: an entry called from Python
entry_point = numba.njit(**OPTIONS, _nrt=True)
