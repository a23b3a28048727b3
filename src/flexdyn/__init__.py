"""flexdyn — recursive spatial-operator dynamics of flexible multibody systems.

Implements the algorithms of Jain & Rodriguez (1992) for chains and trees of rigid and
flexible (assumed-mode, lumped-mass finite-element) bodies: Newton–Euler inverse dynamics,
composite-body mass matrix and forward dynamics, the innovations factorization and the
articulated-body O(N) forward dynamics, with a full (energy-conserving) and a ruthlessly
linearized body model.  See ``docs/architecture.md`` for the layers of the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any

from .startup import uncollected

__version__ = "0.1.0"

__all__ = [
    "Auto",
    "ClosureError",
    "DEFAULT_FIDELITY",
    "Dynamics",
    "EnsembleResult",
    "Equilibrium",
    "FIDELITIES",
    "ForwardDynamicsDerivatives",
    "GaussLegendre",
    "GeneralizedAlpha",
    "InverseDynamicsDerivatives",
    "Linearization",
    "ModalAnalysis",
    "Model",
    "ModelBuilder",
    "PositionTerms",
    "RK4",
    "RadauIIA",
    "ScipyIVP",
    "SimulationError",
    "SimulationResult",
    "StateEntry",
    "Stepper",
    "StiffnessWarning",
    "TimeFunction",
    "VelocityTerms",
    "assemble",
    "bias_forces",
    "bind",
    "closure_residuals",
    "compute_kinematics",
    "compute_velocities",
    "constraint_forces",
    "coriolis_matrix",
    "equilibrium",
    "export_c",
    "forward_dynamics",
    "forward_dynamics_derivatives",
    "frame_jacobian",
    "frame_pose",
    "hybrid_dynamics",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "jacobian_rate_product",
    "joint_wrenches",
    "kinetic_energy",
    "linearize",
    "load_model",
    "load_urdf",
    "mass_matrix",
    "mass_matrix_inverse",
    "max_stable_step",
    "modal_analysis",
    "models",
    "momentum",
    "of_time",
    "pack_state",
    "potential_energy",
    "rhs",
    "save_model",
    "simulate",
    "simulate_many",
    "speeds",
    "state_layout",
    "tangent_stiffness",
    "total_energy",
    "unpack_state",
    "urdf",
]

#: the module that defines each name of :data:`__all__`, imported on first use (PEP 562):
#: ``import flexdyn`` itself imports nothing heavy
_EXPORTS = {
    "Model": "chain",
    "ModelBuilder": "chain",
    "StateEntry": "chain",
    "load_model": "chain",
    "load_urdf": "chain",
    "save_model": "chain",
    "state_layout": "chain",
    "ClosureError": "closure",
    "Equilibrium": "control",
    "Linearization": "control",
    "equilibrium": "control",
    "linearize": "control",
    "max_stable_step": "control",
    "Dynamics": "dynamics",
    "assemble": "dynamics",
    "bias_forces": "dynamics",
    "bind": "dynamics",
    "closure_residuals": "dynamics",
    "constraint_forces": "dynamics",
    "coriolis_matrix": "dynamics",
    "ForwardDynamicsDerivatives": "dynamics",
    "InverseDynamicsDerivatives": "dynamics",
    "forward_dynamics": "dynamics",
    "forward_dynamics_derivatives": "dynamics",
    "hybrid_dynamics": "dynamics",
    "inverse_dynamics": "dynamics",
    "inverse_dynamics_derivatives": "dynamics",
    "joint_wrenches": "dynamics",
    "mass_matrix": "dynamics",
    "mass_matrix_inverse": "dynamics",
    "kinetic_energy": "energy",
    "momentum": "energy",
    "potential_energy": "energy",
    "total_energy": "energy",
    "EnsembleResult": "ensemble",
    "export_c": "export",
    "simulate_many": "ensemble",
    "frame_jacobian": "jacobians",
    "frame_pose": "jacobians",
    "jacobian_rate_product": "jacobians",
    "TimeFunction": "loads",
    "of_time": "loads",
    "ModalAnalysis": "modal",
    "modal_analysis": "modal",
    "tangent_stiffness": "modal",
    "SimulationError": "results",
    "SimulationResult": "results",
    "RK4": "simulation",
    "Auto": "simulation",
    "GaussLegendre": "simulation",
    "GeneralizedAlpha": "simulation",
    "RadauIIA": "simulation",
    "ScipyIVP": "simulation",
    "Stepper": "simulation",
    "StiffnessWarning": "simulation",
    "pack_state": "simulation",
    "rhs": "simulation",
    "simulate": "simulation",
    "unpack_state": "simulation",
    "DEFAULT_FIDELITY": "terms",
    "FIDELITIES": "terms",
    "PositionTerms": "terms",
    "VelocityTerms": "terms",
    "compute_kinematics": "terms",
    "compute_velocities": "terms",
}
#: the subpackages and modules that are attributes of the package
_SUBMODULES = ('models', 'speeds', 'urdf')


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__` from its module (:data:`_EXPORTS`), or a module of the
    package (``flexdyn.beam``, ``flexdyn.engine``, …), imported on first use and kept; else
    the deprecated former names (:data:`flexdyn.terms.FORMER_NAMES`)."""
    module = _EXPORTS.get(name)
    if module is not None:
        with uncollected():
            value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        with uncollected():
            return importlib.import_module(f".{name}", __name__)
    from .terms import former_name

    return former_name(__name__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


class _FormerModule(types.ModuleType):
    """``flexdyn.simulate``, the former module of :mod:`flexdyn.simulation`: its names, each
    with a ``DeprecationWarning`` naming the new place (``from flexdyn.simulate import X``
    keeps working; ``flexdyn.simulate`` itself is the function)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(importlib.import_module(".simulation", __name__), name)
        warnings.warn(f"flexdyn.simulate.{name} is deprecated; use flexdyn.simulation.{name}",
                      DeprecationWarning, stacklevel=2)
        return value


sys.modules.setdefault(f"{__name__}.simulate", _FormerModule(f"{__name__}.simulate"))

if TYPE_CHECKING:  # the names as static analysis (type checkers, editors) sees them
    from . import models, speeds, urdf
    from .chain import (
        Model,
        ModelBuilder,
        StateEntry,
        load_model,
        load_urdf,
        save_model,
        state_layout,
    )
    from .closure import ClosureError
    from .control import Equilibrium, Linearization, equilibrium, linearize, max_stable_step
    from .dynamics import (
        Dynamics,
        ForwardDynamicsDerivatives,
        InverseDynamicsDerivatives,
        assemble,
        bias_forces,
        bind,
        closure_residuals,
        constraint_forces,
        coriolis_matrix,
        forward_dynamics,
        forward_dynamics_derivatives,
        hybrid_dynamics,
        inverse_dynamics,
        inverse_dynamics_derivatives,
        joint_wrenches,
        mass_matrix,
        mass_matrix_inverse,
    )
    from .energy import kinetic_energy, momentum, potential_energy, total_energy
    from .ensemble import EnsembleResult, simulate_many
    from .export import export_c
    from .jacobians import frame_jacobian, frame_pose, jacobian_rate_product
    from .loads import TimeFunction, of_time
    from .modal import ModalAnalysis, modal_analysis, tangent_stiffness
    from .results import SimulationError, SimulationResult
    from .simulation import (
        RK4,
        Auto,
        GaussLegendre,
        GeneralizedAlpha,
        RadauIIA,
        ScipyIVP,
        Stepper,
        StiffnessWarning,
        pack_state,
        rhs,
        simulate,
        unpack_state,
    )
    from .terms import (
        DEFAULT_FIDELITY,
        FIDELITIES,
        PositionTerms,
        VelocityTerms,
        compute_kinematics,
        compute_velocities,
    )
