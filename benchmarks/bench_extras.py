"""The engine's extras on the default path against the numpy reference, per call from Python:

* ``mass_matrix_inverse`` (Lemma 4: the articulated factors, then one filter and one smoother
  over the nu columns of the identity) — beside the engine's ``mass_matrix`` plus
  ``numpy.linalg.inv`` for scale;
* ``energies`` (``(T, V)``) and ``momentum``, one state per call and a batch of 1000 states
  in one call (per state);

on the rigid 10-link revolute chain of ``bench_pinocchio.py`` and the 5 steel beams of
``bench_engine.py`` (4 modes each, 25 dof), both fidelities.

Usage::

    python benchmarks/bench_extras.py
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import steel_chain  # noqa: E402
from bench_forward_dynamics import random_state  # noqa: E402
from bench_pinocchio import revolute_chain  # noqa: E402
from flexdyn_bench.timing import per_call  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn.energy import energies  # noqa: E402

BATCH = 1000


def row(label: str, engine: float, reference: float) -> None:
    print(f"  {label:<34} engine {1e6 * engine:9.2f} µs   reference {1e6 * reference:9.1f} µs"
          f"   reference / engine {reference / engine:6.0f}")


def bench(name: str, model: fd.Model, rng: np.random.Generator) -> None:
    q, u, _ = random_state(model, rng)
    qs = np.array([random_state(model, rng)[0] for _ in range(BATCH)])
    us = rng.normal(size=(BATCH, model.nu))
    print(f"\n{name} ({model.n_bodies} bodies, {model.nu} dof)")
    for fidelity in fd.FIDELITIES:
        print(f" {fidelity}")
        bench_fidelity(model, q, u, qs, us, fidelity)


def bench_fidelity(model: fd.Model, q, u, qs, us, fidelity: str) -> None:
    def both(fn, *args):
        return (per_call(lambda: fn(*args, fidelity)),
                per_call(lambda: fn(*args, fidelity, backend="reference"), 0.02, 2))

    row("mass_matrix_inverse", *both(fd.mass_matrix_inverse, model, q))
    t_mi = per_call(lambda: np.linalg.inv(fd.mass_matrix(model, q, fidelity)))
    print(f"  {'  (engine mass_matrix + np.linalg.inv':<34} {1e6 * t_mi:9.2f} µs)")
    row("energies (T, V)", *both(energies, model, q, u))
    row("momentum", *both(fd.momentum, model, q, u))
    t_b = per_call(lambda: energies(model, qs, us, fidelity), 0.05, 3) / BATCH
    t_bm = per_call(lambda: fd.mass_matrix_inverse(model, qs, fidelity), 0.05, 3) / BATCH
    print(f"  batch of {BATCH} in one call, per state: energies {1e6 * t_b:.2f} µs, "
          f"mass_matrix_inverse {1e6 * t_bm:.2f} µs ({os.cpu_count()} cores)")


def main() -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    chain = fd.Model.from_dict(revolute_chain(10, rng))
    for fidelity in fd.FIDELITIES:  # compile (or load) the entries first
        fd.mass_matrix_inverse(chain, chain.neutral_configuration(), fidelity)
        energies(chain, chain.neutral_configuration(), np.zeros(chain.nu), fidelity)
    print(f"first calls (compile or load from numba's cache): {time.perf_counter() - t0:.1f} s")
    bench("rigid revolute chain", chain, rng)
    bench("steel 5-beam chain", steel_chain(), rng)


if __name__ == "__main__":
    main()
