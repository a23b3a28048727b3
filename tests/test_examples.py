"""The scripts in ``examples/`` run to completion (quick mode) and print what they promise.

All examples are started at once as subprocesses with ``FLEXDYN_EXAMPLE_QUICK=1`` (one BLAS
thread each), so the whole module takes about as long as the slowest example on a machine
with a few cores; each test then checks one example's exit status and its key output lines.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = (
    "01_flexible_arm_slew",
    "02_full_vs_ruthless",
    "03_cosimulation_loop",
    "04_spacecraft_momentum",
    "05_prescribed_slew",
    "06_flexible_slider_crank",
    "07_flexible_urdf_arm",
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
        if name == NAMES[0] and HAVE_MATPLOTLIB:
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


@pytest.mark.slow
def test_flexible_arm_slew(runs):
    out = _output(runs, "01_flexible_arm_slew")
    assert "same mass matrix as fd.models.two_link_arm: True" in out
    assert 0.01 < _number(r"max tip deflection: link1 (\S+) mm", out) * 1e-3 < 0.5
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-3
    if HAVE_MATPLOTLIB:
        assert "plot written to" in out
        assert (runs["_plot_dir"] / "01_flexible_arm_slew.png").stat().st_size > 0


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
    # with geometric stiffening ("exact", the default) the beam follows the profile
    assert _number(r"spin-up,\s+exact: max tip deflection\s+(\S+) m", out) < 0.5
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
    assert _number(r"energy balance error: max \|e_E\| = (\S+) %", out) < 1e-5


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
