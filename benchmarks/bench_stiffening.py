"""Geometric stiffening: Damaren & Sharf's spin-up beam with every body model, and the
frequencies of a rotating cantilever.

    python benchmarks/bench_stiffening.py            # the paper's settings (about 3 min)
    python benchmarks/bench_stiffening.py --quick    # 5 s of the spin-up, fewer rates

Prints, for the spin-up beam (Sec 4.1: torque from the rigid beam's inverse dynamics of the
profile, integrator relative tolerance 1e-7, 1000 samples), in the lumped-element and the
natural-mode bases and the paper's one-element finite-element basis: per fidelity the RMS
energy drift ``e_E,RMS`` (Eq 32, Table 1), the hub rate at the end of the spin-up, the largest
bending and the stretch of the tip (steady, and its smallest value: the foreshortening),
the wall time, with the paper's stiffening tensors (``membrane="modal"``) and, for the exact
model, the default condensed ones; then the first flap and lag frequencies of a uniform
rotating cantilever (EI = ρA = L = 1) of the exact model against a Hermite-element solution
of the rotating Euler–Bernoulli beam, for 1–4 stretch modes, and for 1–40 elements.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import flexdyn as fd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_stiffening import (  # noqa: E402  (the test's independent rotating-beam solver)
    rotating_beam_frequencies,
    spinning_beam,
    steady_spin,
)

#: Damaren & Sharf's Table 1 (e_E,RMS in %, finite elements / natural modes)
PAPER_TABLE_1 = {"ruthless": (2.47e-3, 3.32e-3), "full": (5.35e-5, 5.90e-5),
                 "consistent": (0.159, 0.220), "exact": (1.40e-5, 8.47e-6)}
PAPER_NAMES = {"ruthless": "RL", "full": "I", "consistent": "CL", "exact": "EE"}


#: the spin-up beam's bases: the default lumped elements, the paper's natural modes and its
#: finite-element basis (one consistent-mass element)
BASES = {"lumped": 10, "natural": 10, "finite": 1}


def spinup(t_end: float, basis: str) -> None:
    """The paper's models (``membrane="modal"``: its stiffening tensors) per fidelity, and
    the exact model with the default, condensed, membrane energy."""
    print(f"\nspin-up beam, {basis} basis (2 bending + 1 stretch mode, {BASES[basis]} "
          f"element{'s' * (BASES[basis] > 1)}), {t_end:g} s, rtol 1e-7, 1000 samples")
    print("| fidelity | paper | e_E,RMS (%) | paper FE / NM | hub rate at 15 s (rad/s) | "
          "max bending (m) | stretch at end (mm) | min stretch (mm) | wall (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    runs = [(f, "modal", f) for f in ("ruthless", "full", "consistent", "exact")]
    for fidelity, membrane, label in [*runs, ("exact", "condensed", "exact, condensed")]:
        model = fd.models.spinup_beam(basis=basis, n_elements=BASES[basis], n_axial=1,
                                      membrane=membrane)
        torque = fd.models.spinup_torque(model)
        fd.forward_dynamics(model, model.neutral_configuration(), np.zeros(model.nu),
                            fidelity=fidelity)  # compile outside the timing
        res = fd.simulate(model, t_span=(0.0, t_end), tau=torque, fidelity=fidelity,
                          t_eval=np.linspace(0.0, t_end, 1000),
                          integrator=fd.Auto(rtol=1e-7, atol=1e-9))
        tip = res.deflection("beam")
        rate = np.interp(min(15.0, t_end), res.t, res.u[:, 0])
        fe, nm = PAPER_TABLE_1[fidelity]
        paper = PAPER_NAMES[fidelity] if membrane == "modal" else "—"
        print(f"| {label} | {paper} | {res.energy_balance_rms:.3g} | "
              f"{fe:.3g} / {nm:.3g} | {rate:.4f} | {np.max(np.abs(tip[:, 1])):.4g} | "
              f"{tip[-1, 0] * 1e3:.4g} | {np.min(tip[:, 0]) * 1e3:.4g} | "
              f"{res.wall_time:.2f} |")


def rotating(rates: list[float]) -> None:
    print("\nrotating cantilever, exact model, first flap / lag frequency in "
          "sqrt(EI/(ρA L⁴)); columns k = 1-4: 10 lumped elements, 1 flap + 1 lag bending mode "
          "and k stretch modes; last column: natural basis (31 nodes), 3 flap + 3 lag + 4 "
          "stretch modes")
    header = " | ".join(f"k = {k}" for k in range(1, 5))
    print(f"| Ω | rotating-beam solution | {header} | natural, 3 + 3 + 4 |")
    print("|---:|---:|" + "---:|" * 5)
    models = [spinning_beam(n_axial=k) for k in range(1, 5)]
    models.append(spinning_beam(4, n_elements=30, basis="natural", n_bending=3))
    for omega in rates:
        flap, lag = rotating_beam_frequencies(omega)
        cells = []
        for model in models:
            _, w = steady_spin(model, omega, "exact")
            cells.append(f"{w[1]:.4f} / {w[0]:.4f}")
        print(f"| {omega:g} | {flap:.4f} / {lag:.4f} | " + " | ".join(cells) + " |")


def axial(rates: list[float]) -> None:
    print("\nrotating cantilever, exact model, natural basis (31 nodes), 3 flap + 3 lag bending "
          "modes and k = 0-4 stretch modes: first flap / lag frequency (error vs the "
          "rotating-beam solution)")
    print("| Ω | rotating-beam solution | " + " | ".join(f"k = {k}" for k in range(5)) + " |")
    print("|---:|---:|" + "---:|" * 5)
    models = [spinning_beam(k, n_elements=30, basis="natural", n_bending=3) for k in range(5)]
    for omega in rates:
        flap, lag = rotating_beam_frequencies(omega)
        cells = []
        for model in models:
            w = steady_spin(model, omega, "exact")[1]
            cells.append(f"{w[1]:.4f} / {w[0]:.4f} ({100 * (w[1] / flap - 1):+.1f} %, "
                         f"{100 * (w[0] / lag - 1):+.1f} %)")
        print(f"| {omega:g} | {flap:.4f} / {lag:.4f} | " + " | ".join(cells) + " |")


def elements(rates: list[float]) -> None:
    print("\nrotating cantilever, exact model, 1 flap + 1 lag bending mode and 2 stretch modes, "
          "first flap / lag frequency against the number of elements (lumped elements; "
          "consistent-mass finite elements)")
    meshes = [("lumped", n) for n in (5, 10, 20, 40)] + [("finite", n) for n in (2, 4, 8)]
    print("| Ω | rotating-beam solution | "
          + " | ".join(f"{basis} {n}" for basis, n in meshes) + " |")
    print("|---:|---:|" + "---:|" * len(meshes))
    models = [spinning_beam(n_axial=2, n_elements=n, basis=basis) for basis, n in meshes]
    for omega in rates:
        flap, lag = rotating_beam_frequencies(omega)
        cells = [steady_spin(model, omega, "exact")[1] for model in models]
        print(f"| {omega:g} | {flap:.4f} / {lag:.4f} | "
              + " | ".join(f"{w[1]:.4f} / {w[0]:.4f}" for w in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 s of spin-up, two rates")
    args = parser.parse_args()
    wall = time.perf_counter()
    for basis in BASES:
        spinup(5.0 if args.quick else 20.0, basis)
    rotating([2.0, 6.0] if args.quick else [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    axial([2.0, 6.0] if args.quick else [2.0, 4.0, 6.0])
    elements([2.0, 6.0] if args.quick else [2.0, 4.0, 6.0])
    print(f"\ntotal {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
