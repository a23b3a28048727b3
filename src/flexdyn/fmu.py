"""FMI 2.0 FMUs of flexdyn models: native (C, no Python) or around a Python stepper.

:func:`build_fmu` builds, by default (``native=True``), an FMU whose binary is the model's C
library (:func:`flexdyn.export.export_c`) behind a C implementation of the FMI functions, for
model exchange, co-simulation or both (:mod:`flexdyn.native_fmu`): it runs in any FMI 2.0
importer (Simulink, Modelica tools, C hosts) and depends on the C runtime and libm only.

With ``native=False`` it writes a model's file and the settings of a :class:`flexdyn.Stepper`
into a co-simulation FMU built with ``pythonfmu`` (optional extra ``fmu``), whose slave is a
small Python class around the stepper: every integrator and output of the stepper; inputs are the
generalized forces (``tau.<speed name>``, held over a communication step), outputs the
stepper's outputs (by default every coordinate and speed), and each ``doStep`` advances
the stepper by whole macro steps ``dt`` (:meth:`flexdyn.Stepper.advance` when the master's
communication step is not a multiple of ``dt``).  The FMU runs in a Python with flexdyn
and pythonfmu installed (the export library of pythonfmu embeds that interpreter), e.g.
under ``fmpy``.
"""

from __future__ import annotations

import errno
import json
import keyword
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .chain import Model, save_model, state_layout
from .files import write_atomically
from .simulation import Stepper
from .terms import DEFAULT_FIDELITY

__all__ = ["SLAVE_SOURCE", "build_fmu"]

#: the slave class of every flexdyn FMU (``{name}`` and ``{description}`` filled in)
SLAVE_SOURCE = '''"""FMI 2.0 co-simulation slave of a flexdyn model (flexdyn.fmu.build_fmu)."""

import json
import pathlib

import pythonfmu

import flexdyn


class {name}(pythonfmu.Fmi2Slave):
    author = "flexdyn"
    description = {description!r}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        folder = pathlib.Path(self.resources)
        self.settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
        self.model = flexdyn.load_model(folder / "model.json")
        self.stepper = self._stepper()
        self.values = self.stepper.outputs()
        for k, input_name in enumerate(self.stepper.input_names):
            self.register_variable(pythonfmu.Real(
                input_name, start=0.0, causality=pythonfmu.Fmi2Causality.input,
                getter=lambda k=k: float(self.stepper.tau[k]),
                setter=lambda v, n=input_name: self.stepper.set_input(n, v)), nested=False)
        for k, output_name in enumerate(self.stepper.output_names):
            self.register_variable(pythonfmu.Real(  # initial values exact: the state is given
                output_name, start=float(self.values[k]),
                causality=pythonfmu.Fmi2Causality.output, initial=pythonfmu.Fmi2Initial.exact,
                getter=lambda k=k: float(self.values[k])), nested=False)

    def _stepper(self):
        s = self.settings
        return flexdyn.Stepper(self.model, s["dt"], integrator=s["integrator"],
                               substeps=s["substeps"], fidelity=s["fidelity"], q0=s["q0"],
                               u0=s["u0"], outputs=s["outputs"])

    def setup_experiment(self, start_time, stop_time, tolerance):
        self.stepper.set_state(self.stepper.q, self.stepper.u, t=start_time)

    def do_step(self, current_time, step_size):
        n = step_size / self.stepper.dt
        try:
            if abs(n - round(n)) <= 1e-9 * max(1.0, n) and round(n) >= 1:
                self.stepper.step(int(round(n)))  # whole macro steps
            else:
                self.stepper.advance(step_size)
        except (ValueError, flexdyn.SimulationError):
            return False
        self.values = self.stepper.outputs()
        return True
'''


def _class_name(name: str) -> str:
    """The slave's class name (the FMU's model identifier) from a model name: its ASCII
    letters and digits in CamelCase, starting with a letter; ``Model`` appended to a Python
    keyword (``None``, ``True``, ``False``)."""
    words = re.findall(r"[A-Za-z0-9]+", name)
    stem = "".join(w[:1].upper() + w[1:] for w in words) or "Model"
    stem = stem if stem[0].isalpha() else "M" + stem
    return stem + "Model" if keyword.iskeyword(stem) else stem


def build_fmu(model: Model, path: str | Path, *, dt: float, outputs: Sequence[str] | None = None,
              integrator: str = "rk4", substeps: int = 1,
              fidelity: str = DEFAULT_FIDELITY, q0: Any = None, u0: Any = None,
              overwrite: bool | None = None, native: bool = True,
              fmi_type: str = "CoSimulation") -> Path:
    """Build an FMI 2.0 FMU of ``model`` (module docstring).

    Parameters
    ----------
    model : Model
    path : the FMU file to write (a name ending in ``.fmu``, in any case), or a folder for
        ``<Name>.fmu`` (``Name``: the model's name in CamelCase, letters and digits only).
    dt, integrator, substeps, fidelity, q0, u0 : the :class:`flexdyn.Stepper` inside.
    outputs : output names (:class:`flexdyn.outputs.Outputs`); default every coordinate and
        speed of the state layout.
    overwrite : True: replace an existing FMU; False: refuse it (``FileExistsError``,
        before anything is built).  None (the default): replace it with a
        ``DeprecationWarning`` — the default will become False.
    native : True (default): the C FMU of :mod:`flexdyn.native_fmu` (``integrator`` must be
        ``"rk4"``: co-simulation integrates with the classical Runge–Kutta method at the step
        ``dt / substeps``; ``outputs`` must be entries of the state); False: the
        ``pythonfmu`` FMU around a :class:`flexdyn.Stepper` (co-simulation only).
    fmi_type : ``"CoSimulation"`` (default), ``"ModelExchange"`` (the importer integrates
        ``ẋ = f(x, τ)``, as Simulink and Modelica tools prefer for stiff plants) or
        ``"both"``; native FMUs only.

    Returns
    -------
    The path of the FMU, written atomically (:func:`flexdyn.files.write_atomically`: a
    failed write leaves an existing file intact; a symbolic link is replaced, not written
    through).  ``ImportError`` naming the ``fmu`` extra without pythonfmu; ``ValueError``
    for settings the stepper refuses (checked here, before building), for an ``integrator``
    or ``outputs`` a native FMU does not cover, or an ``fmi_type`` other than co-simulation
    without ``native``; ``RuntimeError`` without a C compiler for a native FMU.
    """
    from .native_fmu import FMI_TYPES

    if fmi_type not in FMI_TYPES:
        raise ValueError(f"fmi_type must be one of {FMI_TYPES}, not {fmi_type!r}")
    if native and integrator != "rk4":
        raise ValueError(f"a native FMU integrates with 'rk4' (or is integrated by its importer "
                         f"with fmi_type='ModelExchange'), not {integrator!r}: pass "
                         "native=False for the stepper's integrators")
    if not native and fmi_type != "CoSimulation":
        raise ValueError("model exchange needs a native FMU (native=True)")
    layout = state_layout(model)
    if outputs is None:
        outputs = [e.name for e in layout["q"] + layout["u"]]
    stepper = Stepper(model, dt, integrator=integrator, substeps=substeps, fidelity=fidelity,
                      q0=q0, u0=u0, outputs=outputs)  # validates every setting
    settings = {"dt": float(dt), "integrator": integrator, "substeps": int(substeps),
                "fidelity": fidelity, "q0": stepper.q.tolist(), "u0": stepper.u.tolist(),
                "outputs": list(outputs)}
    name = _class_name(model.name)
    path = Path(path)
    if path.suffix.lower() == ".fmu":
        folder, target = path.parent, path
    else:
        folder, target = path, path / f"{name}.fmu"
    if overwrite is None and os.path.lexists(target):
        warnings.warn(f"build_fmu replaces the existing {target}; pass overwrite=True to "
                      "replace it (build_fmu will refuse an existing FMU by default)",
                      DeprecationWarning, stacklevel=2)
        overwrite = True
    elif not overwrite and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, f"{target}: the file exists; pass overwrite=True "
                                            "to replace it", str(target))
    folder.mkdir(parents=True, exist_ok=True)
    if native:
        from .native_fmu import build_native_fmu

        return build_native_fmu(model, target, name, dt=float(dt), substeps=int(substeps),
                                fidelity=fidelity,
                                x0=np.concatenate([stepper.q, stepper.u]), outputs=outputs,
                                fmi_type=fmi_type, overwrite=bool(overwrite))
    try:
        from pythonfmu.builder import FmuBuilder
    except ImportError as exc:
        raise ImportError("building an FMU needs pythonfmu: pip install 'flexdyn[fmu]'") from exc
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        script = tmp_path / f"{name}.py"
        script.write_text(SLAVE_SOURCE.format(
            name=name, description=f"flexdyn model {model.name!r}: {model.n_bodies} bodies, "
                                   f"nq = {model.nq}, nu = {model.nu}"), encoding="utf-8")
        save_model(model, tmp_path / "model.json")
        (tmp_path / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        built = FmuBuilder.build_FMU(script, dest=tmp_path / "out",
                                     project_files=[tmp_path / "model.json",
                                                    tmp_path / "settings.json"])
        with open(built, "rb") as source:
            write_atomically(target, lambda fh: shutil.copyfileobj(source, fh), binary=True,
                             overwrite=bool(overwrite))
    return target
