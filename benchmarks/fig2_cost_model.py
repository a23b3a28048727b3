"""Fig. 2 of Jain & Rodriguez (1992): operation counts of the two forward-dynamics algorithms.

Prints, for a serial chain of N flexible bodies (N = 10 in the paper) with
1-dof rotary hinges, the Sec. VII flop totals of the composite-body and the
articulated-body algorithms against the number of modes per body, and their
ratio. The rows for 5 and 10 modes, the two cases quoted in Sec. VII.B
("over a factor of 3" and "over a factor of 7"), are marked.

Usage::

    python benchmarks/fig2_cost_model.py [--bodies 10] [--max-modes 10]
        [--rule paper|explicit|indirect] [--plot fig2.png]

``plot_fig2`` accepts measured curves (e.g. timing ratios of the implemented
algorithms) through its ``measured`` argument; they are drawn on a second
y axis.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

try:
    from flexdyn_bench.costs import Fig2Row, fig2_table
except ImportError:  # loaded from elsewhere: benchmarks/ is this file's folder
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from flexdyn_bench.costs import Fig2Row, fig2_table

#: Modes per body at which Sec. VII.B quotes the speed-up, and the factor it quotes.
PAPER_CLAIMS: dict[int, float] = {5: 3.0, 10: 7.0}


def format_table(table: Sequence[Fig2Row], n_bodies: int) -> str:
    """Text table of Fig. 2 rows, with the rows quoted in Sec. VII.B marked."""
    lines = [
        f"Fig. 2 cost model (Jain & Rodriguez 1992, Sec. VII): N = {n_bodies} bodies, "
        "1-dof rotary hinges",
        f"{'n_m':>4} {'composite flops':>16} {'articulated flops':>18} {'ratio':>7}",
    ]
    for row in table:
        mark = ""
        if row.n_modes in PAPER_CLAIMS:
            claim = PAPER_CLAIMS[row.n_modes]
            verdict = "holds" if row.ratio > claim else "does NOT hold"
            mark = f"  <-- paper: > {claim:g}x ({verdict})"
        lines.append(
            f"{row.n_modes:>4} {row.composite_flops:>16,.1f} {row.articulated_flops:>18,.1f} "
            f"{row.ratio:>7.2f}{mark}"
        )
    return "\n".join(lines)


def plot_fig2(
    table: Sequence[Fig2Row],
    measured: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    path: str | Path | None = None,
    n_bodies: int | None = None,
):
    """Plot the two flop curves of Fig. 2 (log y axis) and return the figure.

    ``measured`` optionally maps a label to ``(modes, values)``; each is drawn
    on a second (right-hand) y axis as a composite/articulated time ratio,
    together with the model's flop ratio for comparison. If ``path`` is given
    the figure is saved there. Raises ``ImportError`` if matplotlib is missing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [r.n_modes for r in table]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.semilogy(modes, [r.composite_flops for r in table], "o-", label="composite body")
    ax.semilogy(modes, [r.articulated_flops for r in table], "s-", label="articulated body")
    ax.set_xlabel("assumed modes per body")
    ax.set_ylabel("floating point operations")
    title = "Forward dynamics cost (Sec. VII polynomials)"
    if n_bodies is not None:
        title += f", {n_bodies} flexible bodies"
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()

    if measured:
        ax2 = ax.twinx()
        ax2.plot(modes, [r.ratio for r in table], "k--", label="flop ratio (model)")
        for i, (name, (m_modes, values)) in enumerate(measured.items()):
            ax2.plot(
                list(m_modes), list(values), "^:", color=f"C{i + 2}", label=f"{name} (time ratio)"
            )
        ax2.set_ylabel("composite / articulated")
        h2, l2 = ax2.get_legend_handles_labels()
        handles += h2
        labels += l2

    ax.legend(handles, labels, loc="upper left")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=10, help="number of bodies N (10)")
    parser.add_argument("--max-modes", type=int, default=10, help="largest n_m (10)")
    parser.add_argument(
        "--rule",
        choices=["paper", "explicit", "indirect"],
        default="paper",
        help="how D_f^-1 is costed in item 1 (paper: explicit for n_m <= 7)",
    )
    parser.add_argument("--plot", metavar="FILE.png", help="save a plot of both curves")
    args = parser.parse_args(argv)

    table = fig2_table(n_bodies=args.bodies, modes=range(1, args.max_modes + 1), rule=args.rule)
    print(format_table(table, args.bodies))

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(
                "matplotlib is not installed; no plot written "
                "(pip install matplotlib, or the 'plot' extra of flexdyn)",
                file=sys.stderr,
            )
            return 1
        plot_fig2(table, path=args.plot, n_bodies=args.bodies)
        print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
