"""Linear stability of the explicit Runge–Kutta integrators: the largest step ``h`` for which
``y' = λ y`` stays bounded, from each method's stability polynomial.

An explicit Runge–Kutta method with Butcher matrix ``A`` (s × s, strictly lower
triangular) and weights ``b`` advances ``y' = λ y`` by ``y₁ = R(hλ) y₀`` with the stability
polynomial

    R(z) = 1 + z bᵀ (I − z A)⁻¹ 𝟙 = 1 + Σ_{k=1..s} (bᵀ A^{k−1} 𝟙) z^k

(Hairer & Wanner, *Solving ODEs II*, Sec IV.2).  A step is stable for an eigenvalue ``λ``
of the linearized system when ``|R(hλ)| ≤ 1``; :func:`step_limit` is the first ``h`` on the
ray ``h λ``, ``h > 0``, where that fails.  The tableaux of :data:`STABILITY_TABLEAUX` are
the classical ones (``"euler"``, ``"rk4"``) and scipy's own (``"RK23"``, ``"RK45"``,
``"DOP853"``: the propagated solution, as :func:`scipy.integrate.solve_ivp` runs them);
the implicit integrators (:data:`IMPLICIT`) are A-stable: no limit.
"""

from __future__ import annotations

import math

import numpy as np
import scipy

__all__ = ["IMPLICIT", "STABILITY_TABLEAUX", "stability_polynomial", "step_limit"]


def _scipy_tableau(solver: type) -> tuple[np.ndarray, np.ndarray]:
    """``(A, b)`` of a :mod:`scipy.integrate` explicit Runge–Kutta solver (A squared)."""
    s = solver.n_stages
    A = np.zeros((s, s))
    A[:, :solver.A.shape[1]] = solver.A[:s]
    return A, np.asarray(solver.B[:s], dtype=float)


#: ``(A, b)`` of the explicit Runge–Kutta methods, by the name ``simulate`` and users know
STABILITY_TABLEAUX: dict[str, tuple[np.ndarray, np.ndarray]] = {
    "euler": (np.zeros((1, 1)), np.ones(1)),
    "rk4": (np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]]),
            np.array([1, 2, 2, 1]) / 6.0),
    "RK23": _scipy_tableau(scipy.integrate.RK23),
    "RK45": _scipy_tableau(scipy.integrate.RK45),
    "DOP853": _scipy_tableau(scipy.integrate.DOP853),
}

#: integrators without a stability limit on a linear damped system (A-stable, or switching to
#: one when stiff: LSODA)
IMPLICIT = ("Radau", "BDF", "LSODA", "generalized-alpha")

#: ``|R|`` above 1 by more than this counts as growth
_GROWTH = 1e-12


def stability_polynomial(name: str) -> np.ndarray:
    """Coefficients ``[1, c₁, …, c_s]`` of ``R(z)`` (ascending powers) of an explicit method
    of :data:`STABILITY_TABLEAUX`."""
    A, b = STABILITY_TABLEAUX[name]
    coefficients, v = [1.0], np.ones(len(b))
    for _ in range(len(b)):
        coefficients.append(float(b @ v))
        v = A @ v
    return np.array(coefficients)


def step_limit(name: str, eigenvalues: np.ndarray) -> float:
    """The largest step ``h`` (in the eigenvalues' time unit) with ``|R(h λ)| ≤ 1`` on
    ``(0, h]`` for every eigenvalue ``λ`` with ``Re λ ≤ 0`` of ``eigenvalues`` (growing modes
    and zero eigenvalues limit nothing); ``inf`` for the implicit integrators and when no
    eigenvalue limits.  ``ValueError`` for an unknown integrator."""
    if name in IMPLICIT:
        return math.inf
    if name not in STABILITY_TABLEAUX:
        raise ValueError(f"integrator {name!r} has no stability polynomial; expected one of "
                         f"{tuple(STABILITY_TABLEAUX) + IMPLICIT}")
    R = np.polynomial.Polynomial(stability_polynomial(name))
    lam = np.asarray(eigenvalues, dtype=complex).ravel()
    scale = np.abs(lam)
    lam = lam[(scale > 0) & (lam.real <= 1e-12 * scale)]
    if lam.size == 0:
        return math.inf
    # |z| along each ray: a fine geometric grid (no explicit method is stable past |z| = 10
    # on a ray from the origin's side), the first growth refined by bisection
    z_abs = np.geomspace(1e-6, 20.0, 4000)
    limit = math.inf
    for mu in lam:
        direction = mu / abs(mu)
        grows = np.abs(R(z_abs * direction)) > 1.0 + _GROWTH
        if not grows.any():
            continue
        k = int(np.argmax(grows))
        lo, hi = (0.0 if k == 0 else z_abs[k - 1]), z_abs[k]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if abs(R(mid * direction)) <= 1.0 + _GROWTH else (lo, mid)
        limit = min(limit, lo / abs(mu))
    return limit
