"""Spatial algebra: cross-product matrices, rigid transforms, spatial inertias.

Conventions (Jain & Rodriguez 1992, Nomenclature):

* Spatial vectors are 6-vectors with the **angular part first**: a spatial velocity
  (twist) is ``[omega; v]``, a spatial force (wrench) is ``[moment; force]``.
* A twist ``V`` of frame ``b`` is expressed in ``b``'s own coordinates, with ``v`` the
  velocity of ``b``'s origin (body-fixed, Plücker form).  Its time derivative in those
  coordinates is the spatial acceleration used throughout flexdyn.
* A :class:`Transform` ``T = (R, p)`` is the pose of a frame ``b`` relative to a frame
  ``a``: a point with coordinates ``x_b`` in ``b`` has coordinates ``R x_b + p`` in ``a``.
  The paper's ``φ(a, b) = [[I, l̃(a, b)], [0, I]]`` becomes, with the rotation carried
  explicitly, ``φ(a, b) = [[R, p̃ R], [0, R]]`` (:meth:`Transform.phi`): it moves spatial
  forces from ``b`` to ``a``; its transpose ``φ*(a, b)`` moves twists from ``a`` to ``b``.

All functions accept complex arrays as well (useful for complex-step differentiation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Transform",
    "cross",
    "skew",
    "twist_maps",
    "unskew",
    "cross_motion",
    "cross_force",
    "crm",
    "crf",
    "rigid_inertia",
    "exp_so3",
    "so3_maps",
    "axis_angle_rotation",
    "right_jacobian_so3",
    "right_jacobian_so3_rate",
    "quat_to_rot",
    "quat_multiply",
    "rot_to_quat",
]


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``ṽ`` with ``ṽ w = v × w``.

    Parameters
    ----------
    v : array, shape (..., 3)

    Returns
    -------
    array, shape (..., 3, 3)
    """
    v = np.asarray(v)
    out = np.zeros(v.shape[:-1] + (3, 3), dtype=v.dtype)
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def twist_maps(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``φ*(a, b)`` (..., 6, 6) for frames ``b`` with poses ``(R, p)`` ((..., 3, 3), (..., 3))
    in ``a``: a twist of ``a`` (in ``a``) seen at ``b`` (in ``b``), ``[[Rᵀ, 0], [−Rᵀ p̃, Rᵀ]]``
    (the batched :meth:`Transform.twist_to_child`)."""
    Rt = np.swapaxes(R, -1, -2)
    out = np.zeros(R.shape[:-2] + (6, 6), dtype=np.result_type(R, p))
    out[..., :3, :3] = Rt
    out[..., 3:, 3:] = Rt
    out[..., 3:, :3] = -Rt @ skew(p)
    return out


def unskew(S: np.ndarray) -> np.ndarray:
    """Inverse of :func:`skew` on the skew-symmetric part, shape (..., 3, 3) -> (..., 3)."""
    S = np.asarray(S)
    return 0.5 * np.stack(
        [S[..., 2, 1] - S[..., 1, 2], S[..., 0, 2] - S[..., 2, 0], S[..., 1, 0] - S[..., 0, 1]],
        axis=-1,
    )


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` over the last axis; shapes (..., 3) broadcast against each other."""
    a0, a1, a2 = a.T[0], a.T[1], a.T[2]
    b0, b1, b2 = b.T[0], b.T[1], b.T[2]
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]).T


def cross_motion(V: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Spatial cross product of two twists, ``V × W = [ω×ω₂; ω×v₂ + v×ω₂]``.

    Shapes (..., 6) and (..., 6) -> (..., 6).
    """
    w, v = V[..., :3], V[..., 3:]
    w2, v2 = W[..., :3], W[..., 3:]
    return np.concatenate([cross(w, w2), cross(w, v2) + cross(v, w2)], axis=-1)


def cross_force(V: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Dual cross product of a twist and a wrench, ``V ×* f = [ω×n + v×f; ω×f]``.

    Shapes (..., 6) and (..., 6) -> (..., 6).
    """
    w, v = V[..., :3], V[..., 3:]
    n, fl = f[..., :3], f[..., 3:]
    return np.concatenate([cross(w, n) + cross(v, fl), cross(w, fl)], axis=-1)


def crm(V: np.ndarray) -> np.ndarray:
    """6×6 matrix of ``V ×`` acting on twists: ``[[ω̃, 0], [ṽ, ω̃]]``."""
    out = np.zeros((6, 6), dtype=np.result_type(V, float))
    wt, vt = skew(V[:3]), skew(V[3:])
    out[:3, :3] = wt
    out[3:, 3:] = wt
    out[3:, :3] = vt
    return out


def crf(V: np.ndarray) -> np.ndarray:
    """6×6 matrix of ``V ×*`` acting on wrenches: ``-crm(V)ᵀ = [[ω̃, ṽ], [0, ω̃]]``."""
    return -crm(V).T


def rigid_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """Spatial inertia (6×6) about a frame origin, angular part first.

    Parameters
    ----------
    mass : float, kg
    com : array (3,), m — centre of mass in the frame.
    inertia_com : array (3, 3), kg m² — rotational inertia about the centre of mass,
        in the frame's axes.

    Returns
    -------
    array (6, 6): ``[[I_c − m c̃ c̃, m c̃], [−m c̃, m I]]`` so that ``M V = [h; p]``
    (angular momentum about the origin; linear momentum).
    """
    c = skew(np.asarray(com, dtype=float))
    M = np.empty((6, 6))
    M[:3, :3] = inertia_com - mass * c @ c
    M[:3, 3:] = mass * c
    M[3:, :3] = -mass * c
    M[3:, 3:] = mass * np.eye(3)
    return M


def _series_coefficients(offset: int, derivative: bool) -> list:
    coef = [(-1) ** k / math.factorial(2 * k + offset) for k in range(10)]
    return [k * c for k, c in enumerate(coef)][1:] if derivative else coef


_SERIES = {(o, d): _series_coefficients(o, d) for o in (1, 2, 3) for d in (False, True)}


def _series(s: np.ndarray, offset: int, derivative: bool, n_terms: int) -> np.ndarray:
    """``Σ_k (−1)^k s^k / (2k + offset)!`` (or its derivative in ``s``) for ``|s| < 1``,
    by Horner's rule over the first ``n_terms`` terms."""
    coef = _SERIES[(offset, derivative)][:n_terms]
    total = np.full_like(s, coef[-1])
    for c in reversed(coef[:-1]):
        total = total * s + c
    return total


def _terms_needed(s_max: float) -> int:
    """Number of series terms whose truncation error is below 1e-18 for ``|s| ≤ s_max < 1``."""
    k = 1
    while k < 9 and s_max**k / math.factorial(2 * k + 1) > 1e-18:
        k += 1
    return k + 1


def _exp_coefficients(theta: np.ndarray, derivatives: bool = False) -> tuple:
    """Coefficients of the SO(3) maps as functions of ``s = t² = |θ|²``.

    ``a = sin t / t``, ``b = (1 − cos t)/t²``, ``c = (t − sin t)/t³`` and, with
    ``derivatives=True``, their derivatives with respect to ``s``: ``da``, ``db``, ``dc``.
    Power series are used for ``s < 1`` (the closed forms lose digits to cancellation
    there); works elementwise on (...,) and for complex inputs (no ``abs`` of θ).
    """
    s = np.sum(theta * theta, axis=-1)
    abs_s = np.abs(s)
    small = abs_s < 1.0
    n_closed = 6 if derivatives else 3
    if np.all(small):
        n = _terms_needed(float(np.max(abs_s, initial=0.0)))
        return tuple(_series(s, 1 + k % 3, k >= 3, n) for k in range(n_closed))
    ss = np.where(small, 0.5, s)
    t = np.sqrt(np.where(small, 1.0, s))
    sn, co = np.sin(t), np.cos(t)
    closed = [sn / t, (1 - co) / ss, (t - sn) / (ss * t)]
    if derivatives:
        a_c, b_c, c_c = closed
        closed += [(co - a_c) / (2 * ss), (a_c - 2 * b_c) / (2 * ss), (b_c - 3 * c_c) / (2 * ss)]
    sm = np.where(small, s, 0.0)
    return tuple(np.where(small, _series(sm, 1 + k % 3, k >= 3, 10), closed[k])
                 for k in range(n_closed))


def so3_maps(theta: np.ndarray, theta_dot: np.ndarray | None = None) -> tuple:
    """``exp(θ̃)``, the right Jacobian ``J_r(θ)`` and, if ``θ̇`` is given, ``d/dt J_r``
    from one evaluation of the coefficients (see :func:`exp_so3` and friends).

    Shapes (..., 3) -> (..., 3, 3) each; returns ``(R, J_r)`` or ``(R, J_r, J̇_r)``.
    """
    theta = np.asarray(theta)
    coef = _exp_coefficients(theta, derivatives=theta_dot is not None)
    a, b, c = (x[..., None, None] for x in coef[:3])
    K = skew(theta)
    K2 = K @ K
    eye = np.broadcast_to(np.eye(3), K.shape)
    R = eye + a * K + b * K2
    Jr = eye - b * K + c * K2
    if theta_dot is None:
        return R, Jr
    db, dc = coef[4][..., None, None], coef[5][..., None, None]
    Kd = skew(theta_dot)
    dt2 = 2 * np.sum(theta * theta_dot, axis=-1)[..., None, None]
    Jr_dot = -(db * dt2) * K - b * Kd + (dc * dt2) * K2 + c * (Kd @ K + K @ Kd)
    return R, Jr, Jr_dot


def exp_so3(theta: np.ndarray) -> np.ndarray:
    """Rotation matrix ``exp(θ̃)`` of a rotation vector (Rodrigues).

    Shape (..., 3) -> (..., 3, 3).
    """
    return so3_maps(theta)[0]


def axis_angle_rotation(axis: np.ndarray, angle) -> np.ndarray:
    """``exp(angle · ã)`` for a unit ``axis`` (3,): ``I + sin θ ã + (1 − cos θ) ã²``."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * (K @ K)


def right_jacobian_so3(theta: np.ndarray) -> np.ndarray:
    """Right Jacobian ``J_r(θ)`` of SO(3): the body angular velocity of ``exp(θ̃(t))``
    is ``J_r(θ) θ̇``.

    ``J_r = I − b θ̃ + c θ̃²`` with ``b = (1 − cos t)/t²``, ``c = (t − sin t)/t³``.
    Shape (..., 3) -> (..., 3, 3).
    """
    return so3_maps(theta)[1]


def right_jacobian_so3_rate(theta: np.ndarray, theta_dot: np.ndarray) -> np.ndarray:
    """Time derivative ``d/dt J_r(θ)`` along ``θ̇``; shapes (..., 3), (..., 3) -> (..., 3, 3)."""
    return so3_maps(theta, theta_dot)[2]


def quat_to_rot(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``[w, x, y, z]`` (shape (..., 4) -> (..., 3, 3))."""
    q = np.asarray(q)
    w, v = q[..., 0], q[..., 1:]
    vv = np.sum(v * v, axis=-1)
    eye = np.broadcast_to(np.eye(3), q.shape[:-1] + (3, 3))
    return (
        (w * w - vv)[..., None, None] * eye
        + 2 * v[..., :, None] * v[..., None, :]
        + 2 * w[..., None, None] * skew(v)
    )


def quat_multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product ``p ⊗ q`` of quaternions ``[w, x, y, z]``."""
    pw, pv = p[..., :1], p[..., 1:]
    qw, qv = q[..., :1], q[..., 1:]
    w = pw * qw - np.sum(pv * qv, axis=-1, keepdims=True)
    v = pw * qv + qw * pv + np.cross(pv, qv)
    return np.concatenate([w, v], axis=-1)


def rot_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``[w, x, y, z]`` (w ≥ 0) of a rotation matrix (3, 3)."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    cand = np.array([tr, R[0, 0], R[1, 1], R[2, 2]])
    i = int(np.argmax(cand))
    if i == 0:
        w = 0.5 * np.sqrt(1 + tr)
        q = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
             (R[1, 0] - R[0, 1]) / (4 * w)]
    else:
        j, k = (i % 3) + 1, ((i + 1) % 3) + 1
        a, b_, c_ = i - 1, j - 1, k - 1
        x = 0.5 * np.sqrt(1 + R[a, a] - R[b_, b_] - R[c_, c_])
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (R[c_, b_] - R[b_, c_]) / (4 * x)
        q[i] = x
        q[j] = (R[b_, a] + R[a, b_]) / (4 * x)
        q[k] = (R[c_, a] + R[a, c_]) / (4 * x)
    q = np.array(q)
    return q if q[0] >= 0 else -q


@dataclass(frozen=True)
class Transform:
    """Pose ``(R, p)`` of a frame ``b`` relative to a frame ``a``.

    Attributes
    ----------
    R : array (3, 3) — orientation of ``b`` in ``a`` (columns: ``b``'s axes in ``a``).
    p : array (3,) — position of ``b``'s origin in ``a``, m.
    """

    R: np.ndarray
    p: np.ndarray

    @staticmethod
    def identity() -> Transform:
        """The identity pose."""
        return Transform(np.eye(3), np.zeros(3))

    def compose(self, other: Transform) -> Transform:
        """``self ∘ other``: pose of ``c`` in ``a`` given ``self`` (b in a), ``other`` (c in b)."""
        return Transform(self.R @ other.R, self.R @ other.p + self.p)

    def inverse(self) -> Transform:
        """Pose of ``a`` in ``b``."""
        Rt = self.R.T
        return Transform(Rt, -Rt @ self.p)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Coordinates in ``a`` of points given in ``b``: (..., 3) -> (..., 3)."""
        return x @ self.R.T + self.p

    def phi(self) -> np.ndarray:
        """``φ(a, b)`` (6×6): moves a spatial force at ``b`` (in ``b``) to ``a`` (in ``a``).

        ``[[R, p̃ R], [0, R]]``.  Its transpose moves twists from ``a`` to ``b``.
        """
        R = self.R
        out = np.zeros((6, 6), dtype=np.result_type(R, self.p))
        out[:3, :3] = R
        out[:3, 3:] = skew(self.p) @ R
        out[3:, 3:] = R
        return out

    def motion_to_parent(self) -> np.ndarray:
        """6×6 map of twists from ``b`` to ``a``: ``[[R, 0], [p̃ R, R]]`` (= ``φ(a, b)⁻ᵀ``)."""
        R = self.R
        out = np.zeros((6, 6), dtype=np.result_type(R, self.p))
        out[:3, :3] = R
        out[3:, :3] = skew(self.p) @ R
        out[3:, 3:] = R
        return out

    def twist_to_child(self, V: np.ndarray) -> np.ndarray:
        """``φ*(a, b) V``: a twist at ``a`` (in ``a``) seen at ``b`` (in ``b``), (..., 6)."""
        w, v = V[..., :3], V[..., 3:]
        return np.concatenate([w @ self.R, (v + cross(w, self.p)) @ self.R], axis=-1)

    def force_to_parent(self, f: np.ndarray) -> np.ndarray:
        """``φ(a, b) f``: a wrench at ``b`` (in ``b``) moved to ``a`` (in ``a``), (..., 6)."""
        n, fl = f[..., :3] @ self.R.T, f[..., 3:] @ self.R.T
        return np.concatenate([n + cross(self.p, fl), fl], axis=-1)
