"""Kwatny & Blankenship's six-degree-of-freedom arm (Sec IV, Fig 3): their printed results,
transcribed.

``q = (s1, s2, e, t1, t2, t3)``: a two-axis shoulder (``s1`` about y, ``s2`` about z), a
revolute elbow (``e`` about y) and a three-axis wrist (``t1`` about y, ``t2`` about z, ``t3``
about x); slender upper and lower arms (1 kg, 3 m) and a cylindrical gripper (0.5 kg,
0.7 m, radius 0.35 m) whose end effector is at 0.7 m along its axis.

- :func:`end_effector` — ``XEndEf``, the 4 × 4 configuration matrix of the end effector
  (as printed; the OCR lost some parentheses, restored where a product is meant).
- :func:`last_row_wrist` — the wrist's three entries of the printed last (6th) row of the
  inertia matrix, compound wrist (``Γ = I``, speeds ``ṫ``) and simple wrist (speeds: the
  gripper's angular velocity).
"""

from __future__ import annotations

import numpy as np


def end_effector(q: np.ndarray) -> np.ndarray:
    """``XEndEf`` (4 × 4) at ``q`` (6,)."""
    s1, s2, e, t1, t2, t3 = q
    c1, n1, c2, n2, ce, ne = np.cos(s1), np.sin(s1), np.cos(s2), np.sin(s2), np.cos(e), np.sin(e)
    ct1, st1, ct2, st2, ct3, st3 = (np.cos(t1), np.sin(t1), np.cos(t2), np.sin(t2),
                                    np.cos(t3), np.sin(t3))
    X = np.zeros((4, 4))
    X[3, 3] = 1.0
    X[0, 0] = (ct1 * ct2 * (ce * c1 * c2 - c2 * ne * n1) - n2 * (ct1 * ct3 * st2 + st1 * st3)
               + (c1 * c2 * ne + ce * c2 * n1) * (-(ct3 * st1) + ct1 * st2 * st3))
    X[0, 1] = (-(ct2 * ct3 * n2) - (ce * c1 * c2 - c2 * ne * n1) * st2
               + ct2 * (c1 * c2 * ne + ce * c2 * n1) * st3)
    X[0, 2] = (ct2 * (ce * c1 * c2 - c2 * ne * n1) * st1 - n2 * (ct3 * st1 * st2 - ct1 * st3)
               + (c1 * c2 * ne + ce * c2 * n1) * (ct1 * ct3 + st1 * st2 * st3))
    X[0, 3] = 3 * c2 * n1 + 3 * (c1 * c2 * ne + ce * c2 * n1) + 0.7 * X[0, 2]
    X[1, 0] = (ct1 * ct2 * (ce * c1 * n2 - ne * n1 * n2) + c2 * (ct1 * ct3 * st2 + st1 * st3)
               + (c1 * ne * n2 + ce * n1 * n2) * (-(ct3 * st1) + ct1 * st2 * st3))
    X[1, 1] = (c2 * ct2 * ct3 - (ce * c1 * n2 - ne * n1 * n2) * st2
               + ct2 * (c1 * ne * n2 + ce * n1 * n2) * st3)
    X[1, 2] = (ct2 * (ce * c1 * n2 - ne * n1 * n2) * st1 + c2 * (ct3 * st1 * st2 - ct1 * st3)
               + (c1 * ne * n2 + ce * n1 * n2) * (ct1 * ct3 + st1 * st2 * st3))
    X[1, 3] = 3 * n1 * n2 + 3 * (c1 * ne * n2 + ce * n1 * n2) + 0.7 * X[1, 2]
    X[2, 0] = ct1 * ct2 * (-(c1 * ne) - ce * n1) + (ce * c1 - ne * n1) * (-(ct3 * st1)
                                                                        + ct1 * st2 * st3)
    X[2, 1] = -(-(c1 * ne) - ce * n1) * st2 + ct2 * (ce * c1 - ne * n1) * st3
    X[2, 2] = (ct2 * (-(c1 * ne) - ce * n1) * st1
               + (ce * c1 - ne * n1) * (ct1 * ct3 + st1 * st2 * st3))
    X[2, 3] = 3 * c1 + 3 * (ce * c1 - ne * n1) + 0.7 * X[2, 2]
    return X


def last_row_wrist(q: np.ndarray, compound: bool) -> np.ndarray:
    """Entries 4–6 of the printed last row of the inertia matrix (kg m²)."""
    t1, t2 = q[3], q[4]
    if not compound:
        return np.array([0.0, 0.0, 0.0969792])
    return np.array([-0.0969792 * np.sin(t2),
                     -0.091875 * np.cos(t1) * np.cos(t2) * np.sin(t1),
                     0.0969792 * np.cos(t1)**2 * np.cos(t2)**2
                     + 0.00510417 * np.cos(t2)**2 * np.sin(t1)**2
                     + 0.0969792 * np.sin(t2)**2])
