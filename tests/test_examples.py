"""The scripts in ``examples/`` run to completion (quick mode), print what they promise, save
their figures with ``--plot``, and print the lines that ``docs/examples.md`` shows.

All examples are started at once as subprocesses with ``FLEXDYN_EXAMPLE_QUICK=1`` (one BLAS
thread each), so the whole module takes about as long as the slowest example on a machine
with a few cores; each test then checks one example's exit status and its key output lines.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NAMES = (
    "01_flexible_arm_slew",
    "02_full_vs_ruthless",
    "03_cosimulation_loop",
    "04_spacecraft_momentum",
    "05_prescribed_slew",
    "06_flexible_slider_crank",
    "07_flexible_urdf_arm",
    "08_solar_array_panel",
)
TIMEOUT = 300  # s, per example
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Run every example in parallel; ``{name: CompletedProcess}`` (text output)."""
    out_dir = tmp_path_factory.mktemp("examples")
    env = dict(os.environ, FLEXDYN_EXAMPLE_QUICK="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("FLEXDYN_EXAMPLE_PLOT", None)
    procs = {}
    for name in NAMES:
        args = [sys.executable, str(EXAMPLES / f"{name}.py")]
        if HAVE_MATPLOTLIB:
            args += ["--plot", str(out_dir / f"{name}.png")]
        procs[name] = (args, subprocess.Popen(args, cwd=out_dir, env=env, text=True,
                                              stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE))
    results = {}
    try:
        for name, (args, proc) in procs.items():
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
            results[name] = subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
    finally:
        for _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    results["_plot_dir"] = out_dir
    return results


def _output(runs, name: str) -> str:
    run = runs[name]
    assert run.returncode == 0, f"{name} failed:\n{run.stdout}\n{run.stderr}"
    return run.stdout


def _number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, f"no line matching {pattern!r} in:\n{text}"
    return float(m.group(1))


def test_examples_are_listed():
    assert sorted(p.stem for p in EXAMPLES.glob("[0-9][0-9]_*.py")) == sorted(NAMES)


#: a number (with sign, decimals, exponent) or a hexadecimal address
_FIGURE = re.compile(r"0x[0-9a-f]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: a bracketed list without brackets inside
_LIST = re.compile(r"\[[^\[\]]*\]")


def _lines_without_figures(text: str) -> list[str]:
    """The lines of ``text`` with every figure a ``#``, every list of figures one ``#`` and
    every bracketed list ``‹…›`` (the number of modes changes their length), runs of spaces
    one space, a run of lines that read the same one line, and the lines of a saved figure
    left out."""
    lines: list[str] = []
    for line in text.strip().splitlines():
        if line.startswith("plot written to"):
            continue
        line = re.sub(r"#(?:, #)+", "#", _FIGURE.sub("#", line))
        while _LIST.search(line):
            line = _LIST.sub("‹…›", line)
        line = " ".join(line.split())
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _documented_outputs() -> dict[str, str]:
    """``{example name: the output docs/examples.md shows above the example's listing}``."""
    text = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    found = re.findall(r"```text\n(.*?)```\s*```\{literalinclude\} \.\./examples/(\S+)\.py",
                       text, re.S)
    return {name: output for output, name in found}


def test_documented_outputs_are_what_the_scripts_print(runs):
    """Each output that ``docs/examples.md`` quotes (from a full run) has the lines that the
    script prints in its quick run, line for line, the figures aside."""
    documented = _documented_outputs()
    assert sorted(documented) == sorted(NAMES)
    for name in NAMES:
        printed = _lines_without_figures(_output(runs, name))
        shown = _lines_without_figures(documented[name])
        assert shown == printed, f"docs/examples.md shows another output of {name}"


def test_lines_without_figures():
    """Figures, addresses and list lengths are left out; words, units and order are not."""
    a = ("x at 0x7f1a: [1.5, -2e-3] m, 3 steps\n  y  [[1, 2], [3]]\n  y [4]\nf 1, 2.5 Hz\n"
         "plot written to a")
    b = "x at 0xab: [7.25] m, 10 steps\ny [[5]]\nf 0.5 Hz"
    assert _lines_without_figures(a) == _lines_without_figures(b) == [
        "x at #: ‹…› m, # steps", "y ‹…›", "f # Hz"]
    assert _lines_without_figures("x 3 steps") != _lines_without_figures("x 3 stages")
    assert _lines_without_figures("a\nb") != _lines_without_figures("b\na")


def _script_cells(script: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of each cell of a percent script, read line by line: the header
    between two ``# ---`` lines skipped, a markdown cell's ``# `` prefixes removed."""
    lines = script.split("\n")
    if lines[0] == "# ---":
        lines = lines[lines.index("# ---", 1) + 1:]
    cells: list[tuple[str, list[str]]] = []
    for line in lines:
        if line in ("# %%", "# %% [markdown]"):
            cells.append(("code" if line == "# %%" else "markdown", []))
        else:
            assert cells or not line.strip(), f"text before the first cell: {line!r}"
            if cells:
                kind, body = cells[-1]
                body.append(line[2:] if kind == "markdown" else line)
    return [(kind, "\n".join(body).strip("\n")) for kind, body in cells]


def test_notebooks_are_the_scripts():
    """Every example has a notebook beside it (``python examples/make_notebooks.py`` writes
    them) whose cells are the script's cells, prose and code, in order; nbformat's own
    validator accepts it."""
    spec = importlib.util.spec_from_file_location("make_notebooks",
                                                  EXAMPLES / "make_notebooks.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    for name in NAMES:
        script = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
        path = EXAMPLES / f"{name}.ipynb"
        hint = "run python examples/make_notebooks.py"
        assert path.exists(), f"{path.name} is missing: {hint}"
        text = path.read_text(encoding="utf-8")
        assert text == make.notebook_text(script), f"{path.name} is not its script's: {hint}"
        cells = [(c["cell_type"], "".join(c["source"])) for c in json.loads(text)["cells"]]
        assert cells == _script_cells(script), name
        assert all(c[1].strip() for c in cells), f"an empty cell in {path.name}"
    nbformat = pytest.importorskip("nbformat")
    for name in NAMES:
        nbformat.validate(nbformat.read(EXAMPLES / f"{name}.ipynb", as_version=4))


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="the figures need matplotlib")
@pytest.mark.parametrize("name", NAMES)
def test_plot_option_saves_the_figure(runs, name):
    out = _output(runs, name)
    path = runs["_plot_dir"] / f"{name}.png"
    assert f"plot written to {path}" in out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_examples_raise_no_warning(runs, name):
    """Examples show good practice: no warning (a StiffnessWarning, a deprecated argument)."""
    assert "Warning" not in _output(runs, name) + runs[name].stderr, runs[name].stderr


def test_flexible_arm_slew(runs):
    out = _output(runs, "01_flexible_arm_slew")
    assert "same mass matrix as fd.models.two_link_arm: True" in out
    assert 0.01 < _number(r"max tip deflection: link1 (\S+) mm", out) * 1e-3 < 0.5
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-3


def test_full_vs_ruthless(runs):
    out = _output(runs, "02_full_vs_ruthless")
    # the arm: full conserves energy, ruthless does not
    assert _number(r"arm,\s+full: .* max \|e_E\| (\S+) %", out) < 1e-3
    assert _number(r"arm,\s+ruthless: .* max \|e_E\| (\S+) %", out) > 1e-2
    # the spin-up beam above its first bending frequency: full bends without bound and
    # its hub rate stalls near 3.78 rad/s; ruthless follows the 6 rad/s profile
    assert _number(r"spin-up,\s+full: max tip deflection\s+(\S+) m", out) > 5.0
    assert _number(r"spin-up,\s+full: .* hub rate at \S+ s (\S+) rad/s", out) < 4.0
    assert _number(r"spin-up,\s+ruthless: max tip deflection\s+(\S+) m", out) < 1.0
    assert abs(_number(r"spin-up,\s+ruthless: .* hub rate at \S+ s (\S+) rad/s", out)
               - 6.0) < 0.05
    # with geometric stiffening ("exact", the default) the beam follows the profile and
    # bends by decimetres (0.57 m for a geometrically exact chain of rigid segments)
    assert 0.3 < _number(r"spin-up,\s+exact: max tip deflection\s+(\S+) m", out) < 1.0
    assert abs(_number(r"spin-up,\s+exact: .* hub rate at \S+ s (\S+) rad/s", out)
               - 6.0) < 0.05
    assert _number(r"spin-up,\s+exact: .* max \|e_E\| (\S+) %", out) < 1e-3


def test_cosimulation_loop(runs):
    out = _output(runs, "03_cosimulation_loop")
    assert "link1.eta_dot[0]" in out
    assert _number(r"RK4 loop: energy balance error max \|e_E\| = (\S+) %", out) < 1e-2
    assert _number(r"vs simulate: max joint angle difference (\S+) rad", out) < 1e-2
    assert "status -1" in out
    assert _number(r"max \|ẋ_C − rhs\| = (\S+)", out) < 1e-9
    if "return code" in out:  # a C compiler is on the path
        assert "libarm.so: return code 0" in out
        assert _number(r"max \|ẋ_lib − rhs\| = (\S+)", out) < 1e-9


def test_spacecraft_momentum(runs):
    out = _output(runs, "04_spacecraft_momentum")
    assert "6 rigid-body modes" in out
    assert _number(r"angular momentum .* \((\S+) relative\)", out) < 1e-8
    assert _number(r"linear momentum .* max drift (\S+) N s", out) < 1e-8
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-3


def test_prescribed_slew(runs):
    out = _output(runs, "05_prescribed_slew")
    # the flexible arm needs more torque than the rigid one for the same motion
    flexible = _number(r"feedforward torque: shoulder peak (\S+) N m", out)
    rigid = _number(r"rigid arm: shoulder peak (\S+) N m", out)
    assert flexible > 1.2 * rigid > 0.0
    assert 5.0 < _number(r"tip deflection of link 2: peak (\S+) mm", out) < 50.0
    assert _number(r"moment about z is the shoulder torque: max difference (\S+) N m",
                   out) < 1e-9
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-4
    assert _number(r"differ from the plan by (\S+) rad", out) < 1e-4


def test_flexible_slider_crank(runs):
    out = _output(runs, "06_flexible_slider_crank")
    assert "assembled: slider at 0.450000 m (closed form 0.450000 m)" in out
    # the rod bends, the slider follows the rigid mechanism to within the deflection
    deflection = _number(r"rod midspan deflection: peak (\S+) mm", out)
    assert 0.05 < deflection < 5.0
    assert _number(r"slider vs the rigid mechanism: max difference (\S+) mm", out) < deflection
    assert _number(r"closure drift: max (\S+) m", out) < 1e-8
    # the compiled Radau IIA's work integrals (by its quadrature), 1.3e-5 % in the quick run
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-4


def test_flexible_urdf_arm(runs):
    out = _output(runs, "07_flexible_urdf_arm")
    assert "Model('ur5', bodies=7, nq=8, nu=8, modes=[0, 0, 0, 2, 0, 0, 0])" in out
    # the tube sags about a millimetre under the wrist and bends a little more in the move
    sag = _number(r"tip deviation from the rigid arm: (\S+) mm static sag", out)
    peak = _number(r"peak (\S+) mm during the move", out)
    assert 0.3 < sag < peak < 10.0
    assert (_number(r"largest difference (\S+) N m", out)
            < _number(r"(\S+) N m for the rigid arm", out))
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-4


def test_solar_array_panel(runs):
    """The consistent-mass panel from its finite-element file: the reduced spacecraft's
    frequencies are the full finite-element model's (from above, within 0.5 %), the slew
    conserves energy, the flexible panel's root moment overshoots the rigid panel's."""
    out = _output(runs, "08_solar_array_panel")
    assert "consistent mass; mass 9.5 kg" in out
    assert "6 rigid-body modes" in out
    assert 0.0 <= _number(r"largest difference: (\S+) %", out) < 0.5
    assert "with radau-iia" in out  # the free joint in local coordinates
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-3
    assert 1.0 < _number(r"the flexible panel's is (\S+) times it", out) < 3.0
    assert 1.0 < _number(r"peak (\S+) mm during the slew", out) < 20.0
