"""Kwatny & Blankenship's thin disk (Sec III; m = 5, R = 2, I = diag(5, 5, 10)) on the
compound joint of the axes x, y, z (Lagrange's equations): their printed Eqs 55a–b, written
once for numbers (``numpy``) and for symbols (``sympy``) — ``m`` is the module whose ``sin``
and ``cos`` are used.

Eq 55a's last entry is ``… + 5 sin² t₂`` (the square is lost in print).  Eq 55b is the
right-hand side ``F`` of ``𝓜 ṗ = F``: the velocity terms with the opposite sign.
"""

from __future__ import annotations

from typing import Any


def mass_matrix(t: Any, m: Any) -> list[list[Any]]:
    """Eq 55a, ``𝓜(t)`` (3 × 3 nested lists)."""
    t1, t2 = t[0], t[1]
    s1, c1, s2, c2 = m.sin(t1), m.cos(t1), m.sin(t2), m.cos(t2)
    return [[5, 0, -5 * s2],
            [0, 5 * (3 - m.cos(2 * t1)) / 2, -5 * c2 * m.sin(2 * t1) / 2],
            [-5 * s2, -5 * c2 * m.sin(2 * t1) / 2,
             10 * c1**2 * c2**2 + 5 * c2**2 * s1**2 + 5 * s2**2]]


def right_hand_side(t: Any, u: Any, m: Any) -> list[Any]:
    """Eq 55b, ``F(t, u)`` (3 entries)."""
    t1, t2 = t[0], t[1]
    u1, u2, u3 = u[0], u[1], u[2]
    c1, s2, c2 = m.cos(t1), m.sin(t2), m.cos(t2)
    s21, c21 = m.sin(2 * t1), m.cos(2 * t1)
    return [
        u3 * (-5 * u2 * c21 * c2 - 5 * u3 * c2**2 * s21) / 2
        + u2 * (5 * u3 * c2 + (-5 * u3 * c21 * c2 + 5 * u2 * s21) / 2),
        u1 * (-5 * u3 * c2 / 2 + 5 * u3 * c21 * c2 - 5 * u2 * s21)
        - 5 * u2 * u3 * s21 * s2 / 4
        + (u3 * (-5 * u1 * c2 + 5 * u2 * s21 * s2 / 2 - 5 * u3 * c1**2 * m.sin(2 * t2))) / 2,
        u1 * (5 * u2 * c21 * c2 + 5 * u3 * c2**2 * s21)
        + u2 * (5 * u1 * c2 - 5 * u2 * s21 * s2 / 2 + 5 * u3 * c1**2 * m.sin(2 * t2))]
