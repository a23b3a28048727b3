"""Fixed-step integrators in :class:`scipy.integrate.OdeSolver` form, for
:func:`flexdyn.simulate` (``integrator=flexdyn.RK4(h)``) and :class:`flexdyn.Stepper`: the same
solver object advances both, so a stepper and a simulation with the same step take the same
steps to the last bit.

:class:`ClassicalRungeKutta` is the classical fourth-order Runge–Kutta method (Kutta 1901;
Hairer, Nørsett & Wanner, *Solving ODEs I*, Table II.1.2): ``k₁ = f(t, y)``,
``k₂ = f(t + h/2, y + h k₁/2)``,
``k₃ = f(t + h/2, y + h k₂/2)``, ``k₄ = f(t + h, y + h k₃)``,
``y₁ = y + h (k₁ + 2k₂ + 2k₃ + k₄)/6``; no error control.  Its dense output is the cubic
Hermite interpolant of ``y`` and ``f`` at both ends of the step (``f`` at the end is the next
step's ``k₁``: no extra evaluation; it is evaluated only when one of the two needs it).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.integrate import DenseOutput, OdeSolver

__all__ = ["ClassicalRungeKutta"]


class _HermiteOutput(DenseOutput):
    """Cubic Hermite interpolation of ``y`` on ``[t_old, t]`` from ``y`` and ``ẏ`` at both
    ends."""

    def __init__(self, t_old: float, t: float, y_old: np.ndarray, f_old: np.ndarray,
                 y: np.ndarray, f: np.ndarray):
        super().__init__(t_old, t)
        self.h = t - t_old
        self.y_old, self.f_old, self.y, self.f = y_old, f_old, y, f

    def _call_impl(self, t: np.ndarray) -> np.ndarray:
        s = (np.asarray(t) - self.t_old) / self.h
        h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
        h01, h11 = s**2 * (3 - 2 * s), s**2 * (s - 1)
        out = (np.multiply.outer(self.y_old, h00) + np.multiply.outer(self.h * self.f_old, h10)
               + np.multiply.outer(self.y, h01) + np.multiply.outer(self.h * self.f, h11))
        return out


class ClassicalRungeKutta(OdeSolver):
    """Classical Runge–Kutta with the fixed step ``h`` (module docstring).

    Parameters
    ----------
    fun, t0, y0, t_bound : as for :class:`scipy.integrate.OdeSolver`.
    h : the step (> 0, in the units of ``t``).  The run from ``t0`` to ``t_bound`` takes
        ``ceil((t_bound − t0)/h)`` equal steps of ``(t_bound − t0)/n`` (so it ends on
        ``t_bound``), the count rounded as :func:`flexdyn.simulate`'s generalized-α does.
    rtol, atol, max_step, … : accepted and ignored (no error control).
    """

    order = 4

    def __init__(self, fun: Callable, t0: float, y0: np.ndarray, t_bound: float, *,
                 h: float | None = None, vectorized: bool = False, **ignored: object):
        if h is None or not (isinstance(h, (int, float, np.floating)) and h > 0
                             and math.isfinite(h)):
            raise ValueError(f"integrator 'rk4' needs a positive finite step h (s), got {h!r}")
        super().__init__(fun, t0, y0, t_bound, vectorized, support_complex=True)
        span = abs(t_bound - t0)
        self.n_steps = max(1, math.ceil(span / h * (1.0 - 1e-12))) if span else 0
        self.h_fixed = (t_bound - t0) / self.n_steps if span else 0.0
        self.steps_taken = 0
        self.y_old: np.ndarray | None = None
        self.f_old: np.ndarray | None = None
        self._f: np.ndarray | None = None  # f(t, y), evaluated when first needed

    @property
    def f(self) -> np.ndarray:
        """``f(t, y)`` at the current point: the next step's ``k₁`` and the end slope of the
        last step's dense output, evaluated once, when first needed (a run that ends here,
        such as one macro step of :class:`flexdyn.Stepper`, never pays for it)."""
        if self._f is None:
            self._f = self.fun(self.t, self.y)
        return self._f

    def _step_impl(self) -> tuple[bool, str | None]:
        h, t, y, k1 = self.h_fixed, self.t, self.y, self.f
        k2 = self.fun(t + h / 2, y + h / 2 * k1)
        k3 = self.fun(t + h / 2, y + h / 2 * k2)
        t_new = (self.t_bound if self.steps_taken + 1 == self.n_steps
                 else t + h)  # the last step lands exactly on t_bound
        k4 = self.fun(t_new, y + h * k3)
        self.y_old, self.f_old = y, k1
        self.y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        self.t = t_new
        self.steps_taken += 1
        self._f = None
        return True, None

    def _dense_output_impl(self) -> DenseOutput:
        return _HermiteOutput(self.t_old, self.t, self.y_old, self.f_old, self.y, self.f)


def __getattr__(name: str) -> type:
    """``RK4``, the former name of :class:`ClassicalRungeKutta` (now that of its option object,
    :class:`flexdyn.RK4`), with a ``DeprecationWarning``."""
    if name != "RK4":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn("flexdyn.integrators.RK4 is deprecated; use "
                  "flexdyn.integrators.ClassicalRungeKutta (the same solver) or, for simulate, "
                  "the option object flexdyn.RK4(h)", DeprecationWarning, stacklevel=2)
    return ClassicalRungeKutta
