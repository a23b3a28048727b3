"""Wall-clock comparison of flexdyn and Pinocchio on rigid revolute chains.

For serial chains of N = 5, 10, 20, 40 rigid bodies joined by revolute joints (random
axes, placements and inertias, gravity on) it times, on the same random state,

* inverse dynamics: ``flexdyn.inverse_dynamics`` vs ``pinocchio.rnea``;
* mass matrix:      ``flexdyn.mass_matrix``      vs ``pinocchio.crba``;
* forward dynamics: ``flexdyn.forward_dynamics`` (articulated-body method when available,
  and the composite-body method) vs ``pinocchio.aba``;

checks that both libraries agree, and prints the median time per call and the ratio
flexdyn / Pinocchio side by side.  Needs the optional ``pin`` package
(``pip install flexdyn[compare]``).

Usage::

    python benchmarks/bench_pinocchio.py [--bodies 5 10 20 40] [--repeat 7] [--seed 0]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    import flexdyn as fd
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import flexdyn as fd

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover: main() says what to install; importing stays possible
    pin = None


def _rotation(rng: np.random.Generator) -> np.ndarray:
    w, x, y, z = rng.normal(size=4)
    n = np.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def revolute_chain(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """A flexdyn model dict of a serial chain of ``n`` rigid bodies on revolute joints."""
    bodies = []
    for i in range(n):
        axis = rng.normal(size=3)
        mass = float(rng.uniform(0.5, 2.0))
        s = rng.uniform(0.001, 0.05, size=3) * mass
        R = _rotation(rng)
        inertia = R @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ R.T
        bodies.append({
            "name": f"link{i}",
            "parent": None if i == 0 else f"link{i - 1}",
            "joint": {
                "type": "revolute",
                "axis": (axis / np.linalg.norm(axis)).tolist(),
                "placement": {
                    "translation": rng.uniform(-0.5, 0.5, size=3).tolist(),
                    "rotation": _rotation(rng).tolist(),
                },
            },
            "rigid": {
                "mass": mass,
                "com": rng.uniform(-0.5, 0.5, size=3).tolist(),
                "inertia": (0.5 * (inertia + inertia.T)).tolist(),
            },
        })
    return {"name": f"revolute chain {n}", "gravity": [0.0, 0.0, -9.81], "bodies": bodies}


def to_pinocchio(d: dict[str, Any]) -> pin.Model:
    """The same chain as a Pinocchio model (joint frame = J_c = body frame here)."""
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(d["gravity"], float), np.zeros(3))
    parent = 0
    for b in d["bodies"]:
        j = b["joint"]
        pl = j["placement"]
        M = pin.SE3(np.array(pl["rotation"]), np.array(pl["translation"]))
        parent = model.addJoint(
            parent, pin.JointModelRevoluteUnaligned(np.array(j["axis"])), M, b["name"]
        )
        r = b["rigid"]
        model.appendBodyToJoint(
            parent,
            pin.Inertia(r["mass"], np.array(r["com"]), np.array(r["inertia"])),
            pin.SE3.Identity(),
        )
    return model


def median_time(fn: Callable[[], Any], repeat: int, min_time: float = 0.05) -> float:
    """Median seconds per call over ``repeat`` batches of at least ``min_time`` each."""
    fn()
    number, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        t = time.perf_counter() - t0
        if t >= min_time:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def _fmt(t: float) -> str:
    return f"{t * 1e6:10.1f}"


def bench_chain(n: int, seed: int, repeat: int, have_aba: bool) -> list[tuple[str, float, float,
                                                                             float]]:
    """Rows ``(algorithm, t_flexdyn, t_pinocchio, max|difference|)`` for an ``n``-body chain."""
    rng = np.random.default_rng(seed + n)
    d = revolute_chain(n, rng)
    model = fd.Model.from_dict(d)
    pmodel = to_pinocchio(d)
    pdata = pmodel.createData()
    q = rng.uniform(-np.pi, np.pi, size=n)
    u, udot, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)

    def pin_mass_matrix() -> np.ndarray:
        M = pin.crba(pmodel, pdata, q)
        return np.triu(M) + np.triu(M, 1).T  # crba fills the upper triangle

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any]]] = [
        ("inverse dynamics / rnea",
         lambda: fd.inverse_dynamics(model, q, u, udot),
         lambda: pin.rnea(pmodel, pdata, q, u, udot),
         lambda: pin.rnea(pmodel, pdata, q, u, udot).copy()),
        ("mass matrix / crba",
         lambda: fd.mass_matrix(model, q),
         lambda: pin.crba(pmodel, pdata, q),
         pin_mass_matrix),
    ]
    for method in (["articulated"] if have_aba else []) + ["composite"]:
        cases.append((
            f"forward dynamics ({method}) / aba",
            lambda method=method: fd.forward_dynamics(model, q, u, tau, method=method),
            lambda: pin.aba(pmodel, pdata, q, u, tau),
            lambda: pin.aba(pmodel, pdata, q, u, tau).copy(),
        ))
    rows = []
    for name, f_fd, f_pin, f_pin_value in cases:
        diff = float(np.max(np.abs(np.asarray(f_fd()) - f_pin_value())))
        rows.append((name, median_time(f_fd, repeat), median_time(f_pin, repeat), diff))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, nargs="+", default=[5, 10, 20, 40])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if pin is None:
        sys.exit("this benchmark needs Pinocchio: pip install pin")

    have_aba = importlib.util.find_spec("flexdyn.articulated_body") is not None
    print(f"flexdyn {fd.__version__}, Pinocchio {pin.__version__}, numpy {np.__version__}")
    print("median time per call in µs; ratio = flexdyn / Pinocchio\n")
    header = f"{'N':>3}  {'algorithm':<38}{'flexdyn':>10}{'Pinocchio':>10}{'ratio':>9}  max|diff|"
    print(header)
    print("-" * len(header))
    for n in args.bodies:
        for name, t_fd, t_pin, diff in bench_chain(n, args.seed, args.repeat, have_aba):
            print(f"{n:>3}  {name:<38}{_fmt(t_fd)}{_fmt(t_pin)} {t_fd / t_pin:7.0f}x  {diff:.1e}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
