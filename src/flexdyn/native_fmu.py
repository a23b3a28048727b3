"""FMI 2.0 FMUs without Python: the model's C library (:func:`flexdyn.export.export_c`)
behind a C implementation of the FMI functions, for model exchange, co-simulation or both.

The FMU's variables, by value reference:

* ``0 … nx−1``: the state ``x = [q; u]`` under the names of :func:`flexdyn.state_layout`
  (``link1.theta``, ``link1.eta[0]``, …, ``link1.theta_dot``), continuous, with their start
  values; the chosen ``outputs`` have causality ``output``, the others ``local``;
* ``nx … 2nx−1``: their derivatives ``der(<name>)`` (``ẋ`` of
  ``<name>_state_derivative``);
* ``2nx … 2nx+nu−1``: the inputs ``tau.<speed name>`` (N or N m; 0 at the start), held over
  a communication step (zero-order hold).

Model exchange: the importer integrates ``ẋ = f(x, τ)`` (no event indicators, no time
events; ``fmi2SetContinuousStates``, ``fmi2GetDerivatives``).  Co-simulation: each
``fmi2DoStep`` integrates with the classical Runge–Kutta method at the internal step
``dt / substeps`` (a communication step not a multiple of it is divided into equal steps no
longer than it), as :class:`flexdyn.Stepper` with ``integrator="rk4"`` does; a step beyond
RK4's stability limit at the start state is refused when the FMU is built.  The FMU
cannot save or restore its state and gives no directional derivatives.
"""

from __future__ import annotations

import math
import tempfile
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from .chain import Model, state_layout
from .export import c_compiler, export_c, link_shared, require_linux
from .files import write_atomically

__all__ = ["FMI_TYPES", "build_native_fmu"]

#: the kinds of FMU :func:`build_native_fmu` builds
FMI_TYPES = ("ModelExchange", "CoSimulation", "both")

_SHELL = r"""/* FMI 2.0 functions of the model "{model}" around lib{name} (flexdyn.fmu.build_fmu,
 * native=True).  The types and signatures are those of the FMI 2.0 standard. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "{name}.h"

#define EXPORT __attribute__((visibility("default")))
#define NX {NAME}_NX
#define NU {NAME}_NU
#define GUID "{guid}"

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
typedef enum {{ fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending }} fmi2Status;
typedef enum {{ fmi2ModelExchange, fmi2CoSimulation }} fmi2Type;
typedef enum {{ fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime,
               fmi2Terminated }} fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status,
                                   fmi2String, fmi2String, ...);
typedef void *(*fmi2CallbackAllocateMemory)(size_t, size_t);
typedef void (*fmi2CallbackFreeMemory)(void *);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment, fmi2Status);
typedef struct {{
    fmi2CallbackLogger logger;
    fmi2CallbackAllocateMemory allocateMemory;
    fmi2CallbackFreeMemory freeMemory;
    fmi2StepFinished stepFinished;
    fmi2ComponentEnvironment componentEnvironment;
}} fmi2CallbackFunctions;
typedef struct {{
    fmi2Boolean newDiscreteStatesNeeded;
    fmi2Boolean terminateSimulation;
    fmi2Boolean nominalsOfContinuousStatesChanged;
    fmi2Boolean valuesOfContinuousStatesChanged;
    fmi2Boolean nextEventTimeDefined;
    fmi2Real nextEventTime;
}} fmi2EventInfo;

static const double x_start[NX] = {{ {x_start} }};
static const double internal_step = {h};  /* co-simulation: dt / substeps (s) */

typedef struct {{
    fmi2CallbackFunctions callbacks;
    char *name;
    fmi2Type type;
    double time;
    double x[NX], tau[NU + 1], xdot[NX];
    double k1[NX], k2[NX], k3[NX], k4[NX], stage[NX];
    int fresh;  /* xdot is that of (x, tau) */
}} Instance;

static void logf_(Instance *s, fmi2Status status, const char *message)
{{
    if (s && s->callbacks.logger)
        s->callbacks.logger(s->callbacks.componentEnvironment, s->name, status,
                            status == fmi2OK ? "logAll" : "logStatusError", "%s", message);
}}

static fmi2Status derivative(Instance *s, const double *x, double *xdot)
{{
    int rc = {name}_state_derivative(s->time, x, s->tau, xdot);
    if (rc == {NAME}_OK) return fmi2OK;
    logf_(s, fmi2Error, rc == {NAME}_INVALID_INPUT ? "invalid state or input (not finite, or a "
          "zero quaternion)" : rc == {NAME}_NONFINITE_RESULT ? "the state derivative overflowed"
          : rc == {NAME}_SINGULAR ? "a body's articulated inertia is singular"
          : "internal error of the engine");
    return fmi2Error;
}}

static fmi2Status refresh(Instance *s)
{{
    if (s->fresh) return fmi2OK;
    if (derivative(s, s->x, s->xdot) != fmi2OK) return fmi2Error;
    s->fresh = 1;
    return fmi2OK;
}}

EXPORT const char *fmi2GetTypesPlatform(void) {{ return "default"; }}
EXPORT const char *fmi2GetVersion(void) {{ return "2.0"; }}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType,
                                     fmi2String fmuGUID, fmi2String fmuResourceLocation,
                                     const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                     fmi2Boolean loggingOn)
{{
    (void)fmuResourceLocation; (void)visible; (void)loggingOn;
    if (!functions || !functions->allocateMemory || !functions->freeMemory) return NULL;
    if (!fmuGUID || strcmp(fmuGUID, GUID) != 0) {{
        if (functions->logger)
            functions->logger(functions->componentEnvironment, instanceName, fmi2Error,
                              "logStatusError", "wrong GUID %s (expected %s)",
                              fmuGUID ? fmuGUID : "NULL", GUID);
        return NULL;
    }}
    Instance *s = functions->allocateMemory(1, sizeof(Instance));
    if (!s) return NULL;
    s->callbacks = *functions;
    size_t n = instanceName ? strlen(instanceName) : 0;
    s->name = functions->allocateMemory(n + 1, 1);
    if (s->name && instanceName) memcpy(s->name, instanceName, n);
    s->type = fmuType;
    memcpy(s->x, x_start, sizeof s->x);
    return s;
}}

EXPORT void fmi2FreeInstance(fmi2Component c)
{{
    Instance *s = c;
    if (!s) return;
    fmi2CallbackFreeMemory release = s->callbacks.freeMemory;
    release(s->name);
    release(s);
}}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                      const fmi2String categories[])
{{
    (void)c; (void)on; (void)n; (void)categories;
    return fmi2OK;
}}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                      fmi2Real tolerance, fmi2Real startTime,
                                      fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{{
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Instance *)c)->time = startTime;
    return fmi2OK;
}}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) {{ (void)c; return fmi2OK; }}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{{
    Instance *s = c;
    s->fresh = 0;
    return refresh(s);
}}
EXPORT fmi2Status fmi2Terminate(fmi2Component c) {{ (void)c; return fmi2OK; }}
EXPORT fmi2Status fmi2Reset(fmi2Component c)
{{
    Instance *s = c;
    memcpy(s->x, x_start, sizeof s->x);
    memset(s->tau, 0, sizeof s->tau);
    s->time = 0.0;
    s->fresh = 0;
    return fmi2OK;
}}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                              fmi2Real value[])
{{
    Instance *s = c;
    for (size_t k = 0; k < nvr; k++) {{
        if (vr[k] < NX) value[k] = s->x[vr[k]];
        else if (vr[k] < 2 * NX) {{
            if (refresh(s) != fmi2OK) return fmi2Error;
            value[k] = s->xdot[vr[k] - NX];
        }} else if (vr[k] < 2 * NX + NU) value[k] = s->tau[vr[k] - 2 * NX];
        else {{
            logf_(s, fmi2Error, "fmi2GetReal: unknown value reference");
            return fmi2Error;
        }}
    }}
    return fmi2OK;
}}

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                              const fmi2Real value[])
{{
    Instance *s = c;
    for (size_t k = 0; k < nvr; k++) {{
        if (vr[k] < NX) s->x[vr[k]] = value[k];
        else if (vr[k] >= 2 * NX && vr[k] < 2 * NX + NU) s->tau[vr[k] - 2 * NX] = value[k];
        else {{
            logf_(s, fmi2Error, "fmi2SetReal: not a state or an input");
            return fmi2Error;
        }}
    }}
    s->fresh = 0;
    return fmi2OK;
}}

static fmi2Status none_(fmi2Component c, size_t nvr)
{{
    if (nvr == 0) return fmi2OK;
    logf_(c, fmi2Error, "the FMU has no integer, boolean or string variables");
    return fmi2Error;
}}

{typed_stubs}
static fmi2Status unsupported(fmi2Component c, const char *what)
{{
    logf_(c, fmi2Error, what);
    return fmi2Error;
}}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state)
{{ (void)state; return unsupported(c, "fmi2GetFMUstate is not supported"); }}
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{{ (void)state; return unsupported(c, "fmi2SetFMUstate is not supported"); }}
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state)
{{ (void)state; return unsupported(c, "fmi2FreeFMUstate is not supported"); }}
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size)
{{ (void)state; (void)size; return unsupported(c, "FMU states are not supported"); }}
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[],
                                        size_t size)
{{ (void)state; (void)bytes; (void)size; return unsupported(c, "FMU states are not supported"); }}
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                          fmi2FMUstate *state)
{{ (void)state; (void)bytes; (void)size; return unsupported(c, "FMU states are not supported"); }}
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[],
                                               size_t nu, const fmi2ValueReference z[], size_t nz,
                                               const fmi2Real dv[], fmi2Real dz[])
{{
    (void)u; (void)nu; (void)z; (void)nz; (void)dv; (void)dz;
    return unsupported(c, "directional derivatives are not supported");
}}

/* model exchange */
EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) {{ (void)c; return fmi2OK; }}
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info)
{{
    (void)c;
    memset(info, 0, sizeof *info);
    return fmi2OK;
}}
EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {{ (void)c; return fmi2OK; }}
EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c,
                                              fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                              fmi2Boolean *enterEventMode,
                                              fmi2Boolean *terminateSimulation)
{{
    (void)c; (void)noSetFMUStatePriorToCurrentPoint;
    *enterEventMode = 0;
    *terminateSimulation = 0;
    return fmi2OK;
}}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time)
{{
    ((Instance *)c)->time = time;
    return fmi2OK;
}}
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{{
    Instance *s = c;
    if (nx != NX) return unsupported(c, "fmi2SetContinuousStates: wrong number of states");
    memcpy(s->x, x, sizeof s->x);
    s->fresh = 0;
    return fmi2OK;
}}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx)
{{
    Instance *s = c;
    if (nx != NX) return unsupported(c, "fmi2GetDerivatives: wrong number of states");
    if (refresh(s) != fmi2OK) return fmi2Error;
    memcpy(derivatives, s->xdot, sizeof s->xdot);
    return fmi2OK;
}}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real indicators[], size_t ni)
{{
    (void)indicators;
    return ni == 0 ? fmi2OK : unsupported(c, "the FMU has no event indicators");
}}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{{
    Instance *s = c;
    if (nx != NX) return unsupported(c, "fmi2GetContinuousStates: wrong number of states");
    memcpy(x, s->x, sizeof s->x);
    return fmi2OK;
}}
EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominals[],
                                                    size_t nx)
{{
    (void)c;
    for (size_t k = 0; k < nx; k++) nominals[k] = 1.0;
    return fmi2OK;
}}

/* co-simulation: the classical Runge-Kutta method, tau held over the step */
static fmi2Status rk4(Instance *s, double h)
{{
    double *x = s->x, *y = s->stage;
    if (derivative(s, x, s->k1) != fmi2OK) return fmi2Error;
    for (int k = 0; k < NX; k++) y[k] = x[k] + 0.5 * h * s->k1[k];
    if (derivative(s, y, s->k2) != fmi2OK) return fmi2Error;
    for (int k = 0; k < NX; k++) y[k] = x[k] + 0.5 * h * s->k2[k];
    if (derivative(s, y, s->k3) != fmi2OK) return fmi2Error;
    for (int k = 0; k < NX; k++) y[k] = x[k] + h * s->k3[k];
    if (derivative(s, y, s->k4) != fmi2OK) return fmi2Error;
    for (int k = 0; k < NX; k++)
        x[k] += h / 6.0 * (s->k1[k] + 2.0 * s->k2[k] + 2.0 * s->k3[k] + s->k4[k]);
    return fmi2OK;
}}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                              size_t nvr, const fmi2Integer order[],
                                              const fmi2Real value[])
{{
    (void)vr; (void)order; (void)value;
    return nvr == 0 ? fmi2OK : unsupported(c, "input derivatives are not supported");
}}
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                               size_t nvr, const fmi2Integer order[],
                                               fmi2Real value[])
{{
    (void)vr; (void)order; (void)value;
    return nvr == 0 ? fmi2OK : unsupported(c, "output derivatives are not supported");
}}
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                             fmi2Real communicationStepSize,
                             fmi2Boolean noSetFMUStatePriorToCurrentCommunicationPoint)
{{
    Instance *s = c;
    (void)noSetFMUStatePriorToCurrentCommunicationPoint;
    if (!(communicationStepSize > 0.0)) return unsupported(c, "fmi2DoStep: step size <= 0");
    double steps = ceil(communicationStepSize / internal_step - 1e-9);
    int n = steps < 1.0 ? 1 : (int)steps;
    double h = communicationStepSize / n;
    s->time = currentCommunicationPoint;
    for (int k = 0; k < n; k++) {{
        if (rk4(s, h) != fmi2OK) return fmi2Error;
        s->time = currentCommunicationPoint + (k + 1) * h;
    }}
    s->fresh = 0;
    return fmi2OK;
}}
EXPORT fmi2Status fmi2CancelStep(fmi2Component c) {{ (void)c; return fmi2Error; }}
EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Status *value)
{{ (void)kind; (void)value; return unsupported(c, "fmi2GetStatus is not supported"); }}
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real *value)
{{
    if (kind != fmi2LastSuccessfulTime) return unsupported(c, "fmi2GetRealStatus: unknown kind");
    *value = ((Instance *)c)->time;
    return fmi2OK;
}}
EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind kind,
                                       fmi2Integer *value)
{{ (void)kind; (void)value; return unsupported(c, "fmi2GetIntegerStatus is not supported"); }}
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind,
                                       fmi2Boolean *value)
{{ (void)kind; (void)value; return unsupported(c, "fmi2GetBooleanStatus is not supported"); }}
EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind kind,
                                      fmi2String *value)
{{ (void)kind; (void)value; return unsupported(c, "fmi2GetStringStatus is not supported"); }}
"""


#: the FMI functions of the variable types the FMU has none of: each refuses a non-empty call
_TYPED_STUBS = "".join(
    f"EXPORT fmi2Status fmi2{op}{kind}(fmi2Component c, const fmi2ValueReference vr[], "
    f"size_t nvr,\n    {const}fmi2{kind} value[])\n"
    "{ (void)vr; (void)value; return none_(c, nvr); }\n"
    for kind in ("Integer", "Boolean", "String") for op, const in (("Get", ""), ("Set", "const ")))


def _xml(model: Model, layout: dict, identifier: str, guid: str, fmi_type: str,
         x0: np.ndarray, outputs: set[int], description: str) -> str:
    """``modelDescription.xml`` (FMI 2.0) of the native FMU; ``layout`` the model's
    :func:`~flexdyn.state_layout`."""
    names = [e.name for e in layout["q"] + layout["u"]]
    nx = len(names)
    variables = []
    for k, name in enumerate(names):
        causality = "output" if k in outputs else "local"
        variables.append(f'    <ScalarVariable name={quoteattr(name)} valueReference="{k}" '
                         f'causality="{causality}" variability="continuous" initial="exact">\n'
                         f'      <Real start="{float(x0[k])!r}"/>\n    </ScalarVariable>')
    for k, name in enumerate(names):
        variables.append(f'    <ScalarVariable name={quoteattr(f"der({name})")} '
                         f'valueReference="{nx + k}" causality="local" variability="continuous" '
                         f'initial="calculated">\n      <Real derivative="{k + 1}"/>\n'
                         '    </ScalarVariable>')
    for k, entry in enumerate(layout["u"]):
        variables.append(f'    <ScalarVariable name={quoteattr(f"tau.{entry.name}")} '
                         f'valueReference="{2 * nx + k}" causality="input" '
                         f'variability="continuous">\n      <Real start="0.0"/>\n'
                         '    </ScalarVariable>')
    out_rows = "".join(f'      <Unknown index="{k + 1}"/>\n' for k in sorted(outputs))
    der_rows = "".join(f'      <Unknown index="{nx + k + 1}"/>\n' for k in range(nx))
    kinds = {"ModelExchange": ["ModelExchange"], "CoSimulation": ["CoSimulation"],
             "both": ["ModelExchange", "CoSimulation"]}[fmi_type]
    interfaces = "".join(
        f'  <{kind} modelIdentifier="{identifier}"'
        + (' canHandleVariableCommunicationStepSize="true"' if kind == "CoSimulation" else "")
        + "/>\n" for kind in kinds)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<fmiModelDescription fmiVersion="2.0" '
            f'modelName={quoteattr(model.name)} guid="{guid}" '
            f'description={quoteattr(description)} generationTool="flexdyn" '
            f'variableNamingConvention="flat" numberOfEventIndicators="0">\n{interfaces}'
            f'  <ModelVariables>\n{chr(10).join(variables)}\n  </ModelVariables>\n'
            f'  <ModelStructure>\n'
            + (f"    <Outputs>\n{out_rows}    </Outputs>\n" if out_rows else "")
            + f"    <Derivatives>\n{der_rows}    </Derivatives>\n"
            + f"    <InitialUnknowns>\n{der_rows}    </InitialUnknowns>\n"
            + "  </ModelStructure>\n</fmiModelDescription>\n")


def _check_stable(model: Model, fidelity: str, x0: np.ndarray, dt: float,
                  substeps: int) -> None:
    """``ValueError`` when the co-simulation's RK4 step ``dt / substeps`` is beyond RK4's
    stability limit at the start state (:func:`flexdyn.max_stable_step`): such an FMU would
    diverge in its first steps."""
    from .control import max_stable_step

    h = dt / substeps
    limit = max_stable_step(model, "rk4", x0[:model.nq], x0[model.nq:], fidelity=fidelity)
    if h > limit:
        raise ValueError(
            f"the co-simulation step dt / substeps = {h:.3g} s is beyond RK4's stability limit "
            f"{limit:.3g} s at the start state (the model's stiffest mode): use substeps >= "
            f"{math.ceil(dt / limit)}, or fmi_type='ModelExchange' and an implicit solver in "
            "the importer")


def build_native_fmu(model: Model, target: Path, identifier: str, *, dt: float, substeps: int,
                     fidelity: str, x0: np.ndarray, outputs: Sequence[str],
                     fmi_type: str = "CoSimulation", overwrite: bool = True) -> Path:
    """Write the native FMU of ``model`` to ``target`` (see the module docstring):
    ``identifier`` the model identifier (the binary's name, a C identifier), ``dt`` (s) and
    ``substeps`` the co-simulation's RK4 step ``dt / substeps``, ``x0`` the start state
    ``[q; u]`` (nq + nu), ``outputs`` names of state entries
    (:func:`flexdyn.state_layout`).  Called by :func:`flexdyn.fmu.build_fmu`, which checks
    the settings."""
    if fmi_type not in FMI_TYPES:
        raise ValueError(f"fmi_type must be one of {FMI_TYPES}, not {fmi_type!r}")
    require_linux("a native FMU")
    if c_compiler() is None:
        raise RuntimeError("a native FMU needs a C compiler (cc, gcc or clang) on the path")
    layout = state_layout(model)
    names = [e.name for e in layout["q"] + layout["u"]]
    unknown = [n for n in outputs if n not in names]
    if unknown:
        raise ValueError(f"a native FMU's outputs are entries of the state {names[:4]}…; "
                         f"{unknown} are not (native=False serves every output of "
                         "flexdyn.outputs)")
    if fmi_type != "ModelExchange":
        _check_stable(model, fidelity, x0, dt, substeps)
    index = {n: k for k, n in enumerate(names)}
    guid = "{" + str(uuid.uuid4()) + "}"
    description = (f"flexdyn model {model.name!r}: {model.n_bodies} bodies, nq = {model.nq}, "
                   f"nu = {model.nu} (fidelity {fidelity})")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lib = export_c(model, folder / "sources", fidelity=fidelity, name=identifier,
                       build=False)
        shell = folder / "sources" / "fmi2.c"
        shell.write_text(_SHELL.format(
            model=model.name.replace("*/", "* /"), name=identifier, NAME=identifier.upper(),
            guid=guid, typed_stubs=_TYPED_STUBS, x_start=", ".join(repr(float(v)) for v in x0),
            h=repr(float(dt) / int(substeps))), encoding="utf-8")
        binary = folder / "binaries" / "linux64" / f"{identifier}.so"
        binary.parent.mkdir(parents=True)
        link_shared(binary, [shell, lib.source, lib.object], extra=("-fvisibility=hidden",))
        xml = _xml(model, layout, identifier, guid, fmi_type, x0, {index[n] for n in outputs},
                   description)

        def write(fh) -> None:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("modelDescription.xml", xml)
                z.write(binary, f"binaries/linux64/{identifier}.so")

        write_atomically(target, write, binary=True, overwrite=overwrite)
    return target
