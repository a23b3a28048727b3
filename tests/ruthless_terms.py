"""The ruthless model two ways, for tests.

* :func:`definition_terms` — Eq B1 taken literally, from the **full** body model: every
  position operator evaluated at ``η = 0`` and every velocity product at ``η̇ = 0``, while the
  stiffness forces and the modal velocities keep the actual ``η``, ``η̇``.  It shares no code
  with :mod:`flexdyn.ruthless` (Eq B4 constants, quadratic forms, Eq B3).
* :func:`precomputed_terms` and friends — the ruthless body models of a
  :class:`flexdyn.ruthless.RuthlessModel` (one Eq B3 rule) through the generic terms and
  algorithms.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import flexdyn as fd
from flexdyn.articulated_body import (
    articulated_body_inertias_split,
    articulated_forward_dynamics_split,
)
from flexdyn.composite_body import composite_forward_dynamics
from flexdyn.terms import modal_velocities, position_terms, velocity_terms


def _zero_modal(model: fd.Model, x: np.ndarray, start, joint_sizes) -> np.ndarray:
    out = np.array(x)
    for i in range(model.n_bodies):
        s = int(start[i] + joint_sizes[i])
        out[s:s + int(model.n_modes[i])] = 0.0
    return out


def definition_terms(model: fd.Model, q: np.ndarray, u: np.ndarray):
    """``(pos, vel)`` of the ruthless model by its definition (Eq B1) from the full model."""
    q0 = _zero_modal(model, q, model.q_start, model.nq_joint)
    kin0 = fd.compute_kinematics(model, q0, "full")
    pos = dataclasses.replace(kin0, q=np.asarray(q), fidelity="ruthless",
                              eta=[model.eta(q, i) for i in range(model.n_bodies)])
    u_nl = _zero_modal(model, u, model.u_start, model.nu_joint)
    vel_nl = fd.compute_velocities(model, kin0, u_nl)
    eta_dot = [model.eta_dot(u, i) for i in range(model.n_bodies)]
    elastic = [b.K @ e + b.C @ ed for b, e, ed in zip(model.bodies, pos.eta, eta_dot,
                                                       strict=True)]
    vel = fd.VelocityTerms(V_m=modal_velocities(model, pos, u), a_m=vel_nl.a_m,
                           b_m=vel_nl.b_m, eta_dot=eta_dot, elastic=elastic)
    return pos, vel


def precomputed_terms(rm, q: np.ndarray, u: np.ndarray | None = None):
    """``(pos, vel)`` from the precomputed ruthless body models ``rm.consts``."""
    pos = position_terms(rm.model, q, rm.consts, "ruthless")
    return pos, (None if u is None else velocity_terms(rm.model, pos, u))


def precomputed_split_factors(rm, q: np.ndarray):
    """Eq 63 factors with ``D_f⁻¹`` by the rule of ``rm`` (explicit or Eq B3)."""
    return articulated_body_inertias_split(rm.model, precomputed_terms(rm, q)[0])


def precomputed_forward_dynamics(rm, q, u, tau, f_ext=None) -> np.ndarray:
    """Split articulated-body forward dynamics (Eqs 63–64, B3) on ``rm``'s body models."""
    pos, vel = precomputed_terms(rm, q, u)
    return articulated_forward_dynamics_split(rm.model, pos, vel, tau, f_ext)


def precomputed_composite_forward_dynamics(rm, q, u, tau, f_ext=None) -> np.ndarray:
    """Composite-body forward dynamics (Eq 46) on ``rm``'s body models."""
    pos, vel = precomputed_terms(rm, q, u)
    return composite_forward_dynamics(rm.model, pos, vel, tau, f_ext)
