"""Tangent coordinates of a configuration: the coordinates of linearizations and derivatives.

The control interfaces (:mod:`flexdyn.control`, :mod:`flexdyn.modal`) and the derivatives of
the dynamics (:func:`flexdyn.forward_dynamics_derivatives`) work in *tangent coordinates*
``δ`` (nu,) about a configuration ``q₀``, one entry per generalized speed, so that the
state ``x = [δ; u]`` has ``2 nu`` entries and ``δ̇ = u`` wherever the speeds are the
coordinates' rates.  Per joint (registry :data:`TANGENT_CHARTS`, keyed by joint class):

- a joint whose coordinates are as many as its speeds (revolute, prismatic, universal,
  joint maps, …) and every modal coordinate: ``q = q₀ + δ`` and ``δ̇ = Γ(q) u``;
- ``spherical``: ``Q = Q₀ ⊗ [1, δ/2]`` normalised — ``δ`` is the rotation vector of
  ``R₀ᵀ R`` in the joint's child frame to first order (a Gibbs vector ×2), and
  ``δ̇ = ω + ½ δ × ω + O(δ²)``;
- ``free``: the rotation as for ``spherical`` (entries ``rx, ry, rz``), the position
  ``p = p₀ + R₀ δ_p`` (``δ_p`` the displacement in the child frame at ``q₀``, entries
  ``px, py, pz``) with ``δ̇_p = R₀ᵀ R v = v + δ × v + O(δ²)``.

The rates are exact to first order, which is all a linearization at ``δ = 0`` reads.  The
names of the entries (:attr:`~flexdyn.control.Linearization.state_names`) are the state layout's
(``docs/model-format.md``) for ordinary coordinates and ``<body>.rx`` … ``<body>.pz`` for
the quaternion joints' tangents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .chain import Model, state_layout
from .joints import FreeJoint, Joint, SphericalJoint
from .linalg import COMPLEX_STEP
from .spatial import quat_multiply, quat_to_rot

__all__ = ["COORDINATE_CHART", "TANGENT_CHARTS", "TangentChart", "TangentCoordinates",
           "complex_step_jacobian"]


@dataclass(frozen=True)
class TangentChart:
    """Tangent coordinates of one joint kind (module docstring).

    ``retract(joint, q0, d) -> q`` (nq_j,) and ``rate(joint, q, d, u) -> ḋ`` (nu_j,) with
    ``d``, ``u`` (nu_j,); ``names`` the suffixes of the tangent entries (None: the joint's
    own coordinate names); ``direction(joint, q0) -> ∂q/∂d`` (nq_j × nu_j) at ``d = 0``,
    the derivative of ``retract`` in closed form (None: complex steps of ``retract``,
    :meth:`jacobian`)."""

    retract: Callable[[Joint, np.ndarray, np.ndarray], np.ndarray]
    rate: Callable[[Joint, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    names: tuple[str, ...] | None = None
    direction: Callable[[Joint, np.ndarray], np.ndarray] | None = None

    def jacobian(self, joint: Joint, q0: np.ndarray) -> np.ndarray:
        """``∂q/∂d`` (nq_j × nu_j) of :attr:`retract` at ``d = 0`` about ``q0`` (nq_j,):
        :attr:`direction`, or complex steps of :attr:`retract` where it is None."""
        if self.direction is not None:
            return self.direction(joint, q0)
        return complex_step_jacobian(lambda d: self.retract(joint, q0, d), np.zeros(joint.nu))


def _rotation_retract(q0: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``Q₀ ⊗ [1, d/2]`` (4,), normalised by ``√(Q·Q)`` (analytic: complex steps pass)."""
    Q = quat_multiply(q0[:4], np.concatenate([[1.0], d[:3] / 2]))
    return Q / np.sqrt(Q @ Q)


def _rotation_direction(q0: np.ndarray) -> np.ndarray:
    """``∂Q/∂d`` (4 × 3) of :func:`_rotation_retract` at ``d = 0``: the columns
    ``Q₀ ⊗ [0, e_k] / (2 |Q₀|)``, each orthogonal to ``Q₀`` (the normalisation adds
    nothing to first order)."""
    w, x, y, z = q0[:4] / (2.0 * np.sqrt(q0[:4] @ q0[:4]))
    return np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` for real or complex 3-vectors."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _spherical_retract(joint: Joint, q0: np.ndarray, d: np.ndarray) -> np.ndarray:
    return _rotation_retract(q0, d)


def _spherical_rate(joint: Joint, q: np.ndarray, d: np.ndarray, u: np.ndarray) -> np.ndarray:
    return u[:3] + _cross(d[:3], u[:3]) / 2


def _spherical_direction(joint: Joint, q0: np.ndarray) -> np.ndarray:
    return _rotation_direction(q0)


def _free_retract(joint: Joint, q0: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.concatenate([_rotation_retract(q0, d), q0[4:7] + quat_to_rot(q0[:4]) @ d[3:6]])


def _free_rate(joint: Joint, q: np.ndarray, d: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.concatenate([_spherical_rate(joint, q, d, u), u[3:6] + _cross(d[:3], u[3:6])])


def _free_direction(joint: Joint, q0: np.ndarray) -> np.ndarray:
    out = np.zeros((7, 6))
    out[:4, :3] = _rotation_direction(q0)
    out[4:, 3:] = quat_to_rot(q0[:4])
    return out


def _coordinate_retract(joint: Joint, q0: np.ndarray, d: np.ndarray) -> np.ndarray:
    return q0 + d


def _coordinate_rate(joint: Joint, q: np.ndarray, d: np.ndarray, u: np.ndarray) -> np.ndarray:
    return joint.qdot(q, u)


def _coordinate_direction(joint: Joint, q0: np.ndarray) -> np.ndarray:
    return np.eye(q0.size)


#: the tangent chart of a joint class (module docstring); a class not listed must have as many
#: coordinates as speeds and takes :data:`COORDINATE_CHART`
TANGENT_CHARTS: dict[type[Joint], TangentChart] = {
    SphericalJoint: TangentChart(_spherical_retract, _spherical_rate, ("rx", "ry", "rz"),
                                 direction=_spherical_direction),
    FreeJoint: TangentChart(_free_retract, _free_rate, ("rx", "ry", "rz", "px", "py", "pz"),
                            direction=_free_direction),
}
#: the chart of coordinates that are their own rates: ``q = q₀ + δ``
COORDINATE_CHART = TangentChart(_coordinate_retract, _coordinate_rate,
                                direction=_coordinate_direction)


def _chart(joint: Joint, body: str) -> TangentChart:
    chart = TANGENT_CHARTS.get(type(joint))
    if chart is None:
        if joint.nq != joint.nu:
            raise ValueError(f"body {body!r}: joint type {joint.type!r} has {joint.nq} "
                             f"coordinates and {joint.nu} speeds and no tangent chart in "
                             "flexdyn.modal.TANGENT_CHARTS")
        return COORDINATE_CHART
    return chart


class TangentCoordinates:
    """The tangent coordinates of ``model`` about ``q0`` (module docstring)."""

    def __init__(self, model: Model, q0: np.ndarray):
        self.model, self.q0 = model, q0
        self.charts = [_chart(j, name) for j, name in zip(model.joints, model.names,
                                                          strict=True)]

    def configuration(self, d: np.ndarray) -> np.ndarray:
        """``q(δ)`` (nq,), complex where ``δ`` is."""
        model = self.model
        q = self.q0.astype(np.result_type(d, float))
        for i, (joint, chart) in enumerate(zip(model.joints, self.charts, strict=True)):
            qs, us = int(model.q_start[i]), int(model.u_start[i])
            nqj, nuj, m = int(model.nq_joint[i]), int(model.nu_joint[i]), int(model.n_modes[i])
            q[qs:qs + nqj] = chart.retract(joint, self.q0[qs:qs + nqj], d[us:us + nuj])
            q[qs + nqj:qs + nqj + m] = self.q0[qs + nqj:qs + nqj + m] + d[us + nuj:us + nuj + m]
        return q

    def rates(self, q: np.ndarray, d: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``δ̇`` (nu,) at ``q = q(δ)`` with speeds ``u``."""
        model = self.model
        out = np.empty(model.nu, dtype=np.result_type(q, d, u))
        for i, (joint, chart) in enumerate(zip(model.joints, self.charts, strict=True)):
            qs, us = int(model.q_start[i]), int(model.u_start[i])
            nqj, nuj, m = int(model.nq_joint[i]), int(model.nu_joint[i]), int(model.n_modes[i])
            out[us:us + nuj] = chart.rate(joint, q[qs:qs + nqj], d[us:us + nuj], u[us:us + nuj])
            out[us + nuj:us + nuj + m] = u[us + nuj:us + nuj + m]
        return out

    def directions(self) -> np.ndarray:
        """``∂q/∂δ`` (nq × nu) at ``δ = 0``: the identity on ordinary coordinates and modes,
        each chart's own block elsewhere (:meth:`TangentChart.jacobian`), so that
        ``q(δ) = q₀ + (∂q/∂δ) δ + O(δ²)``."""
        model = self.model
        out = np.zeros((model.nq, model.nu))
        for i, (joint, chart) in enumerate(zip(model.joints, self.charts, strict=True)):
            qs, us = int(model.q_start[i]), int(model.u_start[i])
            nqj, nuj, m = int(model.nq_joint[i]), int(model.nu_joint[i]), int(model.n_modes[i])
            out[qs:qs + nqj, us:us + nuj] = chart.jacobian(joint, self.q0[qs:qs + nqj])
            out[qs + nqj:qs + nqj + m, us + nuj:us + nuj + m] = np.eye(m)
        return out

    def rate_map(self) -> np.ndarray:
        """``T = ∂δ̇/∂u`` (nu × nu) at ``δ = 0`` (the rates are linear in ``u``): the
        identity for quaternion tangents and modes, ``Γ(q₀)`` for the other joints."""
        zero = np.zeros(self.model.nu)
        return complex_step_jacobian(lambda v: self.rates(self.q0, zero, v), zero)

    def names(self) -> list[str]:
        """Names of the entries of ``δ``."""
        model, lay = self.model, state_layout(self.model)
        out = []
        for i, chart in enumerate(self.charts):
            qs, nqj = int(model.q_start[i]), int(model.nq_joint[i])
            q_names = [e.name for e in lay["q"][qs:qs + nqj + int(model.n_modes[i])]]
            joint_names = (q_names[:nqj] if chart.names is None
                           else [f"{model.names[i]}.{s}" for s in chart.names])
            out += joint_names + q_names[nqj:]
        return out


def complex_step_jacobian(f: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
                          columns: Sequence[int] | None = None,
                          linear: bool = False) -> np.ndarray:
    """``∂f/∂x`` at real ``x0`` by complex steps, the columns ``columns`` (default all);
    ``linear`` (``f`` affine in ``x``) changes nothing here."""
    columns = range(x0.size) if columns is None else columns
    out = []
    for k in columns:
        x = x0.astype(complex)
        x[k] += 1j * COMPLEX_STEP
        out.append(np.asarray(f(x)).imag / COMPLEX_STEP)
    if not out:  # no columns (every coordinate held)
        return np.zeros((np.asarray(f(x0)).size, 0))
    return np.array(out).T.reshape(-1, len(out))
