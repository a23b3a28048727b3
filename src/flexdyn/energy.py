"""Kinetic and potential energy of a model state (used for conservation checks)."""

from __future__ import annotations

import numpy as np

from .chain import Model, compute_kinematics, compute_velocities

__all__ = ["kinetic_energy", "potential_energy", "total_energy"]


def kinetic_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full") -> float:
    """``T = ½ Σ_i V_m(i)ᵀ M_m(i) V_m(i) = ½ uᵀ M u`` (J)."""
    kin = compute_kinematics(model, q, fidelity)
    vel = compute_velocities(model, kin, u)
    return 0.5 * sum(v @ M @ v for v, M in zip(vel.V_m, kin.M_m, strict=True))


def potential_energy(model: Model, q: np.ndarray, fidelity: str = "full") -> float:
    """Elastic ``½ Σ ηᵀ K η`` plus gravitational ``−Σ m g·x`` energy (J).

    The mass points are the rigid centres of mass and the nodes, at their deformed
    positions for ``"full"`` and undeformed ones for ``"ruthless"``.
    """
    kin = compute_kinematics(model, q, fidelity)
    V = 0.0
    g = model.gravity
    for i, body in enumerate(model.bodies):
        eta = kin.eta[i]
        V = V + 0.5 * (eta @ body.K @ eta)
        pose = kin.pose[i]
        if body.mass:
            V = V - body.mass * (g @ pose.apply(body.com))
        if body.n_nodes:
            V = V - body.node_masses @ (pose.apply(kin.frames[i].p) @ g)
    return V


def total_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full") -> float:
    """``T + V`` (J)."""
    return kinetic_energy(model, q, u, fidelity) + potential_energy(model, q, fidelity)
