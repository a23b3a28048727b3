"""Cost of hostile model files: each case in a fresh process, its wall time and peak memory.

* **alias bomb**: a YAML file of 1.5 kB whose aliases expand to millions of nodes (refused
  from the composed graph);
* **modes rows**: a JSON file whose ``modes`` has ``--rows`` rows (default 2 million, 14 MB;
  read and refused for its shape, or refused for its size before parsing);
* **value limit**: a JSON file at :data:`flexdyn.model_file.MAX_JSON_VALUES` (read, then
  refused for its shape): the most a model file may cost;
* **deep list** and **self-referential list** in :meth:`flexdyn.Model.from_dict`;
* **YAML value limit**: a YAML file just below :data:`~flexdyn.model_file.MAX_YAML_VALUES`.

Each line gives the outcome (the start of the error message), the wall time of the call and
the process's peak resident memory.  The load average is printed first: on a busy 2-core
machine every figure stretches.

Usage: ``python benchmarks/bench_hostile_files.py [--rows N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import resource, sys, time
sys.setrecursionlimit(10000)
from flexdyn import Model
from flexdyn.model_file import read_model_dict
{setup}
t = time.perf_counter()
try:
    {call}
    outcome = "accepted"
except ValueError as exc:
    outcome = "ValueError: " + str(exc).replace(chr(10), " ")[:90]
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{{wall:8.3f}} s  {{peak:7.0f}} MB  {{outcome}}")
"""


def _alias_bomb(path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 25)]
    path.write_text("\n".join(lines) + "\n")


def _modes_file(path: Path, rows: int) -> None:
    row = "[0.123456789]"
    with open(path, "w") as fh:
        fh.write('{"bodies": [{"name": "b", "joint": {"type": "revolute", "axis": [0, 0, 1]},'
                 ' "flex": {"nodes": [[0, 0, 0]], "node_masses": [1.0], "stiffness": [[1.0]],'
                 ' "modes": [')
        fh.write(",".join([row] * rows))
        fh.write("]}}]}\n")


def _case(name: str, setup: str, call: str) -> None:
    code = _RUN.format(setup=setup, call=call)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=False)
    print(f"{name:<28} {out.stdout.strip() or out.stderr.strip()[-200:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))  # this tree's flexdyn, as in the child processes
    from flexdyn.model_file import MAX_JSON_VALUES, MAX_YAML_VALUES

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _alias_bomb(tmp / "bomb.yaml")
        print(f"(alias bomb: {(tmp / 'bomb.yaml').stat().st_size} bytes)")
        _case("alias bomb", "", f"read_model_dict({str(tmp / 'bomb.yaml')!r})")
        _modes_file(tmp / "rows.json", args.rows)
        size = (tmp / "rows.json").stat().st_size / 1e6
        _case(f"modes {args.rows} rows ({size:.0f} MB)", "",
              f"Model.from_dict(read_model_dict({str(tmp / 'rows.json')!r}))")
        _modes_file(tmp / "limit.json", MAX_JSON_VALUES - 1000)
        size = (tmp / "limit.json").stat().st_size / 1e6
        _case(f"value limit ({size:.0f} MB)", "",
              f"Model.from_dict(read_model_dict({str(tmp / 'limit.json')!r}))")
        body = ('{"bodies": [{"name": "b", "joint": {"type": "revolute", "axis": [0, 0, 1]}, '
                '"rigid": {"mass": 1.0, "inertia": x}}]}')
        _case("5000-deep list", "x = [1.0]\nfor _ in range(5000):\n    x = [x]",
              f"Model.from_dict({body})")
        _case("self-referential list", "x = []\nx.append(x)", f"Model.from_dict({body})")
        n = MAX_YAML_VALUES - 1000
        (tmp / "limit.yaml").write_text(
            "name: m\nbodies:\n  - name: b\n    joint: {type: revolute, axis: [0, 0, 1]}\n"
            "    flex:\n      nodes: [[0, 0, 0]]\n      node_masses: [1.0]\n"
            "      stiffness: [[1.0]]\n      modes:\n" + "        - [0.5]\n" * n)
        _case(f"YAML value limit ({n} rows)", "",
              f"Model.from_dict(read_model_dict({str(tmp / 'limit.yaml')!r}))")


if __name__ == "__main__":
    main()
