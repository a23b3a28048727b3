"""The ruthlessly linearized body model (Jain & Rodriguez Appendix B, Eqs B1–B4).

Under ruthless linearization every body matrix is evaluated at zero deformation and the
velocity products use the hinge rates only (Eq B1; Damaren & Sharf's RL model).  Everything
that does not depend on the joint coordinates is therefore computed **once per model**, by
:class:`RuthlessBodyModel` (one per body, registered for the ``"ruthless"`` fidelity in
:mod:`flexdyn.terms`):

* the node frames at ``η = 0``, ``M_m⁰``, the attach-node operators ``A(c)`` of every child,
  ``Q`` and ``ℋ`` (unless the joint map varies with ``q``);
* ``Λ = [ℋ_f M_m⁰ ℋ_f*]⁻¹``, ``ζ = ℋ_f [A(c₁), A(c₂), …]`` (one 6-column block per child
  ``c``), ``Υ = Λ ζ``, ``Ω = ζ* Υ`` (Eq B4);
* the quadratic form of the modal centrifugal forces, ``b_m,f = [Vᵀ B_μ V]_μ``, and the
  undeformed rigid inertia ``M_m⁰,rr`` so that ``b_m,r = V ×* M_m⁰,rr V`` (Eq B1).

Its flexible step (Eq B3) forms ``D_f⁻¹`` either explicitly (Cholesky) or with the
push-through form that needs no ``Γ⁻¹`` (``Γ`` is singular in general)::

    D_f⁻¹ = Λ − Υ Γ [I + Ω Γ]⁻¹ Υ*,   Γ = diag{φ(c) P_R⁺(c) φ*(c)}.

The explicit form costs O(n_m³) per body, the indirect one O(n_m²);
:data:`INDIRECT_MIN_MODES` selects between them (the paper switches at 8 modes).
"""

from __future__ import annotations

import numpy as np

from .body import FlexibleStep, NodeFrames, UndeformedBodyModel
from .linalg import SingularInertiaError, inertia_scale, spd_inverse, sym
from .spatial import cross_force

__all__ = ["INDIRECT_MIN_MODES", "RuthlessBodyModel", "RuthlessModel"]

#: Smallest number of modes of a body with children for which ``D_f⁻¹`` is formed with
#: the indirect procedure of Eq B3 (the paper: 8).  See ``benchmarks/bench_ruthless.py``.
INDIRECT_MIN_MODES = 8


class RuthlessBodyModel(UndeformedBodyModel):
    """Appendix B model of body ``i``: Eq B4 constants, Eq B1 terms, Eq B3 flexible step.

    Attributes
    ----------
    Hcal : (nu_j + m, m + 6) or None — ``ℋ(i)``; None when the joint map varies with ``q``.
    Hf : (m, m + 6) — ``ℋ_f = [I, Qᵀ]``.
    M_rf_Hf : (6, m) — ``[M⁰^{rf}, M⁰^{rr}] ℋ_f*``.
    D_f0 : (m, m) — ``Λ⁻¹ = ℋ_f M_m⁰ ℋ_f*``;  Lambda : (m, m) — ``Λ``.
    zeta, Upsilon : (m, 6 n_c) — ``ζ``, ``Υ = Λ ζ``;  Omega : (6 n_c, 6 n_c) — ``ζ* Υ``.
    B_quad : (m, 6, 6) — modal centrifugal quadratic forms;  M_rr : (6, 6) — ``M⁰^{rr}``.
    indirect_min_modes : int — Eq B3's push-through form from this many modes on.
    """

    def __init__(self, model, i: int, indirect_min_modes: int = INDIRECT_MIN_MODES):
        super().__init__(model, i)
        body = self.body
        m = body.n_modes
        frames0 = body.frames0
        self.indirect_min_modes = int(indirect_min_modes)
        kids = model.children[i]
        self.Hf = self._Hcal_neutral[model.joints[i].nu:]
        M0 = body.M_m0
        self.M_rr = M0[m:, m:]
        self.M_rf_Hf = M0[m:] @ self.Hf.T
        self.D_f0 = self.Hf @ M0 @ self.Hf.T
        self.Lambda = _ruthless_Lambda(self.D_f0, i, model.names[i])
        self.zeta = (np.hstack([self.Hf @ self.attach_node(frames0, model.parent_node[c]).A
                                for c in kids])
                     if kids else np.zeros((m, 0)))
        self.Upsilon = self.Lambda @ self.zeta
        self.Omega = self.zeta.T @ self.Upsilon
        self.B_quad = _centrifugal_quadratic_form(body)
        for a in (self.M_rr, self.M_rf_Hf, self.D_f0, self.Lambda, self.zeta,
                  self.Upsilon, self.Omega, self.B_quad):
            a.setflags(write=False)

    # -- velocity blocks: η̇ = 0 in every product (Eq B1) ----------------------------------
    def product_rates(self, eta_dot: np.ndarray) -> np.ndarray:
        return np.zeros_like(eta_dot)

    def modal_bias(self, frames: NodeFrames, eta_dot: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``b_m = [Vᵀ B_μ V; V ×* M⁰_rr V]`` (Eq B1)."""
        m = self.body.n_modes
        b = np.empty(m + 6, dtype=np.result_type(V, float))
        b[:m] = self.B_quad.reshape(m, 36) @ np.outer(V, V).ravel()
        b[m:] = cross_force(V, self.M_rr @ V)
        return b

    # -- Eq B3 ---------------------------------------------------------------------------------
    def flexible_step(self, M_m: np.ndarray, Hf: np.ndarray, children: list,
                      what: str) -> FlexibleStep:
        """Eq 63 without forming ``P``: ``P^{rr} = M⁰_rr + Σ_c A_r Γ A_r*``,
        ``μ = [M⁰_rf, M⁰_rr] ℋ_f* + Σ_c A_r Γ ζ_c*`` (``A_r`` the rigid rows of ``A(c)``) and
        ``D_f⁻¹``: ``Λ`` at a tip; the push-through form of Eq B3 from ``indirect_min_modes``
        modes on; else explicitly, ``[Λ⁻¹ + Σ_c ζ_c Γ(c) ζ_c*]⁻¹``."""
        m = self.body.n_modes
        P_rr, mu = self.M_rr, self.M_rf_Hf
        for k, (A, Gam) in enumerate(children):
            AG = A[m:] @ Gam
            P_rr = P_rr + AG @ A[m:].T
            mu = mu + AG @ self.zeta[:, 6 * k:6 * k + 6].T
        if not children:
            Df_inv = self.Lambda
        elif m >= self.indirect_min_modes:
            Gam = _block_diag([G for _, G in children])
            UG = self.Upsilon @ Gam
            X = np.linalg.solve((np.eye(Gam.shape[0]) + self.Omega @ Gam).T, UG.T)
            Df_inv = sym(self.Lambda - X.T @ self.Upsilon.T)
        else:
            Df = self.D_f0
            for k, (_, Gam) in enumerate(children):
                z = self.zeta[:, 6 * k:6 * k + 6]
                Df = Df + z @ Gam @ z.T
            Df_inv = spd_inverse(Df, f"articulated inertia D_f {what}", inertia_scale(P_rr, Hf))
        return FlexibleStep(P=None, P_rr=P_rr, mu=mu, Df_inv=Df_inv)


class RuthlessModel:
    """The :class:`RuthlessBodyModel` of every body of a model, with one Eq B3 rule.

    Parameters
    ----------
    model : Model
    indirect_min_modes : int — bodies with children and at least this many modes form
        ``D_f⁻¹`` by Eq B3; others by an explicit Cholesky inverse.

    Attributes
    ----------
    model, indirect_min_modes
    consts : tuple of :class:`RuthlessBodyModel` — pass as ``body_models`` to the functions
        of :mod:`flexdyn.terms`.
    """

    def __init__(self, model, indirect_min_modes: int = INDIRECT_MIN_MODES):
        self.model = model
        self.indirect_min_modes = int(indirect_min_modes)
        self.consts: tuple[RuthlessBodyModel, ...] = tuple(
            RuthlessBodyModel(model, i, indirect_min_modes) for i in range(model.n_bodies))


def _ruthless_Lambda(D_f0: np.ndarray, i: int, name: str) -> np.ndarray:
    """``Λ = D_f⁰⁻¹``; a singular ``D_f⁰`` raises naming the modes without inertia of their
    own (Eq B3 needs every body's own modal inertia invertible)."""
    try:
        return spd_inverse(D_f0, f"articulated inertia ℋ_f M_m⁰ ℋ_f* of body {i} {name!r}")
    except SingularInertiaError:
        w, v = np.linalg.eigh(D_f0)
        weights = np.abs(v[:, 0]) ** 2
        modes = [int(k) for k in np.flatnonzero(weights > 0.1 * weights.max())]
        raise SingularInertiaError(
            f"body {i} {name!r}: the ruthless model needs its own modal inertia "
            f"ℋ_f M_m⁰ ℋ_f* (Eq B4) invertible, but the combination of modes {modes} has "
            f"none (smallest eigenvalue {w[0]:.3g}): those modes move only massless nodes "
            "or repeat one another; give the nodes mass, drop the repeated mode, or use "
            "fidelity='full'") from None


def _block_diag(blocks: list) -> np.ndarray:
    n = 6 * len(blocks)
    out = np.zeros((n, n), dtype=np.result_type(*blocks))
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
