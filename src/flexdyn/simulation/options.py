"""The integrators of :func:`~flexdyn.simulation.simulate` as option objects.

An option object holds one integrator's settings, checked when it is made, and integrates a
:class:`~flexdyn.simulation.problem.Problem` (:meth:`Integrator.integrate`); ``simulate``
takes one (``integrator=flexdyn.RadauIIA(rtol=1e-8)``) or a name of :data:`INTEGRATORS`
(``integrator="radau-iia"`` is ``RadauIIA()``).  :class:`Auto`, the default, chooses one per
problem (:func:`auto_integrator`).  An integrator is one class here and its entry in
:data:`INTEGRATORS`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy

from ..chain import Model
from ..engine import galpha
from ..results import SimulationResult
from ..terms import DEFAULT_FIDELITY
from .compiled import integrate_compiled
from .loop import Events, integrate_scipy
from .problem import Problem, check_choice

__all__ = ["AUTO", "DEFAULT_TOLERANCES", "INTEGRATORS", "ITERATION_MATRICES", "LEGACY_OPTIONS",
           "RK4", "SCIPY_METHODS", "Auto", "CompiledIntegrator", "GaussLegendre",
           "GeneralizedAlpha", "Integrator", "RadauIIA", "ScipyIVP", "SolverIntegrator", "Span",
           "auto_integrator", "integrator_options"]

#: :func:`~flexdyn.simulation.simulate`'s default integrator: chosen per problem by
#: :func:`auto_integrator`
AUTO = "auto"
#: the default ``(rtol, atol)`` by error norm: in displacements (Radau IIA's
#: ``error_norm="displacement"``) the errors lie near the tolerance, in the state norm of
#: the scipy integrators and the other compiled ones orders of magnitude below it; ``atol``
#: is the floor of the coordinates near zero, the modal ones among them
#: (``docs/simulation-performance.md``)
DEFAULT_TOLERANCES = {"state": (1e-8, 1e-10), "displacement": (1e-6, 1e-7)}
#: the methods of :func:`scipy.integrate.solve_ivp` by name
SCIPY_METHODS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
#: the iteration matrices of the compiled integrators (:class:`CompiledIntegrator`)
ITERATION_MATRICES = ("modal", "exact")
#: the keywords of ``simulate`` that are options of an integrator (deprecated there)
LEGACY_OPTIONS = ("rtol", "atol", "h", "rho_inf", "newton_tol", "error_norm")


class Span(NamedTuple):
    """What an integrator integrates a problem over: the initial state ``q0`` (nq,), ``u0``
    (nu,) at ``t0``, the end ``t1`` (s), the output times ``t_eval`` (or None: every step),
    ``max_step`` (s), ``progress`` (a progress bar), the watched ``events`` (or None) and
    the loads ``tau``, ``f_ext`` as ``simulate`` took them."""

    q0: np.ndarray
    u0: np.ndarray
    t0: float
    t1: float
    t_eval: np.ndarray | None
    max_step: float
    progress: bool
    events: Events | None
    tau: Any
    f_ext: Any


def _number(value: Any, name: str, low: float = 0.0, high: float = math.inf,
            closed: bool = False) -> float:
    """``value`` as a float in ``(low, high)`` (``[low, high]`` if ``closed``); ``ValueError``
    naming the option ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    inside = low <= value <= high if closed else low < value < high
    if not (math.isfinite(value) and inside):
        bounds = ("be a positive number" if (low, high, closed) == _POSITIVE else
                  f"lie in [{low:g}, {high:g}]" if closed else f"lie in ({low:g}, {high:g})")
        raise ValueError(f"{name} must {bounds}, got {value!r}")
    return float(value)


def _checked(options: Any, **bounds: tuple[float, float, bool]) -> None:
    """Check (and store as floats) the options of a frozen dataclass that are not None, each
    against its ``(low, high, closed)`` bounds."""
    for name, (low, high, closed) in bounds.items():
        value = getattr(options, name)
        if value is not None:
            object.__setattr__(options, name, _number(value, name, low, high, closed))


_POSITIVE = (0.0, math.inf, False)
_TOLERANCES = {"rtol": _POSITIVE, "atol": _POSITIVE}


@dataclass(frozen=True)
class Integrator:
    """An integrator's options (the subclasses' fields) and its run of a problem."""

    #: its name in :data:`INTEGRATORS` (and in ``SimulationResult.settings["integrator"]``)
    name: ClassVar[str]

    @property
    def label(self) -> str:
        """The name recorded in the result's settings."""
        return self.name

    def tolerances(self) -> tuple[float, float]:
        """``(rtol, atol)``: the options given, else :data:`DEFAULT_TOLERANCES` of the error
        norm."""
        norm = "displacement" if getattr(self, "error_norm", None) == "displacement" else "state"
        rtol0, atol0 = DEFAULT_TOLERANCES[norm]
        rtol, atol = getattr(self, "rtol", None), getattr(self, "atol", None)
        return rtol0 if rtol is None else rtol, atol0 if atol is None else atol

    def settings(self) -> dict[str, Any]:
        """The options as ``SimulationResult.settings`` records them (tolerances resolved;
        None for an option the integrator does not have)."""
        rtol, atol = self.tolerances()
        out = {"integrator": self.label, "rtol": rtol, "atol": atol, "h": None,
               "rho_inf": None, "newton_tol": None, "error_norm": None, "iteration_matrix": None}
        out.update({f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                    if f.name in out and f.name not in _TOLERANCES})
        return out

    def check(self, model: Model, *, backend: str, prescribed: Any, f_nodes: Any,
              fidelity: str = DEFAULT_FIDELITY) -> None:
        """``ValueError`` if the integrator cannot integrate this problem (none here)."""

    def integrate(self, ode: Problem, span: Span) -> SimulationResult:
        """Integrate ``ode`` over ``span``."""
        raise NotImplementedError


@dataclass(frozen=True)
class SolverIntegrator(Integrator):
    """An integrator in :class:`scipy.integrate.OdeSolver` form, stepped by the run loop
    (:func:`flexdyn.simulation.loop.integrate_scipy`)."""

    def solver(self) -> tuple[type, dict[str, Any]]:
        """The ``OdeSolver`` subclass and its options besides ``rtol``, ``atol``."""
        raise NotImplementedError

    @property
    def advise(self) -> bool:
        """Whether a run ends with the stiffness advice of
        :func:`~flexdyn.simulation.loop.warn_if_stiff`."""
        return False

    def integrate(self, ode: Problem, span: Span) -> SimulationResult:
        solver, options = self.solver()
        return integrate_scipy(ode, solver, options, span.q0, span.u0, span.t0, span.t1,
                               span.t_eval, span.max_step, span.progress, span.events,
                               *self.tolerances(), advise=self.advise)


@dataclass(frozen=True)
class ScipyIVP(SolverIntegrator):
    """An integrator of :func:`scipy.integrate.solve_ivp`: ``method`` a name of
    :data:`SCIPY_METHODS` (default ``"DOP853"``, the explicit eighth-order Runge–Kutta) or an
    :class:`scipy.integrate.OdeSolver` subclass, with the tolerances ``rtol``, ``atol``
    (default: :data:`DEFAULT_TOLERANCES` ``["state"]``).  The implicit methods get the
    Jacobian of the loop (:func:`flexdyn.simulation.loop.integrate_scipy`); a named explicit
    method whose steps were held by the stiffest mode's stability gets a
    :class:`~flexdyn.simulation.StiffnessWarning`."""

    method: str | type = "DOP853"
    rtol: float | None = None
    atol: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.method, str):
            check_choice(self.method, SCIPY_METHODS, "scipy method")
        elif not (isinstance(self.method, type)
                  and issubclass(self.method, scipy.integrate.OdeSolver)):
            raise ValueError(f"method must be one of {SCIPY_METHODS} or a "
                             f"scipy.integrate.OdeSolver subclass, got {self.method!r}")
        _checked(self, **_TOLERANCES)

    @property
    def label(self) -> str:
        return self.method if isinstance(self.method, str) else self.method.__name__

    @property
    def advise(self) -> bool:
        return isinstance(self.method, str)

    def solver(self) -> tuple[type, dict[str, Any]]:
        return (getattr(scipy.integrate, self.method) if isinstance(self.method, str)
                else self.method), {}


@dataclass(frozen=True)
class RK4(SolverIntegrator):
    """The classical fourth-order Runge–Kutta method with the fixed step ``h`` (s, required;
    the span is cut into ``ceil((t1 − t0)/h)`` equal steps; no error control):
    :class:`flexdyn.integrators.ClassicalRungeKutta`, the integrator of
    :class:`~flexdyn.simulation.Stepper`."""

    h: float | None = None
    name: ClassVar[str] = "rk4"

    def __post_init__(self) -> None:
        if self.h is None:
            raise ValueError(f"integrator={self.name!r} needs the step h (s)")
        _checked(self, h=_POSITIVE)

    def solver(self) -> tuple[type, dict[str, Any]]:
        from ..integrators import ClassicalRungeKutta  # an OdeSolver: scipy.integrate

        return ClassicalRungeKutta, {"h": self.h}


@dataclass(frozen=True)
class CompiledIntegrator(Integrator):
    """A compiled integrator of :mod:`flexdyn.engine.galpha` (``scheme`` its code): the
    time loop of :func:`flexdyn.simulation.compiled.integrate_compiled`, for models whose
    coordinates are their own rates, on the engine, with their loop closures.

    ``iteration_matrix`` (keyword only), the matrix of the Newton iteration:
    ``"modal"`` (the default), ``M + γ′ C + β′ K`` with the modal stiffness and damping,
    the joint springs and dampers and the geometric stiffness's tangent; or ``"exact"``,
    ``M + γ′ ∂r/∂q̇ + β′ ∂r/∂q`` from the compiled derivatives of inverse dynamics
    (:func:`flexdyn.inverse_dynamics_derivatives`), which holds the velocity products and
    gravity too: fewer Newton iterations where those matter (fast rotation, large steps),
    for a matrix about eight forward dynamics dearer to form and an LU factor
    (``docs/simulation-performance.md``; trees only, its first use compiles the
    derivatives)."""

    #: the scheme's code in :data:`flexdyn.engine.galpha.SCHEMES`
    scheme: ClassVar[int]
    iteration_matrix: str = dataclasses.field(default="modal", kw_only=True)

    def __post_init__(self) -> None:
        check_choice(self.iteration_matrix, ITERATION_MATRICES, "iteration_matrix")

    def check(self, model: Model, *, backend: str, prescribed: Any, f_nodes: Any,
              fidelity: str = DEFAULT_FIDELITY) -> None:
        if backend != "engine":
            raise ValueError(f"integrator={self.name!r} runs on backend='engine' only")
        self.check_model(model)

    def check_model(self, model: Model) -> None:
        """``ValueError`` naming the joints of ``model`` whose coordinates are neither their
        own rates nor a quaternion joint's (whose local coordinates the integrators take:
        :mod:`flexdyn.engine.galpha`): the quasi-velocities of the Euler-angle joints and
        joint maps with other speeds."""
        joints = [model.names[i] for i, j in enumerate(model.joints)
                  if not (j.rates or j.quaternion)]
        if joints:
            raise ValueError(f"integrator={self.name!r} integrates models whose coordinates "
                             "are their own rates (q̇ = u) or quaternion joints; the joints of "
                             f"{joints} are neither (quasi-velocities; use a scipy integrator, "
                             "e.g. 'DOP853' or 'Radau')")
        if self.iteration_matrix == "exact" and model.constraints:
            raise ValueError(
                f"integrator={self.name!r} with iteration_matrix='exact' integrates trees; "
                f"model {model.name!r} has loop closures "
                f"({', '.join(c.name for c in model.constraints)}): use "
                "iteration_matrix='modal'")

    def loop_options(self) -> dict[str, Any]:
        """The options of :class:`~flexdyn.simulation.compiled.CompiledLoop`."""
        return {"h": getattr(self, "h", None), "rho_inf": getattr(self, "rho_inf", 0.9),
                "newton_tol": getattr(self, "newton_tol", None),
                "error_norm": galpha.ERROR_NORMS[getattr(self, "error_norm", "state")],
                "scheme": self.scheme,
                "iteration_matrix": self.iteration_matrix}

    def integrate(self, ode: Problem, span: Span) -> SimulationResult:
        return integrate_compiled(ode, span.q0, span.u0, span.t0, span.t1, span.tau,
                                  span.f_ext, *self.tolerances(), span.t_eval, span.max_step,
                                  span.progress, events=span.events, **self.loop_options())


_NEWTON_TOL = {"newton_tol": (0.0, 1.0, False)}


@dataclass(frozen=True)
class RadauIIA(CompiledIntegrator):
    """The compiled three-stage Radau IIA collocation: fifth order, L-stable (unresolved
    stiff modes are damped), the method, error estimate and step control of scipy's
    ``"Radau"``; adaptive steps at ``rtol``, ``atol`` (and at most ``simulate``'s
    ``max_step``), or the fixed step ``h`` (s).  ``error_norm``: ``"state"`` (scipy's) or
    ``"displacement"`` (speeds measured by the displacement they make over a step, against
    ``atol + rtol |q|`` for elastic coordinates and against the joint's own displacement
    over the step, ``atol + rtol h |u|``, for joint coordinates; the choice of
    :class:`Auto`, with :data:`DEFAULT_TOLERANCES` ``["displacement"]``).
    ``newton_tol``: the Newton iteration stops when its estimated distance to the solution,
    in the stage states measured in the error norm, is below it (default
    ``min(0.03, √rtol)``, RADAU5's)."""

    rtol: float | None = None
    atol: float | None = None
    h: float | None = None
    newton_tol: float | None = None
    error_norm: str = "state"
    name: ClassVar[str] = "radau-iia"
    scheme: ClassVar[int] = galpha.RADAU_IIA

    def __post_init__(self) -> None:
        super().__post_init__()
        _checked(self, **_TOLERANCES, h=_POSITIVE, **_NEWTON_TOL)
        check_choice(self.error_norm, tuple(galpha.ERROR_NORMS), "error_norm")


@dataclass(frozen=True)
class GaussLegendre(CompiledIntegrator):
    """The compiled two-stage Gauss–Legendre collocation: fourth order, A-stable, no
    numerical damping, with the fixed step ``h`` (s, required).  ``newton_tol``: the Newton
    iteration stops when its correction of the accelerations is at most
    ``newton_tol · max(1, max|u̇|)`` (default 1e-6)."""

    h: float | None = None
    newton_tol: float | None = None
    name: ClassVar[str] = "gauss-legendre"
    scheme: ClassVar[int] = galpha.GAUSS_LEGENDRE

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.h is None:
            raise ValueError(f"integrator={self.name!r} takes fixed steps: give h (s)")
        _checked(self, h=_POSITIVE, **_NEWTON_TOL)


@dataclass(frozen=True)
class GeneralizedAlpha(CompiledIntegrator):
    """The compiled generalized-α method (Chung & Hulbert 1993 in Arnold & Brüls' form):
    second order, with the spectral radius ``rho_inf`` ∈ [0, 1] at infinite ``ω h``
    (default 0.9, as Exudyn's; 1: no numerical damping); the fixed step ``h`` (s) or, with
    ``h`` None, adaptive steps holding its local error estimate of ``q`` to
    ``atol + rtol |q|`` (1e-6 … 1e-4 are its range).  ``newton_tol`` as for
    :class:`GaussLegendre`."""

    h: float | None = None
    rho_inf: float = 0.9
    rtol: float | None = None
    atol: float | None = None
    newton_tol: float | None = None
    name: ClassVar[str] = "generalized-alpha"
    scheme: ClassVar[int] = galpha.GENERALIZED_ALPHA

    def __post_init__(self) -> None:
        super().__post_init__()
        _checked(self, **_TOLERANCES, h=_POSITIVE, rho_inf=(0.0, 1.0, True), **_NEWTON_TOL)


@dataclass(frozen=True)
class Auto:
    """``simulate``'s default: the integrator :func:`auto_integrator` chooses for the
    problem, with the tolerances ``rtol``, ``atol`` (default: those of the choice)."""

    rtol: float | None = None
    atol: float | None = None
    name: ClassVar[str] = AUTO

    def __post_init__(self) -> None:
        _checked(self, **_TOLERANCES)

    def choose(self, model: Model, *, backend: str, method: str, f_nodes: Any,
               fidelity: str = DEFAULT_FIDELITY) -> Integrator:
        """The option object of :func:`auto_integrator`'s choice."""
        name, error_norm = auto_integrator(model, backend=backend, method=method,
                                           f_nodes=f_nodes, fidelity=fidelity)
        if name == RadauIIA.name:
            return RadauIIA(rtol=self.rtol, atol=self.atol, error_norm=error_norm)
        return ScipyIVP(name, rtol=self.rtol, atol=self.atol)


_COMPILED = (RadauIIA, GaussLegendre, GeneralizedAlpha)
_COMPILED_NAMES = tuple(c.name for c in _COMPILED)
#: the integrators by name: ``simulate(..., integrator=name)`` runs ``INTEGRATORS[name]()``
INTEGRATORS: dict[str, Callable[..., Integrator | Auto]] = {
    AUTO: Auto, **{c.name: c for c in _COMPILED}, RK4.name: RK4,
    **{method: functools.partial(ScipyIVP, method) for method in SCIPY_METHODS}}


def integrator_options(integrator: str | type | Integrator | Auto,
                       **legacy: Any) -> Integrator | Auto:
    """The option object of ``simulate``'s ``integrator``: the object given, the one of a
    name of :data:`INTEGRATORS`, or :class:`ScipyIVP` of an ``OdeSolver`` subclass.  The
    deprecated keywords ``legacy`` (:data:`LEGACY_OPTIONS`; None: not given) become its
    options, with a ``DeprecationWarning`` naming the object to pass instead; ``ValueError``
    for a keyword the integrator does not take, or for any beside an object."""
    given = {k: v for k, v in legacy.items() if v is not None}
    if isinstance(integrator, (Integrator, Auto)):
        if given:
            raise ValueError(f"{', '.join(given)}: give them to the integrator object "
                             f"({type(integrator).__name__}(...)), not to simulate")
        return integrator
    if isinstance(integrator, type) and issubclass(integrator, scipy.integrate.OdeSolver):
        make: Callable[..., Integrator | Auto] = functools.partial(ScipyIVP, integrator)
    elif isinstance(integrator, str) and integrator in INTEGRATORS:
        make = INTEGRATORS[integrator]
    else:
        raise ValueError(f"unknown integrator {integrator!r}; expected one of "
                         f"{tuple(INTEGRATORS)}, an option object (flexdyn.RadauIIA(), …) or "
                         "a scipy.integrate.OdeSolver subclass")
    cls = make.func if isinstance(make, functools.partial) else make
    if cls is Auto and set(given) - set(_TOLERANCES):
        chosen = [k for k in given if k not in _TOLERANCES]
        raise ValueError(f"{', '.join(chosen)}: options of a chosen integrator; with "
                         f"integrator='auto' name it (e.g. integrator={RadauIIA.name!r})")
    names = {f.name for f in dataclasses.fields(cls)} - {"method"}
    unknown = [k for k in given if k not in names and k not in _TOLERANCES]
    if unknown:
        takes = f"flexdyn.{cls.__name__} takes {', '.join(sorted(names))}"
        if not issubclass(cls, CompiledIntegrator):
            raise ValueError(f"{', '.join(unknown)}: options of the compiled integrators "
                             f"{_COMPILED_NAMES}, not of {integrator!r} ({takes})")
        owner = next(c.name for c in _COMPILED if unknown[0] in
                     {f.name for f in dataclasses.fields(c)})
        raise ValueError(f"{unknown[0]}: an option of integrator={owner!r}, not of "
                         f"{integrator!r} ({takes})")
    kept = {k: v for k, v in given.items() if k in names}  # rtol, atol: ignored as before
    if given:
        method = [repr(integrator if isinstance(integrator, str) else integrator.__name__)
                  ] if cls is ScipyIVP else []
        arguments = ", ".join([*method, *(f"{k}={v.item() if isinstance(v, np.generic) else v!r}"
                                          for k, v in kept.items())])
        warnings.warn(f"simulate(..., {', '.join(f'{k}=…' for k in given)}) is deprecated: "
                      f"pass integrator=flexdyn.{cls.__name__}({arguments})",
                      DeprecationWarning, stacklevel=3)
    return make(**kept)


def auto_integrator(model: Model, *, backend: str = "engine", method: str = "articulated",
                    tau: Any = None, f_ext: Any = None,
                    prescribed: Mapping[str, Callable] | None = None,
                    f_nodes: Any = None, fidelity: str = DEFAULT_FIDELITY
                    ) -> tuple[str, str | None]:
    """The integrator and error norm that :func:`~flexdyn.simulation.simulate`'s
    ``integrator="auto"`` (:class:`Auto`) runs: ``("radau-iia", "displacement")`` or
    ``("DOP853", None)``.

    Radau IIA in displacements (:class:`RadauIIA`) where it integrates exactly the
    problem given and the problem is stiff:

    * the model has elastic coordinates (its modes make it stiff; a rigid model is not, and
      DOP853's eighth order serves it best);
    * its coordinates are their own rates (``q̇ = u``) or a quaternion joint's (``spherical``,
      ``free``: the integrators take local coordinates for them, :mod:`flexdyn.engine.galpha`),
      no quasi-velocity joint;
    * its loop closures, if any, at every fidelity: their forces and acceleration rows are
      solved in the Newton iteration (:class:`flexdyn.engine.galpha.Closures`);
    * ``backend="engine"`` and ``method="articulated"`` (the compiled integrators' forward
      dynamics).

    ``tau``, ``f_ext``, ``f_nodes`` and ``fidelity`` do not change the choice: the compiled
    integrators take every kind of load :func:`~flexdyn.simulation.simulate` takes (a state
    feedback ``tau(t, q, u)`` is linearized inside the Newton iteration and checked at each
    step's stage states, ``CompiledLoop.feedback_try``; so are node wrenches, which act in
    the moving node frames), prescribed motion and every body model; the arguments are
    accepted so that existing calls keep working.

    DOP853 otherwise.  At :data:`DEFAULT_TOLERANCES` the choice puts the tip of the 5-beam
    chain of ``docs/simulation-performance.md`` within 1e-6 m in a fraction of DOP853's
    time; being L-stable, it damps the modes that the tolerance does not resolve rather than
    following them."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a flexdyn Model, got {type(model).__name__}")
    radau = (int(np.sum(model.n_modes)) > 0
             and all(j.rates or j.quaternion for j in model.joints)
             and backend == "engine" and method == "articulated")
    return (RadauIIA.name, "displacement") if radau else ("DOP853", None)
