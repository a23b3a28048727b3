"""flexdyn against Pinocchio on random rigid trees (optional: needs the ``pin`` package).

The random model dicts of :mod:`test_rigid_limit` are rebuilt as ``pinocchio.Model``
(one Pinocchio joint per non-fixed flexdyn joint, its frame being ``J_c``; fixed joints
are merged into their parent) and ``crba``, ``rnea``, ``nle`` and ``aba`` are compared
with flexdyn, including free-floating bases.

Convention map (Pinocchio is linear-first):

* free flyer: Pinocchio ``q = [p, (x, y, z, w)]``, ``v = [v; ω]`` in the local frame;
  flexdyn ``q = [(w, x, y, z), p]``, ``u = [ω; v]`` in ``J_c``;
* spherical: Pinocchio quaternion ``(x, y, z, w)``, flexdyn ``(w, x, y, z)``; both use the
  angular velocity in the moving frame;
* cylindrical and universal joints are Pinocchio composite joints (revolute + prismatic
  about one axis; two revolutes), screw joints ``JointModelHelicalUnaligned``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import flexdyn as fd
from helpers import RTOL, rel_err
from oracles.rigid_reference import RigidModel
from test_rigid_limit import HYP, METHODS, SCALE, random_rigid_state, rigid_models

pin = pytest.importorskip("pinocchio")


def _se3(pose) -> pin.SE3:
    R, p = pose
    return pin.SE3(np.array(R, float), np.array(p, float))


def _compose(a, b):
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _pin_joint(jnt):
    t = jnt.type
    if t == "revolute":
        return pin.JointModelRevoluteUnaligned(jnt.axis)
    if t == "prismatic":
        return pin.JointModelPrismaticUnaligned(jnt.axis)
    if t == "screw":
        return pin.JointModelHelicalUnaligned(jnt.axis, jnt.pitch)
    if t == "cylindrical":
        jm = pin.JointModelComposite(pin.JointModelRevoluteUnaligned(jnt.axis))
        jm.addJoint(pin.JointModelPrismaticUnaligned(jnt.axis))
        return jm
    if t == "universal":
        jm = pin.JointModelComposite(pin.JointModelRevoluteUnaligned(jnt.axes[0]))
        jm.addJoint(pin.JointModelRevoluteUnaligned(jnt.axes[1]))
        return jm
    if t == "spherical":
        return pin.JointModelSpherical()
    if t == "free":
        return pin.JointModelFreeFlyer()
    raise ValueError(t)


def _pin_inertia(I6: np.ndarray) -> pin.Inertia:
    """Pinocchio inertia from an angular-first 6 × 6 spatial inertia about the frame origin."""
    m = I6[3, 3]
    mc = I6[:3, 3:]  # m ĉ
    c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / m
    C = pin.skew(c)
    return pin.Inertia(m, c, I6[:3, :3] - m * C @ C.T)


class PinModel:
    """A flexdyn rigid model dict as a Pinocchio model, with the state maps."""

    def __init__(self, d):
        ref = RigidModel(d)
        self.ref = ref
        model = pin.Model()
        model.gravity = pin.Motion(np.asarray(ref.gravity, float), np.zeros(3))
        jid = [0] * ref.n
        # pose of F_i in the frame of Pinocchio joint jid[i]
        F_in_joint: list = [None] * ref.n
        # Pinocchio's crba assumes every subtree has contiguous velocity indices: add the
        # joints in depth-first order (P below maps the layouts)
        order: list[int] = []
        stack = [i for i in reversed(range(ref.n)) if ref.parent[i] < 0]
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(c for c in reversed(range(ref.n)) if ref.parent[c] == i)
        for i in order:
            jnt = ref.joints[i]
            p = ref.parent[i]
            pj = 0 if p < 0 else jid[p]
            Jp = ref.X_tree[i] if p < 0 else _compose(F_in_joint[p], ref.X_tree[i])
            if jnt.type == "fixed":
                jid[i] = pj
                F_in_joint[i] = _compose(Jp, ref.X_child[i])
            else:
                jid[i] = model.addJoint(pj, _pin_joint(jnt), _se3(Jp), f"j{i}")
                F_in_joint[i] = ref.X_child[i]
            model.appendBodyToJoint(jid[i], _pin_inertia(ref.I[i]), _se3(F_in_joint[i]))
        self.model = model
        self.data = model.createData()
        self.jid = jid
        assert model.nv == ref.nu
        # velocity permutation: u_pin = P u_fd
        P = np.zeros((ref.nu, ref.nu))
        for i, jnt in enumerate(ref.joints):
            if jnt.type == "fixed":
                continue
            iv = model.joints[jid[i]].idx_v
            s = ref.u_idx[i].start
            k = jnt.nu
            if jnt.type == "free":
                P[iv:iv + 3, s + 3:s + 6] = np.eye(3)
                P[iv + 3:iv + 6, s:s + 3] = np.eye(3)
            else:
                P[iv:iv + k, s:s + k] = np.eye(k)
        self.P = P

    def q(self, q_fd: np.ndarray) -> np.ndarray:
        ref = self.ref
        q = np.zeros(self.model.nq)
        for i, jnt in enumerate(ref.joints):
            if jnt.type == "fixed":
                continue
            iq = self.model.joints[self.jid[i]].idx_q
            qi = q_fd[ref.q_idx[i]]
            if jnt.type == "spherical":
                q[iq:iq + 4] = [qi[1], qi[2], qi[3], qi[0]]
            elif jnt.type == "free":
                q[iq:iq + 7] = [qi[4], qi[5], qi[6], qi[1], qi[2], qi[3], qi[0]]
            else:
                q[iq:iq + jnt.nq] = qi
        return q


def pinocchio_errors(d, methods=("composite",)) -> dict[str, float]:
    d = dict(d)
    seed = d.pop("_seed")
    pm = PinModel(d)
    model = fd.Model.from_dict(d)
    q, u, udot, tau = random_rigid_state(model, seed)
    P = pm.P
    qp, vp, ap, tp = pm.q(q), P @ u, P @ udot, P @ tau
    M = pin.crba(pm.model, pm.data, qp).copy()
    M = np.triu(M) + np.triu(M, 1).T
    errs = {
        "crba": rel_err(P @ fd.mass_matrix(model, q) @ P.T, M, SCALE),
        "nle": rel_err(P @ fd.bias_forces(model, q, u), pin.nonLinearEffects(
            pm.model, pm.data, qp, vp).copy(), SCALE),
        "rnea": rel_err(P @ fd.inverse_dynamics(model, q, u, udot),
                        pin.rnea(pm.model, pm.data, qp, vp, ap).copy(), SCALE),
    }
    a_pin = pin.aba(pm.model, pm.data, qp, vp, tp).copy()
    for method in methods:
        errs[f"aba/{method}"] = rel_err(P @ fd.forward_dynamics(model, q, u, tau, method=method),
                                        a_pin, SCALE)
    return errs


def _check(d, methods=("composite",)):
    errs = pinocchio_errors(d, methods)
    bad = {k: v for k, v in errs.items() if not v < RTOL}
    assert not bad, f"errors {bad} for model {d!r}"


@settings(HYP, max_examples=20)
@given(rigid_models())
def test_random_trees_match_pinocchio(d):
    _check(d)


@settings(HYP, max_examples=10)
@given(rigid_models(nodes=True))
def test_random_trees_with_node_masses_match_pinocchio(d):
    _check(d)


@pytest.mark.parametrize("method", METHODS)
@settings(HYP, max_examples=8)
@given(d=rigid_models())
def test_forward_dynamics_methods_match_pinocchio_aba(method, d):
    _check(d, (method,))


@pytest.mark.parametrize("method", METHODS)
def test_free_floating_chain_matches_pinocchio(method):
    """A free-floating base carrying a spherical–revolute–screw chain, in gravity."""
    rng = np.random.default_rng(5)
    bodies = []
    for i, (t, extra) in enumerate([
        ("free", {}),
        ("spherical", {}),
        ("revolute", {"axis": [0.0, 0.6, 0.8]}),
        ("screw", {"axis": [1.0, 0.0, 0.0], "pitch": 0.05}),
        ("cylindrical", {"axis": [0.0, 0.0, 1.0]}),
    ]):
        bodies.append({
            "name": f"b{i}", "parent": None if i == 0 else f"b{i - 1}",
            "joint": {"type": t, **extra,
                      "placement": {"translation": rng.uniform(-0.4, 0.4, 3).tolist(),
                                    "rotation": pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3))
                                    .tolist()}},
            "rigid": {"mass": 1.0 + i, "com": rng.uniform(-0.3, 0.3, 3).tolist(),
                      "inertia": np.diag([0.02, 0.03, 0.04]).tolist()},
        })
    d = {"gravity": [0.0, 0.0, -9.81], "bodies": bodies, "_seed": 2}
    _check(d, (method,))
