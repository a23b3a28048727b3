"""Command-line interface: ``flexdyn demo | simulate | info | validate | schema | export |
compile`` (also ``python -m flexdyn``).

Examples
--------
::

    flexdyn demo                                   # two-link flexible arm, 5 s slew
    flexdyn demo --model spacecraft --t 20 --plot sc.png --animate sc.gif
    flexdyn info arm.json                          # bodies, joints, modal frequencies
    flexdyn validate arm.json                      # every error, exit status 2; or valid
    flexdyn simulate arm.json --t 10 --tau shoulder=2 --out run.npz --animate run.gif
    flexdyn export arm.json out --fmu 0.01         # C library and FMU without Python
    flexdyn compile                                # compile the engine ahead of time

Invalid input files are reported on one line (``flexdyn: error: ...``) with exit status 2;
a failed integration exits with status 1.  The library is imported after the arguments are
parsed, so that ``--help`` and an argument error answer at once.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the library is imported by the commands, after the arguments are parsed
    import numpy as np

    from .chain import Model
    from .results import SimulationResult

__all__ = ["main"]

PROG = "flexdyn"
# The choices the parser offers, written out so that ``flexdyn --help`` and a mistyped option
# are answered without importing numpy, scipy, numba or the engine; the tests check that they
# are the library's (``flexdyn.FIDELITIES``, ``DEFAULT_FIDELITY``, ``FORWARD_METHODS``,
# ``flexdyn.models.BUILTIN_MODELS``).
FIDELITY_NAMES = ("full", "ruthless", "consistent", "exact")
DEFAULT_FIDELITY_NAME = "exact"
METHOD_NAMES = ("articulated", "articulated-split", "composite", "nodal")
BUILTIN_MODEL_NAMES = ("spacecraft", "spinup_beam", "two_link_arm")
#: Most output samples of ``flexdyn simulate``.
MAX_SAMPLES = 1_000_000


class _InputError(Exception):
    """A problem with the user's input; reported on one line with exit status 2."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _echo(text: str, file: TextIO | None = None) -> None:
    """Print ``text``; characters the stream cannot encode (a lone surrogate in a model's
    name, a terminal without UTF-8) are replaced rather than raised."""
    stream = sys.stdout if file is None else file
    try:
        print(text, file=stream)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        print(text.encode(encoding, errors="replace").decode(encoding), file=stream)


def _read(path: str) -> Model:
    """A model file, or a built-in model by name when no file of that name exists; a file
    that cannot be read is an ``_InputError``, the reader's errors pass through."""
    from .chain import load_model
    from .models import builtin_model

    if path in BUILTIN_MODEL_NAMES and not Path(path).exists():
        return builtin_model(path)
    try:
        return load_model(path)
    except FileNotFoundError:
        raise _InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _InputError(f"{path}: is a directory, not a model file") from None
    except OSError as exc:
        raise _InputError(f"{path}: cannot read the file: {exc.strerror or exc}") from None


def _load(path: str) -> Model:
    """:func:`_read`, with the reader's errors as one ``_InputError`` line."""
    try:
        return _read(path)
    except (ValueError, KeyError, TypeError) as exc:
        msg = _one_line(exc)
        raise _InputError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


def simulate(*args: Any, **kwargs: Any) -> SimulationResult:
    """:func:`flexdyn.simulate`, imported when a command runs it."""
    from .simulation import simulate as run

    return run(*args, **kwargs)


def _summary(res: SimulationResult, title: str) -> str:
    import numpy as np

    m = res.model
    lines = [
        f"{title}",
        f"  model         {m.name}: {m.n_bodies} bodies, nq = {m.nq}, nu = {m.nu}, "
        f"modes per body {m.n_modes.tolist()} ({int(m.n_modes.sum())} modal dof)",
        f"  simulated     t = {res.t[0]:g} .. {res.t[-1]:g} s, fidelity {res.fidelity}, "
        f"method {res.method}, {res.nfev} rhs evaluations, {len(res)} samples",
    ]
    tips = res.max_tip_deflection()
    if tips:
        name = max(tips, key=tips.get)
        lines.append(f"  max tip deflection  {tips[name]:.4g} m ({name}); "
                     + ", ".join(f"{k}: {v:.4g} m" for k, v in tips.items()))
    e = res.energy_balance_error
    lines.append(f"  energy balance error  max |e_E| = {np.max(np.abs(e)):.3g} %, "
                 f"e_E,RMS = {res.energy_balance_rms:.3g} % (peak energy "
                 f"{np.max(np.abs(res.total_energy)):.4g} J, work {res.work[-1]:.4g} J)")
    lines.append(f"  integrator    {res.settings['integrator']}, rtol {res.settings['rtol']:g}, "
                 f"atol {res.settings['atol']:g}"
                 + (f", {res.settings['error_norm']} norm" if res.settings["error_norm"] else ""))
    compiling = res.settings["compile_time"]
    lines.append(f"  wall time     {res.wall_time:.2f} s (integration)"
                 + (f"; the engine compiled for {compiling:.0f} s first (once)"
                    if compiling >= 0.5 else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# commands
# ----------------------------------------------------------------------------------------------
def _check_extras(args: argparse.Namespace) -> None:
    """Refuse ``--plot`` and ``--animate`` before the run: the output path
    (:func:`_check_output`), then matplotlib (and imageio-ffmpeg for an MP4)."""
    import importlib.util

    _check_output(args.plot, (".png", ".pdf", ".svg"), args.force, "--plot")
    animation = args.animate
    _check_output(animation, (".gif", ".mp4"), args.force, "--animate")
    for flag, path, extra in (("--plot", args.plot, "plot"),
                              ("--animate", animation, "animation")):
        if path and importlib.util.find_spec("matplotlib") is None:
            raise _InputError(f"{flag} needs matplotlib; install the {extra!r} extra: "
                              f"pip install 'flexdyn[{extra}]'")
    if (animation and animation.lower().endswith(".mp4")
            and importlib.util.find_spec("imageio_ffmpeg") is None):
        raise _InputError("--animate: an MP4 needs imageio-ffmpeg; install the 'animation' "
                          "extra: pip install 'flexdyn[animation]' (or write a .gif)")


def _write_outputs(outputs: Sequence[tuple[str, str | None, Callable[[str], object]]]
                   ) -> tuple[list[str], _InputError | None]:
    """Write each ``(label, path, write)`` with a path (``write(path)``); the lines that
    name the files written, and the first failure, if any, after trying every file (a file
    that cannot be written does not cost the others)."""
    lines, failure = [], None
    for label, path, write in outputs:
        if not path:
            continue
        try:
            write(path)
        except OSError as exc:
            failure = failure or _InputError(f"{path}: cannot write: {exc.strerror or exc}")
            continue
        lines.append(f"  {label:<13} {path}")
    return lines, failure


def _assignments(model: Model, items: Sequence[str], kinds: Sequence[str], flag: str
                 ) -> dict[str, dict[int, float]]:
    """``NAME=VALUE`` arguments: per kind (``"q"``, ``"u"``) the indices and values of the
    named entries of the state layout; for the speeds alone (``--tau``) a joint may also be
    named by the body it moves (:func:`_joint_speeds`).  ``_InputError`` naming the closest
    names, and for ``--tau`` every joint."""
    from .chain import state_layout

    layout = state_layout(model)
    index = {kind: {e.name: e.index for e in layout[kind]} for kind in kinds}
    joints = _joint_speeds(model) if tuple(kinds) == ("u",) else {}
    out: dict = {kind: {} for kind in kinds}
    for item in items:
        name, sep, text = item.partition("=")
        if name in joints and name not in index["u"]:
            speeds = joints[name]
            if not speeds:
                raise _InputError(f"{flag} {item!r}: the joint of {name!r} is fixed (no "
                                  "speeds): it takes no load")
            if len(speeds) != 1:
                raise _InputError(f"{flag} {item!r}: the joint of {name!r} has "
                                  f"{len(speeds)} speeds; name one of "
                                  f"{', '.join(e.name for e in speeds)}")
            name = speeds[0].name
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not sep or not math.isfinite(value):
            raise _InputError(f"{flag} {item!r}: expected NAME=NUMBER")
        kind = next((k for k in kinds if name in index[k]), None)
        if kind is None:
            names = [n for k in kinds for n in index[k]]
            close = difflib.get_close_matches(name, [*joints, *names], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            if joints:
                listed = ", ".join(
                    n if len(speeds) == 1 else f"{n} ({len(speeds)} speeds: "
                    + ", ".join(e.name for e in speeds) + ")"
                    for n, speeds in joints.items() if speeds)
                raise _InputError(f"{flag}: {name!r} is neither a joint nor a speed of the "
                                  f"model; its joints, named by the body they move: "
                                  f"{listed}{hint}")
            raise _InputError(f"{flag}: {name!r} is not a state-layout name of "
                              + " or ".join(f"'{k}'" for k in kinds)
                              + (hint or f"; names: {', '.join(names)}"))
        out[kind][index[kind][name]] = value
    return out


def _joint_speeds(model: Model) -> dict[str, list]:
    """The joint speeds' state-layout entries by the name of the body the joint moves (a
    one-speed joint's load may be named by its body: ``--tau shoulder=2``)."""
    import numpy as np

    from .chain import state_layout

    entries, positions = state_layout(model)["u"], np.arange(model.nu)
    return {name: [entries[k] for k in model.u_joint(positions, i)]
            for i, name in enumerate(model.names)}


def _cmd_demo(args: argparse.Namespace) -> int:
    _check_extras(args)
    import numpy as np

    from .models import builtin_model, slew_torque, spinup_torque

    model = builtin_model(args.model)
    if args.model == "spinup_beam":
        tau = spinup_torque(model)
        what = "torque-driven spin-up (Damaren & Sharf Sec 4.1, T = 15 s, Ω = 6 rad/s)"
    else:
        # the nominal slew (0.5 rad in 3 s for the arm, 0.2 rad in 2.5 s for the spacecraft)
        # keeps its peak torque when --t is too short for it
        nominal_angle, nominal_duration = (0.5, 3.0) if args.model == "two_link_arm" else (
            0.2, 2.5)
        duration = min(nominal_duration, 0.6 * args.t)
        angle = nominal_angle * (duration / nominal_duration) ** 2
        tau = slew_torque(model, duration=duration, angle=angle)
        what = f"rest-to-rest slew of {angle:.3g} rad in {duration:.3g} s"
    wall = time.perf_counter()
    # DOP853, not simulate's default: on a fresh installation its first run compiles the
    # state derivative alone, which takes half or less of the compiled integrators' entry
    from .simulation import ScipyIVP

    res = simulate(model, t_span=(0.0, args.t), tau=tau, fidelity=args.fidelity,
                   method=args.method, t_eval=np.linspace(0.0, args.t, 501),
                   integrator=ScipyIVP("DOP853", rtol=args.rtol, atol=args.atol))
    # the summary's energies in numpy: as fast as loading the compiled entry for its 501
    # samples, and a first run does not compile it
    res.energy_backend = "reference"
    written, failure = _write_outputs([("plot", args.plot, res.plot),
                                       ("animation", args.animate, res.animate)])
    _echo("\n".join([_summary(res, f"flexdyn demo: {args.model}, {what}"), *written,
                     f"  total time    {time.perf_counter() - wall:.2f} s"]))
    if failure:
        raise failure
    return 0


def _check_output(path: str | None, suffixes: tuple[str, ...], force: bool, flag: str) -> None:
    """Refuse an output path before the run: wrong suffix, missing folder, an existing file
    without ``--force``."""
    if path is None:
        return
    if not path.lower().endswith(suffixes):
        raise _InputError(f"{flag} {path}: use a {' or '.join(suffixes)} file name")
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise _InputError(f"{flag} {path}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise _InputError(f"{flag} {path}: the folder {str(folder)!r} is not writable")
    if target.is_dir():
        raise _InputError(f"{flag} {path}: is a directory")
    if target.exists() and not force:
        raise _InputError(f"{flag} {path}: the file exists; use --force to overwrite it")


def _cmd_simulate(args: argparse.Namespace) -> int:
    model = _load(args.model)
    out = args.out
    _check_output(out, (".npz", ".csv"), args.force, "--out")
    _check_extras(args)
    import numpy as np

    from .chain import state_layout
    from .closure import ClosureError
    from .dynamics import assemble

    initial = _assignments(model, args.set, ("q", "u"), "--set")
    loads = _assignments(model, args.tau, ("u",), "--tau")["u"]
    q0, u0 = model.neutral_configuration(), np.zeros(model.nu)
    for k, v in initial["q"].items():
        q0[k] = v
    for k, v in initial["u"].items():
        u0[k] = v
    start = "initial state set" if args.set else "neutral initial state"
    if model.constraints:
        try:
            q0, u0 = assemble(model, q0, u0, fidelity=args.fidelity)
        except ClosureError as exc:
            raise _InputError(f"{args.model}: {exc}") from None
        start = ("closures assembled from the "
                 + ("initial state set" if args.set else "neutral configuration"))
    tau = np.zeros(model.nu)
    for k, v in loads.items():
        tau[k] = v
    try:
        q0 = model.check_state(q0)[0]
    except ValueError as exc:
        raise _InputError(f"--set: {exc}") from None
    from .simulation import Auto

    res = simulate(model, q0, u0, t_span=(0.0, args.t), tau=tau, fidelity=args.fidelity,
                   method=args.method, t_eval=np.linspace(0.0, args.t, args.samples),
                   integrator=Auto(rtol=args.rtol, atol=args.atol))
    # the files first: a summary that cannot be printed must not cost the run
    written, failure = _write_outputs([
        ("written", out, lambda path: (res.to_npz if path.lower().endswith(".npz")
                                       else res.to_csv)(path)),
        ("plot", args.plot, res.plot),
        ("animation", args.animate, res.animate)])
    what = (", ".join(f"tau[{n}] = {v:g}" for n, v in zip(
        [e.name for e in state_layout(model)["u"]], tau, strict=True) if v) or "zero torque")
    _echo("\n".join([_summary(res, f"flexdyn simulate: {args.model} ({what}, {start})"),
                     *written]))
    if failure:
        raise failure
    return 0


#: ``info`` analyses the assembled system up to this many speeds (one reference inverse
#: dynamics per speed)
INFO_MAX_SPEEDS = 300


def _print_assembled_modes(model: Model) -> None:
    """The assembled system's lowest frequencies at the neutral configuration, joints free
    and locked (:func:`flexdyn.modal_analysis`), and RK4's stable step."""
    import numpy as np

    from .modal import FREE, LOCKED, modal_analysis

    if model.nu > INFO_MAX_SPEEDS:
        _echo(f"assembled modes: skipped (nu = {model.nu} > {INFO_MAX_SPEEDS}; call "
              "flexdyn.modal_analysis)")
        return
    _echo("assembled system at the neutral configuration (Hz; flexdyn.modal_analysis):")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        for joints in (FREE, LOCKED):
            try:
                modes = modal_analysis(model, joints=joints)
            except ValueError as exc:
                _echo(f"  not available: {exc}")
                return
            elastic = modes.frequencies[~modes.rigid & ~modes.unstable]
            shown = (", ".join(f"{v:.6g}" for v in elastic[:8]) + (" ..." if elastic.size > 8
                                                                   else "")) or "none"
            unstable = modes.growth_rates[modes.unstable]
            _echo(f"  joints {joints:<6}: {modes.n_rigid} rigid-body modes; {shown}"
                  + (f"; {unstable.size} unstable (growth rates "
                     + ", ".join(f"{r:.4g}" for r in unstable) + " 1/s)" if unstable.size
                     else ""))
            if joints == FREE and elastic.size:
                _echo(f"  highest {elastic[-1]:.6g} Hz: RK4 is stable below "
                      f"h = {2 * np.sqrt(2) / (2 * np.pi * elastic[-1]):.3g} s "
                      "(flexdyn.max_stable_step)")
    if any("not symmetric" in str(w.message) for w in caught):
        _echo("  note: the neutral configuration is not an equilibrium (gravity): these are the "
              "modes of the symmetric part of the stiffness; see flexdyn.equilibrium")


def _describe_forces(rows: np.ndarray) -> str:
    """The keys of a joint's forces block that differ from their defaults, one value for all
    speeds or one per speed."""
    import numpy as np

    from .joint_forces import DEFAULTS, FORCE_KEYS

    parts = []
    for k, key in enumerate(FORCE_KEYS):
        values = rows[:, k]
        if np.all(values == DEFAULTS[key]):
            continue
        shown = [f"{v:.6g}" for v in values]
        parts.append(f"{key} {shown[0] if len(set(shown)) == 1 else '[' + ', '.join(shown) + ']'}")
    return ", ".join(parts) or "none beyond the defaults"


def _cmd_info(args: argparse.Namespace) -> int:
    model = _load(args.model)
    import numpy as np

    from .joint_forces import STIFFNESS
    from .model_file import beam_summary
    from .models import modal_frequencies

    freqs = modal_frequencies(model)
    _echo(f"model {model.name!r}: {model.n_bodies} bodies, nq = {model.nq}, nu = {model.nu}, "
          f"gravity {model.gravity.tolist()} m/s^2")
    _echo(f"{'#':>3}  {'body':<16} {'parent':<16} {'joint':<12} {'nq':>3} {'nu':>3} "
          f"{'nodes':>5} {'modes':>5}  {'kind':<6} mass (kg)")
    for i, body in enumerate(model.bodies):
        p = int(model.parent[i])
        parent = "(ground)" if p < 0 else model.names[p]
        j = model.joints[i]
        _echo(f"{i:>3}  {body.name:<16} {parent:<16} {j.type:<12} {j.nq:>3} {j.nu:>3} "
              f"{body.n_nodes:>5} {body.n_modes:>5}  {body.kind:<6} {body.total_mass:.6g}")
    for line in beam_summary(model.to_dict()):
        _echo(line)
    _echo("modal frequencies sqrt(eig(K, M_ff))/2pi (Hz), body frame held fixed:")
    for body, f in zip(model.bodies, freqs, strict=True):
        if f.size:
            _echo(f"  {body.name}: " + ", ".join(f"{v:.6g}" for v in f))
        if np.any(np.isinf(f)):
            _echo(f"  note: {body.name} has modes without inertia of their own (inf): they "
                  "move only massless nodes or repeat another mode; fidelity 'ruthless' "
                  "cannot be used with this model")
    springs = any(rows is not None and np.any(rows[:, STIFFNESS] > 0)
                  for rows in model.joint_forces)
    if not any(f.size for f in freqs):
        _echo("  (rigid model: no modes)")
    if springs or any(f.size for f in freqs):
        _print_assembled_modes(model)
    for c in model.constraints:
        other = ("the ground" if c.other_body < 0 else model.names[c.other_body])
        _echo(f"closure {c.name!r}: {c.kind} ({c.n_rows} rows) between "
              f"{model.names[c.body]} and {other}")
    for i, rows in enumerate(model.joint_forces):
        if rows is not None:
            _echo(f"joint forces of {model.names[i]} (flexdyn.joint_forces): "
                  + _describe_forces(rows))
    stiffened = [b.name for b in model.bodies if b.K1 is not None]
    if any(b.n_modes for b in model.bodies):
        _echo("geometric stiffening data (fidelities 'consistent', 'exact'): "
              + (", ".join(stiffened) if stiffened else "none (those fidelities give the "
                 "'full' terms)"))
    return 0


# ----------------------------------------------------------------------------------------------
# parser
# ----------------------------------------------------------------------------------------------
def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return v


def _add_common(p: argparse.ArgumentParser, rtol: float | None, atol: float | None) -> None:
    """``--fidelity``, ``--method``, ``--rtol`` and ``--atol``; tolerances None: those of
    :func:`flexdyn.simulate` for the integrator it chooses (``DEFAULT_TOLERANCES``)."""
    p.add_argument("--fidelity", choices=FIDELITY_NAMES, default=DEFAULT_FIDELITY_NAME,
                   help=f"body model (default: {DEFAULT_FIDELITY_NAME})")
    p.add_argument("--method", choices=METHOD_NAMES, default="articulated",
                   help="forward-dynamics algorithm (default: articulated)")
    chosen = "simulate's for the integrator it chooses"
    p.add_argument("--rtol", type=_positive_float, default=rtol,
                   help=f"relative tolerance (default: {chosen if rtol is None else f'{rtol:g}'})")
    p.add_argument("--atol", type=_positive_float, default=atol,
                   help=f"absolute tolerance (default: {chosen if atol is None else f'{atol:g}'})")


def _add_model(p: argparse.ArgumentParser) -> None:
    """The positional ``MODEL.json``: a model file or a built-in model's name."""
    p.add_argument("model", metavar="MODEL.json",
                   help="model file, or the name of a built-in model: "
                        + ", ".join(BUILTIN_MODEL_NAMES))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Dynamics of trees of rigid and flexible bodies (flexdyn).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("demo", help="simulate a built-in model and print a summary",
                       description="Simulate a built-in model with a short slew torque "
                                   "profile (the spin-up torque for spinup_beam).")
    p.add_argument("--model", choices=BUILTIN_MODEL_NAMES, default="two_link_arm")
    p.add_argument("--t", type=_positive_float, default=5.0, help="duration (s, default 5)")
    p.add_argument("--plot", metavar="PNG", help="save a plot (needs matplotlib)")
    p.add_argument("--animate", metavar="GIF", help="save an animation (.gif, or .mp4; the "
                                                    "'animation' extra)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing --plot and --animate files")
    _add_common(p, rtol=1e-6, atol=1e-6)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("simulate", help="simulate a model file",
                       description="Simulate MODEL.json from the neutral configuration at "
                                   "rest (or the entries given with --set) with constant "
                                   "generalized forces (--tau; default zero); loop closures "
                                   "are assembled first.")
    _add_model(p)
    p.add_argument("--t", type=_positive_float, default=10.0, help="duration (s, default 10)")
    p.add_argument("--out", metavar="FILE", help="write the histories (.npz or .csv)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing --out, --plot and --animate files")
    p.add_argument("--samples", type=int, default=1001,
                   help=f"number of output samples (default 1001, at most {MAX_SAMPLES})")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="an entry of the initial state by its state-layout name, e.g. "
                        "link1.theta=0.3 or link1.theta_dot=1 (repeatable; the rest neutral, "
                        "at rest)")
    p.add_argument("--tau", action="append", default=[], metavar="JOINT=VALUE",
                   help="a constant torque or force (N m or N) on a one-speed joint, named "
                        "by the body it moves, e.g. shoulder=2.5; or on one speed by its "
                        "state-layout name, e.g. hub.wz=0.1 (repeatable)")
    p.add_argument("--plot", metavar="PNG", help="save a plot (.png, .pdf or .svg; needs "
                                                 "matplotlib, the 'plot' extra)")
    p.add_argument("--animate", metavar="GIF", help="save an animation of the deformed "
                                                    "bodies (.gif, or .mp4; the 'animation' "
                                                    "extra)")
    _add_common(p, rtol=None, atol=None)
    p.set_defaults(func=_cmd_simulate)

    p = sub.add_parser("info", help="describe a model file",
                       description="Print bodies, parents, joints, state sizes and the "
                                   "modal frequencies of each flexible body.")
    _add_model(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("validate", help="check a model file",
                       description="Read MODEL.json and report every error found (exit "
                                   "status 2), or that it is valid (exit status 0).")
    _add_model(p)
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of the model-file format",
                       description="Print the JSON Schema (draft 2020-12) of model files, "
                                   "for editors that validate and complete JSON.")
    p.set_defaults(func=_cmd_schema)

    p = sub.add_parser("export", help="write a model as a C library and FMUs without Python",
                       description="Write MODEL.json as a C library in DIRECTORY (a header, "
                                   "the C shell with the model's data, the engine's object, a "
                                   "Makefile and, with a C compiler, lib<NAME>.so), and with "
                                   "--fmu a native FMI 2.0 FMU (model exchange and "
                                   "co-simulation) beside it.  The first export of an "
                                   "installation compiles the engine's object (about a "
                                   "minute).")
    _add_model(p)
    p.add_argument("directory", metavar="DIRECTORY", help="folder to write into")
    p.add_argument("--name", help="C name of the library (default: the model's name)")
    p.add_argument("--fidelity", choices=FIDELITY_NAMES, default=DEFAULT_FIDELITY_NAME,
                   help=f"body model (default: {DEFAULT_FIDELITY_NAME})")
    p.add_argument("--cpu", choices=("host", "generic"), default="host",
                   help="instruction set: this processor's (default) or the architecture's "
                        "baseline")
    p.add_argument("--fmu", type=_positive_float, metavar="DT",
                   help="also build <Name>.fmu, co-simulating with RK4 at the step DT (s)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("compile", help="compile the engine ahead of time",
                       description="Compile (or load from the cache) the engine's entries "
                                   "that a first session uses — the demo, simulate's default "
                                   "integrator, forward and inverse dynamics, the mass matrix, "
                                   "linearize, modal_analysis — so that later calls start at "
                                   "once; --all compiles every entry.  Minutes on a 2-core "
                                   "machine with an empty cache, seconds with a full one.")
    p.add_argument("--all", action="store_true",
                   help="every entry of the engine, not only the first session's")
    p.set_defaults(func=_cmd_compile)
    return parser


def _cmd_validate(args: argparse.Namespace) -> int:
    try:
        model = _read(args.model)
    except (ValueError, KeyError, TypeError) as exc:
        # every error the reader found, one per line (not folded to one line)
        _echo(f"{PROG}: {args.model}: not valid:\n{exc}", file=sys.stderr)
        return 2
    _echo(f"{args.model}: valid — model {model.name!r}, {model.n_bodies} bodies, "
          f"nq = {model.nq}, nu = {model.nu}, {int(model.n_modes.sum())} modal coordinates, "
          f"{len(model.constraints)} loop closures")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import export_c
    from .fmu import build_fmu

    model = _read(args.model)
    try:
        out = export_c(model, args.directory, fidelity=args.fidelity, name=args.name,
                       cpu=args.cpu)
        fmu = None if args.fmu is None else build_fmu(
            model, args.directory, dt=args.fmu, fidelity=args.fidelity, fmi_type="both",
            overwrite=True)
    except ValueError as exc:
        raise _InputError(str(exc)) from exc
    written = [out.header, out.source, out.object, out.makefile, out.library, fmu]
    _echo("\n".join([f"{PROG} export: {model.name!r} (fidelity {args.fidelity}) as {out.name}",
                      *(f"  {p}" for p in written if p is not None)]
                     + ([] if out.library else ["  no C compiler found: build with the "
                                                "Makefile"])))
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from .engine import notice
    from .precompile import precompile

    def progress(k: int, n: int, what: str, seconds: float | None) -> None:
        bar = "#" * (k - (seconds is None)) + "." * (n - k + (seconds is None))
        if seconds is None:
            print(f"[{bar}] {k}/{n} {what} ...", end="", flush=True)
        else:
            print(f" {seconds:.1f} s", flush=True)

    start = time.perf_counter()
    with notice.silenced(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's performance hints, a stiff test run's advice
        done = precompile(args.all, progress=progress)
    print(f"compiled {len(done)} groups of entries in {time.perf_counter() - start:.1f} s; "
          "later runs load them from the cache")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from .model_file import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failed run, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 2 <= getattr(args, "samples", 2) <= MAX_SAMPLES:
        parser.error(f"--samples must be between 2 and {MAX_SAMPLES}")
    # imported after the arguments are parsed: --help and a mistyped option need none of it
    from .results import SimulationError

    try:
        return int(args.func(args))
    except _InputError as exc:
        _echo(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (SimulationError, ImportError) as exc:
        _echo(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
