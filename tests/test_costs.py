"""Tests of the Sec. VII / Fig. 2 operation-count model
(``benchmarks/flexdyn_bench/costs.py``).

Expected values are written out from the coefficients printed in
Jain & Rodriguez (1992), Sec. VII, so that a wrong coefficient in the module
shows up as a mismatch with this independent arithmetic.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

_BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if _BENCHMARKS not in sys.path:  # the developer instruments are not installed
    sys.path.insert(0, _BENCHMARKS)

from flexdyn_bench import costs  # noqa: E402
from flexdyn_bench.costs import OpCount  # noqa: E402

# ---------------------------------------------------------------- OpCount


def test_opcount_arithmetic() -> None:
    a = OpCount(3.0, 4.0)
    b = OpCount(10.0, 20.0)
    assert a.flops == 7.0
    assert a + b == OpCount(13.0, 24.0)
    assert 2 * a == OpCount(6.0, 8.0)
    assert a * 2 == OpCount(6.0, 8.0)
    assert sum([a, b]) == OpCount(13.0, 24.0)
    with pytest.raises(AttributeError):
        a.mul = 1.0  # type: ignore[misc]


# ---------------------------------------------------- composite-body items


def test_cb_item1_hand_values() -> None:
    # (48 n + 90) M + (n^2 + 97/2 n + 116) A
    assert costs.cb_item1_R(0) == OpCount(90, 116)
    assert costs.cb_item1_R(2) == OpCount(48 * 2 + 90, 4 + 97 + 116)  # 186 M, 217 A
    assert costs.cb_item1_R(2) == OpCount(186, 217)
    assert costs.cb_item1_R(1) == OpCount(138, 1 + 48.5 + 116)  # half-integer additions
    assert costs.cb_item1_R(5) == OpCount(330, 25 + 242.5 + 116)


def test_cb_item2_hand_values() -> None:
    # k (12 n^2 + 34 n + 13) M + k (11 n^2 + 24 n + 13) A
    assert costs.cb_item2_mass_matrix(0, 1) == OpCount(13, 13)
    assert costs.cb_item2_mass_matrix(2, 1) == OpCount(48 + 68 + 13, 44 + 48 + 13)  # 129, 105
    assert costs.cb_item2_mass_matrix(2, 3) == OpCount(3 * 129, 3 * 105)
    assert costs.cb_item2_mass_matrix(5, 10) == OpCount(
        10 * (300 + 170 + 13), 10 * (275 + 120 + 13)
    )


def test_cb_item3_hand_values() -> None:
    # (2 n^2 + 54 n + 206) M + (2 n^2 + 50 n + 143) A
    assert costs.cb_item3_bias(0) == OpCount(206, 143)
    assert costs.cb_item3_bias(2) == OpCount(8 + 108 + 206, 8 + 100 + 143)  # 322, 251


def test_cb_items4_5_hand_values() -> None:
    assert costs.cb_item4_rhs(20) == OpCount(0, 20)
    # N = 1: (1/6 + 3/2 - 2/3) M = 1 M; (1/6 + 1 - 7/6) A = 0 A
    assert costs.cb_item5_solve(1) == OpCount(1, 0)
    # N = 6: (36 + 54 - 4) M = 86 M; (36 + 36 - 7) A = 65 A
    assert costs.cb_item5_solve(6) == OpCount(86, 65)
    # N = 60: (36000 + 5400 - 40) M; (36000 + 3600 - 70) A
    assert costs.cb_item5_solve(60) == OpCount(41360, 39530)


# -------------------------------------------------- articulated-body items


def test_ab_item1a_hand_values() -> None:
    # (5/6 n^3 + 25/2 n^2 + 764/3 n + 180) M + (5/6 n^3 + 21/2 n^2 + 548/3 n + 164) A
    assert costs.ab_item1a_explicit(0) == OpCount(180, 164)
    # n = 3: 22.5 + 112.5 + 764 + 180 = 1079 M; 22.5 + 94.5 + 548 + 164 = 829 A
    assert costs.ab_item1a_explicit(3) == OpCount(1079, 829)
    # n = 6: 180 + 450 + 1528 + 180 = 2338 M; 180 + 378 + 1096 + 164 = 1818 A
    assert costs.ab_item1a_explicit(6) == OpCount(2338, 1818)


def test_ab_item1b_hand_values() -> None:
    # (12 n^2 + 255 n + 572) M + (13 n^2 + 182 n + 445) A
    assert costs.ab_item1b_indirect(0) == OpCount(572, 445)
    assert costs.ab_item1b_indirect(10) == OpCount(1200 + 2550 + 572, 1300 + 1820 + 445)


def test_ab_items2_3_hand_values() -> None:
    # (n^2 + 25 n + 49) M + (n^2 + 24 n + 50) A
    assert costs.ab_item2_tip_to_base(0) == OpCount(49, 50)
    assert costs.ab_item2_tip_to_base(4) == OpCount(16 + 100 + 49, 16 + 96 + 50)
    # (18 n + 52) M + (19 n + 42) A
    assert costs.ab_item3_base_to_tip(0) == OpCount(52, 42)
    assert costs.ab_item3_base_to_tip(4) == OpCount(72 + 52, 76 + 42)


@given(st.integers(min_value=0, max_value=200))
def test_item_values_are_exact(n: int) -> None:
    # Every polynomial is integer-valued except the half-integer 97/2 n term of item 1.
    m1 = Fraction(5, 6) * n**3 + Fraction(25, 2) * n**2 + Fraction(764, 3) * n + 180
    assert m1.denominator == 1
    assert costs.ab_item1a_explicit(n).mul == float(m1)
    assert costs.cb_item1_R(n).add == n**2 + 97 * n / 2 + 116


def test_explicit_indirect_switch_at_7_8() -> None:
    for n in range(0, 8):
        assert costs.ab_item1(n) == costs.ab_item1a_explicit(n)
    for n in range(8, 20):
        assert costs.ab_item1(n) == costs.ab_item1b_indirect(n)
    # The paper's statement that explicit inversion is cheaper for n_m <= 7
    # is what the two polynomials give: the flop crossover is between 7 and 8.
    for n in range(0, 8):
        assert costs.ab_item1a_explicit(n).flops < costs.ab_item1b_indirect(n).flops
    for n in range(8, 30):
        assert costs.ab_item1a_explicit(n).flops > costs.ab_item1b_indirect(n).flops
    assert costs.ab_item1(5, "indirect") == costs.ab_item1b_indirect(5)
    assert costs.ab_item1(12, "explicit") == costs.ab_item1a_explicit(12)
    with pytest.raises(ValueError):
        costs.ab_item1(3, "bogus")  # type: ignore[arg-type]


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError):
        costs.cb_item1_R(-1)
    with pytest.raises(ValueError):
        costs.cb_item2_mass_matrix(2, 0)
    with pytest.raises(ValueError):
        costs.composite_body_cost([])
    with pytest.raises(ValueError):
        costs.articulated_body_cost([1.5])  # type: ignore[list-item]


# ------------------------------------------------------------------- totals


def _cb_by_hand(modes: list[int], n_r: int = 1) -> OpCount:
    mul = Fraction(0)
    add = Fraction(0)
    for k, n in enumerate(modes, start=1):
        mul += 48 * n + 90 + k * (12 * n * n + 34 * n + 13) + 2 * n * n + 54 * n + 206
        add += n * n + Fraction(97, 2) * n + 116 + k * (11 * n * n + 24 * n + 13)
        add += 2 * n * n + 50 * n + 143
    N = sum(modes) + n_r * len(modes)
    mul += Fraction(N**3, 6) + Fraction(3, 2) * N**2 - Fraction(2, 3) * N
    add += N + Fraction(N**3, 6) + N**2 - Fraction(7, 6) * N
    return OpCount(float(mul), float(add))


def test_composite_total_by_hand() -> None:
    assert costs.composite_body_cost([3, 0, 5, 2]) == _cb_by_hand([3, 0, 5, 2])
    assert costs.composite_body_cost([4] * 10) == _cb_by_hand([4] * 10)
    assert costs.composite_body_cost([2, 2], n_hinge_dofs=3) == _cb_by_hand([2, 2], n_r=3)


def test_composite_rigid_single_body() -> None:
    # One rigid body (k = 1), one hinge dof: 90+13+206+1 M, 116+13+143+1+0 A.
    assert costs.composite_body_cost([0]) == OpCount(310, 273)


def test_composite_tip_numbering() -> None:
    # Item 2 weighs body k by k (k = 1 at the tip): more modes at the base cost more.
    tip_heavy = costs.composite_body_cost([6, 0, 0])
    base_heavy = costs.composite_body_cost([0, 0, 6])
    d2 = costs.cb_item2_mass_matrix(6, 3) + (-1) * costs.cb_item2_mass_matrix(6, 1)
    d0 = costs.cb_item2_mass_matrix(0, 3) + (-1) * costs.cb_item2_mass_matrix(0, 1)
    assert base_heavy == tip_heavy + d2 + (-1) * d0


def test_articulated_total_additive() -> None:
    modes = [1, 9, 0, 7, 8, 12]
    parts = [costs.articulated_body_cost([n]) for n in modes]
    assert costs.articulated_body_cost(modes) == sum(parts)
    # Order does not matter for the articulated-body algorithm (no k factor).
    assert costs.articulated_body_cost(modes) == costs.articulated_body_cost(modes[::-1])
    one = costs.ab_item1a_explicit(7) + costs.ab_item2_tip_to_base(7)
    assert costs.articulated_body_cost([7]) == one + costs.ab_item3_base_to_tip(7)


@given(
    st.lists(st.integers(min_value=0, max_value=15), min_size=1, max_size=8),
    st.lists(st.integers(min_value=0, max_value=15), min_size=1, max_size=8),
)
def test_articulated_additive_over_chains(a: list[int], b: list[int]) -> None:
    for rule in ("paper", "explicit", "indirect"):
        total = costs.articulated_body_cost(a + b, rule=rule)
        assert total == costs.articulated_body_cost(a, rule) + costs.articulated_body_cost(b, rule)


def test_composite_item_sum_matches_total() -> None:
    modes = [2, 5, 3]
    N = sum(modes) + len(modes)
    parts = [
        costs.cb_item1_R(n) + costs.cb_item2_mass_matrix(n, k) + costs.cb_item3_bias(n)
        for k, n in enumerate(modes, start=1)
    ]
    expected = sum(parts) + costs.cb_item4_rhs(N) + costs.cb_item5_solve(N)
    assert costs.composite_body_cost(modes) == expected


# ------------------------------------------------------------------- Fig. 2


def test_fig2_values_n10() -> None:
    rows = {r.n_modes: r for r in costs.fig2_table()}
    assert sorted(rows) == list(range(1, 11))
    # Hand sums of the printed polynomials, N = 10 bodies, sum_k k = 55.
    # n_m = 5, 𝔑 = 60:
    cb5_mul = 10 * ((48 * 5 + 90) + (2 * 25 + 54 * 5 + 206)) + 55 * (12 * 25 + 34 * 5 + 13)
    cb5_mul += 36000 + 5400 - 40  # item 5
    cb5_add = 10 * ((25 + 97 * 5 / 2 + 116) + (2 * 25 + 50 * 5 + 143))
    cb5_add += 55 * (11 * 25 + 24 * 5 + 13)
    cb5_add += 60 + 36000 + 3600 - 70  # items 4 and 5
    assert rows[5].composite_flops == cb5_mul + cb5_add == 146780
    ab5 = 3314 + (25 + 125 + 49) + (25 + 120 + 50) + (90 + 52) + (95 + 42)  # 1a, 2, 3
    assert costs.ab_item1a_explicit(5).flops == 3314  # 1657 M + 1657 A
    assert costs.ab_item1a_explicit(5) == OpCount(
        Fraction(625, 6) + Fraction(625, 2) + Fraction(3820, 3) + 180,
        Fraction(625, 6) + Fraction(525, 2) + Fraction(2740, 3) + 164,
    )
    assert rows[5].articulated_flops == 10 * ab5 == 39870
    # n_m = 10, 𝔑 = 110; item 1b (indirect) since n_m >= 8.
    cb10_mul = 10 * ((48 * 10 + 90) + (200 + 540 + 206)) + 55 * (1200 + 340 + 13)
    cb10_mul += Fraction(110**3, 6) + Fraction(3, 2) * 110**2 - Fraction(2, 3) * 110
    cb10_add = 10 * ((100 + 485 + 116) + (200 + 500 + 143)) + 55 * (1100 + 240 + 13)
    cb10_add += 110 + Fraction(110**3, 6) + 110**2 - Fraction(7, 6) * 110
    assert rows[10].composite_flops == cb10_mul + cb10_add == 664255
    ab10 = (1200 + 2550 + 572) + (1300 + 1820 + 445)  # 1b
    ab10 += (100 + 250 + 49) + (100 + 240 + 50) + (180 + 52) + (190 + 42)  # 2, 3
    assert rows[10].articulated_flops == 10 * ab10 == 91400
    for r in rows.values():
        assert r.ratio == pytest.approx(r.composite_flops / r.articulated_flops)


def test_fig2_paper_claims() -> None:
    """Sec. VII.B: "faster by over a factor of 3 for 5 modes per body, and by over
    a factor of 7 for the case of 10 modes per body" (N = 10). The printed
    polynomials do give this: 146780 / 39870 = 3.68 and 664255 / 91400 = 7.27.
    """
    rows = {r.n_modes: r for r in costs.fig2_table(n_bodies=10, modes=[5, 10])}
    assert rows[5].ratio == pytest.approx(146780 / 39870)
    assert rows[10].ratio == pytest.approx(664255 / 91400)
    assert rows[5].ratio > 3
    assert rows[10].ratio > 7
    # The factor-7 claim needs the indirect D_f^{-1} of item 1b: with explicit
    # inversion at n_m = 10 the ratio would be only about 6.7.
    explicit10 = costs.fig2_table(modes=[10], rule="explicit")[0]
    assert 6.6 < explicit10.ratio < 7


def test_fig2_ratio_grows_with_modes_and_bodies() -> None:
    ratios = [r.ratio for r in costs.fig2_table(modes=range(0, 16))]
    assert all(b > a for a, b in zip(ratios, ratios[1:], strict=False))
    # "The divergence ... becomes even more rapid as the number of bodies is increased."
    r10 = costs.fig2_table(n_bodies=10, modes=[5])[0].ratio
    r20 = costs.fig2_table(n_bodies=20, modes=[5])[0].ratio
    assert r20 > 2 * r10
