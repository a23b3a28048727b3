"""Body models: rigid part plus lumped-mass assumed-mode flexibility.

A body ``k`` has a reference frame ``F_k`` in which all of its data are given.  Its
optional flexible part is a lumped-mass finite-element description: ``n`` nodes with
point masses ``m_j`` and rotary inertias ``J_j``, and a modal matrix ``Π`` (6n × n_m)
whose rows ``6j … 6j+5`` are node ``j``'s ``[rx, ry, rz, tx, ty, tz]``.

Node kinematics (the ``"full"`` fidelity)
-----------------------------------------
Node ``j`` carries a frame whose origin is at ``l_j(η) = l0_j + Π_t(j) η`` and whose
orientation relative to ``F_k`` is ``R_j(η) = exp(Π_r(j) η)`` — a **holonomic** map of
``η`` whose angular velocity ``J_r(Π_r η) Π_r η̇`` equals the paper's ``Π_r η̇`` to first
order.  Because every node frame is a function of ``η`` alone, the kinetic energy is
exact for this kinematics and the resulting equations conserve energy.

The twist of node ``j``, in node coordinates, is (Jain & Rodriguez Eq 21)::

    V_s(j) = [E_j, X_j] V_m(k),   V_m(k) = [η̇; V(k)],
    E_j = [J_r(θ_j) Π_r(j); R_jᵀ Π_t(j)]   (6 × n_m, the deformation twist map, Π),
    X_j = φ*(k, j)                         (6 × 6, rigid motion of F_k seen at node j),

so the modal mass matrix is ``M_m(k) = Σ_j [E_j, X_j]ᵀ M_s(j) [E_j, X_j] + M_rigid``
(Eq 23) and the modal bias force is (Eqs 28, 31, 37)::

    b_m(k) = Σ_j [E_j, X_j]ᵀ ( M_s(j) (Ė_j η̇ + V_s(j) × E_j η̇) + V_s(j) ×* M_s(j) V_s(j) )
             + [0; V ×* M_rigid V].

The ``"ruthless"`` fidelity (Appendix B; Damaren & Sharf's RL model) evaluates the same
expressions at ``η = 0`` with ``η̇ = 0`` in every velocity product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spatial import (
    Transform,
    cross_force,
    cross_motion,
    right_jacobian_so3_rate,
    rigid_inertia,
    so3_maps,
)

__all__ = ["Body", "NodeFrames"]


@dataclass(frozen=True)
class NodeFrames:
    """Node frames of one body at a deformation ``η``.

    Attributes
    ----------
    R : array (n, 3, 3) — node orientations in ``F``.
    p : array (n, 3) — node positions in ``F``, m.
    E : array (n, 6, n_m) — deformation twist maps ``E_j`` (node coordinates).
    theta : array (n, 3) — elastic rotation vectors ``Π_r(j) η``.
    """

    R: np.ndarray
    p: np.ndarray
    E: np.ndarray
    theta: np.ndarray

    def transform(self, j: int) -> Transform:
        """Pose of node ``j``'s frame in ``F``."""
        return Transform(self.R[j], self.p[j])


@dataclass(frozen=True, eq=False)
class Body:
    """Constant data of one body (built by :class:`flexdyn.Model`).

    Attributes
    ----------
    name : str
    mass, com, inertia : rigid part (kg; m, (3,); kg m², (3, 3) about the com).
    M_rigid : array (6, 6) — spatial inertia of the rigid part about ``F``'s origin.
    nodes : array (n, 3) — undeformed node positions ``l0``, m.
    node_masses : array (n,), kg.
    node_inertias : array (n, 3, 3), kg m² (node frame).
    Pi_r, Pi_t : arrays (n, 3, n_m) — rotational and translational mode shapes.
    K, C : arrays (n_m, n_m) — modal stiffness and damping.
    M_s : array (n, 6, 6) — nodal spatial inertias ``diag(J_j, m_j I)`` in node frames.
    """

    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    nodes: np.ndarray
    node_masses: np.ndarray
    node_inertias: np.ndarray
    Pi_r: np.ndarray
    Pi_t: np.ndarray
    K: np.ndarray
    C: np.ndarray

    @staticmethod
    def from_spec(name: str, rigid: dict | None, flex: dict | None) -> Body:
        """Build from the normalised ``rigid``/``flex`` blocks of a model dict."""
        if rigid is None:
            mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        else:
            mass, com, inertia = float(rigid["mass"]), rigid["com"], rigid["inertia"]
        if flex is None:
            nodes, nm = np.zeros((0, 3)), np.zeros(0)
            ni, modes = np.zeros((0, 3, 3)), np.zeros((0, 0))
            K = C = np.zeros((0, 0))
        else:
            nodes, nm, ni = flex["nodes"], flex["node_masses"], flex["node_inertias"]
            modes, K, C = flex["modes"], flex["stiffness"], flex["damping"]
        n = nodes.shape[0]
        m = modes.shape[1] if modes.ndim == 2 else 0
        Pi = np.asarray(modes, dtype=float).reshape(n, 6, m)
        return Body(
            name=name,
            mass=mass,
            com=np.asarray(com, dtype=float),
            inertia=np.asarray(inertia, dtype=float),
            nodes=np.asarray(nodes, dtype=float),
            node_masses=np.asarray(nm, dtype=float),
            node_inertias=np.asarray(ni, dtype=float),
            Pi_r=np.ascontiguousarray(Pi[:, :3, :]),
            Pi_t=np.ascontiguousarray(Pi[:, 3:, :]),
            K=np.asarray(K, dtype=float),
            C=np.asarray(C, dtype=float),
        )

    def __post_init__(self) -> None:
        M_s = np.zeros((self.n_nodes, 6, 6))
        M_s[:, :3, :3] = self.node_inertias
        M_s[:, 3:, 3:] = self.node_masses[:, None, None] * np.eye(3)
        object.__setattr__(self, "M_s", M_s)
        object.__setattr__(self, "M_rigid", rigid_inertia(self.mass, self.com, self.inertia))
        # undeformed node frames and the constant (ruthless) modal mass matrix M_m⁰
        frames0 = self._node_frames(np.zeros(self.n_modes))
        object.__setattr__(self, "frames0", frames0)
        object.__setattr__(self, "M_m0", self._modal_mass(frames0))

    # -- sizes -----------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        """Number of nodes ``n``."""
        return self.nodes.shape[0]

    @property
    def n_modes(self) -> int:
        """Number of assumed modes ``n_m``."""
        return self.Pi_r.shape[2]

    @property
    def total_mass(self) -> float:
        """Rigid mass plus node masses (kg)."""
        return self.mass + float(self.node_masses.sum())

    # -- node kinematics -------------------------------------------------------------------
    def node_frames(self, eta: np.ndarray) -> NodeFrames:
        """Node frames at deformation ``η`` (n_m,) — see the module docstring."""
        if self.n_modes == 0 and not np.iscomplexobj(eta):
            return self.frames0
        return self._node_frames(eta)

    def _node_frames(self, eta: np.ndarray) -> NodeFrames:
        theta = self.Pi_r @ eta  # (n, 3)
        R, Jr = so3_maps(theta)
        p = self.nodes + self.Pi_t @ eta
        E = np.concatenate([Jr @ self.Pi_r, np.swapaxes(R, -1, -2) @ self.Pi_t], axis=1)
        return NodeFrames(R=R, p=p, E=E, theta=theta)

    def node_frames_at(self, eta: np.ndarray, fidelity: str) -> NodeFrames:
        """Node frames for a fidelity: the deformed ones (``"full"``) or ``η = 0``."""
        return self.frames0 if fidelity == "ruthless" else self.node_frames(eta)

    def node_twist_rate(self, frames: NodeFrames, j: int, eta_dot: np.ndarray) -> np.ndarray:
        """``Ė_j η̇`` (6,): velocity-product part of node ``j``'s deformation acceleration.

        ``Ė_j η̇ = [J̇_r(θ_j) Π_r η̇; −(J_r Π_r η̇) × (R_jᵀ Π_t η̇)]``.
        """
        theta_dot = self.Pi_r[j] @ eta_dot
        w_rel = frames.E[j, :3] @ eta_dot
        v_rel = frames.E[j, 3:] @ eta_dot
        top = right_jacobian_so3_rate(frames.theta[j], theta_dot) @ theta_dot
        return np.concatenate([top, -np.cross(w_rel, v_rel)])

    def _node_maps(self, frames: NodeFrames) -> np.ndarray:
        """``B_j = [E_j, φ*(k, j)]`` for all nodes, shape (n, 6, n_m + 6)."""
        n, m = self.n_nodes, self.n_modes
        B = np.zeros((n, 6, m + 6), dtype=frames.E.dtype)
        B[:, :, :m] = frames.E
        Rt = np.swapaxes(frames.R, -1, -2)
        B[:, :3, m:m + 3] = Rt
        B[:, 3:, m + 3:] = Rt
        # linear velocity of node j: Rᵀ (v + ω × l_j) = Rᵀ v − Rᵀ l̃_j ω
        px = np.zeros((n, 3, 3), dtype=frames.p.dtype)
        px[:, 0, 1], px[:, 0, 2] = -frames.p[:, 2], frames.p[:, 1]
        px[:, 1, 0], px[:, 1, 2] = frames.p[:, 2], -frames.p[:, 0]
        px[:, 2, 0], px[:, 2, 1] = -frames.p[:, 1], frames.p[:, 0]
        B[:, 3:, m:m + 3] = -Rt @ px
        return B

    def modal_mass(self, frames: NodeFrames) -> np.ndarray:
        """Modal mass matrix ``M_m(k)`` ((n_m+6) × (n_m+6)) for given node frames, Eq 23.

        ``M_m = Σ_j B_jᵀ M_s(j) B_j + [[0, 0], [0, M_rigid]]``; ``M_m⁰ = M_m(frames0)`` is
        stored as ``M_m0`` and returned as is for a rigid body (nothing depends on the state).
        """
        return self.M_m0 if self.n_modes == 0 else self._modal_mass(frames)

    def _modal_mass(self, frames: NodeFrames) -> np.ndarray:
        m = self.n_modes
        B = self._node_maps(frames)
        M = np.einsum("nji,njk,nkl->il", B, self.M_s, B)
        M[m:, m:] += self.M_rigid
        return M

    def modal_bias(self, frames: NodeFrames, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """Modal gyroscopic force ``b_m(k)`` (n_m + 6,), Eqs 28, 31, 37.

        Parameters
        ----------
        frames : node frames at the deformation used by the fidelity.
        eta_dot : (n_m,) modal rates entering the velocity products (zero when ruthless).
        V : (6,) twist of ``F_k`` in ``F_k`` coordinates.
        """
        m = self.n_modes
        out = np.zeros(m + 6, dtype=np.result_type(V, eta_dot, float))
        if m == 0:  # rigid: nodes and rigid part form one rigid body of inertia M_m⁰
            out[:] = cross_force(V, self.M_m0 @ V)
            return out
        out[m:] = cross_force(V, self.M_rigid @ V)
        if self.n_nodes == 0:
            return out
        B = self._node_maps(frames)
        Vm = np.concatenate([eta_dot, V])
        Vs = B @ Vm  # (n, 6) node twists
        w = frames.E @ eta_dot  # (n, 6) deformation twists
        if m:
            theta_dot = self.Pi_r @ eta_dot
            Jr_dot = right_jacobian_so3_rate(frames.theta, theta_dot)
            Edot = np.concatenate(
                [np.einsum("nij,nj->ni", Jr_dot, theta_dot), -np.cross(w[:, :3], w[:, 3:])],
                axis=1,
            )
            acc = Edot + cross_motion(Vs, w)
        else:
            acc = np.zeros_like(Vs)
        Ms = self.M_s
        f = np.einsum("nij,nj->ni", Ms, acc) + cross_force(Vs, np.einsum("nij,nj->ni", Ms, Vs))
        out += np.einsum("nji,nj->i", B, f)
        return out
