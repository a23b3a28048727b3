"""Recursive Newton–Euler inverse dynamics (Jain & Rodriguez Sec III, Eqs 44–45).

The generalized forces of a state ``(q, u)`` and accelerations ``u̇`` follow from one
base-to-tip sweep of modal accelerations and one tip-to-base sweep of modal forces::

    α_m(i) = Φ*(p, i) α_m(p) + ℋ*(i) χ̇(i) + a_m(i)                 (Eq 24)
    f_m(i) = Σ_c Φ(i, c) f_m(c) + M_m(i) α_m(i) + b_m(i) + K_m ϑ(i)  (Eq 36)
    T(i)   = ℋ(i) f_m(i)                                              (Eq 41)

Gravity enters as a fictitious acceleration ``[0; −g]`` of the inertial frame.  Modal
damping ``C_m η̇`` is added to the elastic force ``K_m η``; external spatial forces act
at each body frame origin.
"""

from __future__ import annotations

import numpy as np

from .chain import Kinematics, Model, Velocities, state_terms

__all__ = [
    "inverse_dynamics",
    "bias_forces",
    "rnea",
    "elastic_forces",
    "modal_bias_force",
    "check_external_forces",
]


def check_external_forces(model: Model, f_ext) -> np.ndarray | None:
    """Validate ``f_ext``: None or an array (n_bodies, 6) of wrenches ``[moment; force]``
    acting at each body frame origin, in body-frame coordinates (N m, N)."""
    if f_ext is None:
        return None
    f = np.asarray(f_ext, dtype=float)
    if f.shape != (model.n_bodies, 6):
        raise ValueError(f"f_ext has shape {f.shape}, expected ({model.n_bodies}, 6)")
    if not np.all(np.isfinite(f)):
        raise ValueError("f_ext contains non-finite values")
    return f


def elastic_forces(model: Model, kin: Kinematics, vel: Velocities, i: int) -> np.ndarray:
    """``K_m ϑ(i)`` plus damping: ``[K η + C η̇; 0]`` (n_m + 6,), Eq 36/38."""
    body = model.bodies[i]
    m = body.n_modes
    out = np.zeros(m + 6, dtype=np.result_type(kin.eta[i], vel.eta_dot[i], float))
    if m:
        out[:m] = body.K @ kin.eta[i] + body.C @ vel.eta_dot[i]
    return out


def modal_bias_force(model: Model, kin: Kinematics, vel: Velocities,
                     f_ext: np.ndarray | None, i: int) -> np.ndarray:
    """Every force of Eq 36 on body ``i`` but ``M_m α_m`` and the children's (n_m + 6,):
    ``b_m(i) + K_m ϑ(i)`` (with damping) minus the external wrench ``[0; f_ext(i)]``."""
    b = vel.b_m[i] + elastic_forces(model, kin, vel, i)
    if f_ext is not None:
        b[int(model.n_modes[i]):] -= f_ext[i]
    return b


def rnea(model: Model, kin: Kinematics, vel: Velocities | None, udot: np.ndarray,
         f_ext: np.ndarray | None = None, gravity: bool = True) -> np.ndarray:
    """Newton–Euler inverse dynamics on precomputed operators (Eq 44, trees per Sec VIII).

    Parameters
    ----------
    kin, vel : position and velocity terms from :func:`compute_kinematics` and
        :func:`compute_velocities`; ``vel=None`` drops every velocity-dependent, elastic
        and damping term (then, with ``gravity=False``, the result is ``M u̇``).
    udot : (nu,) generalized accelerations, or (nu, k) for k right-hand sides.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.
    gravity : include the model's gravity.

    Returns
    -------
    T : (nu,) or (nu, k) generalized forces with ``M u̇ + C = T``.
    """
    n = model.n_bodies
    udot = np.asarray(udot)
    cols = udot.shape[1:]
    alpha: list = [None] * n
    f: list = [None] * n
    a_ground = np.concatenate([np.zeros(3), -model.gravity]) if gravity else np.zeros(6)
    a_ground = a_ground.reshape((6,) + (1,) * len(cols))
    for i in range(n):  # base-to-tip, Eq 24
        m = int(model.n_modes[i])
        p = int(model.parent[i])
        a_t = kin.A[i].T @ alpha[p] if p >= 0 else a_ground
        a_V = kin.phi[i].T @ a_t
        if vel is not None:
            a_V = a_V + vel.a_m[i][m:].reshape((6,) + (1,) * len(cols))
        a = kin.Hcal[i].T @ udot[model.u_slice(i)]
        a = a.astype(np.result_type(a, a_V), copy=False)
        a[m:] += a_V
        alpha[i] = a
        f[i] = kin.M_m[i] @ a
        if vel is not None:
            b = modal_bias_force(model, kin, vel, f_ext, i)
            f[i] = f[i] + b.reshape(b.shape + (1,) * len(cols))
        elif f_ext is not None:
            f[i][m:] -= f_ext[i].reshape((6,) + (1,) * len(cols))
    dtype = np.result_type(*(f if n else [0.0]), float)
    T = np.zeros((model.nu,) + cols, dtype=dtype)
    for i in reversed(range(n)):  # tip-to-base, Eqs 36, 41
        m = int(model.n_modes[i])
        T[model.u_slice(i)] = kin.Hcal[i] @ f[i]
        p = int(model.parent[i])
        if p >= 0:
            f[p] = f[p] + kin.A[i] @ (kin.phi[i] @ f[i][m:])
    return T


def inverse_dynamics(model: Model, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                     fidelity: str = "full", f_ext: np.ndarray | None = None) -> np.ndarray:
    """Generalized forces ``τ = M(q) u̇ + C(q, u)`` (nu,), Eqs 44–45.

    Parameters
    ----------
    model : Model
    q : (nq,) coordinates; u : (nu,) speeds; udot : (nu,) accelerations
        (layout of ``model-format.md``: per body, joint then modal entries).
    fidelity : ``"full"`` (deformation-dependent inertia, conserves energy) or
        ``"ruthless"`` (Appendix B).
    f_ext : (n_bodies, 6) or None — external wrenches ``[N m; N]`` at body frame
        origins, in body coordinates.

    Returns
    -------
    τ : (nu,) — joint forces/torques and modal forces (N, N m, or modal units).
    """
    model.check_state(q, u, udot=udot)
    kin, vel = state_terms(model, q, u, fidelity)
    return rnea(model, kin, vel, np.asarray(udot), check_external_forces(model, f_ext))


def bias_forces(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = "full",
                f_ext: np.ndarray | None = None) -> np.ndarray:
    """Bias vector ``C(q, u)`` (nu,) of Eq 43 with gravity, stiffness, damping and external
    forces: everything but ``M u̇``, so that ``M u̇ + C = τ``."""
    model.check_state(q, u)
    kin, vel = state_terms(model, q, u, fidelity)
    return rnea(model, kin, vel, np.zeros(model.nu), check_external_forces(model, f_ext))
