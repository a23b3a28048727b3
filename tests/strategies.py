"""Hypothesis strategies for random flexdyn models and states.

The structure of a model (number of bodies, topology, joint types, node and mode counts,
attachment nodes) is drawn with hypothesis so that failures shrink to small models; the
numbers (geometry, inertias, modes, stiffness) come from a numpy generator seeded by
hypothesis, which keeps generation fast.

Models are built to be well conditioned: every body has a rigid part with positive mass and a
positive definite inertia, the mode shapes are orthonormal on the node coordinates that carry
inertia (then scaled), and stiffness and damping are symmetric positive (semi-)definite.

Exported API
------------
``JOINT_TYPES``
    The joint types of the model format.
``models(**options)``
    Strategy of raw model dicts (the model-file format, plain lists and floats).
``models_and_states(**options)``
    Strategy of :class:`Sample` ``(d, model, q, u, udot, f_ext)``.
``random_model_dict(rng, ...)``
    The numeric part of :func:`models`, usable without hypothesis.
``random_state(model, rng, eta_scale=0.3, speed_scale=1.0)``
    ``(q, u, udot)`` with unit quaternions.
``random_f_ext(model, rng, scale=1.0)``
    External wrenches, shape ``(n_bodies, 6)``.
``random_rotation(rng)``
    A uniformly random rotation matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

import flexdyn as fd

__all__ = [
    "JOINT_TYPES",
    "Sample",
    "models",
    "models_and_states",
    "random_f_ext",
    "random_model_dict",
    "random_rotation",
    "random_state",
]

JOINT_TYPES = (
    "fixed",
    "revolute",
    "prismatic",
    "screw",
    "cylindrical",
    "universal",
    "spherical",
    "free",
    "planar",
    "euler",
    "free-euler",
    "map",
    "compound",
)

#: Number of speeds of each joint type (``map``: two skew screw axes; ``compound``:
#: rotations about a point, then a screw; see :func:`random_joint`).
_JOINT_NU = {"fixed": 0, "revolute": 1, "prismatic": 1, "screw": 1, "cylindrical": 2,
             "universal": 2, "spherical": 3, "free": 6, "planar": 3, "euler": 3,
             "free-euler": 6, "map": 2, "compound": 4}

#: Joint types from joint maps (products of exponentials; their angles are drawn in
#: [−1.2, 1.2] rad, clear of the Euler singularities).
PRODUCT_JOINTS = ("planar", "euler", "free-euler", "map", "compound")

#: Joint types with a quaternion in their coordinates.
QUATERNION_JOINTS = ("spherical", "free")


class Sample(NamedTuple):
    """A model with one random state.

    Attributes
    ----------
    d : dict — the raw model dict.
    model : flexdyn.Model — ``Model.from_dict(d)``.
    q : (nq,) coordinates with unit quaternions.
    u, udot : (nu,) speeds and accelerations.
    f_ext : (n_bodies, 6) external wrenches at the body frame origins (body coordinates).
    """

    d: dict
    model: fd.Model
    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    f_ext: np.ndarray


# ---------------------------------------------------------------------------------------------
# numeric building blocks
# ---------------------------------------------------------------------------------------------


def unit_vector(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit vector (3,)."""
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_quaternion(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit quaternion ``[w, x, y, z]``."""
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation matrix (3, 3)."""
    w, x, y, z = random_quaternion(rng)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def random_inertia(rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    """A rotated inertia tensor whose principal moments satisfy the triangle inequality.

    The moments are ``(b + c, a + c, a + b)`` for second moments ``a, b, c`` drawn in
    ``[lo, hi]``, so the tensor is positive definite and physically realisable.
    """
    a, b, c = rng.uniform(lo, hi, size=3)
    R = random_rotation(rng)
    return R @ np.diag([b + c, a + c, a + b]) @ R.T


def random_spd(rng: np.random.Generator, m: int, lo: float, hi: float) -> np.ndarray:
    """A symmetric positive definite m × m matrix with eigenvalues in ``[lo, hi]``."""
    Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    K = Q @ np.diag(rng.uniform(lo, hi, size=m)) @ Q.T
    return 0.5 * (K + K.T)


def random_stiffening(rng: np.random.Generator, m: int) -> dict[str, Any]:
    """Random stiffening data of a flexible body with ``m`` modes: fully symmetric tensors
    ``K1`` (the strain energy's cubic part) and ``K2`` (its quartic part, ``½ Σ w g²`` with
    ``g = ½ ηᵀ G_p η`` at a few points ``p``: a positive energy, as a beam's membrane
    energy) and a random set of stretch modes."""
    a = rng.normal(0.0, 3.0, (3, m))
    G = [random_spd(rng, m, 0.0, 3.0) for _ in range(3)]
    K1 = sum(np.einsum("i,jk->ijk", ap, Gp) + np.einsum("j,ik->ijk", ap, Gp)
             + np.einsum("k,ij->ijk", ap, Gp) for ap, Gp in zip(a, G, strict=True))
    K2 = sum(np.einsum("ij,kl->ijkl", Gp, Gp) + np.einsum("ik,jl->ijkl", Gp, Gp)
             + np.einsum("il,jk->ijkl", Gp, Gp) for Gp in G)
    axial = np.flatnonzero(rng.random(m) < 0.3)
    return {"geometric_stiffness_1": K1.tolist(), "geometric_stiffness_2": K2.tolist(),
            "axial_modes": axial.tolist()}


def random_placement(rng: np.random.Generator, scale: float = 0.3) -> dict[str, Any]:
    """A random rigid placement: random rotation and a translation of size ~``scale``."""
    return {
        "translation": rng.uniform(-scale, scale, size=3).tolist(),
        "rotation": random_rotation(rng).tolist(),
    }


def random_modes(
    rng: np.random.Generator,
    n_nodes: int,
    n_modes: int,
    active_rows: np.ndarray,
    zero_rows: np.ndarray,
    amplitude: float = 0.35,
) -> np.ndarray:
    """A modal matrix Π (6 n × m) with orthonormal columns on ``active_rows``, then scaled.

    ``active_rows`` are the nodal coordinates that carry inertia; making the columns
    orthonormal there keeps the modal mass well conditioned.  The remaining rows are random
    of the same size, and ``zero_rows`` (e.g. a clamped attachment node) are zero.  An entry
    is ``amplitude`` in the RMS sense, so ``η ≈ 0.3`` gives deformations of ~0.1 m / ~0.1 rad.
    """
    Pi = rng.normal(size=(6 * n_nodes, n_modes)) * amplitude
    Q, _ = np.linalg.qr(rng.normal(size=(active_rows.size, n_modes)))
    Pi[active_rows] = Q * amplitude * np.sqrt(active_rows.size)
    Pi[zero_rows] = 0.0
    return Pi


def random_joint(rng: np.random.Generator, jtype: str) -> dict[str, Any]:
    """The type-specific keys of a joint of type ``jtype``."""
    joint: dict[str, Any] = {"type": jtype}
    if jtype in ("revolute", "prismatic", "screw", "cylindrical"):
        joint["axis"] = unit_vector(rng).tolist()
    if jtype == "screw":
        joint["pitch"] = float(rng.uniform(-0.3, 0.3))
    if jtype == "universal":
        a1 = unit_vector(rng)
        a2 = unit_vector(rng)
        while abs(a1 @ a2) > 0.8:
            a2 = unit_vector(rng)
        joint["axes"] = [a1.tolist(), a2.tolist()]
    if jtype == "planar":
        joint["axis"] = unit_vector(rng).tolist()
    if jtype in ("euler", "free-euler"):
        joint["sequence"] = ("321", "123")[int(rng.integers(2))]
    if jtype in ("map", "compound"):
        lines = []
        for pitch in (0.0, float(rng.uniform(-0.3, 0.3))):
            a, c = unit_vector(rng), rng.normal(size=3)
            lines.append(np.concatenate([a, np.cross(c, a) + pitch * a]))
        if jtype == "map":  # two skew screw axes: speeds ε̇, H*(ε)
            joint["map"] = np.column_stack(lines).tolist()
        else:  # rotations about a point (so(3) there), then a screw: H*(ε) of Prop 3
            A, c = random_rotation(rng), rng.normal(size=3)
            rot = np.vstack([A, np.cross(c, A.T).T])
            joint["factors"] = [rot.tolist(), lines[1][:, None].tolist()]
    return joint


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------


def random_model_dict(
    rng: np.random.Generator,
    parents: Sequence[int],
    joint_types: Sequence[str],
    n_nodes: Sequence[int],
    n_modes: Sequence[int],
    *,
    gravity: bool | None = None,
    damping: bool | None = None,
    stiffness_range: tuple[float, float] = (2.0, 40.0),
    attach: bool = True,
    name: str = "random",
) -> dict[str, Any]:
    """A random valid model dict with a given structure.

    Parameters
    ----------
    rng : numpy Generator.
    parents : parent index of each body (``-1`` for the ground), ``parents[i] < i``.
    joint_types : joint type of each body.
    n_nodes : node count of each body (0: no nodes).
    n_modes : requested mode count of each body (reduced to what the nodes support).
    gravity : ``True`` nonzero, ``False`` zero, ``None`` random.
    damping : ``True`` SPD damping, ``False`` none, ``None`` random per body.
    stiffness_range : eigenvalue range of the modal stiffness.
    attach : draw random ``parent_node``/``child_node`` (else all ``null``).
    name : model name.

    Returns
    -------
    dict
        The raw model dict (model-file format).
    """
    n = len(parents)
    bodies: list[dict[str, Any]] = []
    for i in range(n):
        body: dict[str, Any] = {
            "name": f"b{i}",
            "parent": None if parents[i] < 0 else f"b{parents[i]}",
        }
        # joint and attachments
        joint = random_joint(rng, joint_types[i])
        p = parents[i]
        if attach and p >= 0 and n_nodes[p] and rng.random() < 0.7:
            joint["parent_node"] = int(rng.integers(n_nodes[p]))
        else:
            joint["parent_node"] = None
        nn = n_nodes[i]
        child_node = int(rng.integers(nn)) if attach and nn and rng.random() < 0.6 else None
        joint["child_node"] = child_node
        if rng.random() < 0.8:
            joint["placement"] = random_placement(rng)
        if rng.random() < 0.6:
            joint["child_placement"] = random_placement(rng, scale=0.2)
        body["joint"] = joint
        # rigid part: always present, positive mass, positive definite inertia
        body["rigid"] = {
            "mass": float(rng.uniform(0.5, 2.0)),
            "com": rng.uniform(-0.3, 0.3, size=3).tolist(),
            "inertia": random_inertia(rng, 0.02, 0.2).tolist(),
        }
        if nn:
            nodes = rng.uniform(-0.8, 0.8, size=(nn, 3))
            masses = rng.uniform(0.1, 1.0, size=nn)
            rotary = rng.random() < 0.5
            flex: dict[str, Any] = {
                "nodes": nodes.tolist(),
                "node_masses": masses.tolist(),
                "node_inertias": (
                    [random_inertia(rng, 0.002, 0.02).tolist() for _ in range(nn)]
                    if rotary
                    else None
                ),
            }
            # rows of Π that carry inertia (see random_modes)
            rows = np.arange(6 * nn).reshape(nn, 6)
            active = rows if rotary else rows[:, 3:]
            zero = np.zeros(0, dtype=int)
            m_max = active.size
            if child_node is not None:
                keep = np.ones(nn, dtype=bool)
                keep[child_node] = False
                if rng.random() < 0.5:  # cantilever: the attachment node does not deform
                    zero = rows[child_node]
                    active = active[keep]
                    m_max = active.size
                else:
                    # the body frame moves with the attachment node (and the rigid part with
                    # it): there the modes compete with the joint's own degrees of freedom
                    m_max = active[keep].size + 6 - _JOINT_NU[joint["type"]]
                    active = np.concatenate([rows[child_node], active[keep].ravel()])
            active = np.unique(active.ravel())
            m = min(n_modes[i], m_max)
            if m:
                flex["modes"] = random_modes(rng, nn, m, active, zero).tolist()
                flex["stiffness"] = random_spd(rng, m, *stiffness_range).tolist()
                use_damping = rng.random() < 0.5 if damping is None else damping
                if use_damping:
                    flex["damping"] = random_spd(rng, m, 0.01, 0.5).tolist()
            body["flex"] = flex
        bodies.append(body)
    if gravity is None:
        gravity = rng.random() < 0.7
    if gravity:
        g = (
            [0.0, 0.0, -9.81]
            if rng.random() < 0.5
            else (9.81 * unit_vector(rng)).tolist()
        )
    else:
        g = [0.0, 0.0, 0.0]
    for body in bodies:  # drawn last, so that the draws above do not depend on them
        modes = body.get("flex", {}).get("modes")
        if modes and rng.random() < 0.5:
            body["flex"].update(random_stiffening(rng, len(modes[0])))
    return {
        "format": "flexdyn-model",
        "version": 1,
        "name": name,
        "gravity": g,
        "bodies": bodies,
    }


def _n_dof(d: dict[str, Any]) -> int:
    """Number of generalized speeds of a raw model dict."""
    total = 0
    for body in d["bodies"]:
        total += _JOINT_NU[body["joint"]["type"]]
        modes = body.get("flex", {}).get("modes")
        total += len(modes[0]) if modes else 0
    return total


@st.composite
def models(
    draw: st.DrawFn,
    *,
    min_bodies: int = 1,
    max_bodies: int = 8,
    topology: str | None = None,
    joint_types: Sequence[str] = JOINT_TYPES,
    max_nodes: int = 5,
    max_modes: int = 6,
    rigid_probability: float = 0.3,
    gravity: bool | None = None,
    damping: bool | None = None,
    stiffness_range: tuple[float, float] = (2.0, 40.0),
) -> dict[str, Any]:
    """Strategy of raw model dicts (see :func:`random_model_dict`).

    Parameters
    ----------
    min_bodies, max_bodies : body count range (1–8 by default).
    topology : ``"chain"`` (parent = previous body), ``"tree"`` (random earlier parent,
        occasionally the ground) or ``None`` (either).
    joint_types : the joint types to draw from.
    max_nodes : nodes per body are 0 … ``max_nodes`` (flexible bodies have at least one).
    max_modes : modes per flexible body are 1 … ``max_modes``.
    rigid_probability : probability that a body has no modes.
    gravity, damping, stiffness_range : see :func:`random_model_dict`.

    Every model has at least one degree of freedom.
    """
    n = draw(st.integers(min_bodies, max_bodies), label="n_bodies")
    topo = topology or draw(st.sampled_from(["chain", "tree"]), label="topology")
    parents = [-1]
    for i in range(1, n):
        if topo == "chain":
            parents.append(i - 1)
        else:
            parents.append(draw(st.integers(-1 if i > 1 else 0, i - 1), label="parent"))
    jtypes = [draw(st.sampled_from(list(joint_types)), label="joint") for _ in range(n)]
    n_nodes, n_modes = [], []
    for _ in range(n):
        rigid = draw(st.floats(0.0, 1.0), label="rigid?") < rigid_probability
        if rigid or max_nodes == 0 or max_modes == 0:
            n_nodes.append(draw(st.integers(0, min(2, max_nodes)), label="nodes"))
            n_modes.append(0)
        else:
            n_nodes.append(draw(st.integers(1, max_nodes), label="nodes"))
            n_modes.append(draw(st.integers(1, max_modes), label="modes"))
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    d = random_model_dict(
        rng, parents, jtypes, n_nodes, n_modes,
        gravity=gravity, damping=damping, stiffness_range=stiffness_range,
    )
    if _n_dof(d) == 0:  # give the model something to move
        d["bodies"][0]["joint"] = {**d["bodies"][0]["joint"], **random_joint(rng, "revolute")}
    return d


# ---------------------------------------------------------------------------------------------
# states
# ---------------------------------------------------------------------------------------------


def random_state(
    model: fd.Model,
    rng: np.random.Generator,
    eta_scale: float = 0.3,
    speed_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random state ``(q, u, udot)`` of ``model``.

    Angles are uniform in ``[-π, π]`` (in ``[-1.2, 1.2]`` for the joints from joint maps),
    displacements in ``[-0.5, 0.5]``, quaternions
    uniform unit quaternions, modal coordinates uniform in ``[-eta_scale, eta_scale]``;
    speeds and accelerations are normal with standard deviation ``speed_scale``.
    """
    q = np.zeros(model.nq)
    for i, joint in enumerate(model.joints):
        s = model.q_slice(i).start
        t = joint.type
        if t in PRODUCT_JOINTS:
            q[s:s + joint.nq] = rng.uniform(-1.2, 1.2, size=joint.nq)
        elif t in ("revolute", "screw", "universal"):
            q[s:s + joint.nq] = rng.uniform(-np.pi, np.pi, size=joint.nq)
        elif t == "prismatic":
            q[s] = rng.uniform(-0.5, 0.5)
        elif t == "cylindrical":
            q[s:s + 2] = [rng.uniform(-np.pi, np.pi), rng.uniform(-0.5, 0.5)]
        elif t in QUATERNION_JOINTS:
            q[s:s + 4] = random_quaternion(rng)
            if t == "free":
                q[s + 4:s + 7] = rng.uniform(-0.5, 0.5, size=3)
        m = int(model.n_modes[i])
        q[s + joint.nq:s + joint.nq + m] = rng.uniform(-eta_scale, eta_scale, size=m)
    u = speed_scale * rng.normal(size=model.nu)
    udot = speed_scale * rng.normal(size=model.nu)
    return q, u, udot


def random_f_ext(model: fd.Model, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Random external wrenches ``[moment; force]`` at the body frame origins, (n_bodies, 6)."""
    return scale * rng.normal(size=(model.n_bodies, 6))


@st.composite
def models_and_states(
    draw: st.DrawFn,
    eta_scale: float = 0.3,
    speed_scale: float = 1.0,
    **model_options: Any,
) -> Sample:
    """Strategy of :class:`Sample` ``(d, model, q, u, udot, f_ext)``.

    ``model_options`` are passed to :func:`models`; ``eta_scale`` and ``speed_scale`` to
    :func:`random_state`.
    """
    d = draw(models(**model_options))
    model = fd.Model.from_dict(d)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="state seed"))
    q, u, udot = random_state(model, rng, eta_scale=eta_scale, speed_scale=speed_scale)
    return Sample(d, model, q, u, udot, random_f_ext(model, rng))
