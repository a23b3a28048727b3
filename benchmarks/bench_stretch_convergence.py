"""Convergence of the exact (EE) body model in the stretch basis, with the default (condensed)
and Damaren & Sharf's (modal) membrane energy: a static cantilever under a tip load and the
torque-driven spin-up beam, against beam theory and a geometrically exact chain of rigid
segments.

    python benchmarks/bench_stretch_convergence.py            # both tables (about 2 minutes)
    python benchmarks/bench_stretch_convergence.py --quick    # 0-2 stretch modes, 5 s spin-up

Prints two markdown tables:

* the tip deflection of a cantilever (L = 2 m, EI = 100 N m², EA L²/EI = 8000, a tip force
  ``P`` that bends it by 2.7 % of L in beam theory) divided by ``P L³/3EI``, from
  :func:`flexdyn.equilibrium` with the tip force at the last node (``f_nodes``), for 0, 1,
  2, 4, 8, 16 stretch modes and four bending modes, in the lumped and the natural bases (32
  elements / 33 nodes), exact model with either membrane energy
  (:func:`flexdyn.beam.geometric_stiffness`), and the full model for comparison;
* the largest bending of the spin-up beam (``fd.models.spinup_beam(basis="natural")``, two
  bending modes, 40 elements' Gauss–Lobatto nodes, the torque of
  ``fd.models.spinup_torque``, 20 s, rtol 1e-7) with 1, 2, 4, 8 stretch modes, exact model
  with either membrane energy, beside a chain of 20 and 40 rigid segments with bending
  springs driven by the same torque (``tests/helpers.py``: ``segment_spinup``), whose large
  rotations are exact, and its Richardson extrapolation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import flexdyn as fd
from flexdyn.beam import beam_modes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import segment_spinup  # noqa: E402  (the tests' geometrically exact chain)

L, MU, EI, SLENDERNESS, DEFLECTION = 2.0, 1.0, 100.0, 8000.0, 0.027
MEMBRANES = ("condensed", "modal")


def cantilever_ratio(n_stretch: int, basis: str, fidelity: str, membrane: str) -> float:
    """δ_tip / (P L³/3EI) of the static cantilever (module docstring)."""
    modes = {"transverse_z": 4, **({"axial": n_stretch} if n_stretch else {})}
    beam = beam_modes(L, MU, EI_y=EI, EA=SLENDERNESS * EI / L**2, n_elements=32,
                      n_modes=modes, basis=basis, membrane=membrane)
    model = fd.ModelBuilder("cantilever").add_body(
        "beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build()
    P = DEFLECTION * L * 3 * EI / L**3
    eq = fd.equilibrium(model, f_nodes={("beam", -1): [0, 0, 0, 0, 0, -P]},
                        fidelity=fidelity)
    tip = -model.bodies[0].Pi_t[-1][2] @ model.eta(eq.q, 0)
    return float(tip / (DEFLECTION * L))


def spinup_bending(n_stretch: int, t_end: float, membrane: str) -> tuple[float, float]:
    """(largest bending (m), wall time (s)) of the torque-driven spin-up, exact model."""
    model = fd.models.spinup_beam(basis="natural", n_elements=40, n_axial=n_stretch,
                                  membrane=membrane)
    res = fd.simulate(model, t_span=(0.0, t_end), tau=fd.models.spinup_torque(model),
                      t_eval=np.linspace(0.0, t_end, 1000), integrator=fd.Auto(rtol=1e-7,
                      atol=1e-9))
    return float(np.max(np.abs(res.deflection("beam")[:, 1]))), res.wall_time


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="0-2 stretch modes, 5 s spin-up")
    args = parser.parse_args(argv)
    counts = (0, 1, 2) if args.quick else (0, 1, 2, 4, 8, 16)
    out: dict = {"cantilever": {}, "spinup": {}}
    print(f"cantilever, tip force, EA L²/EI = {SLENDERNESS:g}, beam-theory deflection "
          f"{100 * DEFLECTION:g} % of L: δ_tip / (P L³/3EI), 4 bending modes, 32 elements")
    print("| stretch modes | " + " | ".join(str(k) for k in counts) + " | full |")
    print("|---|" + "---:|" * (len(counts) + 1))
    for membrane in MEMBRANES:
        for basis in ("lumped", "natural"):
            start = time.perf_counter()
            row = [cantilever_ratio(k, basis, "exact", membrane) for k in counts]
            full = cantilever_ratio(counts[-1], basis, "full", membrane)
            out["cantilever"][membrane, basis] = row + [full]
            print(f"| exact, {membrane}, {basis} | " + " | ".join(f"{r:.3f}" for r in row)
                  + f" | {full:.3f} |   ({time.perf_counter() - start:.1f} s)")
    t_end = 5.0 if args.quick else 20.0
    counts = (1, 2) if args.quick else (1, 2, 4, 8)
    segments = (10, 20) if args.quick else (20, 40)
    print(f"\nspin-up beam, exact, natural basis (2 bending modes, 41 nodes), {t_end:g} s: "
          "largest bending (m)")
    print("| stretch modes | " + " | ".join(str(k) for k in counts) + " |")
    print("|---|" + "---:|" * len(counts))
    walls = []
    for membrane in MEMBRANES:
        for k in counts:
            bending, wall = spinup_bending(k, t_end, membrane)
            out["spinup"][membrane, k] = bending
            walls.append(wall)
        print(f"| {membrane} | " + " | ".join(f"{out['spinup'][membrane, k]:.3f}"
                                            for k in counts) + " |")
    print("(wall " + ", ".join(f"{w:.1f}" for w in walls) + " s)")
    t_eval = np.linspace(0.0, t_end, 1001)
    torque = fd.models.spinup_torque(fd.models.spinup_beam(basis="natural", n_elements=40))
    start = time.perf_counter()
    coarse, fine = (float(np.max(np.abs(segment_spinup(n, t_eval, torque)))) for n in segments)
    out["segments"] = (coarse, fine, fine + (fine - coarse) / 3)
    print(f"\nrigid segments: {segments[0]}: {coarse:.4f} m, {segments[1]}: {fine:.4f} m, "
          f"extrapolated {out['segments'][2]:.4f} m   ({time.perf_counter() - start:.1f} s)")
    return out


if __name__ == "__main__":
    main()
