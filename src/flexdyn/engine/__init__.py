"""The compiled engine (numba): one packed model per (model, fidelity), joint kernels by
code, one body kernel per body model, generic sweeps (:mod:`flexdyn.engine.kernels`)."""

from __future__ import annotations

import numpy as np

from ..chain import Model
from ..linalg import SingularInertiaError
from ..terms import body_models
from . import kernels
from .pack import PackedModel, pack

__all__ = ["Engine"]


class Engine:
    """Compiled per-state dynamics of ``model`` for one fidelity (real ``float64`` inputs,
    validated by the caller).

    Methods mirror the reference algorithms: :meth:`terms`, :meth:`inverse_dynamics`,
    :meth:`mass_matrix`, :meth:`forward_dynamics` (``"articulated"``, Eq 58, or
    ``"composite"``, Eq 46)."""

    def __init__(self, model: Model, fidelity: str = "full"):
        self.model = model
        self.fidelity = fidelity
        self.packed: PackedModel = pack(model, body_models(model, fidelity))

    def terms(self, q: np.ndarray, u: np.ndarray, f_ext: np.ndarray | None = None):
        """``(pos, (V_m, a_m, bias))``: the position arrays and velocity terms."""
        pos = kernels.position_terms(self.packed, q)
        return pos, kernels.velocity_terms(self.packed, q, u, self._fext(f_ext), pos)

    def _fext(self, f_ext):
        return np.zeros((self.model.n_bodies, 6)) if f_ext is None else f_ext

    def inverse_dynamics(self, q, u, udot, f_ext=None) -> np.ndarray:
        pos, (_, am, bias) = self.terms(q, u, f_ext)
        return kernels.rnea(self.packed, pos, am, bias, udot, True)

    def mass_matrix(self, q) -> np.ndarray:
        return kernels.crba(self.packed, kernels.position_terms(self.packed, q), self.model.nu)

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "articulated"):
        pos, (_, am, bias) = self.terms(q, u, f_ext)
        if method == "composite":
            C = kernels.rnea(self.packed, pos, am, bias, np.zeros(self.model.nu), True)
            ok, udot = kernels.cholesky_solve(kernels.crba(self.packed, pos, self.model.nu),
                                              tau - C)
            if not ok:
                raise SingularInertiaError("mass matrix is singular or not positive definite "
                                           "(a degree of freedom without inertia?)")
            return udot
        status, udot = kernels.articulated_forward_dynamics(self.packed, pos, am, bias, tau)
        if status >= 0:
            raise SingularInertiaError(
                f"articulated inertia D of body {status} {self.model.names[status]!r} is "
                "singular or not positive definite (a degree of freedom without inertia, "
                "e.g. a massless body on its joint?)")
        return udot
