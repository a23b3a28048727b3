"""The packed model of the compiled engine: a structure of arrays, one field per quantity,
padded to the largest body (``M`` modes, ``N`` nodes), built once per (model, fidelity) from
the reference body models, and stored in two flat buffers so that a compiled call receives
two arrays, not two dozen.

:data:`FIELDS` is the documented field table: :func:`pack` lays its entries out one after
the other in the float buffer ``fb`` and writes their offsets into the header of the integer
buffer ``ib``; the compiled code takes views of them by name
(:func:`flexdyn.engine.layout.unpack`).  ``ib`` holds ``[n, M, N, nu, nq, offsets of FIELDS and
the end, per-body table]`` where the per-body table has the columns :data:`INT_FIELDS`:

=============  ===============================================================
``parent``     parent index, −1 for a root
``m``          number of modes ``n_m``
``nj``         joint speeds ``nu_j``;  ``nqj``: joint coordinates
``qs, us``     start of the body's entries in ``q`` and ``u``
``jcode``      joint kernel code (:attr:`flexdyn.joints.Joint.code`)
``kind``       body kernel: :data:`RIGID`, :data:`FULL` or :data:`RUTHLESS`
``cn``         own attach node (−1: the body frame); ``pn``: parent's attach node
``nn``         number of nodes
``at``         1 when ``A(i)`` is the constant ``[0; I]`` (the parent's frame is the
               attach frame): the sweeps then skip the product with ``A``
``gs``         geometric elastic force: :data:`NO_STIFFENING`, :data:`CONSISTENT` or
               :data:`EXACT` (Damaren & Sharf Eq 20; :mod:`flexdyn.stiffening`)
``tk``         the model's tip kinematics, the code of its option
               (:data:`flexdyn.tip_kinematics.TIP_KINEMATICS`), the same for every body
``jf``         1 when the joint has forces (:mod:`flexdyn.joint_forces`), in ``jforce``
``mi``         1 when the body's flexible part has a consistent mass, its inertia
               invariants (:class:`flexdyn.body.InertiaInvariants`) in ``inv0/1/2``
=============  ===============================================================

The flexible/hinge split (Eqs 62–64) takes a second pair of buffers, :func:`pack_split`
(:data:`SPLIT_FIELDS`: the Eq B4 constants of the ruthless bodies, the children of every
body), packed only when the split is first used (:mod:`flexdyn.engine.split`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..body import BodyModel, RigidBodyModel
from ..chain import Model
from ..joint_forces import N_FORCE_PARAMS
from ..joints import JOINT_PARAMS
from ..ruthless import RuthlessBodyModel
from ..stiffening import ConsistentBodyModel, ExactBodyModel

__all__ = ["FIELDS", "FULL", "HEADER", "HEAD_OFFSETS", "INT_FIELDS", "RIGID", "RUTHLESS",
           "SPLIT_FIELDS", "SPLIT_INT_FIELDS", "Packed", "PackedModel", "pack", "pack_split"]


#: body kernel codes
RIGID, FULL, RUTHLESS = 0, 1, 2

#: ``name: (shape, meaning)`` of every float field (M modes, N nodes per body, padded; a
#: modal-size block of body ``i`` occupies ``[:m_i + 6, :m_i + 6]`` in its natural layout,
#: modal entries first)
FIELDS: dict[str, tuple[str, str]] = {
    "jparam": (f"(n, {JOINT_PARAMS})", "joint parameters (Joint.engine_params): axis (3) or "
               "axes (6), pitch (index 6); a product joint's columns, speed basis, coordinate "
               "indices and factor starts"),
    "place_R": ("(n, 3, 3)", "rotation of J_p in the parent's attach frame"),
    "place_p": ("(n, 3)", "origin of J_p in the parent's attach frame"),
    "cplace_R": ("(n, 3, 3)", "rotation of the body's attach frame in J_c"),
    "cplace_p": ("(n, 3)", "origin of the body's attach frame in J_c"),
    "l0": ("(n, N, 3)", "undeformed node positions in F"),
    "node_m": ("(n, N)", "node masses"),
    "node_I": ("(n, N, 3, 3)", "node rotary inertias (node frame)"),
    "Pi_r": ("(n, N, 3, M)", "rotational mode shapes"),
    "Pi_t": ("(n, N, 3, M)", "translational mode shapes"),
    "M_rigid": ("(n, 6, 6)", "spatial inertia of the rigid part about F"),
    "M_m0": ("(n, M+6, M+6)", "undeformed modal mass matrix (Eq 23 at η = 0)"),
    "K": ("(n, M, M)", "modal stiffness"),
    "C": ("(n, M, M)", "modal damping"),
    "T_Jc_R": ("(n, 3, 3)", "undeformed pose of F in J_c: rotation"),
    "T_Jc_p": ("(n, 3)", "undeformed pose of F in J_c: origin"),
    "X_joint0": ("(n, 6, 6)", "undeformed twist map J_c → F"),
    "Q0": ("(n, 6, M)", "undeformed −Π_F^d"),
    "A0": ("(n, M+6, 6)", "undeformed operator A of the parent's attach node (roots: 0)"),
    "T_t_R": ("(n, 3, 3)", "undeformed pose of the parent's attach node: rotation"),
    "T_t_p": ("(n, 3)", "undeformed pose of the parent's attach node: origin"),
    "B_quad": ("(n, M, 6, 6)", "ruthless centrifugal quadratic forms (Eq B1)"),
    "gravity": ("(3,)", "gravity, inertial frame"),
    "K1": ("(n, G, G, G)", "geometric stiffness, cubic (Eq 20; G = M when a body has it)"),
    "K2": ("(n, G, G, G, G)", "geometric stiffness, quartic"),
    "gs_rows": ("(n, G)", "1 for the modes the geometric force acts on, else 0"),
    "inv0": ("(n, I+6, I+6)", "inertia invariant I0 of a consistent mass (flexdyn.body."
             "InertiaInvariants; I = M when a body has them)"),
    "inv1": ("(n, I, 3, I+6)", "inertia invariant I1"),
    "inv2": ("(n, I, I, 3, 3)", "inertia invariant I2"),
    "jforce": (f"(n, 6, {N_FORCE_PARAMS})", "joint forces: a parameter row per joint speed "
               "(flexdyn.joint_forces.FORCE_KEYS)"),
}
#: the columns of the per-body integer table (module docstring)
INT_FIELDS = ("parent", "m", "nj", "nqj", "qs", "us", "jcode", "kind", "cn", "pn", "nn", "at",
              "gs", "tk", "jf", "mi")
#: entries of the header of ``ib`` before the field offsets
HEADER = ("n", "M", "N", "nu", "nq", "G", "I")
#: the geometric elastic force of a body (column ``gs``): none, the consistent model's
#: (cubic, on the rows of ``gs_rows``), the exact model's (cubic and quartic)
NO_STIFFENING, CONSISTENT, EXACT = 0, 1, 2


class PackedModel(NamedTuple):
    """Views of the packed arrays by name (see :data:`FIELDS`), made inside compiled code;
    ``ints`` holds :data:`INT_FIELDS` as columns."""

    ints: np.ndarray
    jparam: np.ndarray
    place_R: np.ndarray
    place_p: np.ndarray
    cplace_R: np.ndarray
    cplace_p: np.ndarray
    l0: np.ndarray
    node_m: np.ndarray
    node_I: np.ndarray
    Pi_r: np.ndarray
    Pi_t: np.ndarray
    M_rigid: np.ndarray
    M_m0: np.ndarray
    K: np.ndarray
    C: np.ndarray
    T_Jc_R: np.ndarray
    T_Jc_p: np.ndarray
    X_joint0: np.ndarray
    Q0: np.ndarray
    A0: np.ndarray
    T_t_R: np.ndarray
    T_t_p: np.ndarray
    B_quad: np.ndarray
    gravity: np.ndarray
    K1: np.ndarray
    K2: np.ndarray
    gs_rows: np.ndarray
    inv0: np.ndarray
    inv1: np.ndarray
    inv2: np.ndarray
    jforce: np.ndarray
    ib: np.ndarray  # the flat buffers themselves, for the stages called by address
    fb: np.ndarray  # (flexdyn.engine.stages)


#: the body kernel of each body-model class
KERNELS: dict[type, int] = {RigidBodyModel: RIGID, BodyModel: FULL, RuthlessBodyModel: RUTHLESS,
                            ConsistentBodyModel: FULL, ExactBodyModel: FULL}
#: the geometric elastic force of each stiffened body-model class
STIFFENING: dict[type, int] = {ConsistentBodyModel: CONSISTENT, ExactBodyModel: EXACT}


def _kind(bm: BodyModel) -> int:
    try:
        return KERNELS[type(bm)]
    except KeyError:
        raise TypeError(f"the engine has no kernel for the body model {type(bm).__name__}"
                        ) from None


class Packed(NamedTuple):
    """The flat buffers of one (model, fidelity): ``ib`` (int64) and ``fb`` (float64)."""

    ib: np.ndarray
    fb: np.ndarray


#: offsets in the header of ``ib``: the start of every field of :data:`FIELDS` and the end
HEAD_OFFSETS = len(FIELDS) + 1


def pack(model: Model, models: tuple[BodyModel, ...]) -> Packed:
    """Fill :data:`FIELDS` from ``model`` and its body models (one per body) and lay them out
    in the flat buffers."""
    n = model.n_bodies
    M = int(max(model.n_modes.max(initial=0), 0))
    N = max((b.n_nodes for b in model.bodies), default=0)
    stiffened = [type(bm) in STIFFENING and bm.K1 is not None for bm in models]
    G = M if any(stiffened) else 0
    consistent = [b.inertia_invariants is not None and b.n_modes > 0 for b in model.bodies]
    I = M if any(consistent) else 0  # noqa: E741 (the field table's letter)
    ints = np.zeros((n, len(INT_FIELDS)), dtype=np.int64)
    f = {name: np.zeros(_shape(spec, {"n": n, "M": M, "N": N, "G": G, "I": I}))
         for name, (spec, _) in FIELDS.items()}
    f["gravity"][:] = model.gravity
    for i, (body, joint, bm) in enumerate(zip(model.bodies, model.joints, models,
                                              strict=True)):
        m, nn, p = body.n_modes, body.n_nodes, int(model.parent[i])
        cn, pn = model.child_node[i], model.parent_node[i]
        f["jparam"][i] = joint.engine_params()
        f["place_R"][i], f["place_p"][i] = model.placement[i].R, model.placement[i].p
        f["cplace_R"][i] = model.child_placement[i].R
        f["cplace_p"][i] = model.child_placement[i].p
        f["l0"][i, :nn] = body.nodes
        f["node_m"][i, :nn] = body.node_masses
        f["node_I"][i, :nn] = body.node_inertias
        f["Pi_r"][i, :nn, :, :m] = body.Pi_r
        f["Pi_t"][i, :nn, :, :m] = body.Pi_t
        f["M_rigid"][i] = body.M_rigid
        f["M_m0"][i, :m + 6, :m + 6] = body.M_m0
        f["K"][i, :m, :m], f["C"][i, :m, :m] = body.K, body.C
        side = BodyModel.joint_side(bm, body.frames0)  # at η = 0 for every kind
        f["T_Jc_R"][i], f["T_Jc_p"][i] = side.T_Jc_i.R, side.T_Jc_i.p
        f["X_joint0"][i] = side.X_i_Jc
        f["Q0"][i, :, :m] = side.Q
        trivial_A = 0
        if p >= 0:
            node = BodyModel.attach_node(models[p], model.bodies[p].frames0, pn)
            f["A0"][i, :node.A.shape[0]] = node.A
            f["T_t_R"][i], f["T_t_p"][i] = node.T.R, node.T.p
            mp = model.bodies[p].n_modes
            identity = np.vstack([np.zeros((mp, 6)), np.eye(6)])
            trivial_A = int((pn is None or _kind(models[p]) != FULL)
                            and np.array_equal(node.A, identity))
        if isinstance(bm, RuthlessBodyModel):
            f["B_quad"][i, :m] = bm.B_quad
        if stiffened[i]:
            f["K1"][i, :m, :m, :m], f["K2"][i, :m, :m, :m, :m] = bm.K1, bm.K2
            f["gs_rows"][i, :m] = bm.rows
        if consistent[i]:
            inv = body.inertia_invariants
            f["inv0"][i, :m + 6, :m + 6] = inv.I0
            f["inv1"][i, :m, :, :m + 6], f["inv2"][i, :m, :m] = inv.I1, inv.I2
        forces = model.joint_forces[i]
        if forces is not None:
            f["jforce"][i, :joint.nu] = forces
        ints[i] = (p, m, joint.nu, joint.nq, model.q_start[i], model.u_start[i], joint.code,
                   _kind(bm), -1 if cn is None else cn, -1 if pn is None else pn, nn,
                   trivial_A, STIFFENING[type(bm)] if stiffened[i] else NO_STIFFENING,
                   body.rotation.code, forces is not None, consistent[i])
    sizes = [v.size for v in f.values()]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # len(FIELDS) + 1
    ib = np.concatenate([np.array([n, M, N, model.nu, model.nq, G, I], dtype=np.int64), offsets,
                         ints.ravel()])
    fb = np.concatenate([v.ravel() for v in f.values()])
    return Packed(ib=ib, fb=fb)


def _shape(spec: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """The shape of a field from its table entry, e.g. ``"(n, M+6, 6)"``, given the sizes of
    its letters (``M+6`` follows from ``M``)."""
    sizes = sizes | {f"{k}+6": sizes[k] + 6 for k in ("M", "I") if k in sizes}
    return tuple(sizes[d] if d in sizes else int(d)
                 for d in spec.strip("()").replace(" ", "").split(",") if d)


# ----------------------------------------------------------------------------------------------
# the flexible/hinge split (Eqs 62–64, B3): a second pair of buffers, packed on first use
# ----------------------------------------------------------------------------------------------
#: ``name: (shape, meaning)`` of the float fields of the split (``W``: the sizes of the ``Ω``
#: of all bodies together); the Eq B4 constants of the ruthless bodies, zero elsewhere.  The
#: blocks of ``ζ`` and ``Υ`` that belong to child ``c`` of body ``p`` sit in row ``c``.
SPLIT_FIELDS: dict[str, tuple[str, str]] = {
    "M_rf_Hf": ("(n, 6, M)", "[M⁰_rf, M⁰_rr] ℋ_f* of the body"),
    "D_f0": ("(n, M, M)", "Λ⁻¹ = ℋ_f M_m⁰ ℋ_f* (Eq B4)"),
    "Lambda": ("(n, M, M)", "Λ (Eq B4)"),
    "zeta": ("(n, M, 6)", "ζ(c) = ℋ_f(p) A(c): the parent's ζ block of child c (Eq B4)"),
    "Upsilon": ("(n, M, 6)", "Υ(c) = Λ(p) ζ(c) (Eq B4)"),
    "Omega": ("(W,)", "Ω = ζ* Υ (6 n_c × 6 n_c) of each body, from its offset om (Eq B4)"),
}
#: columns of the split's per-body table: first entry ``c0`` and number ``nc`` of the body's
#: children in the child list, ``b3`` = 1 when ``D_f⁻¹`` is formed by the push-through form
#: of Eq B3, ``om``: offset of the body's ``Ω`` in the field ``Omega``
SPLIT_INT_FIELDS = ("c0", "nc", "b3", "om")


def pack_split(model: Model, models: tuple[BodyModel, ...],
               indirect_min_modes: int | None = None) -> Packed:
    """The split's buffers ``(ib, fb)``: ``ib`` holds ``[C, offsets of SPLIT_FIELDS and the
    end, per-body table (SPLIT_INT_FIELDS), child list]`` (``C`` the largest number of
    children of a body that uses Eq B3), ``fb`` the fields of :data:`SPLIT_FIELDS`.

    ``indirect_min_modes``: a ruthless body with children and at least this many modes forms
    ``D_f⁻¹`` by Eq B3 (default: its body model's rule,
    :data:`flexdyn.ruthless.INDIRECT_MIN_MODES`)."""
    n = model.n_bodies
    M = int(max(model.n_modes.max(initial=0), 0))
    table = np.zeros((n, len(SPLIT_INT_FIELDS)), dtype=np.int64)
    omegas, child_list, C, W = [], [], 0, 0
    for i, (kids, bm) in enumerate(zip(model.children, models, strict=True)):
        ruthless = isinstance(bm, RuthlessBodyModel)
        b3 = int(ruthless and len(kids) > 0 and model.bodies[i].n_modes >= (
            bm.indirect_min_modes if indirect_min_modes is None else indirect_min_modes))
        C = max(C, len(kids) if b3 else 0)
        table[i] = (len(child_list), len(kids), b3, W)
        child_list.extend(kids)
        if ruthless:
            omegas.append(bm.Omega.ravel())
            W += bm.Omega.size
    sizes = {"n": n, "M": M, "W": W}
    f = {name: np.zeros(_shape(spec, sizes)) for name, (spec, _) in SPLIT_FIELDS.items()}
    f["Omega"][:] = np.concatenate(omegas) if omegas else 0.0
    for i, (kids, bm) in enumerate(zip(model.children, models, strict=True)):
        if isinstance(bm, RuthlessBodyModel):
            m = model.bodies[i].n_modes
            f["M_rf_Hf"][i, :, :m] = bm.M_rf_Hf
            f["D_f0"][i, :m, :m], f["Lambda"][i, :m, :m] = bm.D_f0, bm.Lambda
            for k, c in enumerate(kids):
                f["zeta"][c, :m] = bm.zeta[:, 6 * k:6 * k + 6]
                f["Upsilon"][c, :m] = bm.Upsilon[:, 6 * k:6 * k + 6]
    offsets = np.concatenate([[0], np.cumsum([v.size for v in f.values()])]).astype(np.int64)
    ib = np.concatenate([np.array([C], dtype=np.int64), offsets, table.ravel(),
                         np.array(child_list, dtype=np.int64)])
    return Packed(ib=ib, fb=np.concatenate([v.ravel() for v in f.values()]))
