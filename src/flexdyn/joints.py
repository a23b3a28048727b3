"""Joint registry: one small class per joint kind.

A joint connects its fixed frame ``J_p`` (on the parent) to its moving frame ``J_c``
(on the child).  Every kind answers, for coordinates ``q`` (nq,) and speeds ``β`` (nu,):

* ``transform(q)`` — pose of ``J_c`` relative to ``J_p`` (:class:`~flexdyn.spatial.Transform`);
* ``motion_subspace(q)`` — ``H*`` of the paper (6 × nu): the relative twist of ``J_c``
  with respect to ``J_p``, in ``J_c`` coordinates, is ``Δ_V = H* β``
  (Jain & Rodriguez Eq 8; Kwatny & Blankenship's joint map matrix);
* ``motion_subspace_rate(q, β)`` — ``Ḣ* β`` (6,), zero for kinds whose ``H*`` is constant
  (``constant_subspace``);
* ``Gamma(q)`` — ``Γ(q)`` (nq × nu) of the kinematic equation ``q̇ = Γ(q) β``
  (Kwatny & Blankenship), and ``qdot(q, β)``;
* ``neutral()``, ``normalize(q)``; the names and kinds of the entries of ``q`` and ``β`` in
  the state layout (``q_components``, ``u_components``); the keys of its block in the model
  file (``file_keys``); the code of its kernel in the compiled engine (``code``).

Quaternions are ``[w, x, y, z]``; the speeds of spherical and free joints are the angular
(and linear) velocity of ``J_c`` relative to ``J_p`` expressed in ``J_c``.

A new kind is one subclass of :class:`Joint` registered in :data:`JOINT_KINDS`; no other
module of flexdyn tests joint-kind names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from .spatial import Transform, axis_angle_rotation, quat_multiply, quat_to_rot, skew

__all__ = ["Joint", "JOINT_DIMENSIONS", "JOINT_KINDS", "JOINT_TYPES", "make_joint"]

_ANGLE, _RATE = "angle", "angular_rate"


class Joint:
    """Base class of the joint kinds (constant data; arrays read-only).

    Attributes
    ----------
    type : str — the kind's name in model files.
    nq, nu : int — numbers of coordinates and speeds.
    axis : array (3,) or None — unit axis in ``J_p`` (kinds with ``"axis"`` in file_keys).
    axes : array (2, 3) or None — the two axes of a universal joint.
    pitch : float — screw pitch, m/rad.
    code : int — kernel code in the compiled engine.
    file_keys : tuple of str — kind-specific keys of the joint block in model files.
    q_components, u_components : tuples of ``(name, kind)`` — state-layout entries.
    quaternion : bool — ``q[:4]`` is a unit quaternion.
    constant_subspace : bool — ``H*`` does not depend on ``q``.
    slew_speed : int or None — the speed a rest-to-rest demo slew drives about the joint's
        z axis, or None.
    """

    type: ClassVar[str]
    nq: ClassVar[int]
    nu: ClassVar[int]
    code: ClassVar[int]
    file_keys: ClassVar[tuple[str, ...]] = ()
    q_components: ClassVar[tuple[tuple[str, str], ...]] = ()
    u_components: ClassVar[tuple[tuple[str, str], ...]] = ()
    quaternion: ClassVar[bool] = False
    constant_subspace: ClassVar[bool] = True
    slew_speed: ClassVar[int | None] = None

    def __init__(self, axis: Any = None, axes: Any = None, pitch: float = 0.0):
        self.axis = None if axis is None else _frozen(axis)
        self.axes = None if axes is None else _frozen(axes)
        self.pitch = float(pitch)
        self._S = _frozen(self._constant_subspace()) if self.constant_subspace else None

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in self.file_keys)
        return f"Joint({self.type!r}{extra})"

    def _constant_subspace(self) -> np.ndarray:
        raise NotImplementedError

    # -- configuration ----------------------------------------------------------------------
    def neutral(self) -> np.ndarray:
        """Reference configuration (zero angles, identity quaternion), shape (nq,)."""
        return np.zeros(self.nq)

    def transform(self, q: np.ndarray) -> Transform:
        """Pose of ``J_c`` relative to ``J_p`` for coordinates ``q`` (nq,)."""
        raise NotImplementedError

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """``q`` (nq,) projected back onto the configuration manifold."""
        return np.array(q, dtype=np.result_type(q, float))

    # -- velocity ---------------------------------------------------------------------------
    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """Joint map matrix ``H*`` (6 × nu) in ``J_c`` coordinates."""
        return self._S

    def motion_subspace_rate(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Ḣ* β`` (6,) — the velocity-product term of the joint in ``J_c`` coordinates."""
        return np.zeros(6, dtype=np.result_type(q, u, float))

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Kinematic map ``Γ(q)`` (nq × nu) with ``q̇ = Γ(q) β``."""
        return np.eye(self.nq)

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``q̇ = Γ(q) β`` (nq,)."""
        return np.array(u, dtype=np.result_type(u, float))


def _frozen(a: Any) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def _twist(angular: Any, linear: Any) -> np.ndarray:
    """Columns ``[angular; linear]`` (6 × k) from (3, k) blocks."""
    return np.vstack([np.reshape(angular, (3, -1)), np.reshape(linear, (3, -1))])


class FixedJoint(Joint):
    """Welded: no coordinates."""

    type, nq, nu, code = "fixed", 0, 0, 0

    def _constant_subspace(self) -> np.ndarray:
        return np.zeros((6, 0))

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(np.eye(3), np.zeros(3))


class RevoluteJoint(Joint):
    """Rotation by ``θ`` about ``axis``."""

    type, nq, nu, code = "revolute", 1, 1, 1
    file_keys = ("axis",)
    q_components, u_components = (("theta", _ANGLE),), (("theta_dot", _RATE),)
    slew_speed = 0

    def _constant_subspace(self) -> np.ndarray:
        return _twist(self.axis, np.zeros(3))

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(axis_angle_rotation(self.axis, q[0]), np.zeros(3))


class PrismaticJoint(Joint):
    """Translation by ``d`` along ``axis``."""

    type, nq, nu, code = "prismatic", 1, 1, 2
    file_keys = ("axis",)
    q_components, u_components = (("d", "displacement"),), (("d_dot", "rate"),)
    slew_speed = 0

    def _constant_subspace(self) -> np.ndarray:
        return _twist(np.zeros(3), self.axis)

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(np.eye(3), q[0] * self.axis)


class ScrewJoint(Joint):
    """Rotation by ``θ`` about ``axis`` with translation ``pitch · θ`` along it."""

    type, nq, nu, code = "screw", 1, 1, 3
    file_keys = ("axis", "pitch")
    q_components, u_components = (("theta", _ANGLE),), (("theta_dot", _RATE),)
    slew_speed = 0

    def _constant_subspace(self) -> np.ndarray:
        return _twist(self.axis, self.pitch * self.axis)

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(axis_angle_rotation(self.axis, q[0]), self.pitch * q[0] * self.axis)


class CylindricalJoint(Joint):
    """Independent rotation ``θ`` about and translation ``d`` along ``axis``."""

    type, nq, nu, code = "cylindrical", 2, 2, 4
    file_keys = ("axis",)
    q_components = (("theta", _ANGLE), ("d", "displacement"))
    u_components = (("theta_dot", _RATE), ("d_dot", "rate"))

    def _constant_subspace(self) -> np.ndarray:
        z = np.zeros(3)
        return np.column_stack([np.concatenate([self.axis, z]), np.concatenate([z, self.axis])])

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(axis_angle_rotation(self.axis, q[0]), q[1] * self.axis)


class UniversalJoint(Joint):
    """Rotation ``θ₁`` about ``axes[0]`` (in ``J_p``), then ``θ₂`` about ``axes[1]`` (in the
    frame turned by the first); ``H*`` depends on ``θ₂``."""

    type, nq, nu, code = "universal", 2, 2, 5
    file_keys = ("axes",)
    q_components = (("theta1", _ANGLE), ("theta2", _ANGLE))
    u_components = (("theta1_dot", _RATE), ("theta2_dot", _RATE))
    constant_subspace = False

    def transform(self, q: np.ndarray) -> Transform:
        a1, a2 = self.axes
        return Transform(axis_angle_rotation(a1, q[0]) @ axis_angle_rotation(a2, q[1]),
                         np.zeros(3))

    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """``H*`` (6 × 2): ``ω = R₂ᵀ a₁ θ̇₁ + a₂ θ̇₂``."""
        a1, a2 = self.axes
        S = np.zeros((6, 2), dtype=np.result_type(q, float))
        S[:3, 0] = axis_angle_rotation(a2, q[1]).T @ a1
        S[:3, 1] = a2
        return S

    def motion_subspace_rate(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Ḣ* β = [θ̇₁ θ̇₂ (R₂ᵀ a₁) × a₂; 0]``."""
        a1, a2 = self.axes
        out = np.zeros(6, dtype=np.result_type(q, u, float))
        out[:3] = u[0] * u[1] * np.cross(axis_angle_rotation(a2, q[1]).T @ a1, a2)
        return out


class SphericalJoint(Joint):
    """Free rotation parametrized by a unit quaternion; speeds: angular velocity in ``J_c``."""

    type, nq, nu, code = "spherical", 4, 3, 6
    q_components = tuple((c, "quaternion") for c in ("qw", "qx", "qy", "qz"))
    u_components = tuple((c, "angular_velocity") for c in ("wx", "wy", "wz"))
    quaternion = True
    slew_speed = 2

    def _constant_subspace(self) -> np.ndarray:
        return _twist(np.eye(3), np.zeros((3, 3)))

    def neutral(self) -> np.ndarray:
        q = np.zeros(self.nq)
        q[0] = 1.0
        return q

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(quat_to_rot(q[:4]), np.zeros(3))

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """``q`` with its quaternion scaled to unit length, ``q / √(q·q)`` (analytic, so
        complex-step derivatives pass through)."""
        q = np.array(q, dtype=np.result_type(q, float))
        q[:4] = q[:4] / np.sqrt(q[:4] @ q[:4])
        return q

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        return _quaternion_rate_map(q)

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        return _quaternion_rate(q, u)


class FreeJoint(SphericalJoint):
    """Six degrees of freedom: quaternion and position of ``J_c`` in ``J_p``; speeds: angular
    and linear velocity of ``J_c`` in ``J_c`` coordinates."""

    type, nq, nu, code = "free", 7, 6, 7
    q_components = SphericalJoint.q_components + tuple((c, "position") for c in "xyz")
    u_components = SphericalJoint.u_components + tuple(
        (c, "linear_velocity") for c in ("vx", "vy", "vz"))

    def _constant_subspace(self) -> np.ndarray:
        return np.eye(6)

    def transform(self, q: np.ndarray) -> Transform:
        return Transform(quat_to_rot(q[:4]), np.asarray(q[4:7]))

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Rotational block as for a spherical joint; ``ṗ = R v``."""
        G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
        G[:4, :3] = _quaternion_rate_map(q)
        G[4:7, 3:6] = quat_to_rot(q[:4])
        return G

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.concatenate([_quaternion_rate(q, u), quat_to_rot(q[:4]) @ u[3:6]])


def _quaternion_rate_map(q: np.ndarray) -> np.ndarray:
    """``Γ`` (4 × 3) of ``q̇ = ½ q ⊗ [0, ω]``: ``½ [−q_vᵀ; q_w I + q̃_v]``."""
    qw, qv = q[0], q[1:4]
    G = np.zeros((4, 3), dtype=np.result_type(q, float))
    G[0] = -0.5 * qv
    G[1:] = 0.5 * (qw * np.eye(3) + skew(qv))
    return G


def _quaternion_rate(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``q̇ = ½ q ⊗ [0, ω]`` (4,) for the quaternion ``q[:4]`` and ``ω = u[:3]``."""
    return 0.5 * quat_multiply(q[:4], np.concatenate([[0.0], u[:3]]))


#: The joint kinds by name (model-file ``joint.type``).
JOINT_KINDS: dict[str, type[Joint]] = {
    cls.type: cls for cls in (FixedJoint, RevoluteJoint, PrismaticJoint, ScrewJoint,
                              CylindricalJoint, UniversalJoint, SphericalJoint, FreeJoint)
}
#: Joint kinds and their numbers of coordinates and speeds ``(nq, nu)``.
JOINT_DIMENSIONS: dict[str, tuple[int, int]] = {k: (c.nq, c.nu) for k, c in JOINT_KINDS.items()}
JOINT_TYPES = tuple(JOINT_KINDS)


def make_joint(spec: Mapping[str, Any]) -> Joint:
    """Build a joint from the ``joint`` block of a normalised model dict (keys ``type`` and
    the kind's ``file_keys``)."""
    cls = JOINT_KINDS[spec["type"]]
    return cls(**{k: spec[k] for k in cls.file_keys})
