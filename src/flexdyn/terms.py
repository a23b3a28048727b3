"""Per-state terms — the only place where a body model ("fidelity") is chosen.

The recursions of Jain & Rodriguez consume, per body ``i`` (all in the body frame ``F_i``;
``m = n_m(i)``, ``m_p = n_m(parent)``):

============  ====================  =============================================  ==========
field         shape                 meaning                                         producer
============  ====================  =============================================  ==========
``phi``       (6, 6)                ``φ(t_i, i)``: across the joint (Eq 15)         position
``A``         (m_p + 6, 6) / None   ``[E_tᵀ; φ(p, t_i)]`` (Eq 14); None for roots   position
``Hcal``      (nu_j + m, m + 6)     modal joint map matrix ``ℋ(i)`` (Eqs 13, 17)    position
``M_m``       (m + 6, m + 6)        modal mass matrix (Eq 23)                       position
``Q``         (6, m)                ``−Π_F^d``: twist of ``F_i`` per unit ``η̇``     position
``V_m``       (m + 6,)              modal spatial velocity ``[η̇; V]`` (Eq 11)       velocity
``a_m``       (m + 6,)              Coriolis/centrifugal acceleration (Eq 25)       velocity
``b_m``       (m + 6,)              modal gyroscopic force (Eq 37)                  velocity
``elastic``   (m,)                  ``K η + C η̇`` (the modal part of ``K_m ϑ``)     velocity
============  ====================  =============================================  ==========

so that ``Φ(p, i) = A(i) [0, φ(i)]`` (Eq 12).  :class:`PositionTerms` depend on ``q`` only,
:class:`VelocityTerms` on ``(q, u)``.  Both are filled by one generic base-to-tip loop from the
hooks of each body's **body model** (:class:`flexdyn.body.BodyModel`): its node frames as a
function of ``η`` (tip kinematics), ``M_m``, the rates entering the velocity products,
``b_m``, the elastic forces and the flexible step of the split articulated form.

Body models come from the registry :data:`BODY_MODELS`, keyed by body kind (``"rigid"``,
``"modal"``, ``"nodal"``: the modal body of its identity basis here; its own node-wise
recursion is :mod:`flexdyn.nodal`) and fidelity (``"full"``:
:class:`~flexdyn.body.BodyModel`; ``"ruthless"``:
:class:`~flexdyn.ruthless.RuthlessBodyModel`), so one model may mix kinds.  They are built once
per (model, fidelity) and cached here, outside the (immutable) model.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .body import BodyModel, NodeFrames, RigidBodyModel
from .chain import Model
from .ruthless import RuthlessBodyModel
from .spatial import Transform, cross_motion
from .stiffening import ConsistentBodyModel, ExactBodyModel

__all__ = [
    "BODY_MODELS",
    "DEFAULT_FIDELITY",
    "FIDELITIES",
    "PositionTerms",
    "VelocityTerms",
    "body_models",
    "check_fidelity",
    "compute_kinematics",
    "compute_velocities",
    "deformed_geometry",
    "deformed_nodes",
    "geometry_terms",
    "modal_velocities",
    "position_terms",
    "state_terms",
    "velocity_terms",
]

#: Body models by ``(body kind, fidelity)``.
BODY_MODELS: dict[tuple[str, str], type[BodyModel]] = {
    ("rigid", "full"): RigidBodyModel,
    ("modal", "full"): BodyModel,
    ("rigid", "ruthless"): RigidBodyModel,
    ("modal", "ruthless"): RuthlessBodyModel,
    ("rigid", "consistent"): RigidBodyModel,
    ("modal", "consistent"): ConsistentBodyModel,
    ("rigid", "exact"): RigidBodyModel,
    ("modal", "exact"): ExactBodyModel,
}
# a nodal body is, for these recursions, the modal body of its identity basis
BODY_MODELS.update({("nodal", f): cls for (kind, f), cls in list(BODY_MODELS.items())
                    if kind == "modal"})
#: The fidelities (body-model families) of :data:`BODY_MODELS`.
FIDELITIES: tuple[str, ...] = tuple(dict.fromkeys(f for _, f in BODY_MODELS))
#: The fidelity of every function's default: Damaren & Sharf's exact model, the only one that
#: both stiffens (rotating and fast-slewing bodies) and conserves energy; on bodies without
#: stiffening data it is the ``"full"`` model exactly.
DEFAULT_FIDELITY = "exact"

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.RLock()


def check_fidelity(fidelity: str, name: str = "fidelity") -> str:
    """``fidelity`` if it names a body-model family, else ``ValueError`` listing them
    (``name``: the argument's name in the message)."""
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ValueError(f"unknown {name} {fidelity!r}; expected one of {FIDELITIES}")
    return fidelity


def body_models(model: Model, fidelity: str = DEFAULT_FIDELITY) -> tuple[BodyModel, ...]:
    """The body model of every body of ``model`` for ``fidelity`` (built once, cached)."""
    check_fidelity(fidelity)
    with _CACHE_LOCK:
        per_model = _CACHE.setdefault(model, {})
        if fidelity not in per_model:
            per_model[fidelity] = tuple(BODY_MODELS[(body.kind, fidelity)](model, i)
                                        for i, body in enumerate(model.bodies))
        return per_model[fidelity]


# ----------------------------------------------------------------------------------------------
# position terms
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PositionTerms:
    """Position-level operators at a configuration ``q`` (filled by :func:`position_terms`).

    Every list has one entry per body ``i`` (see the module table for the operators).

    Attributes
    ----------
    model : Model;  q : (nq,);  body_models : tuple of BodyModel — who filled the blocks.
    fidelity : str — their family (``"custom"`` for body models passed in directly).
    eta : list of (m,) — modal coordinates (the actual ones, for stiffness forces).
    frames : list of NodeFrames — node frames of the body model at ``η``.
    pose : list of Transform — pose of ``F_i`` in the inertial frame.
    T_parent : list of Transform — pose of ``F_i`` in the parent's attach-node frame
        (in the inertial frame for a root).
    phi : list of (6, 6) — ``φ(t_i, i) = T_parent.phi()``.
    A : list of (m_p + 6, 6) or None;  E_t : list of (6, m_p) or None — the parent's
        attach-node operator and deformation twist map; None for roots.
    T_joint : list of Transform — pose of ``J_c`` in ``F_i``.
    X_joint : list of (6, 6) — twists from ``J_c`` to ``F_i`` coordinates.
    S : list of (6, nu_j) — joint map matrix ``H*`` in ``J_c`` coordinates.
    Hcal : list of (nu_j + m, m + 6);  Q : list of (6, m);  M_m : list of (m + 6, m + 6).
    """

    model: Model
    q: np.ndarray
    body_models: tuple
    fidelity: str
    eta: list
    frames: list
    pose: list
    T_parent: list
    phi: list
    A: list
    E_t: list
    T_joint: list
    X_joint: list
    S: list
    Hcal: list
    Q: list
    M_m: list

    def Phi(self, i: int) -> np.ndarray:
        """Interbody operator ``Φ(p, i) = A(i) [0, φ(i)]`` ((m_p + 6) × (m + 6)), Eq 12/14."""
        m = int(self.model.n_modes[i])
        A = self.A[i]
        out = np.zeros((A.shape[0], m + 6), dtype=A.dtype)
        out[:, m:] = A @ self.phi[i]
        return out


def position_terms(model: Model, q: np.ndarray, models: Sequence[BodyModel],
                   fidelity: str = "custom") -> PositionTerms:
    """:class:`PositionTerms` at ``q`` (nq,) from the body models' hooks, base to tip.

    ``T_parent = placement ∘ joint(q_j) ∘ T_{J_c←F_i}``, ``pose(i) = pose(p) ∘ T_t ∘ T_parent``
    with ``T_t`` the parent's attach node; ``A``, ``Q``, ``ℋ`` as in Eqs 13–17.
    """
    n = model.n_bodies
    keys = ("eta", "frames", "pose", "T_parent", "phi", "A", "E_t", "T_joint", "X_joint", "S",
            "Hcal", "Q", "M_m")
    f: dict[str, list] = {k: [None] * n for k in keys}
    for i in range(n):  # base-to-tip
        bm, joint = models[i], model.joints[i]
        eta = model.eta(q, i)
        frames: NodeFrames = bm.node_frames(eta)
        side = bm.joint_side(frames)
        qj = model.q_joint(q, i)
        T_parent = model.placement[i].compose(joint.transform(qj)).compose(side.T_Jc_i)
        p = int(model.parent[i])
        if p >= 0:
            node = models[p].attach_node(f["frames"][p], model.parent_node[i])
            f["A"][i], f["E_t"][i] = node.A, node.E
            f["pose"][i] = f["pose"][p].compose(node.T).compose(T_parent)
        else:
            f["pose"][i] = T_parent
        S = joint.motion_subspace(qj)
        f["eta"][i] = eta
        f["frames"][i] = frames
        f["T_parent"][i] = T_parent
        f["phi"][i] = T_parent.phi()
        f["T_joint"][i] = side.T_i_Jc
        f["X_joint"][i] = side.X_i_Jc
        f["S"][i] = S
        f["Hcal"][i] = bm.modal_joint_map(side, S)
        f["Q"][i] = side.Q
        f["M_m"][i] = bm.modal_mass(frames)
    return PositionTerms(model=model, q=q, body_models=tuple(models), fidelity=fidelity, **f)


# ----------------------------------------------------------------------------------------------
# velocity terms
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class VelocityTerms:
    """Velocity-level terms at ``(q, u)`` (filled by :func:`velocity_terms`).

    Attributes
    ----------
    V_m : list of (m + 6,) — modal spatial velocities ``[η̇; V]`` (Eq 11), ``V`` in ``F_i``.
    a_m : list of (m + 6,) — Coriolis/centrifugal accelerations ``[0; a_V]`` (Eq 25).
    b_m : list of (m + 6,) — modal gyroscopic forces (Eq 37).
    eta_dot : list of (m,) — actual modal rates.
    elastic : list of (m,) — ``K η + C η̇``.
    """

    V_m: list
    a_m: list
    b_m: list
    eta_dot: list
    elastic: list

    @staticmethod
    def zero(model: Model, dtype=float) -> VelocityTerms:
        """Terms of zero speed and zero deformation forces (for ``M x`` and ``M⁻¹ b``)."""
        z6 = [np.zeros(int(m) + 6, dtype=dtype) for m in model.n_modes]
        zm = [np.zeros(int(m), dtype=dtype) for m in model.n_modes]
        return VelocityTerms(V_m=z6, a_m=z6, b_m=z6, eta_dot=zm, elastic=zm)

    def bias_force(self, model: Model, i: int, f_ext: np.ndarray | None) -> np.ndarray:
        """Every force of Eq 36 on body ``i`` but ``M_m α_m`` and the children's (m + 6,):
        ``b_m(i) + K_m ϑ(i)`` (with damping) minus the external wrench ``[0; f_ext(i)]``."""
        m = int(model.n_modes[i])
        extra = () if f_ext is None else (f_ext,)
        b = self.b_m[i].astype(np.result_type(self.b_m[i], self.elastic[i], float, *extra))
        b[:m] += self.elastic[i]
        if f_ext is not None:
            b[m:] -= f_ext[i]
        return b


def modal_velocities(model: Model, pos: PositionTerms, u: np.ndarray) -> list:
    """Modal spatial velocities ``V_m(i)`` (m + 6,) by the base-to-tip recursion of Eq 11:
    ``V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i)``."""
    V_m: list = [None] * model.n_bodies
    for i in range(model.n_bodies):
        Vm = pos.Hcal[i].T @ u[model.u_slice(i)]
        p = int(model.parent[i])
        if p >= 0:
            m = int(model.n_modes[i])
            V_t = pos.phi[i].T @ (pos.A[i].T @ V_m[p])
            Vm = Vm.astype(np.result_type(Vm, V_t), copy=False)
            Vm[m:] += V_t
        V_m[i] = Vm
    return V_m


def velocity_terms(model: Model, pos: PositionTerms, u: np.ndarray) -> VelocityTerms:
    """Modal velocities ``V_m``, accelerations ``a_m`` (Eq 25), forces ``b_m`` (Eq 37) and
    elastic forces at ``(pos.q, u)``.

    ``a_m(i) = [0; a_V(i)]`` collects the velocity products of the interbody chain
    parent node → ``J_p`` → ``J_c`` → child node → ``F_i`` (each step ``A_b = X A_a +
    V̇_rel + V_b × V_rel``)::

        a_V = φ*(t, i) (Ė_t η̇_p + V_t × E_t η̇_p) + X_{i←J_c} (Ḣ* β + V_Jc × H* β)
              + Q̇ η̇ + V × Q η̇,       Q̇ η̇ = −X_{i←n_c} Ė_c η̇,

    with the modal rates the body models let into the products (``product_rates``: the
    actual ``η̇``, or zero for the ruthless model, Eq B1), and where
    ``X_{i←J_c} (V_Jc × H* β) = (V − Q η̇) × H_F* β`` (``V_Jc`` is the twist of ``J_c``,
    ``V − Q η̇`` seen at ``F_i``; a motion transform maps cross products to cross products).
    """
    n = model.n_bodies
    models = pos.body_models
    V_m = modal_velocities(model, pos, u)
    u_nl = np.array(u, dtype=np.result_type(u, float))
    for i in range(n):
        s = int(model.u_start[i] + model.nu_joint[i])
        u_nl[s:s + int(model.n_modes[i])] = models[i].product_rates(model.eta_dot(u, i))
    V_nl = V_m if np.array_equal(u_nl, u) else modal_velocities(model, pos, u_nl)
    a_m: list = [None] * n
    b_m: list = [None] * n
    for i in range(n):
        bm, joint = models[i], model.joints[i]
        m = int(model.n_modes[i])
        beta = model.u_joint(u_nl, i)
        etad = model.eta_dot(u_nl, i)
        V = V_nl[i][m:]
        aV = np.zeros(6, dtype=V.dtype)
        p = int(model.parent[i])
        pn = model.parent_node[i] if p >= 0 else None
        etad_p = model.eta_dot(u_nl, p) if pn is not None else None
        if etad_p is not None and np.any(etad_p):  # zero without product rates
            V_t = pos.A[i].T @ V_nl[p]
            w_t = pos.E_t[i] @ etad_p
            eps = models[p].node_twist_rate(pos.frames[p], pn, etad_p) + cross_motion(V_t, w_t)
            aV = aV + pos.phi[i].T @ eps
        if joint.nu:  # X (V_Jc × H* β) = (V − Q η̇) × H_F* β; Ḣ* β only where H* varies
            H_F_beta = pos.Hcal[i][:joint.nu, m:].T @ beta
            aV = aV + cross_motion(V - pos.Q[i] @ etad, H_F_beta)
            if not joint.constant_subspace:
                aV = aV + pos.X_joint[i] @ joint.motion_subspace_rate(model.q_joint(pos.q, i),
                                                                       beta)
        cn = model.child_node[i]
        if cn is not None and np.any(etad):  # zero without product rates
            Edot = bm.node_twist_rate(pos.frames[i], cn, etad)
            T_i_nc: Transform = pos.frames[i].transform(cn)
            aV = aV - T_i_nc.motion_to_parent() @ Edot + cross_motion(V, pos.Q[i] @ etad)
        am = np.zeros(m + 6, dtype=aV.dtype)
        am[m:] = aV
        a_m[i] = am
        b_m[i] = bm.modal_bias(pos.frames[i], etad, V)
    eta_dot = [model.eta_dot(u, i) for i in range(n)]
    elastic = [models[i].elastic_force(pos.eta[i], eta_dot[i]) for i in range(n)]
    return VelocityTerms(V_m=V_m, a_m=a_m, b_m=b_m, eta_dot=eta_dot, elastic=elastic)


def deformed_geometry(models: Sequence[BodyModel], model: Model) -> bool:
    """Whether ``models`` place node frames and children as the ``"full"`` model does, at
    the deformed nodes (every fidelity but ``"ruthless"``, whose bodies sit at their parents'
    undeformed nodes, Eq B1)."""
    hooks = ("node_frames", "attach_node", "joint_side")
    return all(getattr(type(a), h) is getattr(type(b), h)
               for a, b in zip(models, body_models(model, "full"), strict=True) for h in hooks)


def deformed_nodes(fidelity: str) -> bool:
    """Whether the body models of ``fidelity`` place the node frames at the deformed nodes
    and let the actual modal rates into the velocity products (every fidelity but the
    ruthless one, Eq B1): the node kinematics of :mod:`flexdyn.nodal`."""
    cls = BODY_MODELS[("nodal", check_fidelity(fidelity))]
    return (cls.node_frames is BodyModel.node_frames
            and cls.product_rates is BodyModel.product_rates)


def geometry_terms(pos: PositionTerms) -> PositionTerms:
    """Position terms with the deformed geometry at ``pos.q``: ``pos`` itself where its body
    models have it (:func:`deformed_geometry`), else the ``"full"`` model's (for closure
    residuals, which must see the deformed nodes)."""
    if deformed_geometry(pos.body_models, pos.model):
        return pos
    return position_terms(pos.model, pos.q, body_models(pos.model, "full"), "full")


def state_terms(model: Model, q: np.ndarray, u: np.ndarray | None = None,
                fidelity: str = DEFAULT_FIDELITY) -> tuple[PositionTerms, VelocityTerms | None]:
    """Position terms at ``q`` and, when ``u`` is given, velocity terms at ``(q, u)`` for
    the body models of ``fidelity`` (inputs already validated).  Returns ``(pos, vel)``."""
    pos = position_terms(model, q, body_models(model, fidelity), fidelity)
    return pos, (None if u is None else velocity_terms(model, pos, u))


def compute_kinematics(model: Model, q: np.ndarray,
                       fidelity: str = DEFAULT_FIDELITY) -> PositionTerms:
    """Position terms ``Φ``, ``ℋ``, ``M_m`` and poses at ``q`` (nq,) for a fidelity.

    With ``fidelity="ruthless"`` the interbody geometry and ``M_m`` are evaluated at zero
    deformation (Appendix B, Eq B1); the joint geometry uses the actual joint coordinates.
    """
    models = body_models(model, fidelity)
    return position_terms(model, model.check_state(q)[0], models, fidelity)


def compute_velocities(model: Model, kin: PositionTerms, u: np.ndarray) -> VelocityTerms:
    """Velocity terms at ``(kin.q, u)`` (see :func:`velocity_terms`)."""
    return velocity_terms(model, kin, model.check_state(kin.q, u)[1])


#: Former names of the position and velocity terms (deprecated: a ``DeprecationWarning`` on
#: use, naming the class to use instead).
FORMER_NAMES = {"Kinematics": "PositionTerms", "Velocities": "VelocityTerms"}


def former_name(module: str, name: str) -> type:
    """The class a former name of :data:`FORMER_NAMES` stands for, with a
    ``DeprecationWarning`` at the caller's line; ``AttributeError`` for any other name of
    ``module`` (the module's ``__getattr__``)."""
    if name not in FORMER_NAMES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"flexdyn.{name} is deprecated; use flexdyn.{FORMER_NAMES[name]} (the same "
                  "class)", DeprecationWarning, stacklevel=3)
    return globals()[FORMER_NAMES[name]]


def __getattr__(name: str) -> type:
    return former_name(__name__, name)
