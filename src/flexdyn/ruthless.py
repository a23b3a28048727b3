"""Ruthless-linearization fast path (Jain & Rodriguez Appendix B, Eqs B1–B4, and Eq 63).

Under ruthless linearization every body matrix is evaluated at zero deformation and the
velocity products use the hinge rates only (Eq B1).  Everything that does not depend on
the joint coordinates is therefore computed **once per model** here:

* ``M_m⁰(i)``, ``ℋ(i)`` (unless the joint map varies with ``q``), ``A(c)`` of every child,
  ``Q(i)`` — the whole interbody geometry except the joint transform;
* ``Λ(i) = [ℋ_f M_m⁰ ℋ_f*]⁻¹``, ``ζ(i) = ℋ_f(i) [A(c₁), A(c₂), …]`` (one 6-column block
  per child ``c``), ``Υ = Λ ζ``, ``Ω = ζ* Υ`` (Eq B4);
* the quadratic form of the modal centrifugal forces, ``b_m,f = [Vᵀ B_μ V]_μ``, and the
  undeformed rigid inertia ``M_m⁰,rr`` so that ``b_m,r = V ×* M_m⁰,rr V``.

Per call only the joint transforms ``φ(i)``, the rigid velocities and the articulated
quantities are computed.  ``D_f⁻¹`` is formed either explicitly (Cholesky) or with the
push-through form of Eq B3 that needs no ``Γ⁻¹`` (``Γ`` is singular in general)::

    D_f⁻¹ = Λ − Υ Γ [I + Ω Γ]⁻¹ Υ*,   Γ = diag{φ(c) P_R⁺(c) φ*(c)}.

The explicit form costs O(n_m³) per body, the indirect one O(n_m²);
:data:`INDIRECT_MIN_MODES` selects between them (the paper switches at 8 modes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .articulated_body import (
    SplitFactors,
    _inertia_scale,
    _spd_inverse,
    _sym,
    articulated_forward_dynamics,
)
from .chain import Kinematics, Model, Velocities
from .composite_body import crba
from .newton_euler import rnea
from .spatial import cross_force, cross_motion

__all__ = ["RuthlessModel", "INDIRECT_MIN_MODES", "ruthless_model"]

#: Smallest number of modes of a body with children for which ``D_f⁻¹`` is formed with
#: the indirect procedure of Eq B3 (the paper: 8).  See ``benchmarks/bench_ruthless.py``.
INDIRECT_MIN_MODES = 8


@dataclass(frozen=True, eq=False)
class _BodyConstants:
    """Per-body constants of the ruthless model (see :class:`RuthlessModel`)."""

    Hcal: np.ndarray | None  # (nχ, m+6), None when the joint map varies with q
    Hf: np.ndarray  # (m, m+6)  ℋ_f = [I, Qᵀ]
    M_rf_Hf: np.ndarray  # (6, m)    [M⁰^{rf}, M⁰^{rr}] ℋ_f*
    Lambda: np.ndarray  # (m, m)    Λ = [ℋ_f M⁰ ℋ_f*]⁻¹
    D_f0: np.ndarray  # (m, m)    Λ⁻¹ = ℋ_f M⁰ ℋ_f*
    zeta: np.ndarray  # (m, 6 n_c)
    Upsilon: np.ndarray  # (m, 6 n_c)
    Omega: np.ndarray  # (6 n_c, 6 n_c)
    B_quad: np.ndarray  # (m, 6, 6) modal centrifugal quadratic forms
    M_rr: np.ndarray  # (6, 6) undeformed rigid-body inertia about F


class RuthlessModel:
    """Precomputed ruthless-linearization data of a :class:`~flexdyn.chain.Model` (Eq B4).

    Parameters
    ----------
    model : Model
    indirect_min_modes : int — bodies with children and at least this many modes form
        ``D_f⁻¹`` by Eq B3; others by an explicit Cholesky inverse.
    """

    def __init__(self, model: Model, indirect_min_modes: int = INDIRECT_MIN_MODES):
        self.model = model
        self.indirect_min_modes = indirect_min_modes
        from .chain import compute_kinematics

        kin0 = compute_kinematics(model, model.neutral_configuration(), "ruthless")
        self._kin0 = kin0
        self._const_S = [j.type != "universal" for j in model.joints]
        # constant geometry of each interbody step at η = 0: F_i in J_c, parent attach node
        self._T_Jc_i = [model.child_placement[i].compose(_child_node_inverse(kin0, model, i))
                        for i in range(model.n_bodies)]
        self._T_p_t = [
            kin0.frames[p].transform(pn) if p >= 0 and pn is not None else None
            for p, pn in zip(model.parent.tolist(), model.parent_node, strict=True)
        ]
        consts = []
        for i, body in enumerate(model.bodies):
            m = body.n_modes
            Hcal = kin0.Hcal[i]
            nj = int(model.nu_joint[i])
            Hf = Hcal[nj:]
            M0 = body.M_m0
            kids = model.children[i]
            if m:
                zeta = np.hstack([Hf @ kin0.A[c] for c in kids]) if kids else np.zeros((m, 0))
                D_f0 = Hf @ M0 @ Hf.T
                Lam = _spd_inverse(D_f0, model, i, "ℋ_f M_m⁰ ℋ_f*")
                Ups = Lam @ zeta
                Om = zeta.T @ Ups
            else:
                zeta = Ups = np.zeros((0, 6 * len(kids)))
                D_f0 = Lam = np.zeros((0, 0))
                Om = np.zeros((6 * len(kids), 6 * len(kids)))
            consts.append(_BodyConstants(
                Hcal=Hcal if self._const_S[i] else None,
                Hf=Hf,
                M_rf_Hf=M0[m:] @ Hf.T,
                Lambda=Lam,
                D_f0=D_f0,
                zeta=zeta,
                Upsilon=Ups,
                Omega=Om,
                B_quad=_centrifugal_quadratic_form(body),
                M_rr=M0[m:, m:],
            ))
        self.consts: tuple[_BodyConstants, ...] = tuple(consts)

    # -- per-state terms ----------------------------------------------------------------------
    def kinematics(self, q: np.ndarray) -> Kinematics:
        """Ruthless :class:`Kinematics` at ``q``: only joint transforms are evaluated."""
        model, k0 = self.model, self._kin0
        model.check_state(q)
        n = model.n_bodies
        T_parent, phi, pose, S, Hcal = [None] * n, [None] * n, [None] * n, list(k0.S), []
        for i in range(n):
            joint = model.joints[i]
            qj = model.q_joint(q, i)
            T = model.placement[i].compose(joint.transform(qj)).compose(self._T_Jc_i[i])
            T_parent[i] = T
            phi[i] = T.phi()
            p = int(model.parent[i])
            if p >= 0:
                T_t = self._T_p_t[i]
                pose[i] = (pose[p].compose(T_t) if T_t is not None else pose[p]).compose(T)
            else:
                pose[i] = T
            if self._const_S[i]:
                Hcal.append(self.consts[i].Hcal)
            else:
                m, nj = int(model.n_modes[i]), joint.nu
                S[i] = joint.motion_subspace(qj)
                H = k0.Hcal[i].astype(np.result_type(k0.Hcal[i], S[i]))
                H[:nj, m:] = (k0.T_joint[i].motion_to_parent() @ S[i]).T
                Hcal.append(H)
        eta = [model.eta(q, i) for i in range(n)]
        return Kinematics(model=model, q=np.asarray(q), fidelity="ruthless", eta=eta,
                          frames=k0.frames, pose=pose, T_parent=T_parent, phi=phi, A=k0.A,
                          E_t=k0.E_t, T_joint=k0.T_joint, S=S, Hcal=Hcal, Q=k0.Q, M_m=k0.M_m)

    def velocities(self, kin: Kinematics, u: np.ndarray) -> Velocities:
        """``a_m``, ``b_m`` of Eq B1 from the rigid velocities (``η̇ = 0`` in the products).

        ``V̄(i) = φ*(i) φ*(p, t_i) V̄(p) + H_F* β``,  ``a_m = [0; X_{i←J_c} Ḣ* β + V̄ × H_F* β]``,
        ``b_m = [V̄ᵀ B_μ V̄; V̄ ×* M⁰_rr V̄]``.
        """
        model = self.model
        model.check_state(kin.q, u)
        n = model.n_bodies
        V: list = [None] * n
        a_m: list = [None] * n
        b_m: list = [None] * n
        V_m: list = [None] * n
        for i in range(n):
            m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
            beta = model.u_joint(u, i)
            HFb = kin.Hcal[i][:nj, m:].T @ beta
            p = int(model.parent[i])
            Vi = HFb.copy()
            if p >= 0:
                Vi += kin.phi[i].T @ (kin.A[i][int(model.n_modes[p]):].T @ V[p])
            V[i] = Vi
            aV = cross_motion(Vi, HFb)
            if model.joints[i].type == "universal":
                aV += kin.T_joint[i].motion_to_parent() @ model.joints[i].motion_subspace_rate(
                    model.q_joint(kin.q, i), beta)
            c = self.consts[i]
            am = np.zeros(m + 6, dtype=aV.dtype)
            am[m:] = aV
            bm = np.empty(m + 6, dtype=aV.dtype)
            bm[:m] = c.B_quad.reshape(m, 36) @ np.outer(Vi, Vi).ravel() if m else 0.0
            bm[m:] = cross_force(Vi, c.M_rr @ Vi)
            a_m[i], b_m[i] = am, bm
            Vm = kin.Hcal[i].T @ u[model.u_slice(i)]  # true modal velocity, Eq 11
            if p >= 0:
                Vm[m:] += kin.phi[i].T @ (kin.A[i].T @ V_m[p])
            V_m[i] = Vm
        eta_dot = [model.eta_dot(u, i) for i in range(n)]
        return Velocities(V_m=V_m, a_m=a_m, b_m=b_m, eta_dot=eta_dot)

    def split_factors(self, kin: Kinematics) -> SplitFactors:
        """Articulated-body quantities of Eq 63 with ``D_f⁻¹`` from Eq B3 where cheaper."""
        model = self.model
        n = model.n_bodies
        Df_inv, g, P_R, DR_inv, G_R, P_R_plus = ([None] * n for _ in range(6))
        for i in reversed(range(n)):  # tip-to-base
            m, nj = int(model.n_modes[i]), int(model.nu_joint[i])
            c = self.consts[i]
            kids = model.children[i]
            P_rr = c.M_rr.copy()
            mu = c.M_rf_Hf.copy()  # [P^{rf}, P^{rr}] ℋ_f*
            Gammas = []
            for k, ch in enumerate(kids):
                Gam = kin.phi[ch] @ P_R_plus[ch] @ kin.phi[ch].T  # Γ(c) at the attach node
                Gammas.append(Gam)
                AG = kin.A[ch][m:] @ Gam  # φ(i, t_c) Γ(c)
                P_rr += AG @ kin.A[ch][m:].T
                if m:
                    mu += AG @ c.zeta[:, 6 * k:6 * k + 6].T
            H = kin.Hcal[i]
            scale = _inertia_scale(P_rr, H[:nj, m:])
            if m:
                if not kids:
                    Df_inv[i] = c.Lambda
                elif m >= self.indirect_min_modes:  # Eq B3, push-through form
                    Gam = Gammas[0] if len(kids) == 1 else _block_diag(Gammas)
                    UG = c.Upsilon @ Gam
                    X = np.linalg.solve((np.eye(Gam.shape[0]) + c.Omega @ Gam).T, UG.T)
                    Df_inv[i] = _sym(c.Lambda - X.T @ c.Upsilon.T)
                else:  # explicit: D_f = Λ⁻¹ + Σ_c ζ_c Γ(c) ζ_c*
                    Df = c.D_f0.copy()
                    for k, Gam in enumerate(Gammas):
                        z = c.zeta[:, 6 * k:6 * k + 6]
                        Df += z @ Gam @ z.T
                    Df_inv[i] = _spd_inverse(Df, model, i, "D_f", scale)
                g[i] = mu @ Df_inv[i]
                P_R[i] = _sym(P_rr - g[i] @ mu.T)
            else:
                Df_inv[i], g[i], P_R[i] = np.zeros((0, 0)), np.zeros((6, 0)), P_rr
            H_F = kin.Hcal[i][:nj, m:]
            PH = P_R[i] @ H_F.T
            DR_inv[i] = _spd_inverse(H_F @ PH, model, i, "D_R", scale)
            G_R[i] = PH @ DR_inv[i]
            P_R_plus[i] = _sym(P_R[i] - G_R[i] @ PH.T)
        return SplitFactors(P=None, Df_inv=Df_inv, g=g, P_R=P_R, DR_inv=DR_inv, G_R=G_R,
                            P_R_plus=P_R_plus)

    # -- algorithms -----------------------------------------------------------------------------
    def forward_dynamics(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                         f_ext: np.ndarray | None = None) -> np.ndarray:
        """Articulated-body forward dynamics (Eqs 63–64) on the precomputed ruthless model."""
        kin = self.kinematics(q)
        vel = self.velocities(kin, u)
        return articulated_forward_dynamics(self.model, kin, vel, tau, f_ext, split=True,
                                            factors=self.split_factors(kin))

    def composite_forward_dynamics(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                                   f_ext: np.ndarray | None = None) -> np.ndarray:
        """Composite-body forward dynamics (Eq 46) on the precomputed ruthless model."""
        from .composite_body import solve_mass_matrix

        kin = self.kinematics(q)
        vel = self.velocities(kin, u)
        M = crba(self.model, kin)
        C = rnea(self.model, kin, vel, np.zeros(self.model.nu), f_ext)
        return solve_mass_matrix(M, tau - C)


def _child_node_inverse(kin0: Kinematics, model: Model, i: int):
    """Pose of ``F_i`` in its own (undeformed) attach node frame."""
    from .spatial import Transform

    cn = model.child_node[i]
    return Transform.identity() if cn is None else kin0.frames[i].transform(cn).inverse()


def _block_diag(blocks: list) -> np.ndarray:
    n = 6 * len(blocks)
    out = np.zeros((n, n))
    for k, B in enumerate(blocks):
        out[6 * k:6 * k + 6, 6 * k:6 * k + 6] = B
    return out


def _centrifugal_quadratic_form(body) -> np.ndarray:
    """``B_μ`` (m, 6, 6) with ``b_m,f(V) = [Vᵀ B_μ V]_μ`` at ``η = 0``, ``η̇ = 0`` (Eq B1),
    obtained by polarization of the exact quadratic ``Body.modal_bias``."""
    m = body.n_modes
    B = np.zeros((m, 6, 6))
    if m == 0:
        return B
    zero = np.zeros(m)
    E = np.eye(6)
    diag = [body.modal_bias(body.frames0, zero, E[a])[:m] for a in range(6)]
    for a in range(6):
        B[:, a, a] = diag[a]
        for b in range(a + 1, 6):
            off = 0.5 * (body.modal_bias(body.frames0, zero, E[a] + E[b])[:m] - diag[a] - diag[b])
            B[:, a, b] = B[:, b, a] = off
    return B


def ruthless_model(model: Model) -> RuthlessModel:
    """The :class:`RuthlessModel` of ``model``, built on first use and cached on it."""
    rm = getattr(model, "_ruthless_cache", None)
    if rm is None:
        rm = RuthlessModel(model)
        model._ruthless_cache = rm
    return rm
