"""Body models: rigid part plus lumped-mass assumed-mode flexibility.

A body ``k`` has a reference frame ``F_k`` in which all of its data are given.  Its
optional flexible part is a lumped-mass finite-element description: ``n`` nodes with
point masses ``m_j`` and rotary inertias ``J_j``, and a modal matrix ``Π`` (6n × n_m)
whose rows ``6j … 6j+5`` are node ``j``'s ``[rx, ry, rz, tx, ty, tz]``.

Node kinematics (the ``"full"`` fidelity)
-----------------------------------------
Node ``j`` carries a frame whose origin is at ``l_j(η) = l0_j + Π_t(j) η`` and whose
orientation relative to ``F_k`` is ``R_j(η) = R(Π_r(j) η)`` — a **holonomic** map of
``η`` whose angular velocity ``J(Π_r η) Π_r η̇`` equals the paper's ``Π_r η̇`` to first
order.  ``R`` and ``J`` are those of the model's tip-kinematics option
(:mod:`flexdyn.tip_kinematics`): by default the exponential map ``R = exp(θ̃)`` with the
right Jacobian ``J = J_r(θ)``.  Because every node frame is a function of ``η`` alone, the
kinetic energy is exact for this kinematics and the resulting equations conserve energy.

The twist of node ``j``, in node coordinates, is (Jain & Rodriguez Eq 21)::

    V_s(j) = [E_j, X_j] V_m(k),   V_m(k) = [η̇; V(k)],
    E_j = [J(θ_j) Π_r(j); R_jᵀ Π_t(j)]     (6 × n_m, the deformation twist map, Π),
    X_j = φ*(k, j)                         (6 × 6, rigid motion of F_k seen at node j),

so the modal mass matrix is ``M_m(k) = Σ_j [E_j, X_j]ᵀ M_s(j) [E_j, X_j] + M_rigid``
(Eq 23) and the modal bias force is (Eqs 28, 31, 37)::

    b_m(k) = Σ_j [E_j, X_j]ᵀ ( M_s(j) (Ė_j η̇ + V_s(j) × E_j η̇) + V_s(j) ×* M_s(j) V_s(j) )
             + [0; V ×* M_rigid V].

The ``"ruthless"`` fidelity (Appendix B; Damaren & Sharf's RL model) evaluates the same
expressions at ``η = 0`` with ``η̇ = 0`` in every velocity product.

Consistent mass (:class:`InertiaInvariants`)
--------------------------------------------
A body reduced from a finite-element component with a consistent (coupled) mass matrix
carries its kinetic energy as inertia invariants instead of node masses: the node motion is
the finite-element one, linear in ``η`` (node ``j`` at ``l0_j + Π_t(j) η`` with the small
rotation rate ``ω + Π_r(j) η̇``), and ``M_m`` and ``b_m`` are the mass matrix and the
gyroscopic force of that kinetic energy, added to those of the node masses and the rigid
part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .linalg import inertia_scale, spd_inverse
from .spatial import Transform, cross_force, cross_motion, rigid_inertia, skew, twist_maps
from .tip_kinematics import DEFAULT_TIP_KINEMATICS, TIP_KINEMATICS

__all__ = ["NODE_COMPONENTS", "Body", "BodyModel", "FlexibleStep", "InertiaInvariants",
           "JointSide", "NodeAttachment", "NodeFrames", "RigidBodyModel", "UndeformedBodyModel",
           "require_lumped_mass"]

#: The six displacement components of a node, in coordinate order (a nodal body's
#: coordinates, and the rows of ``Π`` per node).
NODE_COMPONENTS = ("rx", "ry", "rz", "tx", "ty", "tz")


@dataclass(frozen=True)
class NodeFrames:
    """Node frames of one body at a deformation ``η``.

    Attributes
    ----------
    R : array (n, 3, 3) — node orientations in ``F``.
    p : array (n, 3) — node positions in ``F``, m.
    E : array (n, 6, n_m) — deformation twist maps ``E_j`` (node coordinates).
    theta : array (n, 3) — elastic rotation coordinates ``Π_r(j) η`` (rad; their meaning is
        the tip-kinematics option's).
    eta : array (n_m,) — the deformation ``η`` itself (the inertia invariants' argument).
    """

    R: np.ndarray
    p: np.ndarray
    E: np.ndarray
    theta: np.ndarray
    eta: np.ndarray

    def transform(self, j: int) -> Transform:
        """Pose of node ``j``'s frame in ``F``."""
        return Transform(self.R[j], self.p[j])


@dataclass(frozen=True, eq=False)
class InertiaInvariants:
    """The kinetic energy of a consistent (coupled) finite-element mass matrix ``𝕄`` on a
    body's modes, as inertia invariants (the standard-input-data approach).

    With node ``j``'s finite-element velocity in ``F`` coordinates (rows ``[r; t]``)::

        W_j = [ω + Π_r(j) η̇;  v + ω × p_j(η) + Π_t(j) η̇],   p_j(η) = l0_j + Π_t(j) η,

    that is ``W = G(η) V_m`` with ``V_m = [η̇; V]``, ``V = [ω; v]`` and
    ``G(η) = G_0 + Σ_k η_k G_k`` (``G_k`` acts on ``ω`` only: ``−p̃`` changes by
    ``−Π_t(j)e_k~``), the kinetic energy ``T = ½ Wᵀ 𝕄 W = ½ V_mᵀ M_m(η) V_m`` has::

        M_m(η) = I0 + Sᵀ A1 + A1ᵀ S + Sᵀ A2 S,   A1 = Σ_k η_k I1_k,   A2 = Σ_kl η_k η_l I2_kl,

    with ``S`` (3 × (m + 6)) the rows of ``ω`` in ``V_m``, ``I0 = G_0ᵀ 𝕄 G_0``,
    ``I1_k = G_kᵀ 𝕄 G_0`` and ``I2_kl = G_kᵀ 𝕄 G_l`` (the ``ω`` rows of ``G_k``).  The
    gyroscopic force is that of Lagrange's equations in ``η`` and of Euler–Poincaré's in
    ``V``: ``b_m = Ṁ_m V_m − [∂T/∂η; 0] + [0; V ×* (M_m V_m)_V]`` (:meth:`modal_bias`).

    Attributes
    ----------
    I0 : (m + 6, m + 6) — the mass matrix at ``η = 0``: modal mass, rigid–elastic coupling
        and the component's spatial inertia about ``F``'s origin (kg, kg m, kg m²).
    I1 : (m, 3, m + 6) — its first-order change (kg m per unit ``η``).
    I2 : (m, m, 3, 3) — its second-order change, ``I2[k, l] = I2[l, k]ᵀ``.
    """

    I0: np.ndarray
    I1: np.ndarray
    I2: np.ndarray

    @staticmethod
    def of(nodes: np.ndarray, mass: np.ndarray, Pi_r: np.ndarray,
           Pi_t: np.ndarray) -> InertiaInvariants:
        """The invariants of the mass matrix ``mass`` (6n × 6n, node rows
        ``[rx, ry, rz, tx, ty, tz]``) on the modes ``Pi_r``, ``Pi_t`` (n, 3, m) of the nodes
        ``nodes`` (n, 3)."""
        n, m = Pi_t.shape[0], Pi_t.shape[2]
        eye = np.eye(3)
        G0 = np.zeros((n, 6, m + 6))
        G0[:, :3, :m], G0[:, 3:, :m] = Pi_r, Pi_t
        G0[:, :3, m:m + 3] = eye
        G0[:, 3:, m:m + 3] = -skew(nodes)
        G0[:, 3:, m + 3:] = eye
        G0 = G0.reshape(6 * n, m + 6)
        Gk = np.zeros((m, n, 6, 3))
        Gk[:, :, 3:, :] = -skew(np.moveaxis(Pi_t, 2, 0))
        Gk = Gk.reshape(m, 6 * n, 3)
        MG0 = mass @ G0
        I0 = G0.T @ MG0
        I1 = np.einsum("kNa,Nc->kac", Gk, MG0)
        I2 = np.einsum("kNa,lNb->klab", Gk, mass @ Gk)
        return InertiaInvariants(I0=0.5 * (I0 + I0.T), I1=I1, I2=I2)

    def __post_init__(self) -> None:
        for a in (self.I0, self.I1, self.I2):
            a.setflags(write=False)

    @property
    def n_modes(self) -> int:
        return self.I1.shape[0]

    @property
    def mass(self) -> float:
        """The component's mass (kg): the translational diagonal of ``I0``."""
        return float(self.I0[-1, -1])

    def modal_mass(self, eta: np.ndarray) -> np.ndarray:
        """``M_m(η)`` ((m + 6) × (m + 6)) of the class docstring."""
        m = self.n_modes
        A1 = np.tensordot(eta, self.I1, axes=1)
        M = np.array(self.I0, dtype=A1.dtype)
        M[m:m + 3] += A1
        M[:, m:m + 3] += A1.T
        M[m:m + 3, m:m + 3] += np.einsum("k,l,klab->ab", eta, eta, self.I2)
        return M

    def modal_bias(self, eta: np.ndarray, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``b_m = Ṁ_m V_m − [∂T/∂η; 0] + [0; V ×* (M_m V_m)_V]`` ((m + 6),): with
        ``D_k = G_kᵀ 𝕄 G(η)`` (3 × (m + 6)), ``Ṁ_m V_m = Σ_k η̇_k (Sᵀ D_k V_m + D_kᵀ ω)`` and
        ``∂T/∂η_k = ω · D_k V_m``."""
        m = self.n_modes
        Vm = np.concatenate([eta_dot, V])
        w = V[:3]
        D = np.array(self.I1, dtype=np.result_type(eta, float))
        D[:, :, m:m + 3] += np.einsum("l,klab->kab", eta, self.I2)
        d = D @ Vm  # (m, 3): D_k V_m
        D_rate = np.tensordot(eta_dot, D, axes=1)  # Σ_k η̇_k D_k (3, m + 6)
        out = D_rate.T @ w
        out[:m] -= d @ w
        out[m:m + 3] += D_rate @ Vm
        out[m:] += cross_force(V, (self.modal_mass(eta) @ Vm)[m:])
        return out


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
    K1, K2 : arrays (n_m, n_m, n_m) and (n_m, n_m, n_m, n_m), or None — the geometric
        stiffness tensors of Damaren & Sharf's Eq 20 (third and fourth derivatives of the
        strain energy; :func:`flexdyn.beam.geometric_stiffness`), for the stiffened body
        models; None when the body carries no stiffening data.
    axial_modes : array (k,) of int — the stretch modes, which carry the axial load of the
        ``"consistent"`` model.
    tip_kinematics : str — the parametrisation of the node rotations, a key of
        :data:`flexdyn.tip_kinematics.TIP_KINEMATICS` (the model's ``"tip_kinematics"``);
        its entry is ``rotation``.
    attach_node : int or None — for a **nodal** body (Rodriguez's finite-element body, the
        model file's ``"nodal": true``) the node rigidly fixed to the joint; its coordinates
        are the six displacements ``[rx, ry, rz, tx, ty, tz]`` of every other node, node by
        node, so ``Π`` is the identity on them (zero rows at the attach node) and ``K``, ``C``
        the nodal stiffness and damping without the attach node's rows and columns.  None for
        rigid and modal bodies.
    inertia_invariants : InertiaInvariants or None — the kinetic energy of a consistent
        finite-element mass on the modes (the flex block's ``inertia_invariants_0/1/2``), on
        top of the node masses and the rigid part; None for lumped bodies.
    M_s : array (n, 6, 6) — nodal spatial inertias ``diag(J_j, m_j I)`` in node frames.
    frames0, M_m0 : the undeformed node frames and ``M_m⁰`` (computed on first use).
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
    K1: np.ndarray | None = None
    K2: np.ndarray | None = None
    axial_modes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    tip_kinematics: str = DEFAULT_TIP_KINEMATICS
    attach_node: int | None = None
    inertia_invariants: InertiaInvariants | None = None

    @staticmethod
    def from_spec(name: str, rigid: dict | None, flex: dict | None,
                  tip_kinematics: str = DEFAULT_TIP_KINEMATICS) -> Body:
        """Build from the normalised ``rigid``/``flex`` blocks of a model dict and the
        model's tip-kinematics option."""
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
            if flex.get("nodal"):
                modes, K, C = _nodal_coordinates(flex)
            else:
                modes, K, C = flex["modes"], flex["stiffness"], flex["damping"]
        n = nodes.shape[0]
        m = modes.shape[1] if modes.ndim == 2 else 0
        Pi = np.asarray(modes, dtype=float).reshape(n, 6, m)
        return Body(
            name=name,
            mass=mass,
            com=np.array(com, dtype=float),
            inertia=np.array(inertia, dtype=float),
            nodes=np.array(nodes, dtype=float),
            node_masses=np.array(nm, dtype=float),
            node_inertias=np.array(ni, dtype=float),
            Pi_r=np.array(Pi[:, :3, :], dtype=float, order="C"),
            Pi_t=np.array(Pi[:, 3:, :], dtype=float, order="C"),
            K=np.array(K, dtype=float),
            C=np.array(C, dtype=float),
            tip_kinematics=tip_kinematics,
            attach_node=None if flex is None or not flex.get("nodal") else flex["attach_node"],
            inertia_invariants=None if flex is None or flex.get("inertia_invariants_0") is None
            else InertiaInvariants(*(np.array(flex[f"inertia_invariants_{k}"], dtype=float)
                                     for k in range(3))),
            **({} if flex is None or flex.get("geometric_stiffness_1") is None else {
                "K1": np.array(flex["geometric_stiffness_1"], dtype=float),
                "K2": np.array(flex["geometric_stiffness_2"], dtype=float),
                "axial_modes": np.array(flex.get("axial_modes", []), dtype=int)}),
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "rotation", TIP_KINEMATICS[self.tip_kinematics])
        M_s = np.zeros((self.n_nodes, 6, 6))
        M_s[:, :3, :3] = self.node_inertias
        M_s[:, 3:, 3:] = self.node_masses[:, None, None] * np.eye(3)
        object.__setattr__(self, "M_s", M_s)
        object.__setattr__(self, "M_rigid", rigid_inertia(self.mass, self.com, self.inertia))
        invariants = self.inertia_invariants
        if invariants is not None and invariants.n_modes != self.n_modes:
            raise ValueError(f"body {self.name!r}: its inertia invariants are for "
                             f"{invariants.n_modes} modes, the body has {self.n_modes}")
        for a in (self.com, self.inertia, self.nodes, self.node_masses, self.node_inertias,
                  self.Pi_r, self.Pi_t, self.K, self.C, self.M_s, self.M_rigid, self.axial_modes,
                  *(() if self.K1 is None else (self.K1, self.K2))):
            a.setflags(write=False)

    # the undeformed node frames and the constant (ruthless) modal mass matrix M_m⁰, on first
    # use: a large nodal body's (n_m + 6)² M_m⁰ is only needed by the modal recursions
    @cached_property
    def frames0(self) -> NodeFrames:
        """Undeformed node frames (``η = 0``), read-only."""
        frames0 = self._node_frames(np.zeros(self.n_modes))
        for a in (frames0.R, frames0.p, frames0.E, frames0.theta, frames0.eta):
            a.setflags(write=False)
        return frames0

    @cached_property
    def M_m0(self) -> np.ndarray:
        """``M_m⁰ = M_m`` at the undeformed frames (Eq 23, Eq B4's constant), read-only."""
        M = self._modal_mass(self.frames0)
        M.setflags(write=False)
        return M

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
        """Rigid mass plus node masses plus the consistent mass of the invariants (kg)."""
        extra = 0.0 if self.inertia_invariants is None else self.inertia_invariants.mass
        return self.mass + float(self.node_masses.sum()) + extra

    # -- node kinematics -------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """Body kind for the body-model registry: ``"nodal"`` for a nodal body, else
        ``"modal"`` with modes and ``"rigid"`` without."""
        if self.attach_node is not None:
            return "nodal"
        return "modal" if self.n_modes else "rigid"

    @property
    def free_nodes(self) -> np.ndarray:
        """The nodes whose displacements are coordinates, in coordinate order (int (f,)): a
        nodal body's nodes but the attach node; none for a rigid or modal body."""
        if self.attach_node is None:
            return np.zeros(0, dtype=int)
        return np.delete(np.arange(self.n_nodes), self.attach_node)

    def coordinate_names(self, rates: bool = False) -> list[str]:
        """Names of the body's elastic coordinates (n_m): ``eta[k]`` for modes,
        ``node[j].rx`` … ``node[j].tz`` for the free nodes of a nodal body; with ``rates``
        those of their rates (``eta_dot[k]``, ``node[j].rx_dot``)."""
        if self.attach_node is None:
            return [f"eta{'_dot' if rates else ''}[{k}]" for k in range(self.n_modes)]
        return [f"node[{j}].{c}{'_dot' if rates else ''}" for j in self.free_nodes
                for c in NODE_COMPONENTS]

    def node_frames(self, eta: np.ndarray) -> NodeFrames:
        """Node frames at deformation ``η`` (n_m,) — see the module docstring."""
        return self._node_frames(eta)

    def _node_frames(self, eta: np.ndarray) -> NodeFrames:
        theta = self.Pi_r @ eta  # (n, 3)
        R, J = self.rotation.maps(theta)
        p = self.nodes + self.Pi_t @ eta
        E = np.concatenate([J @ self.Pi_r, np.swapaxes(R, -1, -2) @ self.Pi_t], axis=1)
        return NodeFrames(R=R, p=p, E=E, theta=theta, eta=eta)

    def node_twist_rate(self, frames: NodeFrames, j: int, eta_dot: np.ndarray) -> np.ndarray:
        """``Ė_j η̇`` (6,): velocity-product part of node ``j``'s deformation acceleration.

        ``Ė_j η̇ = [J̇(θ_j) Π_r η̇; −(J Π_r η̇) × (R_jᵀ Π_t η̇)]``.
        """
        theta_dot = self.Pi_r[j] @ eta_dot
        w_rel = frames.E[j, :3] @ eta_dot
        v_rel = frames.E[j, 3:] @ eta_dot
        top = self.rotation.rate(frames.theta[j], theta_dot) @ theta_dot
        return np.concatenate([top, -np.cross(w_rel, v_rel)])

    def node_maps(self, frames: NodeFrames) -> np.ndarray:
        """``B_j = [E_j, φ*(k, j)]`` for all nodes, shape (n, 6, n_m + 6): node ``j``'s twist
        (node frame) is ``B_j [η̇; V]`` (Eq 21), so a wrench ``w`` at the node does the
        generalized work ``B_jᵀ w``."""
        n, m = self.n_nodes, self.n_modes
        B = np.zeros((n, 6, m + 6), dtype=np.result_type(frames.E, frames.R, frames.p))
        B[:, :, :m] = frames.E
        B[:, :, m:] = twist_maps(frames.R, frames.p)
        return B

    def modal_mass(self, frames: NodeFrames) -> np.ndarray:
        """Modal mass matrix ``M_m(k)`` ((n_m+6) × (n_m+6)) for given node frames, Eq 23.

        ``M_m = Σ_j B_jᵀ M_s(j) B_j + [[0, 0], [0, M_rigid]]``, plus the consistent mass's
        :meth:`InertiaInvariants.modal_mass`; ``M_m⁰ = M_m(frames0)`` is stored (read-only)
        as ``M_m0``.
        """
        return self._modal_mass(frames)

    def _modal_mass(self, frames: NodeFrames) -> np.ndarray:
        m = self.n_modes
        B = self.node_maps(frames)
        M = np.einsum("nji,njk,nkl->il", B, self.M_s, B)
        M[m:, m:] += self.M_rigid
        if self.inertia_invariants is not None:
            M = M + self.inertia_invariants.modal_mass(frames.eta)
        return M

    def modal_bias(self, frames: NodeFrames, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """Modal gyroscopic force ``b_m(k)`` (n_m + 6,), Eqs 28, 31, 37, plus the consistent
        mass's :meth:`InertiaInvariants.modal_bias`.

        Parameters
        ----------
        frames : node frames at the deformation used by the fidelity.
        eta_dot : (n_m,) modal rates entering the velocity products (zero when ruthless).
        V : (6,) twist of ``F_k`` in ``F_k`` coordinates.
        """
        m = self.n_modes
        out = np.zeros(m + 6, dtype=np.result_type(V, eta_dot, frames.eta, float))
        out[m:] = cross_force(V, self.M_rigid @ V)
        if self.inertia_invariants is not None:
            out = out + self.inertia_invariants.modal_bias(frames.eta, eta_dot, V)
        if self.n_nodes == 0:
            return out
        B = self.node_maps(frames)
        Vm = np.concatenate([eta_dot, V])
        Vs = B @ Vm  # (n, 6) node twists
        w = frames.E @ eta_dot  # (n, 6) deformation twists
        theta_dot = self.Pi_r @ eta_dot
        Edot = np.concatenate(
            [np.einsum("nij,nj->ni", self.rotation.rate(frames.theta, theta_dot), theta_dot),
             -np.cross(w[:, :3], w[:, 3:])],
            axis=1,
        )
        acc = Edot + cross_motion(Vs, w)
        Ms = self.M_s
        f = np.einsum("nij,nj->ni", Ms, acc) + cross_force(Vs, np.einsum("nij,nj->ni", Ms, Vs))
        return out + np.einsum("nji,nj->i", B, f)


def require_lumped_mass(bodies, what: str) -> None:
    """``NotImplementedError`` naming the first of ``bodies`` whose flexible part carries a
    consistent mass (:class:`InertiaInvariants`): ``what`` works on mass elements (the rigid
    parts and the node masses) and has no form for it."""
    for body in bodies:
        if body.inertia_invariants is not None:
            raise NotImplementedError(
                f"{what} works on lumped mass elements; body {body.name!r} carries a consistent "
                "finite-element mass (inertia invariants), which it does not take")


def _nodal_coordinates(flex: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Π, K, C)`` of a nodal flex block: ``Π`` (6n × 6(n−1)) the identity on every node but
    the attach node (its six rows zero), ``K``/``C`` the nodal stiffness/damping with the
    attach node's rows and columns removed (its displacement is zero: Rodriguez Eq 4.2)."""
    n, a = flex["nodes"].shape[0], flex["attach_node"]
    keep = np.delete(np.arange(6 * n), np.arange(6 * a, 6 * a + 6))
    modes = np.zeros((6 * n, keep.size))
    modes[keep, np.arange(keep.size)] = 1.0
    return (modes, flex["nodal_stiffness"][np.ix_(keep, keep)],
            flex["nodal_damping"][np.ix_(keep, keep)])


# ----------------------------------------------------------------------------------------------
# Body models: the per-state blocks of one body (registered in flexdyn.terms)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeAttachment:
    """A node ``j`` of body ``k`` seen by a child attached there.

    Attributes
    ----------
    T : Transform — pose of the node frame in ``F_k``.
    E : (6, n_m) — its deformation twist map ``E_j``.
    A : (n_m + 6, 6) — ``A = [E_jᵀ; φ(k, j)]``, so that ``Φ(k, c) = A [0, φ(j, c)]`` (Eq 14).
    """

    T: Transform
    E: np.ndarray
    A: np.ndarray


@dataclass(frozen=True)
class FlexibleStep:
    """Result of a body model's flexible step (Eq 63).

    Attributes
    ----------
    P : (m+6, m+6) or None — articulated inertia ``P(i)`` (None where it is never formed).
    P_rr : (6, 6) — its rigid block ``P^{rr}``;  mu : (6, m) — ``[P^{rf}, P^{rr}] ℋ_f*``.
    Df_inv : (m, m) — ``D_f⁻¹``.
    """

    P: np.ndarray | None
    P_rr: np.ndarray
    mu: np.ndarray
    Df_inv: np.ndarray


@dataclass(frozen=True)
class JointSide:
    """Where a body's frame ``F_i`` sits relative to its joint's moving frame ``J_c``
    (through the body's own attach node ``n_c``).

    Attributes
    ----------
    T_Jc_i : Transform — pose of ``F_i`` in ``J_c``.
    T_i_Jc : Transform — pose of ``J_c`` in ``F_i``.
    X_i_Jc : (6, 6) — twists from ``J_c`` to ``F_i`` coordinates.
    Q : (6, n_m) — ``−Π_F^d``: twist of ``F_i`` per unit ``η̇`` of its attach node (Eq 16).
    """

    T_Jc_i: Transform
    T_i_Jc: Transform
    X_i_Jc: np.ndarray
    Q: np.ndarray


class BodyModel:
    """Per-state blocks of body ``i`` of a model for one fidelity — the hooks the per-state
    terms (:mod:`flexdyn.terms`) call; the recursions never see which model filled them.

    This base class is the **full** model of a flexible (modal) body: node frames are the
    holonomic functions of ``η`` of the module docstring (the tip-kinematics hook
    :meth:`node_frames`), ``M_m`` is Eq 23 at the deformed frames and ``b_m`` Eq 37 with the
    actual ``η̇`` in every velocity product.  Subclasses override hooks: a rigid body
    (:class:`RigidBodyModel`), the ruthless model (:mod:`flexdyn.ruthless`).

    Built once per (model, fidelity) by :func:`flexdyn.terms.body_models`; holds constants
    only.
    """

    def __init__(self, model, i: int):
        self.body: Body = model.bodies[i]
        self.child_node: int | None = model.child_node[i]
        self.child_placement: Transform = model.child_placement[i]

    # -- position blocks ------------------------------------------------------------------
    def node_frames(self, eta: np.ndarray) -> NodeFrames:
        """Node frames at the deformation ``η`` (n_m,) — the tip-kinematics hook."""
        return self.body.node_frames(eta)

    def node_pose(self, frames: NodeFrames, j: int | None) -> tuple[Transform, np.ndarray]:
        """Pose of node ``j`` in ``F`` and its deformation twist map ``E_j`` (6 × n_m);
        ``j = None`` is the body frame itself (identity, zero map)."""
        if j is None:
            return Transform.identity(), np.zeros((6, self.body.n_modes))
        return frames.transform(j), frames.E[j]

    def attach_node(self, frames: NodeFrames, j: int | None) -> NodeAttachment:
        """The node ``j`` (None: the body frame itself) as seen by a child attached there."""
        T, E = self.node_pose(frames, j)
        return NodeAttachment(T=T, E=E, A=np.vstack([E.T, T.phi()]))

    def joint_side(self, frames: NodeFrames) -> JointSide:
        """``F_i`` relative to ``J_c`` through the body's own attach node (Eqs 15–16)."""
        T, E = self.node_pose(frames, self.child_node)
        T_Jc_i = self.child_placement.compose(T.inverse())
        T_i_Jc = T_Jc_i.inverse()
        return JointSide(T_Jc_i=T_Jc_i, T_i_Jc=T_i_Jc, X_i_Jc=T_i_Jc.motion_to_parent(),
                         Q=-(T.motion_to_parent() @ E))

    def modal_joint_map(self, side: JointSide, S: np.ndarray) -> np.ndarray:
        """``ℋ(i) = [[0, H_F], [I, Qᵀ]]`` ((nu_j + n_m) × (n_m + 6)), Eqs 13, 16, 17, with
        ``H_F* = X_{i←J_c} H*`` (``S`` = ``H*``, 6 × nu_j)."""
        m, nj = self.body.n_modes, S.shape[1]
        H_F_star = side.X_i_Jc @ S
        Hcal = np.zeros((nj + m, m + 6), dtype=np.result_type(H_F_star, side.Q))
        Hcal[:nj, m:] = H_F_star.T
        Hcal[nj:, :m] = np.eye(m)
        Hcal[nj:, m:] = side.Q.T
        return Hcal

    def modal_mass(self, frames: NodeFrames) -> np.ndarray:
        """``M_m`` ((n_m + 6) × (n_m + 6)), Eq 23."""
        return self.body.modal_mass(frames)

    # -- velocity blocks ------------------------------------------------------------------
    def product_rates(self, eta_dot: np.ndarray) -> np.ndarray:
        """The modal rates (n_m,) that enter the velocity products (the actual ``η̇``)."""
        return eta_dot

    def node_twist_rate(self, frames: NodeFrames, j: int, eta_dot: np.ndarray) -> np.ndarray:
        """``Ė_j η̇`` (6,) of node ``j``."""
        return self.body.node_twist_rate(frames, j, eta_dot)

    def modal_bias(self, frames: NodeFrames, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``b_m`` (n_m + 6,), Eqs 28, 31, 37, for the product rates ``η̇`` and twist ``V``."""
        return self.body.modal_bias(frames, eta_dot, V)

    def elastic_force(self, eta: np.ndarray, eta_dot: np.ndarray) -> np.ndarray:
        """``K η + C η̇`` (n_m,): the modal part of ``K_m ϑ`` (Eq 36) with damping."""
        return self.body.K @ eta + self.body.C @ eta_dot

    def strain_energy(self, eta: np.ndarray) -> float:
        """``½ ηᵀ K η`` (J): the strain energy whose gradient is the elastic force."""
        return 0.5 * (eta @ self.body.K @ eta)

    # -- articulated-body step --------------------------------------------------------------
    def flexible_step(self, M_m: np.ndarray, Hf: np.ndarray, children: list,
                      what: str) -> FlexibleStep:
        """The flexible step of the split articulated-body form (Eqs 62–63) of this body.

        ``P = M_m + Σ_c A(c) Γ(c) A*(c)``, ``μ = [P^{rf}, P^{rr}] ℋ_f*``,
        ``D_f = ℋ_f P ℋ_f*`` inverted by Cholesky.

        Parameters
        ----------
        M_m : (m+6, m+6) modal mass matrix;  Hf : (m, m+6) ``ℋ_f``.
        children : list of ``(A(c), Γ(c))`` — ((m+6) × 6, 6 × 6) per child in the order of
            ``model.children``, ``Γ(c) = φ(c) P_R⁺(c) φ*(c)``.
        what : the body, for the error message of a singular ``D_f``.
        """
        m = self.body.n_modes
        P = np.array(M_m)
        for A, Gam in children:
            P = P + A @ Gam @ A.T
        return FlexibleStep(P=P, P_rr=P[m:, m:], mu=P[m:] @ Hf.T,
                            Df_inv=spd_inverse(Hf @ P @ Hf.T, f"articulated inertia D_f {what}",
                                               inertia_scale(P, Hf)))


class UndeformedBodyModel(BodyModel):
    """Shared by the body models whose position blocks are those of the undeformed body
    (``η = 0``): node frames, the operators of the nodes children attach to, the joint side,
    ``ℋ`` (for a joint with a constant map) and ``M_m⁰`` are constants, computed once when
    the body model is built."""

    def __init__(self, model, i: int):
        super().__init__(model, i)
        frames0 = self.body.frames0
        nodes = {None, self.child_node, *(model.parent_node[c] for c in model.children[i])}
        self._nodes = {j: super(UndeformedBodyModel, self).attach_node(frames0, j)
                       for j in nodes}
        self._side = super().joint_side(frames0)
        joint = model.joints[i]
        Hcal = super().modal_joint_map(self._side, joint.motion_subspace(joint.neutral()))
        Hcal.setflags(write=False)
        #: ``ℋ(i)`` ((nu_j + m) × (m + 6)) when the joint map is constant, else None
        self.Hcal: np.ndarray | None = Hcal if joint.constant_subspace else None
        self._Hcal_neutral = Hcal

    def node_frames(self, eta: np.ndarray) -> NodeFrames:
        return self.body.frames0

    def attach_node(self, frames: NodeFrames, j: int | None) -> NodeAttachment:
        return self._nodes[j]

    def joint_side(self, frames: NodeFrames) -> JointSide:
        return self._side

    def modal_joint_map(self, side: JointSide, S: np.ndarray) -> np.ndarray:
        return self.Hcal if self.Hcal is not None else super().modal_joint_map(side, S)

    def modal_mass(self, frames: NodeFrames) -> np.ndarray:
        return self.body.M_m0


class RigidBodyModel(UndeformedBodyModel):
    """A body without modes: constant node frames and inertia ``M_m⁰`` (nodes included)."""

    def node_twist_rate(self, frames: NodeFrames, j: int, eta_dot: np.ndarray) -> np.ndarray:
        return np.zeros(6, dtype=eta_dot.dtype)

    def modal_bias(self, frames: NodeFrames, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``V ×* M_m⁰ V`` (6,): nodes and rigid part form one rigid body."""
        return cross_force(V, self.body.M_m0 @ V)
