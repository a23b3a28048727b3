"""Classical rigid-body dynamics (Featherstone style) as an independent test reference.

This module shares no code with :mod:`flexdyn`.  It reads a model dict in the flexdyn
model-file format whose bodies are rigid (no ``flex`` block, or a ``flex`` block without
modes whose nodes then act as rigidly attached point masses and attachment points) and
computes, with the textbook algorithms of Featherstone's *Rigid Body Dynamics Algorithms*
(2008),

* :meth:`RigidModel.rnea`  — recursive Newton–Euler inverse dynamics,
* :meth:`RigidModel.crba`  — composite-rigid-body mass matrix,
* :meth:`RigidModel.aba`   — articulated-body forward dynamics,

for trees given by a parent array, with multi-degree-of-freedom joints represented by
6 × nu motion subspaces and gravity entered as an upward acceleration of the base.

Conventions (those of flexdyn's model file):

* spatial vectors are angular-first: motion ``[ω; v]``, force ``[n; f]``;
* every body quantity is expressed in the body frame ``F_i`` at its origin;
* ``X_up[i]`` is the Plücker motion transform from the parent's body frame (the inertial
  frame for a root) to ``F_i``;
* joint speeds follow the model file: revolute/prismatic/screw/cylindrical/universal rates;
  spherical: angular velocity of ``J_c`` relative to ``J_p`` in ``J_c``; free:
  ``[ω; v]`` of ``J_c`` relative to ``J_p`` in ``J_c`` (``v`` of ``J_c``'s origin);
  quaternions ``[w, x, y, z]``; free ``q = [quaternion, position of J_c in J_p]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .brute_force import _JOINT_SIZES as _NQ_NU  # one joint-size table for both oracles

#: The joint kinds this reference implements (not the joints from joint maps, which the
#: brute-force oracle checks).
JOINT_TYPES = ("fixed", "revolute", "prismatic", "screw", "cylindrical", "universal",
               "spherical", "free")

__all__ = [
    "JOINT_TYPES",
    "RigidModel",
    "cross",
    "inertia_matrix",
    "plucker",
    "quat_rotation",
    "rodrigues",
]



# ---------------------------------------------------------------------------------------------
# 3-D and spatial algebra
# ---------------------------------------------------------------------------------------------
def hat(v: Sequence[float]) -> np.ndarray:
    """3 × 3 matrix of the cross product ``v × ·``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rodrigues(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the unit ``axis``: ``I + sin θ â + (1 − cos θ) â²``."""
    K = hat(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quat_rotation(quat: Sequence[float]) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``[w, x, y, z]``."""
    w, x, y, z = np.asarray(quat, float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def plucker(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Motion transform ``X_{B←A}`` for a frame ``B`` with pose ``(R, p)`` in ``A``.

    A point with ``B`` coordinates ``x`` has ``A`` coordinates ``R x + p``; then
    ``X_{B←A} = [[Rᵀ, 0], [−Rᵀ p̂, Rᵀ]]`` maps ``[ω; v]`` at ``A``'s origin in ``A``
    coordinates to ``B``'s origin in ``B`` coordinates.  Forces map with ``X⁻ᵀ`` and
    back with ``Xᵀ``.
    """
    X = np.zeros((6, 6))
    Rt = R.T
    X[:3, :3] = Rt
    X[3:, 3:] = Rt
    X[3:, :3] = -Rt @ hat(p)
    return X


def cross(v: np.ndarray) -> np.ndarray:
    """Spatial motion cross-product matrix ``v×`` (``crm``); ``v×* = −(v×)ᵀ``."""
    out = np.zeros((6, 6))
    W = hat(v[:3])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[3:, :3] = hat(v[3:])
    return out


def cross_force(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``v ×* f`` for a motion ``v`` and force ``f``."""
    return -cross(v).T @ f


def inertia_matrix(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """6 × 6 spatial inertia about the frame origin of a body with mass, com and inertia
    about the com (all in that frame): ``[[I_c + m ĉ ĉᵀ, m ĉ], [m ĉᵀ, m 1]]``."""
    C = hat(com)
    out = np.zeros((6, 6))
    out[:3, :3] = inertia_com + mass * C @ C.T
    out[:3, 3:] = mass * C
    out[3:, :3] = mass * C.T
    out[3:, 3:] = mass * np.eye(3)
    return out


# ---------------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Joint:
    type: str
    axis: np.ndarray | None
    axes: np.ndarray | None
    pitch: float

    @property
    def nq(self) -> int:
        return _NQ_NU[self.type][0]

    @property
    def nu(self) -> int:
        return _NQ_NU[self.type][1]

    def pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)`` of ``J_c`` in ``J_p``."""
        t, a = self.type, self.axis
        if t == "fixed":
            return np.eye(3), np.zeros(3)
        if t == "revolute":
            return rodrigues(a, q[0]), np.zeros(3)
        if t == "prismatic":
            return np.eye(3), q[0] * a
        if t == "screw":
            return rodrigues(a, q[0]), self.pitch * q[0] * a
        if t == "cylindrical":
            return rodrigues(a, q[0]), q[1] * a
        if t == "universal":
            return rodrigues(self.axes[0], q[0]) @ rodrigues(self.axes[1], q[1]), np.zeros(3)
        if t == "spherical":
            return quat_rotation(q), np.zeros(3)
        return quat_rotation(q[:4]), np.array(q[4:7], float)

    def subspace(self, q: np.ndarray) -> np.ndarray:
        """Motion subspace ``S`` (6 × nu) in ``J_c`` coordinates."""
        t, a = self.type, self.axis
        S = np.zeros((6, self.nu))
        if t == "revolute":
            S[:3, 0] = a
        elif t == "prismatic":
            S[3:, 0] = a
        elif t == "screw":
            S[:3, 0] = a
            S[3:, 0] = self.pitch * a
        elif t == "cylindrical":
            S[:3, 0] = a
            S[3:, 1] = a
        elif t == "universal":
            # ω = R₂ᵀ a₁ θ̇₁ + a₂ θ̇₂ in J_c
            S[:3, 0] = rodrigues(self.axes[1], q[1]).T @ self.axes[0]
            S[:3, 1] = self.axes[1]
        elif t == "spherical":
            S[:3, :] = np.eye(3)
        elif t == "free":
            S[:, :] = np.eye(6)
        return S

    def bias(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """Velocity-product term ``c_J = Ṡ q̇`` in ``J_c`` coordinates (nonzero only for the
        universal joint, whose first column ``R₂ᵀ a₁`` turns with ``θ₂``)."""
        c = np.zeros(6)
        if self.type == "universal":
            # d/dt (R₂ᵀ a₁) = −θ̇₂ â₂ R₂ᵀ a₁ = θ̇₂ (R₂ᵀ a₁) × a₂
            s1 = rodrigues(self.axes[1], q[1]).T @ self.axes[0]
            c[:3] = qd[0] * qd[1] * np.cross(s1, self.axes[1])
        return c

    def neutral(self) -> np.ndarray:
        q = np.zeros(self.nq)
        if self.type in ("spherical", "free"):
            q[0] = 1.0
        return q


def _arr(value: Any, shape: tuple[int, ...], default: float = 0.0) -> np.ndarray:
    if value is None:
        return np.full(shape, default, float)
    out = np.asarray(value, float)
    if out.shape != shape:
        raise ValueError(f"expected shape {shape}, got {out.shape}")
    return out


def _pose(spec: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
    spec = spec or {}
    R = spec.get("rotation")
    return (np.eye(3) if R is None else _arr(R, (3, 3))), _arr(spec.get("translation"), (3,))


def _compose(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    """Pose of ``c`` in ``a`` from ``b``'s pose in ``a`` and ``c``'s pose in ``b``."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _inverse(a: tuple[np.ndarray, np.ndarray]):
    return a[0].T, -a[0].T @ a[1]


class RigidModel:
    """Rigid multibody tree read from a flexdyn model dict (rigid bodies only).

    Attributes
    ----------
    n : number of bodies; ``parent`` : list of parent indices (−1 for the ground);
    nq, nu : sizes of ``q`` and ``u``; ``q_idx``/``u_idx`` : per-body slices;
    ``I`` : spatial inertias (6 × 6) in the body frames; ``gravity`` : (3,).
    """

    def __init__(self, d: Mapping[str, Any]):
        bodies = d["bodies"]
        self.gravity = _arr(d.get("gravity"), (3,))
        names = [b["name"] for b in bodies]
        self.n = len(bodies)
        self.parent: list[int] = []
        self.joints: list[_Joint] = []
        self.I: list[np.ndarray] = []
        self.X_tree: list[tuple[np.ndarray, np.ndarray]] = []  # J_p in the parent body frame
        self.X_child: list[tuple[np.ndarray, np.ndarray]] = []  # F_i in J_c
        nodes_of: list[np.ndarray] = []
        for i, b in enumerate(bodies):
            par = b.get("parent")
            p = -1 if par is None else names.index(par) if isinstance(par, str) else int(par)
            if p >= i:
                raise ValueError("parents must come before their children")
            self.parent.append(p)
            flex = b.get("flex") or {}
            modes = flex.get("modes")
            if modes is not None and np.asarray(modes, float).size:
                raise NotImplementedError("the rigid reference does not handle modes")
            nodes = np.asarray(flex.get("nodes", np.zeros((0, 3))), float).reshape(-1, 3)
            nodes_of.append(nodes)
            # inertia: rigid part plus node point masses and rotary inertias
            rigid = b.get("rigid") or {}
            Ib = inertia_matrix(
                float(rigid.get("mass", 0.0) or 0.0),
                _arr(rigid.get("com"), (3,)),
                _arr(rigid.get("inertia"), (3, 3)),
            )
            if len(nodes):
                masses = _arr(flex.get("node_masses"), (len(nodes),))
                rot = flex.get("node_inertias")
                rot = np.zeros((len(nodes), 3, 3)) if rot is None else _arr(rot, (len(nodes), 3, 3))
                for j in range(len(nodes)):
                    Ib = Ib + inertia_matrix(masses[j], nodes[j], rot[j])
            self.I.append(Ib)
            js = b["joint"]
            jt = js["type"]
            if jt not in _NQ_NU:
                raise ValueError(f"unknown joint type {jt!r}")
            axis = None if js.get("axis") is None else _arr(js["axis"], (3,))
            axes = None if js.get("axes") is None else _arr(js["axes"], (2, 3))
            self.joints.append(_Joint(jt, axis, axes, float(js.get("pitch", 0.0) or 0.0)))
            # J_p in F_p: node frame (node position, F's orientation) then placement
            pn = js.get("parent_node")
            T_node_p = (np.eye(3), np.zeros(3) if pn is None else nodes_of[p][int(pn)].copy())
            self.X_tree.append(_compose(T_node_p, _pose(js.get("placement"))))
            # F_i in J_c: child_placement gives the child node frame in J_c
            cn = js.get("child_node")
            T_node_c = (np.eye(3), np.zeros(3) if cn is None else nodes[int(cn)].copy())
            self.X_child.append(_compose(_pose(js.get("child_placement")), _inverse(T_node_c)))
        nqs = [j.nq for j in self.joints]
        nus = [j.nu for j in self.joints]
        qs, us = np.cumsum([0, *nqs]), np.cumsum([0, *nus])
        self.q_idx = [slice(int(qs[i]), int(qs[i + 1])) for i in range(self.n)]
        self.u_idx = [slice(int(us[i]), int(us[i + 1])) for i in range(self.n)]
        self.nq, self.nu = int(qs[-1]), int(us[-1])

    # -- state --------------------------------------------------------------------------------
    def neutral(self) -> np.ndarray:
        return np.concatenate([j.neutral() for j in self.joints])

    # -- kinematics ---------------------------------------------------------------------------
    def _kinematics(self, q: np.ndarray):
        """``X_up`` (parent body frame → F_i) and ``S`` (6 × nu, in F_i) per body."""
        X_up, S, X_Jc = [], [], []
        for i, jnt in enumerate(self.joints):
            qi = q[self.q_idx[i]]
            pose = _compose(_compose(self.X_tree[i], jnt.pose(qi)), self.X_child[i])
            X_up.append(plucker(*pose))
            Xc = plucker(*self.X_child[i])  # J_c → F_i
            X_Jc.append(Xc)
            S.append(Xc @ jnt.subspace(qi))
        return X_up, S, X_Jc

    def _base_acceleration(self, gravity: bool) -> np.ndarray:
        a0 = np.zeros(6)
        if gravity:
            a0[3:] = -self.gravity
        return a0

    # -- algorithms ---------------------------------------------------------------------------
    def rnea(self, q, u, udot, gravity: bool = True) -> np.ndarray:
        """Inverse dynamics ``τ = M(q) u̇ + C(q, u)`` (recursive Newton–Euler)."""
        q, u, udot = (np.asarray(x, float) for x in (q, u, udot))
        X_up, S, X_Jc = self._kinematics(q)
        a0 = self._base_acceleration(gravity)
        v, a, f = [None] * self.n, [None] * self.n, [None] * self.n
        for i, jnt in enumerate(self.joints):
            ui = u[self.u_idx[i]]
            vJ = S[i] @ ui
            cJ = X_Jc[i] @ jnt.bias(q[self.q_idx[i]], ui)
            p = self.parent[i]
            vp, ap = (np.zeros(6), a0) if p < 0 else (v[p], a[p])
            v[i] = X_up[i] @ vp + vJ
            a[i] = X_up[i] @ ap + S[i] @ udot[self.u_idx[i]] + cJ + cross(v[i]) @ vJ
            f[i] = self.I[i] @ a[i] + cross_force(v[i], self.I[i] @ v[i])
        tau = np.zeros(self.nu)
        for i in reversed(range(self.n)):
            tau[self.u_idx[i]] = S[i].T @ f[i]
            p = self.parent[i]
            if p >= 0:
                f[p] = f[p] + X_up[i].T @ f[i]
        return tau

    def bias(self, q, u, gravity: bool = True) -> np.ndarray:
        """``C(q, u)``: velocity products and gravity."""
        return self.rnea(q, u, np.zeros(self.nu), gravity)

    def crba(self, q) -> np.ndarray:
        """Mass matrix by the composite-rigid-body algorithm."""
        q = np.asarray(q, float)
        X_up, S, _ = self._kinematics(q)
        Ic = [I.copy() for I in self.I]
        for i in reversed(range(self.n)):
            p = self.parent[i]
            if p >= 0:
                Ic[p] = Ic[p] + X_up[i].T @ Ic[i] @ X_up[i]
        M = np.zeros((self.nu, self.nu))
        for i in range(self.n):
            si = self.u_idx[i]
            F = Ic[i] @ S[i]
            M[si, si] = S[i].T @ F
            j = i
            while self.parent[j] >= 0:
                F = X_up[j].T @ F
                j = self.parent[j]
                sj = self.u_idx[j]
                M[sj, si] = S[j].T @ F
                M[si, sj] = M[sj, si].T
        return M

    def aba(self, q, u, tau, gravity: bool = True) -> np.ndarray:
        """Forward dynamics ``u̇`` by the articulated-body algorithm."""
        q, u, tau = (np.asarray(x, float) for x in (q, u, tau))
        X_up, S, X_Jc = self._kinematics(q)
        n = self.n
        v, c = [None] * n, [None] * n
        IA = [I.copy() for I in self.I]
        pA = [None] * n
        for i, jnt in enumerate(self.joints):
            ui = u[self.u_idx[i]]
            vJ = S[i] @ ui
            p = self.parent[i]
            v[i] = X_up[i] @ (np.zeros(6) if p < 0 else v[p]) + vJ
            c[i] = X_Jc[i] @ jnt.bias(q[self.q_idx[i]], ui) + cross(v[i]) @ vJ
            pA[i] = cross_force(v[i], self.I[i] @ v[i])
        U, Dinv, uu = [None] * n, [None] * n, [None] * n
        for i in reversed(range(n)):
            U[i] = IA[i] @ S[i]
            D = S[i].T @ U[i]
            Dinv[i] = np.linalg.inv(D) if D.size else np.zeros((0, 0))
            uu[i] = tau[self.u_idx[i]] - S[i].T @ pA[i]
            p = self.parent[i]
            if p >= 0:
                Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
                pa = pA[i] + Ia @ c[i] + U[i] @ (Dinv[i] @ uu[i])
                IA[p] = IA[p] + X_up[i].T @ Ia @ X_up[i]
                pA[p] = pA[p] + X_up[i].T @ pa
        a0 = self._base_acceleration(gravity)
        a = [None] * n
        udot = np.zeros(self.nu)
        for i in range(n):
            p = self.parent[i]
            ai = X_up[i] @ (a0 if p < 0 else a[p]) + c[i]
            qdd = Dinv[i] @ (uu[i] - U[i].T @ ai)
            udot[self.u_idx[i]] = qdd
            a[i] = ai + S[i] @ qdd
        return udot
