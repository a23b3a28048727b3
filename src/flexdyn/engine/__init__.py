"""The compiled engine (numba): one packed model per (model, fidelity), joint kernels by
code, one body kernel per body model, generic sweeps (:mod:`flexdyn.engine.kernels`)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..chain import Model
from ..linalg import SingularInertiaError
from ..terms import body_models
from . import kernels
from .pack import Packed, pack

__all__ = ["Engine"]

#: compiled forward dynamics by method: ``(ib, fb, q, u, tau, f_ext, udot) -> status``
_FORWARD = {"articulated": kernels.forward_articulated, "composite": kernels.forward_composite}
#: operation codes of :func:`flexdyn.engine.kernels.batch` by name
BATCH_OPS = {"articulated": kernels.ARTICULATED, "composite": kernels.COMPOSITE,
             "inverse": kernels.INVERSE, "mass": kernels.MASS}
#: states per thread below which a batch is not shared among threads
STATES_PER_THREAD = 64

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    """The process-wide pool that shares batches among the cores (the kernels release the
    GIL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                       thread_name_prefix="flexdyn-batch")
        return _pool


def _checked(status: int, out: np.ndarray) -> np.ndarray:
    """``out`` unless the entry found its inputs invalid."""
    if status == kernels.INVALID:
        raise ValueError("an input is not finite or a joint quaternion is off unit norm "
                         "(Model.check_state names it)")
    return out


class Engine:
    """Compiled per-state dynamics of ``model`` for one fidelity (real ``float64`` inputs,
    validated by the caller).

    Methods mirror the reference algorithms: :meth:`terms`, :meth:`inverse_dynamics`,
    :meth:`mass_matrix`, :meth:`forward_dynamics` (``"articulated"``, Eq 58, or
    ``"composite"``, Eq 46)."""

    def __init__(self, model: Model, fidelity: str = "full"):
        self.model = model
        self.fidelity = fidelity
        self.packed: Packed = pack(model, body_models(model, fidelity))
        self._zero_wrenches = np.zeros((model.n_bodies, 6))

    def _fext(self, f_ext):
        return self._zero_wrenches if f_ext is None else f_ext

    def terms(self, q: np.ndarray, u: np.ndarray, f_ext: np.ndarray | None = None
              ) -> kernels.Work:
        """The workspace after the position and velocity terms (fields named as the
        reference's :class:`flexdyn.terms.PositionTerms` and ``VelocityTerms``, padded)."""
        ib, fb = self.packed
        return kernels.terms(ib, fb, q, u, self._fext(f_ext))

    # The entries validate their inputs (finite, unit quaternions, normalised inside) and
    # report a status: −1 done, INVALID, OVERFLOW (a non-finite result) or a body index
    # (singular inertia).  The public methods raise for INVALID and a body index and return
    # an overflowed result as it is (the caller reports it).

    def inverse_dynamics(self, q, u, udot, f_ext=None) -> np.ndarray:
        """``τ`` (nu,), Eq 44."""
        tau = np.empty(self.model.nu)
        return _checked(kernels.inverse(*self.packed, q, u, udot, self._fext(f_ext), tau), tau)

    def mass_matrix(self, q) -> np.ndarray:
        """``M`` (nu × nu), Eqs 47/50."""
        M = np.empty((self.model.nu, self.model.nu))
        return _checked(kernels.mass(*self.packed, q, M), M)

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "articulated"):
        """``u̇`` (nu,): ``"articulated"`` (Eqs 51/58) or ``"composite"`` (Eq 46)."""
        return _checked(*self.forward_status(q, u, tau, f_ext, method))

    def forward_status(self, q, u, tau, f_ext=None, method: str = "articulated"
                       ) -> tuple[int, np.ndarray]:
        """``(status, u̇)`` of :meth:`forward_dynamics` without raising for
        :data:`~flexdyn.engine.kernels.INVALID` and
        :data:`~flexdyn.engine.kernels.OVERFLOW` (a singular inertia raises)."""
        udot = np.empty(self.model.nu)
        status = _FORWARD[method](*self.packed, q, u, tau, self._fext(f_ext), udot)
        if status >= 0:
            raise self._singular(method, status)
        return status, udot

    def batch(self, op: str, q: np.ndarray, u: np.ndarray | None = None,
              x: np.ndarray | None = None, f_ext: np.ndarray | None = None) -> np.ndarray:
        """Operation ``op`` of :data:`BATCH_OPS` over the leading axis B of ``q`` (B, nq),
        ``u`` and ``x`` (B, nu) (``x`` is τ, or u̇ for ``"inverse"``), ``f_ext`` None or
        (B, n_bodies, 6); the states are shared among the cores.  Returns (B, nu), or
        (B, nu, nu) for ``"mass"``; each state's result equals the single call's bit for
        bit."""
        n_states, nu = q.shape[0], self.model.nu
        code = BATCH_OPS[op]
        zeros = np.zeros((n_states, nu))
        u = zeros if u is None else u
        x = zeros if x is None else x
        if f_ext is None:
            f_ext = np.zeros((n_states,) + self._zero_wrenches.shape)
        out = np.empty((n_states, nu * nu if op == "mass" else nu))
        status = np.empty(n_states, dtype=np.int64)
        n_threads = max(1, min(os.cpu_count() or 1, n_states // STATES_PER_THREAD))
        args = (*self.packed, code)
        tail = (n_threads, q, u, x, f_ext, out, status)
        if n_threads == 1:
            kernels.batch(*args, 0, *tail)
        else:
            for job in [_threads().submit(kernels.batch, *args, t, *tail)
                        for t in range(n_threads)]:
                job.result()
        bad = np.flatnonzero(status >= 0)
        if bad.size:
            b = int(bad[0])
            raise type(err := self._singular(op, int(status[b])))(f"batch item {b}: {err}")
        return out.reshape(n_states, nu, nu) if op == "mass" else out

    def _singular(self, method: str, body: int) -> SingularInertiaError:
        if method == "composite":
            return SingularInertiaError("mass matrix is singular or not positive definite "
                                        "(a degree of freedom without inertia?)")
        return SingularInertiaError(
            f"articulated inertia D of body {body} {self.model.names[body]!r} is singular or "
            "not positive definite (a degree of freedom without inertia, e.g. a massless body "
            "on its joint?)")
