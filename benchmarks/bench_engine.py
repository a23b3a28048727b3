"""The compiled engine on the default path, side by side with Pinocchio, against the targets
of the engine (ratios measured in one run; no wall-clock limits anywhere else).

* rigid revolute chains (N = 7 … 200; the random unaligned chains of ``bench_pinocchio.py``
  and aligned ones): the bound call ``dyn.forward_dynamics`` (``dyn = fd.bind(model)``) vs
  ``pinocchio.aba`` (target ≤ 1.5×) and the module-level ``fd.forward_dynamics`` (≤ 2×);
* 10⁴ states of the 7-link chain in one batched call vs a Python loop of ``pinocchio.aba``
  (target ≤ 1×);
* a chain of 5 steel beams (1 m, 5 cm square, 4 cantilever modes each; 25 dof), full
  fidelity, the bound call vs ``pinocchio.aba`` on a rigid 25-link chain (target ≤ 4×), the
  module-level call and the numpy reference;
* the ruthless 10-link chain with 5 and 10 modes per link: time(composite) /
  time(articulated) (targets ≥ 3.7 and ≥ 7.3, the paper's flop ratios) and the articulated
  time at 10 modes (target ≤ 10 µs);
* scaling: time(N = 160) / time(N = 20) of articulated forward dynamics (target ≤ 8.5);
* ``fd.hybrid_dynamics`` per call, engine and numpy reference (forward dynamics beside it),
  on the rigid 10-link chain (every other joint prescribed) and the steel chain (the joints
  prescribed, the modes free);
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
import time
import warnings
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_forward_dynamics import flexible_chain, random_state  # noqa: E402
from bench_pinocchio import revolute_chain, to_pinocchio  # noqa: E402
from flexdyn_bench.timing import per_call, user_environment  # noqa: E402

import flexdyn as fd  # noqa: E402
from flexdyn.beam import beam_modes  # noqa: E402

FIRST_CALL = (
    "import time; t0 = time.perf_counter(); import numpy as np, flexdyn as fd; "
    "m = fd.models.builtin_model('two_link_arm'); "
    "q, z = m.neutral_configuration(), np.zeros(m.nu); fd.forward_dynamics(m, q, z, z); "
    "print(time.perf_counter() - t0)"
)
STEEL = {"E": 210e9, "rho": 7850.0, "side": 0.05}


def first_call(cache_dir: str) -> float:
    """Seconds from import to the first forward dynamics in a fresh process."""
    env = user_environment(NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.split()[-1])


def steel_chain(n_bodies: int = 5, n_modes: int = 4) -> fd.Model:
    """Serial chain of 1 m steel beams of 5 cm square section, cantilever modes, revolute
    joints alternating about z and y, each link on the tip of the previous one."""
    a, E, rho = STEEL["side"], STEEL["E"], STEEL["rho"]
    EI = E * a**4 / 12.0
    beam = beam_modes(1.0, rho * a * a, EI_y=EI, EI_z=EI, n_elements=6, n_modes=n_modes,
                      damping_ratio=0.005)
    bodies = []
    for i in range(n_bodies):
        joint = {"type": "revolute", "axis": [0.0, 0.0, 1.0] if i % 2 == 0 else [0.0, 1.0, 0.0],
                 "child_node": 0, "parent_node": None if i == 0 else 6}
        bodies.append({"name": f"link{i}", "parent": None if i == 0 else f"link{i - 1}",
                       "joint": joint, "flex": beam.to_flex_dict()})
    return fd.Model.from_dict({"name": "steel chain", "gravity": [0.0, 0.0, -9.81],
                               "bodies": bodies})


def fd_time(model, q, u, tau, min_time: float = 0.05, repeat: int = 5, **options) -> float:
    """Seconds per ``fd.forward_dynamics`` call from Python."""
    return per_call(lambda: fd.forward_dynamics(model, q, u, tau, **options), min_time, repeat)


def pin_aba_time(pin, n: int, rng) -> tuple[float, dict, object, object]:
    """Seconds per ``pinocchio.aba`` call on the rigid ``n``-link chain (and the chain)."""
    d = revolute_chain(n, rng)
    pm = to_pinocchio(d)
    data = pm.createData()
    q, u, tau = (rng.uniform(-1, 1, size=n) for _ in range(3))
    return per_call(lambda: pin.aba(pm, data, q, u, tau)), d, pm, data


def aligned_chain(n: int, rng) -> dict:
    """The chain of :func:`bench_pinocchio.revolute_chain` with every joint about z, no
    placement rotation, the centres of mass and the next joint on the x axis and principal
    inertias along the axes."""
    d = revolute_chain(n, rng)
    for b in d["bodies"]:
        b["joint"]["axis"] = [0.0, 0.0, 1.0]
        b["joint"]["placement"] = {"translation": [0.5, 0.0, 0.0], "rotation": np.eye(3).tolist()}
        b["rigid"]["com"] = [0.25, 0.0, 0.0]
        b["rigid"]["inertia"] = np.diag(np.diag(b["rigid"]["inertia"])).tolist()
    return d


def rigid_chains(pin, sizes, rng) -> dict[int, float]:
    """Forward dynamics per call on rigid revolute chains: ``pinocchio.aba``, the bound call
    ``dyn.forward_dynamics`` (:func:`flexdyn.bind`) and the module-level call
    ``fd.forward_dynamics(model, …)``; the bound times of the unaligned chains by N."""
    print("rigid revolute chains, forward dynamics per call from Python (µs): unaligned = "
          "random axes, rotated placements, off-axis centres of mass")
    print(f"{'N':>5} {'chain':<10}{'pin.aba':>9}{'bound':>9}{'module':>9}{'bound/pin':>11}"
          f"{'module/pin':>12}   targets ≤ 1.5, ≤ 2")
    times = {}
    for n in sizes:
        for kind, make in (("aligned", aligned_chain), ("unaligned", revolute_chain)):
            t_p, t_b, t_m, err = _chain_times(pin, make(n, rng), rng)
            if kind == "unaligned":
                times[n] = t_b
            print(f"{n:>5} {kind:<10}{1e6 * t_p:>9.2f}{1e6 * t_b:>9.2f}{1e6 * t_m:>9.2f}"
                  f"{t_b / t_p:>11.2f}{t_m / t_p:>12.2f}   (max |Δu̇| {err:.1e})")
    return times


def _chain_times(pin, d: dict, rng) -> tuple[float, float, float, float]:
    """Seconds per call of ``pinocchio.aba``, the bound and the module-level forward dynamics
    on the chain ``d``, and their largest difference."""
    pm = to_pinocchio(d)
    data = pm.createData()
    model = fd.Model.from_dict(d)
    dyn = fd.bind(model)
    q, u, tau = (rng.uniform(-1, 1, size=model.nu) for _ in range(3))
    err = np.max(np.abs(dyn.forward_dynamics(q, u, tau) - pin.aba(pm, data, q, u, tau)))
    return (per_call(lambda: pin.aba(pm, data, q, u, tau)),
            per_call(lambda: dyn.forward_dynamics(q, u, tau)), fd_time(model, q, u, tau), err)


def batch(pin, n_states: int, rng) -> None:
    d = revolute_chain(7, rng)
    model, pm = fd.Model.from_dict(d), to_pinocchio(d)
    data = pm.createData()
    q, u, tau = (rng.uniform(-1, 1, size=(n_states, model.nu)) for _ in range(3))
    fd.forward_dynamics(model, q[:2], u[:2], tau[:2])
    t_b = min(_timed(lambda: fd.forward_dynamics(model, q, u, tau)) for _ in range(3))
    t_p = min(_timed(lambda: [pin.aba(pm, data, q[b], u[b], tau[b]) for b in range(n_states)])
              for _ in range(3))
    got = fd.forward_dynamics(model, q, u, tau)
    err = max(np.max(np.abs(got[b] - pin.aba(pm, data, q[b], u[b], tau[b])))
              for b in range(0, n_states, 97))
    print(f"\n{n_states} states of the 7-link chain: one batched call {1e3 * t_b:.1f} ms, "
          f"Python loop of pin.aba {1e3 * t_p:.1f} ms, ratio {t_b / t_p:.2f} (target ≤ 1; "
          f"{os.cpu_count()} cores; max |Δu̇| {err:.1e})")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def flexible(pin, rng) -> None:
    model = steel_chain()
    q, u, tau = random_state(model, rng)
    t_p = pin_aba_time(pin, model.nu, rng)[0]
    print(f"\nsteel 5-beam chain, 4 modes per link ({model.nu} dof), forward dynamics per call "
          f"(µs); pin.aba on a rigid {model.nu}-link chain {1e6 * t_p:.2f} µs")
    for fidelity in fd.FIDELITIES:
        dyn = fd.bind(model, fidelity=fidelity)
        t_b = per_call(lambda dyn=dyn: dyn.forward_dynamics(q, u, tau))
        t_e = fd_time(model, q, u, tau, fidelity=fidelity)
        t_r = fd_time(model, q, u, tau, 0.02, 2, fidelity=fidelity, backend="reference")
        target = "   target ≤ 4" if fidelity == "full" else ""
        print(f"  {fidelity:<9} bound {1e6 * t_b:8.1f}   / pin.aba(N={model.nu}) "
              f"{t_b / t_p:5.2f}{target}   module {1e6 * t_e:8.1f}   reference "
              f"{1e6 * t_r:8.0f}   reference / bound {t_r / t_b:5.0f}")


def hybrid_time(args: tuple, backend: str, min_time: float, repeat: int) -> float:
    """Seconds per ``fd.hybrid_dynamics(*args, backend=backend)`` call from Python."""
    return per_call(lambda: fd.hybrid_dynamics(*args, backend=backend), min_time, repeat)


def hybrid(rng) -> None:
    """``fd.hybrid_dynamics`` per call from Python on the engine and on the reference."""
    print("\nhybrid_dynamics per call from Python (µs), engine and numpy reference")
    rigid, steel = fd.Model.from_dict(revolute_chain(10, rng)), steel_chain()
    joints = np.zeros(steel.nu, dtype=bool)
    for i in range(steel.n_bodies):
        joints[steel.u_start[i]:steel.u_start[i] + steel.nu_joint[i]] = True
    for name, model, mask in (("rigid 10-link chain, every other joint prescribed", rigid,
                               np.arange(rigid.nu) % 2 == 0),
                              ("steel 5-beam chain, joints prescribed, modes free", steel,
                               joints)):
        q, u, tau = random_state(model, rng)
        args = (model, q, u, tau, rng.normal(size=model.nu), mask)
        times = [hybrid_time(args, backend, *timing)
                 for backend, timing in (("engine", (0.05, 5)), ("reference", (0.02, 2)))]
        t_f = fd_time(model, q, u, tau)
        print(f"  {name:<50} engine {1e6 * times[0]:7.1f}   reference {1e6 * times[1]:7.0f}"
              f"   reference / engine {times[1] / times[0]:4.0f}   (forward dynamics on the "
              f"engine {1e6 * t_f:.1f})")


def ruthless_ratio(rng) -> None:
    print("\nruthless 10-link chain: composite / articulated forward dynamics")
    for n_modes, paper in ((5, 3.68), (10, 7.27)):
        model = flexible_chain(10, n_modes)
        q, u, tau = random_state(model, rng)
        t = {m: fd_time(model, q, u, tau, method=m, fidelity="ruthless")
             for m in ("articulated", "composite")}
        print(f"  {n_modes:>2} modes: articulated {1e6 * t['articulated']:7.1f} µs, composite "
              f"{1e6 * t['composite']:7.1f} µs, ratio {t['composite'] / t['articulated']:5.2f} "
              f"(paper's flop ratio {paper})")


def scaling(times: dict[int, float], rng) -> None:
    for n in (20, 160):
        if n not in times:
            model = fd.Model.from_dict(revolute_chain(n, rng))
            q, u, tau = (rng.uniform(-1, 1, size=model.nu) for _ in range(3))
            times[n] = fd_time(model, q, u, tau)
    print(f"\nscaling: time(N = 160) / time(N = 20) = {times[160] / times[20]:.2f} "
          "(target ≤ 8.5)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, no compile timing")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")  # numba performance hints
    try:
        import pinocchio as pin
    except ImportError:
        print("Pinocchio is not installed: pip install 'flexdyn[compare]'")
        return 1
    rng = np.random.default_rng(0)
    times = rigid_chains(pin, (7, 10) if args.quick else (7, 10, 20, 50, 100, 160, 200), rng)
    batch(pin, 200 if args.quick else 10_000, rng)
    flexible(pin, rng)
    hybrid(rng)
    if not args.quick:
        ruthless_ratio(rng)
        scaling(times, rng)
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call(cache)
            warm = first_call(cache)
        print(f"\nfirst call in a fresh process (import included): cold cache {cold:.1f} s, "
              f"warm cache {warm:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
