"""Finite-element components: the cost of a consistent mass, side by side in one run.

The solar-array panel of ``examples/solar_array.npz`` (45 nodes, 270 DOFs, the consistent
mass of its frame elements) reduced to ``m`` cantilever modes at its root node and fixed to a
free-flying bus, per ``forward_dynamics`` call on the bound interface (``fd.bind``), twice:

* **consistent** — the body carries the inertia invariants of the consistent mass
  (:class:`flexdyn.body.InertiaInvariants`), its nodes massless;
* **lumped** — the same nodes and modes with the mass lumped at the nodes (each node's
  translational mass the row sum of its block, its rotary inertia the diagonal of its
  rotational block), the body of flexdyn's node masses.

Target: the consistent body at most 2× the lumped one at 20 modes.  Also the time of
``Component.reduce`` itself (eigenvalue problem and invariants), once.

Usage::

    python benchmarks/bench_fe.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flexdyn_bench.timing import per_call  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn.fe import Component  # noqa: E402

PANEL = Path(__file__).resolve().parent.parent / "examples" / "solar_array.npz"
ATTACH = 2


def lumped(component: Component) -> Component:
    """``component`` with its mass lumped at the nodes (module docstring)."""
    n, M = component.n_nodes, component.mass
    blocks = M.reshape(n, 6, n, 6)
    lumped_mass = np.zeros_like(M)
    for j in range(n):
        s = 6 * j
        lumped_mass[s:s + 3, s:s + 3] = np.sum(blocks[j, 0, :, 0]) * np.eye(3)
        lumped_mass[s + 3:s + 6, s + 3:s + 6] = np.diag(np.diag(blocks[j, 3:, j, 3:]))
    return Component(component.nodes, lumped_mass, component.stiffness, name="lumped")


def spacecraft(flex: dict) -> fd.Model:
    return (fd.ModelBuilder("spacecraft", gravity=(0, 0, 0))
            .add_body("bus", joint={"type": "free"},
                      rigid={"mass": 300.0, "inertia": np.diag([60.0, 50.0, 70.0])})
            .add_body("panel", "bus", flex=flex,
                      joint={"type": "fixed", "child_node": ATTACH,
                             "placement": {"translation": [0.6, 0.0, 0.0]}})
            .build())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer modes, shorter timing")
    args = parser.parse_args()
    min_time = 0.02 if args.quick else 0.2
    panel = fd.fe.load_component(PANEL)
    print(panel.info())
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'modes':>5} {'consistent µs':>14} {'lumped µs':>10} {'ratio':>6} {'reduce s':>9}")
    rng = np.random.default_rng(0)
    for m in ((6, 20) if args.quick else (6, 12, 20, 40)):
        start = time.perf_counter()
        flex = panel.reduce(ATTACH, n_modes=m, method="cantilever")
        reduce_time = time.perf_counter() - start
        # the same modes, the mass at the nodes
        basis = lumped(panel).reduce(ATTACH, n_modes=m, method="cantilever")
        basis["modes"], basis["stiffness"] = flex["modes"], flex["stiffness"]
        times = []
        for block in (flex, basis):
            model = spacecraft(block)
            dyn = fd.bind(model)
            q = model.neutral_configuration()
            q[7:] = 0.01 * rng.normal(size=m)
            u = 0.1 * rng.normal(size=model.nu)
            tau = rng.normal(size=model.nu)
            times.append(per_call(lambda d=dyn, q=q, u=u, t=tau: d.forward_dynamics(q, u, t),
                                  min_time=min_time))
        print(f"{m:5d} {1e6 * times[0]:14.1f} {1e6 * times[1]:10.1f} "
              f"{times[0] / times[1]:6.2f} {reduce_time:9.3f}")
    print("target: consistent / lumped <= 2 at 20 modes")


if __name__ == "__main__":
    main()
