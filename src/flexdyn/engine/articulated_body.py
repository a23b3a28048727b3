"""The articulated-body filter and smoother (Eqs 51, 58) with a mask of prescribed
accelerations (hybrid dynamics, :mod:`flexdyn.hybrid`), its singularity test and the fixed-size
step of a rigid body on a one-dof joint."""

from __future__ import annotations

import math

from ..linalg import PIVOT_FLOOR, PIVOT_RTOL
from .algebra import copy, mm, mtv, mv
from .composite_body import child_inertia
from .forces import sub_mtv
from .jit import helper
from .layout import MODES, NJ, PARENT, US
from .newton_euler import gravity_acceleration, parent_acceleration
from .terms import to_parent

__all__ = ["any", "articulated_accelerations", "articulated_inertias", "Hcal_X", "inertia_scale",
           "P_Hcal_t", "prescribed_acceleration", "prescribed_loads", "rigid_one_dof_acceleration",
           "rigid_one_dof_step", "spd_inverse", "sub_mv", "symmetrize"]


@helper
def inertia_scale(P, H, skip=None):
    """``max|P| · max_r ‖H_r‖²`` (:func:`flexdyn.linalg.inertia_scale`); 0 for an empty
    ``H``.  ``skip`` (optional, (rows,) or empty): rows ``r`` with ``skip[r] ≠ 0`` are left
    out (the prescribed rows of hybrid dynamics)."""
    if H.shape[0] == 0 or H.shape[1] == 0:
        return 0.0
    hmax = 0.0
    for r in range(H.shape[0]):
        if skip is not None:
            if skip.shape[0] > 0 and skip[r] != 0.0:
                continue
        h = 0.0
        for c in range(H.shape[1]):
            h += H[r, c] * H[r, c]
        hmax = max(hmax, h)
    pmax = 0.0
    for r in range(P.shape[0]):
        for c in range(P.shape[1]):
            pmax = max(pmax, abs(P[r, c]))
    return pmax * hmax


@helper
def spd_inverse(D, scale, L, Dinv):
    """``Dinv = D⁻¹`` by Cholesky with the reference's singularity test
    (:func:`flexdyn.linalg.spd_inverse`): a squared pivot at most
    ``max(PIVOT_RTOL · max diag D, PIVOT_FLOOR · scale)`` fails (False); ``L`` scratch."""
    k = D.shape[0]
    dmax = 0.0
    for j in range(k):
        dmax = max(dmax, abs(D[j, j]))
    tol = max(PIVOT_RTOL * dmax, PIVOT_FLOOR * scale, 2.2250738585072014e-308)
    for j in range(k):
        s = D[j, j]
        for r in range(j):
            s -= L[j, r] * L[j, r]
        if not s > tol:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, k):
            s = D[i, j]
            for r in range(j):
                s -= L[i, r] * L[j, r]
            L[i, j] = s / d
    for c in range(k):  # L⁻¹ into the upper triangle of Dinv (transposed), then Dinv = L⁻ᵀL⁻¹
        for r in range(k):
            Dinv[r, c] = 0.0
    for c in range(k):
        Dinv[c, c] = 1.0 / L[c, c]
        for r in range(c + 1, k):
            s = 0.0
            for t in range(c, r):
                s -= L[r, t] * Dinv[c, t]
            Dinv[c, r] = s / L[r, r]
    for r in range(k):  # (L⁻ᵀ L⁻¹)[r, c] = Σ_t Li[t, r] Li[t, c], Li[t, r] = Dinv[r, t]
        for c in range(r, k):
            s = 0.0
            for t in range(c, k):
                s += Dinv[r, t] * Dinv[c, t]
            L[r, c] = s
    for r in range(k):
        for c in range(r, k):
            Dinv[r, c] = L[r, c]
            Dinv[c, r] = L[r, c]
    return True


@helper
def articulated_inertias(pm, w, tau, prescribed, udot_known):
    """Eq 51 and the filter, tip to base: ``P``, ``D⁻¹``, ``G``, ``ν = D⁻¹ ε`` into ``w``,
    each body's ``z⁺`` and ``τ̄ P`` passed to its parent; the index of the first body whose
    ``D`` is singular, or −1.  A rigid body on a one-dof joint takes a step with fixed
    6 × 6 blocks (``rigid_one_dof_step``), any other body the general step
    (``_articulated_step``).

    Hybrid dynamics (:mod:`flexdyn.hybrid`): ``prescribed`` (nu,) is 1.0 where the
    acceleration is given by ``udot_known`` (nu,) and 0.0 where the force ``tau`` is; None
    (both None) or empty: every entry free (Eq 51).  A body with prescribed rows ``K`` takes
    ``_prescribed_step``: the general step with its mask (the rows ``K`` of ``ℋ`` are
    kept out of ``D``, ``G`` and ``τ̄ P``), its known accelerations entering the filter as
    ``a_m + ℋ_K* χ̇_K`` (in ``w.alpha``, which the smoother overwrites), and ``ν`` holding
    ``χ̇_K`` on the rows ``K``: with ``G``'s columns ``K`` zero,
    :func:`articulated_accelerations` returns them as given.  With None, numba prunes the
    hybrid branch: forward dynamics passes None and compiles no hybrid step."""
    ints = pm.ints
    copy(w.M_m, w.P)  # the children's inertias are added to their parents' below
    w.z[:] = 0.0
    zp, Pr = w.t_6[0], w.t_66[0]
    for i in range(ints.shape[0] - 1, -1, -1):
        m, nj, us, pa = ints[i, MODES], ints[i, NJ], ints[i, US], ints[i, PARENT]
        k, s = nj + m, m + 6
        if prescribed is not None and any(prescribed[us:us + k]):
            ok = _prescribed_step(w.P[i, :s, :s], w.Hcal[i, :k, :s], m, nj, w.a_m[i, :s],
                                  w.bias[i, :s], tau[us:us + k], w.z[i, :s], w.G[i, :s, :k],
                                  w.innov[i, :k], w.t_PH[:s, :k], w.t_D[:k, :k],
                                  w.t_L[:k, :k], w.t_Li[:k, :k], w.t_v[:k], zp, Pr,
                                  prescribed[us:us + k], udot_known[us:us + k],
                                  w.alpha[i, :s])
        elif m == 0 and nj == 1:
            ok = rigid_one_dof_step(w.P[i, :6, :6], w.Hcal[i, 0, :6], w.a_m[i, :6],
                                    w.bias[i, :6], tau[us], w.z[i, :6], w.G[i, :6, 0],
                                    w.innov[i, :1], w.t_6[1], zp, Pr)
        else:
            ok = _articulated_step(w.P[i, :s, :s], w.Hcal[i, :k, :s], m, nj, w.a_m[i, :s],
                                   w.bias[i, :s], tau[us:us + k], w.z[i, :s], w.G[i, :s, :k],
                                   w.innov[i, :k], w.t_PH[:s, :k], w.t_D[:k, :k],
                                   w.t_L[:k, :k], w.t_Li[:k, :k], w.t_v[:k], zp, Pr, None)
        if not ok:
            return i
        if pa >= 0:
            to_parent(ints, w.A, w.phi, i, zp, w.z, w.t_6[3])
            child_inertia(ints, w.A, w.R_t, w.p_t, w.R_phi, w.p_phi, w.P, i, Pr, w.t_33,
                          w.t_66[1], w.t_EY)
    return -1


@helper
def _prescribed_step(P, H, m, nj, a_m, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr,
                     known, udot, a):
    """``_articulated_step`` of a body with prescribed rows ``K`` (``known[r] ≠ 0``,
    accelerations ``udot`` (k,)): with ``a = a_m + ℋ_K* χ̇_K`` (``prescribed_acceleration``,
    into ``a`` (s,)) and the mask ``known``, then ``ν`` = ``χ̇_K`` on the rows ``K``."""
    prescribed_acceleration(H, known, udot, a_m, a)
    if not _articulated_step(P, H, m, nj, a, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr,
                             known):
        return False
    for r in range(known.shape[0]):
        if known[r] != 0.0:
            innov[r] = udot[r]
    return True


@helper
def any(x):
    """Whether some entry of the vector ``x`` is nonzero."""
    for v in x:
        if v != 0.0:
            return True
    return False


@helper
def prescribed_acceleration(H, known, udot, a_m, out):
    """``out = a_m + ℋ_K* χ̇_K`` (s,): the accelerations of the prescribed rows ``K``
    (``known[r] ≠ 0``) of ``ℋ`` (k × s) enter the filter like the velocity-product
    accelerations ``a_m`` (:mod:`flexdyn.hybrid`)."""
    copy(a_m, out)
    for r in range(H.shape[0]):
        if known[r] != 0.0:
            x = udot[r]
            for c in range(H.shape[1]):
                out[c] += H[r, c] * x


@helper
def _articulated_step(P, H, m, nj, a, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr, known):
    """Eq 51 and the filter for one body with ``P`` (s × s) its articulated inertia and ``z``
    (s,) the children's forces: ``D = ℋ P ℋ*``, ``G = P ℋ* D⁻¹``, ``z += P a + b``,
    ``ε = T − ℋ z``, ``ν = D⁻¹ ε`` into ``innov``; the rigid rows of ``z⁺ = z + G ε`` into
    ``zp`` and the rigid block of ``τ̄ P = P − G (P ℋ*)ᵀ``, symmetrized, into ``Pr``; False
    when ``D`` is singular (``spd_inverse``).  ``PH``, ``D``, ``L``, ``Dinv``, ``eps``
    scratch.

    ``known`` (k,) or None: the rows ``r`` with ``known[r] ≠ 0`` are prescribed (hybrid
    dynamics) and kept out of the reduction by ``ℋ̃`` = ``ℋ`` with those rows zeroed:
    ``P ℋ̃*`` has zero columns ``K`` and ``D̃ = ℋ̃ P ℋ̃* + d 1_K`` (``_keep_out``) is
    ``D_F`` beside ``d`` on the rows ``K``, so ``G̃ = P ℋ̃* D̃⁻¹ = [G_F, 0]`` and
    ``τ̄ P = P − G_F (P ℋ_F*)ᵀ``: exactly the free rows' reduction, with the free rows'
    singularity test (the inertia scale over the free rows; ``d`` = the largest free
    diagonal entry).  ``ν`` on the rows ``K`` is meaningless (the caller sets it)."""
    k, s = H.shape[0], P.shape[0]
    P_Hcal_t(P, H, m, nj, PH)
    if known is not None:
        for c in range(k):
            if known[c] != 0.0:
                PH[:, c] = 0.0
    Hcal_X(H, PH, m, nj, D)
    if known is not None:
        _keep_out(D, known)
    if not spd_inverse(D, inertia_scale(P, H, known), L, Dinv):
        return False
    mm(PH, Dinv, G)
    mv(P, a, z, True)  # z = Σ_c Φ z⁺(c) + P a + b
    for r in range(s):
        z[r] += b[r]
    copy(tau, eps)
    sub_mv(H, z, eps)
    mv(Dinv, eps, innov, False)
    for r in range(6):
        t = z[m + r]
        for c in range(k):
            t += G[m + r, c] * eps[c]
        zp[r] = t
    for r in range(6):
        for c in range(6):
            t = P[m + r, m + c]
            for j in range(k):
                t -= G[m + r, j] * PH[m + c, j]
            Pr[r, c] = t
    symmetrize(Pr)
    return True


@helper
def _keep_out(D, known):
    """``D`` (k × k) with the rows and columns ``r`` of ``known[r] ≠ 0`` replaced by
    ``d`` on the diagonal, ``d`` the largest diagonal entry of the other rows (1 if there
    are none): block-diagonal up to the order of the rows, so its Cholesky factor is the
    free block's and ``spd_inverse``'s tolerance is the free block's."""
    k = D.shape[0]
    d = 0.0
    for r in range(k):
        if known[r] == 0.0:
            d = max(d, abs(D[r, r]))
    if not d > 0.0:
        d = 1.0
    for r in range(k):
        if known[r] != 0.0:
            for c in range(k):
                D[r, c] = 0.0
                D[c, r] = 0.0
            D[r, r] = d


@helper
def rigid_one_dof_step(P, h, a, b, tau, z, G, innov, PH, zp, Pr):
    """``_articulated_step`` of a rigid body (``m = 0``, ``s = 6``) on a one-dof joint
    (``ℋ = h``, one row; ``D`` a scalar), with fixed 6 × 6 loops; the same singularity test
    (a pivot at most ``max(PIVOT_RTOL · D, PIVOT_FLOOR · max|P| |h|²)``); ``PH`` (6,)
    scratch."""
    D = 0.0
    hh = 0.0
    pmax = 0.0
    for r in range(6):
        t = 0.0
        for c in range(6):
            t += P[r, c] * h[c]
            pmax = max(pmax, abs(P[r, c]))
        PH[r] = t
        D += h[r] * t
        hh += h[r] * h[r]
    if not D > max(PIVOT_RTOL * abs(D), PIVOT_FLOOR * pmax * hh, 2.2250738585072014e-308):
        return False
    Dinv = 1.0 / D
    eps = tau
    for r in range(6):
        t = b[r]
        for c in range(6):
            t += P[r, c] * a[c]
        z[r] += t
        eps -= h[r] * z[r]
    innov[0] = Dinv * eps
    for r in range(6):
        G[r] = PH[r] * Dinv
        zp[r] = z[r] + G[r] * eps
        for c in range(6):
            Pr[r, c] = P[r, c] - G[r] * PH[c]
    symmetrize(Pr)
    return True


@helper
def symmetrize(X):
    """``X ← (X + Xᵀ) / 2`` for a square block (:func:`flexdyn.linalg.sym`)."""
    for r in range(X.shape[0]):
        for c in range(r + 1, X.shape[0]):
            t = 0.5 * (X[r, c] + X[c, r])
            X[r, c] = t
            X[c, r] = t


@helper
def P_Hcal_t(P, H, m, nj, out):
    """``out = P ℋᵀ`` (s × k) using the structure ``ℋ = [[0, H_F], [1, Qᵀ]]``: the columns
    are ``P[:, m:] ℋ[r, m:]ᵀ``, plus ``P[:, r − nj]`` for the modal rows (6 s k products
    instead of s² k)."""
    s, k = P.shape[0], H.shape[0]
    for r in range(s):
        p0, p1, p2 = P[r, m], P[r, m + 1], P[r, m + 2]
        p3, p4, p5 = P[r, m + 3], P[r, m + 4], P[r, m + 5]
        for c in range(k):
            out[r, c] = (p0 * H[c, m] + p1 * H[c, m + 1] + p2 * H[c, m + 2]
                         + p3 * H[c, m + 3] + p4 * H[c, m + 4] + p5 * H[c, m + 5])
        for c in range(m):
            out[r, nj + c] += P[r, c]


@helper
def Hcal_X(H, X, m, nj, out):
    """``out = ℋ X`` ((k × c) from X (s × c)) using the structure of ℋ (see
    ``P_Hcal_t``)."""
    k = H.shape[0]
    for r in range(k):
        h0, h1, h2 = H[r, m], H[r, m + 1], H[r, m + 2]
        h3, h4, h5 = H[r, m + 3], H[r, m + 4], H[r, m + 5]
        for c in range(X.shape[1]):
            out[r, c] = (h0 * X[m, c] + h1 * X[m + 1, c] + h2 * X[m + 2, c]
                         + h3 * X[m + 3, c] + h4 * X[m + 4, c] + h5 * X[m + 5, c])
    for r in range(m):
        for c in range(X.shape[1]):
            out[nj + r, c] += X[r, c]


@helper
def sub_mv(a, x, out):
    """``out −= a x``."""
    for i in range(a.shape[0]):
        s = out[i]
        for t in range(a.shape[1]):
            s -= a[i, t] * x[t]
        out[i] = s


@helper
def articulated_accelerations(pm, w, udot):
    """Eq 58, base to tip: ``χ = ν − Gᵀ a⁺``, ``α = a⁺ + ℋ* χ + a`` into ``udot``."""
    ints = pm.ints
    a_g = w.t_6[2]
    gravity_acceleration(pm, a_g)
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        k, s = nj + m, m + 6
        al = w.alpha[i, :s]
        al[:m] = 0.0
        parent_acceleration(ints, w.A, w.phi, w.alpha, i, a_g, al[m:], w.t_6[1])
        if m == 0 and nj == 1:
            udot[us] = rigid_one_dof_acceleration(w.G[i, :6, 0], w.Hcal[i, 0, :6],
                                                  w.a_m[i, :6], w.innov[i, 0], al)
            continue
        chi = udot[us:us + k]
        copy(w.innov[i, :k], chi)
        sub_mtv(w.G[i, :s, :k], al, chi)
        mtv(w.Hcal[i, :k, :s], chi, al, True)
        for r in range(6):
            al[m + r] += w.a_m[i, m + r]


@helper
def rigid_one_dof_acceleration(G, h, a, nu, al):
    """Eq 58 for a rigid body on a one-dof joint, with fixed loops: ``χ = ν − Gᵀ a⁺``
    (returned) and ``α = a⁺ + h χ + a`` into ``al`` (6,), which holds ``a⁺`` on entry."""
    chi = nu - (G[0] * al[0] + G[1] * al[1] + G[2] * al[2] + G[3] * al[3] + G[4] * al[4]
                + G[5] * al[5])
    for r in range(6):
        al[r] += h[r] * chi + a[r]
    return chi


@helper
def prescribed_loads(pm, w, prescribed, udot_known, tau, T):
    """The loads of hybrid dynamics after its smoother (:mod:`flexdyn.hybrid`): ``T`` (nu,)
    is ``τ`` on the free rows and ``T_K = ℋ_K(i) f(i)`` on the prescribed rows ``K`` of each
    body, with ``f(i) = P(i) α(i) + Σ_c Φ(i, c) z⁺(c) + b_m(i)`` the force on the body's
    subtree through its joint (Eq 36), formed from the filter's
    ``z(i) = Σ_c Φ(i, c) z⁺(c) + P(i) (a_m + ℋ_K* χ̇_K) + b_m`` as
    ``f = z + P (α − a_m − ℋ_K* χ̇_K)`` into ``w.f`` (those bodies only)."""
    ints = pm.ints
    copy(tau, T)
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        k, s = nj + m, m + 6
        known = prescribed[us:us + k]
        if not any(known):
            continue
        H, t, f = w.Hcal[i, :k, :s], w.t_v[:s], w.f[i, :s]
        prescribed_acceleration(H, known, udot_known[us:us + k], w.a_m[i, :s], t)
        for r in range(s):
            t[r] = w.alpha[i, r] - t[r]
        copy(w.z[i, :s], f)
        mv(w.P[i, :s, :s], t, f, True)
        for r in range(k):
            if known[r] != 0.0:
                x = 0.0
                for c in range(s):
                    x += H[r, c] * f[c]
                T[us + r] = x
