"""Kinetic and potential energy and momentum of a model state (conservation checks, the energy
bookkeeping of :class:`flexdyn.results.SimulationResult`).

Every function takes ``backend`` like the per-state functions of :mod:`flexdyn.dynamics`:
``"engine"`` (the default) evaluates all the quantities in one compiled call
(:meth:`flexdyn.engine.Engine.energy_momentum`, a row ``[T, V, h, p]``), ``"reference"`` the
numpy formulas below from the position terms; complex inputs run the reference.  A batch
``q`` (B, nq), ``u`` (B, nu) runs on the engine in one call (:func:`~flexdyn.dynamics.batched`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .chain import Model
from .dynamics import batch_op, batched, cached_engine, check_backend, on_engine
from .engine.extras import KINETIC, MOMENTUM, POTENTIAL
from .joint_forces import joint_potential
from .terms import DEFAULT_FIDELITY, PositionTerms, modal_velocities, state_terms

__all__ = ["energies", "kinetic_energy", "momentum", "potential_energy", "total_energy"]

#: the batch operation of the engine that evaluates them all
_ON_ENGINE = batch_op("energy_momentum")


def _kinetic(model: Model, kin: PositionTerms, u: np.ndarray) -> float:
    """``½ Σ_i V_m(i)ᵀ M_m(i) V_m(i)`` with the twists of Eq 11."""
    V_m = modal_velocities(model, kin, u)
    return 0.5 * sum(v @ M @ v for v, M in zip(V_m, kin.M_m, strict=True))


def _potential(model: Model, kin: PositionTerms) -> float:
    """The strain energies of the body models (``½ Σ ηᵀ K η``, with the geometric terms
    of the stiffened models) ``− Σ m g·x`` over rigid centres of mass and nodes, and over the
    consistent masses' centres (their mass and first moment from the translational blocks of
    :meth:`~flexdyn.body.InertiaInvariants.modal_mass`, as the engine reads them), plus the
    joint springs' and limits' :func:`~flexdyn.joint_forces.joint_potential`."""
    V = joint_potential(model, kin.q)
    g = model.gravity
    for i, body in enumerate(model.bodies):
        V = V + kin.body_models[i].strain_energy(kin.eta[i])
        pose = kin.pose[i]
        if body.mass:
            V = V - body.mass * (g @ pose.apply(body.com))
        if body.n_nodes:
            V = V - body.node_masses @ (pose.apply(kin.frames[i].p) @ g)
        if body.inertia_invariants is not None:  # mass and first moment from M_m's blocks
            M, m = body.inertia_invariants.modal_mass(kin.frames[i].eta), body.n_modes
            first = np.array([M[m + 2, m + 4], M[m, m + 5], M[m + 1, m + 3]])
            V = V - g @ (M[m + 3, m + 3] * pose.p + pose.R @ first)
    return V


def _momentum(model: Model, kin: PositionTerms, u: np.ndarray) -> np.ndarray:
    """``Σ_i φ(0, F_i) [M_m(i) V_m(i)]^r`` (6,)."""
    V_m = modal_velocities(model, kin, u)
    out = np.zeros(6, dtype=np.result_type(V_m[0] if model.n_bodies else 0.0, float))
    for i in range(model.n_bodies):
        m = int(model.n_modes[i])
        out = out + kin.pose[i].force_to_parent((kin.M_m[i] @ V_m[i])[m:])
    return out


def _evaluate(model: Model, q, u, fidelity: str, backend: str,
              of_row: Callable[[np.ndarray], object],
              reference: Callable[[PositionTerms, np.ndarray | None], object]):
    """Validate ``(q, u)`` once, then ``of_row`` of the engine's row ``[T, V, h, p]`` or
    ``reference(kin, u)`` from the position terms ``kin``; ``u`` None is at rest."""
    check_backend(backend)
    q, u = model.check_state(q, u)
    if on_engine(backend, q, u):
        return of_row(cached_engine(model, fidelity).energy_momentum(q, u))
    return reference(state_terms(model, q, None, fidelity)[0], u)


# The quantities from the engine's rows: one row (8,) or a batch (B, 8).
def _T(rows: np.ndarray):
    return rows[..., KINETIC]


def _V(rows: np.ndarray):
    return rows[..., POTENTIAL]


def _E(rows: np.ndarray):
    return rows[..., KINETIC] + rows[..., POTENTIAL]


def _T_V(rows: np.ndarray):
    return rows[..., KINETIC], rows[..., POTENTIAL]


def _h_p(rows: np.ndarray):
    return rows[..., MOMENTUM]


@batched("u", engine_op=_ON_ENGINE, from_engine=_T)
def kinetic_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                   backend: str = "engine") -> float:
    """``T = ½ Σ_i V_m(i)ᵀ M_m(i) V_m(i) = ½ uᵀ M u`` (J)."""
    return _evaluate(model, q, u, fidelity, backend, _T,
                     lambda kin, u: _kinetic(model, kin, u))


@batched(engine_op=_ON_ENGINE, from_engine=_V)
def potential_energy(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                     backend: str = "engine") -> float:
    """Elastic ``½ Σ ηᵀ K η`` plus gravitational ``−Σ m g·x`` energy (J).

    The mass points are the rigid centres of mass and the nodes, at their deformed
    positions for ``"full"`` and undeformed ones for ``"ruthless"``.
    """
    return _evaluate(model, q, None, fidelity, backend, _V,
                     lambda kin, u: _potential(model, kin))


@batched("u", engine_op=_ON_ENGINE, from_engine=_E)
def total_energy(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                 backend: str = "engine") -> float:
    """``T + V`` (J)."""
    return _evaluate(model, q, u, fidelity, backend, _E,
                     lambda kin, u: _kinetic(model, kin, u) + _potential(model, kin))


@batched("u", engine_op=_ON_ENGINE, from_engine=_h_p)
def momentum(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
             backend: str = "engine") -> np.ndarray:
    """Total spatial momentum ``[h; p]`` (6,) in inertial coordinates.

    ``h`` is the angular momentum about the inertial origin (N m s) and ``p`` the linear
    momentum (N s).  Body ``i`` contributes the rigid rows of ``M_m(i) V_m(i)`` — its
    momentum about the origin of ``F_i`` in ``F_i`` coordinates, rigid part and nodes —
    moved to the inertial frame with ``φ(0, F_i)``.  With no external forces and no gravity
    it is conserved.
    """
    return _evaluate(model, q, u, fidelity, backend, _h_p,
                     lambda kin, u: _momentum(model, kin, u))


@batched("u", engine_op=_ON_ENGINE, from_engine=_T_V)
def energies(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
             backend: str = "engine") -> tuple[float, float]:
    """``(T, V)``: :func:`kinetic_energy` and :func:`potential_energy` from one evaluation of
    the kinematics (J) — cheaper than calling both, e.g. along a trajectory."""
    return _evaluate(model, q, u, fidelity, backend, _T_V,
                     lambda kin, u: (_kinetic(model, kin, u), _potential(model, kin)))
