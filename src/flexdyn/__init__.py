"""flexdyn — recursive spatial-operator dynamics of flexible multibody systems.

Implements the algorithms of Jain & Rodriguez (1992) for chains and trees of rigid and
flexible (assumed-mode, lumped-mass finite-element) bodies: Newton–Euler inverse dynamics,
composite-body mass matrix and forward dynamics, the innovations factorization and the
articulated-body O(N) forward dynamics, with a full (energy-conserving) and a ruthlessly
linearized body model.
"""

from .chain import (
    FIDELITIES,
    Kinematics,
    Model,
    ModelBuilder,
    Velocities,
    compute_kinematics,
    compute_velocities,
    load_model,
    save_model,
)
from .composite_body import forward_dynamics, mass_matrix
from .energy import kinetic_energy, potential_energy, total_energy
from .newton_euler import bias_forces, inverse_dynamics

__version__ = "0.1.0"

__all__ = [
    "FIDELITIES",
    "Kinematics",
    "Model",
    "ModelBuilder",
    "Velocities",
    "bias_forces",
    "compute_kinematics",
    "compute_velocities",
    "forward_dynamics",
    "inverse_dynamics",
    "kinetic_energy",
    "load_model",
    "mass_matrix",
    "potential_energy",
    "save_model",
    "total_energy",
]

from . import models  # noqa: E402
from .energy import momentum  # noqa: E402
from .simulate import (  # noqa: E402
    SimulationError,
    SimulationResult,
    pack_state,
    rhs,
    simulate,
    state_layout,
    unpack_state,
)

__all__ += [
    "SimulationError",
    "SimulationResult",
    "models",
    "momentum",
    "pack_state",
    "rhs",
    "simulate",
    "state_layout",
    "unpack_state",
]
