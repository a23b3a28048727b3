"""Count the multiplications and additions flexdyn's numpy code performs (Sec VII item 2).

Jain & Rodriguez (Sec VII) give the cost of their forward-dynamics algorithms as polynomials
(:mod:`flexdyn.costs`).  This module counts what *our* implementation does instead: it runs
the computation on :class:`CountingArray` operands, an ``ndarray`` subclass whose
``__array_ufunc__`` and ``__array_function__`` tally every floating-point multiplication
(``M``) and addition (``A``) into the active :class:`OpCounter`.

Counting rules
--------------
* ``A @ B`` (matmul) of an (m×k) and a (k×n) operand: ``m n k`` M and ``m n (k − 1)`` A,
  times the broadcast batch size; a 1-d operand is a row (left) or column (right) vector.
  ``np.dot``, ``np.inner``, ``np.vdot`` and ``ndarray.dot`` count the same way.
* ``np.einsum`` (``optimize=False``): the naive loop, ``(#operands − 1) Π(index extents)`` M
  and ``Π(index extents) − Π(output extents)`` A.
* ``+``, ``−`` (add, subtract): one A per output element; ``*``, ``/`` (multiply, divide,
  square, reciprocal): one M per output element (a division counts as a multiplication, as
  in LAPACK Working Note 41); ``np.outer``: one M per element; ``np.cross`` of 3-vectors:
  6 M, 3 A.
* ``add.reduce`` (``np.sum``, ``ndarray.sum``): ``size(in) − size(out)`` A;
  ``multiply.reduce`` likewise in M; ``np.trace``: ``n − 1`` A.
* free: sign changes, ``abs``, comparisons, copies, indexing, reshaping, concatenation.
* other ufuncs (``sqrt``, ``sin``, ``cos``, …) are not M or A: they are tallied per element
  in :attr:`OpCounter.other`.
* ``np.linalg.solve``: ``getrf(n) + getrs(n, nrhs)``; ``np.linalg.inv``: ``getrf(n) +
  getri(n)``; ``np.linalg.cholesky``: ``potrf(n)``; ``np.linalg.det``: ``getrf(n)`` and
  ``n − 1`` M; the vector 2-norm / Frobenius norm: ``size`` M, ``size − 1`` A (and one
  ``sqrt``).  Other ``np.linalg`` routines, and numpy functions with unmodelled arithmetic,
  are computed but recorded in :attr:`OpCounter.uncounted` instead.
* the SPD inverse ``articulated_body._spd_inverse`` (LAPACK ``potrf``/``potri``):
  ``potrf(n) + potri(n)``, i.e. Cholesky then inverse from the Cholesky factor;
  ``composite_body.solve_mass_matrix`` (``cho_factor``/``cho_solve``):
  ``potrf(n) + potrs(n, nrhs)``.

The LAPACK counts are the exact formulas of LAPACK Working Note 41 (Dongarra et al., the
``dopla`` timing counts; square roots are not counted), see :func:`lapack_cost`:

* ``potrf(n)``  (Cholesky):  ``n³/6 + n²/2 + n/3`` M, ``n³/6 − n/6`` A;
* ``potri(n)``  (inverse from the Cholesky factor): ``n³/3 + n² + 2n/3`` M,
  ``n³/3 − n²/2 + n/6`` A;
* ``potrs(n, r)``: ``r n (n + 1)`` M, ``r n (n − 1)`` A;
* ``getrf(n)``  (LU): ``n³/3 + 2n/3`` M, ``n³/3 − n²/2 + n/6`` A;
* ``getrs(n, r)``: ``r n²`` M, ``r n (n − 1)`` A;
* ``getri(n)``: ``2n³/3 + n²/2 + 5n/6`` M, ``2n³/3 − 3n²/2 + 5n/6`` A.

Their leading terms are ``n³/6`` M + ``n³/6`` A for the Cholesky factorization and ``n³/3``
M + ``n³/3`` A for the inverse from it; ``lapack_formulas="leading"`` uses only those
leading terms.  With these formulas the Cholesky solve ``potrf(𝔑) + potrs(𝔑, 1)`` costs
``𝔑³/6 + 3𝔑²/2 + 4𝔑/3`` M and ``𝔑³/6 + 𝔑² − 7𝔑/6`` A, the additions exactly those of the
paper's composite-body item 5.

Instrumentation
---------------
Inside :func:`counting`, flexdyn's modules see a namespace in place of ``numpy`` whose array
constructors (``zeros``, ``empty``, ``eye``, ``asarray``, ``concatenate``, …) return
:class:`CountingArray` views, so that arrays created inside the algorithms count too; the two
LAPACK-based helpers ``articulated_body._spd_inverse`` and
``composite_body.solve_mass_matrix`` are replaced by counted versions (their own bookkeeping
is not counted).  Everything is restored on exit.  A single element of a CountingArray comes
back as a 0-d CountingArray, so arithmetic on elements counts too; arithmetic between plain
Python or numpy numbers that never were CountingArrays is not seen.  The instrumentation
patches module globals and is not thread-safe.

:func:`count_forward_dynamics` applies this to one ruthless forward-dynamics call, with the
Eq B4 precomputation (:class:`~flexdyn.ruthless.RuthlessModel`) excluded, as in the paper.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import math
import sys
import types
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from .costs import OpCount

__all__ = [
    "CountingArray",
    "OpCounter",
    "counting",
    "lapack_cost",
    "count_forward_dynamics",
    "count_forward_dynamics_phases",
    "counted_forward_dynamics",
    "COUNTED_METHODS",
]

#: Forward-dynamics methods :func:`count_forward_dynamics` can count.
COUNTED_METHODS = ("articulated", "articulated-split", "composite")

LapackFormulas = Literal["lawn41", "leading"]


# ----------------------------------------------------------------------------------------------
# LAPACK formulas
# ----------------------------------------------------------------------------------------------
def lapack_cost(routine: str, n: int, nrhs: int = 1,
                formulas: LapackFormulas = "lawn41") -> OpCount:
    """Multiplications and additions of a LAPACK routine on an ``n × n`` matrix.

    Parameters
    ----------
    routine : ``"potrf"``, ``"potri"``, ``"potrs"``, ``"getrf"``, ``"getrs"`` or ``"getri"``.
    n : order of the matrix.
    nrhs : number of right-hand sides (``potrs``, ``getrs``).
    formulas : ``"lawn41"`` (exact counts of LAPACK Working Note 41, see the module
        docstring) or ``"leading"`` (their ``n³`` terms only; ``n² r`` for the solves).
    """
    n = Fraction(int(n))
    r = Fraction(int(nrhs))
    if n == 0:
        return OpCount(0.0, 0.0)
    exact = {
        "potrf": (n**3 / 6 + n**2 / 2 + n / 3, n**3 / 6 - n / 6),
        "potri": (n**3 / 3 + n**2 + 2 * n / 3, n**3 / 3 - n**2 / 2 + n / 6),
        "potrs": (r * n * (n + 1), r * n * (n - 1)),
        "getrf": (n**3 / 3 + 2 * n / 3, n**3 / 3 - n**2 / 2 + n / 6),
        "getrs": (r * n**2, r * n * (n - 1)),
        "getri": (2 * n**3 / 3 + n**2 / 2 + 5 * n / 6, 2 * n**3 / 3 - 3 * n**2 / 2 + 5 * n / 6),
    }
    leading = {
        "potrf": (n**3 / 6, n**3 / 6),
        "potri": (n**3 / 3, n**3 / 3),
        "potrs": (r * n**2, r * n**2),
        "getrf": (n**3 / 3, n**3 / 3),
        "getrs": (r * n**2, r * n**2),
        "getri": (2 * n**3 / 3, 2 * n**3 / 3),
    }
    if formulas not in ("lawn41", "leading"):
        raise ValueError(f"formulas must be 'lawn41' or 'leading', got {formulas!r}")
    table = exact if formulas == "lawn41" else leading
    if routine not in table:
        raise ValueError(f"unknown LAPACK routine {routine!r}; expected one of {sorted(table)}")
    mul, add = table[routine]
    return OpCount(float(mul), float(add))


# ----------------------------------------------------------------------------------------------
# counters
# ----------------------------------------------------------------------------------------------
class OpCounter:
    """Tally of the operations performed on :class:`CountingArray` operands.

    Attributes
    ----------
    mul, add : total multiplications and additions.
    by_operation : dict name -> :class:`~flexdyn.costs.OpCount` (``"matmul"``, ``"add"``,
        ``"lapack:potrf"``, …).
    other : dict ufunc name -> number of elements of ufuncs that are neither M nor A
        (``sqrt``, ``sin``, …).
    uncounted : dict function name -> number of calls of array functions whose cost is not
        modelled (e.g. ``np.linalg.eig``).
    matmuls : dict ``(shape_a, shape_b)`` -> number of ``@`` products with these operand
        shapes (where the multiplications go).
    lapack_formulas : ``"lawn41"`` or ``"leading"`` (see :func:`lapack_cost`).
    """

    def __init__(self, lapack_formulas: LapackFormulas = "lawn41"):
        if lapack_formulas not in ("lawn41", "leading"):
            raise ValueError(f"lapack_formulas must be 'lawn41' or 'leading', "
                             f"got {lapack_formulas!r}")
        self.lapack_formulas = lapack_formulas
        self.mul = 0.0
        self.add = 0.0
        self._by_op: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.other: dict[str, int] = defaultdict(int)
        self.uncounted: dict[str, int] = defaultdict(int)
        self.matmuls: dict[tuple, int] = defaultdict(int)

    def record(self, name: str, mul: float, add: float) -> None:
        self.mul += mul
        self.add += add
        entry = self._by_op[name]
        entry[0] += mul
        entry[1] += add

    @property
    def by_operation(self) -> dict[str, OpCount]:
        return {k: OpCount(v[0], v[1]) for k, v in sorted(self._by_op.items())}

    @property
    def count(self) -> OpCount:
        """The totals as an :class:`~flexdyn.costs.OpCount`."""
        return OpCount(self.mul, self.add)

    @property
    def flops(self) -> float:
        return self.mul + self.add

    def __repr__(self) -> str:
        return f"OpCounter(mul={self.mul:g}, add={self.add:g})"


_ACTIVE: list[OpCounter] = []
_SUSPENDED = [0]


def _record(name: str, mul: float, add: float) -> None:
    if _SUSPENDED[0]:
        return
    for c in _ACTIVE:
        c.record(name, mul, add)


def _record_lapack(routine: str, n: int, nrhs: int = 1, batch: int = 1) -> None:
    if _SUSPENDED[0]:
        return
    for c in _ACTIVE:
        k = lapack_cost(routine, n, nrhs, c.lapack_formulas)
        c.record(f"lapack:{routine}", batch * k.mul, batch * k.add)


def _record_other(name: str, elements: int) -> None:
    if _SUSPENDED[0]:
        return
    for c in _ACTIVE:
        c.other[name] += elements


def _record_uncounted(name: str) -> None:
    if _SUSPENDED[0]:
        return
    for c in _ACTIVE:
        c.uncounted[name] += 1


@contextlib.contextmanager
def _suspended() -> Iterator[None]:
    _SUSPENDED[0] += 1
    try:
        yield
    finally:
        _SUSPENDED[0] -= 1


# ----------------------------------------------------------------------------------------------
# the array subclass
# ----------------------------------------------------------------------------------------------
def _plain(x: Any) -> Any:
    """``x`` with every CountingArray (also inside lists/tuples) viewed as a plain ndarray."""
    if isinstance(x, CountingArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _counting(x: Any) -> Any:
    """``x`` with every plain float/complex ndarray or numpy scalar (also inside tuples and
    lists) turned into a :class:`CountingArray`."""
    if isinstance(x, CountingArray):
        return x
    if isinstance(x, np.ndarray):
        return x.view(CountingArray)
    if isinstance(x, np.generic) and np.issubdtype(type(x), np.inexact):
        return np.asarray(x).view(CountingArray)
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_counting(v) for v in x)
    if isinstance(x, list):
        return [_counting(v) for v in x]
    return x


def _shape(x: Any) -> tuple[int, ...]:
    return np.shape(x)


_ADD_UFUNCS = {"add", "subtract"}
_MUL_UFUNCS = {"multiply", "divide", "true_divide", "floor_divide", "square", "reciprocal"}
_FREE_UFUNCS = {
    "negative", "positive", "absolute", "fabs", "conjugate", "sign", "copysign",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isfinite", "isnan", "isinf",
    "signbit", "maximum", "minimum", "fmax", "fmin", "bitwise_and", "bitwise_or",
    "bitwise_xor", "invert", "left_shift", "right_shift",
}


def _matmul_cost(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, int]:
    """``(M, A)`` of ``a @ b`` for operand shapes ``sa``, ``sb`` (numpy matmul semantics)."""
    if len(sa) == 0 or len(sb) == 0:  # scalar operand: elementwise
        n = math.prod(np.broadcast_shapes(sa, sb))
        return n, 0
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    m, k = a2[-2], a2[-1]
    n = b2[-1]
    batch = math.prod(np.broadcast_shapes(a2[:-2], b2[:-2]))
    return batch * m * n * k, batch * m * n * max(k - 1, 0)


def _count_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict, result) -> None:
    name = ufunc.__name__
    if method == "__call__":
        if name == "matmul":
            sa, sb = _shape(inputs[0]), _shape(inputs[1])
            mul, add = _matmul_cost(sa, sb)
            _record("matmul", mul, add)
            if not _SUSPENDED[0]:
                for c in _ACTIVE:
                    c.matmuls[(sa, sb)] += 1
            return
        if name in ("vecdot", "matvec", "vecmat"):
            sa, sb = _shape(inputs[0]), _shape(inputs[1])
            k = sa[-1] if name != "vecmat" else sb[-2]
            out = math.prod(_shape(result))
            _record(name, out * k, out * max(k - 1, 0))
            return
        size = math.prod(_shape(result[0] if isinstance(result, tuple) else result))
        if name in _ADD_UFUNCS:
            _record(name, 0, size)
        elif name in _MUL_UFUNCS:
            _record(name, size, 0)
        elif name not in _FREE_UFUNCS:
            _record_other(name, size)
        return
    if method == "reduce":
        n_in = math.prod(_shape(inputs[0]))
        n_out = math.prod(_shape(result))
        if name == "add":
            _record("add.reduce", 0, max(n_in - n_out, 0))
        elif name == "multiply":
            _record("multiply.reduce", max(n_in - n_out, 0), 0)
        elif name not in _FREE_UFUNCS:
            _record_other(f"{name}.reduce", n_in)
        return
    if method == "accumulate":
        shape = _shape(inputs[0])
        axis = kwargs.get("axis", 0) or 0
        n_ops = math.prod(shape) - (math.prod(shape) // shape[axis] if shape[axis] else 0)
        if name == "add":
            _record("add.accumulate", 0, n_ops)
        elif name == "multiply":
            _record("multiply.accumulate", n_ops, 0)
        elif name not in _FREE_UFUNCS:
            _record_other(f"{name}.accumulate", math.prod(shape))
        return
    if method == "outer":
        size = math.prod(_shape(result))
        if name in _ADD_UFUNCS:
            _record(f"{name}.outer", 0, size)
        elif name in _MUL_UFUNCS:
            _record(f"{name}.outer", size, 0)
        elif name not in _FREE_UFUNCS:
            _record_other(f"{name}.outer", size)
        return
    if name not in _FREE_UFUNCS:  # at, reduceat
        _record_uncounted(f"{name}.{method}")


def _einsum_cost(args: tuple, kwargs: dict) -> tuple[int, int] | None:
    if kwargs.get("optimize", False) or not args or not isinstance(args[0], str):
        return None
    spec = args[0].replace(" ", "")
    ops = args[1:]
    if "..." in spec:
        return None
    lhs, _, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        return None
    if not _:  # implicit output: the indices appearing once, sorted
        letters = "".join(terms)
        rhs = "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
    extent: dict[str, int] = {}
    for term, op in zip(terms, ops, strict=True):
        for ch, dim in zip(term, _shape(op), strict=False):
            extent[ch] = max(extent.get(ch, 1), dim)
    total = math.prod(extent.values())
    out = math.prod(extent[ch] for ch in rhs)
    return (len(ops) - 1) * total, total - out


#: numpy functions that do no floating-point arithmetic (copies, views, selection, layout).
_FREE_FUNCTIONS = frozenset({
    "all", "amax", "amin", "any", "append", "argmax", "argmin", "argsort", "argwhere",
    "array_equal", "array_equiv", "array_split", "atleast_1d", "atleast_2d", "atleast_3d",
    "block", "broadcast_arrays", "broadcast_to", "can_cast", "choose", "column_stack",
    "compress", "concatenate", "copy", "copyto", "count_nonzero", "delete", "diag",
    "diagflat", "diagonal", "dstack", "empty_like", "expand_dims", "extract", "fill_diagonal",
    "flatnonzero", "flip", "fliplr", "flipud", "full_like", "hsplit", "hstack", "imag",
    "insert", "iscomplex", "iscomplexobj", "isreal", "isrealobj", "max", "min", "moveaxis",
    "ndim", "nonzero", "ones_like", "pad", "place", "put", "put_along_axis", "putmask",
    "ravel", "real", "repeat", "reshape", "resize", "result_type", "roll", "rollaxis",
    "rot90", "select", "shape", "size", "sort", "split", "squeeze", "stack", "swapaxes",
    "take", "take_along_axis", "tile", "transpose", "tril", "triu", "unique", "vsplit",
    "vstack", "where", "zeros_like", "matrix_transpose", "permute_dims", "concat",
    "unstack", "astype", "isfinite", "isnan",
})

#: numpy functions whose arithmetic runs through ufuncs on the subclass (counted there).
_UFUNC_FUNCTIONS = frozenset({
    "sum", "prod", "cumsum", "cumprod", "mean", "kron", "average",
})


def _count_array_function(func, args: tuple, kwargs: dict) -> bool:
    """Record the cost of ``func`` when it is modelled here and return True; False for the
    functions that may run on the subclass (free or counted through ufuncs).  Any other
    function is recorded in :attr:`OpCounter.uncounted` (and returns True)."""
    name = getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", "") or ""
    if module.startswith("numpy.linalg"):
        a = args[0] if args else kwargs.get("a", kwargs.get("x"))
        sa = _shape(a)
        n = sa[-1] if sa else 0
        batch = math.prod(sa[:-2]) if len(sa) > 2 else 1
        if name == "solve":
            b = args[1] if len(args) > 1 else kwargs.get("b")
            sb = _shape(b)
            nrhs = 1 if len(sb) == 1 else sb[-1]
            _record_lapack("getrf", n, batch=batch)
            _record_lapack("getrs", n, nrhs, batch=batch)
        elif name == "inv":
            _record_lapack("getrf", n, batch=batch)
            _record_lapack("getri", n, batch=batch)
        elif name == "cholesky":
            _record_lapack("potrf", n, batch=batch)
        elif name in ("det", "slogdet"):
            _record_lapack("getrf", n, batch=batch)
            _record(f"linalg.{name}", batch * max(n - 1, 0), 0)
        elif name == "norm" and len(args) < 2 and kwargs.get("ord") is None \
                and kwargs.get("axis") is None:
            size = math.prod(sa)  # 2-norm of a vector / Frobenius norm
            _record("linalg.norm", size, max(size - 1, 0))
            _record_other("sqrt", 1)
        elif name in ("matmul", "vecdot", "matrix_transpose", "diagonal"):
            return False
        else:
            _record_uncounted(f"linalg.{name}")
        return True
    if name in _FREE_FUNCTIONS or name in _UFUNC_FUNCTIONS:
        return False
    if name in ("dot", "inner", "vdot"):
        a, b = args[0], args[1]
        sa, sb = _shape(a), _shape(b)
        if name == "vdot":
            k = math.prod(sa)
            _record(name, k, max(k - 1, 0))
        elif (name == "dot" or len(sb) <= 1) and len(sa) <= 2 and len(sb) <= 2:
            mul, add = _matmul_cost(sa, sb)
            _record(name, mul, add)
        else:
            _record_uncounted(name)
    elif name == "outer":
        _record(name, math.prod(_shape(args[0])) * math.prod(_shape(args[1])), 0)
    elif name == "cross":
        sa, sb = _shape(args[0]), _shape(args[1])
        if len(kwargs) or len(args) > 2 or not sa or not sb:
            _record_uncounted(name)
        else:
            batch = math.prod(np.broadcast_shapes(sa[:-1], sb[:-1]))
            per = {(3, 3): (6, 3), (2, 2): (2, 1), (2, 3): (4, 1), (3, 2): (4, 1)}
            mul, add = per.get((sa[-1], sb[-1]), (0, 0))
            _record(name, batch * mul, batch * add)
    elif name == "einsum":
        cost = _einsum_cost(args, kwargs)
        if cost is None:
            _record_uncounted(name)
        else:
            _record(name, *cost)
    elif name == "trace":
        sa = _shape(args[0])
        _record(name, 0, max(min(sa[-2:]) - 1, 0) if len(sa) >= 2 else 0)
    else:
        _record_uncounted(name)
    return True


class CountingArray(np.ndarray):
    """``ndarray`` whose arithmetic is tallied into the active :class:`OpCounter`.

    Use ``x.view(CountingArray)`` (or :meth:`wrap`) to make one.  Results of ufuncs and of
    numpy functions on it are CountingArrays again; numpy scalar results become 0-d
    CountingArrays so that the arithmetic on them counts too.  Outside :func:`counting` it
    behaves like a plain ndarray.
    """

    @staticmethod
    def wrap(x: Any) -> CountingArray:
        """``np.asarray(x)`` as a CountingArray view."""
        return np.asarray(x).view(CountingArray)

    def __getitem__(self, key):
        # a single element comes back as a 0-d CountingArray, so scalar arithmetic counts too
        item = super().__getitem__(key)
        if isinstance(item, np.generic) and isinstance(item, np.inexact):
            return np.asarray(item).view(CountingArray)
        return item

    def dot(self, b, out=None):
        """``self.dot(b)``, counted like :func:`numpy.dot`."""
        return np.dot(self, b, out=out)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain_in = tuple(_plain(x) for x in inputs)
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*plain_in, **kwargs)
        _count_ufunc(ufunc, method, plain_in, kwargs, result)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if method == "at":
            return None
        return _counting(result)

    def __array_function__(self, func, types, args, kwargs):
        if _count_array_function(func, args, kwargs):
            with _suspended():
                result = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
            return _counting(result)
        return _counting(super().__array_function__(func, types, args, kwargs))


# ----------------------------------------------------------------------------------------------
# instrumentation of flexdyn
# ----------------------------------------------------------------------------------------------
class _CountingNumpy(types.ModuleType):
    """Stand-in for ``numpy`` inside flexdyn's modules while counting: every function that
    returns a plain ndarray returns a :class:`CountingArray` view of it instead."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(np, name)
        if (isinstance(attr, (type, np.ufunc, types.ModuleType)) or not callable(attr)
                or name.startswith("_")):
            return attr
        wrapped = self._cache.get(name)
        if wrapped is None:
            @functools.wraps(attr)
            def wrapped(*args, **kwargs):
                return _counting(attr(*args, **kwargs))

            self._cache[name] = wrapped
        return wrapped


_NUMPY_PROXY = _CountingNumpy()
_INSTALL_DEPTH = [0]
_SAVED: list[tuple[Any, str, Any]] = []


def _counted_spd_inverse(original):
    def spd_inverse(D, model, i, what, scale=0.0):
        n = D.shape[0]
        _record_lapack("potrf", n)
        _record_lapack("potri", n)
        with _suspended():
            out = original(_plain(D), model, i, what, float(_plain(scale)))
        return _counting(out)

    return spd_inverse


def _counted_solve_mass_matrix(original):
    def solve_mass_matrix(M, rhs):
        n = M.shape[0]
        nrhs = 1 if np.ndim(rhs) == 1 else np.shape(rhs)[1]
        _record_lapack("potrf", n)
        _record_lapack("potrs", n, nrhs)
        with _suspended():
            out = original(_plain(M), _plain(rhs))
        return _counting(out)

    return solve_mass_matrix


def _install() -> None:
    # ruthless binds _spd_inverse at import: import it before patching, so that it never
    # keeps the counted version
    from . import articulated_body, composite_body, ruthless  # noqa: F401

    if _INSTALL_DEPTH[0] == 0:
        patches: list[tuple[Any, str, Any]] = []
        for name, mod in list(sys.modules.items()):
            if (name.startswith("flexdyn.") and name != __name__ and mod is not None
                    and getattr(mod, "np", None) is np):
                patches.append((mod, "np", _NUMPY_PROXY))
        spd = _counted_spd_inverse(articulated_body._spd_inverse)
        for name in ("flexdyn.articulated_body", "flexdyn.ruthless"):
            mod = sys.modules.get(name)
            if mod is not None and hasattr(mod, "_spd_inverse"):
                patches.append((mod, "_spd_inverse", spd))
        patches.append((composite_body, "solve_mass_matrix",
                        _counted_solve_mass_matrix(composite_body.solve_mass_matrix)))
        for mod, attr, new in patches:
            _SAVED.append((mod, attr, getattr(mod, attr)))
            setattr(mod, attr, new)
    _INSTALL_DEPTH[0] += 1


def _uninstall() -> None:
    _INSTALL_DEPTH[0] -= 1
    if _INSTALL_DEPTH[0] == 0:
        while _SAVED:
            mod, attr, old = _SAVED.pop()
            setattr(mod, attr, old)


@contextlib.contextmanager
def counting(instrument: bool = True,
             lapack_formulas: LapackFormulas = "lawn41") -> Iterator[OpCounter]:
    """Count the operations on :class:`CountingArray` operands inside the block.

    Parameters
    ----------
    instrument : also make flexdyn's modules create CountingArrays and count its
        LAPACK-based helpers (see the module docstring); off for counting plain numpy code.
    lapack_formulas : ``"lawn41"`` or ``"leading"`` (see :func:`lapack_cost`).

    Yields
    ------
    OpCounter — filled while the block runs.  Counters nest: an operation is recorded in
    every active counter.
    """
    counter = OpCounter(lapack_formulas)
    if instrument:
        _install()
    _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        _ACTIVE.remove(counter)
        if instrument:
            _uninstall()


# ----------------------------------------------------------------------------------------------
# forward dynamics
# ----------------------------------------------------------------------------------------------
def _is_float_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _convert(x: Any) -> Any:
    """A copy of a constant with its float arrays as CountingArray views (recursively into
    lists, tuples, Transforms, NodeFrames and the per-body constant records)."""
    from .body import NodeFrames
    from .spatial import Transform

    if _is_float_array(x):
        return x.view(CountingArray)
    if isinstance(x, Transform):
        return Transform(_convert(x.R), _convert(x.p))
    if isinstance(x, NodeFrames):
        return dataclasses.replace(x, **{f.name: _convert(getattr(x, f.name))
                                         for f in dataclasses.fields(x)})
    if isinstance(x, list):
        return [_convert(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_convert(v) for v in x)
    return x


def _convert_attributes(obj: Any) -> Any:
    """Shallow copy of ``obj`` (frozen dataclasses included) with its float arrays, node
    frames and transforms converted by :func:`_convert`."""
    new = copy.copy(obj)
    for key, value in vars(obj).items():
        conv = _convert(value)
        if conv is not value:
            object.__setattr__(new, key, conv)
    return new


def _counting_ruthless_model(rm):
    """A copy of a :class:`~flexdyn.ruthless.RuthlessModel` (and of its model) whose constants
    are CountingArrays; the copy is cached on the model copy for ``fd.forward_dynamics``."""
    model = rm.model
    m2 = copy.copy(model)
    for key in ("placement", "child_placement", "gravity"):
        setattr(m2, key, _convert(getattr(model, key)))
    m2.bodies = tuple(_convert_attributes(b) for b in model.bodies)
    m2.joints = tuple(_convert_attributes(j) for j in model.joints)
    twin = copy.copy(rm)
    twin.model = m2
    k0 = rm._kin0
    twin._kin0 = dataclasses.replace(
        k0, model=m2, **{f.name: _convert(getattr(k0, f.name))
                         for f in dataclasses.fields(k0) if f.name not in ("model", "fidelity")})
    twin.consts = tuple(dataclasses.replace(c, **{f.name: _convert(getattr(c, f.name))
                                                  for f in dataclasses.fields(c)})
                        for c in rm.consts)
    m2._ruthless_cache = twin
    return twin


def _prepare(model, q, u, tau, method: str, fidelity: str, f_ext, indirect_min_modes):
    from .ruthless import RuthlessModel, ruthless_model

    if fidelity != "ruthless":
        raise ValueError(f"only fidelity 'ruthless' is counted (the Sec VII counts assume "
                         f"ruthlessly linearized bodies), got {fidelity!r}")
    if method not in COUNTED_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {COUNTED_METHODS}")
    rm = (ruthless_model(model) if indirect_min_modes is None
          else RuthlessModel(model, indirect_min_modes=indirect_min_modes))
    twin = _counting_ruthless_model(rm)
    q, u = _convert(np.array(q, dtype=float)), _convert(np.array(u, dtype=float))
    tau = _convert(np.zeros(model.nu) if tau is None else np.array(tau, dtype=float))
    f_ext = None if f_ext is None else _convert(np.array(f_ext, dtype=float))
    return twin, q, u, tau, f_ext


def counted_forward_dynamics(model, q, u, tau, method: str = "articulated-split",
                             fidelity: str = "ruthless", f_ext=None,
                             indirect_min_modes: int | None = None,
                             lapack_formulas: LapackFormulas = "lawn41"
                             ) -> tuple[np.ndarray, OpCounter]:
    """One call of ``fd.forward_dynamics(model, q, u, tau, method, fidelity="ruthless")`` on
    counting arrays: ``(u̇ as a plain array, the filled OpCounter)``.

    See :func:`count_forward_dynamics` for the parameters and what is counted.
    """
    from .composite_body import forward_dynamics

    twin, q, u, tau, f_ext = _prepare(model, q, u, tau, method, fidelity, f_ext,
                                      indirect_min_modes)
    with counting(lapack_formulas=lapack_formulas) as c:
        udot = forward_dynamics(twin.model, q, u, tau, method=method, fidelity="ruthless",
                                f_ext=f_ext)
    return np.array(udot, dtype=float), c


def count_forward_dynamics(model, q, u, tau, method: str = "articulated-split",
                           fidelity: str = "ruthless", f_ext=None,
                           indirect_min_modes: int | None = None,
                           lapack_formulas: LapackFormulas = "lawn41") -> OpCount:
    """Multiplications and additions of one call of ``fd.forward_dynamics(model, q, u, tau,
    method, fidelity="ruthless")`` as implemented by flexdyn.

    The call runs on the :class:`~flexdyn.ruthless.RuthlessModel` of ``model``: its constants
    (Eq B4 and the rest of the time-independent data) are computed beforehand and not counted,
    as the paper excludes Eq B4; they, ``q``, ``u``, ``tau`` and ``f_ext`` are converted to
    :class:`CountingArray` at the start, and everything the call computes is counted
    (joint transforms, velocities, ``a_m``, ``b_m``, the articulated or composite quantities,
    the sweeps or the Cholesky solve).

    Parameters
    ----------
    model, q, u, tau, f_ext : as for :func:`flexdyn.forward_dynamics` (``tau`` may be None).
    method : ``"articulated-split"`` (Eqs 63–64 with Eq B3, the paper's articulated-body
        algorithm), ``"articulated"`` (Eq 58) or ``"composite"`` (Eq 46).
    fidelity : only ``"ruthless"``.
    indirect_min_modes : ``D_f⁻¹`` rule of :class:`~flexdyn.ruthless.RuthlessModel`; None for
        the model's cached default (Eq B3 from 8 modes on, as in the paper).
    lapack_formulas : see :func:`lapack_cost`.

    Returns
    -------
    OpCount
    """
    return counted_forward_dynamics(model, q, u, tau, method, fidelity, f_ext,
                                    indirect_min_modes, lapack_formulas)[1].count


def count_forward_dynamics_phases(model, q, u, tau, method: str = "articulated-split",
                                  fidelity: str = "ruthless", f_ext=None,
                                  indirect_min_modes: int | None = None,
                                  lapack_formulas: LapackFormulas = "lawn41"
                                  ) -> dict[str, OpCount]:
    """:func:`count_forward_dynamics` split by phase.

    Returns an ordered dict: ``"kinematics"`` (joint transforms, ``φ``), ``"velocities"``
    (twists, ``a_m``, ``b_m``), then for the articulated methods ``"articulated inertias"``
    (Eq 63 / Eq 51) and ``"sweeps"`` (Eq 64 / Eq 58), for the composite method
    ``"mass matrix"`` (Eqs 47–50), ``"bias"`` (Eq 45 with ``χ̇ = 0``), ``"T - C"`` and
    ``"solve"`` (Eq 46); and ``"total"``, their sum (equal to
    :func:`count_forward_dynamics`).
    """
    from . import composite_body
    from .articulated_body import articulated_body_inertias, articulated_forward_dynamics
    from .composite_body import crba
    from .newton_euler import rnea

    twin, q, u, tau, f_ext = _prepare(model, q, u, tau, method, fidelity, f_ext,
                                      indirect_min_modes)
    m2 = twin.model
    phases: dict[str, OpCount] = {}
    with counting(lapack_formulas=lapack_formulas) as total:
        with counting(lapack_formulas=lapack_formulas) as c:
            kin = twin.kinematics(q)
        phases["kinematics"] = c.count
        with counting(lapack_formulas=lapack_formulas) as c:
            vel = twin.velocities(kin, u)
        phases["velocities"] = c.count
        if method == "composite":
            with counting(lapack_formulas=lapack_formulas) as c:
                M = crba(m2, kin)
            phases["mass matrix"] = c.count
            with counting(lapack_formulas=lapack_formulas) as c:
                C = rnea(m2, kin, vel, np.zeros(m2.nu), f_ext)
            phases["bias"] = c.count
            with counting(lapack_formulas=lapack_formulas) as c:
                rhs = tau - C
            phases["T - C"] = c.count
            with counting(lapack_formulas=lapack_formulas) as c:
                # looked up at call time: the instrumented version
                composite_body.solve_mass_matrix(M, rhs)
            phases["solve"] = c.count
        else:
            split = method == "articulated-split"
            with counting(lapack_formulas=lapack_formulas) as c:
                factors = (twin.split_factors(kin) if split
                           else articulated_body_inertias(m2, kin))
            phases["articulated inertias"] = c.count
            with counting(lapack_formulas=lapack_formulas) as c:
                articulated_forward_dynamics(m2, kin, vel, tau, f_ext, split=split,
                                             factors=factors)
            phases["sweeps"] = c.count
    phases["total"] = total.count
    return phases
