"""flexdyn — recursive spatial-operator dynamics of flexible multibody systems.

Implements the algorithms of Jain & Rodriguez (1992) for chains and trees of rigid and
flexible (assumed-mode, lumped-mass finite-element) bodies: Newton–Euler inverse dynamics,
composite-body mass matrix and forward dynamics, the innovations factorization and the
articulated-body O(N) forward dynamics, with a full (energy-conserving) and a ruthlessly
linearized body model.  See ``docs/architecture.md`` for the layers of the package.
"""

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
    assemble,
    bias_forces,
    bind,
    closure_residuals,
    constraint_forces,
    coriolis_matrix,
    forward_dynamics,
    hybrid_dynamics,
    inverse_dynamics,
    joint_wrenches,
    mass_matrix,
    mass_matrix_inverse,
)
from .energy import kinetic_energy, momentum, potential_energy, total_energy
from .ensemble import EnsembleResult, simulate_many
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
    former_name,
)

__version__ = "0.1.0"

__all__ = [
    "Auto",
    "ClosureError",
    "DEFAULT_FIDELITY",
    "Dynamics",
    "EnsembleResult",
    "Equilibrium",
    "FIDELITIES",
    "GaussLegendre",
    "GeneralizedAlpha",
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
    "forward_dynamics",
    "frame_jacobian",
    "frame_pose",
    "hybrid_dynamics",
    "inverse_dynamics",
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


def __getattr__(name: str) -> type:
    """The deprecated former names (:data:`flexdyn.terms.FORMER_NAMES`)."""
    return former_name(__name__, name)
