"""Damaren & Sharf's Shuttle-arm maneuvers (Sec 4.2, Table 3) with every body model.

    python benchmarks/bench_shuttle.py                       # all four maneuvers (~30 min)
    python benchmarks/bench_shuttle.py --maneuvers I-f       # one of them
    python benchmarks/bench_shuttle.py --quick               # the first 2 s of each

For each maneuver of :func:`flexdyn.models.shuttle_maneuver` and each fidelity: the RMS
energy drift ``e_E,RMS`` (Eq 32, 1000 samples; DOP853 at relative tolerance 1e-7 as in the
paper), or the time at which the run failed (the paper's "∞"), the final joint angles and
the wall time, beside the paper's Table 3 (natural-mode basis, six modes per boom).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import flexdyn as fd

#: Table 3, e_E,RMS (%) by maneuver and model (None: the run blew up)
PAPER_TABLE_3 = {"I-f": {"ruthless": None, "consistent": None, "full": 4.32e-5,
                         "exact": 2.57e-4},
                 "I-s": {"ruthless": 12.2, "consistent": 1.57e-4, "full": 2.10e-7,
                         "exact": 6.41e-7},
                 "II-f": {"ruthless": None, "consistent": None, "full": 2.71, "exact": 5.82},
                 "II-s": {"ruthless": None, "consistent": None, "full": 33.7, "exact": 22.3}}
PAPER_NAMES = {"ruthless": "RL", "consistent": "CL", "full": "I(E)", "exact": "EEE"}


def run(maneuver: str, fidelity: str, span: float | None) -> str:
    model = fd.models.shuttle_arm()
    tau, T = fd.models.shuttle_maneuver(model, maneuver)
    t1 = T if span is None else min(span, T)
    wall = time.perf_counter()
    try:
        res = fd.simulate(model, t_span=(0.0, t1), tau=tau, fidelity=fidelity, rtol=1e-7,
                          atol=1e-9, t_eval=np.linspace(0.0, t1, 1000))
        outcome = f"{res.energy_balance_rms:.3g}"
        joints = res.q[-1, [int(model.q_start[i]) for i in range(6)]]
        angles = ", ".join(f"{a:+.4f}" for a in joints)
    except fd.SimulationError as exc:
        outcome, angles = f"failed at {exc.t:.1f} s", "—"
    paper = PAPER_TABLE_3[maneuver][fidelity]
    return (f"| {maneuver} | {fidelity} ({PAPER_NAMES[fidelity]}) | {outcome} | "
            f"{'∞' if paper is None else f'{paper:.3g}'} | {angles} | "
            f"{time.perf_counter() - wall:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 2 s of each maneuver")
    parser.add_argument("--maneuvers", default="I-f,I-s,II-f,II-s")
    args = parser.parse_args()
    span = 2.0 if args.quick else None
    print(f"flexdyn {fd.__version__}; DOP853, rtol 1e-7, 1000 samples"
          + (" (quick: 2 s of each)" if args.quick else ""))
    print("| maneuver | fidelity (paper) | e_E,RMS (%) | paper | joint angles at the end "
          "(rad) | wall (s) |")
    print("|---|---|---:|---:|---|---:|")
    for maneuver in args.maneuvers.split(","):
        for fidelity in ("ruthless", "consistent", "full", "exact"):
            print(run(maneuver, fidelity, span), flush=True)


if __name__ == "__main__":
    main()
