"""Time integration of flexdyn models and the resulting histories.

:func:`simulate` integrates ``M(q) u̇ + C(q, u) = τ`` together with the kinematic equation
``q̇ = Γ(q) u`` (``model.qdot``) on the state ``x = [q; u]`` (layout of ``model-format.md``;
see :func:`~flexdyn.chain.state_layout`), with the integrator of an option object
(:mod:`~flexdyn.simulation.options`: the compiled Radau IIA, Gauss–Legendre and
generalized-α, classical RK4, the methods of :func:`scipy.integrate.solve_ivp`).  The package
has one module per part of a run:

* :mod:`~flexdyn.simulation.problem`: the problem, the state derivative with the applied
  loads, prescribed motion and loop closures, and the work integrals of the energy balance;
* :mod:`~flexdyn.simulation.options`: the integrators as option objects, one registry of
  them (:data:`~flexdyn.simulation.options.INTEGRATORS`) and the default's choice;
* :mod:`~flexdyn.simulation.run`: :func:`simulate`, the front door;
* :mod:`~flexdyn.simulation.loop`: the run loop of the ``OdeSolver`` integrators, samples,
  events, progress and failures, and the result;
* :mod:`~flexdyn.simulation.compiled`: the driver of the compiled integrators' time loop;
* :mod:`~flexdyn.simulation.stepper`: :class:`Stepper`, a model as a co-simulation component.

On the default ``backend="engine"`` each right-hand side is one call of the compiled state
derivative (:func:`flexdyn.engine.kernels.derivative_articulated`, or ``_composite``):
forward dynamics, ``q̇ = Γ(q) u`` and the energy-balance integrands below together; only
state-dependent forces ``tau(t, q, u)`` / ``f_ext(t, q, u)`` are evaluated in Python.  The
``"articulated-split"`` method and ``backend="reference"`` evaluate the same quantities
step by step.  The same derivative is a C function for simulators outside Python
(:mod:`flexdyn.engine.ccall`).

Quaternions
-----------
The quaternions of ``spherical`` and ``free`` joints are integrated as plain coordinates,
but every right-hand-side evaluation first scales them to unit length, so the dynamics and
``q̇`` always see a rotation and a drift of the integrated norm never feeds back into the
solution.  The stored output ``SimulationResult.q`` is normalised the same way.

Energy balance
--------------
The work of the applied forces is integrated with the motion: the ODE state is augmented
with ``W_τ = ∫ sat(τ)·u dt`` (``τ`` within the joints' torque limits), the work of the
external wrenches ``W_ext = ∫ Σ f_ext(i)·V(i) dt`` and the energy dissipated by modal
damping and the joint dampers, friction and limits, ``D = ∫ (Σ η̇ᵀ C η̇ + D_J) dt``
(:mod:`flexdyn.joint_forces`), so these integrals are as accurate as the state itself.
:attr:`~flexdyn.results.SimulationResult.energy_balance_error` is the percentage
energy-balance error of Damaren & Sharf (1995), Eq 30,
``e_E(t) = 100 (E(t) − E(0) − W(t) + D(t)) / |E_peak|`` with ``W = W_τ + W_ext`` and
``E_peak`` the largest ``|E|`` over the run (energies of the simulated body model, see
``SimulationResult.energy_fidelity``), and
:attr:`~flexdyn.results.SimulationResult.energy_balance_rms` its RMS over the samples (Eq 32;
sample on a uniform grid, e.g. ``t_eval=np.linspace(t0, t1, 1000)``, to match the paper).

Closed chains
-------------
For a model with loop closures (``model.constraints``) each right-hand side adds the
closure forces to the tree's accelerations (Jain & Rodriguez Sec VIII; on the engine one
compiled call, :func:`flexdyn.engine.closure.closed_derivative`, else
:func:`flexdyn.dynamics.closed_chain`) with Baumgarte's stabilization
``g̈ + 2ω ġ + ω² g = 0`` (critically damped, ``ω = closure_rate``): any drift of the
closures decays at the rate ``ω`` instead of growing.  Its terms vanish on the closure
manifold, it works with every integrator (with dense output, events and implicit methods
alike, which a projection of the state after each step would not: scipy's solvers keep
derivative histories that a projected state would contradict) and it costs nothing beyond
the closure terms already computed.  The result reports the residuals ``g`` at every
sample (``closure_drift``) and the closure forces (``constraint_forces``).  The initial
state must satisfy the closures
(:func:`flexdyn.assemble` makes it so); ``simulate`` says by how much it does not.
"""

from __future__ import annotations

from .loop import StiffnessWarning
from .options import (
    DEFAULT_TOLERANCES,
    INTEGRATORS,
    RK4,
    Auto,
    GaussLegendre,
    GeneralizedAlpha,
    Integrator,
    RadauIIA,
    ScipyIVP,
    auto_integrator,
)
from .problem import PrescribedMotion, pack_state, rhs, unpack_state
from .run import simulate
from .stepper import Stepper

__all__ = ["DEFAULT_TOLERANCES", "INTEGRATORS", "RK4", "Auto", "GaussLegendre",
           "GeneralizedAlpha", "Integrator", "PrescribedMotion", "RadauIIA", "ScipyIVP",
           "Stepper", "StiffnessWarning", "auto_integrator", "pack_state", "rhs", "simulate",
           "unpack_state"]
