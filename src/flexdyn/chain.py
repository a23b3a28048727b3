"""The multibody model: an immutable tree of bodies, its builder, files and state layout.

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

The per-state operators of the recursions (``Φ``, ``ℋ``, ``M_m``, …) are built from the
model by :mod:`flexdyn.terms`; the model itself is constant: its arrays are read-only and
nothing is cached on it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .body import Body
from .constraints import Closure
from .joint_forces import force_table
from .joints import QUATERNION_TOL, Joint, make_joint
from .model_file import (
    beam_nodes,
    normalize_model_dict,
    read_model_dict,
    to_plain_dict,
    write_model_dict,
)
from .spatial import Transform
from .tip_kinematics import DEFAULT_TIP_KINEMATICS
from .urdf import DEFAULT_GRAVITY, DEFAULT_LIMIT_DAMPING, DEFAULT_LIMIT_STIFFNESS, urdf_model_dict

__all__ = [
    "QUATERNION_TOL",
    "Model",
    "ModelBuilder",
    "StateEntry",
    "load_model",
    "load_urdf",
    "numeric_array",
    "save_model",
    "state_layout",
]


def numeric_array(value: Any, name: str) -> np.ndarray:
    """``value`` as an array of real (integers become floats) or complex numbers;
    ``TypeError`` naming ``name`` for strings, objects, booleans."""
    a = np.asarray(value)
    if a.dtype.kind in "iu":
        return a.astype(float)
    if a.dtype.kind not in "fc":
        raise TypeError(f"{name} must be an array of real or complex numbers, got dtype "
                        f"{a.dtype}")
    return a


def _frozen(values: Any, dtype: type) -> np.ndarray:
    a = np.array(values, dtype=dtype)
    a.setflags(write=False)
    return a


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
    tip_kinematics : str — the parametrisation of the elastic node rotations
        (:data:`flexdyn.tip_kinematics.TIP_KINEMATICS`; default ``"exponential"``).
    nq, nu : int — sizes of ``q`` and ``u``.
    n_modes : int array (n_bodies,)
    constraints : tuple of :class:`~flexdyn.constraints.Closure` — the loop closures (the
        model file's ``constraints``; empty for a tree).
    n_constraints : int — their number of constraint rows ``n_c``.
    joint_forces : tuple (n_bodies,) of arrays (nu_j, 11) or None — each joint's springs,
        dampers, friction, limits and torque limit, a row per joint speed in the order of
        :data:`flexdyn.joint_forces.FORCE_KEYS` (None: the joint has no ``forces`` block).
    """

    def __init__(self, spec: Mapping[str, Any]):
        nd = normalize_model_dict(spec)
        self._spec = nd
        self.name: str = nd["name"]
        self.gravity: np.ndarray = _frozen(nd["gravity"], float)
        self.tip_kinematics: str = nd["tip_kinematics"]
        bspecs = nd["bodies"]
        self.n_bodies = len(bspecs)
        self.names: tuple[str, ...] = tuple(b["name"] for b in bspecs)
        self.bodies: tuple[Body, ...] = tuple(
            Body.from_spec(b["name"], b.get("rigid"), b.get("flex"), self.tip_kinematics)
            for b in bspecs
        )
        self.joints: tuple[Joint, ...] = tuple(make_joint(b["joint"]) for b in bspecs)
        self.parent = _frozen([b["parent"] for b in bspecs], int)
        kids: list[list[int]] = [[] for _ in range(self.n_bodies)]
        for i, p in enumerate(self.parent.tolist()):
            if p >= 0:
                kids[p].append(i)
        self.children: tuple[tuple[int, ...], ...] = tuple(tuple(k) for k in kids)
        self.placement = tuple(_transform(b["joint"]["placement"]) for b in bspecs)
        self.child_placement = tuple(_transform(b["joint"]["child_placement"]) for b in bspecs)
        self.parent_node = tuple(b["joint"]["parent_node"] for b in bspecs)
        self.child_node = tuple(b["joint"]["child_node"] for b in bspecs)
        self.n_modes = _frozen([b.n_modes for b in self.bodies], int)
        nqj = _frozen([j.nq for j in self.joints], int)
        nuj = _frozen([j.nu for j in self.joints], int)
        self.nq_joint, self.nu_joint = nqj, nuj
        self.joint_forces = force_table([b["joint"]["forces"] for b in bspecs], nuj.tolist())
        self.q_start = _frozen(np.concatenate([[0], np.cumsum(nqj + self.n_modes)])[:-1], int)
        self.u_start = _frozen(np.concatenate([[0], np.cumsum(nuj + self.n_modes)])[:-1], int)
        self.nq = int(np.sum(nqj + self.n_modes))
        self.nu = int(np.sum(nuj + self.n_modes))
        self.constraints: tuple[Closure, ...] = tuple(_closure(c) for c in nd["constraints"])
        self.n_constraints = sum(c.n_rows for c in self.constraints)

    # -- construction / files ----------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Model:
        """Build a model from a dict in the model-file format (``model-format.md``).

        Raises ``ValueError`` naming the body and key for any invalid entry.
        """
        return cls(d)

    def to_dict(self) -> dict:
        """The model as a JSON-ready dict in the model-file format."""
        return to_plain_dict(self._spec)

    # -- state layout ---------------------------------------------------------------------------
    def index(self, body: int | str) -> int:
        """The index of ``body``: a body name or an index (negative counts from the end);
        ``ValueError`` naming the bodies otherwise."""
        if isinstance(body, str):
            if body not in self.names:
                raise ValueError(f"no body named {body!r}; bodies are {list(self.names)}")
            return self.names.index(body)
        if isinstance(body, (int, np.integer)) and not isinstance(body, bool):
            if not -self.n_bodies <= body < self.n_bodies:
                raise ValueError(f"body index {body} out of range for {self.n_bodies} bodies "
                                 f"{list(self.names)}")
            return int(body) % self.n_bodies
        raise ValueError(f"a body is a name or an index, got {body!r}")

    def q_slice(self, i: int | str) -> slice:
        """Slice of body ``i``'s coordinates ``[q_joint; η]`` in ``q`` (``i`` an index or a
        body name, as for every per-body method)."""
        i = self.index(i)
        s = int(self.q_start[i])
        return slice(s, s + int(self.nq_joint[i] + self.n_modes[i]))

    def u_slice(self, i: int | str) -> slice:
        """Slice of ``χ(i) = [β; η̇]`` in ``u`` (and of ``τ(i)`` in ``τ``)."""
        i = self.index(i)
        s = int(self.u_start[i])
        return slice(s, s + int(self.nu_joint[i] + self.n_modes[i]))

    def q_joint(self, q: np.ndarray, i: int | str) -> np.ndarray:
        """Body ``i``'s joint coordinates (nq_joint[i],), a view into ``q`` (nq,)."""
        i = self.index(i)
        s = int(self.q_start[i])
        return q[s:s + int(self.nq_joint[i])]

    def eta(self, q: np.ndarray, i: int | str) -> np.ndarray:
        """Body ``i``'s modal coordinates ``η`` (n_modes[i],), a view into ``q`` (nq,)."""
        i = self.index(i)
        s = int(self.q_start[i] + self.nq_joint[i])
        return q[s:s + int(self.n_modes[i])]

    def u_joint(self, u: np.ndarray, i: int | str) -> np.ndarray:
        """Body ``i``'s joint speeds ``β`` (nu_joint[i],), a view into ``u`` (nu,)."""
        i = self.index(i)
        s = int(self.u_start[i])
        return u[s:s + int(self.nu_joint[i])]

    def eta_dot(self, u: np.ndarray, i: int | str) -> np.ndarray:
        """Body ``i``'s modal rates ``η̇`` (n_modes[i],), a view into ``u`` (nu,)."""
        i = self.index(i)
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
        q, u = numeric_array(q, "q"), numeric_array(u, "u")
        out = np.empty(self.nq, dtype=np.result_type(q, u, float))
        for i, j in enumerate(self.joints):
            qs, us = int(self.q_start[i]), int(self.u_start[i])
            out[qs:qs + j.nq] = j.qdot(q[qs:qs + j.nq], u[us:us + j.nu])
            m = int(self.n_modes[i])
            out[qs + j.nq:qs + j.nq + m] = u[us + j.nu:us + j.nu + m]
        return out

    def Gamma(self, q: np.ndarray) -> np.ndarray:
        """Block-diagonal ``Γ(q)`` (nq × nu) with ``q̇ = Γ(q) u``."""
        q = numeric_array(q, "q")
        G = np.zeros((self.nq, self.nu), dtype=np.result_type(q, float))
        for i, j in enumerate(self.joints):
            qs, us = int(self.q_start[i]), int(self.u_start[i])
            G[qs:qs + j.nq, us:us + j.nu] = j.Gamma(q[qs:qs + j.nq])
            m = int(self.n_modes[i])
            G[qs + j.nq:qs + j.nq + m, us + j.nu:us + j.nu + m] = np.eye(m)
        return G

    def normalize_configuration(self, q: np.ndarray) -> np.ndarray:
        """``q`` with every quaternion scaled to unit length."""
        q = np.array(q, dtype=np.result_type(q, float))
        for i, j in enumerate(self.joints):
            s = int(self.q_start[i])
            q[s:s + j.nq] = j.normalize(q[s:s + j.nq])
        return q

    def check_state(self, q: Any, u: Any = None, **named: Any) -> list[np.ndarray]:
        """Validate ``q`` (nq,), ``u`` (nu,) and other u-sized arrays; return them as arrays
        ``[q, u, *named]`` (None where None was given).  Real and complex numbers are
        accepted (complex for complex-step differentiation); integers become floats.

        The quaternions of ``q`` are normalised (``Q / √(Q·Q)``, so that complex-step
        derivatives pass through); one whose norm (of its real part) is off 1 by more than
        :data:`QUATERNION_TOL`, or zero, raises.

        Raises ``ValueError`` for a wrong shape, a non-finite entry or a quaternion that is
        not unit, and ``TypeError`` for a non-numeric array, naming the argument and body."""
        arrays = {"q": (q, self.nq), "u": (u, self.nu)}
        arrays.update((k, (v, self.nu)) for k, v in named.items())
        out: list[np.ndarray] = []
        for key, (value, n) in arrays.items():
            if value is None:
                out.append(None)
                continue
            a = numeric_array(value, key)
            if a.shape != (n,):
                raise ValueError(
                    f"{key} has shape {a.shape}, expected ({n},) for model {self.name!r}"
                )
            if not np.all(np.isfinite(a)):
                bad = np.flatnonzero(~np.isfinite(a)).tolist()
                raise ValueError(f"{key} contains non-finite values at indices {bad}")
            out.append(self.unit_quaternions(a) if key == "q" else a)
        return out

    def unit_quaternions(self, q: np.ndarray) -> np.ndarray:
        """``q`` (nq,), or a batch (B, nq), with every joint quaternion normalised
        (``Q / √(Q·Q)``; see :meth:`check_state`).  Raises ``ValueError`` naming the body
        when a quaternion is zero or off unit norm by more than :data:`QUATERNION_TOL` (of a
        batch, the first such state's norm is quoted)."""
        out = q
        for i, joint in enumerate(self.joints):
            if not joint.quaternion:
                continue
            s = int(self.q_start[i])
            Q = q[..., s:s + 4]
            n2 = np.sum(Q * Q, axis=-1)
            norm = np.sqrt(np.maximum(np.real(n2), 0.0))
            where = f"q: the quaternion of body {i} {self.names[i]!r} (q[{s}:{s + 4}])"
            if np.any(norm == 0.0):
                raise ValueError(f"{where} is zero")
            off = np.abs(norm - 1.0) > QUATERNION_TOL
            if np.any(off):
                raise ValueError(
                    f"{where} has norm {float(norm[off].flat[0]):.9g}, off 1 by more than "
                    f"{QUATERNION_TOL:g}; normalise it first (Model.normalize_configuration)")
            if out is q:
                out = q.copy()
            out[..., s:s + 4] = Q / np.sqrt(n2)[..., None]
        return out

    def __repr__(self) -> str:
        return (
            f"Model({self.name!r}, bodies={self.n_bodies}, nq={self.nq}, nu={self.nu}, "
            f"modes={self.n_modes.tolist()})"
        )


def _closure(c: Mapping[str, Any]) -> Closure:
    """A :class:`Closure` from a normalised ``constraints`` entry."""
    endpoints = ("name", "type", "body", "node", "point", "other_body", "other_node",
                 "other_point")
    return Closure(name=c["name"], kind=c["type"], body=c["body"], node=c["node"],
                   point=c["point"], other_body=c["other_body"], other_node=c["other_node"],
                   other_point=c["other_point"],
                   params={k: v for k, v in c.items() if k not in endpoints})


class ModelBuilder:
    """Python builder for models: ``ModelBuilder("arm").add_body(...).build()``.

    Each :meth:`add_body` takes the keys of one body of the model file (``joint``,
    ``rigid``, ``flex``; arrays may be numpy arrays) and ``parent`` as a name or ``None``;
    ``tip_kinematics`` is the model's tip-kinematics option (``model-format.md``).
    """

    def __init__(self, name: str = "model", gravity=(0.0, 0.0, 0.0),
                 tip_kinematics: str = DEFAULT_TIP_KINEMATICS):
        self._d: dict[str, Any] = {"name": name, "gravity": list(gravity),
                                   "tip_kinematics": tip_kinematics, "bodies": []}

    def add_body(self, name: str, parent: str | None = None, *, joint: Mapping[str, Any],
                 rigid: Mapping[str, Any] | None = None,
                 flex: Mapping[str, Any] | None = None,
                 beam: Mapping[str, Any] | None = None) -> ModelBuilder:
        """Append a body (parents before children); returns the builder for chaining.

        ``parent`` is a body name or None (ground); ``joint``, ``rigid`` and ``flex`` are the
        blocks of the model-file format (SI units; arrays may be numpy arrays); ``flex`` may
        also be a :class:`~flexdyn.beam.BeamModes` (its ``to_flex_dict()``), or give ``beam``,
        a beam block (``docs/flexible-bodies.md``) instead.  The joint's ``parent_node`` may
        be ``"tip"``: the parent's last node.
        """
        joint = dict(joint)
        if isinstance(joint.get("parent_node"), str):
            joint["parent_node"] = self._node(parent, joint["parent_node"],
                                              f"body {name!r}: joint parent_node")
        body: dict[str, Any] = {"name": name, "parent": parent, "joint": joint}
        if rigid is not None:
            body["rigid"] = dict(rigid)
        if flex is not None:
            body["flex"] = dict(flex.to_flex_dict() if hasattr(flex, "to_flex_dict") else flex)
        if beam is not None:
            body["beam"] = dict(beam)
        self._d["bodies"].append(body)
        return self

    def _body(self, name: str | None, what: str) -> dict:
        for body in self._d["bodies"]:
            if body["name"] == name:
                return body
        raise ValueError(f"{what}: no body {name!r} added yet; bodies are "
                         f"{[b['name'] for b in self._d['bodies']]}")

    def _node(self, name: str | None, node: int | str, what: str) -> int:
        """A node of an added body: an index (negative from the end) or ``"tip"``."""
        body = self._body(name, what)
        nodes = (beam_nodes(body["beam"], f"body {name!r}: beam") if body.get("beam")
                 else body.get("flex", {}).get("nodes"))
        n = 0 if nodes is None else len(nodes)
        if n == 0:
            raise ValueError(f"{what}: body {name!r} has no nodes")
        if isinstance(node, str):
            if node != "tip":
                raise ValueError(f"{what}: a node is an index or 'tip', got {node!r}")
            return n - 1
        if not (isinstance(node, (int, np.integer)) and -n <= node < n):
            raise ValueError(f"{what}: node {node!r} out of range for body {name!r} with {n} "
                             "nodes")
        return int(node) % n

    def add_payload(self, body: str, mass: float, inertia: Any = None,
                    node: int | str = "tip") -> ModelBuilder:
        """Add a payload — a point mass (kg) with a rotary inertia about the node (3 × 3,
        kg m², default zero) — to node ``node`` (an index or ``"tip"``) of the flexible body
        ``body`` already added: its node mass and inertia grow by them."""
        what = f"add_payload({body!r})"
        j = self._node(body, node, what)
        if not (isinstance(mass, (int, float, np.floating)) and np.isfinite(mass)
                and mass >= 0):
            raise ValueError(f"{what}: mass must be a finite number ≥ 0 (kg), got {mass!r}")
        J = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if J.shape != (3, 3) or not np.all(np.isfinite(J)) or np.max(np.abs(J - J.T)) > 1e-12 * (
                1 + np.max(np.abs(J))):
            raise ValueError(f"{what}: inertia must be a finite symmetric 3 × 3 matrix (kg m²)")
        if self._body(body, what).get("beam"):
            raise ValueError(f"{what}: body {body!r} is a beam block; carry the payload on a "
                             "child body (or build the beam with flexdyn.beam.beam_modes)")
        flex = self._body(body, what)["flex"]
        masses = np.array(flex["node_masses"], dtype=float)
        inertias = (np.zeros((masses.size, 3, 3)) if flex.get("node_inertias") is None
                    else np.array(flex["node_inertias"], dtype=float))
        masses[j] += mass
        inertias[j] += J
        flex["node_masses"], flex["node_inertias"] = masses, inertias
        return self

    def add_constraint(self, name: str, type: str, body: str, other_body: str | None = None,
                       **keys: Any) -> ModelBuilder:
        """Append a loop closure (``docs/model-format.md``, ``constraints``); returns the
        builder.

        ``type`` is a kind of :data:`flexdyn.constraints.CONSTRAINT_KINDS`; ``body`` and
        ``other_body`` (None: the ground) are body names; ``keys`` are the entry's other
        keys: ``node`` or ``point``, ``other_node`` or ``other_point``, and the kind's own
        (``axis``, ``other_axis``, ``rotation``, ``direction``, ``normal``).
        """
        entry = {"name": name, "type": type, "body": body, "other_body": other_body, **keys}
        self._d.setdefault("constraints", []).append(entry)
        return self

    def build(self) -> Model:
        """Validate and build the :class:`Model` (``ValueError`` naming body and key)."""
        return Model.from_dict(self._d)


def load_model(path: str | Path) -> Model:
    """Load a model file (JSON; YAML if PyYAML is installed; a ``.urdf`` robot as
    :func:`load_urdf` reads it with its defaults).  ``ValueError`` if invalid."""
    if Path(path).suffix.lower() == ".urdf":
        return load_urdf(path)
    return Model.from_dict(read_model_dict(path))


def load_urdf(
    source: str | os.PathLike,
    *,
    flexible: Mapping[str, Mapping[str, Any]] | None = None,
    floating_base: bool = False,
    package_dirs: Sequence[str | os.PathLike] = (),
    merge_fixed: bool = True,
    limit_stiffness: float | None = DEFAULT_LIMIT_STIFFNESS,
    limit_damping: float = DEFAULT_LIMIT_DAMPING,
    gravity: Sequence[float] = DEFAULT_GRAVITY,
) -> Model:
    """A robot from a URDF file or text, with chosen links made flexible (``urdf.md``).

    Parameters
    ----------
    source : str or os.PathLike
        A URDF file (a ``package://`` address is looked up in ``package_dirs``) or its XML
        text (a string starting with ``<``).
    flexible : mapping, optional
        Link name → a flexible beam replacing the link: ``start``, ``end`` (points in the
        link frame, m; default the link origin and its only child joint's origin),
        ``material`` and ``section`` or beam properties, the options of
        :func:`flexdyn.beam.beam_modes`, ``keep_inertia`` (default True: at zero deformation
        the link keeps the URDF mass, centre of mass and inertia); see
        :data:`flexdyn.urdf.FLEXIBLE_KEYS`.
    floating_base : bool
        Joint the root link to the ground by a ``free`` joint (else it is fixed).
    merge_fixed : bool
        Merge links on fixed joints into their parent's body (as Pinocchio does).
    limit_stiffness, limit_damping : float
        Penalty stiffness (N m/rad, N/m) and damping (N m s/rad, N s/m) of the URDF joint
        limits; ``limit_stiffness=None`` leaves the limits out.
    gravity : (3,) m/s²
        Gravity in the inertial frame.

    Returns
    -------
    Model
        Bodies named after the links, in Pinocchio's depth-first joint order.

    Raises
    ------
    flexdyn.urdf.URDFError
        A ``ValueError`` naming the element of the first problem found in the file.
    """
    return Model.from_dict(urdf_model_dict(
        source, flexible=flexible, floating_base=floating_base, package_dirs=package_dirs,
        merge_fixed=merge_fixed, limit_stiffness=limit_stiffness, limit_damping=limit_damping,
        gravity=gravity))


def save_model(model: Model, path: str | Path, *, overwrite: bool = True) -> None:
    """Write ``model`` as a JSON model file; loading it back gives identical dynamics.

    The file is replaced atomically (:func:`flexdyn.files.write_atomically`: a symbolic
    link is replaced, not written through); ``overwrite=False`` refuses an existing
    ``path`` with ``FileExistsError``."""
    write_model_dict(model.to_dict(), path, overwrite=overwrite)




# ----------------------------------------------------------------------------------------------
# State layout (model-format.md)
# ----------------------------------------------------------------------------------------------
class StateEntry(NamedTuple):
    """One entry of ``q`` or ``u``: ``name`` (``"body.component"``), ``kind``, ``body`` (body
    name) and ``index`` (position in ``q`` or ``u``)."""

    name: str
    kind: str
    body: str
    index: int


def state_layout(model: Model) -> dict[str, list[StateEntry]]:
    """Describe every entry of ``q`` and ``u``.

    Returns
    -------
    dict with keys ``"q"`` (nq entries) and ``"u"`` (nu entries) of :class:`StateEntry`
    ``(name, kind, body, index)``.  Kinds: ``angle``, ``displacement``, ``quaternion``
    (``[w, x, y, z]``), ``position``, ``modal`` (``η``), ``nodal`` (a nodal body's node
    displacements) for ``q``; ``angular_rate``, ``rate``, ``angular_velocity``,
    ``linear_velocity`` (in the joint's moving frame), ``modal_rate`` (``η̇``) and
    ``nodal_rate`` for ``u``.  Names are ``"<body>.<component>"``, e.g. ``"link1.theta"``,
    ``"link1.eta[0]"``, ``"hub.wx"``, ``"boom.node[3].tz"``, ``"boom.node[3].tz_dot"``.
    """
    out: dict[str, list[StateEntry]] = {"q": [], "u": []}
    for i, (bname, joint) in enumerate(zip(model.names, model.joints, strict=True)):
        body = model.bodies[i]
        elastic = "nodal" if body.kind == "nodal" else "modal"
        for key, comps, start in (("q", joint.q_components, model.q_start[i]),
                                  ("u", joint.u_components, model.u_start[i])):
            s = int(start)
            out[key].extend(StateEntry(f"{bname}.{c}", kind, bname, s + k)
                            for k, (c, kind) in enumerate(comps))
            kind = elastic if key == "q" else f"{elastic}_rate"
            out[key].extend(StateEntry(f"{bname}.{name}", kind, bname, s + len(comps) + k)
                            for k, name in enumerate(body.coordinate_names(key == "u")))
    return out
