"""Multibody model (constant) and per-state kinematics (the paper's per-body operators).

Numbering
---------
Bodies are stored in **topological order**: ``parent[i] < i``, roots have ``parent = -1``.
Jain & Rodriguez number bodies from the tip (k = 1) to the base (k = N) and write the
inboard neighbour of ``k`` as ``k+1``; here the inboard neighbour of ``i`` is
``parent[i]``, a *tip-to-base* sweep is ``for i in reversed(range(n))`` accumulating into
``parent[i]`` and a *base-to-tip* sweep is ``for i in range(n)``.  Trees (Sec VIII) need
nothing else.

State layout (``model-format.md``)
----------------------------------
``q`` and ``u`` are stacked body by body in file order; for each body its joint
coordinates (speeds) come first, then its modal coordinates ``η`` (rates ``η̇``).  Per
body, ``χ(i) = u[model.u_slice(i)] = [β(i); η̇(i)]`` — the paper's ``χ = [η̇; β]`` with the
hinge part first.  Generalized forces ``τ`` have the layout of ``u``.

Per-body operators (all in the body frame ``F_i``)
--------------------------------------------------
``V_m(i) = [η̇(i); V(i)]`` (n_m + 6) is the modal spatial velocity (Eq 11)::

    V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i),
    Φ(p, i) = A(i) [0, φ(i)]            ((n_m(p)+6) × (n_m(i)+6), Eqs 12, 14, 15)
    A(i)    = [E_t(i)ᵀ; φ(p, t_i)]      ((n_m(p)+6) × 6): parent node t_i ↔ F_p
    φ(i)    = φ(t_i, i)                 (6 × 6): F_i ↔ parent node frame, across the
                                         joint (rotation included)
    ℋ(i)    = [[0, H_F(i)], [I, Q(i)ᵀ]] ((n_r + n_m) × (n_m + 6), Eqs 13, 16, 17)

where ``E_t`` is the deformation twist map of the parent's attach node, ``H_F* = φ*(J_c, i)
H*`` the joint map matrix referred to ``F_i`` and ``Q = −Π_F^d`` the (negated) deformation
twist of the body's own attach node seen at ``F_i``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .body import Body, NodeFrames
from .joints import Joint, make_joint
from .spatial import Transform, cross_motion

__all__ = [
    "Model",
    "ModelBuilder",
    "Kinematics",
    "Velocities",
    "compute_kinematics",
    "compute_velocities",
    "modal_velocities",
    "state_terms",
    "FIDELITIES",
    "load_model",
    "save_model",
]

FIDELITIES = ("full", "ruthless")


def _transform(spec: Mapping[str, Any]) -> Transform:
    return Transform(np.asarray(spec["rotation"], float), np.asarray(spec["translation"], float))


class Model:
    """Immutable tree of rigid and flexible bodies (see :mod:`flexdyn.chain`).

    Build with :meth:`from_dict`, :func:`load_model` or :class:`ModelBuilder`.

    Attributes
    ----------
    name : str
    n_bodies : int
    bodies : tuple of :class:`~flexdyn.body.Body`
    joints : tuple of :class:`~flexdyn.joints.Joint`
    parent : int array (n_bodies,) — parent index, ``-1`` for roots.
    children : tuple of tuples of int
    gravity : array (3,), m/s², in the inertial frame.
    nq, nu : int — sizes of ``q`` and ``u``.
    n_modes : int array (n_bodies,)
    """

    def __init__(self, spec: Mapping[str, Any]):
        from .model_file import normalize_model_dict

        nd = normalize_model_dict(spec)
        self._spec = nd
        self.name: str = nd["name"]
        self.gravity: np.ndarray = np.asarray(nd["gravity"], float)
        bspecs = nd["bodies"]
        self.n_bodies = len(bspecs)
        self.names: tuple[str, ...] = tuple(b["name"] for b in bspecs)
        self.bodies: tuple[Body, ...] = tuple(
            Body.from_spec(b["name"], b.get("rigid"), b.get("flex")) for b in bspecs
        )
        self.joints: tuple[Joint, ...] = tuple(make_joint(b["joint"]) for b in bspecs)
        self.parent = np.array([b["parent"] for b in bspecs], dtype=int)
        self.children: tuple[tuple[int, ...], ...] = tuple(
            tuple(int(c) for c in np.flatnonzero(self.parent == i)) for i in range(self.n_bodies)
        )
        self.placement = tuple(_transform(b["joint"]["placement"]) for b in bspecs)
        self.child_placement = tuple(_transform(b["joint"]["child_placement"]) for b in bspecs)
        self.parent_node = tuple(b["joint"]["parent_node"] for b in bspecs)
        self.child_node = tuple(b["joint"]["child_node"] for b in bspecs)
        self.n_modes = np.array([b.n_modes for b in self.bodies], dtype=int)
        nqj = np.array([j.nq for j in self.joints], dtype=int)
        nuj = np.array([j.nu for j in self.joints], dtype=int)
        self.nq_joint, self.nu_joint = nqj, nuj
        self.q_start = np.concatenate([[0], np.cumsum(nqj + self.n_modes)])[:-1]
        self.u_start = np.concatenate([[0], np.cumsum(nuj + self.n_modes)])[:-1]
        self.nq = int(np.sum(nqj + self.n_modes))
        self.nu = int(np.sum(nuj + self.n_modes))

    # -- construction / files ----------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Model:
        """Build a model from a dict in the model-file format (``model-format.md``).

        Raises ``ValueError`` naming the body and key for any invalid entry.
        """
        return cls(d)

    def to_dict(self) -> dict:
        """The model as a JSON-ready dict in the model-file format."""
        from .model_file import to_plain_dict

        return to_plain_dict(self._spec)

    # -- state layout ---------------------------------------------------------------------------
    def q_slice(self, i: int) -> slice:
        """Slice of body ``i``'s coordinates ``[q_joint; η]`` in ``q``."""
        s = int(self.q_start[i])
        return slice(s, s + int(self.nq_joint[i] + self.n_modes[i]))

    def u_slice(self, i: int) -> slice:
        """Slice of ``χ(i) = [β; η̇]`` in ``u`` (and of ``τ(i)`` in ``τ``)."""
        s = int(self.u_start[i])
        return slice(s, s + int(self.nu_joint[i] + self.n_modes[i]))

    def q_joint(self, q: np.ndarray, i: int) -> np.ndarray:
        """Body ``i``'s joint coordinates (nq_joint[i],), a view into ``q`` (nq,)."""
        s = int(self.q_start[i])
        return q[s:s + int(self.nq_joint[i])]

    def eta(self, q: np.ndarray, i: int) -> np.ndarray:
        """Body ``i``'s modal coordinates ``η`` (n_modes[i],), a view into ``q`` (nq,)."""
        s = int(self.q_start[i] + self.nq_joint[i])
        return q[s:s + int(self.n_modes[i])]

    def u_joint(self, u: np.ndarray, i: int) -> np.ndarray:
        """Body ``i``'s joint speeds ``β`` (nu_joint[i],), a view into ``u`` (nu,)."""
        s = int(self.u_start[i])
        return u[s:s + int(self.nu_joint[i])]

    def eta_dot(self, u: np.ndarray, i: int) -> np.ndarray:
        """Body ``i``'s modal rates ``η̇`` (n_modes[i],), a view into ``u`` (nu,)."""
        s = int(self.u_start[i] + self.nu_joint[i])
        return u[s:s + int(self.n_modes[i])]

    def body_index(self, name: str) -> int:
        """Index of the body called ``name`` (``KeyError`` listing the names otherwise)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no body named {name!r}; bodies are {list(self.names)}") from None

    def neutral_configuration(self) -> np.ndarray:
        """``q`` with zero joint angles/displacements, identity quaternions and ``η = 0``."""
        q = np.zeros(self.nq)
        for i, j in enumerate(self.joints):
            s = int(self.q_start[i])
            q[s:s + j.nq] = j.neutral()
        return q

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Kinematic equation ``q̇ = Γ(q) u`` (nq,) (Kwatny & Blankenship)."""
        out = np.empty(self.nq, dtype=np.result_type(q, u, float))
        for i, j in enumerate(self.joints):
            qs, us = int(self.q_start[i]), int(self.u_start[i])
            out[qs:qs + j.nq] = j.qdot(q[qs:qs + j.nq], u[us:us + j.nu])
            m = int(self.n_modes[i])
            out[qs + j.nq:qs + j.nq + m] = u[us + j.nu:us + j.nu + m]
        return out

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Block-diagonal ``Γ(q)`` (nq × nu) with ``q̇ = Γ(q) u``."""
        G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
        for i, j in enumerate(self.joints):
            qs, us = int(self.q_start[i]), int(self.u_start[i])
            G[qs:qs + j.nq, us:us + j.nu] = j.Gamma(q[qs:qs + j.nq])
            m = int(self.n_modes[i])
            G[qs + j.nq:qs + j.nq + m, us + j.nu:us + j.nu + m] = np.eye(m)
        return G

    def normalize_configuration(self, q: np.ndarray) -> np.ndarray:
        """``q`` with every quaternion scaled to unit length."""
        q = np.array(q, dtype=float)
        for i, j in enumerate(self.joints):
            s = int(self.q_start[i])
            q[s:s + j.nq] = j.normalize(q[s:s + j.nq])
        return q

    def check_state(self, q: np.ndarray, u: np.ndarray | None = None, **named) -> None:
        """Raise ``ValueError`` if ``q`` (nq,), ``u`` (nu,) or other u-sized arrays are off."""
        arrays = {"q": (q, self.nq)}
        if u is not None:
            arrays["u"] = (u, self.nu)
        for k, v in named.items():
            if v is not None:
                arrays[k] = (v, self.nu)
        for key, (a, n) in arrays.items():
            a = np.asarray(a)
            if a.shape != (n,):
                raise ValueError(
                    f"{key} has shape {a.shape}, expected ({n},) for model {self.name!r}"
                )
            if np.iscomplexobj(a):
                continue
            if not np.all(np.isfinite(a)):
                bad = np.flatnonzero(~np.isfinite(a)).tolist()
                raise ValueError(f"{key} contains non-finite values at indices {bad}")

    def __repr__(self) -> str:
        return (
            f"Model({self.name!r}, bodies={self.n_bodies}, nq={self.nq}, nu={self.nu}, "
            f"modes={self.n_modes.tolist()})"
        )


class ModelBuilder:
    """Python builder for models: ``ModelBuilder("arm").add_body(...).build()``.

    Each :meth:`add_body` takes the keys of one body of the model file (``joint``,
    ``rigid``, ``flex``; arrays may be numpy arrays) and ``parent`` as a name or ``None``.
    """

    def __init__(self, name: str = "model", gravity=(0.0, 0.0, 0.0)):
        self._d: dict[str, Any] = {"name": name, "gravity": list(gravity), "bodies": []}

    def add_body(self, name: str, parent: str | None = None, *, joint: Mapping[str, Any],
                 rigid: Mapping[str, Any] | None = None,
                 flex: Mapping[str, Any] | None = None) -> ModelBuilder:
        """Append a body (parents before children); returns the builder for chaining.

        ``parent`` is a body name or None (ground); ``joint``, ``rigid`` and ``flex`` are the
        blocks of the model-file format (SI units; arrays may be numpy arrays).
        """
        body: dict[str, Any] = {"name": name, "parent": parent, "joint": dict(joint)}
        if rigid is not None:
            body["rigid"] = dict(rigid)
        if flex is not None:
            body["flex"] = dict(flex)
        self._d["bodies"].append(body)
        return self

    def build(self) -> Model:
        """Validate and build the :class:`Model` (``ValueError`` naming body and key)."""
        return Model.from_dict(self._d)


def load_model(path: str | Path) -> Model:
    """Load a model file (JSON; YAML if PyYAML is installed).  ``ValueError`` if invalid."""
    from .model_file import read_model_dict

    return Model.from_dict(read_model_dict(path))


def save_model(model: Model, path: str | Path) -> None:
    """Write ``model`` as a JSON model file; loading it back gives identical dynamics."""
    from .model_file import write_model_dict

    write_model_dict(model.to_dict(), path)


# ----------------------------------------------------------------------------------------------
# Per-state kinematics
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Kinematics:
    """Position-level operators at a configuration ``q`` (filled by :func:`compute_kinematics`).

    Every list has one entry per body ``i``; ``m = n_m(i)``, ``m_p = n_m(parent)``.

    Attributes
    ----------
    fidelity : ``"full"`` or ``"ruthless"``.
    eta : list of (m,) — modal coordinates (the actual ones, for stiffness forces).
    frames : list of NodeFrames — node frames at ``η`` (full) or at ``η = 0`` (ruthless).
    pose : list of Transform — pose of ``F_i`` in the inertial frame.
    T_parent : list of Transform — pose of ``F_i`` in the parent's attach-node frame
        (in the inertial frame for a root).
    phi : list of (6, 6) — ``φ(t_i, i) = T_parent.phi()``.
    A : list of (m_p + 6, 6) or None — ``[E_tᵀ; φ(p, t_i)]``; None for roots.
    E_t : list of (6, m_p) or None — deformation twist map of the parent's attach node.
    T_joint : list of Transform — pose of ``J_c`` in ``F_i``.
    S : list of (6, nu_j) — joint map matrix ``H*`` in ``J_c`` coordinates.
    Hcal : list of (nu_j + m, m + 6) — modal joint map matrix ``ℋ(i)``.
    Q : list of (6, m) — ``−Π_F^d(i)``: twist of ``F_i`` per unit ``η̇`` of its own attach node.
    M_m : list of (m + 6, m + 6) — modal mass matrix (Eq 23).
    """

    model: Model
    q: np.ndarray
    fidelity: str
    eta: list
    frames: list
    pose: list
    T_parent: list
    phi: list
    A: list
    E_t: list
    T_joint: list
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


def _check_fidelity(fidelity: str) -> None:
    if fidelity not in FIDELITIES:
        raise ValueError(f"unknown fidelity {fidelity!r}; expected one of {FIDELITIES}")


def compute_kinematics(model: Model, q: np.ndarray, fidelity: str = "full") -> Kinematics:
    """Position-level operators ``Φ``, ``ℋ``, ``M_m`` and poses at ``q`` (nq,).

    With ``fidelity="ruthless"`` the interbody geometry and ``M_m`` are evaluated at zero
    deformation (Appendix B, Eq B1); the joint geometry uses the actual joint coordinates.
    """
    _check_fidelity(fidelity)
    model.check_state(q)
    n = model.n_bodies
    keys = ("eta", "frames", "pose", "T_parent", "phi", "A", "E_t", "T_joint", "S", "Hcal",
            "Q", "M_m")
    f: dict[str, list] = {k: [None] * n for k in keys}
    for i in range(n):  # base-to-tip
        body, joint = model.bodies[i], model.joints[i]
        m = body.n_modes
        eta = model.eta(q, i)
        frames: NodeFrames = body.node_frames_at(eta, fidelity)
        qj = model.q_joint(q, i)
        # F_i relative to the joint's moving frame J_c, through the child's attach node
        cn = model.child_node[i]
        if cn is None:
            T_i_nc, E_c = Transform.identity(), np.zeros((6, m))
        else:
            T_i_nc, E_c = frames.transform(cn), frames.E[cn]
        T_Jc_i = model.child_placement[i].compose(T_i_nc.inverse())
        T_parent = model.placement[i].compose(joint.transform(qj)).compose(T_Jc_i)
        # parent's attach node
        p = int(model.parent[i])
        if p >= 0:
            pn = model.parent_node[i]
            mp = int(model.n_modes[p])
            if pn is None:
                T_p_t, E_t = Transform.identity(), np.zeros((6, mp))
            else:
                T_p_t, E_t = f["frames"][p].transform(pn), f["frames"][p].E[pn]
            f["A"][i] = np.vstack([E_t.T, T_p_t.phi()])
            f["E_t"][i] = E_t
            f["pose"][i] = f["pose"][p].compose(T_p_t).compose(T_parent)
        else:
            f["pose"][i] = T_parent
        S = joint.motion_subspace(qj)
        T_i_Jc = T_Jc_i.inverse()
        H_F_star = T_i_Jc.motion_to_parent() @ S  # 6 × nu_j
        Q = -(T_i_nc.motion_to_parent() @ E_c)  # 6 × m
        Hcal = np.zeros((joint.nu + m, m + 6), dtype=np.result_type(H_F_star, Q))
        Hcal[:joint.nu, m:] = H_F_star.T
        Hcal[joint.nu:, :m] = np.eye(m)
        Hcal[joint.nu:, m:] = Q.T
        f["eta"][i] = eta
        f["frames"][i] = frames
        f["T_parent"][i] = T_parent
        f["phi"][i] = T_parent.phi()
        f["T_joint"][i] = T_i_Jc
        f["S"][i] = S
        f["Hcal"][i] = Hcal
        f["Q"][i] = Q
        f["M_m"][i] = body.modal_mass(frames) if fidelity == "full" else body.M_m0
    return Kinematics(model=model, q=np.asarray(q), fidelity=fidelity, **f)


@dataclass(frozen=True, eq=False)
class Velocities:
    """Velocity-level terms at ``(q, u)`` (filled by :func:`compute_velocities`).

    Attributes
    ----------
    V_m : list of (m + 6,) — modal spatial velocities ``[η̇; V]`` (Eq 11), ``V`` in ``F_i``.
    a_m : list of (m + 6,) — Coriolis/centrifugal accelerations ``[0; a_V]`` (Eq 25).
    b_m : list of (m + 6,) — modal gyroscopic forces (Eq 37).
    eta_dot : list of (m,) — actual modal rates (for damping forces).
    """

    V_m: list
    a_m: list
    b_m: list
    eta_dot: list


def modal_velocities(model: Model, kin: Kinematics, u: np.ndarray) -> list:
    """Modal spatial velocities ``V_m(i)`` (m + 6,) by the base-to-tip recursion of Eq 11:
    ``V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i)``."""
    V_m: list = [None] * model.n_bodies
    for i in range(model.n_bodies):
        Vm = kin.Hcal[i].T @ u[model.u_slice(i)]
        p = int(model.parent[i])
        if p >= 0:
            m = int(model.n_modes[i])
            Vm[m:] += kin.phi[i].T @ (kin.A[i].T @ V_m[p])
        V_m[i] = Vm
    return V_m


def compute_velocities(model: Model, kin: Kinematics, u: np.ndarray) -> Velocities:
    """Modal velocities ``V_m``, accelerations ``a_m`` (Eq 25) and forces ``b_m`` (Eq 37).

    ``a_m(i) = [0; a_V(i)]`` collects the velocity products of the interbody chain
    parent node → ``J_p`` → ``J_c`` → child node → ``F_i`` (each step ``A_b = X A_a +
    V̇_rel + V_b × V_rel``)::

        a_V = φ*(t, i) (Ė_t η̇_p + V_t × E_t η̇_p) + X_{i←J_c} (Ḣ* β + V_Jc × H* β)
              + Q̇ η̇ + V × Q η̇,       Q̇ η̇ = −X_{i←n_c} Ė_c η̇.

    For the ruthless fidelity the velocity products use ``η̇ = 0`` (Eq B1), so
    ``a_m``, ``b_m`` depend on the hinge rates only.
    """
    model.check_state(kin.q, u)
    n = model.n_bodies
    V_m = modal_velocities(model, kin, u)
    if kin.fidelity == "ruthless":
        u_nl = np.array(u, dtype=np.result_type(u, float))
        for i in range(n):
            u_nl[model.u_slice(i)][model.nu_joint[i]:] = 0.0
        V_nl = modal_velocities(model, kin, u_nl)
    else:
        u_nl, V_nl = u, V_m
    a_m: list = [None] * n
    b_m: list = [None] * n
    for i in range(n):
        body, joint = model.bodies[i], model.joints[i]
        m = body.n_modes
        beta = model.u_joint(u_nl, i)
        etad = model.eta_dot(u_nl, i)
        V = V_nl[i][m:]
        aV = np.zeros(6, dtype=V.dtype)
        p = int(model.parent[i])
        pn = model.parent_node[i] if p >= 0 else None
        if pn is not None and model.n_modes[p]:
            etad_p = model.eta_dot(u_nl, p)
            V_t = kin.A[i].T @ V_nl[p]
            w_t = kin.E_t[i] @ etad_p
            eps = model.bodies[p].node_twist_rate(kin.frames[p], pn, etad_p)
            eps = eps + cross_motion(V_t, w_t)
            aV += kin.phi[i].T @ eps
        if joint.nu:
            Sb = kin.S[i] @ beta
            Q_etad = kin.Q[i] @ etad
            V_Jc = kin.T_joint[i].twist_to_child(V - Q_etad)
            eps = joint.motion_subspace_rate(model.q_joint(kin.q, i), beta) + cross_motion(V_Jc, Sb)
            aV += kin.T_joint[i].motion_to_parent() @ eps
        cn = model.child_node[i]
        if cn is not None and m:
            Q_etad = kin.Q[i] @ etad
            Edot = body.node_twist_rate(kin.frames[i], cn, etad)
            T_i_nc = kin.frames[i].transform(cn)
            aV += -(T_i_nc.motion_to_parent() @ Edot) + cross_motion(V, Q_etad)
        am = np.zeros(m + 6, dtype=aV.dtype)
        am[m:] = aV
        a_m[i] = am
        b_m[i] = body.modal_bias(kin.frames[i], etad, V)
    eta_dot = [model.eta_dot(u, i) for i in range(n)]
    return Velocities(V_m=V_m, a_m=a_m, b_m=b_m, eta_dot=eta_dot)


def state_terms(model: Model, q: np.ndarray, u: np.ndarray | None = None,
                fidelity: str = "full") -> tuple[Kinematics, Velocities | None]:
    """Position and velocity terms of a state for a fidelity — the one place where the body
    model is chosen.

    ``"full"`` evaluates the deformation-dependent operators (:func:`compute_kinematics`,
    :func:`compute_velocities`); ``"ruthless"`` uses the precomputed constant operators of
    :class:`flexdyn.ruthless.RuthlessModel` (identical results, less work per call).
    Returns ``(kin, vel)``; ``vel`` is None when ``u`` is None.
    """
    _check_fidelity(fidelity)
    if fidelity == "ruthless":
        from .ruthless import ruthless_model

        rm = ruthless_model(model)
        kin = rm.kinematics(q)
        return kin, (None if u is None else rm.velocities(kin, u))
    kin = compute_kinematics(model, q, fidelity)
    return kin, (None if u is None else compute_velocities(model, kin, u))
