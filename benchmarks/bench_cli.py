"""How fast ``flexdyn --help`` answers, each figure the best of several fresh processes.

* **python -m flexdyn --help**: the command as a user types it (the package's ``__init__``
  runs first);
* **import flexdyn**: the part of that which is the package's own import (``-X importtime``,
  cumulative), and the heaviest modules it pulls in;
* **the command line alone**: ``flexdyn/__main__.py`` run with ``--help`` under an empty
  package (its ``__init__`` left out): what ``--help`` costs once the package imports its
  parts on first use, and the modules of numpy, scipy, numba and flexdyn it imported (none is
  the aim: the command line imports the library after parsing its arguments).

The load average is printed beside the figures: on a 2-core machine a load above 2 stretches
every figure.

Usage: ``python benchmarks/bench_cli.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

_ALONE = """
import runpy, sys, time, types
start = time.perf_counter()
package = types.ModuleType("flexdyn")
package.__path__ = [{folder!r}]
sys.modules["flexdyn"] = package
sys.argv = ["flexdyn", "--help"]
try:
    runpy.run_module("flexdyn.__main__", run_name="__main__")
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m != "flexdyn"
               and m.split(".")[0] in ("numpy", "scipy", "numba", "flexdyn"))
print(time.perf_counter() - start, " ".join(heavy), file=sys.stderr)
"""


def _best(args: list[str], repeat: int) -> tuple[float, str]:
    """Best wall time of ``python args`` over ``repeat`` runs, and the last run's stderr."""
    env = dict(os.environ, PYTHONPATH=str(SRC), FLEXDYN_COMPILE_NOTICE="0")
    best, err = float("inf"), ""
    for _ in range(repeat):
        wall = time.perf_counter()
        done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                              check=True)
        best = min(best, time.perf_counter() - wall)
        err = done.stderr
    return best, err


def _importtime(stderr: str) -> list[tuple[int, str]]:
    """``(cumulative microseconds, module)`` of each line of ``-X importtime``'s report."""
    rows = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            rows.append((int(cumulative), name.strip()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    print("load " + " ".join(f"{x:.2f}" for x in os.getloadavg()))

    wall, _ = _best(["-m", "flexdyn", "--help"], repeat)
    print(f"python -m flexdyn --help        {wall:.3f} s (best of {repeat})")

    _, err = _best(["-X", "importtime", "-m", "flexdyn", "--help"], 1)
    rows = _importtime(err)
    package = max((us for us, name in rows if name == "flexdyn"), default=0)
    print(f"  of which import flexdyn       {package / 1e6:.3f} s (-X importtime, cumulative)")
    top = sorted((r for r in rows if r[1] != "flexdyn" and r[1].startswith("flexdyn.")),
                 reverse=True)[:5]
    for us, name in top:
        print(f"    {name:<28}{us / 1e6:.3f} s")

    wall, err = _best(["-c", _ALONE.format(folder=str(SRC / "flexdyn"))], repeat)
    seconds, _, modules = err.strip().rpartition("\n")[2].partition(" ")
    print(f"the command line alone          {wall:.3f} s per process, {float(seconds):.3f} s "
          f"inside it (best of {repeat}; __init__ left out)")
    print(f"  library modules it imported   {modules.strip() or 'none'}")


if __name__ == "__main__":
    main()
