"""Unit tests of the spatial-algebra primitives (:mod:`flexdyn.spatial`).

Every check is against an independent source: scipy's :class:`~scipy.spatial.transform.Rotation`,
closed forms written out here with :func:`numpy.cross`, a 50-digit power-series evaluation of
the SO(3) coefficients (:mod:`decimal`), central differences and the complex step.
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from flexdyn.spatial import (
    Transform,
    axis_angle_rotation,
    crf,
    crm,
    cross_force,
    cross_motion,
    exp_so3,
    quat_multiply,
    quat_to_rot,
    right_jacobian_so3,
    right_jacobian_so3_rate,
    rigid_inertia,
    rot_to_quat,
    skew,
    so3_maps,
    unskew,
)

#: 8th-order central difference: f'(0) ≈ Σ_k w_k (f(k h) − f(−k h)) / h, k = 1..4.
FD_WEIGHTS = (4 / 5, -1 / 5, 4 / 105, -1 / 280)
FD_STEP = 1e-3
#: complex step
H = 1e-30

#: rotation-vector magnitudes |θ|: zero, tiny, the series range, both sides of the switch
#: between the power series and the closed forms at |θ|² = 1, and large angles
MAGNITUDES = (0.0, 1e-12, 1e-6, 1e-3, 0.1, 0.5, 0.9, 0.999, math.sqrt(1 - 1e-9), 1.0,
              math.sqrt(1 + 1e-9), 1.001, 1.2, 1.5, 2.0, 3.0, math.pi - 1e-6, 4.0, 10.0)
#: |θ|² just below and above the switch, and a spread around it
SWITCH_S = (1 - 1e-9, 1 + 1e-9, 1 - 1e-12, 1 + 1e-12, 1 - 1e-15, 1 + 1e-15,
            *np.linspace(0.9, 1.1, 21))


def central_difference(f, h: float = FD_STEP):
    """``d/dt f(t)`` at ``t = 0`` by the 8th-order central difference."""
    return sum(w * (f(k * h) - f(-k * h)) for k, w in enumerate(FD_WEIGHTS, start=1)) / h


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_transform(rng: np.random.Generator) -> Transform:
    R = Rotation.random(random_state=rng).as_matrix()
    return Transform(R, rng.uniform(-1.0, 1.0, size=3))


def rotation_vectors(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [t * unit(rng) for t in MAGNITUDES]


# ---------------------------------------------------------------------------------------------
# high-precision reference of the SO(3) coefficients
# ---------------------------------------------------------------------------------------------
def exact_coefficients(theta: np.ndarray) -> tuple[float, ...]:
    """``a = sin t/t``, ``b = (1 − cos t)/t²``, ``c = (t − sin t)/t³`` and ``db/ds``,
    ``dc/ds`` at ``s = t² = |θ|²`` (the exact ``s`` of the float ``θ``), from their power
    series summed with 50 significant digits; for ``|θ| ≤ 1.5``."""
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        s = sum(decimal.Decimal(float(x)) ** 2 for x in theta)
        assert s <= decimal.Decimal("2.25")
        out = []
        for offset in (1, 2, 3):  # Σ_k (−1)^k s^k / (2k + offset)!
            val = der = decimal.Decimal(0)
            for k in range(40):
                term = decimal.Decimal((-1) ** k) / math.factorial(2 * k + offset)
                val += term * s**k
                if k:
                    der += k * term * s ** (k - 1)
            out.append((val, der))
        (a, _), (b, db), (c, dc) = out
        return float(a), float(b), float(c), float(db), float(dc)


def reference_maps(theta: np.ndarray, theta_dot: np.ndarray):
    """``exp(θ̃)``, ``J_r(θ)`` and ``d/dt J_r`` along ``θ̇`` from :func:`exact_coefficients`
    (``R = I + a K + b K²``, ``J_r = I − b K + c K²``, ``K = θ̃``, and the product rule)."""
    a, b, c, db, dc = exact_coefficients(theta)
    K, Kd = skew(theta), skew(theta_dot)
    K2 = K @ K
    sdot = 2.0 * float(theta @ theta_dot)
    R = np.eye(3) + a * K + b * K2
    Jr = np.eye(3) - b * K + c * K2
    Jr_dot = -db * sdot * K - b * Kd + dc * sdot * K2 + c * (Kd @ K + K @ Kd)
    return R, Jr, Jr_dot


# ---------------------------------------------------------------------------------------------
# skew / unskew
# ---------------------------------------------------------------------------------------------
def test_skew_is_the_cross_product_matrix():
    rng = np.random.default_rng(1)
    v, w = rng.normal(size=(2, 5, 3))
    S = skew(v)
    assert S.shape == (5, 3, 3)
    np.testing.assert_allclose(S @ w[..., None], np.cross(v, w)[..., None], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(S, -np.swapaxes(S, -1, -2))
    np.testing.assert_array_equal(unskew(S), v)
    for vi, Si in zip(v, S, strict=True):
        np.testing.assert_array_equal(skew(vi), Si)
    # unskew takes the skew-symmetric part of a general matrix
    A = rng.normal(size=(3, 3))
    np.testing.assert_allclose(skew(unskew(A)), 0.5 * (A - A.T), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# SO(3): exp and the right Jacobian
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("theta", rotation_vectors(), ids=[f"{t:.9g}" for t in MAGNITUDES])
def test_exp_so3_matches_scipy(theta):
    R = exp_so3(theta)
    np.testing.assert_allclose(R, Rotation.from_rotvec(theta).as_matrix(), rtol=0, atol=2e-15)
    np.testing.assert_allclose(R @ R.T, np.eye(3), rtol=0, atol=2e-15)
    t = np.linalg.norm(theta)
    if t > 0:
        np.testing.assert_allclose(axis_angle_rotation(theta / t, t), R, rtol=0, atol=2e-15)


def test_exp_so3_batches_mix_series_and_closed_form():
    """A batch with rows on both sides of the switch equals the rows evaluated one by one,
    and a batch of only small rows (fewer series terms) is as accurate."""
    thetas = np.array(rotation_vectors(2))
    want = Rotation.from_rotvec(thetas).as_matrix()
    np.testing.assert_allclose(exp_so3(thetas), want, rtol=0, atol=2e-15)
    small = np.linalg.norm(thetas, axis=1) < 1.0
    np.testing.assert_allclose(exp_so3(thetas[small]), want[small], rtol=0, atol=2e-15)
    stacked = exp_so3(thetas.reshape(-1, 1, 3))
    assert stacked.shape == (len(thetas), 1, 3, 3)
    np.testing.assert_allclose(stacked[:, 0], want, rtol=0, atol=2e-15)


@pytest.mark.parametrize("theta", rotation_vectors(3), ids=[f"{t:.9g}" for t in MAGNITUDES])
def test_right_jacobian_gives_the_body_angular_velocity(theta):
    """``ω = unskew(Rᵀ Ṙ)`` of ``R(t) = exp(θ̃ + t θ̇~)`` (scipy, central differences) equals
    ``J_r(θ) θ̇``."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        theta_dot = rng.normal(size=3)
        R_dot = central_difference(
            lambda t, td=theta_dot: Rotation.from_rotvec(theta + t * td).as_matrix())
        R = Rotation.from_rotvec(theta).as_matrix()
        W = R.T @ R_dot
        np.testing.assert_allclose(W, -W.T, rtol=0, atol=1e-11)  # a skew matrix
        np.testing.assert_allclose(right_jacobian_so3(theta) @ theta_dot, unskew(W),
                                   rtol=0, atol=1e-10)


@pytest.mark.parametrize("theta", rotation_vectors(5), ids=[f"{t:.9g}" for t in MAGNITUDES])
def test_right_jacobian_rate_matches_central_differences(theta):
    rng = np.random.default_rng(6)
    for _ in range(3):
        theta_dot = rng.normal(size=3)
        fd = central_difference(lambda t, td=theta_dot: right_jacobian_so3(theta + t * td))
        np.testing.assert_allclose(right_jacobian_so3_rate(theta, theta_dot), fd,
                                   rtol=0, atol=1e-10)


@pytest.mark.parametrize("s", SWITCH_S, ids=[f"{s:.15g}" for s in SWITCH_S])
def test_maps_at_the_series_switch_match_high_precision(s):
    """Just below and above ``|θ|² = 1`` (power series / closed forms) ``exp``, ``J_r`` and
    ``J̇_r`` agree with the 50-digit series to a few ulps of their size."""
    rng = np.random.default_rng(7)
    for _ in range(4):
        theta = math.sqrt(s) * unit(rng)
        theta_dot = rng.normal(size=3)
        R_ref, Jr_ref, Jr_dot_ref = reference_maps(theta, theta_dot)
        R, Jr, Jr_dot = so3_maps(theta, theta_dot)
        np.testing.assert_allclose(R, R_ref, rtol=0, atol=2e-15)
        np.testing.assert_allclose(Jr, Jr_ref, rtol=0, atol=2e-15)
        scale = np.abs(Jr_dot_ref).max()
        np.testing.assert_allclose(Jr_dot, Jr_dot_ref, rtol=0, atol=4e-15 * scale)
        np.testing.assert_array_equal(exp_so3(theta), R)
        np.testing.assert_array_equal(right_jacobian_so3(theta), Jr)
        np.testing.assert_array_equal(right_jacobian_so3_rate(theta, theta_dot), Jr_dot)


def test_maps_are_continuous_across_the_switch():
    """The jump of each map between ``|θ|² = 1 − δ`` and ``1 + δ`` (same direction) is the
    change ``2δ ∂/∂s`` predicted by the derivative, to round-off."""
    rng = np.random.default_rng(8)
    for delta in (1e-9, 1e-12):
        for _ in range(5):
            n, theta_dot = unit(rng), rng.normal(size=3)
            lo, hi = math.sqrt(1 - delta) * n, math.sqrt(1 + delta) * n
            maps_lo, maps_hi = so3_maps(lo, theta_dot), so3_maps(hi, theta_dot)
            refs_lo, refs_hi = reference_maps(lo, theta_dot), reference_maps(hi, theta_dot)
            for got_lo, got_hi, ref_lo, ref_hi in zip(maps_lo, maps_hi, refs_lo, refs_hi,
                                                      strict=True):
                tol = 2e-14 * max(1.0, np.abs(ref_lo).max())
                np.testing.assert_allclose(got_hi - got_lo, ref_hi - ref_lo, rtol=0, atol=tol)


def test_batched_maps_across_the_switch():
    rng = np.random.default_rng(9)
    s = np.array(SWITCH_S + (1e-8, 0.25, 2.0))
    thetas = np.sqrt(s)[:, None] * np.array([unit(rng) for _ in s])
    theta_dots = rng.normal(size=thetas.shape)
    R, Jr, Jr_dot = so3_maps(thetas, theta_dots)
    for i, (th, thd) in enumerate(zip(thetas, theta_dots, strict=True)):
        R_ref, Jr_ref, Jr_dot_ref = reference_maps(th, thd)
        np.testing.assert_allclose(R[i], R_ref, rtol=0, atol=2e-15)
        np.testing.assert_allclose(Jr[i], Jr_ref, rtol=0, atol=2e-15)
        np.testing.assert_allclose(Jr_dot[i], Jr_dot_ref, rtol=0,
                                   atol=4e-15 * np.abs(Jr_dot_ref).max())


@pytest.mark.parametrize("theta", rotation_vectors(10), ids=[f"{t:.9g}" for t in MAGNITUDES])
def test_complex_step_derivatives_match_central_differences(theta):
    """``Im f(θ + i h d) / h`` of ``exp`` and ``J_r`` (and ``J̇_r``, with a complex ``θ̇``)
    equals the central difference along ``d``, on both sides of the switch."""
    rng = np.random.default_rng(11)
    d, theta_dot = rng.normal(size=(2, 3))
    for f in (exp_so3, right_jacobian_so3,
              lambda th: right_jacobian_so3_rate(th, theta_dot)):
        cs = f(theta + 1j * H * d)
        assert np.iscomplexobj(cs)
        np.testing.assert_allclose(cs.real, f(theta), rtol=0, atol=1e-15 * max(
            1.0, np.abs(cs.real).max()))
        fd = central_difference(lambda t, f=f: f(theta + t * d))
        np.testing.assert_allclose(cs.imag / H, fd, rtol=0, atol=1e-9 * max(
            1.0, np.abs(fd).max()))


# ---------------------------------------------------------------------------------------------
# spatial cross products
# ---------------------------------------------------------------------------------------------
def crm_closed_form(V, W):
    """``V × W = [ω × ω₂; ω × v₂ + v × ω₂]``."""
    return np.concatenate([np.cross(V[:3], W[:3]),
                           np.cross(V[:3], W[3:]) + np.cross(V[3:], W[:3])])


def crf_closed_form(V, f):
    """``V ×* f = [ω × n + v × f; ω × f]``."""
    return np.concatenate([np.cross(V[:3], f[:3]) + np.cross(V[3:], f[3:]),
                           np.cross(V[:3], f[3:])])


def test_cross_products_and_their_matrices():
    rng = np.random.default_rng(12)
    V, W, f = rng.normal(size=(3, 6, 6))
    for Vi, Wi, fi in zip(V, W, f, strict=True):
        np.testing.assert_allclose(cross_motion(Vi, Wi), crm_closed_form(Vi, Wi), atol=1e-15)
        np.testing.assert_allclose(crm(Vi) @ Wi, crm_closed_form(Vi, Wi), atol=1e-15)
        np.testing.assert_allclose(cross_force(Vi, fi), crf_closed_form(Vi, fi), atol=1e-15)
        np.testing.assert_allclose(crf(Vi) @ fi, crf_closed_form(Vi, fi), atol=1e-15)
        np.testing.assert_array_equal(crf(Vi), -crm(Vi).T)
        np.testing.assert_allclose(crm(Vi) @ Vi, 0.0, atol=1e-15)
        # duality: (V ×* f)·W = −f·(V × W)
        assert cross_force(Vi, fi) @ Wi == pytest.approx(-(fi @ cross_motion(Vi, Wi)),
                                                         abs=1e-13)
    # batched (..., 6) inputs, also broadcast against one vector
    np.testing.assert_allclose(cross_motion(V, W),
                               [crm_closed_form(a, b) for a, b in zip(V, W, strict=True)],
                               atol=1e-15)
    np.testing.assert_allclose(cross_force(V, f),
                               [crf_closed_form(a, b) for a, b in zip(V, f, strict=True)],
                               atol=1e-15)
    np.testing.assert_allclose(cross_motion(V[0], W), [crm_closed_form(V[0], b) for b in W],
                               atol=1e-15)


def test_rigid_inertia_momentum_and_energy():
    """``M V = [h; p]``: linear momentum ``m (v + ω × c)``, angular momentum about the
    origin ``I_c ω + c × p``; kinetic energy ``½ m |v + ω × c|² + ½ ωᵀ I_c ω``."""
    rng = np.random.default_rng(13)
    m, c = 2.3, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T
    M = rigid_inertia(m, c, Ic)
    np.testing.assert_allclose(M, M.T, atol=1e-15)
    for _ in range(3):
        V = rng.normal(size=6)
        w, v = V[:3], V[3:]
        p = m * (v + np.cross(w, c))
        np.testing.assert_allclose(M @ V, np.concatenate([Ic @ w + np.cross(c, p), p]),
                                   atol=1e-13)
        T = 0.5 * m * np.sum((v + np.cross(w, c)) ** 2) + 0.5 * w @ Ic @ w
        assert 0.5 * V @ M @ V == pytest.approx(T, rel=1e-14)


# ---------------------------------------------------------------------------------------------
# transforms
# ---------------------------------------------------------------------------------------------
def test_transform_compose_inverse_apply():
    rng = np.random.default_rng(14)
    A, B = random_transform(rng), random_transform(rng)
    x = rng.normal(size=(4, 3))
    AB = A.compose(B)
    np.testing.assert_allclose(AB.apply(x), A.apply(B.apply(x)), atol=1e-14)
    np.testing.assert_allclose(A.apply(x), x @ A.R.T + A.p, atol=1e-15)
    np.testing.assert_allclose(A.inverse().apply(A.apply(x)), x, atol=1e-14)
    eye = A.compose(A.inverse())
    np.testing.assert_allclose(eye.R, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(eye.p, 0.0, atol=1e-15)
    np.testing.assert_array_equal(Transform.identity().R, np.eye(3))
    np.testing.assert_array_equal(Transform.identity().p, np.zeros(3))
    np.testing.assert_array_equal(Transform.identity().phi(), np.eye(6))


def test_phi_moves_wrenches_and_its_transpose_moves_twists():
    """For ``T`` = pose of ``b`` in ``a``: a rigid motion with twist ``V_a = [ω; v]`` at
    ``a`` (``a`` coordinates) has twist ``[Rᵀ ω; Rᵀ (v + ω × p)]`` at ``b`` (``b``
    coordinates); a wrench ``[n; f]`` at ``b`` is ``[R n + p × R f; R f]`` at ``a``.  The
    power of a wrench on a twist is the same at both points."""
    rng = np.random.default_rng(15)
    for _ in range(5):
        T = random_transform(rng)
        R, p = T.R, T.p
        V_a = rng.normal(size=6)
        w, v = V_a[:3], V_a[3:]
        V_b = np.concatenate([R.T @ w, R.T @ (v + np.cross(w, p))])
        f_b = rng.normal(size=6)
        f_a = np.concatenate([R @ f_b[:3] + np.cross(p, R @ f_b[3:]), R @ f_b[3:]])
        phi = T.phi()
        np.testing.assert_allclose(phi.T @ V_a, V_b, atol=1e-14)
        np.testing.assert_allclose(T.twist_to_child(V_a), V_b, atol=1e-14)
        np.testing.assert_allclose(phi @ f_b, f_a, atol=1e-14)
        np.testing.assert_allclose(T.force_to_parent(f_b), f_a, atol=1e-14)
        # power invariance, through the two separately implemented maps
        assert T.force_to_parent(f_b) @ V_a == pytest.approx(f_b @ T.twist_to_child(V_a),
                                                            rel=1e-13, abs=1e-13)
        # twists back from b to a
        X = T.motion_to_parent()
        np.testing.assert_allclose(X @ V_b, V_a, atol=1e-14)
        np.testing.assert_allclose(X, np.linalg.inv(phi.T), atol=1e-13)
    # batched twists and wrenches
    V, f = rng.normal(size=(2, 4, 6))
    np.testing.assert_allclose(T.twist_to_child(V), V @ T.phi(), atol=1e-14)
    np.testing.assert_allclose(T.force_to_parent(f), f @ T.phi().T, atol=1e-14)


def test_phi_of_a_composition_is_the_product():
    rng = np.random.default_rng(16)
    A, B = random_transform(rng), random_transform(rng)
    np.testing.assert_allclose(A.compose(B).phi(), A.phi() @ B.phi(), atol=1e-14)
    np.testing.assert_allclose(A.inverse().phi(), np.linalg.inv(A.phi()), atol=1e-13)
    np.testing.assert_allclose(A.compose(B).motion_to_parent(),
                               A.motion_to_parent() @ B.motion_to_parent(), atol=1e-14)


# ---------------------------------------------------------------------------------------------
# quaternions
# ---------------------------------------------------------------------------------------------
def quaternions(seed: int = 17) -> np.ndarray:
    """Random unit quaternions ``[w, x, y, z]`` and ones with each component dominant,
    including 180° rotations (``w = 0``) and the identity."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(12, 4))
    special = np.eye(4) + 1e-3 * rng.normal(size=(4, 4))
    q = np.vstack([q, special, np.eye(4), -np.eye(4)[:1]])
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def scipy_rot(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of ``[w, x, y, z]`` by scipy (which is scalar-last)."""
    return Rotation.from_quat(np.roll(q, -1, axis=-1)).as_matrix()


def test_quat_to_rot_matches_scipy():
    qs = quaternions()
    for q in qs:
        np.testing.assert_allclose(quat_to_rot(q), scipy_rot(q), rtol=0, atol=2e-15)
    np.testing.assert_allclose(quat_to_rot(qs), scipy_rot(qs), rtol=0, atol=2e-15)


def test_quat_multiply_composes_rotations():
    qs = quaternions(18)
    rng = np.random.default_rng(19)
    for p, q in zip(qs, rng.permutation(qs), strict=True):
        pq = quat_multiply(p, q)
        np.testing.assert_allclose(np.linalg.norm(pq), 1.0, atol=1e-15)
        np.testing.assert_allclose(quat_to_rot(pq), scipy_rot(p) @ scipy_rot(q), atol=2e-15)
    # the Hamilton product of [0, a] and [0, b] is [−a·b, a × b]
    a, b = rng.normal(size=(2, 3))
    np.testing.assert_allclose(quat_multiply(np.r_[0.0, a], np.r_[0.0, b]),
                               np.r_[-(a @ b), np.cross(a, b)], atol=1e-15)


def test_rot_to_quat_round_trip():
    for q in quaternions(20):
        R = quat_to_rot(q)
        got = rot_to_quat(R)
        assert got[0] >= 0.0
        np.testing.assert_allclose(np.linalg.norm(got), 1.0, atol=1e-15)
        sign = 1.0 if q[0] > 0 else -1.0  # q and −q are the same rotation
        if abs(q[0]) > 1e-8:
            np.testing.assert_allclose(got, sign * q, atol=1e-15)
        np.testing.assert_allclose(quat_to_rot(got), R, atol=2e-15)
        np.testing.assert_allclose(scipy_rot(got), R, atol=2e-15)
