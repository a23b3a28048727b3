"""Damaren & Sharf's Shuttle-arm maneuvers (Sec 4.2, Table 3) with every body model.

    python benchmarks/bench_shuttle.py                       # all four maneuvers (~30 min)
    python benchmarks/bench_shuttle.py --maneuvers I-f       # one of them
    python benchmarks/bench_shuttle.py --quick               # the first 2 s of each
    python benchmarks/bench_shuttle.py --limit 5             # at most 5 min per run

For each maneuver of :func:`flexdyn.models.shuttle_maneuver` and each fidelity: the RMS
energy drift ``e_E,RMS`` (Eq 32, 1000 samples; DOP853 at relative tolerance 1e-7 as in the
paper), or the time at which the run blew up (the paper's "∞": a boom's tip deflected by
more than ``BLOW_UP`` = 1 m, or the integrator failed), the final joint angles and the wall
time, beside the paper's Table 3 (natural-mode basis, six modes per boom).  A run that has
not finished after ``--limit`` minutes of wall time is stopped and reported as such.
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


#: a run "blows up" (the paper's ∞) when a boom's tip deflects by more than this (m)
BLOW_UP = 1.0


def blow_up_event(model: fd.Model):
    """Terminal event: zero when the largest elastic tip displacement of a boom reaches
    :data:`BLOW_UP` (the tip node's translation rows of the modal matrix times ``η``)."""
    booms = [(model.q_slice(i).start + model.joints[i].nq, body.Pi_t[-1])
             for i, body in enumerate(model.bodies) if body.n_modes]

    def event(t, q, u):
        return BLOW_UP - max(float(np.linalg.norm(P @ q[s:s + P.shape[1]])) for s, P in booms)

    event.terminal = True
    return event


class WallLimit(Exception):
    """Raised by :func:`limited` past the wall-time limit; ``t`` the simulated time."""

    def __init__(self, t: float):
        super().__init__(t)
        self.t = t


def limited(tau, limit: float):
    """``tau(t, q, u)`` that raises :class:`WallLimit` once ``limit`` seconds of wall time
    have passed since this call."""
    deadline = time.perf_counter() + limit

    def torques(t, q, u):
        if time.perf_counter() > deadline:
            raise WallLimit(t)
        return tau(t, q, u)

    return torques


def run(maneuver: str, fidelity: str, span: float | None, limit: float) -> str:
    model = fd.models.shuttle_arm(membrane="modal")  # the paper's stiffening tensors
    tau, T = fd.models.shuttle_maneuver(model, maneuver)
    t1 = T if span is None else min(span, T)
    wall = time.perf_counter()
    angles = "—"
    try:
        res = fd.simulate(model, t_span=(0.0, t1), tau=limited(tau, limit), fidelity=fidelity,
                          t_eval=np.linspace(0.0, t1, 1000), events=blow_up_event(model),
                          integrator=fd.Auto(rtol=1e-7, atol=1e-9))
        if len(res.t_events[0]):
            outcome = f"blew up at {res.t_events[0][0]:.1f} s"
        else:
            outcome = f"{res.energy_balance_rms:.3g}"
            joints = res.q[-1, [int(model.q_start[i]) for i in range(6)]]
            angles = ", ".join(f"{a:+.4f}" for a in joints)
    except fd.SimulationError as exc:
        outcome = f"failed at {exc.t:.1f} s"
    except WallLimit as exc:
        outcome = f"not done in {limit / 60:g} min (at {exc.t:.1f} s)"
    paper = PAPER_TABLE_3[maneuver][fidelity]
    return (f"| {maneuver} | {fidelity} ({PAPER_NAMES[fidelity]}) | {outcome} | "
            f"{'∞' if paper is None else f'{paper:.3g}'} | {angles} | "
            f"{time.perf_counter() - wall:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 2 s of each maneuver")
    parser.add_argument("--maneuvers", default="I-f,I-s,II-f,II-s")
    parser.add_argument("--limit", type=float, default=10.0,
                        help="wall-time limit of each run, minutes (default 10)")
    args = parser.parse_args()
    span = 2.0 if args.quick else None
    print(f"flexdyn {fd.__version__}; DOP853, rtol 1e-7, 1000 samples"
          + (" (quick: 2 s of each)" if args.quick else ""))
    print("| maneuver | fidelity (paper) | e_E,RMS (%) | paper | joint angles at the end "
          "(rad) | wall (s) |")
    print("|---|---|---:|---:|---|---:|")
    for maneuver in args.maneuvers.split(","):
        for fidelity in ("ruthless", "consistent", "full", "exact"):
            print(run(maneuver, fidelity, span, 60.0 * args.limit), flush=True)


if __name__ == "__main__":
    main()
