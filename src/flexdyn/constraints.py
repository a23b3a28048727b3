"""Loop-closure constraints: the kinds of closure and their constraint rows.

A closed-chain system is a tree (:class:`flexdyn.Model`) plus closures (Jain & Rodriguez
Sec VIII), each between an *endpoint* on one body — a node frame (with its elastic
displacement and rotation) or a point fixed in the body frame ``F_k`` — and an endpoint on
another body or on the ground.  A closure of kind ``c`` imposes ``n_rows`` holonomic
constraints ``g(q) = 0`` whose velocity form is ``J u = 0`` and whose acceleration form is
``J u̇ + γ(q, u) = 0`` (``γ = J̇ u``).

This module is the closure registry :data:`CONSTRAINT_KINDS` (like the joint registry of
:mod:`flexdyn.joints`): per kind, the type-specific keys of the model file and the rows
``(g, W_A, W_B, γ)`` as functions of the two endpoints' inertial kinematics
(:class:`Endpoint`), where ``W_A``, ``W_B`` (k × 6) weigh the endpoints' inertial twists
``[ω; v]`` so that ``J = W_A J_A + W_B J_B``.  Every row is the exact derivative of its
``g``, so the rows are consistent at every state (not only on the closure manifold).

Kinds (``B`` is the other endpoint's frame, the inertial frame for the ground):

==================  ====  ======================================================================
kind                rows  constraint
==================  ====  ======================================================================
``ball``            3     the two points coincide
``revolute``        5     ``ball`` and ``axis`` (in A's frame) parallel to ``other_axis`` (B's)
``weld``            6     ``ball`` and the frames' relative orientation ``R_Bᵀ R_A = rotation``
``pin``             2     the points coincide in the plane normal to ``axis`` (B's frame): the
                          revolute closure of a planar mechanism, whose out-of-plane rows the
                          planar joints already impose (a ``ball`` would repeat them)
``point-on-line``   2     A's point on the line through B's point along ``direction`` (B)
``point-on-plane``  1     A's point on the plane through B's point normal to ``normal`` (B)
==================  ====  ======================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .spatial import cross

__all__ = ["CONSTRAINT_KINDS", "Closure", "ClosureRows", "ConstraintKind", "Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """Inertial kinematics of a closure endpoint's frame (the ground: fixed).

    Attributes
    ----------
    p : (3,) origin position, m;  R : (3, 3) orientation (columns: its axes).
    w : (3,) angular velocity, rad/s;  v : (3,) origin velocity, m/s.
    alpha : (3,) angular acceleration at ``u̇ = 0``;  a : (3,) origin acceleration at
        ``u̇ = 0`` (the velocity products only), m/s².
    """

    p: np.ndarray
    R: np.ndarray
    w: np.ndarray
    v: np.ndarray
    alpha: np.ndarray
    a: np.ndarray

    @staticmethod
    def fixed(p: np.ndarray, R: np.ndarray | None = None) -> Endpoint:
        """An endpoint at rest (on the ground)."""
        z = np.zeros(3)
        return Endpoint(p=np.asarray(p, float), R=np.eye(3) if R is None else R, w=z, v=z,
                        alpha=z, a=z)


class ClosureRows(NamedTuple):
    """The rows of one closure: ``g`` (k,), ``W_A``, ``W_B`` (k, 6) and ``γ`` (k,), with
    ``ġ = W_A [ω_A; v_A] + W_B [ω_B; v_B]`` and ``g̈ = (that with the accelerations) + γ``."""

    g: np.ndarray
    W_A: np.ndarray
    W_B: np.ndarray
    gamma: np.ndarray


@dataclass(frozen=True)
class Closure:
    """One closure of a model (normalised from the model file's ``constraints`` entry).

    Attributes
    ----------
    name : str;  kind : str — a key of :data:`CONSTRAINT_KINDS`.
    body : int — body index of endpoint A;  node : int or None;  point : (3,) or None —
        A is that node's frame, or the point of ``F_body`` (with ``F_body``'s orientation).
    other_body : int — body index of endpoint B, -1 for the ground;  other_node : int or
        None;  other_point : (3,) or None (inertial coordinates for the ground).
    params : mapping of the kind's keys (unit vectors (3,), rotations (3, 3)).
    constants : what the kind's rows use, computed once from ``params``.
    """

    name: str
    kind: str
    body: int
    node: int | None
    point: np.ndarray | None
    other_body: int
    other_node: int | None
    other_point: np.ndarray | None
    params: Mapping[str, np.ndarray]
    constants: Mapping[str, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "constants", CONSTRAINT_KINDS[self.kind].prepare(self.params))

    @property
    def n_rows(self) -> int:
        """Number of constraint rows."""
        return CONSTRAINT_KINDS[self.kind].n_rows

    def rows(self, A: Endpoint, B: Endpoint) -> ClosureRows:
        """The closure's rows for the endpoint kinematics ``A``, ``B``."""
        return CONSTRAINT_KINDS[self.kind].rows(A, B, self.constants)


# ----------------------------------------------------------------------------------------------
# row builders shared by the kinds
# ----------------------------------------------------------------------------------------------
def perpendicular_pair(n: np.ndarray) -> np.ndarray:
    """Two unit vectors (3, 2) that complete the unit vector ``n`` to a right-handed
    orthonormal basis ``(e1, e2, n)``."""
    k = int(np.argmin(np.abs(n)))
    e1 = cross(n, np.eye(3)[k])
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, cross(n, e1)])


def point_rows(A: Endpoint, B: Endpoint, N: np.ndarray) -> ClosureRows:
    """Rows ``g = nᵀ (p_A − p_B)`` for the directions ``n = R_B N`` (``N`` (3, k) in B's
    frame), which turn with B.

    ``ġ = nᵀ (v_A − v_B) + (n × d)ᵀ ω_B`` with ``d = p_A − p_B``;
    ``γ = n·(a_A − a_B) + (α_B × n + ω_B × (ω_B × n))·d + 2 (ω_B × n)·ḋ``.
    """
    n = B.R @ N
    d, dd = A.p - B.p, A.v - B.v
    k = N.shape[1]
    W_A, W_B = np.zeros((k, 6), dtype=d.dtype), np.zeros((k, 6), dtype=d.dtype)
    W_A[:, 3:] = n.T
    W_B[:, :3] = cross(n.T, d)
    W_B[:, 3:] = -n.T
    n_dot = cross(B.w, n.T)  # (k, 3)
    n_ddot = cross(B.alpha, n.T) + cross(B.w, n_dot)
    gamma = n.T @ (A.a - B.a) + n_ddot @ d + 2.0 * n_dot @ dd
    return ClosureRows(n.T @ d, W_A, W_B, gamma)


def axis_rows(A: Endpoint, B: Endpoint, a_A: np.ndarray, P_B: np.ndarray) -> ClosureRows:
    """Rows ``g_i = a·b_i`` keeping ``a = R_A a_A`` parallel to B's axis, ``b_i = R_B P_B``
    the two directions perpendicular to it (``P_B`` (3, 2) in B's frame):
    ``ġ_i = (ω_A − ω_B)·(a × b_i)``,
    ``γ_i = (α_A − α_B)·(a × b_i) + (ω_A − ω_B)·((ω_A × a) × b_i + a × (ω_B × b_i))``."""
    a = A.R @ a_A
    b = (B.R @ P_B).T  # (2, 3)
    c = cross(a, b)
    dw = A.w - B.w
    W_A, W_B = np.zeros((2, 6), dtype=c.dtype), np.zeros((2, 6), dtype=c.dtype)
    W_A[:, :3], W_B[:, :3] = c, -c
    rate = cross(cross(A.w, a), b) + cross(a, cross(B.w, b))
    return ClosureRows(b @ a, W_A, W_B, c @ (A.alpha - B.alpha) + rate @ dw)


def attitude_rows(A: Endpoint, B: Endpoint, R0: np.ndarray) -> ClosureRows:
    """Rows ``g = log(R_Bᵀ R_A R0ᵀ)`` (the rotation vector, B's frame) holding the relative
    orientation ``R_Bᵀ R_A = R0``: ``ġ = R_Bᵀ (ω_A − ω_B)`` where ``g = 0``,
    ``γ = R_Bᵀ (α_A − α_B + (ω_A − ω_B) × ω_B)``."""
    from scipy.spatial.transform import Rotation  # on first use (slow to import)

    Rt = B.R.T
    g = Rotation.from_matrix(Rt @ A.R @ R0.T).as_rotvec()
    W_A, W_B = np.zeros((3, 6), dtype=Rt.dtype), np.zeros((3, 6), dtype=Rt.dtype)
    W_A[:, :3], W_B[:, :3] = Rt, -Rt
    dw = A.w - B.w
    return ClosureRows(g, W_A, W_B, Rt @ (A.alpha - B.alpha + cross(dw, B.w)))


def _stack(*parts: ClosureRows) -> ClosureRows:
    return ClosureRows(*(np.concatenate(x) for x in zip(*parts, strict=True)))


# ----------------------------------------------------------------------------------------------
# the kinds
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConstraintKind:
    """A kind of closure.

    Attributes
    ----------
    n_rows : int — number of constraint rows.
    keys : mapping ``key -> (form, required)`` of the kind's own model-file keys: form
        ``"unit"`` (a unit vector (3,)) or ``"rotation"`` (a rotation matrix (3, 3));
        optional keys default as :attr:`defaults` says.
    defaults : mapping ``key -> callable(params) -> value`` for the optional keys.
    prepare : ``params -> constants`` computed once per closure (directions, axes).
    rows : ``(A, B, constants) -> ClosureRows``.
    """

    n_rows: int
    keys: Mapping[str, tuple[str, bool]]
    defaults: Mapping[str, Callable[[Mapping], np.ndarray]]
    prepare: Callable[[Mapping], Mapping]
    rows: Callable[[Endpoint, Endpoint, Mapping], ClosureRows]


_IDENTITY = np.eye(3)
_IDENTITY.setflags(write=False)


def _ball(A: Endpoint, B: Endpoint, c: Mapping) -> ClosureRows:
    return point_rows(A, B, _IDENTITY)


def _revolute(A: Endpoint, B: Endpoint, c: Mapping) -> ClosureRows:
    return _stack(point_rows(A, B, _IDENTITY), axis_rows(A, B, c["axis"], c["perpendicular"]))


def _weld(A: Endpoint, B: Endpoint, c: Mapping) -> ClosureRows:
    return _stack(point_rows(A, B, _IDENTITY), attitude_rows(A, B, c["rotation"]))


def _directions(A: Endpoint, B: Endpoint, c: Mapping) -> ClosureRows:
    return point_rows(A, B, c["N"])


#: The closure kinds by model-file ``type``.
CONSTRAINT_KINDS: dict[str, ConstraintKind] = {
    "ball": ConstraintKind(3, {}, {}, dict, _ball),
    "revolute": ConstraintKind(
        5, {"axis": ("unit", True), "other_axis": ("unit", False)},
        {"other_axis": lambda c: c["axis"]},
        lambda c: {"axis": c["axis"], "perpendicular": perpendicular_pair(c["other_axis"])},
        _revolute),
    "weld": ConstraintKind(6, {"rotation": ("rotation", False)},
                           {"rotation": lambda c: _IDENTITY}, dict, _weld),
    "pin": ConstraintKind(2, {"axis": ("unit", True)}, {},
                          lambda c: {"N": perpendicular_pair(c["axis"])}, _directions),
    "point-on-line": ConstraintKind(2, {"direction": ("unit", True)}, {},
                                    lambda c: {"N": perpendicular_pair(c["direction"])},
                                    _directions),
    "point-on-plane": ConstraintKind(1, {"normal": ("unit", True)}, {},
                                     lambda c: {"N": c["normal"][:, None]}, _directions),
}
