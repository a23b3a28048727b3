"""Loads given as functions of time alone.

:func:`flexdyn.simulate` takes the generalized forces ``tau`` and the external wrenches
``f_ext`` as constants or as callables ``f(t, q, u)``, which may feed back the state.  A load
that depends on ``t`` alone can say so: :func:`of_time` wraps ``f(t)`` in a
:class:`TimeFunction`, still callable as ``f(t, q, u)``.  The compiled integrators evaluate
loads at their stage times and at states predicted there: a function of time is exact there
and is held during the Newton iteration, while a state feedback is linearized inside it (its
Jacobians by differences) and checked again at each accepted step's stage states
(:meth:`flexdyn.simulation.compiled.CompiledLoop.feedback_try`).  Marking a load of time
saves that work; ``simulate``'s default integrator
(:func:`flexdyn.simulation.auto_integrator`) takes both implicitly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["TimeFunction", "of_time"]


class TimeFunction:
    """A load of time alone, ``f(t)``, callable as ``f(t, q, u)`` like every load callable of
    :func:`flexdyn.simulate` (``q`` and ``u`` are ignored).

    Parameters
    ----------
    f : callable ``f(t) -> array`` — ``t`` in s; the array has the shape of the load it
        gives (``tau``: (nu,) in N m or N; ``f_ext``: (n_bodies, 6)).

    Attributes set on it (e.g. ``rigid_inertia`` of :func:`flexdyn.models.spinup_torque`)
    are kept.
    """

    def __init__(self, f: Callable[[float], Any]) -> None:
        if not callable(f):
            raise TypeError(f"of_time needs a callable f(t), got {type(f).__name__}")
        self.f = f

    def __call__(self, t: float, q: Any = None, u: Any = None) -> Any:
        """``f(t)``."""
        return self.f(t)

    def __repr__(self) -> str:
        return f"of_time({self.f!r})"


def of_time(f: Callable[[float], Any]) -> TimeFunction:
    """``f(t)`` as a load of time alone (:class:`TimeFunction`; one already is returned as it
    is).  Usable as a decorator::

        @fd.of_time
        def tau(t):
            return np.array([5.0 * np.sin(2.0 * np.pi * t), 0.0])
    """
    return f if isinstance(f, TimeFunction) else TimeFunction(f)
