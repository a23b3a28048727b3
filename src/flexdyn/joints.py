"""Joints: joint transform, joint map matrix and kinematic map ``q̇ = Γ(q) u``.

A joint connects its fixed frame ``J_p`` (on the parent) to its moving frame ``J_c``
(on the child).  For every joint type flexdyn provides

* ``transform(q)`` — pose of ``J_c`` relative to ``J_p`` (:class:`~flexdyn.spatial.Transform`);
* ``motion_subspace(q)`` — ``H*`` of the paper (6 × nu): the relative twist of ``J_c``
  with respect to ``J_p``, in ``J_c`` coordinates, is ``Δ_V = H* β``
  (Jain & Rodriguez Eq 8; Kwatny & Blankenship's joint map matrix);
* ``motion_subspace_rate(q, u)`` — ``Ḣ* β`` (6,), zero for joints whose ``H*`` is constant;
* ``Gamma(q)`` — ``Γ(q)`` (nq × nu) of the kinematic equation ``q̇ = Γ(q) u``
  (Kwatny & Blankenship), and ``qdot(q, u)``.

Quaternions are ``[w, x, y, z]``; the speeds of spherical and free joints are the
angular (and linear) velocity of ``J_c`` relative to ``J_p`` expressed in ``J_c``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .spatial import Transform, axis_angle_rotation, quat_multiply, quat_to_rot, skew

__all__ = ["Joint", "JOINT_DIMENSIONS", "JOINT_TYPES", "make_joint"]

#: Joint types and their numbers of coordinates and speeds ``(nq, nu)``.
JOINT_DIMENSIONS: dict[str, tuple[int, int]] = {
    "fixed": (0, 0),
    "revolute": (1, 1),
    "prismatic": (1, 1),
    "screw": (1, 1),
    "cylindrical": (2, 2),
    "universal": (2, 2),
    "spherical": (4, 3),
    "free": (7, 6),
}
JOINT_TYPES = tuple(JOINT_DIMENSIONS)


@dataclass(frozen=True)
class Joint:
    """A joint of one of the types of :data:`JOINT_TYPES`.

    Attributes
    ----------
    type : str
    axis : array (3,) or None — unit axis in ``J_p`` (revolute, prismatic, screw, cylindrical).
    axes : array (2, 3) or None — universal joint axes (first in ``J_p``, second in the
        frame turned by the first).
    pitch : float — screw pitch, m/rad.
    nq, nu : int — number of coordinates and speeds.
    """

    type: str
    axis: np.ndarray | None = None
    axes: np.ndarray | None = None
    pitch: float = 0.0
    nq: int = field(init=False)
    nu: int = field(init=False)
    _S: np.ndarray | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        nq, nu = JOINT_DIMENSIONS[self.type]
        object.__setattr__(self, "nq", nq)
        object.__setattr__(self, "nu", nu)
        a = self.axis
        S = None
        if self.type == "fixed":
            S = np.zeros((6, 0))
        elif self.type == "revolute":
            S = np.concatenate([a, np.zeros(3)])[:, None]
        elif self.type == "prismatic":
            S = np.concatenate([np.zeros(3), a])[:, None]
        elif self.type == "screw":
            S = np.concatenate([a, self.pitch * a])[:, None]
        elif self.type == "cylindrical":
            S = np.zeros((6, 2))
            S[:3, 0] = a
            S[3:, 1] = a
        elif self.type == "spherical":
            S = np.vstack([np.eye(3), np.zeros((3, 3))])
        elif self.type == "free":
            S = np.eye(6)
        if S is not None:
            S.setflags(write=False)
        object.__setattr__(self, "_S", S)

    # -- configuration ------------------------------------------------------------------
    def neutral(self) -> np.ndarray:
        """Reference configuration (zero angles, identity quaternion), shape (nq,)."""
        q = np.zeros(self.nq)
        if self.type in ("spherical", "free"):
            q[0] = 1.0
        return q

    def transform(self, q: np.ndarray) -> Transform:
        """Pose of ``J_c`` relative to ``J_p`` for coordinates ``q`` (nq,)."""
        t = self.type
        if t == "fixed":
            return Transform(np.eye(3), np.zeros(3))
        if t == "revolute":
            return Transform(axis_angle_rotation(self.axis, q[0]), np.zeros(3))
        if t == "prismatic":
            return Transform(np.eye(3), q[0] * self.axis)
        if t == "screw":
            return Transform(axis_angle_rotation(self.axis, q[0]), self.pitch * q[0] * self.axis)
        if t == "cylindrical":
            return Transform(axis_angle_rotation(self.axis, q[0]), q[1] * self.axis)
        if t == "universal":
            a1, a2 = self.axes
            R = axis_angle_rotation(a1, q[0]) @ axis_angle_rotation(a2, q[1])
            return Transform(R, np.zeros(3))
        if t == "spherical":
            return Transform(quat_to_rot(q), np.zeros(3))
        return Transform(quat_to_rot(q[:4]), np.asarray(q[4:7]))

    # -- velocity -----------------------------------------------------------------------
    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """Joint map matrix ``H*`` (6 × nu) in ``J_c`` coordinates."""
        if self._S is not None:
            return self._S
        # universal: ω = R₂ᵀ a₁ θ̇₁ + a₂ θ̇₂
        a1, a2 = self.axes
        S = np.zeros((6, 2), dtype=np.result_type(q, float))
        S[:3, 0] = axis_angle_rotation(a2, q[1]).T @ a1
        S[:3, 1] = a2
        return S

    def motion_subspace_rate(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Ḣ* β`` (6,) — the velocity-product term of the joint in ``J_c`` coordinates."""
        out = np.zeros(6, dtype=np.result_type(q, u, float))
        if self.type == "universal":
            a1, a2 = self.axes
            out[:3] = u[0] * u[1] * np.cross(axis_angle_rotation(a2, q[1]).T @ a1, a2)
        return out

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Kinematic map ``Γ(q)`` (nq × nu) with ``q̇ = Γ(q) u``."""
        t = self.type
        if t in ("spherical", "free"):
            qw, qv = q[0], q[1:4]
            G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
            # q̇ = ½ q ⊗ [0, ω]
            G[0, :3] = -0.5 * qv
            G[1:4, :3] = 0.5 * (qw * np.eye(3) + skew(qv))
            if t == "free":
                G[4:7, 3:6] = quat_to_rot(q[:4])  # ṗ = R v
            return G
        return np.eye(self.nq)

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``q̇ = Γ(q) u`` (nq,)."""
        t = self.type
        if t in ("spherical", "free"):
            dq = np.empty(self.nq, dtype=np.result_type(q, u, float))
            w = np.concatenate([[0.0], u[:3]])
            dq[:4] = 0.5 * quat_multiply(q[:4], w)
            if t == "free":
                dq[4:] = quat_to_rot(q[:4]) @ u[3:6]
            return dq
        return np.array(u, dtype=np.result_type(u, float))

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """Project ``q`` back onto the configuration manifold (unit quaternion)."""
        if self.type in ("spherical", "free"):
            q = np.array(q, dtype=float)
            q[:4] /= np.linalg.norm(q[:4])
        return q


def make_joint(spec: dict) -> Joint:
    """Build a :class:`Joint` from the ``joint`` block of a normalised model dict."""
    return Joint(
        type=spec["type"],
        axis=spec.get("axis"),
        axes=spec.get("axes"),
        pitch=float(spec.get("pitch", 0.0) or 0.0),
    )
