"""Innovations factorization and articulated-body forward dynamics (Jain & Rodriguez Secs V–VI).

Every lemma is checked on random chains and trees of rigid and flexible bodies (all joint
types, free-floating bases included) at random states, for both fidelities, by comparing

* the dense operators of :mod:`flexdyn.operators` (Eqs 51–53) with the mass matrix of the
  composite-body recursion (Lemma 2, Eq 54) and with each other (Lemma 3, Eq 55; the
  identities of Appendix A, Eqs A2 and A4);
* the O(N) recursions of :mod:`flexdyn.articulated_body` with the dense operators (the
  innovations factor and its inverse applied to the identity, Lemma 4's ``M⁻¹``, the
  forward-dynamics expression of Lemma 5, Eq 57);
* the articulated-body forward dynamics (Eq 58 and the split form, Eqs 62–64) with the
  composite-body one and with ``solve(M, τ − C)``.

Bodies are in topological order, so ``[I + ℋΦK]`` is block *upper* triangular here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexdyn as fd
from flexdyn import operators as ops
from flexdyn.articulated_body import (
    apply_innovations_factor,
    apply_innovations_factor_inverse,
    apply_mass_matrix,
    apply_mass_matrix_inverse,
    articulated_body_inertias,
    articulated_body_inertias_split,
    articulated_forward_dynamics,
    articulated_forward_dynamics_split,
)
from flexdyn.beam import beam_modes
from flexdyn.dynamics import check_external_forces, innovations_factors, mass_matrix_inverse
from helpers import RTOL, assert_close
from oracles.rigid_reference import JOINT_TYPES as RIGID_JOINT_TYPES
from oracles.rigid_reference import RigidModel
from strategies import models, models_and_states

SAMPLES = models_and_states(max_bodies=10, max_modes=6)
FIDELITY = st.sampled_from(fd.FIDELITIES)
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def dense_factors(model: fd.Model, kin: fd.PositionTerms, factors) -> dict[str, np.ndarray]:
    """The dense operators of Eqs 43 and 51–53 and the two innovations factors."""
    H, Phi = ops.Hcal(model, kin), ops.Phi(model, kin)
    K, Psi = ops.K_dense(model, kin, factors), ops.Psi(model, kin, factors)
    eye = np.eye(model.nu)
    return {
        "H": H,
        "Phi": Phi,
        "K": K,
        "Psi": Psi,
        "D": ops.D_dense(model, factors),
        "L": eye + H @ Phi @ K,  # [I + ℋΦK], Eq 54
        "L_inv": eye - H @ Psi @ K,  # [I − ℋΨK], Eq 55
    }


def is_ancestor(model: fd.Model, j: int, i: int) -> bool:
    """Whether body ``j`` is ``i`` or one of its ancestors."""
    while i >= 0:
        if i == j:
            return True
        i = int(model.parent[i])
    return False


def modal_stack(model: fd.Model, blocks: list) -> np.ndarray:
    """``col{blocks[i]}`` in the layout of :func:`flexdyn.operators.modal_offsets`."""
    return np.concatenate([np.asarray(b, float) for b in blocks]) if blocks else np.zeros(0)


# ---------------------------------------------------------------------------------------------
# Eq 52–53: the dense operators against the per-body factors
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_dense_operators_match_per_body_factors(sample, fidelity):
    model, q = sample.model, sample.q
    kin, factors = innovations_factors(model, q, fidelity)
    o = ops.modal_offsets(model)
    P = ops.P_dense(model, factors)
    H = ops.Hcal(model, kin)
    G = ops.G_dense(model, factors)
    D = ops.D_dense(model, factors)
    tau_bar = ops.tau_bar_dense(model, factors)
    K, E_Psi, Psi = (ops.K_dense(model, kin, factors), ops.E_Psi(model, kin, factors),
                     ops.Psi(model, kin, factors))
    # Eq 52 as operator identities
    sP = float(np.max(np.abs(P)))
    assert_close(D, H @ P @ H.T, "D = ℋPℋ*", scale=sP)
    assert_close(G @ D, P @ H.T, "G D = Pℋ*", scale=sP)
    # on the scale of I: for free joints Gℋ = I and τ̄ is round-off (~1e-16) on both sides
    assert_close(tau_bar, np.eye(o[-1]) - G @ H, "τ̄ = I − Gℋ", scale=1.0)
    # nonzero blocks of K and E_Ψ are K(p, i) and Ψ(p, i)
    for i in range(model.n_bodies):
        p, si = int(model.parent[i]), model.u_slice(i)
        for j in range(model.n_bodies):
            blk_K = K[o[j]:o[j + 1], si]
            blk_E = E_Psi[o[j]:o[j + 1], o[i]:o[i + 1]]
            if j == p:
                assert_close(blk_K, factors.K(kin, i), f"K({p}, {i})")
                assert_close(blk_E, factors.Psi(kin, i), f"Ψ({p}, {i})")
            else:
                assert not np.any(blk_K) and not np.any(blk_E), (j, i)
    # Eq 53: Ψ(j, i) is the product of the Ψ(parent, child) up the path, zero off the path
    for i in range(model.n_bodies):
        ref = np.eye(o[i + 1] - o[i])
        j = i
        while j >= 0:
            # (the product may vanish, e.g. through a free joint: floor the scale at 1)
            assert_close(Psi[o[j]:o[j + 1], o[i]:o[i + 1]], ref, f"Ψ({j}, {i})", scale=1.0)
            p = int(model.parent[j])
            if p >= 0:
                ref = factors.Psi(kin, j) @ ref
            j = p
        for j in range(model.n_bodies):
            if not is_ancestor(model, j, i):
                assert not np.any(np.abs(Psi[o[j]:o[j + 1], o[i]:o[i + 1]]) > 1e-14), (j, i)


# ---------------------------------------------------------------------------------------------
# Lemma 2 (Eq 54): M = [I + ℋΦK] D [I + ℋΦK]*
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_lemma2_innovations_factorization(sample, fidelity):
    model, q = sample.model, sample.q
    kin, factors = innovations_factors(model, q, fidelity)
    d = dense_factors(model, kin, factors)
    M = fd.mass_matrix(model, q, fidelity)
    L = d["L"]
    assert_close(L @ d["D"] @ L.T, M, "[I + ℋΦK] D [I + ℋΦK]* vs mass_matrix")
    assert_close(ops.mass_matrix_dense(model, kin), M, "ℋΦM_mΦ*ℋ* vs mass_matrix")
    # the factor is block triangular with identity diagonal blocks: block (j, i) is nonzero
    # only for a strict ancestor j of i
    for i in range(model.n_bodies):
        si = model.u_slice(i)
        for j in range(model.n_bodies):
            blk = L[model.u_slice(j), si]
            if j == i:
                assert_close(blk, np.eye(blk.shape[0]), f"[I + ℋΦK]({i}, {i})")
            elif not is_ancestor(model, j, i):
                assert not np.any(np.abs(blk) > 1e-14), (j, i)
    # the recursive sweep applied to the identity (and to a block) is the dense factor
    eye = np.eye(model.nu)
    assert_close(apply_innovations_factor(model, kin, factors, eye), L,
                 "apply_innovations_factor(I)")
    x = np.random.default_rng(1).normal(size=model.nu)
    assert_close(apply_innovations_factor(model, kin, factors, x), L @ x,
                 "apply_innovations_factor(x)")


# ---------------------------------------------------------------------------------------------
# Lemma 3 (Eq 55): [I + ℋΦK]⁻¹ = [I − ℋΨK]; Eqs A2, A4
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_lemma3_inverse_factor(sample, fidelity):
    model, q = sample.model, sample.q
    kin, factors = innovations_factors(model, q, fidelity)
    d = dense_factors(model, kin, factors)
    eye = np.eye(model.nu)
    assert_close(d["L"] @ d["L_inv"], eye, "[I + ℋΦK][I − ℋΨK]")
    assert_close(d["L_inv"] @ d["L"], eye, "[I − ℋΨK][I + ℋΦK]")
    assert_close(apply_innovations_factor_inverse(model, kin, factors, eye), d["L_inv"],
                 "apply_innovations_factor_inverse(I)")
    x = np.random.default_rng(2).normal(size=(model.nu, 3))
    y = apply_innovations_factor(model, kin, factors, x)
    assert_close(apply_innovations_factor_inverse(model, kin, factors, y), x,
                 "inverse sweep undoes the forward sweep")
    # Eq A4: Ψ⁻¹ = Φ⁻¹ + Kℋ
    assert_close(np.linalg.inv(d["Psi"]), np.linalg.inv(d["Phi"]) + d["K"] @ d["H"],
                 "Ψ⁻¹ = Φ⁻¹ + Kℋ")
    # Eq A2: M_m = P − E_Ψ P E_Φ* = P − E_Φ P E_Φ* + K D K*
    P, E_Phi = ops.P_dense(model, factors), ops.E_Phi(model, kin)
    E_Psi, M_m = ops.E_Psi(model, kin, factors), ops.M_m(model, kin)
    sP = float(np.max(np.abs(P)))
    assert_close(P - E_Psi @ P @ E_Phi.T, M_m, "M_m = P − E_Ψ P E_Φ*", scale=sP)
    assert_close(P - E_Phi @ P @ E_Phi.T + d["K"] @ d["D"] @ d["K"].T, M_m,
                 "M_m = P − E_Φ P E_Φ* + K D K*", scale=sP)


# ---------------------------------------------------------------------------------------------
# Lemma 4 (Eq 56): M⁻¹ = [I − ℋΨK]* D⁻¹ [I − ℋΨK]; O(N) products with M and M⁻¹
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, k=st.integers(1, 4))
def test_lemma4_mass_matrix_inverse(sample, fidelity, k):
    model, q = sample.model, sample.q
    M = fd.mass_matrix(model, q, fidelity)
    M_inv = np.linalg.inv(M)
    tol = max(RTOL, 10.0 * np.finfo(float).eps * np.linalg.cond(M))  # solves lose κ(M) ε
    kin, factors = innovations_factors(model, q, fidelity)
    d = dense_factors(model, kin, factors)
    L_inv = d["L_inv"]
    assert_close(L_inv.T @ np.linalg.inv(d["D"]) @ L_inv, M_inv, "Eq 56 dense", tol=tol)
    assert_close(mass_matrix_inverse(model, q, fidelity), M_inv, "mass_matrix_inverse", tol=tol)
    rng = np.random.default_rng(3)
    b, B = rng.normal(size=model.nu), rng.normal(size=(model.nu, k))
    assert_close(apply_mass_matrix_inverse(model, kin, b), np.linalg.solve(M, b),
                 "apply_mass_matrix_inverse(b)", tol=tol)
    assert_close(apply_mass_matrix_inverse(model, kin, B, factors), np.linalg.solve(M, B),
                 "apply_mass_matrix_inverse(B)", tol=tol)
    assert_close(apply_mass_matrix(model, kin, b), M @ b, "apply_mass_matrix(x)")
    assert_close(apply_mass_matrix(model, kin, B), M @ B, "apply_mass_matrix(X)")
    assert_close(apply_mass_matrix_inverse(model, kin, apply_mass_matrix(model, kin, B)), B,
                 "M⁻¹ M X = X", tol=tol)


# ---------------------------------------------------------------------------------------------
# Lemma 5 (Eqs 57–58, 64): forward dynamics
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, use_f_ext=st.booleans())
def test_lemma5_forward_dynamics(sample, fidelity, use_f_ext):
    model, q, u = sample.model, sample.q, sample.u
    f_ext = sample.f_ext if use_f_ext else None
    tau = np.random.default_rng(4).normal(size=model.nu)
    M = fd.mass_matrix(model, q, fidelity)
    C = fd.bias_forces(model, q, u, fidelity, f_ext=f_ext)
    ref = np.linalg.solve(M, tau - C)
    out = {m: fd.forward_dynamics(model, q, u, tau, method=m, fidelity=fidelity, f_ext=f_ext)
           for m in ("articulated", "articulated-split", "composite")}
    # the accelerations are as accurate as M's conditioning allows (forward error ≲ κ ε)
    tol = max(RTOL, 10.0 * np.finfo(float).eps * np.linalg.cond(M))
    assert_close(out["articulated"], ref, "articulated vs solve(M, τ − C)", tol=tol)
    assert_close(out["articulated-split"], ref, "articulated-split vs solve(M, τ − C)", tol=tol)
    assert_close(out["composite"], ref, "composite vs solve(M, τ − C)", tol=tol)
    assert_close(out["articulated-split"], out["articulated"], "split vs unsplit", tol=tol)
    # the residual of a backward-stable solve is round-off of the terms that cancel in it,
    # max |M| max |u̇| (which exceeds |τ| by up to κ(M)), not of τ
    assert_close(M @ out["articulated"] + C, tau, "M u̇ + C = τ",
                 scale=float(np.max(np.abs(M)) * np.max(np.abs(out["articulated"]))))


@SETTINGS
@given(sample=models_and_states(max_bodies=6, max_modes=12, rigid_probability=0.1))
def test_ruthless_split_with_many_modes(sample):
    """The ruthless split factors switch to Eq B3 for bodies with children and many modes."""
    model, q, u = sample.model, sample.q, sample.u
    tau = np.random.default_rng(10).normal(size=model.nu)
    M = fd.mass_matrix(model, q, "ruthless")
    ref = np.linalg.solve(M, tau - fd.bias_forces(model, q, u, "ruthless"))
    for method in ("articulated-split", "articulated"):
        got = fd.forward_dynamics(model, q, u, tau, method=method, fidelity="ruthless")
        assert_close(got, ref, f"{method} vs solve(M, τ − C), up to 12 modes")


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, use_f_ext=st.booleans())
def test_lemma5_dense_expression(sample, fidelity, use_f_ext):
    """Eq 57 with dense operators, gravity entering as the ground's acceleration through the
    root bodies' ``a_m``:

        χ̇ = [I − ℋΨK]* D⁻¹ [T − ℋΨ{KT + P a_m + b_m + K_m ϑ}] − K*Ψ* a_m
    """
    model, q, u = sample.model, sample.q, sample.u
    f_ext = sample.f_ext if use_f_ext else None
    tau = np.random.default_rng(5).normal(size=model.nu)
    kin, factors = innovations_factors(model, q, fidelity)
    vel = fd.compute_velocities(model, kin, u)
    d = dense_factors(model, kin, factors)
    g0 = np.concatenate([np.zeros(3), -model.gravity])
    a_m, b_m = [], []
    for i in range(model.n_bodies):
        m = int(model.n_modes[i])
        a = vel.a_m[i].astype(float).copy()
        if model.parent[i] < 0:
            a[m:] += kin.phi[i].T @ g0
        b = vel.b_m[i].copy()
        b[:m] += vel.elastic[i]  # K η + C η̇, with the stiffened models' geometric force
        if f_ext is not None:
            b[m:] -= f_ext[i]
        a_m.append(a)
        b_m.append(b)
    a_m, b_m = modal_stack(model, a_m), modal_stack(model, b_m)
    P, H, K, Psi = ops.P_dense(model, factors), d["H"], d["K"], d["Psi"]
    rhs = tau - H @ Psi @ (K @ tau + P @ a_m + b_m)
    chi_dot = d["L_inv"].T @ np.linalg.solve(d["D"], rhs) - K.T @ Psi.T @ a_m
    got = articulated_forward_dynamics(
        model, kin, vel, tau, check_external_forces(model, f_ext),
        factors=factors)
    assert_close(got, chi_dot, "Eq 58 sweeps vs Eq 57 dense")
    ref = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity=fidelity,
                              f_ext=f_ext)
    assert_close(chi_dot, ref, "Eq 57 dense vs composite")


# ---------------------------------------------------------------------------------------------
# Articulated-body quantities: Appendix A and the flexible/hinge split (Eqs 62–63)
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_articulated_quantities(sample, fidelity):
    """Appendix A's identities on every body.  Those that pass through ``D⁻¹`` hold to
    round-off times the condition number of ``D = ℋPℋ*`` (a light mode beside a heavy
    rigid inertia makes ``D`` ill-conditioned; Higham, *Accuracy and Stability*, Thm 14.1
    for the inverse), so their bound is ``RTOL + 16 ε κ(D)``; the rest keep ``RTOL``."""
    model, q = sample.model, sample.q
    kin = fd.compute_kinematics(model, q, fidelity)
    f = articulated_body_inertias(model, kin)
    for i in range(model.n_bodies):
        P, D, tau_bar, H = f.P[i], f.D[i], f.tau_bar[i], kin.Hcal[i]
        scale = float(np.max(np.abs(P)))
        kappa = float(np.linalg.cond(D)) if H.shape[0] else 1.0
        tol = RTOL + 16.0 * np.finfo(float).eps * kappa
        assert_close(P, P.T, f"P({i}) symmetric")
        # Appendix A: τ̄ P τ̄* = τ̄ P = P⁺, symmetric positive semi-definite, P⁺ℋ* = 0
        assert_close(tau_bar @ P @ tau_bar.T, tau_bar @ P, f"τ̄ P τ̄* = τ̄ P ({i}, κ(D) {kappa:.1e})",
                     scale=scale, tol=tol)
        assert_close(f.P_plus[i], tau_bar @ P, f"P⁺ = τ̄ P ({i})", scale=scale)
        assert_close(f.P_plus[i], f.P_plus[i].T, f"P⁺({i}) symmetric", scale=scale, tol=tol)
        assert np.min(np.linalg.eigvalsh(f.P_plus[i])) >= -tol * scale, i
        if H.shape[0]:
            assert np.max(np.abs(f.P_plus[i] @ H.T)) <= tol * scale, f"P⁺ℋ*({i}) = 0"
            # D(i) symmetric positive definite, D⁻¹ its inverse, G = Pℋ*D⁻¹
            assert_close(D, D.T, f"D({i}) symmetric")
            assert np.min(np.linalg.eigvalsh(0.5 * (D + D.T))) > 0.0, f"D({i}) not SPD"
            assert_close(f.D_inv[i] @ D, np.eye(D.shape[0]), f"D⁻¹ D ({i})", tol=tol)
            assert_close(f.G[i], P @ H.T @ f.D_inv[i], f"G({i})")
        # P(i) is only semi-definite in general: a mode may move the body frame like a
        # rigid motion (attachment node not clamped); D(i) above is definite
        assert np.min(np.linalg.eigvalsh(P)) >= -1e-10 * scale, f"P({i}) indefinite"


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_split_factors_agree_with_unsplit(sample, fidelity):
    """Eq 63 against Eq 51: ``P`` is identical (where the body model forms it; the ruthless
    flexible step forms only ``P^{rr}`` and ``μ``, which ``P_R = P^{rr} − g μ*`` checks),
    ``P_R⁺`` is the rigid block of ``P⁺``, ``D_f`` is the flexible block of ``D`` and ``D_R``
    its Schur complement, and ``G_R``, ``g`` are the gains of the two steps."""
    model, q = sample.model, sample.q
    kin = fd.compute_kinematics(model, q, fidelity)
    f = articulated_body_inertias(model, kin)
    s = articulated_body_inertias_split(model, kin)
    for i in range(model.n_bodies):
        m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
        if fidelity == "full" or s.P[i] is not None:
            assert_close(s.P[i], f.P[i], f"P({i})")
        mu = f.P[i][m:] @ kin.Hcal[i][nj:].T
        assert_close(s.P_R[i], f.P[i][m:, m:] - mu @ s.Df_inv[i] @ mu.T,
                     f"P_R({i}) = P^rr − μ D_f⁻¹ μ*", scale=float(np.max(np.abs(f.P[i]))))
        assert_close(s.P_R_plus[i], f.P_plus[i][m:, m:], f"P_R⁺({i}) = rigid block of P⁺",
                     scale=float(np.max(np.abs(f.P[i]))))
        D = f.D[i]
        Df, Dfr, Drr = D[nj:, nj:], D[nj:, :nj], D[:nj, :nj]
        if m:
            assert_close(s.Df_inv[i] @ Df, np.eye(m), f"D_f({i}) = ℋ_f P ℋ_f*")
            # P_R = P^{rr} − g μ*, the rigid inertia seen through the flexible step
            mu = f.P[i][m:] @ kin.Hcal[i][nj:].T
            assert_close(s.g[i], mu @ s.Df_inv[i], f"g({i})")
        D_R = Drr - Dfr.T @ s.Df_inv[i] @ Dfr if m else Drr
        if nj:
            assert_close(s.DR_inv[i] @ D_R, np.eye(nj), f"D_R({i}) = Schur complement of D")
            assert_close(s.G_R[i], s.P_R[i] @ kin.Hcal[i][:nj, m:].T @ s.DR_inv[i],
                         f"G_R({i})")


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, k=st.integers(1, 3))
def test_split_block_right_hand_sides(sample, fidelity, k):
    """Both sweeps accept blocks of right-hand sides and reuse precomputed factors."""
    model, q, u = sample.model, sample.q, sample.u
    kin = fd.compute_kinematics(model, q, fidelity)
    vel = fd.compute_velocities(model, kin, u)
    T = np.random.default_rng(6).normal(size=(model.nu, k))
    fs = articulated_body_inertias_split(model, kin)
    fu = articulated_body_inertias(model, kin)
    split = articulated_forward_dynamics_split(model, kin, vel, T, factors=fs)
    unsplit = articulated_forward_dynamics(model, kin, vel, T, factors=fu)
    cols = np.stack([articulated_forward_dynamics(model, kin, vel, T[:, c]) for c in range(k)],
                    axis=1)
    assert_close(split, cols, "split block vs columns")
    assert_close(unsplit, cols, "unsplit block vs columns")


# ---------------------------------------------------------------------------------------------
# rigid limit
# ---------------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=models(max_bodies=10, max_modes=0), seed=st.integers(0, 2**32 - 1),
       fidelity=FIDELITY)
def test_rigid_limit(d, seed, fidelity):
    """Without modes the articulated-body algorithm is the classical rigid one (the textbook
    ABA of the rigid reference where it has the joints)."""
    model = fd.Model.from_dict(d)
    assert not np.any(model.n_modes)
    rng = np.random.default_rng(seed)
    q = model.normalize_configuration(rng.normal(size=model.nq))
    u, tau = rng.normal(size=model.nu), rng.normal(size=model.nu)
    comp = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity=fidelity)
    for method in ("articulated", "articulated-split"):
        got = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity)
        assert_close(got, comp, f"{method} vs composite (rigid)")
    if all(b["joint"]["type"] in RIGID_JOINT_TYPES for b in d["bodies"]):
        assert_close(comp, RigidModel(d).aba(q, u, tau), "composite vs textbook ABA")


# ---------------------------------------------------------------------------------------------
# long chains: the articulated-body recursion must stay symmetric and stable
# ---------------------------------------------------------------------------------------------
def flexible_chain(n_bodies: int, n_modes: int) -> fd.Model:
    """Serial chain of cantilever beam links on revolute joints (axes alternating z, y),
    each attached at the last node of its parent."""
    flex = beam_modes(1.0, 2.0, EI_y=60.0, EI_z=50.0, n_elements=6,
                      n_modes=n_modes).to_flex_dict()
    bodies = []
    for i in range(n_bodies):
        joint = {"type": "revolute", "axis": [0, 0, 1] if i % 2 == 0 else [0, 1, 0],
                 "child_node": 0, "parent_node": None if i == 0 else 6}
        bodies.append({"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
                       "joint": joint, "flex": flex})
    return fd.Model.from_dict({"name": "chain", "gravity": [0, 0, -9.81], "bodies": bodies})


def test_long_chain_articulated_is_stable():
    """60 flexible links: the unsplit and split recursions agree and ``P(k)`` stays
    symmetric.  (Without symmetrization, the round-off asymmetry of ``P⁺ = τ̄ P`` grows
    geometrically along a chain until ``D(k)`` is reported singular.)"""
    model = flexible_chain(60, 4)
    rng = np.random.default_rng(8)
    q = model.neutral_configuration() + rng.uniform(-1.0, 1.0, size=model.nq) * 0.1
    u, tau = rng.normal(size=model.nu), rng.normal(size=model.nu)
    kin = fd.compute_kinematics(model, q)
    split = fd.forward_dynamics(model, q, u, tau, method="articulated-split")
    f = articulated_body_inertias(model, kin)
    for i in range(model.n_bodies):
        assert_close(f.P[i], f.P[i].T, f"P({i}) symmetric")
    got = fd.forward_dynamics(model, q, u, tau, method="articulated")
    assert_close(got, split, "articulated vs articulated-split, 60 links", tol=1e-9)


def test_long_chain_ruthless_split_many_modes():
    """24 links with 10 modes each, ruthless fidelity: the split algorithm (which uses the
    push-through form of Eq B3 for such bodies, a non-symmetric product unless symmetrized)
    agrees with the composite-body one to the accuracy that the mass matrix's conditioning
    (~1e11) allows."""
    model = flexible_chain(24, 10)
    rng = np.random.default_rng(9)
    q = model.neutral_configuration() + rng.uniform(-1.0, 1.0, size=model.nq) * 0.1
    u, tau = rng.normal(size=model.nu), rng.normal(size=model.nu)
    ref = fd.forward_dynamics(model, q, u, tau, method="composite", fidelity="ruthless")
    got = fd.forward_dynamics(model, q, u, tau, method="articulated-split", fidelity="ruthless")
    assert_close(got, ref, "ruthless split vs composite, 24 links × 10 modes", tol=1e-6)


# ---------------------------------------------------------------------------------------------
# singular articulated inertias
# ---------------------------------------------------------------------------------------------
EYE3 = np.eye(3).tolist()


def _pose(R, t) -> dict:
    return {"rotation": np.asarray(R, float).tolist(), "translation": np.asarray(t, float).tolist()}


def _beam_flex() -> dict:
    return beam_modes(1.0, 2.0, EI_z=50.0, EI_y=60.0, n_elements=4,
                              n_modes=2).to_flex_dict()


def massless_hub_on_free_joint() -> tuple[dict, str]:
    """A massless body on a free joint carrying a flexible body on a spherical joint at the
    same point: nothing resists the hub's rotation, so ``D(hub)`` (6 × 6) has rank 3."""
    hub = {"name": "hub", "parent": None, "joint": {"type": "free"}}
    arm = {"name": "arm", "parent": "hub", "joint": {"type": "spherical", "child_node": 0},
           "rigid": {"mass": 1.0, "com": [0.2, 0.0, 0.0],
                     "inertia": np.diag([0.1, 0.2, 0.2]).tolist()},
           "flex": _beam_flex()}
    return {"name": "massless hub", "gravity": [0, 0, -9.81], "bodies": [hub, arm]}, "hub"


def point_mass_on_axis() -> tuple[dict, str]:
    """A rigid tip body that is a point mass on its revolute axis: ``D(tip) = 0``."""
    base = {"name": "link", "parent": None,
            "joint": {"type": "revolute", "axis": [0, 0, 1], "child_node": 0},
            "flex": _beam_flex()}
    tip = {"name": "bob", "parent": "link",
           "joint": {"type": "revolute", "axis": [0, 0, 1], "parent_node": 4},
           "rigid": {"mass": 0.5, "com": [0, 0, 0], "inertia": np.zeros((3, 3)).tolist()}}
    return {"name": "point mass", "gravity": [0, -9.81, 0], "bodies": [base, tip]}, "bob"


def point_mass_on_tilted_axis() -> tuple[dict, str]:
    """:func:`point_mass_on_axis` with the body frame rotated and the mass off the frame
    origin (still on the axis): ``D(tip)`` is zero up to round-off."""
    d, name = point_mass_on_axis()
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]) @ np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    com = np.array([0.3, -0.2, 0.1])
    d["bodies"][1]["joint"]["child_placement"] = _pose(R, -R @ com + [0, 0, 0.4])
    d["bodies"][1]["rigid"]["com"] = com.tolist()
    return d, name


def massless_slider() -> tuple[dict, str]:
    """A massless body on a prismatic joint carrying a body on a prismatic joint along the
    same axis: nothing resists the slider's motion, ``D(slider) = 0`` (up to round-off)."""
    slider = {"name": "slider", "parent": None, "joint": {"type": "prismatic", "axis": [1, 0, 0]}}
    cart = {"name": "cart", "parent": "slider", "joint": {"type": "prismatic", "axis": [1, 0, 0]},
            "rigid": {"mass": 2.0, "com": [0.3, 0.1, 0.0],
                      "inertia": np.diag([0.1, 0.2, 0.25]).tolist()}}
    return {"name": "massless slider", "gravity": [0, 0, -9.81], "bodies": [slider, cart]}, "slider"


@pytest.mark.parametrize("method", ["articulated", "articulated-split"])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
@pytest.mark.parametrize(
    "build",
    [
        massless_hub_on_free_joint,
        point_mass_on_axis,
        point_mass_on_tilted_axis,
        massless_slider,
    ],
)
def test_singular_D_raises_naming_the_body(build, method, fidelity):
    d, name = build()
    model = fd.Model.from_dict(d)  # the loader accepts these models
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = model.normalize_configuration(rng.normal(size=model.nq))
        u = rng.normal(size=model.nu)
        try:
            out = fd.forward_dynamics(model, q, u, method=method, fidelity=fidelity)
        except ValueError as err:
            assert repr(name) in str(err), str(err)
            continue
        assert not np.any(np.isnan(out)), "returned NaN"
        pytest.fail(f"{method} returned {out} for a singular articulated inertia of {name!r}")
    if method == "articulated":
        with pytest.raises(ValueError, match=repr(name)):
            mass_matrix_inverse(model, q, fidelity)
