"""Kinetic and potential energy of a model state (used for conservation checks)."""

from __future__ import annotations

import numpy as np

from .chain import Model
from .dynamics import batched
from .terms import PositionTerms, modal_velocities, state_terms

__all__ = ["energies", "kinetic_energy", "momentum", "potential_energy", "total_energy"]


def _kinetic(model: Model, kin: PositionTerms, u: np.ndarray) -> float:
    """``½ Σ_i V_m(i)ᵀ M_m(i) V_m(i)`` with the twists of Eq 11."""
    V_m = modal_velocities(model, kin, u)
    return 0.5 * sum(v @ M @ v for v, M in zip(V_m, kin.M_m, strict=True))


def _potential(model: Model, kin: PositionTerms) -> float:
    """``½ Σ ηᵀ K η − Σ m g·x`` over rigid centres of mass and nodes."""
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


@batched("u")
def kinetic_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full") -> float:
    """``T = ½ Σ_i V_m(i)ᵀ M_m(i) V_m(i) = ½ uᵀ M u`` (J)."""
    q, u = model.check_state(q, u)
    return _kinetic(model, state_terms(model, q, None, fidelity)[0], u)


@batched()
def potential_energy(model: Model, q: np.ndarray, fidelity: str = "full") -> float:
    """Elastic ``½ Σ ηᵀ K η`` plus gravitational ``−Σ m g·x`` energy (J).

    The mass points are the rigid centres of mass and the nodes, at their deformed
    positions for ``"full"`` and undeformed ones for ``"ruthless"``.
    """
    q, _ = model.check_state(q)
    return _potential(model, state_terms(model, q, None, fidelity)[0])


@batched("u")
def total_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full") -> float:
    """``T + V`` (J)."""
    return kinetic_energy(model, q, u, fidelity) + potential_energy(model, q, fidelity)


@batched("u")
def momentum(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full") -> np.ndarray:
    """Total spatial momentum ``[h; p]`` (6,) in inertial coordinates.

    ``h`` is the angular momentum about the inertial origin (N m s) and ``p`` the linear
    momentum (N s).  Body ``i`` contributes the rigid rows of ``M_m(i) V_m(i)`` — its
    momentum about the origin of ``F_i`` in ``F_i`` coordinates, rigid part and nodes —
    moved to the inertial frame with ``φ(0, F_i)``.  With no external forces and no gravity
    it is conserved.
    """
    q, u = model.check_state(q, u)
    kin = state_terms(model, q, None, fidelity)[0]
    V_m = modal_velocities(model, kin, u)
    out = np.zeros(6, dtype=np.result_type(V_m[0] if model.n_bodies else 0.0, float))
    for i in range(model.n_bodies):
        m = int(model.n_modes[i])
        out = out + kin.pose[i].force_to_parent((kin.M_m[i] @ V_m[i])[m:])
    return out


@batched("u")
def energies(model: Model, q: np.ndarray, u: np.ndarray,
             fidelity: str = "full") -> tuple[float, float]:
    """``(T, V)``: :func:`kinetic_energy` and :func:`potential_energy` from one evaluation of
    the kinematics (J) — cheaper than calling both, e.g. along a trajectory."""
    q, u = model.check_state(q, u)
    kin = state_terms(model, q, None, fidelity)[0]
    return _kinetic(model, kin, u), _potential(model, kin)
