"""Tip kinematics: the parametrisations of a node's elastic rotation (Damaren & Sharf Sec 2.4).

A flexible body's node ``j`` turns relative to the body frame by the elastic rotation
coordinates ``θ_j = Π_r(j) η`` (3,) (rad).  A *tip-kinematics option* says which rotation
``R(θ)`` (3 × 3, node frame in the body frame) those coordinates stand for, together with
the map ``J(θ)`` (3 × 3) from ``θ̇`` to the node's angular velocity relative to the body,
in node coordinates (``Rᵀ Ṙ = (J θ̇)~``), and its rate ``J̇`` (3 × 3) along ``θ̇``, whose
``J̇ θ̇`` is the velocity-product term of the node's angular acceleration.  Every option here
is **holonomic**: ``R`` is a function of ``η`` and ``J`` its exact angular-velocity map, so
the node kinematics are those of a configuration and the equations of motion stay
Lagrangian (energy conserving for the energy-conserving fidelities).

=================  ====  ===================================================================
name               code  ``R(θ)``, ``J(θ)``
=================  ====  ===================================================================
``"exponential"``  0     ``exp(θ̃)``, the right Jacobian ``J_r(θ)``: ``θ`` is a rotation
                         vector (the default; Damaren & Sharf's (d) in the sense of a
                         rotation-vector discretisation, see ``docs/stiffening.md``)
``"neglect"``      1     ``I``, ``0``: the elastic rotation is dropped (option (a) for the
                         rotation; the node still translates by ``Π_t η``)
``"euler-123"``    2     ``R_x(θ₁) R_y(θ₂) R_z(θ₃)``: ``θ`` are body-fixed 1-2-3 Euler
                         angles (option (c), Kane et al.)
``"euler-321"``    3     ``R_z(θ₃) R_y(θ₂) R_x(θ₁)``: body-fixed 3-2-1 Euler angles (option
                         (c); the rotation about axis 1, torsion of a beam along ``x``, last)
=================  ====  ===================================================================

All of them agree to first order (``R ≈ I + θ̃``, ``J(0) = I``) except ``"neglect"``, and for
a rotation about one fixed axis all but ``"neglect"`` give the same rotation and angular
velocity (the angle about that axis).  The codes are those of the compiled engine
(:mod:`flexdyn.engine.kernels`).  Every function takes ``θ`` of shape (..., 3), real or
complex (complex-step differentiation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .spatial import right_jacobian_so3_rate, so3_maps

__all__ = ["DEFAULT_TIP_KINEMATICS", "TIP_KINEMATICS", "TipKinematics", "check_tip_kinematics",
           "euler_maps", "euler_rate", "neglect_maps", "neglect_rate"]


def neglect_maps(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``R = I``, ``J = 0`` (..., 3, 3) each: no elastic rotation."""
    theta = np.asarray(theta)
    shape = (*theta.shape[:-1], 3, 3)
    return np.broadcast_to(np.eye(3, dtype=theta.dtype), shape).copy(), np.zeros(shape,
                                                                             theta.dtype)


def neglect_rate(theta: np.ndarray, theta_dot: np.ndarray) -> np.ndarray:
    """``J̇ = 0`` (..., 3, 3)."""
    shape = np.broadcast_shapes(np.shape(theta), np.shape(theta_dot))
    return np.zeros((*shape, 3), np.result_type(theta, theta_dot))


def _elementary(axis: int, angle: np.ndarray) -> np.ndarray:
    """Rotation by ``angle`` (...,) about the coordinate axis ``axis`` (0, 1, 2): (..., 3, 3)."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros((*np.shape(angle), 3, 3), dtype=np.result_type(angle, float))
    i1, i2 = (axis + 1) % 3, (axis + 2) % 3
    R[..., axis, axis] = 1.0
    R[..., i1, i1] = R[..., i2, i2] = c
    R[..., i1, i2], R[..., i2, i1] = -s, s
    return R


def _euler_columns(order: tuple[int, int, int], theta: np.ndarray) -> tuple:
    """``R = R_a R_b R_c`` and the columns ``u_a = (R_b R_c)ᵀ e_a``, ``u_b = R_cᵀ e_b`` of
    ``J`` (``J[:, c] = e_c``) for the axes ``order = (a, b, c)``."""
    a, b, c = order
    Ra, Rb, Rc = (_elementary(k, theta[..., k]) for k in order)
    Rbc = Rb @ Rc
    return Ra @ Rbc, Rbc[..., a, :], Rc[..., b, :]


def euler_maps(order: tuple[int, int, int], theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``R(θ)`` and ``J(θ)`` (..., 3, 3) of the body-fixed Euler sequence ``order = (a, b, c)``
    (0-based axes, applied first to last): ``R = R_a(θ_a) R_b(θ_b) R_c(θ_c)``, and with
    ``Ṙ_c = R_c ẽ_c θ̇_c`` the node angular velocity
    ``ω = R_cᵀ R_bᵀ e_a θ̇_a + R_cᵀ e_b θ̇_b + e_c θ̇_c = J θ̇`` (Damaren & Sharf's
    ``C_eᵀ E_n``, Sec 2.3.2)."""
    a, b, c = order
    R, u_a, u_b = _euler_columns(order, theta)
    J = np.zeros_like(R)
    J[..., :, a], J[..., :, b] = u_a, u_b
    J[..., c, c] = 1.0
    return R, J


def euler_rate(order: tuple[int, int, int], theta: np.ndarray,
               theta_dot: np.ndarray) -> np.ndarray:
    """``J̇`` (..., 3, 3) of :func:`euler_maps` along ``θ̇``: with
    ``d(R_kᵀ)/dt = −θ̇_k ẽ_k R_kᵀ`` the columns are ``u̇_a = u_a × (θ̇_b u_b + θ̇_c e_c)``,
    ``u̇_b = θ̇_c u_b × e_c`` and ``0``, so that
    ``J̇ θ̇ = θ̇_c (θ̇_a u_a + θ̇_b u_b) × e_c + θ̇_a θ̇_b u_a × u_b``."""
    a, b, c = order
    _, u_a, u_b = _euler_columns(order, theta)
    db, dc = theta_dot[..., b, None], theta_dot[..., c, None]
    e_c = np.zeros(3)
    e_c[c] = 1.0
    Jd = np.zeros((*u_a.shape, 3), dtype=np.result_type(u_a, theta_dot))
    Jd[..., :, a] = np.cross(u_a, db * u_b + dc * e_c)
    Jd[..., :, b] = dc * np.cross(u_b, e_c)
    return Jd


class TipKinematics(NamedTuple):
    """One option of :data:`TIP_KINEMATICS`.

    Attributes
    ----------
    name : str — the model-file value.
    code : int — the compiled engine's code.
    maps : ``θ (..., 3) -> (R, J)`` (..., 3, 3) each.
    rate : ``θ, θ̇ (..., 3) -> J̇`` (..., 3, 3), the rate of ``J`` along ``θ̇``.
    paper : str — Damaren & Sharf's option (Sec 2.4).
    """

    name: str
    code: int
    maps: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    rate: Callable[[np.ndarray, np.ndarray], np.ndarray]
    paper: str


_X123, _X321 = (0, 1, 2), (2, 1, 0)

#: the tip-kinematics options by name (module docstring)
TIP_KINEMATICS: dict[str, TipKinematics] = {t.name: t for t in (
    TipKinematics("exponential", 0, so3_maps, right_jacobian_so3_rate,
                  "(d) as a rotation-vector field (no extra state)"),
    TipKinematics("neglect", 1, neglect_maps, neglect_rate, "(a), the rotation"),
    TipKinematics("euler-123", 2, lambda th: euler_maps(_X123, th),
                  lambda th, thd: euler_rate(_X123, th, thd), "(c), 1-2-3"),
    TipKinematics("euler-321", 3, lambda th: euler_maps(_X321, th),
                  lambda th, thd: euler_rate(_X321, th, thd), "(c), 3-2-1"),
)}
#: the option of a model that names none
DEFAULT_TIP_KINEMATICS = "exponential"


def check_tip_kinematics(path: str, value: object) -> str:
    """``value`` if it names an option of :data:`TIP_KINEMATICS`, else ``ValueError`` saying
    where (``path``), what was given and what is allowed (and why (b) and (d) are not)."""
    if isinstance(value, str) and value in TIP_KINEMATICS:
        return value
    hint = ""
    if value in ("first-order", "linear", "exact"):
        hint = (" (Damaren & Sharf's first-order (b) and integrated (d) tip kinematics are not "
                "offered: see the section 'Tip kinematics' of docs/stiffening.md)")
    raise ValueError(f"{path} must be one of {', '.join(map(repr, TIP_KINEMATICS))}, "
                     f"got {value!r}{hint}")
