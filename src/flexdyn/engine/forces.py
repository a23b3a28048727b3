"""The joint forces (:mod:`flexdyn.joint_forces`) in compiled code: springs, dampers,
friction, limits and torque limits."""

from __future__ import annotations

from ..joint_forces import conservative_force, passive_force, potential, saturated
from .algebra import copy
from .jit import helper, inlined
from .layout import JF, NJ, QS, US

__all__ = ["add_passive_forces", "applied_forces", "conservative_force_kernel", "joint_potential",
           "joint_potential_kernel", "motor_torques", "passive_force_kernel", "saturated_kernel",
           "sub_mtv"]


passive_force_kernel = helper(passive_force)


conservative_force_kernel = helper(conservative_force)


joint_potential_kernel = helper(potential)


saturated_kernel = helper(saturated)


@inlined
def add_passive_forces(pm, q, u, sign, out):
    """``out += sign · τ_J(q, u)`` (nu,) (:func:`flexdyn.joint_forces.passive_forces`)."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        if ints[i, JF] != 0:
            qs, us = ints[i, QS], ints[i, US]
            for k in range(ints[i, NJ]):
                out[us + k] += sign * passive_force_kernel(pm.jforce[i, k], q[qs + k], u[us + k])


@inlined
def motor_torques(pm, tau, out):
    """``sat(τ)`` into ``out`` (nu,): every joint's entries of ``τ`` within its torque limit
    (:func:`flexdyn.joint_forces.motor_torques`)."""
    ints = pm.ints
    copy(tau, out)
    for i in range(ints.shape[0]):
        if ints[i, JF] != 0:
            us = ints[i, US]
            for k in range(ints[i, NJ]):
                out[us + k] = saturated_kernel(pm.jforce[i, k], tau[us + k])


@inlined
def applied_forces(pm, w, q, u, tau):
    """``sat(τ) + τ_J(q, u)`` into ``w.tau_e`` (returned): the generalized force of the
    equations of motion (:func:`flexdyn.joint_forces.applied_forces`)."""
    motor_torques(pm, tau, w.tau_e)
    add_passive_forces(pm, q, u, 1.0, w.tau_e)
    return w.tau_e


@helper
def joint_potential(pm, q):
    """``Σ V_J`` (J) of the joint springs and limits
    (:func:`flexdyn.joint_forces.joint_potential`)."""
    V, ints = 0.0, pm.ints
    for i in range(ints.shape[0]):
        if ints[i, JF] != 0:
            for k in range(ints[i, NJ]):
                V += joint_potential_kernel(pm.jforce[i, k], q[ints[i, QS] + k])
    return V


@helper
def sub_mtv(a, x, out):
    """``out −= aᵀ x``."""
    for t in range(a.shape[0]):
        xt = x[t]
        for j in range(a.shape[1]):
            out[j] -= a[t, j] * xt
