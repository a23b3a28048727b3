"""The compiled engine (``flexdyn.engine``) side by side with the numpy reference, the
compiled ruthless tier (``flexdyn.fast``) and Pinocchio, per call from Python.

* rigid revolute chains (N = 7, 10, 20, 50; the models of ``bench_pinocchio.py``):
  forward dynamics, engine vs ``pinocchio.aba`` (ratio), reference and ``flexdyn.fast``;
* the flexible 5-beam chain of ``bench_forward_dynamics.py`` (4 modes per link): engine vs
  reference, full and ruthless;
* compile cost: the first call in a fresh process with an empty numba cache (cold) and with
  the cache filled (warm).

Usage::

    python benchmarks/bench_engine.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_forward_dynamics import flexible_chain, random_state  # noqa: E402
from flexdyn_bench.timing import per_call  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn.engine import Engine  # noqa: E402
from flexdyn.fast import CompiledRuthlessModel  # noqa: E402

FIRST_CALL = (
    "import time, numpy as np, flexdyn as fd; t0 = time.perf_counter(); "
    "from flexdyn.engine import Engine; m = fd.models.builtin_model('two_link_arm'); "
    "q, z = m.neutral_configuration(), np.zeros(m.nu); Engine(m).forward_dynamics(q, z, z); "
    "print(time.perf_counter() - t0)"
)


def first_call(cache_dir: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.split()[-1])


def rigid_row(n, rng, pin, revolute_chain, to_pinocchio) -> None:
    """One line of the rigid-chain table."""
    d = revolute_chain(n, rng)
    model = fd.Model.from_dict(d)
    pm = to_pinocchio(d)
    data = pm.createData()
    q, u, tau = (rng.uniform(-1, 1, size=model.nu) for _ in range(3))
    engine = Engine(model, "full")
    compiled = CompiledRuthlessModel(model)
    t_e = per_call(lambda: engine.forward_dynamics(q, u, tau))
    t_p = per_call(lambda: pin.aba(pm, data, q, u, tau))
    err = np.max(np.abs(engine.forward_dynamics(q, u, tau) - pin.aba(pm, data, q, u, tau)))
    t_f = per_call(lambda: compiled.forward_dynamics(q, u, tau))
    t_r = per_call(lambda: fd.forward_dynamics(model, q, u, tau, backend="reference"),
                   min_time=0.02, repeat=2)
    print(f"{n:>4} {1e6 * t_e:>9.1f} {1e6 * t_p:>9.2f} {t_e / t_p:>7.1f} {1e6 * t_f:>9.1f} "
          f"{1e6 * t_r:>10.0f}   (max |Δu̇| vs Pinocchio {err:.1e})")


def flexible_row(model, fidelity, q, u, tau) -> None:
    """One line of the flexible-chain table."""
    engine = Engine(model, fidelity)
    t_e = per_call(lambda: engine.forward_dynamics(q, u, tau))
    t_r = per_call(lambda: fd.forward_dynamics(model, q, u, tau, fidelity=fidelity,
                                               backend="reference"),
                   min_time=0.02, repeat=2)
    print(f"  {fidelity:<9} engine {1e6 * t_e:8.1f}   reference {1e6 * t_r:8.0f}   "
          f"reference / engine {t_r / t_e:5.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")  # numba performance hints
    try:
        import pinocchio as pin
        from bench_pinocchio import revolute_chain, to_pinocchio
    except ImportError:
        pin = None
    rng = np.random.default_rng(0)
    print("rigid revolute chains, forward dynamics per call (µs)")
    print(f"{'N':>4} {'engine':>9} {'pin.aba':>9} {'ratio':>7} {'fast':>9} {'reference':>10}")
    for n in (7, 10) if args.quick else (7, 10, 20, 50):
        if pin is None:
            print("  (Pinocchio not installed: pip install 'flexdyn[compare]')")
            break
        rigid_row(n, rng, pin, revolute_chain, to_pinocchio)
    print("\nflexible 5-beam chain, 4 modes per link, forward dynamics per call (µs)")
    model = flexible_chain(5, 4)
    q, u, tau = random_state(model, rng)
    for fidelity in fd.FIDELITIES:
        flexible_row(model, fidelity, q, u, tau)
    if not args.quick:
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call(cache)
            warm = first_call(cache)
        print(f"\nfirst call in a fresh process: cold cache {cold:.1f} s, warm cache {warm:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
