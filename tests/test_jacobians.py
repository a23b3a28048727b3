"""Frame and node Jacobians (:mod:`flexdyn.jacobians`).

Checked on random trees of rigid and flexible bodies with every kind of joint (quaternion
joints, joint maps) and on a planar two-link arm in closed form:

* ``J u`` is the rate of the element's inertial pose along ``q̇ = Γ(q) u``: the linear rows
  that of its origin, the angular rows ``vee(Rᵀ Ṙ)`` (local) and ``vee(Ṙ Rᵀ)`` (world), with
  ``R, p`` from the position terms and ``Ṙ, ṗ`` by complex step, column by column; the node's
  position is ``pose · (l0 + Π_t η)``;
* ``J̇ u`` is a central difference of ``J(q(t)) u`` along ``q̇ = Γ u`` (both frames, every
  fidelity); in world axes its linear rows are ``p̈``, a second difference of the position
  along the trajectory with ``u̇ = 0``; in local axes it is the spatial acceleration of the
  recursion of Eq 25 (``α = Φ* α(p) + a``) and, at a node, ``B_j α + Ė_j η̇ + V_s × E_j η̇``;
* ``Σ J_eᵀ M_e J_e`` over the rigid parts and nodes is the mass matrix (composite bodies);
* the ruthless Jacobian is the full one at zero deformation;
* a batch equals the loop; bad arguments raise ``ValueError`` naming them.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.jacobians import frame_jacobian, frame_pose, jacobian_rate_product
from flexdyn.terms import body_models, position_terms, velocity_terms
from helpers import assert_close
from strategies import random_model_dict, random_state

H = 1e-30  # complex step of the references
DEFORMED = ("full", "exact", "consistent")
KINEMATIC = ("full", "exact")  # "consistent" has the kinematics of "exact"

#: (parents, joint types, node counts, mode counts) of the random models
STRUCTURES = (
    ((-1, 0, 1), ("free", "revolute", "spherical"), (3, 2, 0), (2, 3, 0)),
    ((-1, 0, 0, 2), ("spherical", "prismatic", "universal", "screw"), (2, 0, 3, 1),
     (1, 0, 3, 1)),
    ((-1, 0, 1), ("euler", "compound", "cylindrical"), (1, 3, 2), (1, 2, 2)),
    ((-1, 0), ("free-euler", "map"), (2, 3), (2, 3)),
    ((-1, 0, 1, 0), ("planar", "free", "fixed", "revolute"), (3, 1, 2, 2), (3, 1, 1, 0)),
)
CASES = [(k, seed) for k in range(len(STRUCTURES)) for seed in (1, 2)]


def _sample(case: tuple[int, int]) -> tuple[fd.Model, np.ndarray, np.ndarray]:
    k, seed = case
    rng = np.random.default_rng(1000 * k + seed)
    parents, joints, nodes, modes = STRUCTURES[k]
    model = fd.Model.from_dict(random_model_dict(rng, parents, joints, nodes, modes,
                                                 name=f"s{k}"))
    q, u, _ = random_state(model, rng)
    return model, q, u


def _targets(model: fd.Model, every_node: bool = True) -> list[tuple[int, int | None]]:
    """Every body frame and every node of the model (or only the last node of each body)."""
    return [(i, j) for i, b in enumerate(model.bodies)
            for j in (None, *range(b.n_nodes)[slice(None) if every_node else slice(-1, None)])]


def _vee(S: np.ndarray) -> np.ndarray:
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


def _poses(model: fd.Model, q: np.ndarray, fidelity: str) -> dict:
    """``(R, p)`` in the inertial frame of every body frame and node frame, from the poses of
    the position terms and the node frames (``l0 + Π_t η`` for the deformed fidelities)."""
    pos = position_terms(model, q, body_models(model, fidelity), fidelity)
    out = {}
    for i, body in enumerate(model.bodies):
        R, p = pos.pose[i].R, pos.pose[i].p
        out[i, None] = (R, p)
        for j in range(body.n_nodes):
            out[i, j] = (R @ pos.frames[i].R[j], R @ pos.frames[i].p[j] + p)
    return out


def _twists(model: fd.Model, q: np.ndarray, u: np.ndarray, fidelity: str) -> dict:
    """``{(i, j): {"local": V, "world": V}}``: the twists of the frames of :func:`_poses`
    from the complex-step rates ``Ṙ, ṗ`` along ``q̇ = Γ(q) u``."""
    q_step = model.check_state(q + 1j * H * model.qdot(q, u))[0]
    out = {}
    for key, (R, p) in _poses(model, q_step, fidelity).items():
        R0, R_dot, p_dot = R.real, R.imag / H, p.imag / H
        W, L = R_dot @ R0.T, R0.T @ R_dot
        assert np.max(np.abs(W + W.T)) < 1e-10 * max(1.0, np.max(np.abs(W)))
        out[key] = {"world": np.concatenate([_vee(W), p_dot]),
                    "local": np.concatenate([_vee(L), R0.T @ p_dot])}
    return out


def _along(model: fd.Model, q: np.ndarray, u: np.ndarray, t: float) -> np.ndarray:
    """``q(t) ≈ q + t q̇ + t²/2 q̈`` on the trajectory with ``u̇ = 0`` (quaternions
    normalised); ``q̈ = d/dt (Γ(q) u)`` by complex step."""
    qd = model.qdot(q, u)
    qdd = model.qdot(q + 1j * H * qd, u).imag / H
    return model.normalize_configuration(q + t * qd + 0.5 * t * t * qdd)


# ---------------------------------------------------------------------------------------------
# a closed form: the planar two-link arm
# ---------------------------------------------------------------------------------------------
L1, L2 = 0.9, 0.6


def _planar_arm() -> fd.Model:
    rigid = {"mass": 1.0, "com": [0.3, 0.0, 0.0], "inertia": np.eye(3) * 0.05}
    z = {"type": "revolute", "axis": [0, 0, 1]}
    return (fd.ModelBuilder("planar arm", gravity=(0.0, 0.0, 0.0))
            .add_body("upper", None, joint=z, rigid=rigid)
            .add_body("fore", "upper", joint=z | {"placement": {"translation": [L1, 0, 0]}},
                      rigid=rigid, flex={"nodes": [[0.2, 0, 0], [L2, 0, 0]],
                                         "node_masses": [0.1, 0.1]})
            .build())


def test_planar_two_link_arm_in_closed_form():
    model = _planar_arm()
    t1, t2, w1, w2 = 0.4, -1.1, 0.7, -1.9
    q, u = np.array([t1, t2]), np.array([w1, w2])
    s1, c1, s12, c12 = np.sin(t1), np.cos(t1), np.sin(t1 + t2), np.cos(t1 + t2)
    J = np.array([[0, 0], [0, 0], [1, 1],
                  [-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12], [0, 0]])
    acc = np.array([0, 0, 0, -L1 * c1 * w1**2 - L2 * c12 * (w1 + w2)**2,
                    -L1 * s1 * w1**2 - L2 * s12 * (w1 + w2)**2, 0])
    for fidelity in fd.FIDELITIES:
        R, p = frame_pose(model, q, "fore", -1, fidelity=fidelity)
        assert_close(p, np.array([L1 * c1 + L2 * c12, L1 * s1 + L2 * s12, 0]), "tip")
        assert_close(frame_jacobian(model, q, "fore", -1, frame="world", fidelity=fidelity),
                     J, "J world")
        assert_close(frame_jacobian(model, q, 1, 1, fidelity=fidelity),
                     np.vstack([R.T @ J[:3], R.T @ J[3:]]), "J local")
        assert_close(jacobian_rate_product(model, q, u, "fore", 1, frame="world",
                                           fidelity=fidelity), acc, "J̇u world", scale=1.0)
    # the body frame of the fore link sits at the elbow
    assert_close(frame_jacobian(model, q, "fore", frame="world")[3:5],
                 np.array([[-L1 * s1, 0], [L1 * c1, 0]]), "elbow")


# ---------------------------------------------------------------------------------------------
# random models
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_node_position_is_the_deformed_node(case):
    model, q, _ = _sample(case)
    pos = position_terms(model, q, body_models(model, "full"), "full")
    for i, j in _targets(model):
        if j is None:
            continue
        body = model.bodies[i]
        local = body.nodes[j] + body.Pi_t[j] @ model.eta(q, i)
        for fidelity in DEFORMED:
            R, p = frame_pose(model, q, model.names[i], j, fidelity=fidelity)
            assert_close(p, pos.pose[i].apply(local), f"node {i},{j}")
            assert_close(R.T @ R, np.eye(3), "orthonormal")


@pytest.mark.parametrize("fidelity", KINEMATIC)
@pytest.mark.parametrize("case", CASES)
def test_jacobian_is_the_rate_of_the_pose(case, fidelity):
    model, q, _ = _sample(case)
    targets = _targets(model)
    J = {(key, f): frame_jacobian(model, q, key[0], key[1], frame=f, fidelity=fidelity)
         for key in targets for f in ("local", "world")}
    for k in range(model.nu):  # column k: the twists per unit speed k
        e_k = np.eye(model.nu)[k]
        reference = _twists(model, q, e_k, fidelity)
        for key in targets:
            for f in ("local", "world"):
                assert_close(J[key, f][:, k], reference[key][f], f"{key} {f} column {k}",
                             scale=1.0)


@pytest.mark.parametrize("fidelity", [*KINEMATIC, "ruthless"])
@pytest.mark.parametrize("case", CASES)
def test_rate_product_is_the_rate_of_the_twist(case, fidelity):
    """``J̇ u`` against a central difference of ``J(q(t)) u`` (``u̇ = 0``), step 1e-6."""
    model, q, u = _sample(case)
    dt = 1e-6
    q_pm = np.stack([_along(model, q, u, dt), _along(model, q, u, -dt)])
    for i, j in _targets(model, every_node=False):
        for f in ("local", "world"):
            Jp, Jm = frame_jacobian(model, q_pm, i, j, frame=f, fidelity=fidelity)
            expected = (Jp @ u - Jm @ u) / (2 * dt)
            got = jacobian_rate_product(model, q, u, i, j, frame=f, fidelity=fidelity)
            assert_close(got, expected, f"({i}, {j}) {f}", tol=1e-7, scale=1.0)


@pytest.mark.parametrize("fidelity", KINEMATIC)
@pytest.mark.parametrize("case", CASES)
def test_world_rate_product_is_the_acceleration_of_the_origin(case, fidelity):
    """Linear rows of ``J̇ u`` (world) = ``p̈`` for ``u̇ = 0``: second differences of the
    position along the trajectory, Richardson-extrapolated (steps 2e-3, 1e-3)."""
    model, q, u = _sample(case)

    def second_difference(dt):
        qs = [_along(model, q, u, t) for t in (dt, 0.0, -dt)]
        p = [_poses(model, qq, fidelity) for qq in qs]
        return {key: (p[0][key][1] - 2 * p[1][key][1] + p[2][key][1]) / dt**2 for key in p[0]}

    coarse, fine = second_difference(2e-3), second_difference(1e-3)
    for i, j in _targets(model):
        p_ddot = (4 * fine[i, j] - coarse[i, j]) / 3
        got = jacobian_rate_product(model, q, u, i, j, frame="world", fidelity=fidelity)
        assert_close(got[3:], p_ddot, f"({i}, {j})", tol=1e-6, scale=1.0)


@pytest.mark.parametrize("fidelity", DEFORMED)
@pytest.mark.parametrize("case", CASES)
def test_local_rate_product_is_the_spatial_acceleration(case, fidelity):
    """Local ``J̇ u`` = the spatial acceleration for ``u̇ = 0`` of the recursion
    ``α_m(i) = Φ*(p, i) α_m(p) + a_m(i)`` (Eq 25's ``a_m``); at node ``j`` of body ``k``
    ``B_j α_m(k) + Ė_j η̇ + V_s(j) × E_j η̇`` (the node moves relative to ``F_k``)."""
    model, q, u = _sample(case)
    models = body_models(model, fidelity)
    pos = position_terms(model, q, models, fidelity)
    vel = velocity_terms(model, pos, u)
    alpha = []
    for i in range(model.n_bodies):
        m, p = int(model.n_modes[i]), int(model.parent[i])
        a = np.array(vel.a_m[i], dtype=float)
        if p >= 0:
            a[m:] += pos.phi[i].T @ (pos.A[i].T @ alpha[p])
        alpha.append(a)
    for i, j in _targets(model):
        m = int(model.n_modes[i])
        got = jacobian_rate_product(model, q, u, i, j, fidelity=fidelity)
        if j is None:
            assert_close(got, alpha[i][m:], f"body {i}", scale=1.0)
            continue
        frames = pos.frames[i]
        B = model.bodies[i].node_maps(frames)[j]
        eta_dot = model.eta_dot(u, i)
        V_s, w_rel = B @ vel.V_m[i], frames.E[j] @ eta_dot
        cross = np.concatenate([np.cross(V_s[:3], w_rel[:3]),
                                np.cross(V_s[:3], w_rel[3:]) + np.cross(V_s[3:], w_rel[:3])])
        expected = B @ alpha[i] + models[i].node_twist_rate(frames, j, eta_dot) + cross
        assert_close(got, expected, f"node ({i}, {j})", scale=1.0)


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
@pytest.mark.parametrize("case", CASES[::2])
def test_element_jacobians_give_the_mass_matrix(case, fidelity):
    model, q, _ = _sample(case)
    M = np.zeros((model.nu, model.nu))
    for i, j in _targets(model):
        body = model.bodies[i]
        J = frame_jacobian(model, q, i, j, fidelity=fidelity)
        M += J.T @ (body.M_rigid if j is None else body.M_s[j]) @ J
    M_ref = fd.mass_matrix(model, q, fidelity=fidelity, backend="reference")
    assert_close(M, M_ref, "M")


@pytest.mark.parametrize("case", CASES)
def test_ruthless_jacobian_is_the_full_one_at_zero_deformation(case):
    model, q, u = _sample(case)
    q0 = q.copy()
    for i in range(model.n_bodies):
        s = model.q_slice(i).start + model.joints[i].nq
        q0[s:s + int(model.n_modes[i])] = 0.0
    for i, j in _targets(model, every_node=False):
        for f in ("local", "world"):
            J = frame_jacobian(model, q, i, j, frame=f, fidelity="ruthless")
            assert_close(J, frame_jacobian(model, q0, i, j, frame=f, fidelity="full"),
                         f"({i}, {j}) {f}", scale=1.0)
            assert np.array_equal(J, frame_jacobian(model, q0, i, j, frame=f,
                                                    fidelity="ruthless"))


# ---------------------------------------------------------------------------------------------
# batches, names and errors
# ---------------------------------------------------------------------------------------------
def test_batch_equals_the_loop_and_names_equal_indices():
    model, q, u = _sample(CASES[0])
    rng = np.random.default_rng(5)
    states = [random_state(model, rng) for _ in range(3)]
    Q = np.stack([s[0] for s in states])
    U = np.stack([s[1] for s in states])
    J = frame_jacobian(model, Q, "b1", -1, frame="world")
    a = jacobian_rate_product(model, Q, U, "b1", -1, frame="world")
    R, p = frame_pose(model, Q, "b1", -1)
    assert J.shape == (3, 6, model.nu) and a.shape == (3, 6)
    assert R.shape == (3, 3, 3) and p.shape == (3, 3)
    n = model.bodies[1].n_nodes
    for b in range(3):
        assert np.array_equal(J[b], frame_jacobian(model, Q[b], 1, n - 1, frame="world"))
        assert np.array_equal(a[b], jacobian_rate_product(model, Q[b], U[b], 1, n - 1,
                                                          frame="world"))
        Rb, pb = frame_pose(model, Q[b], 1, n - 1)
        assert np.array_equal(R[b], Rb) and np.array_equal(p[b], pb)
    # lists are arrays; the default frame is local, the default fidelity the package's
    assert np.array_equal(frame_jacobian(model, list(q), "b0"),
                          frame_jacobian(model, q, 0, None, frame="local",
                                         fidelity=fd.DEFAULT_FIDELITY))


def test_errors_name_the_bad_argument():
    model, q, u = _sample(CASES[0])  # b0: 3 nodes, b2: none
    with pytest.raises(ValueError, match=r"no body named 'elbow'; bodies are \['b0', 'b1', 'b2'\]"):
        frame_jacobian(model, q, "elbow")
    with pytest.raises(ValueError, match=r"body index 3 out of range for 3 bodies"):
        jacobian_rate_product(model, q, u, 3)
    with pytest.raises(ValueError, match=r"a body is a name or an index, got True"):
        frame_jacobian(model, q, True)
    with pytest.raises(ValueError, match=r"node 3 out of range for body 'b0' with 3 nodes: "
                                         r"valid nodes are -3 to 2"):
        frame_jacobian(model, q, "b0", 3)
    with pytest.raises(ValueError, match=r"node -4 out of range for body 'b0'"):
        jacobian_rate_product(model, q, u, 0, -4)
    with pytest.raises(ValueError, match=r"body 'b2' has no nodes"):
        frame_pose(model, q, "b2", 0)
    with pytest.raises(ValueError, match=r"node must be an int or None.*1.5"):
        frame_jacobian(model, q, "b0", 1.5)
    with pytest.raises(ValueError, match=r"unknown frame 'inertial'; expected one of "
                                         r"\('local', 'world'\)"):
        frame_jacobian(model, q, "b0", frame="inertial")
    with pytest.raises(ValueError, match=r"unknown frame 'body'"):
        jacobian_rate_product(model, q, u, "b0", frame="body")
    with pytest.raises(ValueError, match=r"unknown fidelity 'rigid'"):
        frame_jacobian(model, q, "b0", fidelity="rigid")
    with pytest.raises(ValueError, match=rf"q has shape \(3,\), expected \({model.nq},\)"):
        frame_jacobian(model, q[:3], "b0")
    with pytest.raises(ValueError, match=rf"u has shape \(2,\), expected \({model.nu},\)"):
        jacobian_rate_product(model, q, u[:2], "b0")
    with pytest.raises(ValueError, match=r"u has shape .*needs a leading axis of 2"):
        jacobian_rate_product(model, np.stack([q, q]), u, "b0")
    with pytest.raises(ValueError, match=r"batch item 1: q: the quaternion of body 0"):
        frame_jacobian(model, np.stack([q, 2 * q]), "b1")
    with pytest.raises(TypeError, match=r"real q and u"):
        jacobian_rate_product(model, q + 0j, u, "b0")
