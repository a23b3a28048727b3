"""Tests of the command line (``flexdyn`` / ``python -m flexdyn``)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.__main__ import main


def data_file(name: str) -> str:
    return str(resources.files("flexdyn").joinpath("data").joinpath(f"{name}.json"))


def test_demo_prints_summary(capsys, tmp_path):
    plot = tmp_path / "demo.png"
    args = ["demo", "--t", "0.2"]
    have_mpl = True
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        have_mpl = False
    if have_mpl:
        args += ["--plot", str(plot), "--animate", str(tmp_path / "demo.gif")]
    assert main(args) == 0
    out = capsys.readouterr().out
    print(out)
    assert "two_link_arm" in out
    assert "2 bodies" in out and "nu = 4" in out and "modes per body [1, 1]" in out
    assert "max tip deflection" in out and "link1" in out
    assert "e_E,RMS" in out and "wall time" in out
    if have_mpl:
        assert plot.stat().st_size > 1000
        assert (tmp_path / "demo.gif").read_bytes()[:6] == b"GIF89a"
        assert f"animation     {tmp_path / 'demo.gif'}" in out


def test_demo_spacecraft_ruthless(capsys):
    assert main(["demo", "--model", "spacecraft", "--t", "0.5", "--fidelity", "ruthless",
                 "--method", "composite"]) == 0
    out = capsys.readouterr().out
    assert "spacecraft" in out and "fidelity ruthless" in out and "method composite" in out
    assert "array_pos" in out


def test_info_prints_frequencies(capsys):
    assert main(["info", data_file("spinup_beam")]) == 0
    out = capsys.readouterr().out
    assert "beam" in out and "revolute" in out and "(ground)" in out
    assert "nq = 5" in out and "nu = 5" in out  # the hub angle, 2 bending + 2 stretch modes
    model = fd.models.builtin_model("spinup_beam")
    w = np.sqrt(np.diag(model.bodies[0].K)) / (2 * np.pi)  # mass-normalised modes
    for f in w:
        assert f"{f:.6g}" in out
    assert "0.60" in out  # first bending frequency, Hz


def test_info_prints_joint_forces_and_their_frequencies(tmp_path, capsys):
    """A rigid body on a universal joint with springs 20 and 10 N m/rad (unit inertia): the
    forces block is listed and the assembled frequencies are √k / 2π."""
    path = tmp_path / "springs.json"
    path.write_text(json.dumps({"name": "springs", "bodies": [{
        "name": "disc", "joint": {"type": "universal", "axes": [[1, 0, 0], [0, 1, 0]],
                                  "forces": {"stiffness": [20, 10], "damping": 0.5}},
        "rigid": {"mass": 1.0, "inertia": np.eye(3).tolist()}}]}))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "joint forces of disc (flexdyn.joint_forces): stiffness [20, 10], damping 0.5" in out
    expected = sorted(np.sqrt([20.0, 10.0]) / (2 * np.pi))
    assert f"joints free  : 0 rigid-body modes; {expected[0]:.6g}, {expected[1]:.6g}" in out


def test_info_tree(capsys):
    assert main(["info", data_file("spacecraft")]) == 0
    out = capsys.readouterr().out
    assert "free" in out and "array_neg" in out and "hub" in out
    assert out.count("array_pos:") == 1
    # the assembled system beside the per-body frequencies: the free-floating spacecraft has
    # six rigid-body modes; its lowest elastic mode (both arrays bending together, the hub
    # recoiling) lies above the cantilever's, the locked one repeats it per array
    free = next(ln for ln in out.splitlines() if "joints free" in ln)
    locked = next(ln for ln in out.splitlines() if "joints locked" in ln)
    assert "6 rigid-body modes" in free and "0 rigid-body modes" in locked
    per_body = float(out.split("array_pos:")[1].split(",")[0])
    lowest_free = float(free.split("modes;")[1].split(",")[0])
    assert lowest_free > per_body
    assert locked.count(f"{per_body:.6g}") == 2


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "flexdyn", "info", data_file("two_link_arm")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "link2" in proc.stdout and "Hz" in proc.stdout


def bad_files(tmp_path):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"format": "flexdyn-model", "bodies": [', encoding="utf-8")
    d = json.loads(open(data_file("two_link_arm"), encoding="utf-8").read())
    d["bodies"][1]["parent"] = "nonexistent"
    bad_model = tmp_path / "bad_model.json"
    bad_model.write_text(json.dumps(d), encoding="utf-8")
    return {
        "missing": str(tmp_path / "missing.json"),
        "invalid JSON": str(bad_json),
        "invalid model": str(bad_model),
        "directory": str(tmp_path),
    }


@pytest.mark.parametrize("command", ["info", "simulate"])
@pytest.mark.parametrize("case", ["missing", "invalid JSON", "invalid model", "directory"])
def test_bad_files_exit_2(command, case, tmp_path, capsys):
    path = bad_files(tmp_path)[case]
    assert main([command, path]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("flexdyn: error: ")
    assert err.count("\n") == 1 and "Traceback" not in err
    if case == "invalid model":
        assert "nonexistent" in err
    if case == "invalid JSON":
        assert "JSON" in err


def test_bad_file_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "flexdyn", "info", str(tmp_path / "no.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("flexdyn: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_simulate_writes_npz_and_csv(tmp_path, capsys):
    model = fd.models.spinup_beam(n_axial=0, n_bending=1, n_elements=4)
    path = tmp_path / "beam.json"
    fd.save_model(model, path)
    npz = tmp_path / "out.npz"
    assert main(["simulate", str(path), "--t", "0.2", "--out", str(npz),
                 "--samples", "11"]) == 0
    res = fd.SimulationResult.from_npz(npz)
    assert res.t.shape == (11,) and res.t[-1] == pytest.approx(0.2)
    assert np.all(res.u == 0.0)  # zero torque from rest
    csv = tmp_path / "out.csv"
    assert main(["simulate", str(path), "--t", "0.2", "--out", str(csv), "--fidelity",
                 "ruthless", "--method", "composite", "--rtol", "1e-6"]) == 0
    lines = csv.read_text().splitlines()
    assert lines[0].startswith("t,q:beam.theta,q:beam.eta[0],u:beam.theta_dot")
    assert len(lines) == 1 + 1001
    out = capsys.readouterr().out
    assert "written" in out and "fidelity ruthless" in out
    assert main(["simulate", str(path), "--out", str(tmp_path / "out.txt")]) == 2
    assert capsys.readouterr().err.startswith("flexdyn: error: ")


def test_argument_errors():
    with pytest.raises(SystemExit) as info:
        main(["demo", "--model", "nope"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["demo", "--t", "-1"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main([])


def test_info_accepts_a_builtin_model_name(capsys):
    from flexdyn.__main__ import main

    assert main(["info", "spacecraft"]) == 0
    out = capsys.readouterr().out
    assert "hub" in out and "Hz" in out


def test_simulate_with_initial_state_loads_and_plot(tmp_path, capsys):
    """``--set`` and ``--tau`` by state-layout names give the run of ``fd.simulate`` with that
    initial state and constant torque; the ``.npz`` keeps the settings and versions; a
    misspelt name is refused with the closest names."""
    out, png = tmp_path / "run.npz", tmp_path / "run.png"
    assert main(["simulate", data_file("two_link_arm"), "--t", "0.5", "--samples", "11",
                 "--set", "link1.theta=0.3", "--set", "link2.theta_dot=1",
                 "--tau", "link1.theta_dot=2", "--out", str(out), "--plot", str(png)]) == 0
    assert png.stat().st_size > 0
    res = fd.SimulationResult.from_npz(out)
    arm = fd.load_model(data_file("two_link_arm"))
    q0, u0, tau = np.zeros(arm.nq), np.zeros(arm.nu), np.zeros(arm.nu)
    q0[0], u0[int(arm.u_start[1])], tau[0] = 0.3, 1.0, 2.0
    ref = fd.simulate(arm, q0, u0, (0.0, 0.5), tau=tau, t_eval=np.linspace(0, 0.5, 11))
    assert np.max(np.abs(res.q - ref.q)) < 1e-12
    # simulate's default choice for a flexible arm with constant torques, and its tolerances
    assert res.settings["integrator"] == "radau-iia" and res.settings["tau"] == "constant"
    assert (res.settings["error_norm"], res.settings["rtol"]) == ("displacement", 1e-6)
    assert res.settings["versions"]["numpy"] == np.__version__
    capsys.readouterr()
    assert main(["simulate", data_file("two_link_arm"), "--set", "link1.thta=0.3"]) == 2
    assert "did you mean link1.theta" in capsys.readouterr().err
    assert main(["simulate", data_file("two_link_arm"), "--tau", "link1.theta_dot=x"]) == 2
    assert "expected NAME=NUMBER" in capsys.readouterr().err


def _engine_function(name: str):
    """A numba dispatcher of a new function whose module is the engine's
    ``flexdyn.engine.kernels`` (what the compile notice listens for), compiled on its first
    call."""
    import numba

    namespace = {"__name__": "flexdyn.engine.kernels"}
    exec(f"def {name}(x):\n    return x + 1.0\n", namespace)
    return numba.njit(namespace[name])


def _slow_compiles():
    """A context in which every numba compile lasts 0.3 s at least (a listener of
    ``"numba:compile"`` that sleeps as a compile starts)."""
    import time

    from numba.core import event

    class Slow(event.Listener):
        def on_start(self, ev):
            time.sleep(0.3)

        def on_end(self, ev):
            pass

    return event.install_listener("numba:compile", Slow())


def test_a_long_compile_of_an_engine_entry_is_announced_once(capsys, monkeypatch):
    """A compile of an engine entry that lasts longer than the notice delay prints one line
    naming the entry and one with the time it took; a call that finds the entry compiled, a
    compile shorter than the delay, a compile outside the engine and one inside
    ``notice.silenced()`` print nothing."""
    import time

    import numba

    from flexdyn.engine import notice

    notice.install()
    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.05)
    mass = _engine_function("mass")
    with _slow_compiles():
        assert mass(1.0) == 2.0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith("flexdyn: compiling the mass matrix (kernels.mass) for its first "
                             "use"), err
    assert err[1].startswith("flexdyn: compiled the mass matrix (kernels.mass) in "), err
    assert mass(2.0) == 3.0  # compiled: no notice
    assert capsys.readouterr().err == ""

    monkeypatch.setattr(notice, "NOTICE_AFTER", 5.0)
    assert _engine_function("inverse")(1.0) == 2.0  # shorter than the delay
    time.sleep(0.1)
    assert capsys.readouterr().err == ""

    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.05)
    outside = numba.njit(lambda x: x - 1.0)  # this test module's, not the engine's
    with _slow_compiles():
        assert outside(1.0) == 0.0
    with notice.silenced(), _slow_compiles():
        assert _engine_function("hybrid")(1.0) == 2.0
    assert capsys.readouterr().err == ""


def test_the_notice_estimates_a_first_compile_and_a_later_one(capsys, monkeypatch):
    """An entry with an estimate is quoted at its first-entry figure when the thread has
    compiled no engine entry yet, at its later figure after one."""
    from flexdyn.engine import notice

    notice.install()
    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.05)
    monkeypatch.setattr(notice, "ESTIMATES", {"kernels.first": (80, 15),
                                              "kernels.later": (80, 15)})
    monkeypatch.setattr(notice._listener._compile(), "total", 0.0)
    with _slow_compiles():
        assert _engine_function("first")(1.0) == 2.0
        assert _engine_function("later")(1.0) == 2.0
    said = [line for line in capsys.readouterr().err.splitlines() if "compiling" in line]
    assert len(said) == 2, said
    assert "(up to about 80 s on 2 cores;" in said[0] and "kernels.first" in said[0]
    assert "(up to about 15 s on 2 cores;" in said[1] and "kernels.later" in said[1]


def test_a_runs_wall_time_leaves_the_compile_out(capsys):
    """The seconds a thread spends compiling engine entries are counted (not those of a
    function outside the engine), and a run's stopwatch
    (:class:`flexdyn.simulation.loop.Stopwatch`) gives them apart from its wall time; a
    simulation of warm entries reports no compile time."""
    import time

    import numba

    import flexdyn as fd
    from flexdyn.engine import notice
    from flexdyn.simulation.loop import Stopwatch

    notice.install()
    start, clock, before = time.perf_counter(), Stopwatch(), notice.compile_seconds()
    with notice.silenced(), _slow_compiles():
        engine = _engine_function("energy")
        assert engine(1.0) == 2.0
        compiled = time.perf_counter()
        assert numba.njit(lambda x: x - 1.0)(1.0) == 0.0  # not the engine's: not counted
    stats, end = clock.stats(), time.perf_counter()
    assert stats["compile_time"] == notice.compile_seconds() - before
    assert 0.3 <= stats["compile_time"] <= compiled - start
    assert stats["wall_time"] >= 0.3  # the outside function's compile, slept 0.3 s
    assert abs(stats["wall_time"] + stats["compile_time"] - (end - start)) < 0.01
    model = fd.models.two_link_arm()
    fd.simulate(model, t_span=(0.0, 0.01))
    res = fd.simulate(model, t_span=(0.0, 0.01))
    assert res.settings["compile_time"] == 0.0 and res.wall_time > 0.0
    capsys.readouterr()


def test_compile_reports_progress(capsys, monkeypatch):
    """``flexdyn compile`` makes the first calls of :func:`flexdyn.precompile.tasks`
    (``--all``: every one) with a progress line per task and a total."""
    import flexdyn.precompile as pre

    ran = []

    def fake(everything=False):
        return [pre.Task(f"task {k}", lambda k=k: ran.append((k, everything)))
                for k in range(2)]

    monkeypatch.setattr(pre, "tasks", fake)
    assert main(["compile"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ran == [(0, False), (1, False)]
    assert out[0].startswith("[..] 1/2 task 0 ...") and out[0].endswith(" s"), out
    assert out[1].startswith("[#.] 2/2 task 1 ..."), out
    assert out[2].startswith("compiled 2 groups of entries in"), out
    assert main(["compile", "--all"]) == 0
    assert ran[2:] == [(0, True), (1, True)]


def test_the_precompile_tasks_cover_the_first_hour_and_every_entry():
    """The default tasks are a newcomer's first hour; ``everything`` adds the other entries
    (their names only: running them is the compile itself)."""
    from flexdyn.precompile import tasks

    first = [t.what for t in tasks()]
    assert any("demo" in w for w in first) and any("simulate's default" in w for w in first)
    assert {"the mass matrix", "modal_analysis"} <= set(first)
    assert any(w.startswith("linearize") for w in first)
    every = [t.what for t in tasks(everything=True)]
    assert every[:len(first)] == first
    assert {"rigid trees", "loop closures", "hybrid dynamics"} <= set(every)


@pytest.mark.slow
def test_every_precompile_task_runs(quiet_numba):
    """Each first call of ``python -m flexdyn compile --all`` runs on its model (a task
    that raises would stop the command half way)."""
    from flexdyn.precompile import precompile, tasks

    done = precompile(everything=True)
    assert [what for what, _ in done] == [t.what for t in tasks(everything=True)]


def test_torques_by_joint_name_and_validate(tmp_path, capsys):
    """``--tau link1=2`` names the one-speed joint of ``link1`` (the same run as its speed's
    name); a joint of several speeds asks for one of them.  ``validate`` exits 0 on a valid
    file and 2 with every error it finds, one per line."""
    args = ["simulate", data_file("two_link_arm"), "--t", "0.05", "--samples", "3"]
    by_joint, by_speed = tmp_path / "joint.npz", tmp_path / "speed.npz"
    assert main([*args, "--tau", "link1=2", "--out", str(by_joint)]) == 0
    assert main([*args, "--tau", "link1.theta_dot=2", "--out", str(by_speed)]) == 0
    a, b = (fd.SimulationResult.from_npz(p) for p in (by_joint, by_speed))
    assert np.array_equal(a.q, b.q) and np.max(np.abs(a.q[-1, 0])) > 0.0
    capsys.readouterr()
    sc = fd.models.spacecraft()
    sc_file = tmp_path / "sc.json"
    fd.save_model(sc, sc_file)
    hub = sc.names[0]
    assert main(["simulate", str(sc_file), "--tau", f"{hub}=1"]) == 2
    assert f"the joint of {hub!r} has 6 speeds" in capsys.readouterr().err

    assert main(["validate", data_file("two_link_arm")]) == 0
    assert "valid — model 'two_link_arm', 2 bodies" in capsys.readouterr().out
    d = json.loads(Path(data_file("two_link_arm")).read_text())
    d["bodies"][0]["joint"]["type"] = "hinge"
    d["bodies"][1]["parent"] = "nobody"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(d))
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"flexdyn: {broken}: not valid:") and "2 problems" in err, err
    assert "hinge" in err and "parent \"nobody\" does not exist" in err, err


def test_unknown_joint_names_every_joint(capsys):
    """``--tau`` with a name that is neither a joint nor a speed lists the model's joints by
    the bodies they move, with the speeds of a joint that has several; a close name is
    offered first."""
    assert main(["simulate", data_file("two_link_arm"), "--tau", "link3=2"]) == 2
    err = capsys.readouterr().err
    assert ("'link3' is neither a joint nor a speed of the model; its joints, named by the "
            "body they move: link1, link2; did you mean link") in err, err
    assert err.count("link2") == 2 and err.rstrip().endswith("?"), err
    sc = fd.models.spacecraft()
    assert main(["simulate", "spacecraft", "--tau", "wheel=1"]) == 2
    err = capsys.readouterr().err
    speeds = ", ".join(e.name for e in fd.state_layout(sc)["u"][:6])
    assert f"hub (6 speeds: {speeds})" in err and "array_pos (" not in err, err


def test_parser_choices_are_the_librarys():
    """The choices written out in the command line (so that ``--help`` imports nothing of
    the library) are the library's."""
    import flexdyn.__main__ as cli
    from flexdyn.dynamics import FORWARD_METHODS

    assert cli.FIDELITY_NAMES == fd.FIDELITIES
    assert cli.DEFAULT_FIDELITY_NAME == fd.DEFAULT_FIDELITY
    assert cli.METHOD_NAMES == tuple(FORWARD_METHODS)
    assert cli.BUILTIN_MODEL_NAMES == tuple(sorted(fd.models.BUILTIN_MODELS))


_HELP_ALONE = """
import runpy, sys, types
package = types.ModuleType("flexdyn")
package.__path__ = [{folder!r}]
sys.modules["flexdyn"] = package
sys.argv = ["flexdyn", *{argv!r}]
try:
    runpy.run_module("flexdyn.__main__", run_name="__main__")
except SystemExit as exc:
    print("exit", exc.code)
print("modules:", *sorted(m for m in sys.modules if m != "flexdyn"
                      and m.split(".")[0] in ("numpy", "scipy", "numba", "flexdyn")))
"""


@pytest.mark.parametrize("argv", [["--help"], ["simulate", "--help"], ["demo", "--t", "-1"]])
def test_help_imports_nothing_of_the_library(argv):
    """``flexdyn --help`` (and an argument error) with the package's ``__init__`` left out
    imports none of numpy, scipy, numba or flexdyn's modules: the command line imports the
    library after parsing (``benchmarks/bench_cli.py`` times it)."""
    folder = str(Path(fd.__file__).parent)
    proc = subprocess.run([sys.executable, "-c", _HELP_ALONE.format(folder=folder, argv=argv)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    *_, status, modules = proc.stdout.splitlines()
    assert status == ("exit 0" if "--help" in argv else "exit 2"), proc.stdout
    assert modules == "modules:", modules
    if argv == ["--help"]:
        assert "validate" in proc.stdout and "simulate" in proc.stdout


def test_simulate_animates_and_refuses_before_the_run(tmp_path, capsys, monkeypatch):
    """``--animate`` writes a GIF of the run; a wrong suffix, an existing file without
    ``--force`` and a missing matplotlib are refused before the run, naming the extra."""
    PIL = pytest.importorskip("PIL.Image")
    gif = tmp_path / "run.gif"
    args = ["simulate", "two_link_arm", "--t", "0.2", "--samples", "5", "--tau", "link1=2"]
    assert main([*args, "--animate", str(gif)]) == 0
    assert f"animation     {gif}" in capsys.readouterr().out
    with PIL.open(gif) as im:
        assert im.n_frames == 5
    assert main([*args, "--animate", str(gif)]) == 2
    assert "the file exists; use --force" in capsys.readouterr().err
    assert main([*args, "--animate", str(tmp_path / "run.avi")]) == 2
    assert "use a .gif or .mp4 file name" in capsys.readouterr().err
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else find_spec(name, *a))
    assert main([*args, "--animate", str(tmp_path / "new.gif")]) == 2
    assert ("--animate needs matplotlib; install the 'animation' extra: pip install "
            "'flexdyn[animation]'") in capsys.readouterr().err
    assert not (tmp_path / "new.gif").exists()


def test_outputs_are_written_before_a_summary_that_cannot_be_printed(tmp_path, monkeypatch):
    """A model whose name holds a lone surrogate, on a terminal that speaks ASCII only: the
    run's file is written and the summary printed with the characters replaced."""
    import io

    d = fd.models.two_link_arm().to_dict()
    d["name"] = "arm\udc80"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(d), encoding="utf-8")  # JSON's \\udc80 escape
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    out = tmp_path / "odd.npz"
    assert main(["simulate", str(path), "--t", "0.05", "--samples", "3", "--out", str(out)]) == 0
    assert fd.SimulationResult.from_npz(out).model.name == "arm\udc80"
    stdout.flush()
    text = stdout.buffer.getvalue().decode("ascii")
    assert "model         arm?: 2 bodies" in text and f"written       {out}" in text


def test_export_writes_a_library_and_an_fmu(tmp_path, capsys):
    import shutil

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    assert main(["export", "two_link_arm", str(tmp_path), "--name", "arm", "--fmu", "0.01"]) == 0
    printed = capsys.readouterr().out
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["Makefile", "TwoLinkArm.fmu", "arm.c", "arm.h", "arm_engine.o",
                     "libarm.so"], names
    assert all(n in printed for n in names), printed
    from test_closed_chains import fourbar

    path = tmp_path / "fourbar.json"
    fd.save_model(fourbar(), path)
    assert main(["export", str(path), str(tmp_path / "closed")]) == 2
    assert "loop closures" in capsys.readouterr().err


def test_the_stages_an_entry_needs_are_announced_together(capsys, monkeypatch):
    """The compiles inside ``notice.compiling`` (the stages an entry needs, compiled one after
    the other) print one notice naming the group and one with the time it took; a group that
    only loads from the cache prints nothing and counts no compile time."""
    import time

    from flexdyn.engine import notice

    notice.install()
    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.05)
    what = "the engine's shared stages (a, b)"
    with notice.compiling("stages", what, (30, 20)), _slow_compiles():
        assert _engine_function("stage_a")(1.0) == 2.0
        assert _engine_function("stage_b")(1.0) == 2.0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith(f"flexdyn: compiling {what} (stages) for its first use"), err
    assert "(up to about " in err[0], err
    assert err[1].startswith(f"flexdyn: compiled {what} (stages) in "), err
    before = notice.compile_seconds()
    with notice.compiling("stages", "the stages c", (30, 20)):
        time.sleep(0.2)  # nothing compiles: as a load from the cache
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
    assert notice.compile_seconds() == before
