"""Count the multiplications and additions flexdyn's numpy code performs (Sec VII item 2).

Jain & Rodriguez (Sec VII) give the cost of their forward-dynamics algorithms as polynomials
(:mod:`flexdyn_bench.costs`).  This module counts what flexdyn's reference tier does instead:
it runs the computation on :class:`CountingArray` operands, an ``ndarray`` subclass whose
``__array_ufunc__`` and ``__array_function__`` tally every floating-point multiplication
(``M``) and addition (``A``) into the active :class:`OpCounter`, and it is told of every LAPACK
call through the observation seam of :mod:`flexdyn.linalg`.  It is a developer instrument, not
part of the installed package (``benchmarks/flexdyn_bench``); flexdyn itself is not modified
while counting.

Counting rules
--------------
An operation counts when at least one operand is a :class:`CountingArray`; it counts what
numpy performs:

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
* free: sign changes, ``abs``, comparisons, ``max``/``min``, copies, indexing, reshaping,
  concatenation, allocation.
* other ufuncs (``sqrt``, ``sin``, ``cos``, ``log``, …) are not M or A: they are tallied per
  element in :attr:`OpCounter.other`.
* ``np.linalg.solve`` (LAPACK ``gesv``): ``getrf(n) + getrs(n, nrhs)``; ``np.linalg.inv``
  (numpy calls ``gesv`` with the identity as right-hand side): ``getrf(n) + getrs(n, n)``;
  ``np.linalg.cholesky``: ``potrf(n)``; ``np.linalg.slogdet`` (LU, then the sum of the
  logarithms of the pivots): ``getrf(n)``, ``n − 1`` A and ``n`` ``log``; ``np.linalg.det``
  (``sign · exp(logdet)``): that, one M and one ``exp``; the vector 2-norm / Frobenius norm:
  ``size`` M, ``size − 1`` A and one ``sqrt``.  Other ``np.linalg`` routines, and numpy
  functions with unmodelled arithmetic, are computed but recorded in
  :attr:`OpCounter.uncounted` instead.
* LAPACK calls of :mod:`flexdyn.linalg` (the SPD inverse ``spd_inverse``: ``potrf`` then
  ``potri``; the mass-matrix solve ``cholesky_solve``: ``potrf`` then ``potrs``), as that
  module reports them to :func:`flexdyn.linalg.observe` — exactly the calls made, whatever
  the operands (a singular matrix stops after ``potrf``; complex inputs take numpy's LU, which
  counts by the rules above).

The LAPACK counts are the exact formulas of LAPACK Working Note 41 (Dongarra et al., the
``dopla`` timing counts; square roots are not counted), see :func:`lapack_cost`:

* ``potrf(n)``  (Cholesky):  ``n³/6 + n²/2 + n/3`` M, ``n³/6 − n/6`` A;
* ``potri(n)``  (inverse from the Cholesky factor): ``n³/3 + n² + 2n/3`` M,
  ``n³/3 − n²/2 + n/6`` A;
* ``potrs(n, r)``: ``r n (n + 1)`` M, ``r n (n − 1)`` A;
* ``getrf(n)``  (LU): ``n³/3 + 2n/3`` M, ``n³/3 − n²/2 + n/6`` A;
* ``getrs(n, r)``: ``r n²`` M, ``r n (n − 1)`` A;
* ``getri(n)``: ``2n³/3 + n²/2 + 5n/6`` M, ``2n³/3 − 3n²/2 + 5n/6`` A (not called by numpy
  or flexdyn; kept for comparisons).

Their leading terms are ``n³/6`` M + ``n³/6`` A for the Cholesky factorization and ``n³/3``
M + ``n³/3`` A for the inverse from it; ``lapack_formulas="leading"`` uses only those
leading terms.  With these formulas the Cholesky solve ``potrf(𝔑) + potrs(𝔑, 1)`` costs
``𝔑³/6 + 3𝔑²/2 + 4𝔑/3`` M and ``𝔑³/6 + 𝔑² − 7𝔑/6`` A, the additions exactly those of the
paper's composite-body item 5.

The seam
--------
Nothing of flexdyn is replaced.  :func:`counting` activates a counter and installs an
observer with :func:`flexdyn.linalg.observe`; the data are made to count by converting them:

* :func:`counting_copy` returns a copy of an object — a :class:`~flexdyn.chain.Model`, the
  body models of :func:`flexdyn.terms.body_models` or of a
  :class:`~flexdyn.ruthless.RuthlessModel`, per-state terms, lists, tuples, dicts — whose
  float arrays (in the attributes of every flexdyn object it reaches: bodies, joints,
  transforms, node frames, the Eq B4 constants …) are :class:`CountingArray` views of the
  originals; the copies share memory with the originals, are built outside any counter and
  cost nothing;
* :func:`count_forward_dynamics` and its relatives convert the inputs ``q``, ``u``, ``tau``,
  ``f_ext``, the model and its ruthless body models, then call the same functions as
  :func:`flexdyn.forward_dynamics`: :func:`flexdyn.terms.position_terms` and
  :func:`~flexdyn.terms.velocity_terms` (the two phases of ``state_terms``), then the
  algorithm of :data:`flexdyn.dynamics.FORWARD_METHODS` on the per-state terms converted in
  turn (they are the algorithm's inputs).  :func:`count_forward_dynamics_phases` runs the
  algorithm's steps one by one and passes their results (factors, ``M``, ``C``) on as they
  come, so that the phases add up to the whole call.

Within a call, CountingArrays propagate: a ufunc or numpy function with a CountingArray
operand returns CountingArrays, and an element of one is a 0-d CountingArray.  What is
**not counted**:

* arithmetic none of whose operands is a CountingArray.  numpy hands out plain ndarrays from
  ``np.array(x)``, ``np.asarray(x)`` (``np.asanyarray`` keeps the subclass), ``np.zeros``,
  ``np.empty``, ``np.eye`` … (allocation; writing CountingArrays into such a buffer leaves it
  plain) and from LAPACK/scipy calls.  Such a plain array counts again as soon as it meets a
  CountingArray; arithmetic between two of them inside one flexdyn function is not seen.
  The per-state terms are converted before the algorithm, so no plain array crosses from
  the terms into it.  In the reference tier as it stands, on hinged chains,
  ``tests/test_opcount.py::test_what_escapes_the_count`` locates what escapes (against a
  reference count with every array flexdyn makes through ``np.*`` tagged): the product
  ``K @ K`` of ``spatial.axis_angle_rotation`` (``skew`` takes ``np.asarray``), 27 M + 18 A
  per revolute joint transform; in the velocity terms, the sum of two ``_cross`` results in
  ``cross_motion`` and ``cross_force`` (``_cross`` returns ``np.array([...])``), 3 A each,
  and the joint's ``Ḣ* β`` (a fresh zero buffer) plus ``cross_motion``, 6 A: 12 A per body;
  and the bookkeeping below;
* arithmetic on Python or numpy numbers that never were CountingArrays (index arithmetic,
  ``float(...)`` conversions such as the singularity tolerances of ``spd_inverse``), and the
  bookkeeping inside :mod:`flexdyn.linalg` on LAPACK's plain outputs: per ``spd_inverse`` of
  order n, the pivot test (1 M) and mirroring the triangle that ``potri`` returns (n² A);
  per ``cholesky_solve`` of order n, the pivot tests (n squared pivots, n M) — and their
  tolerances ``MASS_MATRIX_RTOL · M_kk`` (n M) unless ``M`` is a CountingArray (the mass
  matrix of ``crba`` is a plain buffer).  The singularity scale ``inertia_scale``
  (``|ℋ|²`` and its row sums) reads CountingArrays and counts;
* the validation of the inputs and the time-independent data: the model and its ruthless
  body models (Eq B4, :class:`~flexdyn.ruthless.RuthlessBodyModel`) are built before
  counting, as the paper excludes Eq B4.

The counter is not thread-safe (one module-level list of active counters, and the single
observer slot of :mod:`flexdyn.linalg`).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, Literal, NamedTuple

import numpy as np

import flexdyn.linalg
from flexdyn.articulated_body import (
    articulated_body_inertias,
    articulated_body_inertias_split,
    articulated_forward_dynamics,
    articulated_forward_dynamics_split,
)
from flexdyn.composite_body import crba
from flexdyn.dynamics import FORWARD_METHODS, check_external_forces
from flexdyn.linalg import cholesky_solve
from flexdyn.newton_euler import rnea
from flexdyn.ruthless import RuthlessModel
from flexdyn.terms import body_models, position_terms, velocity_terms

from .costs import OpCount

__all__ = [
    "CountingArray",
    "OpCounter",
    "counting",
    "counting_copy",
    "CountingSetup",
    "prepare",
    "lapack_cost",
    "count_forward_dynamics",
    "count_forward_dynamics_phases",
    "counted_forward_dynamics",
    "COUNTED_METHODS",
]

#: Forward-dynamics methods :func:`count_forward_dynamics` can count (names of
#: :data:`flexdyn.dynamics.FORWARD_METHODS`).
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
    by_operation : dict name -> :class:`~flexdyn_bench.costs.OpCount` (``"matmul"``, ``"add"``,
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
        """The totals as an :class:`~flexdyn_bench.costs.OpCount`."""
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
        elif name == "inv":  # numpy: gesv with the identity as right-hand side
            _record_lapack("getrf", n, batch=batch)
            _record_lapack("getrs", n, n, batch=batch)
        elif name == "cholesky":
            _record_lapack("potrf", n, batch=batch)
        elif name in ("det", "slogdet"):  # LU, then log|det| = Σ log|pivot|
            _record_lapack("getrf", n, batch=batch)
            _record(f"linalg.{name}", 0, batch * max(n - 1, 0))
            _record_other("log", batch * n)
            if name == "det":  # sign · exp(log|det|)
                _record(f"linalg.{name}", batch, 0)
                _record_other("exp", batch)
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
# the counter and the LAPACK seam
# ----------------------------------------------------------------------------------------------
def _observe_lapack(routine: str, n: int, nrhs: int) -> None:
    """Observer for :func:`flexdyn.linalg.observe`: one LAPACK call of flexdyn."""
    _record_lapack(routine, n, max(int(nrhs), 1))


@contextlib.contextmanager
def counting(lapack_formulas: LapackFormulas = "lawn41") -> Iterator[OpCounter]:
    """Count the operations on :class:`CountingArray` operands, and the LAPACK calls of
    :mod:`flexdyn.linalg`, inside the block.

    Parameters
    ----------
    lapack_formulas : ``"lawn41"`` or ``"leading"`` (see :func:`lapack_cost`).

    Yields
    ------
    OpCounter — filled while the block runs.  Counters nest: an operation is recorded in
    every active counter (with that counter's LAPACK formulas).
    """
    counter = OpCounter(lapack_formulas)
    _ACTIVE.append(counter)
    try:
        with flexdyn.linalg.observe(_observe_lapack):
            yield counter
    finally:
        _ACTIVE.remove(counter)


# ----------------------------------------------------------------------------------------------
# counting copies
# ----------------------------------------------------------------------------------------------
def _is_flexdyn_object(x: Any) -> bool:
    module = type(x).__module__ or ""
    return (module == "flexdyn" or module.startswith("flexdyn.")) and hasattr(x, "__dict__")


def counting_copy(x: Any, memo: dict | None = None) -> Any:
    """``x`` with every float ndarray it holds as a :class:`CountingArray` view.

    Arrays are viewed, not copied.  Lists, tuples (named ones too) and dicts are rebuilt;
    an instance of a flexdyn class (model, body, joint, transform, node frames, body model,
    per-state terms, factors …) is copied shallowly (:func:`copy.copy`, frozen dataclasses
    included) with its attributes converted in turn.  Anything else is returned as is.
    ``memo`` (id → converted object) keeps shared objects shared: convert a model and its
    body models with one memo so that the body models refer to the converted bodies.
    """
    memo = {} if memo is None else memo
    key = id(x)
    if key in memo:
        return memo[key]
    if isinstance(x, CountingArray):
        out = x
    elif isinstance(x, np.ndarray):
        out = x.view(CountingArray) if x.dtype.kind in "fc" else x
    elif isinstance(x, list):
        out = [counting_copy(v, memo) for v in x]
    elif isinstance(x, tuple):
        items = [counting_copy(v, memo) for v in x]
        out = type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    elif isinstance(x, dict):
        out = {k: counting_copy(v, memo) for k, v in x.items()}
    elif _is_flexdyn_object(x):
        out = copy.copy(x)
        memo[key] = out  # before the attributes: cycles end here
        for name, value in vars(x).items():
            conv = counting_copy(value, memo)
            if conv is not value:
                object.__setattr__(out, name, conv)
    else:
        out = x
    memo[key] = out
    return out


# ----------------------------------------------------------------------------------------------
# forward dynamics
# ----------------------------------------------------------------------------------------------
class CountingSetup(NamedTuple):
    """Counting copies of the data of one forward-dynamics call (see :func:`prepare`)."""

    model: Any
    body_models: tuple
    q: CountingArray
    u: CountingArray
    tau: CountingArray
    f_ext: CountingArray | None


def prepare(model, q, u, tau, method: str = "articulated-split", fidelity: str = "ruthless",
            f_ext=None, indirect_min_modes: int | None = None) -> CountingSetup:
    """Validate the inputs as :func:`flexdyn.forward_dynamics` does, build the ruthless body
    models (uncounted) and return counting copies of the model, the body models and the
    inputs.

    ``indirect_min_modes`` None: the body models of :func:`flexdyn.terms.body_models` (the
    ones the front door uses; Eq B3 from ``flexdyn.ruthless.INDIRECT_MIN_MODES`` modes on);
    else those of ``RuthlessModel(model, indirect_min_modes)``.
    """
    if fidelity != "ruthless":
        raise ValueError(f"only fidelity 'ruthless' is counted (the Sec VII counts assume "
                         f"ruthlessly linearized bodies), got {fidelity!r}")
    if method not in COUNTED_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {COUNTED_METHODS}")
    q, u, tau = model.check_state(q, u, tau=np.zeros(model.nu) if tau is None else tau)
    f_ext = check_external_forces(model, f_ext)
    models = (body_models(model, "ruthless") if indirect_min_modes is None
              else RuthlessModel(model, indirect_min_modes).consts)
    for body in model.bodies:  # computed on first use: now, uncounted, for the copies to view
        body.M_m0  # noqa: B018
    memo: dict = {}
    return CountingSetup(model=counting_copy(model, memo),
                         body_models=counting_copy(tuple(models), memo),
                         q=counting_copy(q), u=counting_copy(u), tau=counting_copy(tau),
                         f_ext=None if f_ext is None else counting_copy(f_ext))


def _run(setup: CountingSetup, method: str, lapack_formulas: LapackFormulas,
         by_phase: bool) -> tuple[np.ndarray, OpCounter, dict[str, OpCounter]]:
    """One forward-dynamics call on ``setup``: ``(u̇, total counter, counter per phase)``.

    ``by_phase`` False: the state terms, then ``FORWARD_METHODS[method]`` as one phase
    ``"dynamics"``; True: the algorithm split into its steps."""
    model, tau, f_ext = setup.model, setup.tau, setup.f_ext
    phases: dict[str, OpCounter] = {}

    def phase(name, fn, *args, **kwargs):
        with counting(lapack_formulas) as c:
            out = fn(*args, **kwargs)
        phases[name] = c
        return out

    with counting(lapack_formulas) as total:
        pos = phase("kinematics", position_terms, model, setup.q, setup.body_models, "ruthless")
        done = {id(x): x for x in (model, setup.body_models, *setup.body_models)}
        pos = counting_copy(pos, done)  # the algorithm's inputs count throughout
        vel = phase("velocities", velocity_terms, model, pos, setup.u)
        vel = counting_copy(vel)
        if not by_phase:
            udot = phase("dynamics", FORWARD_METHODS[method], model, pos, vel, tau, f_ext)
        elif method == "composite":
            M = phase("mass matrix", crba, model, pos)
            C = phase("bias", rnea, model, pos, vel, np.zeros(model.nu), f_ext)
            rhs = phase("T - C", lambda: tau - C)
            udot = phase("solve", cholesky_solve, M, rhs)
        else:
            split = method == "articulated-split"
            factors = phase("articulated inertias",
                            articulated_body_inertias_split if split
                            else articulated_body_inertias, model, pos)
            udot = phase("sweeps",
                         articulated_forward_dynamics_split if split
                         else articulated_forward_dynamics,
                         model, pos, vel, tau, f_ext, factors=factors)
    return np.array(udot), total, phases  # a plain copy


def counted_forward_dynamics(model, q, u, tau, method: str = "articulated-split",
                             fidelity: str = "ruthless", f_ext=None,
                             indirect_min_modes: int | None = None,
                             lapack_formulas: LapackFormulas = "lawn41"
                             ) -> tuple[np.ndarray, OpCounter]:
    """One call of ``fd.forward_dynamics(model, q, u, tau, method, fidelity="ruthless")`` on
    counting arrays: ``(u̇ as a plain array, the filled OpCounter)``.

    See :func:`count_forward_dynamics` for the parameters and what is counted.
    """
    setup = prepare(model, q, u, tau, method, fidelity, f_ext, indirect_min_modes)
    udot, total, _ = _run(setup, method, lapack_formulas, by_phase=False)
    return udot, total


def count_forward_dynamics(model, q, u, tau, method: str = "articulated-split",
                           fidelity: str = "ruthless", f_ext=None,
                           indirect_min_modes: int | None = None,
                           lapack_formulas: LapackFormulas = "lawn41") -> OpCount:
    """Multiplications and additions of one call of ``fd.forward_dynamics(model, q, u, tau,
    method, fidelity="ruthless")`` as implemented by flexdyn.

    The ruthless body models of ``model`` (Eq B4 and the rest of the time-independent data)
    are built beforehand and not counted, as the paper excludes Eq B4; they, the model,
    ``q``, ``u``, ``tau`` and ``f_ext`` are converted to :class:`CountingArray` views
    (:func:`prepare`), and the call is counted: the position terms (joint transforms,
    ``φ``, ``ℋ``), the velocity terms (twists, ``a_m``, ``b_m``), then the algorithm (the
    articulated or composite quantities, the sweeps or the Cholesky solve) — see the module
    docstring for what escapes the count.

    Parameters
    ----------
    model, q, u, tau, f_ext : as for :func:`flexdyn.forward_dynamics` (``tau`` may be None).
    method : ``"articulated-split"`` (Eqs 63–64 with Eq B3, the paper's articulated-body
        algorithm), ``"articulated"`` (Eq 58) or ``"composite"`` (Eq 46).
    fidelity : only ``"ruthless"``.
    indirect_min_modes : ``D_f⁻¹`` rule of :class:`~flexdyn.ruthless.RuthlessModel`; None for
        the front door's body models (Eq B3 from 8 modes on, as in the paper).
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

    Returns an ordered dict: ``"kinematics"`` (:func:`flexdyn.terms.position_terms`: joint
    transforms, ``φ``, ``ℋ``, poses), ``"velocities"`` (:func:`flexdyn.terms.velocity_terms`:
    twists, ``a_m``, ``b_m``, elastic forces), then for the articulated methods
    ``"articulated inertias"`` (Eq 63 / Eq 51) and ``"sweeps"`` (Eq 64 / Eq 58), for the
    composite method ``"mass matrix"`` (Eqs 47–50), ``"bias"`` (Eq 45 with ``χ̇ = 0``),
    ``"T - C"`` and ``"solve"`` (Eq 46); and ``"total"``, their sum (equal to
    :func:`count_forward_dynamics`: the steps are those of the algorithm, on the same data).
    """
    setup = prepare(model, q, u, tau, method, fidelity, f_ext, indirect_min_modes)
    _, total, phases = _run(setup, method, lapack_formulas, by_phase=True)
    out = {name: c.count for name, c in phases.items()}
    out["total"] = total.count
    return out
