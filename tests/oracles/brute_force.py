"""Brute-force multibody dynamics from the model-file conventions, for cross-checks.

Nothing here uses flexdyn: the model dict is parsed directly and every mass element (the
rigid part of each body and each node) is placed in the inertial frame by composing poses
along the tree,

    T_W,i = T_W,p ∘ T_p,t(η_p) ∘ placement ∘ J(q_joint) ∘ child_placement ∘ T_i,c(η_i)⁻¹,

with node frames ``(expm(hat(Π_r η)), nodes[j] + Π_t η)``.  The equations of motion
``M(q) u̇ + C(q, u) = τ`` follow from Kane's method (virtual power), which holds for any
generalized speeds, quaternion joints included:

* partial velocities ``∂ẋ/∂u_k`` and ``∂ω/∂u_k`` of every element are complex-step
  derivatives of its position and orientation along ``q + i h Γ(q) e_k`` (exact to rounding);
* ``M = Σ m J_vᵀ J_v + J_ωᵀ I J_ω`` (``ω`` and ``I`` in the element's own frame);
* ``C`` collects the generalized inertia forces at ``u̇ = 0``, whose accelerations are
  ``d/dt`` of the (complex-step) velocity field at fixed ``u`` along ``q̇ = Γ(q) u``, taken
  by an 8th-order central difference; plus gravity, ``K η + D η̇`` and external wrenches.

All kinematics is complex-analytic (Rodrigues with a power series near zero, quaternions
normalised by ``sqrt(Σ q²)``, no ``abs``/``norm`` of possibly complex data).

Joints from joint maps (Kwatny & Blankenship): the pose of ``map`` and ``compound`` joints is
the product of the 4 × 4 matrix exponentials ``expm(ξ̂_r ε_r) ⋯ expm(ξ̂_1 ε_1)`` of their
columns (``scipy.linalg.expm``), and ``Γ`` of each factor is the least-squares solution of
``J_i(ε_i) Γ_i = ℋ_i`` with ``J_i`` the factor's body-twist Jacobian ``λ_i⁻¹ ∂λ_i/∂ε``
(complex step); a ``map`` whose columns' commutators leave their span is split into
one-column factors.  Euler angles and the planar joint use the textbook rotation sequences
and Euler-rate matrices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import expm

__all__ = ["BruteModel"]

_JOINT_SIZES = {
    "fixed": (0, 0),
    "revolute": (1, 1),
    "prismatic": (1, 1),
    "screw": (1, 1),
    "cylindrical": (2, 2),
    "universal": (2, 2),
    "spherical": (4, 3),
    "free": (7, 6),
    "planar": (3, 3),
    "euler": (3, 3),
    "free-euler": (6, 6),
}

#: Complex step.
_H = 1e-30

#: Offsets and weights of the 8th-order central difference of a first derivative.
_FD_OFFSETS = np.array([-4, -3, -2, -1, 1, 2, 3, 4], dtype=float)
_FD_WEIGHTS = np.array(
    [1 / 280, -4 / 105, 1 / 5, -4 / 5, 4 / 5, -1 / 5, 4 / 105, -1 / 280]
)


# ---------------------------------------------------------------------------------------------
# rotations (complex-step safe)
# ---------------------------------------------------------------------------------------------


def hat(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix of a 3-vector (any dtype)."""
    z = np.zeros((), dtype=v.dtype)
    return np.array([[z, -v[2], v[1]], [v[2], z, -v[0]], [-v[1], v[0], z]])


def vee(A: np.ndarray) -> np.ndarray:
    """Axial vector of the skew part of ``A`` (..., 3, 3) -> (..., 3)."""
    return 0.5 * np.stack(
        [A[..., 2, 1] - A[..., 1, 2], A[..., 0, 2] - A[..., 2, 0], A[..., 1, 0] - A[..., 0, 1]],
        axis=-1,
    )


def rodrigues(theta: np.ndarray) -> np.ndarray:
    """``expm(hat(θ))`` for a rotation vector θ (3,), real or complex.

    ``R = I + a K + b K²`` with ``a = sin t / t``, ``b = (1 − cos t) / t²``, ``t² = θ·θ``;
    power series in ``t²`` when ``Re t² < 10⁻²``.
    """
    s = np.sum(theta * theta)
    if s.real < 1e-2:
        a = b = 0.0
        term_a, term_b = 1.0, 0.5
        for k in range(8):
            a = a + term_a
            b = b + term_b
            term_a = -term_a * s / ((2 * k + 2) * (2 * k + 3))
            term_b = -term_b * s / ((2 * k + 3) * (2 * k + 4))
    else:
        t = np.sqrt(s)
        a = np.sin(t) / t
        b = (1.0 - np.cos(t)) / s
    K = hat(theta)
    return np.eye(3) + a * K + b * (K @ K)


def axis_rotation(axis: np.ndarray, angle: Any) -> np.ndarray:
    """Rotation by ``angle`` about a real unit ``axis``: ``I + sin θ â + (1 − cos θ) â²``."""
    K = hat(np.asarray(axis, dtype=float))
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quaternion_rotation(q: np.ndarray) -> np.ndarray:
    """Rotation of the quaternion ``[w, x, y, z]`` after normalisation by ``sqrt(Σ q²)``."""
    w, x, y, z = q / np.sqrt(np.sum(q * q))
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def compose(a: tuple, b: tuple) -> tuple:
    """``a ∘ b`` for poses ``(R, p)``."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def inverse(a: tuple) -> tuple:
    """Inverse of a pose ``(R, p)`` (``Rᵀ`` is the inverse also for complex rotations)."""
    Rt = a[0].T
    return Rt, -(Rt @ a[1])


def euler_rotation(sequence: str, angles: np.ndarray) -> np.ndarray:
    """``R_z(ψ) R_y(θ) R_x(φ)`` (``"321"``) or ``R_x(φ) R_y(θ) R_z(ψ)`` (``"123"``) for
    ``angles = (φ, θ, ψ)`` about x, y, z."""
    Rx, Ry, Rz = (axis_rotation(np.eye(3)[k], angles[k]) for k in range(3))
    return Rz @ Ry @ Rx if sequence == "321" else Rx @ Ry @ Rz


def euler_rates(sequence: str, angles: np.ndarray) -> np.ndarray:
    """The Euler-rate matrix: ``(φ̇, θ̇, ψ̇) = E ω``, ``ω`` the angular velocity in the moving
    frame (textbook forms, e.g. Kwatny & Blankenship Eq 36b for 3-2-1)."""
    f, t, p = angles
    if sequence == "321":
        return np.array([[1.0, np.sin(f) * np.tan(t), np.cos(f) * np.tan(t)],
                         [0.0, np.cos(f), -np.sin(f)],
                         [0.0, np.sin(f) / np.cos(t), np.cos(f) / np.cos(t)]])
    return np.array([[np.cos(p) / np.cos(t), -np.sin(p) / np.cos(t), 0.0],
                     [np.sin(p), np.cos(p), 0.0],
                     [-np.cos(p) * np.tan(t), np.sin(p) * np.tan(t), 1.0]])


def plane_directions(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The in-plane directions of a planar joint with normal ``n`` (model format: ``e1`` the
    normalised projection of x, or of y when ``|n_x| ≥ 0.9``; ``e2 = n × e1``)."""
    ref = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = ref - (ref @ n) * n
    e1 = e1 / np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def _twist_matrix(xi: np.ndarray) -> np.ndarray:
    """The 4 × 4 matrix ``[[ω̃, v], [0, 0]]`` of a twist ``[ω; v]``."""
    X = np.zeros((4, 4))
    X[:3, :3] = hat(np.asarray(xi[:3], dtype=float))
    X[:3, 3] = xi[3:]
    return X


def map_product(H: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``expm(ξ̂_r ε_r) ⋯ expm(ξ̂_1 ε_1)`` (4 × 4) for the columns of ``H`` (6 × r)."""
    X = np.eye(4, dtype=np.result_type(eps, float))
    for k in range(H.shape[1]):
        X = expm(_twist_matrix(H[:, k]) * eps[k]) @ X
    return X


def factor_jacobian(H: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``J`` (6 × r): column k the body twist ``λ⁻¹ ∂λ/∂ε_k`` of :func:`map_product`, by the
    complex step."""
    X = map_product(H, eps)
    Xinv = np.linalg.inv(X)
    J = np.zeros((6, H.shape[1]))
    for k in range(H.shape[1]):
        e = np.array(eps, dtype=complex)
        e[k] += 1j * _H
        T = Xinv @ (map_product(H, e).imag / _H)
        J[:3, k] = vee(T[:3, :3])
        J[3:, k] = T[:3, 3]
    return J


def _closed(H: np.ndarray) -> bool:
    """Whether the commutators of the columns' twist matrices stay in their span."""
    mats = [_twist_matrix(H[:, k]) for k in range(H.shape[1])]
    basis = np.array([m[:3, :].ravel() for m in mats]).T
    for i in range(len(mats)):
        for j in range(i + 1, len(mats)):
            c = (mats[i] @ mats[j] - mats[j] @ mats[i])[:3, :].ravel()
            res = c - basis @ np.linalg.lstsq(basis, c, rcond=None)[0]
            if np.linalg.norm(res) > 1e-8 * (1.0 + np.linalg.norm(c)):
                return False
    return True


def _map_factors(j: Mapping) -> list[np.ndarray] | None:
    """The factors of a ``map`` / ``compound`` joint block (6 × r_i each), else None."""
    if j["type"] == "compound":
        return [np.asarray(F, dtype=float).reshape(6, -1) for F in j["factors"]]
    if j["type"] != "map":
        return None
    H = np.asarray(j["map"], dtype=float).reshape(6, -1)
    return [H] if _closed(H) else [H[:, [k]] for k in range(H.shape[1])]


def _identity() -> tuple:
    return np.eye(3), np.zeros(3)


def _placement(spec: Mapping | None) -> tuple:
    if spec is None:
        return _identity()
    R, p = spec.get("rotation"), spec.get("translation")
    return (
        np.eye(3) if R is None else np.asarray(R, dtype=float),
        np.zeros(3) if p is None else np.asarray(p, dtype=float),
    )


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------


@dataclass
class _Body:
    parent: int
    jtype: str
    factors: list[np.ndarray] | None  # joint-map factors of map / compound joints
    axis: np.ndarray | None
    axes: np.ndarray | None
    pitch: float
    sequence: str | None
    parent_node: int | None
    child_node: int | None
    placement: tuple
    child_placement: tuple
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    nodes: np.ndarray
    node_masses: np.ndarray
    node_inertias: np.ndarray
    Pi: np.ndarray  # (n, 6, m)
    K: np.ndarray
    D: np.ndarray
    K1: np.ndarray | None
    K2: np.ndarray | None
    nq: int
    nu: int
    m: int
    q0: int
    u0: int


class BruteModel:
    """A model parsed from a raw model dict, with brute-force kinematics and dynamics.

    The state layout is that of the model format: per body, joint coordinates then ``η``
    (speeds: joint speeds then ``η̇``).
    """

    def __init__(self, d: Mapping[str, Any]):
        raw = d["bodies"]
        names = [b["name"] for b in raw]
        g = d.get("gravity")
        self.gravity = np.zeros(3) if g is None else np.asarray(g, dtype=float)
        self.bodies: list[_Body] = []
        q0 = u0 = 0
        for b in raw:
            parent = -1 if b.get("parent") is None else names.index(b["parent"])
            j = b["joint"]
            rigid = b.get("rigid") or {}
            flex = b.get("flex") or {}
            nodes = np.asarray(flex.get("nodes", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
            n = nodes.shape[0]
            ni = flex.get("node_inertias")
            modes = flex.get("modes")
            Pi = (np.zeros((6 * n, 0)) if modes is None
                  else np.asarray(modes, dtype=float).reshape(6 * n, -1))
            m = Pi.shape[1]
            K = np.asarray(flex["stiffness"], float) if m else np.zeros((0, 0))
            D = (np.asarray(flex["damping"], float) if m and flex.get("damping") is not None
                 else np.zeros((m, m)))
            factors = _map_factors(j)
            nq, nu = ((sum(F.shape[1] for F in factors),) * 2 if factors is not None
                      else _JOINT_SIZES[j["type"]])
            self.bodies.append(
                _Body(
                    parent=parent,
                    jtype=j["type"],
                    factors=factors,
                    axis=None if j.get("axis") is None else np.asarray(j["axis"], float),
                    axes=None if j.get("axes") is None else np.asarray(j["axes"], float),
                    pitch=float(j.get("pitch") or 0.0),
                    sequence=j.get("sequence"),
                    parent_node=j.get("parent_node"),
                    child_node=j.get("child_node"),
                    placement=_placement(j.get("placement")),
                    child_placement=_placement(j.get("child_placement")),
                    mass=float(rigid.get("mass", 0.0)),
                    com=np.asarray(rigid.get("com", np.zeros(3)), float),
                    inertia=np.asarray(rigid.get("inertia", np.zeros((3, 3))), float),
                    nodes=nodes,
                    node_masses=np.asarray(flex.get("node_masses", np.zeros(n)), float),
                    node_inertias=(np.zeros((n, 3, 3)) if ni is None
                                   else np.asarray(ni, float).reshape(n, 3, 3)),
                    Pi=Pi.reshape(n, 6, m),
                    K=K,
                    D=D,
                    K1=(None if flex.get("geometric_stiffness_1") is None
                        else np.asarray(flex["geometric_stiffness_1"], float)),
                    K2=(None if flex.get("geometric_stiffness_2") is None
                        else np.asarray(flex["geometric_stiffness_2"], float)),
                    nq=nq,
                    nu=nu,
                    m=m,
                    q0=q0,
                    u0=u0,
                )
            )
            q0 += nq + m
            u0 += nu + m
        self.nq, self.nu = q0, u0
        self.n_bodies = len(self.bodies)
        # constant element data: per body the rigid part, then its nodes
        masses, inertias = [], []
        for b in self.bodies:
            masses.append(b.mass)
            inertias.append(b.inertia)
            masses.extend(b.node_masses)
            inertias.extend(b.node_inertias)
        self.element_masses = np.array(masses)
        self.element_inertias = np.array(inertias).reshape(-1, 3, 3)

    # -- state layout ------------------------------------------------------------------------
    def eta(self, q: np.ndarray, i: int) -> np.ndarray:
        b = self.bodies[i]
        return q[b.q0 + b.nq:b.q0 + b.nq + b.m]

    def eta_dot(self, u: np.ndarray, i: int) -> np.ndarray:
        b = self.bodies[i]
        return u[b.u0 + b.nu:b.u0 + b.nu + b.m]

    def zero_deformation(self, q: np.ndarray, u: np.ndarray | None = None) -> tuple:
        """``q`` with every ``η = 0`` (and ``u`` with every ``η̇ = 0``)."""
        q = np.array(q, dtype=float)
        u = None if u is None else np.array(u, dtype=float)
        for b in self.bodies:
            q[b.q0 + b.nq:b.q0 + b.nq + b.m] = 0.0
            if u is not None:
                u[b.u0 + b.nu:b.u0 + b.nu + b.m] = 0.0
        return q, u

    # -- kinematics ----------------------------------------------------------------------------
    def joint_pose(self, b: _Body, qj: np.ndarray) -> tuple:
        """Pose of ``J_c`` in ``J_p``."""
        t = b.jtype
        dtype = np.result_type(qj, float)
        zero = np.zeros(3, dtype=dtype)
        if t == "fixed":
            return np.eye(3), zero
        if t == "revolute":
            return axis_rotation(b.axis, qj[0]), zero
        if t == "prismatic":
            return np.eye(3, dtype=dtype), qj[0] * b.axis
        if t == "screw":
            return axis_rotation(b.axis, qj[0]), b.pitch * qj[0] * b.axis
        if t == "cylindrical":
            return axis_rotation(b.axis, qj[0]), qj[1] * b.axis
        if t == "universal":
            return axis_rotation(b.axes[0], qj[0]) @ axis_rotation(b.axes[1], qj[1]), zero
        if t == "spherical":
            return quaternion_rotation(qj), zero
        if t == "free":
            return quaternion_rotation(qj[:4]), qj[4:7]
        if t in ("euler", "free-euler"):
            R = euler_rotation(b.sequence, qj[:3])
            return R, (zero if t == "euler" else qj[3:6])
        if t == "planar":
            e1, e2 = plane_directions(b.axis)
            return axis_rotation(b.axis, qj[2]), qj[0] * e1 + qj[1] * e2
        X = map_product(np.hstack(b.factors), qj)
        return X[:3, :3], X[:3, 3]

    def joint_gamma(self, b: _Body, qj: np.ndarray) -> np.ndarray:
        """``Γ_j(q)`` with ``q̇_j = Γ_j u_j``.

        Quaternion ``p`` with body angular velocity ``ω``: ``ṗ = ½ p ⊗ [0, ω]``; a free
        joint's position has ``ṗ = R v``.
        """
        if b.jtype in ("euler", "free-euler"):
            G = np.zeros((b.nq, b.nu), dtype=np.result_type(qj, float))
            G[:3, :3] = euler_rates(b.sequence, qj[:3])
            if b.jtype == "free-euler":
                G[3:, 3:] = euler_rotation(b.sequence, qj[:3])
            return G
        if b.jtype == "planar":
            c, s = np.cos(qj[2]), np.sin(qj[2])
            return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        if b.factors is not None:
            G = np.zeros((b.nq, b.nu))
            a = 0
            for F in b.factors:
                r = F.shape[1]
                G[a:a + r, a:a + r] = np.linalg.lstsq(factor_jacobian(F, qj[a:a + r]), F,
                                                      rcond=None)[0]
                a += r
            return G
        if b.jtype not in ("spherical", "free"):
            return np.eye(b.nq)
        w, x, y, z = qj[:4]
        G = np.zeros((b.nq, b.nu), dtype=np.result_type(qj, float))
        # p ⊗ [0, ω]: rows w, x, y, z
        G[:4, :3] = 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])
        if b.jtype == "free":
            G[4:, 3:] = quaternion_rotation(qj[:4])
        return G

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Block-diagonal ``Γ(q)`` (nq × nu)."""
        G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
        for b in self.bodies:
            G[b.q0:b.q0 + b.nq, b.u0:b.u0 + b.nu] = self.joint_gamma(b, q[b.q0:b.q0 + b.nq])
            G[b.q0 + b.nq:b.q0 + b.nq + b.m, b.u0 + b.nu:b.u0 + b.nu + b.m] = np.eye(b.m)
        return G

    @staticmethod
    def node_pose(b: _Body, j: int, eta: np.ndarray) -> tuple:
        """Pose of node ``j``'s frame in the body frame at deformation ``η``."""
        return rodrigues(b.Pi[j, :3] @ eta), b.nodes[j] + b.Pi[j, 3:] @ eta

    def configuration(self, q: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
        """Body frame poses and element positions/orientations in the inertial frame.

        Returns
        -------
        poses : list of (R, p) — pose of each body frame.
        X : (P, 3) — element positions (per body: rigid centre of mass, then the nodes).
        R : (P, 3, 3) — element orientations (body frame, node frames).
        """
        poses: list = []
        X, Rs = [], []
        for i, b in enumerate(self.bodies):
            eta = self.eta(q, i)
            qj = q[b.q0:b.q0 + b.nq]
            if b.parent >= 0:
                T = poses[b.parent]
                if b.parent_node is not None:
                    pb = self.bodies[b.parent]
                    T = compose(T, self.node_pose(pb, b.parent_node, self.eta(q, b.parent)))
            else:
                T = _identity()
            T = compose(T, b.placement)
            T = compose(T, self.joint_pose(b, qj))
            T = compose(T, b.child_placement)
            if b.child_node is not None:
                T = compose(T, inverse(self.node_pose(b, b.child_node, eta)))
            poses.append(T)
            R, p = T
            X.append(R @ b.com + p)
            Rs.append(R)
            for j in range(b.nodes.shape[0]):
                Rn, pn = self.node_pose(b, j, eta)
                X.append(R @ pn + p)
                Rs.append(R @ Rn)
        return poses, np.array(X), np.array(Rs)

    def velocities(self, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, ...]:
        """Element and body-frame velocities for a coordinate rate ``dq`` (complex step).

        Returns
        -------
        v : (P, 3) element velocities (inertial frame).
        w : (P, 3) element angular velocities in the element frames.
        V : (n_bodies, 6) body-frame twists ``[ω; v]`` in body coordinates.
        """
        poses, X, R = self.configuration(np.asarray(q, dtype=complex) + 1j * _H * dq)
        v = X.imag / _H
        R0 = R.real
        w = vee(np.swapaxes(R0, -1, -2) @ (R.imag / _H))
        V = np.zeros((self.n_bodies, 6))
        for i, (Rb, pb) in enumerate(poses):
            Rb0 = Rb.real
            V[i, :3] = vee(Rb0.T @ (Rb.imag / _H))
            V[i, 3:] = Rb0.T @ (pb.imag / _H)
        return v, w, V

    def jacobians(self, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """Partial velocities: ``J_v`` (P, 3, nu), ``J_ω`` (P, 3, nu), ``J_V`` (n, 6, nu)."""
        G = self.Gamma(q)
        cols = [self.velocities(q, G[:, k]) for k in range(self.nu)]
        P = self.element_masses.size
        Jv = np.zeros((P, 3, self.nu))
        Jw = np.zeros((P, 3, self.nu))
        JV = np.zeros((self.n_bodies, 6, self.nu))
        for k, (v, w, V) in enumerate(cols):
            Jv[:, :, k], Jw[:, :, k], JV[:, :, k] = v, w, V
        return Jv, Jw, JV

    # -- dynamics --------------------------------------------------------------------------------
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """``M(q) = Σ m J_vᵀ J_v + J_ωᵀ I J_ω`` (nu × nu)."""
        Jv, Jw, _ = self.jacobians(q)
        M = np.einsum("p,pik,pil->kl", self.element_masses, Jv, Jv)
        M += np.einsum("pik,pij,pjl->kl", Jw, self.element_inertias, Jw)
        return 0.5 * (M + M.T)

    def accelerations(self, q: np.ndarray, u: np.ndarray, step: float = 1e-2) -> tuple:
        """Element accelerations at ``u̇ = 0``: ``d/dt`` of the velocity field at fixed ``u``.

        Returns ``(v, w, a, alpha)``: velocities and angular velocities (element frames) and
        their time derivatives along ``q̇ = Γ(q) u``.
        """
        qd = self.Gamma(q) @ u
        scale = max(1.0, float(np.max(np.abs(qd))))
        h = step / scale
        v, w, _ = self.velocities(q, self.Gamma(q) @ u)
        a = np.zeros_like(v)
        alpha = np.zeros_like(w)
        for s, c in zip(_FD_OFFSETS, _FD_WEIGHTS, strict=True):
            qs = q + s * h * qd
            vs, ws, _ = self.velocities(qs, self.Gamma(qs) @ u)
            a += c * vs
            alpha += c * ws
        return v, w, a / h, alpha / h

    def bias_forces(self, q: np.ndarray, u: np.ndarray, f_ext: np.ndarray | None = None,
                    gravity: bool = True) -> np.ndarray:
        """``C(q, u)`` with ``M u̇ + C = τ`` (gravity, stiffness, damping, ``f_ext``)."""
        Jv, Jw, JV = self.jacobians(q)
        v, w, a, alpha = self.accelerations(q, u)
        m, Iel = self.element_masses, self.element_inertias
        force = m[:, None] * a
        if gravity:
            force = force - m[:, None] * self.gravity
        Iw = np.einsum("pij,pj->pi", Iel, w)
        moment = np.einsum("pij,pj->pi", Iel, alpha) + np.cross(w, Iw)
        C = np.einsum("pi,pik->k", force, Jv) + np.einsum("pi,pik->k", moment, Jw)
        for i, b in enumerate(self.bodies):
            if b.m:
                s = slice(b.u0 + b.nu, b.u0 + b.nu + b.m)
                C[s] += b.K @ self.eta(q, i) + b.D @ self.eta_dot(u, i)
        if f_ext is not None:
            C -= np.einsum("ni,nik->k", np.asarray(f_ext, float), JV)
        return C

    def kinetic_energy(self, q: np.ndarray, u: np.ndarray) -> float:
        """``Σ ½ m |ẋ|² + ½ ωᵀ I ω``."""
        v, w, _ = self.velocities(q, self.Gamma(q) @ u)
        return 0.5 * float(
            np.sum(self.element_masses * np.sum(v * v, axis=1))
            + np.einsum("pi,pij,pj->", w, self.element_inertias, w)
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """``Σ ½ ηᵀ K η − Σ m g·x``."""
        _, X, _ = self.configuration(q)
        V = -float(self.element_masses @ (X @ self.gravity))
        for i, b in enumerate(self.bodies):
            eta = self.eta(q, i)
            V += 0.5 * float(eta @ b.K @ eta)
        return V

    def geometric_energy(self, q: np.ndarray) -> complex:
        """``Σ K1·η³/3! + K2·η⁴/4!`` over the bodies with stiffening tensors: the strain
        energy the exact model adds to ``½ ηᵀ K η`` (complex-analytic in ``q``)."""
        U = 0.0
        for i, b in enumerate(self.bodies):
            if b.K1 is not None:
                eta = self.eta(q, i)
                U = U + (np.einsum("ijk,i,j,k->", b.K1, eta, eta, eta) / 6.0
                         + np.einsum("ijkl,i,j,k,l->", b.K2, eta, eta, eta, eta) / 24.0)
        return U

    def geometric_force(self, q: np.ndarray) -> np.ndarray:
        """(nu,) the gradient of :meth:`geometric_energy` with respect to the modal
        coordinates (complex step), in the layout of ``u``."""
        out = np.zeros(self.nu)
        h = 1e-30
        for b in self.bodies:
            if b.K1 is None:
                continue
            s = b.q0 + b.nq
            for k in range(b.m):
                qc = q.astype(complex)
                qc[s + k] += 1j * h
                out[b.u0 + b.nu + k] = self.geometric_energy(qc).imag / h
        return out

    def body_poses(self, q: np.ndarray) -> list:
        """Pose ``(R, p)`` of every body frame in the inertial frame."""
        return self.configuration(q)[0]
