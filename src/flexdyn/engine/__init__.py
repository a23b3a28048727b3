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
        self._zero_wrenches = np.zeros((model.n_bodies, 6))

    def terms(self, q: np.ndarray, u: np.ndarray, f_ext: np.ndarray | None = None):
        """``(pos, (V_m, a_m, bias))``: the position arrays and velocity terms."""
        pos = kernels.position_terms(self.packed, q)
        return pos, kernels.velocity_terms(self.packed, q, u, self._fext(f_ext), pos)

    def _fext(self, f_ext):
        return self._zero_wrenches if f_ext is None else f_ext

    def inverse_dynamics(self, q, u, udot, f_ext=None) -> np.ndarray:
        """``τ`` (nu,), Eq 44."""
        return kernels.inverse(self.packed, q, u, udot, self._fext(f_ext))

    def mass_matrix(self, q) -> np.ndarray:
        """``M`` (nu × nu), Eqs 47/50."""
        return kernels.mass(self.packed, q, self.model.nu)

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "articulated"):
        """``u̇`` (nu,): ``"articulated"`` (Eqs 51/58) or ``"composite"`` (Eq 46)."""
        if method == "composite":
            ok, udot = kernels.forward_composite(self.packed, q, u, tau, self._fext(f_ext))
            if not ok:
                raise SingularInertiaError("mass matrix is singular or not positive definite "
                                           "(a degree of freedom without inertia?)")
            return udot
        status, udot = kernels.forward_articulated(self.packed, q, u, tau, self._fext(f_ext))
        if status >= 0:
            raise SingularInertiaError(
                f"articulated inertia D of body {status} {self.model.names[status]!r} is "
                "singular or not positive definite (a degree of freedom without inertia, "
                "e.g. a massless body on its joint?)")
        return udot
