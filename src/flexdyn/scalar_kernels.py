"""Scalar kernels shared by the compiled tiers, as plain Python functions (each tier compiles
them with its own numba options)."""

from __future__ import annotations

__all__ = ["quat_rot"]


def quat_rot(w, x, y, z, R):
    """``R`` (3 × 3) of the quaternion ``[w, x, y, z]``: ``(w² − |v|²) I + 2 v vᵀ + 2 w ṽ``
    (as :func:`flexdyn.spatial.quat_to_rot`)."""
    d = w * w - (x * x + y * y + z * z)
    R[0, 0] = d + 2.0 * x * x
    R[0, 1] = 2.0 * x * y - 2.0 * w * z
    R[0, 2] = 2.0 * x * z + 2.0 * w * y
    R[1, 0] = 2.0 * y * x + 2.0 * w * z
    R[1, 1] = d + 2.0 * y * y
    R[1, 2] = 2.0 * y * z - 2.0 * w * x
    R[2, 0] = 2.0 * z * x - 2.0 * w * y
    R[2, 1] = 2.0 * z * y + 2.0 * w * x
    R[2, 2] = d + 2.0 * z * z
