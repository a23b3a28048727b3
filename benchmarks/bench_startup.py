"""Startup figures of a new user's first hour, each in fresh processes, side by side.

* **install**: a fresh virtual environment and ``pip install -e .`` of this tree (skipped with
  ``--no-install``);
* **demo, cold and warm**: ``python -m flexdyn demo`` with an empty ``NUMBA_CACHE_DIR``, then
  again with the cache it filled: wall time and CPU time of the process;
* **first hour, cold**: a newcomer's first calls in one process with an empty cache, as the
  README and the docs write them (the demo's simulation, ``simulate`` with the default
  integrator, forward and inverse dynamics with the bias forces, the mass matrix,
  ``linearize``, ``modal_analysis``): wall and CPU time of each;
* **compile ahead, cold** (``--all``): every task of ``python -m flexdyn compile --all``
  (:func:`flexdyn.precompile.tasks`) in one process with an empty cache;
* **first call, warm**: ``import flexdyn`` and one ``forward_dynamics`` of the two-link arm in a
  new process whose cache is full (best of three), ``import flexdyn`` alone, and the part of
  it that is numba's own start-up (numpy, numba, the ``scipy.linalg`` its array functions
  import, and its typing and target registries, which loading any cached function refreshes).

The load average is printed beside the figures: on a 2-core machine a load above 2 stretches
every figure.  ``docs/install.md`` quotes the figures of a quiet run.

Usage: ``python benchmarks/bench_startup.py [--all] [--no-install]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flexdyn_bench.timing import user_environment  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

_TIMED = """
import json, time, warnings
warnings.simplefilter("ignore")
import numpy as np
import flexdyn as fd
{calls}
rows = []
for what, call in calls:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    rows.append((what, time.perf_counter() - wall, time.process_time() - cpu))
print(json.dumps(rows))
"""
# a newcomer's first hour: the calls of the README and docs/quickstart.md on the demo's arm
_NEWCOMER = """
arm = fd.models.two_link_arm()
q, u, tau = arm.neutral_configuration(), np.full(arm.nu, 0.1), np.full(arm.nu, 0.2)
calls = [
    ("the demo's simulation (DOP853)",
     lambda: fd.simulate(arm, t_span=(0.0, 1e-3), tau=tau, integrator="DOP853")),
    ("simulate, default integrator", lambda: fd.simulate(arm, t_span=(0.0, 1e-3), tau=tau)),
    ("forward_dynamics", lambda: fd.forward_dynamics(arm, q, u, tau)),
    ("inverse_dynamics, bias_forces",
     lambda: (fd.inverse_dynamics(arm, q, u, tau), fd.bias_forces(arm, q, u))),
    ("mass_matrix", lambda: fd.mass_matrix(arm, q)),
    ("linearize", lambda: fd.linearize(arm, q, u, tau)),
    ("modal_analysis", lambda: fd.modal_analysis(arm)),
]
"""
_AHEAD = """
from flexdyn.precompile import tasks
calls = [(task.what, task.run) for task in tasks(everything=True)]
"""

_FIRST_CALL = """
import time
start = time.perf_counter()
import numpy as np
import flexdyn as fd
imported = time.perf_counter()
model = fd.models.two_link_arm()
fd.forward_dynamics(model, model.neutral_configuration(), np.zeros(model.nu), np.ones(model.nu))
print(imported - start, time.perf_counter() - start)
"""

# what every process pays before it can run a cached numba function: numpy, numba, the
# scipy.linalg that numba's array functions import, and numba's registries
_FLOOR = """
import time
start = time.perf_counter()
import numpy, numba
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()
cpu_target.typing_context.refresh()
print(time.perf_counter() - start)
"""


def _run(args: list[str], cache: str, python: str = sys.executable) -> tuple[float, float, str]:
    """Wall and CPU seconds (the child's user + system) of ``python args`` with
    ``NUMBA_CACHE_DIR=cache``, and its standard output."""
    env = user_environment(NUMBA_CACHE_DIR=cache, FLEXDYN_COMPILE_NOTICE="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([python, *args], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def install() -> None:
    with tempfile.TemporaryDirectory() as where:
        wall = time.perf_counter()
        venv.create(where, with_pip=True)
        pip = [str(Path(where) / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "-e", str(ROOT)], check=True, capture_output=True)
        print(f"install: fresh venv + pip install -e . {time.perf_counter() - wall:7.1f} s  "
              f"({_load()})")


def _cold(name: str, calls: str, cache: str) -> None:
    """Run the ``calls`` (the source of a list ``calls`` of ``(what, call)``) in one process
    with the cache ``cache``, empty: wall and CPU time in all and of each."""
    wall, cpu, out = _run(["-c", _TIMED.format(calls=calls)], cache)
    print(f"{name}, cold: {wall:7.1f} s wall {cpu:7.1f} s CPU in all  ({_load()})")
    for what, w, c in json.loads(out):
        print(f"  {what:<52} {w:7.1f} s wall {c:7.1f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true",
                        help="also every task of python -m flexdyn compile --all")
    parser.add_argument("--no-install", action="store_true", help="skip the install figure")
    options = parser.parse_args()
    if not options.no_install:
        install()
    with tempfile.TemporaryDirectory() as cache:
        for state in ("cold", "warm"):
            wall, cpu, _ = _run(["-m", "flexdyn", "demo"], cache)
            print(f"demo, {state}: {wall:7.1f} s wall {cpu:7.1f} s CPU  ({_load()})")
    with tempfile.TemporaryDirectory() as cache:
        _cold("first hour", _NEWCOMER, cache)
        firsts = [tuple(map(float, _run(["-c", _FIRST_CALL], cache)[2].split()))
                  for _ in range(3)]
        imported, called = min(firsts, key=lambda f: f[1])
        print(f"first call, warm cache: import flexdyn {imported:.2f} s, import + "
              f"forward_dynamics {called:.2f} s  ({_load()})")
        floor = min(float(_run(["-c", _FLOOR], cache)[2]) for _ in range(3))
        print(f"  of which numba's start-up (numpy, numba, scipy.linalg, its registries), "
              f"which any cached numba function pays: {floor:.2f} s")
    if options.all:
        with tempfile.TemporaryDirectory() as cache:
            _cold("compile --all", _AHEAD, cache)


if __name__ == "__main__":
    main()
