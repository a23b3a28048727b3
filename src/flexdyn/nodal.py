"""Nodal-coordinate flexible bodies: Rodriguez's Riccati equation, Kalman filter and smoother
(Rodriguez, *Spatial operator approach to flexible multibody system dynamics and control*,
Secs 4, 8 and 9) — forward dynamics in O(number of nodes).

A **nodal** body (model file ``"nodal": true``; :attr:`flexdyn.body.Body.attach_node`) is a
finite-element body whose coordinates are the displacements ``u_j = [α_j; x_j]`` (rotation,
translation, in ``F``) of every node but the attach node, which is rigidly fixed to the
joint (Eq 4.2).  Node ``j``'s frame has the orientation ``R(α_j)`` of the model's tip
kinematics and the origin ``l0_j + x_j``; with ``X_j = φ*(F, j)`` (the rigid motion of ``F``
seen at node ``j``, ``B*`` of Eq 4.4) and the 6 × 6 deformation map
``E_j = diag(J(α_j), R_jᵀ)``, its twist in node coordinates is (Eq 4.1)::

    V_s(j) = X_j V + E_j u̇_j .

For every other recursion of flexdyn the body is the modal body of its identity basis
(:mod:`flexdyn.terms`); here its per-node structure is kept.  With the lumped node inertias
``M_s(j)`` the body's mass couples its nodes only through ``F``, so the flexible part of the
articulated step is block diagonal: ``h_k`` of the paper is ``E_jᵀ`` node by node, and the
Riccati equation, filter and smoother below cost O(1) per node.

Per body ``k``, tip to base (children ``c`` attached at node ``j`` enter through
``C(k, k−1)``: ``Γ(c) = φ(c) P⁺(c) φ*(c)``)::

    p_j  = M_s(j) + Σ_c Γ(c)                       (9.2)
    d_j  = E_jᵀ p_j E_j,   g_j = p_j E_j d_j⁻¹        (9.3, 9.4)
    p⁺_j = (I − g_j E_jᵀ) p_j                        (9.5)
    P(k) = M_F + Σ_j X_jᵀ p⁺_j X_j                   (9.6)
    D(k) = H P Hᵀ,  G(k) = P Hᵀ D⁻¹,  P⁺(k) = (I − G H) P      (9.7–9.9)

the filter (with the velocity-product terms the paper leaves out: node accelerations
``κ_j = Ė_j u̇_j + V_s(j) × E_j u̇_j``, gyroscopic forces ``b_j = V_s ×* M_s V_s``, the
joint's ``a_V = V × Hᵀβ̇ + X Ḣ*β̇``)::

    z_j  = p_j κ_j + b_j + Σ_c φ(c) Z⁺(c)           (9.11)
    e_j  = τ_j − (K u + C u̇)_j − E_jᵀ z_j,   e⁺_j = d_j⁻¹ e_j      (9.12, 9.13)
    z⁺_j = z_j + g_j e_j                               (9.14)
    Z(k) = b_F − f_ext + Σ_j X_jᵀ z⁺_j + P(k) a_V     (9.15)
    E(k) = T(k) − H Z,  E⁺ = D⁻¹ E,  Z⁺(k) = Z + G E              (9.16–9.18)

and the smoother, base to tip::

    A⁺ = φ*(k) A(parent attach node),  θ̈ = E⁺ − Gᵀ A⁺,  A = A⁺ + Hᵀ θ̈ + a_V   (9.20, 9.21)
    a⁺_j = X_j A,  ü_j = e⁺_j − g_jᵀ a⁺_j,  a_j = a⁺_j + E_j ü_j + κ_j      (9.22–9.25)

``M_F`` is the inertia fixed in ``F`` (the rigid part and the attach node; a rigid body's
whole inertia), ``H`` the joint map in ``F`` (``H_F``), ``A`` spatial accelerations (the
ground's is ``[0; −g]``: gravity).  The ``"ruthless"`` fidelity evaluates the node frames
undeformed (``E_j = I``) and drops the nodal rates from every velocity product (Jain &
Rodriguez App. B); every other fidelity is the full model (nodal bodies carry no
geometric-stiffening data).

:func:`nodal_terms` builds the terms, :func:`nodal_factors` the q-only Riccati factors
(reusable), :func:`nodal_forward_dynamics` runs the filter and smoother;
``flexdyn.forward_dynamics(..., method="nodal")`` is the front door.  The same factors apply
``M`` (Eq 5.1), the innovations factor ``I + K`` and its inverse ``I − ℒ`` (Eqs 8.1, 8.3)
and ``M⁻¹`` (Eq 8.4) to vectors in O(nodes).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, fields, replace

import numpy as np
import scipy

from .body import Body
from .chain import Model
from .linalg import inertia_scale, spd_inverse, spd_inverse_blocks
from .spatial import Transform, cross_force, cross_motion, twist_maps
from .terms import DEFAULT_FIDELITY, deformed_nodes

__all__ = [
    "NodalConstants",
    "NodalFactors",
    "apply_nodal_innovations_factor",
    "apply_nodal_innovations_factor_inverse",
    "apply_nodal_mass_matrix",
    "apply_nodal_mass_matrix_inverse",
    "NodalTerms",
    "check_nodal_model",
    "nodal_constants",
    "nodal_factors",
    "nodal_forward_dynamics",
    "nodal_terms",
]

_CONSTANTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONSTANTS_LOCK = threading.Lock()


def check_nodal_model(model: Model) -> Model:
    """``model`` if every body is rigid or nodal, else ``ValueError`` naming a modal body."""
    for i, body in enumerate(model.bodies):
        if body.kind == "modal":
            raise ValueError(
                f"method 'nodal' takes rigid and nodal bodies; body {i} {body.name!r} is a modal "
                "body (use method 'articulated' for it)")
    return model


def _node_transform(body: Body, j: int | None) -> Transform:
    """Pose in ``F`` of a node that does not deform (the attach node, a rigid body's node; the
    body frame itself for None)."""
    return Transform.identity() if j is None else Transform(np.eye(3), body.nodes[j])


@dataclass(frozen=True, eq=False)
class NodalConstants:
    """The configuration-independent data of the nodal recursion, per body ``k`` (built once
    per model by :func:`nodal_constants`; the compiled engine packs the same).

    Attributes
    ----------
    free_nodes : list of int (f,) — the free nodes (coordinate order).
    M_F : list of (6, 6) — inertia fixed in ``F`` (rigid part and non-deforming nodes) about
        ``F``'s origin.
    T_Jc : list of Transform — pose of ``F`` in the joint's moving frame ``J_c`` (through the
        body's own attach node, which does not deform);  X_joint : list of (6, 6) — twists
        from ``J_c`` to ``F``.
    slot : list of int — the parent's free-node index the body hangs from, −1 when it hangs
        from a node fixed in the parent's frame (or the ground).
    A : list of (6, 6) — ``X_nᵀ`` of that fixed node (identity for the frame or the ground).
    K, C : list of CSR matrices (6f × 6f) — stiffness and damping, only their nonzeros (a
        finite-element stiffness is banded, so ``K u`` costs O(nodes)).
    """

    free_nodes: list
    M_F: list
    T_Jc: list
    X_joint: list
    slot: list
    A: list
    K: list
    C: list


def nodal_constants(model: Model) -> NodalConstants:
    """:class:`NodalConstants` of a model of rigid and nodal bodies (cached while the model
    lives); ``ValueError`` naming a modal body."""
    with _CONSTANTS_LOCK:
        if model not in _CONSTANTS:
            _CONSTANTS[model] = _build_constants(check_nodal_model(model))
        return _CONSTANTS[model]


def _build_constants(model: Model) -> NodalConstants:
    c: dict[str, list] = {f.name: [] for f in fields(NodalConstants)}
    for k, body in enumerate(model.bodies):
        free = body.free_nodes
        M_F = body.M_rigid.copy()
        for j in sorted(set(range(body.n_nodes)) - set(free.tolist())):
            X = _node_transform(body, j).inverse().motion_to_parent()
            M_F += X.T @ body.M_s[j] @ X
        T_Jc = model.child_placement[k].compose(
            _node_transform(body, model.child_node[k]).inverse())
        par, pn = int(model.parent[k]), model.parent_node[k]
        slot, A = -1, np.eye(6)
        if par >= 0:
            parent_free = c["free_nodes"][par].tolist()
            if pn in parent_free:
                slot = parent_free.index(pn)
            else:
                A = _node_transform(model.bodies[par], pn).inverse().motion_to_parent().T
        for key, value in (("free_nodes", free), ("M_F", M_F), ("T_Jc", T_Jc),
                           ("X_joint", T_Jc.inverse().motion_to_parent()), ("slot", slot),
                           ("A", A), ("K", scipy.sparse.csr_array(body.K)),
                           ("C", scipy.sparse.csr_array(body.C))):
            c[key].append(value)
    return NodalConstants(**c)


@dataclass(frozen=True, eq=False)
class NodalTerms:
    """Per-state terms of a model of rigid and nodal bodies (one entry per body ``k``; ``f``
    free nodes, zero for a rigid body).

    Attributes
    ----------
    free_nodes : list of int (f,) — the free nodes (coordinate order).
    E : list of (f, 6, 6) — ``E_j``;  X : list of (f, 6, 6) — ``X_j = φ*(F, j)``.
    M_s : list of (f, 6, 6) — node spatial inertias;  M_F : list of (6, 6) — inertia fixed in
        ``F`` (rigid part and non-deforming nodes), about ``F``'s origin.
    phi : list of (6, 6) — ``φ(t_k, k)`` from the parent's attach node (or the ground) to ``F``.
    slot : list of int — the parent's free-node index the body hangs from, −1 when it hangs
        from a node fixed in the parent's frame (or the ground).
    A : list of (6, 6) — ``X_nᵀ`` of that fixed node (identity for the frame or the ground).
    H : list of (nu_j, 6) — joint map ``H_F`` in ``F``.
    a_V : list of (6,) — joint velocity-product acceleration.
    kappa : list of (f, 6);  b : list of (f, 6) — node velocity-product accelerations and
        gyroscopic forces;  b_F : list of (6,) — gyroscopic force of ``M_F``.
    elastic : list of (6f,) — ``K u + C u̇``.
    """

    free_nodes: list
    E: list
    X: list
    M_s: list
    M_F: list
    phi: list
    slot: list
    A: list
    H: list
    a_V: list
    kappa: list
    b: list
    b_F: list
    elastic: list

    def at_rest(self) -> NodalTerms:
        """The terms of the same configuration with zero velocity products and elastic
        forces (for ``M x`` and ``M⁻¹ b``)."""
        def zeros(values: list) -> list:
            return [np.zeros_like(v) for v in values]

        return replace(self, a_V=zeros(self.a_V), kappa=zeros(self.kappa), b=zeros(self.b),
                       b_F=zeros(self.b_F), elastic=zeros(self.elastic))


def nodal_terms(model: Model, q: np.ndarray, u: np.ndarray,
                fidelity: str = DEFAULT_FIDELITY) -> NodalTerms:
    """:class:`NodalTerms` at ``(q, u)`` (validated inputs), base to tip (Eqs 4.1–4.3)."""
    deformed = deformed_nodes(fidelity)
    const = nodal_constants(model)
    n = model.n_bodies
    t: dict[str, list] = {f.name: [None] * n for f in fields(NodalTerms)}
    V_s: list = [None] * n  # node twists (product rates), for the children
    V_F: list = [None] * n
    for k in range(n):
        body, joint = model.bodies[k], model.joints[k]
        free = const.free_nodes[k]
        f = free.size
        ud = model.eta_dot(u, k).reshape(f, 6)
        ud_nl = ud if deformed else np.zeros_like(ud)
        uq = model.eta(q, k).reshape(f, 6)
        if deformed:
            R, J = body.rotation.maps(uq[:, :3])
            p = body.nodes[free] + uq[:, 3:]
        else:
            R = J = np.broadcast_to(np.eye(3), (f, 3, 3))
            p = body.nodes[free]
        E = np.zeros((f, 6, 6))
        E[:, :3, :3] = J
        E[:, 3:, 3:] = np.swapaxes(R, -1, -2)
        M_F, X_joint, slot, A = const.M_F[k], const.X_joint[k], const.slot[k], const.A[k]
        qj, beta = model.q_joint(q, k), model.u_joint(u, k)
        T_parent = model.placement[k].compose(joint.transform(qj)).compose(const.T_Jc[k])
        H = (X_joint @ joint.motion_subspace(qj)).T
        par = int(model.parent[k])
        if par < 0:
            V_t = np.zeros(6)
        elif slot >= 0:
            V_t = V_s[par][slot]
        else:
            V_t = A.T @ V_F[par]
        phi = T_parent.phi()
        V = phi.T @ V_t + H.T @ beta
        X = twist_maps(R, p)
        w = np.einsum("jab,jb->ja", E, ud_nl)  # E_j u̇_j
        Vs = np.einsum("jab,b->ja", X, V) + w
        Edot = np.concatenate(
            [np.einsum("jab,jb->ja", body.rotation.rate(uq[:, :3], ud_nl[:, :3]), ud_nl[:, :3])
             if deformed else np.zeros((f, 3)), -np.cross(w[:, :3], w[:, 3:])], axis=1)
        a_V = cross_motion(V, H.T @ beta)
        if not joint.constant_subspace:
            a_V = a_V + X_joint @ joint.motion_subspace_rate(qj, beta)
        M_s = body.M_s[free]
        V_s[k], V_F[k] = Vs, V
        for key, value in (("free_nodes", free), ("E", E), ("X", X), ("M_s", M_s), ("M_F", M_F),
                           ("phi", phi), ("slot", slot), ("A", A), ("H", H), ("a_V", a_V),
                           ("kappa", Edot + cross_motion(Vs, w)),
                           ("b", cross_force(Vs, np.einsum("jab,jb->ja", M_s, Vs))),
                           ("b_F", cross_force(V, M_F @ V)),
                           ("elastic", const.K[k] @ model.eta(q, k)
                            + const.C[k] @ model.eta_dot(u, k))):
            t[key][k] = value
    return NodalTerms(**t)


@dataclass(frozen=True, eq=False)
class NodalFactors:
    """The Riccati equation's factors (Eqs 9.1–9.9), q only and reusable; per body ``k``.

    Attributes
    ----------
    p : list of (f, 6, 6) — node articulated inertias ``p_j`` (9.2).
    d_inv : list of (f, 6, 6) — ``d_j⁻¹`` (9.3);  g : list of (f, 6, 6) — gains ``g_j`` (9.4).
    P : list of (6, 6) — ``P(k)`` at ``F`` (9.6);  D_inv : list of (nu_j, nu_j) — ``D⁻¹``;
    G : list of (6, nu_j) — ``G(k)`` (9.8);  P_plus : list of (6, 6) — ``P⁺(k)`` (9.9).
    """

    p: list
    d_inv: list
    g: list
    P: list
    D_inv: list
    G: list
    P_plus: list


def _children(model: Model, terms: NodalTerms, k: int) -> tuple[list, list]:
    """Body ``k``'s children split by where they hang: ``(at free nodes, at fixed points)``."""
    kids = model.children[k]
    return ([c for c in kids if terms.slot[c] >= 0], [c for c in kids if terms.slot[c] < 0])


def nodal_factors(model: Model, terms: NodalTerms) -> NodalFactors:
    """Rodriguez's Riccati equation for the articulated inertias and Kalman gains,
    Eqs 9.1–9.9, tip to base over the tree (see the module docstring)."""
    n = model.n_bodies
    p, d_inv, g, P, D_inv, G, P_plus = ([None] * n for _ in range(7))
    for k in reversed(range(n)):
        name = f"of body {k} {model.names[k]!r}"
        E, X = terms.E[k], terms.X[k]
        at_nodes, at_frame = _children(model, terms, k)
        pk = np.array(terms.M_s[k])
        for c in at_nodes:  # 9.2: C(k, k−1) P⁺(k−1) Cᵀ(k, k−1)
            pk[terms.slot[c]] += terms.phi[c] @ P_plus[c] @ terms.phi[c].T
        pE = pk @ E
        d = np.swapaxes(E, -1, -2) @ pE  # 9.3
        scale = np.abs(pk).max(axis=(1, 2), initial=0.0) * (E ** 2).sum(axis=1).max(
            axis=1, initial=0.0)
        free = terms.free_nodes[k]
        d_inv[k] = spd_inverse_blocks(
            d, lambda j, free=free, name=name: f"articulated inertia d of node {free[j]} {name}",
            scale)
        g[k] = pE @ d_inv[k]  # 9.4
        p_plus = pk - g[k] @ np.swapaxes(pE, -1, -2)  # 9.5
        Pk = terms.M_F[k] + np.einsum("jba,jbc,jcd->ad", X, p_plus, X)  # 9.6
        for c in at_frame:
            AP = terms.A[c] @ terms.phi[c]
            Pk = Pk + AP @ P_plus[c] @ AP.T
        Pk = 0.5 * (Pk + Pk.T)
        H = terms.H[k]
        PH = Pk @ H.T
        D_inv[k] = spd_inverse(H @ PH, f"articulated inertia D {name}", inertia_scale(Pk, H))
        G[k] = PH @ D_inv[k]  # 9.8
        P_plus[k] = Pk - G[k] @ PH.T  # 9.9
        p[k], P[k] = pk, Pk
    return NodalFactors(p=p, d_inv=d_inv, g=g, P=P, D_inv=D_inv, G=G, P_plus=P_plus)


def nodal_forward_dynamics(model: Model, terms: NodalTerms, tau: np.ndarray,
                           f_ext: np.ndarray | None = None,
                           factors: NodalFactors | None = None,
                           gravity: bool = True) -> np.ndarray:
    """Generalized accelerations ``u̇`` (nu,) by Rodriguez's inward Kalman filter and
    outward smoother, Eqs 9.10–9.26 (module docstring), O(number of nodes).

    Parameters
    ----------
    terms : :func:`nodal_terms` at the state;  tau : (nu,) generalized forces (layout of
        ``model-format.md``; node slots hold external forces on the node coordinates).
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins, in ``F``.
    factors : :func:`nodal_factors` (computed when None).
    gravity : include the model's gravity (the ground's acceleration ``[0; −g]``).
    """
    n = model.n_bodies
    if factors is None:
        factors = nodal_factors(model, terms)
    e_plus, z_plus, E_plus, Z_plus = ([None] * n for _ in range(4))
    for k in reversed(range(n)):  # inward filter
        E, X = terms.E[k], terms.X[k]
        at_nodes, at_frame = _children(model, terms, k)
        z = np.einsum("jab,jb->ja", factors.p[k], terms.kappa[k]) + terms.b[k]
        for c in at_nodes:  # 9.11
            z[terms.slot[c]] += terms.phi[c] @ Z_plus[c]
        nj = int(model.nu_joint[k])
        Tk = tau[model.u_slice(k)]
        e = ((Tk[nj:] - terms.elastic[k]).reshape(-1, 6)
             - np.einsum("jba,jb->ja", E, z))  # 9.12
        e_plus[k] = np.einsum("jab,jb->ja", factors.d_inv[k], e)  # 9.13
        zp = z + np.einsum("jab,jb->ja", factors.g[k], e)  # 9.14
        Z = (terms.b_F[k] + np.einsum("jba,jb->a", X, zp)  # 9.15
             + factors.P[k] @ terms.a_V[k])
        if f_ext is not None:
            Z = Z - f_ext[k]
        for c in at_frame:
            Z = Z + terms.A[c] @ (terms.phi[c] @ Z_plus[c])
        eps = Tk[:nj] - terms.H[k] @ Z  # 9.16
        E_plus[k] = factors.D_inv[k] @ eps  # 9.17
        Z_plus[k] = Z + factors.G[k] @ eps  # 9.18
    udot = np.zeros(model.nu)
    A_F: list = [None] * n
    a_nodes: list = [None] * n
    a_ground = np.concatenate([np.zeros(3), -model.gravity if gravity else np.zeros(3)])
    for k in range(n):  # outward smoother
        par = int(model.parent[k])
        if par < 0:
            A_t = a_ground
        elif terms.slot[k] >= 0:
            A_t = a_nodes[par][terms.slot[k]]
        else:
            A_t = terms.A[k].T @ A_F[par]
        A_plus = terms.phi[k].T @ A_t
        theta_ddot = E_plus[k] - factors.G[k].T @ A_plus  # 9.20
        A = A_plus + terms.H[k].T @ theta_ddot + terms.a_V[k]  # 9.21
        a_plus = np.einsum("jab,b->ja", terms.X[k], A)  # 9.22, 9.23
        u_ddot = e_plus[k] - np.einsum("jba,jb->ja", factors.g[k], a_plus)  # 9.24
        a_nodes[k] = a_plus + np.einsum("jab,jb->ja", terms.E[k], u_ddot) + terms.kappa[k]  # 9.25
        A_F[k] = A
        udot[model.u_slice(k)] = np.concatenate([theta_ddot, u_ddot.ravel()])
    return udot


def nodal_state_terms(model: Model, q: np.ndarray, u: np.ndarray,
                      fidelity: str) -> tuple[None, NodalTerms]:
    """``(None, terms)``: the per-state terms of ``method="nodal"`` in the shape of
    :func:`flexdyn.terms.state_terms`' ``(pos, vel)`` (the node-wise terms hold both)."""
    return None, nodal_terms(model, q, u, fidelity)


def nodal_method(model: Model, pos: None, terms: NodalTerms, tau: np.ndarray,
                 f_ext: np.ndarray | None = None) -> np.ndarray:
    """:func:`nodal_forward_dynamics` with the signature of
    :data:`flexdyn.dynamics.FORWARD_METHODS`."""
    return nodal_forward_dynamics(model, terms, tau, f_ext)


# ---------------------------------------------------------------------------------------------
# the mass matrix and its innovations factors applied to vectors, O(nodes) (Secs 5, 8)
# ---------------------------------------------------------------------------------------------
def apply_nodal_mass_matrix_inverse(model: Model, terms: NodalTerms, b: np.ndarray,
                                    factors: NodalFactors | None = None) -> np.ndarray:
    """``M⁻¹ b`` (nu,) = ``(I − ℒ*) 𝒟⁻¹ (I − ℒ) b`` (Eq 8.4): the filter and smoother of
    :func:`nodal_forward_dynamics` without velocity products, elastic forces and gravity."""
    return nodal_forward_dynamics(model, terms.at_rest(), b, factors=factors, gravity=False)


def apply_nodal_mass_matrix(model: Model, terms: NodalTerms, x: np.ndarray) -> np.ndarray:
    """``M x`` (nu,) by the two sweeps of Eq 5.1, ``M = 𝒳 (I + CΦB) m (I + B*Φ*C*) 𝒳*``:
    base to tip the accelerations ``x`` produces (no velocity, no gravity), at the body
    frames ``A = φ* A_t + Hᵀ x_joint`` and at the nodes ``a_j = X_j A + E_j x_j``; tip to base
    the inertial forces ``f_j = M_s a_j + Σ φ F(c)`` and ``F = M_F A + Σ_j X_jᵀ f_j + …``,
    projected on the coordinates (``E_jᵀ f_j``, ``H F``)."""
    n = model.n_bodies
    A: list = [None] * n
    a: list = [None] * n
    for k in range(n):  # base to tip
        par = int(model.parent[k])
        if par < 0:
            A_t = np.zeros(6)
        elif terms.slot[k] >= 0:
            A_t = a[par][terms.slot[k]]
        else:
            A_t = terms.A[k].T @ A[par]
        nj = int(model.nu_joint[k])
        xk = x[model.u_slice(k)]
        A[k] = terms.phi[k].T @ A_t + terms.H[k].T @ xk[:nj]
        a[k] = (np.einsum("jab,b->ja", terms.X[k], A[k])
                + np.einsum("jab,jb->ja", terms.E[k], xk[nj:].reshape(-1, 6)))
    y = np.zeros(model.nu)
    F: list = [None] * n
    for k in reversed(range(n)):  # tip to base
        at_nodes, at_frame = _children(model, terms, k)
        f = np.einsum("jab,jb->ja", terms.M_s[k], a[k])
        for c in at_nodes:
            f[terms.slot[c]] += terms.phi[c] @ F[c]
        Fk = terms.M_F[k] @ A[k] + np.einsum("jba,jb->a", terms.X[k], f)
        for c in at_frame:
            Fk = Fk + terms.A[c] @ (terms.phi[c] @ F[c])
        F[k] = Fk
        y[model.u_slice(k)] = np.concatenate([terms.H[k] @ Fk,
                                              np.einsum("jba,jb->ja", terms.E[k], f).ravel()])
    return y


def _apply_factor(model: Model, terms: NodalTerms, factors: NodalFactors, x: np.ndarray,
                  sign: float, projected: bool) -> np.ndarray:
    """The tip-to-base sweep ``y = x + sign · h w`` of the innovations factors: at each
    node ``y_j = x_j + sign E_jᵀ w_j`` and at each joint ``y = x + sign H W``, where ``w_j``,
    ``W`` collect ``s = g x + w`` (or ``g x + (I − g E_jᵀ) w`` when ``projected``) from the
    nodes, joints and children outboard."""
    n = model.n_bodies
    y = np.array(x, dtype=float)
    s_body: list = [None] * n
    for k in reversed(range(n)):
        at_nodes, at_frame = _children(model, terms, k)
        nj = int(model.nu_joint[k])
        E, g = terms.E[k], factors.g[k]
        w = np.zeros((E.shape[0], 6))
        for c in at_nodes:
            w[terms.slot[c]] += terms.phi[c] @ s_body[c]
        sl = model.u_slice(k)
        x_nodes = x[sl][nj:].reshape(-1, 6)
        y[sl][nj:] += sign * np.einsum("jba,jb->ja", E, w).ravel()
        carried = w - np.einsum("jab,jcb,jc->ja", g, E, w) if projected else w
        s_nodes = np.einsum("jab,jb->ja", g, x_nodes) + carried
        W = np.einsum("jba,jb->a", terms.X[k], s_nodes)
        for c in at_frame:
            W = W + terms.A[c] @ (terms.phi[c] @ s_body[c])
        H, G = terms.H[k], factors.G[k]
        y[sl][:nj] += sign * (H @ W)
        s_body[k] = G @ x[sl][:nj] + (W - G @ (H @ W) if projected else W)
    return y


def apply_nodal_innovations_factor(model: Model, terms: NodalTerms, factors: NodalFactors,
                                   x: np.ndarray) -> np.ndarray:
    """``(I + K) x`` (nu,), the lower-triangular factor of ``M = (I + K) 𝒟 (I + K*)``
    (Eq 8.1; ``𝒟 = diag(d_j, D(k))`` from :func:`nodal_factors`), by one tip-to-base
    sweep."""
    return _apply_factor(model, terms, factors, x, 1.0, projected=False)


def apply_nodal_innovations_factor_inverse(model: Model, terms: NodalTerms,
                                           factors: NodalFactors, x: np.ndarray) -> np.ndarray:
    """``(I − ℒ) x = (I + K)⁻¹ x`` (nu,), Eq 8.3, by one tip-to-base sweep (the Kalman
    filter with the projections ``I − g_j E_jᵀ``, ``I − G H``)."""
    return _apply_factor(model, terms, factors, x, -1.0, projected=True)

