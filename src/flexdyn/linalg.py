"""Dense linear algebra shared by every tier: SPD inverse and solve, symmetrization, and the
singularity tolerances (one copy, used by the reference algorithms and the compiled engine).

Articulated inertias ``D = ℋ P ℋ*`` (Jain & Rodriguez Eq 51) and the mass matrix ``M``
(Eq 46) are symmetric positive definite for a model whose every degree of freedom carries
inertia.  A matrix counts as **singular** when a squared Cholesky pivot falls below

* :data:`PIVOT_RTOL` times its largest diagonal entry, or
* :data:`PIVOT_FLOOR` times an *inertia scale* supplied by the caller (``max|P| ·
  max_r ‖H_r‖²``, :func:`inertia_scale`) — the size ``D`` has when it is not singular, so that
  a singular ``D`` made slightly positive by round-off is still recognised;

for the mass matrix a squared pivot must exceed :data:`MASS_MATRIX_RTOL` times its own
diagonal entry.  Errors are
:class:`SingularInertiaError` (a ``ValueError``) naming the body and the quantity.

Observation seam
----------------
:func:`observe` installs a callable that is told of every LAPACK call made here as
``observer(routine, n, nrhs)`` (``"potrf"``, ``"potri"``, ``"potrs"``); the operation counter
in ``benchmarks/`` uses it.  With no observer (the default) nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import scipy.linalg  # with the package's modules, which it imports uncollected (startup)

__all__ = [
    "COMPLEX_STEP",
    "LAMBDA_RTOL",
    "MASS_MATRIX_RTOL",
    "PIVOT_FLOOR",
    "PIVOT_RTOL",
    "SingularInertiaError",
    "as_columns",
    "cholesky_solve",
    "inertia_scale",
    "observe",
    "spd_inverse",
    "spd_inverse_blocks",
    "sym",
]

#: step of complex-step derivatives (any tiny step: nothing is subtracted, and the O(h²)
#: term is below any double)
COMPLEX_STEP = 1e-30
#: squared Cholesky pivot below this times ``max diag(D)``: ``D`` is singular
PIVOT_RTOL = 1e-13
#: squared Cholesky pivot below this times the inertia scale: ``D`` is singular
PIVOT_FLOOR = 1e-14
#: squared Cholesky pivot of ``M`` below this times its own diagonal entry ``M_kk``: ``M`` is
#: singular (the share of dof ``k``'s inertia not explained by the dofs before it; invariant
#: under a scaling of the dofs, so widely different masses are not mistaken for none)
MASS_MATRIX_RTOL = 1e-13
#: squared Cholesky pivot ``L_kk²`` of a closed chain's ``Λ = J M⁻¹ Jᵀ`` at most this times
#: ``Λ_kk``: the closures are redundant, or locked at this configuration
LAMBDA_RTOL = 1e-10

_observer: Callable[[str, int, int], None] | None = None


class SingularInertiaError(ValueError):
    """An articulated inertia or the mass matrix is singular or not positive definite."""


@contextmanager
def observe(observer: Callable[[str, int, int], None]) -> Iterator[None]:
    """Within the ``with`` block, call ``observer(routine, n, nrhs)`` for every LAPACK
    factorization, inversion or solve made by this module (not thread-safe)."""
    global _observer
    previous, _observer = _observer, observer
    try:
        yield
    finally:
        _observer = previous


def _note(routine: str, n: int, nrhs: int = 0) -> None:
    if _observer is not None:
        _observer(routine, n, nrhs)


def as_columns(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """A right-hand side (n,) or block of them (n, k) as (n, k), and whether it was (n,):
    the recursions always sweep blocks; entry points reshape once."""
    x = np.asarray(x)
    return (x[:, None], True) if x.ndim == 1 else (x, False)


def sym(A: np.ndarray) -> np.ndarray:
    """Symmetric part ``(A + Aᵀ)/2`` (n, n).  Articulated inertias are symmetric in exact
    arithmetic; removing the rounding asymmetry keeps it from growing along a chain."""
    return 0.5 * (A + A.T)


def inertia_scale(P: np.ndarray, H: np.ndarray) -> float:
    """``max|P| · max_r ‖H_r‖²``: the size a ``D = H P Hᵀ`` has when it is not singular.

    P (k, k) articulated inertia, H (r, k) joint map rows; 0 when ``H`` is empty."""
    if H.size == 0:
        return 0.0
    return float(np.max(np.abs(P))) * float(np.max(np.sum(np.abs(H) ** 2, axis=1)))


def spd_inverse(D: np.ndarray, what: str, scale: float = 0.0) -> np.ndarray:
    """Inverse (n, n) of a symmetric positive definite ``D`` (n, n) from its Cholesky factor
    (LAPACK ``potrf``/``potri``).  A complex ``D`` (complex step) is complex *symmetric*:
    its real part is tested as below and the inverse taken by LU, which is analytic in the
    entries (a Hermitian Cholesky factor is not).

    Parameters
    ----------
    D : (n, n) symmetric matrix; only its lower triangle is read.
    what : what ``D`` is, for the error message (e.g. ``"articulated inertia D of body 3
        'link3'"``).
    scale : inertia scale (:func:`inertia_scale`); 0 for the relative test only.

    Raises
    ------
    SingularInertiaError
        If a squared pivot is below ``max(PIVOT_RTOL · max diag D, PIVOT_FLOOR · scale)``.
    """
    n = D.shape[0]
    if n == 0:
        return D
    tol = max(PIVOT_RTOL * float(np.max(np.abs(np.diag(D.real)))), PIVOT_FLOOR * scale,
              np.finfo(float).tiny)
    potrf, potri = scipy.linalg.lapack.get_lapack_funcs(("potrf", "potri"), (D.real,))
    _note("potrf", n)
    L, info = potrf(D.real, lower=1, clean=0)
    if info != 0 or np.min(np.abs(np.diag(L))) ** 2 <= tol:
        raise SingularInertiaError(
            f"{what} is singular or not positive definite (a degree of freedom without "
            "inertia, e.g. a massless body on its joint?)"
        )
    if np.iscomplexobj(D):  # complex step: D is complex *symmetric*, not Hermitian
        return np.linalg.inv(D)
    _note("potri", n)
    Dinv, info = potri(L, lower=1)
    Dinv = np.tril(Dinv)
    return Dinv + np.tril(Dinv, -1).T


def spd_inverse_blocks(D: np.ndarray, what: Callable[[int], str],
                       scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Inverses (k, n, n) of ``k`` symmetric positive definite blocks ``D`` (k, n, n) by one
    batched Cholesky factorization, each block tested as :func:`spd_inverse` tests one
    (real inputs).

    Parameters
    ----------
    what : ``what(b)`` names block ``b`` for the error message.
    scale : inertia scale per block (k,) or one for all.

    Raises
    ------
    SingularInertiaError
        Naming the first singular block (:func:`spd_inverse`'s message).
    """
    if D.shape[0] == 0:
        return np.zeros_like(D)
    scales = np.broadcast_to(np.asarray(scale, dtype=float), D.shape[:1])
    diag = np.abs(np.diagonal(D, axis1=1, axis2=2))
    tol = np.maximum(np.maximum(PIVOT_RTOL * diag.max(axis=1), PIVOT_FLOOR * scales),
                     np.finfo(float).tiny)
    try:
        L = np.linalg.cholesky(D)
    except np.linalg.LinAlgError:
        L = None
    bad = (np.arange(D.shape[0]) if L is None
           else np.flatnonzero(np.diagonal(L, axis1=1, axis2=2).min(axis=1) ** 2 <= tol))
    for b in bad:  # the single-block test names the first singular block
        spd_inverse(D[b], what(int(b)), float(scales[b]))
    if L is None:
        raise SingularInertiaError(f"{what(0)} (or another block) is not positive definite")
    for _ in range(D.shape[0]):
        _note("potrf", D.shape[1])
    L_inv = np.linalg.inv(L)
    return np.swapaxes(L_inv, -1, -2) @ L_inv


def cholesky_solve(M: np.ndarray, b: np.ndarray, what: str = "mass matrix") -> np.ndarray:
    """Solve ``M x = b`` for a symmetric positive definite ``M`` (n, n) by Cholesky (Eq 46);
    ``b`` (n,) or (n, k).  Complex inputs (complex step) are solved by LU after the real
    part's Cholesky test.

    Raises
    ------
    SingularInertiaError
        If a squared pivot ``L_kk²`` is at most ``MASS_MATRIX_RTOL · M_kk`` or ``M`` is not
        positive definite.
    """
    if M.shape[0] == 0:
        return b
    _note("potrf", M.shape[0])
    try:
        c = scipy.linalg.cho_factor(M.real, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        c = None
    if c is None or np.any(np.abs(np.diag(c[0])) ** 2
                           <= MASS_MATRIX_RTOL * np.abs(np.diag(M.real))):
        raise SingularInertiaError(
            f"{what} is singular or not positive definite (a degree of freedom without "
            "inertia?)"
        )
    if np.iscomplexobj(M) or np.iscomplexobj(b):  # complex step: M is complex symmetric
        return np.linalg.solve(M, b)
    _note("potrs", M.shape[0], 1 if b.ndim == 1 else b.shape[1])
    return scipy.linalg.cho_solve(c, b, check_finite=False)
