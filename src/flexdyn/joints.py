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

Joints from joint maps (Kwatny & Blankenship, Sec II): a kind given by a constant joint map
``H`` (6 × r, columns ``[ω; v]``) is a product of exponentials (Prop 1, Corollary 1, Eq 15)

    λ(ε) = exp(ĥ_r ε_r) ⋯ exp(ĥ_2 ε_2) exp(ĥ_1 ε_1),

column 1 the innermost factor (its axis is fixed in ``J_c``), column r the outermost (fixed
in ``J_p``); every column is given at the reference configuration ``ε = 0`` where ``J_c``
and ``J_p`` coincide.  Its kinematic equation ``ε̇ = Γ(ε) β`` is Prop 2 (Eqs 16–19) and a
joint of several such factors is a compound joint (Prop 3, Eqs 25–28).  See
:class:`ProductJoint` for the choice of speeds, and :func:`kinematic_map`,
:func:`compound_joint_map` for the paper's constructions themselves.

A new kind is one subclass of :class:`Joint` registered in :data:`JOINT_KINDS`; no other
module of flexdyn tests joint-kind names.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from .spatial import (
    Transform,
    axis_angle_rotation,
    cross_motion,
    quat_multiply,
    quat_to_rot,
    skew,
)

__all__ = ["EULER_SEQUENCES", "Joint", "JOINT_DIMENSIONS", "JOINT_KINDS", "JOINT_PARAMS",
           "JOINT_TYPES", "QUATERNION_TOL",
           "JointSingularityError", "JointSingularityWarning", "ProductJoint",
           "SINGULARITY_TOL", "SINGULARITY_WARN", "compound_joint_map", "is_subalgebra",
           "kinematic_map", "make_joint", "screw_exponential"]

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
    rates : bool — the speeds are the rates of the coordinates (``Γ = I``).
    constant_subspace : bool — ``H*`` does not depend on ``q``.
    slew_speed : int or None — the speed a rest-to-rest demo slew drives about the joint's
        z axis, or None.
    """

    type: ClassVar[str]
    nq: int
    nu: int
    code: ClassVar[int]
    file_keys: ClassVar[tuple[str, ...]] = ()
    q_components: ClassVar[tuple[tuple[str, str], ...]] = ()
    u_components: ClassVar[tuple[tuple[str, str], ...]] = ()
    quaternion: ClassVar[bool] = False
    rates: bool = True
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

    # -- compiled engine --------------------------------------------------------------------
    def engine_params(self) -> np.ndarray:
        """The joint's row of the engine's packed ``jparam`` (:data:`JOINT_PARAMS`,): the
        axis (or the two axes) in entries 0–5 and the pitch in entry 6."""
        out = np.zeros(JOINT_PARAMS)
        if self.axis is not None:
            out[:3] = self.axis
        if self.axes is not None:
            out[:6] = np.ravel(self.axes)
        out[6] = self.pitch
        return out


#: Width of a joint's parameter row in the compiled engine (:meth:`Joint.engine_params`):
#: a product joint packs 6 columns, 6 speed-basis columns, 6 coordinate indices and 6
#: factor-start entries.
JOINT_PARAMS = 84


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
    rates = False
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


# ---------------------------------------------------------------------------------------------
# joints from joint maps (Kwatny & Blankenship, Sec II)
# ---------------------------------------------------------------------------------------------
#: A product joint's ``Γ(q)`` warns (:class:`JointSingularityWarning`) when its singularity
#: measure ``μ(q)`` (:meth:`ProductJoint.singularity`) is below this: for Euler angles
#: ``μ = |cos θ|``, i.e. within about 0.57° of the gimbal lock.
SINGULARITY_WARN = 1e-2
#: ... and raises :class:`JointSingularityError` below this (``Γ`` is not defined there).
SINGULARITY_TOL = 1e-9
#: Largest accepted ``|‖Q‖ − 1|`` of a joint quaternion in ``q``: within it the per-state
#: functions normalise ``Q`` (analytically, ``Q / √(Q·Q)``), beyond it they raise.
QUATERNION_TOL = 1e-6


class JointSingularityWarning(RuntimeWarning):
    """A product joint's coordinates approach a singularity: ``μ(q) < SINGULARITY_WARN``."""


class JointSingularityError(ValueError):
    """A product joint's coordinates are singular: ``μ(q) < SINGULARITY_TOL``, so the
    kinematic equation ``q̇ = Γ(q) β`` has no solution ``Γ``."""


def screw_exponential(h: np.ndarray, e: Any) -> Transform:
    """``λ(ε)`` of a one-column joint map (Kwatny & Blankenship Prop 1, Eq 12).

    Parameters
    ----------
    h : array (6,) — the column ``[ω; v]`` (``|ω| = 1`` or ``ω = 0``; ``v`` in m/rad or
        dimensionless for ``ω = 0``).
    e : float or complex — the coordinate ``ε`` (rad, or m for ``ω = 0``).

    Returns
    -------
    Transform — rotation ``exp(ε ω̃)`` and translation
    ``∫₀^ε exp(σ ω̃) v dσ = (ε I + (1 − cos ε) ω̃ + (ε − sin ε) ω̃²) v`` (m).
    """
    K = skew(np.asarray(h[:3], dtype=float))
    K2 = K @ K
    s, c1 = np.sin(e), 1.0 - np.cos(e)
    return Transform(np.eye(3) + s * K + c1 * K2, (e * np.eye(3) + c1 * K + (e - s) * K2) @ h[3:])


def _ad_inverse(T: Transform, H: np.ndarray) -> np.ndarray:
    """``Ad_{T⁻¹} H`` (6 × k): the columns ``[ω; v]`` of ``H`` (6 × k), given in the outer
    frame of ``T``, in its inner frame, ``[Rᵀ ω; Rᵀ (v + ω × p)]``."""
    w, v = H[:3], H[3:]
    return np.vstack([T.R.T @ w, T.R.T @ (v + np.cross(w.T, T.p).T)])


def _identity_transform() -> Transform:
    return Transform(np.eye(3), np.zeros(3))


def _factor_map(columns: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, Transform]:
    """``B(ε)`` (6 × r) of Prop 2 (Eqs 18, 21–24) and ``λ(ε)`` (Eq 15) of the product
    ``exp(ĥ_r ε_r) ⋯ exp(ĥ_1 ε_1)``: column ``i`` of ``B`` is ``Ad_{U_{i−1}⁻¹} h_i`` with
    ``U_{i−1} = λ_{i−1} ⋯ λ_1`` (``U_0 = I``), so that ``λ⁻¹ λ̇ = B(ε) ε̇``."""
    U = _identity_transform()
    B = np.zeros(columns.shape, dtype=np.result_type(eps, float))
    for i in range(columns.shape[1]):
        B[:, i] = _ad_inverse(U, columns[:, i:i + 1])[:, 0]
        U = screw_exponential(columns[:, i], eps[i]).compose(U)
    return B, U


def kinematic_map(H: Any, eps: Any) -> np.ndarray:
    """``Γ(ε)`` (r × r) of a simple joint with joint map ``H`` (6 × r): Kwatny & Blankenship
    Prop 2, ``Γ = B*(ε) H`` (Eq 19) with the left inverse ``B* = (BᵀB)⁻¹ Bᵀ``.

    When the columns of ``H`` span a subalgebra (:func:`is_subalgebra`) the twist ``H β``
    lies in the span of ``B(ε)`` and ``ε̇ = Γ β`` is exact; otherwise (the paper's "simple
    universal" joints of Table II) ``Γ`` is only the least-squares solution, and
    :class:`MapJoint` takes the speeds ``ε̇`` instead.
    """
    H = np.asarray(H, dtype=float).reshape(6, -1)
    B, _ = _factor_map(H, np.asarray(eps))
    return np.linalg.solve(B.T @ B, B.T @ H)


def compound_joint_map(factors: Sequence[Any], eps: Any) -> np.ndarray:
    """``H(ε)`` (6 × Σ r_i) of a compound joint (Kwatny & Blankenship Prop 3, Eqs 27–28):
    block ``i`` is ``Ad_{U_{i−1}⁻¹} ℋ_i`` with ``U_{i−1}`` the product of the factors
    ``1 … i−1`` (Eq 26, factor 1 innermost), so that the twist of ``J_c`` is ``H(ε) β``
    for the factors' own quasi-velocities ``β_i`` (``λ_i⁻¹ λ̇_i = ℋ_i β_i``)."""
    eps = np.asarray(eps)
    U, blocks, a = _identity_transform(), [], 0
    for F in factors:
        F = np.asarray(F, dtype=float).reshape(6, -1)
        blocks.append(_ad_inverse(U, F))
        U = _factor_map(F, eps[a:a + F.shape[1]])[1].compose(U)
        a += F.shape[1]
    return np.hstack(blocks)


def is_subalgebra(H: Any, tol: float = 1e-9) -> bool:
    """Whether the span of the columns of ``H`` (6 × r, full column rank) is closed under the
    Lie bracket of se(3) (the spatial cross product ``h_i × h_j``): then the joint has a
    constant joint map in quasi-velocities (rotations about a point, the planar group,
    one column, commuting screws, …)."""
    H = np.asarray(H, dtype=float).reshape(6, -1)
    Qb = np.linalg.svd(H, full_matrices=False)[0]
    for i in range(H.shape[1]):
        for j in range(i + 1, H.shape[1]):
            x = cross_motion(H[:, i], H[:, j])
            if np.linalg.norm(x - Qb @ (Qb.T @ x)) > tol * (1.0 + np.linalg.norm(x)):
                return False
    return True


def _column_kinds(H: np.ndarray) -> tuple[bool, ...]:
    """Whether each column of ``H`` (6 × r) rotates."""
    return tuple(bool(np.any(H[:3, k] != 0.0)) for k in range(H.shape[1]))


class ProductJoint(Joint):
    """A joint given as a product of exponentials in factors (Kwatny & Blankenship
    Prop 1–3): the base of the kinds ``map``, ``compound``, ``planar``, ``euler`` and
    ``free-euler``, one kernel in the engine for all.

    Data: ``columns`` (6 × n) in the product order of Eq 15 (column 1 innermost),
    consecutive groups of ``sizes`` columns forming the factors (Eq 26, factor 1 innermost),
    each spanning a subalgebra of se(3); a speed ``basis`` (6 × n) whose block ``i`` spans
    the same subalgebra as factor ``i``; the coordinate ``order``: ``q_k = ε_{order[k]}``.

    Speeds: the quasi-velocities of the factors, ``λ_i⁻¹ λ̇_i = S_i β_i`` with the constant
    basis block ``S_i`` (Eq 9).  ``H*(q)`` is Prop 3 (Eq 28): block ``i`` is
    ``S'_i = Ad_{U_{i−1}⁻¹} S_i``, ``U_{i−1}`` the product of the factors inside factor
    ``i``; with one factor ``H* = S`` is constant (``constant_subspace``).  ``Γ(q)`` is block
    diagonal (Eq 25), ``Γ_i = B_i⁺ S_i`` (Prop 2, Eq 19), exact because ``S_i β_i`` lies in
    the span of ``B_i(ε_i)``.  ``Ḣ* β = Σ_i (S'_i β_i) × W_i`` with ``W_i = Σ_{k<i} S'_k β_k``
    the twist of the factors inside ``i`` (``d/dt Ad_{U⁻¹} s = (Ad_{U⁻¹} s) × (U⁻¹ U̇)``).

    Singularities: ``μ(q) = min_i √(det(B_iᵀ B_i) / det(H_iᵀ H_i))`` (``H_i`` the factor's
    columns, ``B_i(0) = H_i``; invariant to the scaling of columns) is 1 at ``q = 0`` and
    0 where the coordinates are singular; :meth:`Gamma` and :meth:`qdot` warn below
    :data:`SINGULARITY_WARN` and raise below :data:`SINGULARITY_TOL`.  For Euler angles
    ``μ = |cos θ|``.
    """

    code = 8
    _hint: ClassVar[str] = ""

    def __init__(self, columns: Any, sizes: Sequence[int], basis: Any = None,
                 order: Sequence[int] | None = None):
        self.axis = self.axes = None
        self.pitch = 0.0
        self._columns = _frozen(columns)
        n = self._columns.shape[1]
        self.nq = self.nu = n
        self._basis = self._columns if basis is None else _frozen(basis)
        self._order = list(range(n) if order is None else order)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self._blocks = tuple(zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True))
        self._gram = tuple(float(np.linalg.det(self._columns[:, a:b].T @ self._columns[:, a:b]))
                           for a, b in self._blocks)
        self.constant_subspace = len(self._blocks) == 1
        self._S = self._basis if self.constant_subspace else None
        self.rates = (all(b - a == 1 for a, b in self._blocks) and self._order == list(range(n))
                      and np.array_equal(self._basis, self._columns))

    @property
    def columns(self) -> np.ndarray:
        """The columns ``h_c`` (6 × n) in the product order of Eq 15 (column 1 innermost)."""
        return self._columns

    @property
    def basis(self) -> np.ndarray:
        """The speed basis (6 × n): block ``i`` spans factor ``i``'s subalgebra (Eq 9)."""
        return self._basis

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """The factors as column ranges ``(start, stop)``, factor 1 innermost (Eq 26)."""
        return self._blocks

    @property
    def order(self) -> tuple[int, ...]:
        """``q_k = ε_{order[k]}``: the column of each coordinate."""
        return tuple(self._order)

    def _eps(self, q: np.ndarray) -> np.ndarray:
        """The product's coordinates ``ε`` (n,) from ``q`` (n,)."""
        eps = np.zeros(self.nq, dtype=np.result_type(q, float))
        eps[self._order] = q[:self.nq]
        return eps

    def transform(self, q: np.ndarray) -> Transform:
        """``λ(ε)`` (Eqs 15, 26)."""
        return _factor_map(self._columns, self._eps(q))[1]

    def motion_subspace(self, q: np.ndarray) -> np.ndarray:
        """``H*(q)`` (6 × n): Prop 3 (Eq 28) with the speed basis."""
        if self.constant_subspace:
            return self._S
        eps = self._eps(q)
        S = np.zeros((6, self.nu), dtype=eps.dtype)
        U = _identity_transform()
        for a, b in self._blocks:
            S[:, a:b] = _ad_inverse(U, self._basis[:, a:b])
            U = _factor_map(self._columns[:, a:b], eps[a:b])[1].compose(U)
        return S

    def motion_subspace_rate(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Ḣ* β = Σ_i (S'_i β_i) × W_i`` (6,), zero with one factor."""
        out = np.zeros(6, dtype=np.result_type(q, u, float))
        if self.constant_subspace:
            return out
        S, W = self.motion_subspace(q), np.zeros(6, dtype=out.dtype)
        for a, b in self._blocks:
            c = S[:, a:b] @ u[a:b]
            out = out + cross_motion(c, W)
            W = W + c
        return out

    def _factor_maps(self, q: np.ndarray) -> list[np.ndarray]:
        eps = self._eps(q)
        return [_factor_map(self._columns[:, a:b], eps[a:b])[0] for a, b in self._blocks]

    def singularity(self, q: np.ndarray) -> float:
        """The singularity measure ``μ(q)`` (1 at ``q = 0``, 0 at a singularity)."""
        return min(_measure(B, g) for B, g in zip(self._factor_maps(q), self._gram, strict=True))

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """``Γ(q)`` (n × n) of ``q̇ = Γ(q) β``: Eqs 19 and 25.

        Warns (:class:`JointSingularityWarning`) when ``μ(q) < SINGULARITY_WARN`` and raises
        :class:`JointSingularityError` when ``μ(q) < SINGULARITY_TOL``.
        """
        Bs = self._factor_maps(q)
        self._report(q, min(_measure(B, g) for B, g in zip(Bs, self._gram, strict=True)))
        G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
        for (a, b), B in zip(self._blocks, Bs, strict=True):
            G[a:b, a:b] = np.linalg.solve(B.T @ B, B.T @ self._basis[:, a:b])
        return G[self._order]

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``q̇ = Γ(q) β`` (n,), reporting singularities as :meth:`Gamma`."""
        return self.Gamma(q) @ u

    def _report(self, q: np.ndarray, mu: float) -> None:
        if mu >= SINGULARITY_WARN:
            return
        where = (f"{self!r} at q = {np.real(q).tolist()}: singularity measure μ = {mu:.3g}"
                 f"{self._hint}")
        if mu < SINGULARITY_TOL:
            raise JointSingularityError(f"{where} < {SINGULARITY_TOL:g}: the coordinates are "
                                        "singular, Γ(q) does not exist")
        warnings.warn(f"{where} < {SINGULARITY_WARN:g}: the coordinates approach a "
                      "singularity, Γ(q) grows like 1/μ", JointSingularityWarning, stacklevel=3)

    def engine_params(self) -> np.ndarray:
        """Columns (entries 0–35), speed basis (36–71), the index in ``q`` of each ``ε_c``
        (72–77) and, where a factor starts, ``det(H_iᵀ H_i) > 0`` of its columns (78–83,
        zero elsewhere)."""
        n = self.nq
        out = np.zeros(JOINT_PARAMS)
        out[:6 * n] = self._columns.T.ravel()
        out[36:36 + 6 * n] = self._basis.T.ravel()
        for k, c in enumerate(self._order):
            out[72 + c] = k
        for (a, _), g in zip(self._blocks, self._gram, strict=True):
            out[78 + a] = g
        return out


def _measure(B: np.ndarray, gram: float) -> float:
    """``√(det(BᵀB) / det(HᵀH))`` of one factor."""
    return float(np.sqrt(max(np.real(np.linalg.det(B.T @ B)), 0.0) / gram))


def _map_components(H: np.ndarray) -> tuple[tuple, tuple]:
    kinds = _column_kinds(H)
    return (tuple((f"eps{k + 1}", _ANGLE if r else "displacement") for k, r in enumerate(kinds)),
            tuple((f"beta{k + 1}", _RATE if r else "rate") for k, r in enumerate(kinds)))


class MapJoint(ProductJoint):
    """A joint from a constant joint map ``H`` (6 × r, key ``map``): ``λ(ε)`` of Eq 15.

    When the columns span a subalgebra (:func:`is_subalgebra`: rotations about a point, the
    planar group, one column, commuting screws) it is one factor and its speeds are the
    quasi-velocities ``β`` with the constant ``H* = H`` (Eq 9) and ``Γ(ε)`` of Prop 2.
    Otherwise no constant joint map fits the motion (e.g. two skew revolute axes, a gimbal)
    and it is the compound joint of its r columns (Prop 3 with ``r = {1, …, 1}``): speeds
    ``ε̇`` (``Γ = I``, Eq 35c) and the configuration-dependent ``H*(ε)`` of Eq 28.
    """

    type = "map"
    nq = nu = None  # from the map
    file_keys = ("map",)

    def __init__(self, map: Any):  # noqa: A002 - the model-file key
        H = np.array(map, dtype=float).reshape(6, -1)
        r = H.shape[1]
        super().__init__(H, (r,) if is_subalgebra(H) else (1,) * r)
        self.map = _frozen(H)
        self.q_components, self.u_components = _map_components(H)


class CompoundJoint(ProductJoint):
    """A compound joint (Kwatny & Blankenship Sec II-D, key ``factors``): a list of joint maps
    ``ℋ_1, …, ℋ_p`` (6 × r_i, factor 1 innermost, Eq 26), each spanning a subalgebra; speeds
    the factors' quasi-velocities (Eq 25), ``H*(ε)`` of Prop 3.  Fixed offsets between the
    factors need no helper frames: a factor's columns are given at ``ε = 0`` in ``J_p``
    coordinates, so an offset axis is the column ``[a; c × a]`` of a line through ``c``."""

    type = "compound"
    nq = nu = None  # from the factors
    file_keys = ("factors",)

    def __init__(self, factors: Sequence[Any]):
        Hs = [np.array(F, dtype=float).reshape(6, -1) for F in factors]
        for k, F in enumerate(Hs):
            if not is_subalgebra(F):
                raise ValueError(f"factors[{k}] does not span a subalgebra of se(3) (its columns' "
                                 "cross products leave their span): split it into factors "
                                 "of one column")
        H = np.hstack(Hs)
        super().__init__(H, [F.shape[1] for F in Hs])
        self.factors = tuple(_frozen(F) for F in Hs)
        self.q_components, self.u_components = _map_components(H)


def _plane(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """In-plane directions ``e1, e2`` of a planar joint with unit normal ``n``: ``e1`` the
    normalised projection of the first of ``x, y`` that is not within 25° of ``n``, and
    ``e2 = n × e1`` (``n = z`` gives ``e1 = x``, ``e2 = y``)."""
    ref = np.eye(3)[0] if abs(n[0]) < 0.9 else np.eye(3)[1]
    e1 = ref - (ref @ n) * n
    e1 = e1 / np.linalg.norm(e1)
    return e1, np.cross(n, e1)


class PlanarJoint(ProductJoint):
    """Planar joint (key ``axis``, the plane's normal ``n``): ``q = (x, y, θ)``, the origin of
    ``J_c`` at ``x e1 + y e2`` in ``J_p`` and the rotation ``θ`` about ``n``
    (``λ = exp(ẽ1 x) exp(ẽ2 y) exp(ñ θ)``, the planar group se(2)); speeds
    ``β = (v_x, v_y, θ̇)``, the velocity of ``J_c``'s origin along ``e1, e2`` in ``J_c`` and
    the rotation rate: ``H* = [[0, 0, n], [e1, e2, 0]]`` is constant and
    ``(ẋ, ẏ) = R(θ) (v_x, v_y)``.  ``e1, e2``: ``_plane``."""

    type, nq, nu = "planar", 3, 3
    file_keys = ("axis",)
    q_components = (("x", "displacement"), ("y", "displacement"), ("theta", _ANGLE))
    u_components = (("vx", "linear_velocity"), ("vy", "linear_velocity"), ("theta_dot", _RATE))

    def __init__(self, axis: Any):
        n = np.asarray(axis, dtype=float)
        e1, e2 = _plane(n)
        z = np.zeros(3)
        super().__init__(_twist(np.column_stack([n, z, z]), np.column_stack([z, e2, e1])), (3,),
                         _twist(np.column_stack([z, z, n]), np.column_stack([e1, e2, z])),
                         (2, 1, 0))
        self.axis = _frozen(n)
        self.directions = _frozen([e1, e2])


#: Euler sequences: (order of the rotation columns in Eq 15, q index → ε index)
_EULER = {"321": ((0, 1, 2), (0, 1, 2)), "123": ((2, 1, 0), (2, 1, 0))}
#: The Euler sequences of the ``euler`` and ``free-euler`` joints (key ``sequence``).
EULER_SEQUENCES = tuple(_EULER)
_EULER_HINT = (" (Euler angles: |cos θ| is μ, the gimbal lock at θ = ±90°; the quaternion "
               "kinds have no singularity)")


def _euler_data(sequence: str) -> tuple[np.ndarray, tuple[int, ...]]:
    if sequence not in _EULER:
        raise ValueError(f"unknown Euler sequence {sequence!r}: expected one of "
                         f"{', '.join(_EULER)}")
    cols, order = _EULER[sequence]
    return np.eye(3)[:, list(cols)], order


class EulerJoint(ProductJoint):
    """Spherical joint in Euler angles (key ``sequence``): ``q = (φ, θ, ψ)`` the angles about
    the x, y, z axes; ``"321"``: ``R = R_z(ψ) R_y(θ) R_x(φ)`` (yaw, pitch, roll;
    Kwatny & Blankenship Table II and Eq 36b), ``"123"``: ``R = R_x(φ) R_y(θ) R_z(ψ)``.
    Speeds: the angular velocity of ``J_c`` in ``J_c`` (as the quaternion ``spherical``):
    ``H* = [I; 0]`` constant, ``Γ(q)`` the Euler-rate matrix, singular at ``cos θ = 0``
    (``μ = |cos θ|``, see :class:`ProductJoint`)."""

    type, nq, nu = "euler", 3, 3
    file_keys = ("sequence",)
    q_components = (("phi", _ANGLE), ("theta", _ANGLE), ("psi", _ANGLE))
    u_components = tuple((c, "angular_velocity") for c in ("wx", "wy", "wz"))
    _hint = _EULER_HINT

    def __init__(self, sequence: str):
        cols, order = _euler_data(sequence)
        super().__init__(_twist(cols, np.zeros((3, 3))), (3,), _twist(np.eye(3), np.zeros((3, 3))),
                         order)
        self.sequence = str(sequence)


class FreeEulerJoint(ProductJoint):
    """Free joint in Euler angles (key ``sequence``, as :class:`EulerJoint`):
    ``q = (φ, θ, ψ, x, y, z)``, the position of ``J_c``'s origin in ``J_p``; speeds the
    angular and linear velocity of ``J_c`` in ``J_c`` (as ``free``): ``H* = I``,
    ``Γ = diag(Γ_1, R)`` (Kwatny & Blankenship Eq 36 for ``"321"``)."""

    type, nq, nu = "free-euler", 6, 6
    file_keys = ("sequence",)
    q_components = EulerJoint.q_components + tuple((c, "position") for c in "xyz")
    u_components = EulerJoint.u_components + tuple(
        (c, "linear_velocity") for c in ("vx", "vy", "vz"))
    _hint = _EULER_HINT

    def __init__(self, sequence: str):
        cols, order = _euler_data(sequence)
        z = np.zeros((3, 3))
        super().__init__(np.block([[cols, z], [z, np.eye(3)]]), (6,), np.eye(6),
                         (*order, 3, 4, 5))
        self.sequence = str(sequence)


#: The joint kinds by name (model-file ``joint.type``).
JOINT_KINDS: dict[str, type[Joint]] = {
    cls.type: cls for cls in (FixedJoint, RevoluteJoint, PrismaticJoint, ScrewJoint,
                              CylindricalJoint, UniversalJoint, SphericalJoint, FreeJoint,
                              MapJoint, CompoundJoint, PlanarJoint, EulerJoint, FreeEulerJoint)
}
#: Joint kinds and their numbers of coordinates and speeds ``(nq, nu)``; ``None`` for the
#: kinds whose sizes come from their joint block (``map``, ``compound``).
JOINT_DIMENSIONS: dict[str, tuple[int | None, int | None]] = {
    k: (c.nq, c.nu) for k, c in JOINT_KINDS.items()}
JOINT_TYPES = tuple(JOINT_KINDS)


def make_joint(spec: Mapping[str, Any]) -> Joint:
    """Build a joint from the ``joint`` block of a normalised model dict (keys ``type`` and
    the kind's ``file_keys``)."""
    cls = JOINT_KINDS[spec["type"]]
    return cls(**{k: spec[k] for k in cls.file_keys})
