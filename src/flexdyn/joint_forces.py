"""Joint forces: linear springs with preload, viscous dampers, smoothed Coulomb friction, joint
limits and motor torque limits, on the speeds of joints whose speeds are the rates of their
coordinates (``q̇_j = u_j``: revolute, prismatic, screw, cylindrical, universal, and product
joints with ``Γ = I``).

A joint's ``forces`` block (``model-format.md``) gives, per joint speed ``k`` (a number for all
of them or a list of ``nu_j``), the parameters of :data:`FORCE_KEYS`.  With ``x = q_k`` (rad or
m), ``v = u_k`` (rad/s or m/s) the generalized force on the speed is

* the spring and damper ``τ_s = τ₀ − k (x − x₀) − c v`` (``preload`` ``τ₀``, ``stiffness``
  ``k``, ``rest`` ``x₀``, ``damping`` ``c``);
* Coulomb friction smoothed by ``tanh``: ``τ_f = −μ tanh(v / v_s)`` (``coulomb`` ``μ``,
  ``smoothing`` ``v_s``): within ``|v| ≲ v_s`` the friction is a steep viscous law of
  coefficient ``μ / v_s``, above ``3 v_s`` it is ``∓μ`` within 0.5 %, so a joint under a load
  below ``μ`` creeps at ``v_s atanh(τ / μ)`` instead of sticking;
* a joint limit as a one-sided spring–damper: beyond ``upper`` (below ``lower``) by
  ``δ = x − upper`` the force ``−k_l δ − c_l v`` (``limit_stiffness``, ``limit_damping``),
  held at zero where it would pull the joint into the limit (a contact pushes only);
* the motor's torque limit: the applied ``τ_k`` is saturated to ``±torque_limit``.

The equations of motion read ``M u̇ + b = sat(τ) + τ_J(q, u)`` with
``τ_J = τ_s + τ_f + τ_l`` (:func:`applied_forces`).  Accordingly :func:`flexdyn.inverse_dynamics`
returns the motor forces ``M u̇ + b − τ_J`` (unsaturated; compare them with the limits) and
:func:`flexdyn.bias_forces` is ``b − τ_J``.  The energy balance of a simulation counts the
potential ``V_J = ½ k (x − x₀)² − τ₀ (x − x₀) + ½ k_l δ²`` (:func:`joint_potential`) in the
potential energy, the motor work ``∫ sat(τ)·u dt`` as the work of ``τ`` and
``D_J = (−∂V_J/∂x − τ_J) v ≥ 0`` (:func:`joint_dissipation`) as dissipation.

The scalar functions of this module are plain Python: the reference tier calls them (complex
``x, v`` included, for complex-step derivatives; branches test the real parts) and the
compiled engine compiles them (:mod:`flexdyn.engine.kernels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

__all__ = ["DEFAULTS", "FORCE_KEYS", "N_FORCE_PARAMS", "applied_forces", "force_table",
           "joint_dissipation", "joint_potential", "motor_torques", "passive_forces"]

#: the keys of a joint's ``forces`` block, in the order of a parameter row
FORCE_KEYS = ("stiffness", "rest", "preload", "damping", "coulomb", "smoothing", "lower",
              "upper", "limit_stiffness", "limit_damping", "torque_limit")
(STIFFNESS, REST, PRELOAD, DAMPING, COULOMB, SMOOTHING, LOWER, UPPER, LIMIT_STIFFNESS,
 LIMIT_DAMPING, TORQUE_LIMIT) = range(len(FORCE_KEYS))
#: length of a parameter row
N_FORCE_PARAMS = len(FORCE_KEYS)
#: the value of a key a block leaves out (no force of that kind; ``smoothing`` 0.01 rad/s
#: or m/s)
DEFAULTS: dict[str, float] = {"stiffness": 0.0, "rest": 0.0, "preload": 0.0, "damping": 0.0,
                              "coulomb": 0.0, "smoothing": 0.01, "lower": -np.inf,
                              "upper": np.inf, "limit_stiffness": 0.0, "limit_damping": 0.0,
                              "torque_limit": np.inf}


# ----------------------------------------------------------------------------------------------
# one joint speed (plain Python, compiled by the engine)
# ----------------------------------------------------------------------------------------------
def passive_force(c, x, v):
    """``τ_J = τ₀ − k (x − x₀) − c v − μ tanh(v / v_s) + τ_l`` of one joint speed, ``c`` its
    parameter row; the limit force ``τ_l`` is held at zero where it would pull."""
    f = c[PRELOAD] - c[STIFFNESS] * (x - c[REST]) - c[DAMPING] * v
    if c[COULOMB] != 0.0:
        f = f - c[COULOMB] * np.tanh(v / c[SMOOTHING])
    d = x - c[UPPER]
    if d.real > 0.0:
        limit = -c[LIMIT_STIFFNESS] * d - c[LIMIT_DAMPING] * v
        if limit.real < 0.0:
            f = f + limit
    d = x - c[LOWER]
    if d.real < 0.0:
        limit = -c[LIMIT_STIFFNESS] * d - c[LIMIT_DAMPING] * v
        if limit.real > 0.0:
            f = f + limit
    return f


def conservative_force(c, x):
    """``−∂V_J/∂x = τ₀ − k (x − x₀) − k_l δ``."""
    f = c[PRELOAD] - c[STIFFNESS] * (x - c[REST])
    d = x - c[UPPER]
    if d.real > 0.0:
        f = f - c[LIMIT_STIFFNESS] * d
    d = x - c[LOWER]
    if d.real < 0.0:
        f = f - c[LIMIT_STIFFNESS] * d
    return f


def potential(c, x):
    """``V_J = ½ k (x − x₀)² − τ₀ (x − x₀) + ½ k_l δ²`` (J)."""
    e = x - c[REST]
    V = 0.5 * c[STIFFNESS] * e * e - c[PRELOAD] * e
    d = x - c[UPPER]
    if d.real > 0.0:
        V = V + 0.5 * c[LIMIT_STIFFNESS] * d * d
    d = x - c[LOWER]
    if d.real < 0.0:
        V = V + 0.5 * c[LIMIT_STIFFNESS] * d * d
    return V


def saturated(c, tau):
    """The applied force ``τ`` held within ``±torque_limit``."""
    if tau.real > c[TORQUE_LIMIT]:
        return c[TORQUE_LIMIT] + 0.0 * tau
    if tau.real < -c[TORQUE_LIMIT]:
        return -c[TORQUE_LIMIT] + 0.0 * tau
    return tau


# ----------------------------------------------------------------------------------------------
# a model (reference tier)
# ----------------------------------------------------------------------------------------------
class Model(Protocol):
    """What these functions read of a :class:`flexdyn.chain.Model` (which imports this
    module)."""

    joint_forces: tuple[np.ndarray | None, ...]
    q_start: np.ndarray
    u_start: np.ndarray
    nu: int


def force_table(blocks: Sequence[Mapping[str, np.ndarray] | None], nu: Sequence[int]
                ) -> tuple[np.ndarray | None, ...]:
    """Per body, the joint's parameter rows (nu_j, :data:`N_FORCE_PARAMS`) with the defaults
    filled in, or None for a joint without a ``forces`` block."""
    out: list[np.ndarray | None] = []
    for block, n in zip(blocks, nu, strict=True):
        if block is None:
            out.append(None)
            continue
        rows = np.array([[DEFAULTS[key]] * n for key in FORCE_KEYS], dtype=float).T
        for k, key in enumerate(FORCE_KEYS):
            if block.get(key) is not None:
                rows[:, k] = block[key]
        rows.setflags(write=False)
        out.append(rows)
    return tuple(out)


def _speeds(model: Model):
    """``(q index, u index, parameter row)`` of every joint speed with forces."""
    for i, rows in enumerate(model.joint_forces):
        if rows is not None:
            for k, c in enumerate(rows):
                yield int(model.q_start[i]) + k, int(model.u_start[i]) + k, c


def _dtype(*arrays: Any) -> np.dtype:
    return np.result_type(*arrays, float)


def passive_forces(model: Model, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``τ_J(q, u)`` (nu,): the springs, dampers, friction and limits of every joint (zero on
    the other speeds); ``q`` (nq,), ``u`` (nu,)."""
    out = np.zeros(model.nu, dtype=_dtype(q, u))
    for qi, ui, c in _speeds(model):
        out[ui] = passive_force(c, q[qi], u[ui])
    return out


def motor_torques(model: Model, tau: np.ndarray) -> np.ndarray:
    """``sat(τ)`` (nu,): ``tau`` (nu,) with every joint's entries held within its
    ``torque_limit``."""
    out = np.array(tau, dtype=_dtype(tau))
    for _, ui, c in _speeds(model):
        out[ui] = saturated(c, out[ui])
    return out


def applied_forces(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``sat(τ) + τ_J(q, u)`` (nu,): the generalized force the equations of motion see."""
    return motor_torques(model, tau) + passive_forces(model, q, u)


def joint_potential(model: Model, q: np.ndarray):
    """``Σ V_J`` (J) of the joint springs and limits at ``q`` (nq,)."""
    V = 0.0 * q[:0].sum()
    for qi, _, c in _speeds(model):
        V = V + potential(c, q[qi])
    return V


def joint_dissipation(model: Model, q: np.ndarray, u: np.ndarray):
    """``D_J = Σ (−∂V_J/∂x − τ_J) v`` (W, ≥ 0): the power the dampers, friction and limit
    dampers take from the motion at ``(q, u)``."""
    D = 0.0 * u[:0].sum()
    for qi, ui, c in _speeds(model):
        D = D + (conservative_force(c, q[qi]) - passive_force(c, q[qi], u[ui])) * u[ui]
    return D
