"""Unit tests of the joints (:mod:`flexdyn.joints`), built by ``make_joint`` from normalized
joint blocks, for every joint type with random unit axes, pitches and configurations.

The joint map matrix is checked against the motion itself: along ``q̇ = Γ(q) u`` the pose
``(R, p)`` of ``J_c`` in ``J_p`` changes with the body twist ``[unskew(Rᵀ Ṙ); Rᵀ ṗ] =
H*(q) u`` (central differences and the complex step of ``transform``), and ``Ḣ* β`` is the
derivative of ``H*(q(t)) u`` at fixed ``u``.
"""

from __future__ import annotations

import numpy as np
import pytest

from flexdyn.joints import JOINT_TYPES, make_joint
from flexdyn.spatial import unskew

TYPES = ("fixed", "revolute", "prismatic", "screw", "cylindrical", "universal", "spherical",
         "free", "map", "compound", "planar", "euler", "free-euler")
QUATERNION_TYPES = ("spherical", "free")
#: kinds whose coordinates come from a product of exponentials (singular somewhere: drawn in
#: [−1.2, 1.2] rad to stay clear of the Euler singularities)
PRODUCT_TYPES = ("map", "compound", "planar", "euler", "free-euler")
SIZES = {"fixed": (0, 0), "revolute": (1, 1), "prismatic": (1, 1), "screw": (1, 1),
         "cylindrical": (2, 2), "universal": (2, 2), "spherical": (4, 3), "free": (7, 6),
         "planar": (3, 3), "euler": (3, 3), "free-euler": (6, 6)}
SEEDS = range(6)

#: 8th-order central difference: f'(0) ≈ Σ_k w_k (f(k h) − f(−k h)) / h, k = 1..4.
FD_WEIGHTS = (4 / 5, -1 / 5, 4 / 105, -1 / 280)
FD_STEP = 1e-3
H = 1e-30  #: complex step


def central_difference(f, h: float = FD_STEP):
    return sum(w * (f(k * h) - f(-k * h)) for k, w in enumerate(FD_WEIGHTS, start=1)) / h


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def line(rng: np.random.Generator, pitch: float = 0.0) -> np.ndarray:
    """A joint-map column: a screw of ``pitch`` about a random line."""
    a, c = unit(rng), rng.normal(size=3)
    return np.concatenate([a, np.cross(c, a) + pitch * a])


def random_map(rng: np.random.Generator, closed: bool) -> np.ndarray:
    """A joint map: rotations about a random point (a subalgebra, so(3) at that point) or
    two or three columns of skew screws and a slide (no subalgebra)."""
    if closed:
        c = rng.normal(size=3)
        A = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        return np.vstack([A, np.cross(c, A.T).T])
    cols = [line(rng), line(rng, pitch=0.3)][:int(rng.integers(1, 3))]
    return np.column_stack([*cols, np.concatenate([np.zeros(3), unit(rng)])])


def joint_spec(jtype: str, rng: np.random.Generator) -> dict:
    """A normalized joint block: ``type``, ``axis`` (3,) or None, ``axes`` (2, 3) or None,
    ``pitch``, ``map``, ``factors``, ``sequence``."""
    axis = axes = jmap = factors = sequence = None
    pitch = 0.0
    if jtype == "map":
        jmap = random_map(rng, closed=bool(rng.integers(2)))
    if jtype == "compound":
        factors = [random_map(rng, closed=True), line(rng, 0.2)[:, None],
                   np.concatenate([np.zeros(3), unit(rng)])[:, None]]
    if jtype in ("euler", "free-euler"):
        sequence = ("321", "123")[int(rng.integers(2))]
    if jtype in ("revolute", "prismatic", "screw", "cylindrical", "planar"):
        axis = unit(rng)
    if jtype == "screw":
        pitch = float(rng.uniform(-0.5, 0.5))
    if jtype == "universal":
        a1, a2 = unit(rng), unit(rng)
        while abs(a1 @ a2) > 0.9:
            a2 = unit(rng)
        axes = np.array([a1, a2])
    return {"type": jtype, "axis": axis, "axes": axes, "pitch": pitch, "map": jmap,
            "factors": factors, "sequence": sequence}


def random_q(jtype: str, nq: int, rng: np.random.Generator) -> np.ndarray:
    q = rng.uniform(-1.2, 1.2, size=nq) if jtype in PRODUCT_TYPES else rng.uniform(
        -np.pi, np.pi, size=nq)
    if jtype in QUATERNION_TYPES:
        quat = rng.normal(size=4)
        q[:4] = quat / np.linalg.norm(quat)
    return q


def cases(jtype: str):
    """``(joint, q, u)`` for several seeds."""
    for seed in SEEDS:
        rng = np.random.default_rng([seed, TYPES.index(jtype)])
        joint = make_joint(joint_spec(jtype, rng))
        yield joint, random_q(jtype, joint.nq, rng), rng.normal(size=joint.nu)


def pose_rate_twist(joint, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """``[unskew(Rᵀ Ṙ); Rᵀ ṗ]`` of ``transform(q + t q̇)`` at ``t = 0`` by central differences.

    The straight line ``q + t q̇`` leaves the unit sphere of a quaternion only at second
    order (``q̇ ⊥ q``), which does not change the first derivative.
    """
    T = joint.transform(q)
    R_dot = central_difference(lambda t: joint.transform(q + t * qdot).R)
    p_dot = central_difference(lambda t: joint.transform(q + t * qdot).p)
    W = T.R.T @ R_dot
    np.testing.assert_allclose(W, -W.T, rtol=0, atol=1e-10)  # Rᵀ Ṙ is skew
    return np.concatenate([unskew(W), T.R.T @ p_dot])


def subspace_rate(joint, q: np.ndarray, qdot: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``d/dt [H*(q + t q̇)] u`` at ``t = 0`` by central differences."""
    return central_difference(lambda t: joint.motion_subspace(q + t * qdot) @ u)


def test_every_joint_type_is_tested():
    assert set(JOINT_TYPES) == set(TYPES)


@pytest.mark.parametrize("jtype", TYPES)
def test_sizes_and_shapes(jtype):
    for joint, q, u in cases(jtype):
        assert (joint.nq, joint.nu) == SIZES.get(jtype, (q.size, u.size))
        assert joint.neutral().shape == (joint.nq,)
        assert joint.motion_subspace(q).shape == (6, joint.nu)
        assert joint.motion_subspace_rate(q, u).shape == (6,)
        assert joint.Gamma(q).shape == (joint.nq, joint.nu)
        assert joint.qdot(q, u).shape == (joint.nq,)
        T = joint.transform(q)
        assert T.R.shape == (3, 3) and T.p.shape == (3,)
        np.testing.assert_allclose(T.R @ T.R.T, np.eye(3), rtol=0, atol=1e-14)
        assert np.linalg.det(T.R) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("jtype", TYPES)
def test_neutral_configuration_is_the_identity(jtype):
    for joint, _, _ in cases(jtype):
        T = joint.transform(joint.neutral())
        np.testing.assert_allclose(T.R, np.eye(3), rtol=0, atol=1e-15)
        np.testing.assert_allclose(T.p, 0.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("jtype", TYPES)
def test_normalize(jtype):
    """Quaternions are scaled to unit length (their rotation unchanged); other coordinates
    are left as they are."""
    for joint, q, _ in cases(jtype):
        scaled = q.copy()
        if jtype in QUATERNION_TYPES:
            scaled[:4] *= 3.7
        out = joint.normalize(scaled)
        assert out.shape == q.shape
        np.testing.assert_allclose(out, q, rtol=0, atol=1e-15)
        if jtype in QUATERNION_TYPES:
            assert np.linalg.norm(out[:4]) == pytest.approx(1.0, abs=1e-15)
        np.testing.assert_allclose(joint.normalize(joint.neutral()), joint.neutral(), atol=0)


@pytest.mark.parametrize("jtype", TYPES)
def test_qdot_is_gamma_times_u(jtype):
    for joint, q, u in cases(jtype):
        qdot = joint.qdot(q, u)
        np.testing.assert_allclose(joint.Gamma(q) @ u, qdot, rtol=0, atol=1e-15)
        if jtype in QUATERNION_TYPES:
            # q̇ is tangent to the unit sphere of the quaternion
            assert abs(q[:4] @ qdot[:4]) < 1e-15


@pytest.mark.parametrize("jtype", TYPES)
def test_motion_subspace_is_the_body_twist_of_the_pose(jtype):
    """``H*(q) u = [unskew(Rᵀ Ṙ); Rᵀ ṗ]`` along ``q̇ = Γ(q) u`` (central differences)."""
    for joint, q, u in cases(jtype):
        twist = pose_rate_twist(joint, q, joint.Gamma(q) @ u)
        np.testing.assert_allclose(joint.motion_subspace(q) @ u, twist, rtol=0, atol=1e-10)


@pytest.mark.parametrize("jtype", TYPES)
def test_motion_subspace_complex_step(jtype):
    """The same with the complex step of ``transform`` (exact to round-off)."""
    for joint, q, u in cases(jtype):
        qdot = joint.Gamma(q) @ u
        T = joint.transform(q)
        Tc = joint.transform(q + 1j * H * qdot)
        R_dot, p_dot = np.imag(Tc.R) / H, np.imag(Tc.p) / H
        twist = np.concatenate([unskew(T.R.T @ R_dot), T.R.T @ p_dot])
        np.testing.assert_allclose(joint.motion_subspace(q) @ u, twist, rtol=0, atol=1e-14)


@pytest.mark.parametrize("jtype", TYPES)
def test_motion_subspace_rate_is_the_derivative_of_the_subspace(jtype):
    """``Ḣ* β = d/dt [H*(q(t))] u`` at fixed ``u`` along ``q̇ = Γ(q) u``."""
    for joint, q, u in cases(jtype):
        qdot = joint.Gamma(q) @ u
        want = subspace_rate(joint, q, qdot, u)
        got = joint.motion_subspace_rate(q, u)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    if jtype in ("universal", "compound"):  # H* turns with q: the check is not empty
        assert np.abs(want).max() > 1e-3
