"""The precomputed ruthless model (Jain & Rodriguez App B, Eqs B1–B4) against its definition.

:class:`flexdyn.ruthless.RuthlessBodyModel` evaluates the ruthlessly linearized dynamics from
constants computed once per model.  Every per-call product of it must equal, to 1e-10
relative, the general path applied to the ruthless model as Eq B1 defines it — the *full*
body model with every operator at ``η = 0`` and ``η̇ = 0`` in every velocity product
(``ruthless_terms.definition_terms``), through the generic algorithms with the explicit
``D_f⁻¹``::

    articulated_forward_dynamics(model, kin, vel, tau)          # Eq 58
    articulated_forward_dynamics_split(model, kin, vel, tau)    # Eqs 62–64
    composite_forward_dynamics(model, kin, vel, tau)            # Eq 46

Random models are drawn so that every case of Eq B3 occurs: rigid bodies (no ``D_f``),
bodies with 1–7 modes (explicit ``D_f⁻¹``) and with 8–12 modes (indirect ``D_f⁻¹``; both
rules are also forced for every body with ``indirect_min_modes=1`` and ``=99``), tip bodies
(``Γ = 0``: ``D_f⁻¹ = Λ``), flexible bodies with two or three children attached at
different nodes (stacked ``ζ``, block-diagonal ``Γ``) and children on revolute, prismatic,
fixed and spherical joints, whose ``Γ = φ P_R⁺ φ*`` has rank ``6 − nu_joint``.

The precomputed constants are checked against their definitions (Eq B4) and Eq B3 as printed
(with ``Γ⁻¹``) against the push-through form ``Λ − Υ Γ [I + Ω Γ]⁻¹ Υ*`` on invertible ``Γ``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn.articulated_body import (
    articulated_body_inertias_split,
    articulated_forward_dynamics,
    articulated_forward_dynamics_split,
)
from flexdyn.composite_body import composite_forward_dynamics, crba
from flexdyn.newton_euler import rnea
from flexdyn.ruthless import INDIRECT_MIN_MODES, RuthlessModel
from helpers import assert_close
from ruthless_terms import (
    definition_terms,
    precomputed_composite_forward_dynamics,
    precomputed_forward_dynamics,
    precomputed_split_factors,
    precomputed_terms,
)
from strategies import random_f_ext, random_model_dict, random_state

#: Children on these joints leave ``Γ = φ P_R⁺ φ*`` of rank ``6 − nu`` (6 for "fixed").
RANK_DEFICIENT_JOINTS = ("revolute", "prismatic", "fixed", "spherical")
OTHER_JOINTS = ("screw", "cylindrical", "universal", "free")

#: Indirect-rule thresholds: the default one, always indirect, never indirect.
RULES = (INDIRECT_MIN_MODES, 1, 99)

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------------
# random models
# ---------------------------------------------------------------------------------------------
class Spec(NamedTuple):
    """Structure of a random model; the numbers come from ``seed``.

    ``modes[i]`` is the requested mode count (``random_model_dict`` caps it at what the nodes
    support; with 6 nodes that is at least 12).  Children of a flexible body are attached at
    pairwise different nodes of it.
    """

    parents: tuple[int, ...]
    joints: tuple[str, ...]
    nodes: tuple[int, ...]
    modes: tuple[int, ...]
    seed: int


class Case(NamedTuple):
    model: fd.Model
    q: np.ndarray
    u: np.ndarray
    tau: np.ndarray
    f_ext: np.ndarray


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    n = draw(st.integers(1, 6), label="n_bodies")
    parents = [-1]
    for i in range(1, n):
        # favour few parents, so that flexible bodies get several children
        parents.append(draw(st.integers(-1 if i > 2 else 0, min(i - 1, 2)), label="parent"))
    joints = tuple(
        draw(st.sampled_from(RANK_DEFICIENT_JOINTS * 3 + OTHER_JOINTS), label="joint")
        for _ in range(n)
    )
    nodes, modes = [], []
    for _ in range(n):
        kind = draw(st.sampled_from(["rigid", "few", "many"]), label="modes kind")
        if kind == "rigid":
            nodes.append(draw(st.integers(0, 2), label="nodes"))
            modes.append(0)
        elif kind == "few":
            nodes.append(draw(st.integers(3, 5), label="nodes"))
            modes.append(draw(st.integers(1, 7), label="modes"))
        else:
            nodes.append(6)
            modes.append(draw(st.integers(8, 12), label="modes"))
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    return Spec(tuple(parents), joints, tuple(nodes), tuple(modes), seed)


#: Pinned structures: a flexible hub with three children on rank-deficient hinges at three
#: different nodes (one of them itself a hub of two), a chain of 8–12-mode bodies, a
#: two-child 7/8-mode boundary case and a single body.
HUB = Spec((-1, 0, 1, 1, 1, 2, 2), ("revolute", "spherical", "revolute", "prismatic", "fixed",
                                    "revolute", "spherical"),
           (6, 6, 0, 5, 4, 3, 6), (10, 12, 0, 5, 3, 2, 9), 7)
CHAIN = Spec((-1, 0, 1, 2), ("revolute", "revolute", "prismatic", "spherical"),
             (6, 6, 6, 6), (8, 12, 9, 11), 11)
BOUNDARY = Spec((-1, 0, 0, 1, 1), ("fixed", "revolute", "spherical", "revolute", "prismatic"),
                (6, 5, 6, 2, 0), (8, 7, 8, 1, 0), 3)
SINGLE = Spec((-1,), ("revolute",), (6,), (12,), 5)
PINNED = (HUB, CHAIN, BOUNDARY, SINGLE)


def pinned(test):
    """Run ``test`` on the pinned structures as well as on the drawn ones."""
    for spec in PINNED:
        test = example(spec=spec)(test)
    return test


@functools.lru_cache(maxsize=64)
def build(spec: Spec) -> Case:
    rng = np.random.default_rng(spec.seed)
    d = random_model_dict(rng, spec.parents, spec.joints, spec.nodes, spec.modes)
    # attach the children of each body at pairwise different nodes of it
    for p in range(len(spec.parents)):
        kids = [i for i, pi in enumerate(spec.parents) if pi == p]
        if kids and spec.nodes[p] >= len(kids):
            for i, node in zip(kids, rng.permutation(spec.nodes[p])[:len(kids)], strict=False):
                d["bodies"][i]["joint"]["parent_node"] = int(node)
    model = fd.Model.from_dict(d)
    q, u, _ = random_state(model, rng)
    tau = rng.normal(size=model.nu)
    return Case(model, q, u, tau, random_f_ext(model, rng))


@functools.lru_cache(maxsize=64)
def ruthless(spec: Spec, indirect_min_modes: int) -> RuthlessModel:
    return RuthlessModel(build(spec).model, indirect_min_modes=indirect_min_modes)


@functools.lru_cache(maxsize=64)
def general(spec: Spec):
    """The ruthless model by its definition: ``(kin, vel, split factors)``."""
    c = build(spec)
    kin, vel = definition_terms(c.model, c.q, c.u)
    return kin, vel, articulated_body_inertias_split(c.model, kin)


# ---------------------------------------------------------------------------------------------
# comparison helpers
# ---------------------------------------------------------------------------------------------
def assert_lists_close(got: list, ref: list, what: str, scale=None) -> None:
    assert len(got) == len(ref), what
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        if b is None:
            assert a is None, f"{what}[{i}]: expected None"
            continue
        s = 0.0 if scale is None else scale[i]
        assert_close(a, b, f"{what}[{i}]", scale=s)


def assert_transforms_close(got: list, ref: list, what: str) -> None:
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        assert_close(a.R, b.R, f"{what}[{i}].R", scale=1.0)
        assert_close(a.p, b.p, f"{what}[{i}].p", scale=1.0)


def gammas(model: fd.Model, kin: fd.PositionTerms, factors, i: int) -> list:
    """``Γ(c) = φ(c) P_R⁺(c) φ*(c)`` of the children ``c`` of body ``i``."""
    return [kin.phi[c] @ factors.P_R_plus[c] @ kin.phi[c].T for c in model.children[i]]


def block_diag(blocks: list) -> np.ndarray:
    n = sum(b.shape[0] for b in blocks)
    out = np.zeros((n, n))
    k = 0
    for b in blocks:
        out[k:k + b.shape[0], k:k + b.shape[0]] = b
        k += b.shape[0]
    return out


# ---------------------------------------------------------------------------------------------
# per-call terms
# ---------------------------------------------------------------------------------------------
@SETTINGS
@pinned
@given(spec=specs())
def test_kinematics_and_velocities_match_general_path(spec):
    c = build(spec)
    model = c.model
    rm = ruthless(spec, INDIRECT_MIN_MODES)
    kin_ref, vel_ref, _ = general(spec)
    kin = precomputed_terms(rm, c.q)[0]
    assert kin.fidelity == "ruthless"
    for name in ("phi", "A", "E_t", "S", "Hcal", "Q", "M_m", "eta"):
        assert_lists_close(getattr(kin, name), getattr(kin_ref, name), name)
    for name in ("pose", "T_parent", "T_joint"):
        assert_transforms_close(getattr(kin, name), getattr(kin_ref, name), name)
    for i in range(model.n_bodies):
        for f in ("R", "p", "E", "theta"):
            assert_close(getattr(kin.frames[i], f), getattr(kin_ref.frames[i], f),
                         f"frames[{i}].{f}", scale=1.0)
    vel = precomputed_terms(rm, c.q, c.u)[1]
    scale_V = max(float(np.max(np.abs(v))) for v in vel_ref.V_m)
    for name in ("V_m", "a_m", "b_m", "eta_dot"):
        ref = getattr(vel_ref, name)
        # a_m, b_m of a body may vanish (e.g. a root on a constant-axis joint): floor the
        # scale at their size for the body with the largest twist
        floor = [scale_V * max(1.0, scale_V) * 1e-3] * len(ref)
        assert_lists_close(getattr(vel, name), ref, name, floor)


@SETTINGS
@pinned
@given(spec=specs())
def test_split_factors_and_forward_dynamics_match_general_path(spec):
    """Eq 63 with ``D_f⁻¹`` explicit or by Eq B3, for the default and both forced rules."""
    c = build(spec)
    model = c.model
    kin_ref, vel_ref, ref = general(spec)
    udot_ref = articulated_forward_dynamics_split(model, kin_ref, vel_ref, c.tau, c.f_ext)
    for rule in RULES:
        rm = ruthless(spec, rule)
        sf = precomputed_split_factors(rm, c.q)
        for name in ("Df_inv", "g", "P_R", "DR_inv", "G_R"):
            assert_lists_close(getattr(sf, name), getattr(ref, name), f"{name} (rule {rule})")
        # P_R⁺ vanishes on a free joint: measure it against P_R
        scale = [float(np.max(np.abs(p))) for p in ref.P_R]
        assert_lists_close(sf.P_R_plus, ref.P_R_plus, f"P_R_plus (rule {rule})", scale)
        for i in range(model.n_bodies):
            if model.n_modes[i] and not model.children[i]:  # tip body: Γ = 0, D_f⁻¹ = Λ
                assert_close(sf.Df_inv[i], rm.consts[i].Lambda, f"tip D_f⁻¹({i}) = Λ")
        assert_close(precomputed_forward_dynamics(rm, c.q, c.u, c.tau, c.f_ext), udot_ref,
                     f"precomputed split forward dynamics (rule {rule})")


@SETTINGS
@pinned
@given(spec=specs())
def test_public_ruthless_entry_points_match_general_path(spec):
    """``fd.forward_dynamics`` (all methods), ``mass_matrix``, ``bias_forces`` and
    the composite method on the precomputed body models with ``fidelity="ruthless"``."""
    c = build(spec)
    model = c.model
    kin, vel, _ = general(spec)
    refs = {
        "articulated": articulated_forward_dynamics(model, kin, vel, c.tau, c.f_ext),
        "articulated-split": articulated_forward_dynamics_split(model, kin, vel, c.tau,
                                                                c.f_ext),
        "composite": composite_forward_dynamics(model, kin, vel, c.tau, c.f_ext),
    }
    assert_close(refs["articulated-split"], refs["composite"], "general AB vs CB", scale=1.0)
    for method, ref in refs.items():
        got = fd.forward_dynamics(model, c.q, c.u, c.tau, method=method, fidelity="ruthless",
                                  f_ext=c.f_ext)
        assert_close(got, ref, f"fd.forward_dynamics({method!r}, 'ruthless')")
    rm = ruthless(spec, INDIRECT_MIN_MODES)
    assert_close(precomputed_composite_forward_dynamics(rm, c.q, c.u, c.tau, c.f_ext),
                 refs["composite"], "precomputed composite forward dynamics")
    assert_close(fd.mass_matrix(model, c.q, "ruthless"), crba(model, kin), "mass_matrix")
    C_ref = rnea(model, kin, vel, np.zeros(model.nu), c.f_ext)
    assert_close(fd.bias_forces(model, c.q, c.u, "ruthless", f_ext=c.f_ext), C_ref,
                 "bias_forces")
    udot = np.random.default_rng(spec.seed).normal(size=model.nu)
    assert_close(fd.inverse_dynamics(model, c.q, c.u, udot, "ruthless", f_ext=c.f_ext),
                 rnea(model, kin, vel, udot, c.f_ext), "inverse_dynamics")


# ---------------------------------------------------------------------------------------------
# Eq B4 constants and Eq B3
# ---------------------------------------------------------------------------------------------
@SETTINGS
@pinned
@given(spec=specs())
def test_precomputed_constants_satisfy_their_definitions(spec):
    """``Λ = [ℋ_f M_m⁰ ℋ_f*]⁻¹``, ``ζ = ℋ_f [A(c₁), A(c₂), …]``, ``Υ = Λζ``, ``Ω = ζ*Υ``."""
    c = build(spec)
    model = c.model
    rm = ruthless(spec, INDIRECT_MIN_MODES)
    kin, _, _ = general(spec)  # at the sample's q: the constants must not depend on it
    for i, k in enumerate(rm.consts):
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        kids = model.children[i]
        Hf = kin.Hcal[i][nj:]
        M0 = model.bodies[i].M_m0
        D_f0 = Hf @ M0 @ Hf.T
        assert_close(k.Hf, Hf, f"ℋ_f({i})", scale=1.0)
        assert_close(k.D_f0, D_f0, f"Λ⁻¹({i})")
        assert k.Lambda.shape == (m, m)
        if m:
            assert_close(k.Lambda @ D_f0, np.eye(m), f"Λ ℋ_f M⁰ ℋ_f* = I ({i})")
            assert_close(k.Lambda, np.linalg.inv(D_f0), f"Λ({i})")
            assert_close(k.Lambda, k.Lambda.T, f"Λ({i}) symmetric")
        zeta = (np.hstack([Hf @ kin.A[ch] for ch in kids]) if kids else np.zeros((m, 0)))
        assert k.zeta.shape == (m, 6 * len(kids))
        assert k.Upsilon.shape == (m, 6 * len(kids))
        assert k.Omega.shape == (6 * len(kids), 6 * len(kids))
        if m and kids:
            assert_close(k.zeta, zeta, f"ζ({i})")
            assert_close(k.Upsilon, k.Lambda @ zeta, f"Υ({i}) = Λζ")
            assert_close(k.Omega, zeta.T @ k.Upsilon, f"Ω({i}) = ζ*Υ")
            assert_close(k.Omega, k.Omega.T, f"Ω({i}) symmetric")
        assert_close(k.M_rr, M0[m:, m:], f"M⁰_rr({i})")
        assert_close(k.M_rf_Hf, M0[m:] @ Hf.T, f"[M⁰_rf, M⁰_rr] ℋ_f*({i})", scale=1.0)
        if k.Hcal is not None:
            assert_close(k.Hcal, kin.Hcal[i], f"ℋ({i})", scale=1.0)


@SETTINGS
@pinned
@given(spec=specs())
def test_eq_b3_as_printed_equals_push_through_form(spec):
    """With an invertible (random SPD) ``Γ``, Eq B3 as printed,
    ``Λ − Υ [Γ⁻¹ + Ω]⁻¹ Υ*``, the push-through form ``Λ − Υ Γ [I + Ω Γ]⁻¹ Υ*`` and the
    explicit ``[Λ⁻¹ + ζ Γ ζ*]⁻¹`` agree (Eq B2)."""
    model = build(spec).model
    rm = ruthless(spec, INDIRECT_MIN_MODES)
    rng = np.random.default_rng(spec.seed + 1)
    for i, k in enumerate(rm.consts):
        m, nc = int(model.n_modes[i]), len(model.children[i])
        if not (m and nc):
            continue
        blocks = []
        for _ in range(nc):
            Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
            blocks.append(Q @ np.diag(rng.uniform(0.1, 10.0, size=6)) @ Q.T)
        G = block_diag(blocks)
        eye = np.eye(6 * nc)
        direct = np.linalg.inv(k.D_f0 + k.zeta @ G @ k.zeta.T)
        printed = k.Lambda - k.Upsilon @ np.linalg.solve(np.linalg.inv(G) + k.Omega,
                                                         k.Upsilon.T)
        push = k.Lambda - k.Upsilon @ G @ np.linalg.solve(eye + k.Omega @ G, k.Upsilon.T)
        assert_close(printed, push, f"Eq B3 printed vs push-through ({i})")
        assert_close(push, direct, f"push-through vs [Λ⁻¹ + ζΓζ*]⁻¹ ({i})")


@SETTINGS
@pinned
@given(spec=specs())
def test_gamma_has_the_rank_of_the_child_hinge(spec):
    """The premise of the push-through form: ``Γ(c)`` has rank ``6 − nu(c)`` (so Eq B3 as
    printed is not usable) and the indirect ``D_f⁻¹`` still matches the explicit one."""
    c = build(spec)
    model = c.model
    kin, _, ref = general(spec)
    rm = ruthless(spec, 1)
    sf = precomputed_split_factors(rm, c.q)
    for i in range(model.n_bodies):
        for ch, G in zip(model.children[i], gammas(model, kin, ref, i), strict=True):
            s = np.linalg.svd(G, compute_uv=False)
            scale = float(np.max(np.abs(ref.P_R[ch])))
            rank = int(np.sum(s > 1e-9 * scale))
            assert rank == 6 - int(model.nu_joint[ch]), (i, ch, model.joints[ch].type, s)
        if model.n_modes[i] and model.children[i]:
            assert_close(sf.Df_inv[i], ref.Df_inv[i], f"indirect D_f⁻¹({i})")


def test_pinned_models_cover_the_cases():
    """The pinned structures contain what the module docstring promises."""
    hub = build(HUB).model
    assert hub.n_modes.tolist() == [10, 12, 0, 5, 3, 2, 9]
    assert [len(ch) for ch in hub.children] == [1, 3, 2, 0, 0, 0, 0]
    for i in (1, 2):  # children at different nodes of their parent
        nodes = [hub.parent_node[ch] for ch in hub.children[i] if hub.parent_node[ch] is not None]
        assert len(set(nodes)) == len(nodes)
    assert {hub.joints[ch].type for ch in hub.children[1]} == {"revolute", "prismatic", "fixed"}
    chain = build(CHAIN).model
    assert all(8 <= m <= 12 for m in chain.n_modes)
    boundary = build(BOUNDARY).model
    assert boundary.n_modes[:3].tolist() == [8, 7, 8]


@pytest.mark.parametrize("spec", [HUB, Spec((-1, 0), ("universal", "universal"), (4, 4), (3, 2),
                                            3)], ids=["hub", "universal"])
def test_complex_step_through_the_fast_path(spec):
    """``∂C/∂u`` and ``∂C/∂q`` by complex step agree between the precomputed model and its
    definition."""
    c = build(spec)
    model, h = c.model, 1e-30
    zero = np.zeros(model.nu)
    du = np.random.default_rng(1).normal(size=model.nu)
    dq = model.qdot(c.q, du)
    ref_u = rnea(model, *definition_terms(model, c.q, c.u + 1j * h * du), zero).imag / h
    got_u = fd.bias_forces(model, c.q, c.u + 1j * h * du, "ruthless").imag / h
    assert_close(got_u, ref_u, "∂C/∂u · du")
    qc, uc = c.q + 1j * h * dq, c.u.astype(complex)
    ref_q = rnea(model, *definition_terms(model, qc, uc), zero).imag / h
    got_q = fd.bias_forces(model, qc, uc, "ruthless").imag / h
    assert_close(got_q, ref_q, "∂C/∂q · dq")


def test_body_models_built_once_from_several_threads():
    import threading

    model = fd.models.spacecraft(name="threads")  # a model no other test has cached
    barrier, results = threading.Barrier(4), []

    def build():
        barrier.wait()
        results.append(fd.terms.body_models(model, "ruthless"))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r is results[0] for r in results)
