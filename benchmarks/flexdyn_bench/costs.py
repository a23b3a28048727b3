"""Operation-count model of Jain & Rodriguez (1992), Section VII and Fig. 2.

The paper gives the floating-point operation counts of its two forward-dynamics
algorithms as polynomials in the number of modes ``n_m(k)`` of each body:

* the composite-body algorithm (Sec. IV, Eqs. 45-50): build the mass matrix
  ``𝔐`` and the bias ``𝒞``, then solve ``𝔐 χ̇ = T − 𝒞`` (Sec. VII.A, items 1-5);
* the articulated-body algorithm (Eqs. 63, 64, B3, B4): an ``O(N n_m²)``
  recursion (Sec. VII.B, items 1a/1b, 2, 3).

Assumptions of the paper, which the polynomials hard-code: a serial chain of
flexible bodies, single-degree-of-freedom rotary hinges, free-free assumed
modes, ruthlessly linearized body models and the simplifications of
Appendix B. Bodies are numbered from the tip (``k = 1``) to the base
(``k = N``); the ``k`` factor of composite-body item 2 uses this numbering.
``M`` counts multiplications and ``A`` additions; ``flops = M + A``.

The paper writes each item for a "typical (nonextremal)" body and sums it over
all bodies; the totals here do the same, so they slightly overestimate the
cost of the extremal bodies, exactly as the paper's Fig. 2 does.

Each item is evaluated in exact rational arithmetic and converted to ``float``
at the end, so all values are exact (they are integers or half-integers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, NamedTuple

__all__ = [
    "OpCount",
    "Fig2Row",
    "ArticulatedRule",
    "EXPLICIT_INVERSE_MAX_MODES",
    "cb_item1_R",
    "cb_item2_mass_matrix",
    "cb_item3_bias",
    "cb_item4_rhs",
    "cb_item5_solve",
    "ab_item1a_explicit",
    "ab_item1b_indirect",
    "ab_item1",
    "ab_item2_tip_to_base",
    "ab_item3_base_to_tip",
    "composite_body_cost",
    "articulated_body_cost",
    "fig2_table",
]

ArticulatedRule = Literal["paper", "explicit", "indirect"]

#: Sec. VII.B item 1: explicit inversion of ``D_f(k)`` is used for
#: ``n_m(k) <= 7``, the indirect procedure of Eq. (B3) for ``n_m(k) >= 8``.
EXPLICIT_INVERSE_MAX_MODES = 7


@dataclass(frozen=True)
class OpCount:
    """A count of multiplications ``mul`` (M) and additions ``add`` (A)."""

    mul: float
    add: float

    @property
    def flops(self) -> float:
        """Total floating-point operations, ``mul + add`` (the Fig. 2 ordinate)."""
        return self.mul + self.add

    def __add__(self, other: OpCount) -> OpCount:
        if not isinstance(other, OpCount):
            return NotImplemented
        return OpCount(self.mul + other.mul, self.add + other.add)

    def __radd__(self, other: object) -> OpCount:
        # Lets the builtin ``sum`` start from its default ``0``.
        if isinstance(other, (int, float)) and other == 0:
            return self
        return NotImplemented

    def __mul__(self, scalar: float) -> OpCount:
        if isinstance(scalar, bool) or not isinstance(scalar, (int, float, Fraction)):
            return NotImplemented
        return OpCount(self.mul * float(scalar), self.add * float(scalar))

    __rmul__ = __mul__


def _count(mul: Fraction | int, add: Fraction | int) -> OpCount:
    return OpCount(float(mul), float(add))


def _check_modes(n_m: int) -> int:
    if isinstance(n_m, bool) or int(n_m) != n_m or n_m < 0:
        raise ValueError(f"number of modes must be a non-negative integer, got {n_m!r}")
    return int(n_m)


def _check_positive(value: int, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------
# Sec. VII.A: composite-body forward dynamics
# --------------------------------------------------------------------------


def cb_item1_R(n_m: int) -> OpCount:
    """Sec. VII.A item 1: cost of ``R(k)`` for body k by Eq. (50).

    ``[48 n_m + 90] M + [n_m² + (97/2) n_m + 116] A`` (the printed ``N_m²(k)``
    is ``n_m²(k)``).
    """
    n = _check_modes(n_m)
    return _count(48 * n + 90, n**2 + Fraction(97, 2) * n + 116)


def cb_item2_mass_matrix(n_m: int, k: int) -> OpCount:
    """Sec. VII.A item 2: body k's contribution to the mass matrix ``𝔐`` by Eq. (50).

    ``k [12 n_m² + 34 n_m + 13] M + k [11 n_m² + 24 n_m + 13] A``, excluding ``R(k)``;
    ``k`` is the body index counted from the tip (``k = 1``).
    """
    n = _check_modes(n_m)
    k = _check_positive(k, "body index k")
    return _count(k * (12 * n**2 + 34 * n + 13), k * (11 * n**2 + 24 * n + 13))


def cb_item3_bias(n_m: int) -> OpCount:
    """Sec. VII.A item 3: body k's share of the bias ``𝒞`` (inverse dynamics, Eq. 45, χ̇ = 0).

    ``[2 n_m² + 54 n_m + 206] M + [2 n_m² + 50 n_m + 143] A``.
    """
    n = _check_modes(n_m)
    return _count(2 * n**2 + 54 * n + 206, 2 * n**2 + 50 * n + 143)


def cb_item4_rhs(n_dof: int) -> OpCount:
    """Sec. VII.A item 4: forming ``T − 𝒞`` costs ``𝔑`` additions (``𝔑`` = total dofs)."""
    n_dof = _check_modes(n_dof)
    return _count(0, n_dof)


def cb_item5_solve(n_dof: int) -> OpCount:
    """Sec. VII.A item 5: solving ``𝔐 χ̇ = T − 𝒞`` (Eq. 46) for ``𝔑`` unknowns.

    ``[𝔑³/6 + (3/2) 𝔑² − (2/3) 𝔑] M + [𝔑³/6 + 𝔑² − (7/6) 𝔑] A``.
    """
    n = _check_modes(n_dof)
    return _count(
        Fraction(1, 6) * n**3 + Fraction(3, 2) * n**2 - Fraction(2, 3) * n,
        Fraction(1, 6) * n**3 + n**2 - Fraction(7, 6) * n,
    )


# --------------------------------------------------------------------------
# Sec. VII.B: articulated-body forward dynamics
# --------------------------------------------------------------------------


def ab_item1a_explicit(n_m: int) -> OpCount:
    """Sec. VII.B item 1a: Eq. (63) for body k with explicit inversion of ``D_f(k)``.

    ``[(5/6) n_m³ + (25/2) n_m² + (764/3) n_m + 180] M
    + [(5/6) n_m³ + (21/2) n_m² + (548/3) n_m + 164] A``; the paper uses it for
    ``n_m <= 7``.
    """
    n = _check_modes(n_m)
    return _count(
        Fraction(5, 6) * n**3 + Fraction(25, 2) * n**2 + Fraction(764, 3) * n + 180,
        Fraction(5, 6) * n**3 + Fraction(21, 2) * n**2 + Fraction(548, 3) * n + 164,
    )


def ab_item1b_indirect(n_m: int) -> OpCount:
    """Sec. VII.B item 1b: Eq. (63) for body k with ``D_f^{-1}(k)`` from Eq. (B3).

    ``[12 n_m² + 255 n_m + 572] M + [13 n_m² + 182 n_m + 445] A``; the paper uses
    it for ``n_m >= 8``.
    """
    n = _check_modes(n_m)
    return _count(12 * n**2 + 255 * n + 572, 13 * n**2 + 182 * n + 445)


def ab_item1(n_m: int, rule: ArticulatedRule = "paper") -> OpCount:
    """Sec. VII.B item 1 with the chosen way of obtaining ``D_f^{-1}(k)``.

    ``rule="paper"`` picks 1a for ``n_m <= 7`` and 1b for ``n_m >= 8`` as the paper
    does; ``"explicit"`` always uses 1a, ``"indirect"`` always 1b.
    """
    n = _check_modes(n_m)
    if rule == "paper":
        explicit = n <= EXPLICIT_INVERSE_MAX_MODES
    elif rule == "explicit":
        explicit = True
    elif rule == "indirect":
        explicit = False
    else:
        raise ValueError(f"rule must be 'paper', 'explicit' or 'indirect', got {rule!r}")
    return ab_item1a_explicit(n) if explicit else ab_item1b_indirect(n)


def ab_item2_tip_to_base(n_m: int) -> OpCount:
    """Sec. VII.B item 2: body k's share of the tip-to-base sweep of Eq. (64).

    ``[n_m² + 25 n_m + 49] M + [n_m² + 24 n_m + 50] A``.
    """
    n = _check_modes(n_m)
    return _count(n**2 + 25 * n + 49, n**2 + 24 * n + 50)


def ab_item3_base_to_tip(n_m: int) -> OpCount:
    """Sec. VII.B item 3: body k's share of the base-to-tip sweep of Eq. (64).

    ``[18 n_m + 52] M + [19 n_m + 42] A``.
    """
    n = _check_modes(n_m)
    return _count(18 * n + 52, 19 * n + 42)


# --------------------------------------------------------------------------
# Totals and Fig. 2
# --------------------------------------------------------------------------


def composite_body_cost(n_modes: Sequence[int], n_hinge_dofs: int = 1) -> OpCount:
    """Total Sec. VII.A cost of the composite-body forward dynamics.

    ``n_modes[k-1]`` is the number of modes of body ``k`` counted from the tip
    (``k = 1``) to the base (``k = N``). Items 1-3 are summed over the bodies
    (item 2 with its factor ``k``), then items 4 and 5 are added for
    ``𝔑 = Σ_k (n_m(k) + n_r(k))`` with ``n_r(k) = n_hinge_dofs``.

    The per-body polynomials themselves assume 1-dof rotary hinges;
    ``n_hinge_dofs`` only changes ``𝔑`` in items 4 and 5.
    """
    modes = [_check_modes(n) for n in n_modes]
    if not modes:
        raise ValueError("n_modes must list at least one body")
    n_r = _check_modes(n_hinge_dofs)
    total = OpCount(0.0, 0.0)
    for k, n_m in enumerate(modes, start=1):
        total = total + cb_item1_R(n_m) + cb_item2_mass_matrix(n_m, k) + cb_item3_bias(n_m)
    n_dof = sum(modes) + n_r * len(modes)
    return total + cb_item4_rhs(n_dof) + cb_item5_solve(n_dof)


def articulated_body_cost(n_modes: Sequence[int], rule: ArticulatedRule = "paper") -> OpCount:
    """Total Sec. VII.B cost of the articulated-body forward dynamics.

    Sum over bodies of items 1 (1a or 1b according to ``rule``, see
    :func:`ab_item1`), 2 and 3. The Eq. (B4) precomputation is excluded, as in
    the paper. ``n_modes[k-1]`` is body ``k`` counted from the tip.
    """
    modes = [_check_modes(n) for n in n_modes]
    if not modes:
        raise ValueError("n_modes must list at least one body")
    total = OpCount(0.0, 0.0)
    for n_m in modes:
        total = total + ab_item1(n_m, rule) + ab_item2_tip_to_base(n_m) + ab_item3_base_to_tip(n_m)
    return total


class Fig2Row(NamedTuple):
    """One abscissa of Fig. 2: modes per body and the two flop totals."""

    n_modes: int
    composite_flops: float
    articulated_flops: float
    ratio: float  # composite / articulated


def fig2_table(
    n_bodies: int = 10,
    modes: Iterable[int] = range(1, 11),
    rule: ArticulatedRule = "paper",
) -> list[Fig2Row]:
    """Data of Fig. 2: flops of both algorithms vs. modes per body.

    A serial chain of ``n_bodies`` flexible bodies (10 in the paper), every body
    with the same number of modes and a 1-dof rotary hinge. Returns one
    :class:`Fig2Row` ``(n_m, composite flops, articulated flops, ratio)`` per
    entry of ``modes``, ``ratio = composite / articulated``.
    """
    n_bodies = _check_positive(n_bodies, "n_bodies")
    rows = []
    for n_m in modes:
        n_m = _check_modes(n_m)
        chain = [n_m] * n_bodies
        cb = composite_body_cost(chain).flops
        ab = articulated_body_cost(chain, rule=rule).flops
        rows.append(Fig2Row(n_m, cb, ab, cb / ab))
    return rows
