"""Newton–Euler (Eq 44): the accelerations base to tip and the modal forces tip to base."""

from __future__ import annotations

from .algebra import copy, mtv, mv
from .jit import helper, inlined
from .layout import MODES, NJ, PARENT, US
from .terms import from_parent, to_parent

__all__ = ["body_forces", "gravity_acceleration", "parent_acceleration", "rnea"]


@inlined
def gravity_acceleration(pm, out):
    """``a_g = [0; −g]``: the base accelerates upward instead of gravity pulling down."""
    for r in range(3):
        out[r] = 0.0
        out[3 + r] = -pm.gravity[r]


@helper
def parent_acceleration(ints, A, phi, alpha, i, a_g, out, t):
    """``Φ*(p, i)`` applied to the parent's modal acceleration (or to ``a_g`` at a root):
    ``out = φᵀ(i) Aᵀ(i) α(p)`` (6,); ``t`` (6,) scratch."""
    if ints[i, PARENT] >= 0:
        from_parent(ints, A, i, alpha, t)
        mtv(phi[i], t, out, False)
    else:
        mtv(phi[i], a_g, out, False)


@inlined
def body_forces(ints, w, udot, a_g, i):
    """Eq 24 for body ``i``: its modal acceleration
    ``α_m(i) = Φ*(p, i) α_m(p) + a_m(i) + ℋ*(i) χ̇(i)`` (``a_g`` at a root) into
    ``w.alpha[i]`` and its own modal forces ``f_m(i) = M_m α_m + bias`` into ``w.f[i]``."""
    m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
    s = m + 6
    al = w.alpha[i, :s]
    al[:m] = 0.0
    parent_acceleration(ints, w.A, w.phi, w.alpha, i, a_g, al[m:], w.t_6[1])
    for r in range(6):
        al[m + r] += w.a_m[i, m + r]
    mtv(w.Hcal[i, :nj + m, :s], udot[us:us + nj + m], al, True)
    fi = w.f[i, :s]
    copy(w.bias[i, :s], fi)
    mv(w.M_m[i, :s, :s], al, fi, True)


@helper
def rnea(pm, w, udot, gravity, T):
    """Eq 44: ``T = ℋ f_m`` with ``f_m = Σ_c Φ f_m(c) + M_m α_m + bias``
    (:func:`flexdyn.newton_euler.rnea`), from the terms in ``w``."""
    ints = pm.ints
    n = ints.shape[0]
    a_g = w.t_6[2]
    if gravity:
        gravity_acceleration(pm, a_g)
    else:
        a_g[:] = 0.0
    for i in range(n):  # base-to-tip, Eq 24
        body_forces(ints, w, udot, a_g, i)
    for i in range(n - 1, -1, -1):  # tip-to-base, Eqs 36, 41
        m, nj, us = ints[i, MODES], ints[i, NJ], ints[i, US]
        mv(w.Hcal[i, :nj + m, :m + 6], w.f[i, :m + 6], T[us:us + nj + m], False)
        if ints[i, PARENT] >= 0:
            to_parent(ints, w.A, w.phi, i, w.f[i, m:m + 6], w.f, w.t_6[3])
