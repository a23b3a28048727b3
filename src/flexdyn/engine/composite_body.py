"""The composite-body mass matrix (Eqs 47–50) and the congruence of a child's inertia at its
parent's attach node (shared with the articulated inertias)."""

from __future__ import annotations

from .algebra import copy, mm, mmt, pose_congruence
from .jit import helper
from .layout import AT, MODES, NJ, PARENT, US
from .tip import node_wrench

__all__ = ["attach_congruence", "child_inertia", "composite_inertias", "crba"]


@helper
def attach_congruence(Et, R_t, p_t, R, p, X, out, T, Y, EY):
    """``out += A φ X φᵀ Aᵀ`` ((m + 6) × (m + 6)) for ``A = [E_t*; φ(t)]`` (Eqs 12, 14: the
    parent's attach node ``t`` of pose ``(R_t, p_t)``, ``Et`` = ``E_t*`` (m × 6)), φ of pose
    ``(R, p)`` and a symmetric ``X``: with ``Y = φ X φᵀ`` (``pose_congruence``) the blocks
    ``[[E_t* Y E_t, E_t* Y φ(t)ᵀ], [φ(t) Y E_t, φ(t) Y φ(t)ᵀ]]``, the modal block by its
    upper triangle: about 720 flops for m = 4 against 1320 for forming ``A φ`` and its
    congruence.  ``T`` (3, 3, 3), ``Y`` (6 × 6) and ``EY`` ((m + 1) × 6) scratch."""
    m = Et.shape[0]
    Y[:, :] = 0.0
    pose_congruence(R, p, X, Y, T)
    pose_congruence(R_t, p_t, Y, out[m:, m:], T)
    col = EY[m]
    for k in range(m):
        row = EY[k]  # E_t* Y, row k
        for c in range(6):
            x = 0.0
            for r in range(6):
                x += Et[k, r] * Y[r, c]
            row[c] = x
        for c in range(k, m):
            x = 0.0
            for r in range(6):
                x += row[r] * Et[c, r]
            out[k, c] += x
            if c > k:
                out[c, k] += x
        col[:] = 0.0
        node_wrench(R_t, p_t, Y, 0, row, col)  # φ(t) Y E_t, column k
        for r in range(6):
            out[m + r, k] += col[r]
            out[k, m + r] += col[r]


@helper
def child_inertia(ints, A, R_t, p_t, R_phi, p_phi, P, i, X, T, Y, EY):
    """``P(p) += A φ X φᵀ Aᵀ``: a child's symmetric 6 × 6 inertia ``X`` at F_i into its
    parent's, from φ's pose (``pose_congruence``) where ``A`` is trivial, else with
    ``A``'s structure (``attach_congruence``); ``T`` (3, 3, 3), ``Y`` (6 × 6) and ``EY``
    ((M + 1) × 6) scratch."""
    pa = ints[i, PARENT]
    mp = ints[pa, MODES]
    if ints[i, AT] == 1:
        pose_congruence(R_phi[i], p_phi[i], X, P[pa, mp:mp + 6, mp:mp + 6], T)
    else:
        attach_congruence(A[i, :mp], R_t[i], p_t[i], R_phi[i], p_phi[i], X,
                          P[pa, :mp + 6, :mp + 6], T, Y, EY[:mp + 1])


@helper
def composite_inertias(pm, w):
    """Eq 47: ``R(i) = M_m(i) + Σ_c A φ R_rr(c) φᵀ Aᵀ`` into ``w.P``."""
    ints = pm.ints
    copy(w.M_m, w.P)
    for i in range(ints.shape[0] - 1, -1, -1):
        pa = ints[i, PARENT]
        if pa >= 0:
            m = ints[i, MODES]
            copy(w.P[i, m:m + 6, m:m + 6], w.t_66[0])
            child_inertia(ints, w.A, w.R_t, w.p_t, w.R_phi, w.p_phi, w.P, i, w.t_66[0],
                          w.t_33, w.t_66[1], w.t_EY)


@helper
def crba(pm, w, Mass):
    """Eqs 47, 50: composite inertias and the mass matrix (:func:`flexdyn.composite_body.crba`)
    into ``Mass`` (nu × nu)."""
    ints = pm.ints
    composite_inertias(pm, w)
    Mass[:, :] = 0.0  # blocks of bodies on different branches stay zero
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        k, s = nj + m, m + 6
        H = w.Hcal[i, :k, :s]
        X = w.t_X[:s, :k]
        mmt(w.P[i, :s, :s], H, X, False)
        mm(H, X, Mass[us:us + k, us:us + k])
        b, j = i, ints[i, PARENT]
        while j >= 0:  # X ← A φ X_rr up the path; M(j, i) = ℋ(j) X
            mb, mj, njj, usj = ints[b, MODES], ints[j, MODES], ints[j, NJ], ints[j, US]
            Y = w.t_Y[:6, :k]
            mm(w.phi[b], X[mb:mb + 6], Y)
            X = w.t_X[:mj + 6, :k]
            if ints[b, AT] == 1:
                X[:mj] = 0.0
                copy(Y, X[mj:])
            else:
                mm(w.A[b, :mj + 6], Y, X)
            blk = Mass[usj:usj + njj + mj, us:us + k]
            mm(w.Hcal[j, :njj + mj, :mj + 6], X, blk)
            copy(blk.T, Mass[us:us + k, usj:usj + njj + mj])
            b, j = j, ints[j, PARENT]
