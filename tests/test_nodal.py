"""Nodal-coordinate bodies and Rodriguez's Riccati / filter / smoother forward dynamics
(:mod:`flexdyn.nodal`, ``method="nodal"``).

Independent checks:

* the modal recursions of the same model (a nodal body is the modal body of its identity
  basis), reference and engine, on random trees of rigid and nodal bodies with every joint
  type, deformed states, gravity, external wrenches and damping;
* the brute-force model of :mod:`oracles.brute_force` (Kane's method, no flexdyn code) on the
  equivalent modal model written here;
* the same beam as a **modal** body with its full, untruncated eigenbasis (another set of
  coordinates for the same system);
* closed forms: the static deflection and slope of a cantilever under the weight of its
  lumped masses (exact for Hermite frame elements), and the cantilever's bending, axial and
  torsional frequencies (Euler–Bernoulli; within the lumped-mass discretization error).
"""

from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.beam import nodal_beam
from flexdyn.linalg import SingularInertiaError
from helpers import rel_err
from oracles.brute_force import BruteModel
from strategies import JOINT_TYPES, random_f_ext, random_inertia, random_model_dict, random_state

pytestmark = pytest.mark.usefixtures("quiet_numba")

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOL = 1e-10


# ---------------------------------------------------------------------------------------------
# random models of rigid and nodal bodies
# ---------------------------------------------------------------------------------------------
def random_nodal_flex(rng: np.random.Generator, n: int, damping: bool) -> dict:
    """A nodal flex block of ``n`` random nodes: positive masses, positive definite rotary
    inertias, a random symmetric positive definite nodal stiffness (6n × 6n)."""
    G = rng.normal(size=(6 * n, 6 * n))
    K = G @ G.T / n * rng.uniform(5.0, 40.0)
    flex = {"nodal": True, "attach_node": int(rng.integers(n)),
            "nodes": rng.uniform(-0.8, 0.8, size=(n, 3)).tolist(),
            "node_masses": rng.uniform(0.1, 1.0, size=n).tolist(),
            "node_inertias": [random_inertia(rng, 0.002, 0.02).tolist() for _ in range(n)],
            "nodal_stiffness": K.tolist()}
    if damping:
        D = rng.normal(size=(6 * n, 6 * n))
        flex["nodal_damping"] = (0.05 * D @ D.T / n).tolist()
    return flex


def random_nodal_dict(rng: np.random.Generator, parents: list, joints: list,
                      nodal: list) -> dict:
    """A random model dict whose bodies are rigid (with nodes to hang children from) or
    nodal (2–4 nodes), the nodal ones hanging from the joint at their attach node."""
    n_nodes = [int(rng.integers(2, 5)) if k else int(rng.integers(0, 3)) for k in nodal]
    d = random_model_dict(rng, parents, joints, n_nodes, [0] * len(parents))
    for body, k, nn in zip(d["bodies"], nodal, n_nodes, strict=True):
        if k:
            body["flex"] = random_nodal_flex(rng, nn, bool(rng.random() < 0.5))
            if body["joint"]["child_node"] is not None:
                body["joint"]["child_node"] = body["flex"]["attach_node"]
    return d


@st.composite
def nodal_models(draw: st.DrawFn, max_bodies: int = 4) -> dict:
    n = draw(st.integers(1, max_bodies), label="n_bodies")
    parents = [-1] + [draw(st.integers(-1 if i > 1 else 0, i - 1), label="parent")
                      for i in range(1, n)]
    joints = [draw(st.sampled_from([j for j in JOINT_TYPES if j != "fixed"]), label="joint")
              for _ in range(n)]
    nodal = [draw(st.booleans(), label="nodal?") for _ in range(n)]
    nodal[draw(st.integers(0, n - 1), label="one nodal")] = True
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    return random_nodal_dict(np.random.default_rng(seed), parents, joints, nodal)


def modal_equivalent(d: dict) -> dict:
    """The model dict with every nodal body written as a modal body: identity modes on the
    free nodes, the nodal stiffness and damping without the attach node's rows and columns."""
    out = json.loads(json.dumps(d))
    for body in out["bodies"]:
        flex = body.get("flex") or {}
        if not flex.pop("nodal", False):
            continue
        n, a = len(flex["nodes"]), flex.pop("attach_node")
        keep = [r for r in range(6 * n) if r // 6 != a]
        K = np.array(flex.pop("nodal_stiffness"))
        C = np.array(flex.pop("nodal_damping", np.zeros_like(K)))
        flex["modes"] = np.eye(6 * n)[:, keep].tolist()
        flex["stiffness"] = K[np.ix_(keep, keep)].tolist()
        flex["damping"] = C[np.ix_(keep, keep)].tolist()
    return out


def nodal_state(model: fd.Model, seed: int):
    rng = np.random.default_rng(seed)
    q, u, _ = random_state(model, rng, eta_scale=0.3)
    return q, u, rng.normal(size=model.nu), random_f_ext(model, rng)


# ---------------------------------------------------------------------------------------------
# the filter and smoother against the modal recursions and the brute-force model
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(d=nodal_models(), seed=st.integers(0, 2**32 - 1),
       fidelity=st.sampled_from(["full", "ruthless"]))
def test_filter_smoother_equals_modal_recursions(d, seed, fidelity):
    model = fd.Model.from_dict(d)
    q, u, tau, f_ext = nodal_state(model, seed)
    nodal = {backend: fd.forward_dynamics(model, q, u, tau, method="nodal", fidelity=fidelity,
                                          f_ext=f_ext, backend=backend)
             for backend in ("reference", "engine")}
    # the same equations in other summation orders: a random two-body tree with node
    # accelerations of 3e3 reached 1.9e-12 in CI
    assert rel_err(nodal["engine"], nodal["reference"]) < 1e-11
    for method in ("articulated", "composite"):
        ref = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity,
                                  f_ext=f_ext, backend="reference")
        assert rel_err(nodal["reference"], ref) < TOL, (method, rel_err(nodal["reference"], ref))


@pytest.mark.slow
@settings(SETTINGS, max_examples=12)
@given(d=nodal_models(max_bodies=3), seed=st.integers(0, 2**32 - 1))
def test_filter_smoother_against_brute_force(d, seed):
    model = fd.Model.from_dict(d)
    q, u, tau, f_ext = nodal_state(model, seed)
    bm = BruteModel(modal_equivalent(d))
    M, C = bm.mass_matrix(q), bm.bias_forces(q, u, f_ext)
    ref = np.linalg.solve(M, tau - C)
    got = fd.forward_dynamics(model, q, u, tau, method="nodal", f_ext=f_ext)
    assert rel_err(got, ref) < 1e-6, rel_err(got, ref)


def test_modal_engine_runs_nodal_bodies_as_modal_ones():
    d = random_nodal_dict(np.random.default_rng(4), [-1, 0, 1, 0],
                          ["revolute", "spherical", "universal", "free"],
                          [True, False, True, True])
    model = fd.Model.from_dict(d)
    q, u, tau, _ = nodal_state(model, 5)
    assert rel_err(fd.forward_dynamics(model, q, u, tau),
                   fd.forward_dynamics(model, q, u, tau, method="nodal")) < TOL


def test_the_engine_cache_does_not_keep_the_model_alive():
    model = fd.Model.from_dict(_one_body(_plain_beam()))
    zero = np.zeros(model.nu)
    fd.forward_dynamics(model, np.zeros(model.nq), zero, method="nodal")
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def test_gains_and_factors_are_reusable_for_many_right_hand_sides():
    """``nodal_factors`` depend on q only: ``M⁻¹`` from unit forces (no velocity, no gravity)
    through one set of factors is the inverse of the mass matrix."""
    from flexdyn.nodal import nodal_factors, nodal_forward_dynamics, nodal_terms

    d = random_nodal_dict(np.random.default_rng(8), [-1, 0], ["revolute", "revolute"],
                          [True, True])
    d["gravity"] = [0.0, 0.0, 0.0]
    model = fd.Model.from_dict(d)
    q, _, _, _ = nodal_state(model, 9)
    zero = np.zeros(model.nu)
    terms = nodal_terms(model, q, zero)
    factors = nodal_factors(model, terms)
    # unit generalized forces on top of the elastic forces at q: u̇(τ) − u̇(0) = M⁻¹ τ
    base = nodal_forward_dynamics(model, terms, zero, factors=factors)
    M_inv = np.column_stack([nodal_forward_dynamics(model, terms, e, factors=factors) - base
                             for e in np.eye(model.nu)])
    M = fd.mass_matrix(model, q, backend="reference")
    assert rel_err(M_inv @ M, np.eye(model.nu)) < 1e-9


@settings(SETTINGS, max_examples=15)
@given(d=nodal_models(), seed=st.integers(0, 2**32 - 1))
def test_mass_matrix_and_innovations_factors_applied_to_vectors(d, seed):
    """Sec 5 and 8 applied column by column: ``M x`` (Eq 5.1) is the mass matrix of the
    modal recursions, ``(I + K) 𝒟 (I + K*) = M`` (8.1), ``(I − ℒ)(I + K) = I`` (8.3) and
    ``(I − ℒ*) 𝒟⁻¹ (I − ℒ) M = I`` (8.4)."""
    from flexdyn.nodal import (
        apply_nodal_innovations_factor,
        apply_nodal_innovations_factor_inverse,
        apply_nodal_mass_matrix,
        apply_nodal_mass_matrix_inverse,
        nodal_factors,
        nodal_terms,
    )

    model = fd.Model.from_dict(d)
    q, u, _, _ = nodal_state(model, seed)
    terms = nodal_terms(model, q, u)
    factors = nodal_factors(model, terms)
    eye = np.eye(model.nu)
    M = fd.mass_matrix(model, q, backend="reference")
    K = np.column_stack([apply_nodal_innovations_factor(model, terms, factors, e) for e in eye])
    D = np.zeros_like(M)  # 𝒟: the joints' D(k) and the nodes' d_j in the layout of u
    for k in range(model.n_bodies):
        s, nj = model.u_slice(k).start, int(model.nu_joint[k])
        D[s:s + nj, s:s + nj] = np.linalg.inv(factors.D_inv[k]) if nj else 0.0
        for j, d_inv in enumerate(factors.d_inv[k]):
            D[s + nj + 6 * j:s + nj + 6 * j + 6, s + nj + 6 * j:s + nj + 6 * j + 6] = \
                np.linalg.inv(d_inv)
    assert rel_err(np.column_stack([apply_nodal_mass_matrix(model, terms, e) for e in eye]),
                   M) < 1e-12
    assert rel_err(K @ D @ K.T, M) < 1e-10
    L = np.column_stack([apply_nodal_innovations_factor_inverse(model, terms, factors, e)
                         for e in eye])
    assert rel_err(L @ K, eye) < 1e-10
    M_inv = np.column_stack([apply_nodal_mass_matrix_inverse(model, terms, e, factors)
                             for e in eye])
    assert rel_err(M_inv @ M, eye) < 1e-9


# ---------------------------------------------------------------------------------------------
# the same beam in modal coordinates (full eigenbasis), and closed forms
# ---------------------------------------------------------------------------------------------
BEAM = {"length": 1.2, "mass_per_length": 2.0, "EI_y": 40.0, "EI_z": 55.0, "EA": 2.0e4,
        "GJ": 30.0, "polar_inertia_per_length": 2.0e-5}  # thin: little rotary inertia


def test_full_eigenbasis_modal_body_is_the_same_system():
    """A modal body with every eigenmode of the nodal beam (Π = Φ, K = Λ) is the nodal body
    in the coordinates ``u = Φ η``: ``ü = Φ η̈`` at any state (full model, a spinning hub,
    gravity and a tip body)."""
    flex = nodal_beam(**BEAM, n_elements=4)
    n = flex["nodes"].shape[0]
    keep = np.arange(6, 6 * n)  # attach node 0
    K = flex["nodal_stiffness"][np.ix_(keep, keep)]
    M = scipy.linalg.block_diag(*[
        scipy.linalg.block_diag(J, m * np.eye(3))
        for m, J in zip(flex["node_masses"][1:], flex["node_inertias"][1:], strict=True)])
    lam, Phi = scipy.linalg.eigh(K, M)
    modes = np.zeros((6 * n, Phi.shape[1]))
    modes[keep] = Phi
    modal_flex = {"nodes": flex["nodes"], "node_masses": flex["node_masses"],
                  "node_inertias": flex["node_inertias"], "modes": modes,
                  "stiffness": np.diag(lam)}
    tip = {"mass": 0.4, "com": [0.05, 0.0, 0.0], "inertia": np.diag([1e-3, 2e-3, 2e-3])}

    def model(f):
        return (fd.ModelBuilder(gravity=[0.0, -9.81, 0.0])
                .add_body("hub", joint={"type": "revolute", "axis": [0, 0, 1]},
                          rigid={"mass": 3.0, "inertia": np.eye(3) * 0.1})
                .add_body("beam", "hub", joint={"type": "universal",
                                                "axes": [[0, 1, 0], [0, 0, 1]]}, flex=f)
                .add_body("tip", "beam", joint={"type": "revolute", "axis": [1, 0, 0],
                                                "parent_node": n - 1}, rigid=tip).build())

    nodal, modal = model(flex), model(modal_flex)
    rng = np.random.default_rng(3)
    u_n = 0.05 * rng.normal(size=Phi.shape[0])
    ud_n = rng.normal(size=Phi.shape[0])
    joints_q, joints_u = rng.normal(size=3), rng.normal(size=3)  # hub θ, beam θ1 θ2
    q_n = np.concatenate([joints_q, u_n, [0.3]])  # then the beam's coordinates, the tip's θ
    v_n = np.concatenate([joints_u, ud_n, [-0.7]])
    eta, eta_dot = np.linalg.solve(Phi, u_n), np.linalg.solve(Phi, ud_n)
    q_m = np.concatenate([joints_q, eta, [0.3]])
    v_m = np.concatenate([joints_u, eta_dot, [-0.7]])
    a_n = fd.forward_dynamics(nodal, q_n, v_n, method="nodal")
    a_m = fd.forward_dynamics(modal, q_m, v_m, backend="reference")
    m = Phi.shape[0]
    assert rel_err(a_n[:3], a_m[:3]) < 1e-9
    assert rel_err(a_n[3:3 + m], Phi @ a_m[3:3 + m]) < 1e-9
    assert rel_err(a_n[-1:], a_m[-1:]) < 1e-9


def _clamped(flex: dict, gravity=(0.0, 0.0, 0.0)) -> fd.Model:
    return (fd.ModelBuilder(gravity=list(gravity))
            .add_body("beam", joint={"type": "fixed"}, flex=flex).build())


def test_static_deflection_under_own_weight_is_the_closed_form():
    """Clamped at node 0, the lumped weights ``P_j = m_j g`` bend the beam to
    ``w(L) = Σ P_j x_j² (3L − x_j) / (6 EI)`` with the slope ``Σ P_j x_j² / (2 EI)`` at the
    tip — exact for Hermite elements loaded at their nodes; found as the state where the
    filter and smoother give zero acceleration."""
    g = 9.81
    flex = nodal_beam(**{**BEAM, "polar_inertia_per_length": 2e-3}, n_elements=8)
    model = _clamped(flex, gravity=(0.0, 0.0, -g))
    zero = np.zeros(model.nu)

    def accelerations(q):
        return fd.forward_dynamics(model, q, zero, method="nodal")

    q = zero
    for _ in range(3):  # Newton with a central-difference Jacobian
        h = 1e-7
        J = np.column_stack([(accelerations(q + h * e) - accelerations(q - h * e)) / (2 * h)
                             for e in np.eye(model.nq)])
        q = q - np.linalg.solve(J, accelerations(q))
    tip = q[-6:]  # node n−1: [rx, ry, rz, tx, ty, tz]
    x, P = flex["nodes"][:, 0], flex["node_masses"] * g
    L, EI = BEAM["length"], BEAM["EI_y"]
    w_tip = -np.sum(P * x**2 * (3 * L - x)) / (6 * EI)  # along −z
    slope = -np.sum(P * x**2) / (2 * EI)  # dw/dx; ry = −dw/dx
    assert rel_err(tip[5], w_tip) < 1e-8
    assert rel_err(tip[1], -slope) < 1e-8
    assert np.max(np.abs(tip[[0, 2, 3, 4]])) < 1e-10 * abs(w_tip)


@pytest.mark.parametrize("n_elements", [12, 36])
def test_cantilever_frequencies_converge_to_euler_bernoulli(n_elements):
    """``ω² = eig(M⁻¹K)`` with ``M⁻¹`` from the smoother's response to unit forces; the
    clamped-free frequencies approach the continuous ones as 1/n² (lumped mass)."""
    flex = nodal_beam(**BEAM, n_elements=n_elements)
    model = _clamped(flex)
    zero = np.zeros(model.nu)
    M_inv = np.column_stack([fd.forward_dynamics(model, zero, zero, e, method="nodal")
                             for e in np.eye(model.nu)])
    omega = np.sqrt(np.sort(np.linalg.eigvals(M_inv @ model.bodies[0].K).real))
    L, mu = BEAM["length"], BEAM["mass_per_length"]
    closed = {
        "bending y1": 1.8751040687 ** 2 * np.sqrt(BEAM["EI_y"] / (mu * L**4)),
        "bending z1": 1.8751040687 ** 2 * np.sqrt(BEAM["EI_z"] / (mu * L**4)),
        "bending y2": 4.6940911330 ** 2 * np.sqrt(BEAM["EI_y"] / (mu * L**4)),
        "torsion 1": np.pi / 2 / L * np.sqrt(BEAM["GJ"] / BEAM["polar_inertia_per_length"]),
        "axial 1": np.pi / 2 / L * np.sqrt(BEAM["EA"] / mu),
    }
    bound = 3.0 / n_elements**2  # lumped-mass error ~ c/n², c < 3 for these modes
    for name, w in closed.items():
        nearest = omega[np.argmin(np.abs(omega - w))]
        assert abs(nearest - w) / w < bound, (name, nearest, w)


# ---------------------------------------------------------------------------------------------
# the file form, the state layout, errors
# ---------------------------------------------------------------------------------------------
def test_state_layout_names_every_node_coordinate():
    model = _clamped(nodal_beam(**BEAM, n_elements=2, attach_node=1))
    q_names = [e.name for e in fd.state_layout(model)["q"]]
    u_entries = fd.state_layout(model)["u"]
    assert q_names == [f"beam.node[{j}].{c}" for j in (0, 2)
                       for c in ("rx", "ry", "rz", "tx", "ty", "tz")]
    assert u_entries[3].name == "beam.node[0].tx_dot" and u_entries[3].kind == "nodal_rate"
    assert fd.state_layout(model)["q"][0].kind == "nodal"


def test_file_round_trip_keeps_the_dynamics(tmp_path):
    d = random_nodal_dict(np.random.default_rng(11), [-1, 0], ["spherical", "prismatic"],
                          [True, True])
    model = fd.Model.from_dict(d)
    fd.save_model(model, tmp_path / "m.json")
    again = fd.load_model(tmp_path / "m.json")
    q, u, tau, f_ext = nodal_state(model, 12)
    a = fd.forward_dynamics(model, q, u, tau, method="nodal", f_ext=f_ext)
    b = fd.forward_dynamics(again, q, u, tau, method="nodal", f_ext=f_ext)
    assert np.array_equal(a, b)
    flex = json.loads((tmp_path / "m.json").read_text())["bodies"][0]["flex"]
    assert flex["nodal"] is True and "modes" not in flex


def _one_body(flex: dict, joint: dict | None = None) -> dict:
    return {"bodies": [{"name": "boom", "parent": None,
                        "joint": joint or {"type": "revolute", "axis": [0, 0, 1]},
                        "flex": flex}]}


def _plain_beam(**kw) -> dict:
    flex = nodal_beam(**BEAM, n_elements=2)
    flex = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in flex.items()}
    flex.update(kw)
    return flex


@pytest.mark.parametrize(("change", "message"), [
    ({"node_inertias": None}, r"node 1 of a nodal body needs a positive mass and positive "
                              r"definite flex\.node_inertias\[1\]"),
    ({"attach_node": 3}, r"flex\.attach_node = 3 is out of range"),
    ({"attach_node": None}, r"flex is missing the required key 'attach_node'"),
    ({"nodal_stiffness": np.eye(12).tolist()}, r"flex\.nodal_stiffness has 12 rows, expected "
                                               r"6 × 3 nodes = 18"),
    ({"modes": [[1.0]] * 18}, r"flex\.modes is not used by a nodal body"),
    ({"nodal": "yes"}, r"flex\.nodal must be true or false"),
    ({"nodal_stiffness": (-np.eye(18)).tolist()}, r"flex\.nodal_stiffness is not positive "
                                                  r"semi-definite"),
])
def test_bad_nodal_blocks_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        fd.Model.from_dict(_one_body(_plain_beam(**change)))


def test_large_banded_stiffness_is_checked_by_its_extreme_eigenvalues():
    """A 41-node beam's stiffness (246 × 246, bandwidth 11) is checked by the banded solver:
    the free-free stiffness passes, the same minus a small multiple of I (one negative
    eigenvalue well above round-off) fails."""
    flex = nodal_beam(**BEAM, n_elements=40)
    K = flex["nodal_stiffness"]
    fd.Model.from_dict(_one_body(flex))
    lam_max = np.linalg.eigvalsh(K)[-1]
    with pytest.raises(ValueError, match=r"flex\.nodal_stiffness is not positive semi-definite "
                                         r"\(smallest eigenvalue -"):
        fd.Model.from_dict(_one_body({**flex, "nodal_stiffness": K - 1e-9 * lam_max
                                      * np.eye(K.shape[0])}))


def test_nodal_keys_need_the_nodal_flag_and_the_joint_its_attach_node():
    flex = _plain_beam()
    del flex["nodal"]
    with pytest.raises(ValueError, match=r"flex\.attach_node belongs to a nodal body"):
        fd.Model.from_dict(_one_body(flex))
    with pytest.raises(ValueError, match=r"joint\.child_node = 2 must be null or the nodal "
                                         r"body's flex\.attach_node = 0"):
        fd.Model.from_dict(_one_body(_plain_beam(), {"type": "revolute", "axis": [0, 0, 1],
                                                     "child_node": 2}))


def test_nodal_method_refuses_modal_bodies_and_node_loads():
    model = fd.Model.from_dict(_one_body(_plain_beam()))
    q = np.zeros(model.nq)
    with pytest.raises(ValueError, match="method 'nodal' takes no f_nodes"):
        fd.forward_dynamics(model, q, q, method="nodal", f_nodes={("boom", 1): np.ones(6)})
    modal = fd.models.two_link_arm()
    with pytest.raises(ValueError, match=r"body 0 'link1' is a modal body"):
        fd.forward_dynamics(modal, np.zeros(modal.nq), np.zeros(modal.nu), method="nodal")


def test_node_without_rotational_inertia_is_named():
    """With the ``"neglect"`` tip kinematics a node's rotation moves nothing: its articulated
    inertia ``d_j`` is singular, and the error names the node and body."""
    d = _one_body(_plain_beam())
    d["tip_kinematics"] = "neglect"
    model = fd.Model.from_dict(d)
    q = np.zeros(model.nq)
    with pytest.raises(SingularInertiaError, match=r"articulated inertia d of node 1 of body "
                                                   r"0 'boom'"):
        fd.forward_dynamics(model, q, q, method="nodal")


def test_nodal_beam_checks_its_arguments():
    with pytest.raises(ValueError, match="polar_inertia_per_length"):
        nodal_beam(**{**BEAM, "polar_inertia_per_length": 0.0})
    with pytest.raises(ValueError, match="attach_node=5 must be a node index in"):
        nodal_beam(**BEAM, n_elements=2, attach_node=5)


@pytest.mark.slow
def test_simulation_of_a_nodal_pendulum_conserves_energy():
    flex = nodal_beam(**BEAM, n_elements=3)
    model = (fd.ModelBuilder(gravity=[0.0, -9.81, 0.0])
             .add_body("beam", joint={"type": "revolute", "axis": [0, 0, 1]}, flex=flex)
             .build())
    q0 = np.zeros(model.nq)
    q0[0] = 0.5
    res = fd.simulate(model, q0, np.zeros(model.nu), t_span=(0.0, 0.2), method="nodal",
                      integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    assert np.max(np.abs(res.energy_balance_error)) < 1e-6


def test_benchmark_quick(capsys):
    """``benchmarks/bench_nodal.py --quick``: the three ways agree and every column is timed."""
    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if benchmarks not in sys.path:  # the developer instruments are not installed
        sys.path.insert(0, benchmarks)
    import bench_nodal

    res = bench_nodal.main(["--quick"])
    assert set(res) == {10, 30}
    for row in res.values():
        assert row["diff"] < 1e-12
        assert all(row[k] > 0 for k in ("nodal", "modal", "dense", "10 modes"))
    assert "max |Δu̇|" in capsys.readouterr().out
