"""Damaren & Sharf's Figs 3–10 for the Shuttle arm (Sec 4.2) with flexdyn's body models.

    python benchmarks/shuttle_figures.py --out docs/shuttle          # every figure (~1 h)
    python benchmarks/shuttle_figures.py --out /tmp/f --figures 5,6  # some of them
    python benchmarks/shuttle_figures.py --quick                     # 1 s of each run, no plots

Runs the maneuvers of :func:`flexdyn.models.shuttle_maneuver` with the model and tip
kinematics each figure compares, prints per run its outcome (or when it blew up: a boom tip
deflected by more than 1 m, as in ``bench_shuttle.py``), the joint angles at the end and the
largest boom-tip deflections, and with ``--out`` draws the figures (matplotlib):

* Fig 3 / Fig 4 — I-f joint angles, model EE / model I, for the tip kinematics
  ``"exponential"`` (the paper's (E)), ``"euler-321"``, ``"euler-123"``, ``"neglect"``;
* Fig 5 — I-f joint angles, EEE against I(E);
* Fig 6 — I-f boom-tip deflections (stretch and the two bending directions), I(E) and EEE;
* Fig 7 — I-f joint angles without torsion, EEE: natural modes (3 + 3 bending, 2 stretch)
  against finite elements (two per boom);
* Fig 8 — I-s joint angles, models I, EE, CL and RL;
* Fig 9 — II-f joint angles and the lower boom's tip deflection, model EE;
* Fig 10 — II-s joint angles and the lower boom's tip deflection, model EE, by the compiled
  generalized-α method with a fixed step of 0.1 ms and no numerical damping (the paper:
  relative tolerance 1e-12; DOP853 is too slow for the stretch modes these step torques
  excite).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import flexdyn as fd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_shuttle import WallLimit, blow_up_event, limited  # noqa: E402

NO_TORSION = {"transverse_y": 3, "transverse_z": 3, "axial": 2}
TIPS = ("exponential", "euler-321", "euler-123", "neglect")
#: a run: (maneuver, fidelity, tip kinematics, basis, modes by family as sorted items (None:
#: the paper's six), rtol, h: None for DOP853 at rtol, else the fixed step (s) of the compiled
#: generalized-α without numerical damping) — hashable, so that figures share runs
Run = tuple[str, str, str, str, "tuple | None", float, "float | None"]


def spec(maneuver: str, fidelity: str, tip: str = "exponential", basis: str = "natural",
         n_modes: dict | None = None, rtol: float = 1e-7, h: float | None = None) -> Run:
    return (maneuver, fidelity, tip, basis, None if n_modes is None
            else tuple(sorted(n_modes.items())), rtol, h)


#: per figure: its runs with their labels, and what it plots ("joints" or "deflections")
FIGURES = {
    3: ("I-f, model EE", [(f"EE, tip {t}", spec("I-f", "exact", t)) for t in TIPS], "joints"),
    4: ("I-f, model I", [(f"I, tip {t}", spec("I-f", "full", t)) for t in TIPS], "joints"),
    5: ("I-f, models I(E) and EEE", [("I(E)", spec("I-f", "full")),
                                     ("EEE", spec("I-f", "exact"))], "joints"),
    6: ("I-f boom tips, models I(E) and EEE", [("I(E)", spec("I-f", "full")),
                                               ("EEE", spec("I-f", "exact"))], "deflections"),
    7: ("I-f without torsion, model EEE",
        [("natural modes", spec("I-f", "exact", n_modes=NO_TORSION)),
         ("finite elements", spec("I-f", "exact", basis="finite", n_modes=NO_TORSION))],
        "joints"),
    8: ("I-s", [(f"{name}", spec("I-s", fidelity)) for name, fidelity in
                (("I", "full"), ("EE", "exact"), ("CL", "consistent"), ("RL", "ruthless"))],
        "joints"),
    9: ("II-f, model EE", [("EE", spec("II-f", "exact"))], "both"),
    10: ("II-s, model EE (generalized-α, h = 0.1 ms)", [("EE", spec("II-s", "exact", h=1e-4))],
         "both"),
}


def model_of(run: Run) -> fd.Model:
    _, _, tip, basis, n_modes, _, _ = run
    kw = {"n_elements": 2} if basis == "finite" else {}
    model = fd.models.shuttle_arm(basis=basis, n_modes=None if n_modes is None
                                  else dict(n_modes), membrane="modal", **kw)
    if tip != "exponential":
        model = fd.Model.from_dict({**model.to_dict(), "tip_kinematics": tip})
    return model


def simulate(run: Run, t_end: float | None, samples: int, limit: float) -> dict:
    """The histories of one run: ``t``, ``joints`` (nt, 6), ``tips`` (nt, 2, 3) (the two
    booms' tip deflections in their frames), ``outcome``, ``wall``."""
    maneuver, fidelity, _, _, _, rtol, h = run
    model = model_of(run)
    tau, T = fd.models.shuttle_maneuver(model, maneuver)
    t1 = T if t_end is None else min(t_end, T)
    joints = [int(model.q_start[i]) for i in range(6)]
    wall = time.perf_counter()
    try:
        if h is None:
            res = fd.simulate(model, t_span=(0.0, t1), tau=limited(tau, limit),
                              fidelity=fidelity,
                              t_eval=np.linspace(0.0, t1,
                              samples), events=blow_up_event(model),
                              integrator=fd.Auto(rtol=rtol, atol=rtol * 1e-2))
        else:  # no events with generalized-α: a blow-up shows as a non-finite state
            res = fd.simulate(model, t_span=(0.0, t1), tau=tau, fidelity=fidelity,
                              integrator=fd.GeneralizedAlpha(h=h, rho_inf=1.0),
                              t_eval=np.linspace(0.0, t1, samples))
        blown = res.t_events is not None and len(res.t_events[0]) > 0
        outcome = f"blew up at {res.t_events[0][0]:.1f} s" if blown else "done"
        out = {"t": res.t, "joints": res.q[:, joints],
               "tips": np.stack([res.deflection("upper_boom"), res.deflection("lower_boom")],
                                axis=1)}
    except (fd.SimulationError, WallLimit) as exc:
        outcome = f"stopped at {exc.t:.1f} s ({type(exc).__name__})"
        out = {"t": np.zeros(0), "joints": np.zeros((0, 6)), "tips": np.zeros((0, 2, 3))}
    return out | {"outcome": outcome, "wall": time.perf_counter() - wall}


def plot(number: int, title: str, labelled: list, what: str, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = {"joints": 6, "deflections": 6, "both": 9}[what]
    fig, axes = plt.subplots(rows // 3, 3, figsize=(12, 2.6 * (rows // 3)), sharex=True)
    axes = axes.ravel()
    for label, h in labelled:
        if not h["t"].size:
            continue
        k = 0
        if what in ("joints", "both"):
            for j in range(6):
                axes[k].plot(h["t"], h["joints"][:, j], label=label)
                axes[k].set_ylabel(f"θ{j + 1} (rad)")
                k += 1
        if what in ("deflections", "both"):
            booms = (0, 1) if what == "deflections" else (1,)
            for b in booms:
                for c, name in enumerate(("stretch", "deflection y", "deflection z")):
                    axes[k].plot(h["t"], h["tips"][:, b, c] * 1e3, label=label)
                    axes[k].set_ylabel(f"{('upper', 'lower')[b]} boom {name} (mm)")
                    k += 1
    for ax in axes[-3:]:
        ax.set_xlabel("t (s)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Fig {number}: {title}")
    fig.tight_layout()
    path = out / f"shuttle_fig{number}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for the figures (none: no plots)")
    parser.add_argument("--figures", default=",".join(str(k) for k in FIGURES))
    parser.add_argument("--quick", action="store_true", help="1 s of each run")
    parser.add_argument("--limit", type=float, default=15.0, help="minutes per run")
    args = parser.parse_args()
    wanted = [int(k) for k in args.figures.split(",")]
    t_end, samples = (1.0, 21) if args.quick else (None, 401)
    done: dict[Run, dict] = {}
    print("| figure | run | outcome | joint angles at the end (rad) | largest tip deflection "
          "upper / lower boom (mm) | wall (s) |")
    print("|---:|---|---|---|---|---:|")
    for number in wanted:
        title, runs, what = FIGURES[number]
        labelled = []
        for label, run in runs:
            if run not in done:
                done[run] = simulate(run, t_end, samples, 60.0 * args.limit)
            h = done[run]
            labelled.append((label, h))
            angles = ", ".join(f"{a:+.4f}" for a in h["joints"][-1]) if h["t"].size else "—"
            tips = (" / ".join(f"{np.max(np.linalg.norm(h['tips'][:, b], axis=1)) * 1e3:.1f}"
                               for b in (0, 1)) if h["t"].size else "—")
            print(f"| {number} | {label} | {h['outcome']} | {angles} | {tips} | "
                  f"{h['wall']:.1f} |", flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            print(f"  figure written to {plot(number, title, labelled, what, args.out)}")


if __name__ == "__main__":
    main()
