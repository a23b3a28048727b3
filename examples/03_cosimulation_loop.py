# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # flexdyn inside another simulator's loop
#
# A system simulator (a spacecraft or robot simulator, a co-simulation master) usually
# owns the time loop: it advances its own states with its own integrator and asks each
# component for state derivatives. This example plays that simulator. It
#
# 1. loads a model file and reads the meaning of every state entry from
#    `flexdyn.state_layout`,
# 2. advances the model with `flexdyn.Stepper` — fixed RK4 steps, the joint torques of a
#    digital controller as inputs computed once per step (zero-order hold) —,
#
# and compares the result with `flexdyn.simulate`, which integrates the same closed loop
# with an adaptive integrator and the controller evaluated continuously.
#
# Run it as a script or open it as a notebook with jupytext. `FLEXDYN_EXAMPLE_QUICK=1`
# shortens the run; `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` saves a figure (needs
# matplotlib).

# %%
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import flexdyn as fd

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


# %% [markdown]
# ## The model file and the state layout
#
# The model travels as a model file: here the built-in two-link arm, written to a
# temporary folder and read back as the other simulator would. `state_layout` names
# every entry of `q` and `u` (`"<body>.<component>"`) with its kind and index, so the
# simulator can map its own signals onto flexdyn's state without knowing the model's
# internals. The layout is the contract of the model-file format: body by body in file
# order, joint coordinates first, then modal coordinates.

# %%
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "arm.json"
    fd.save_model(fd.models.two_link_arm(), path)
    model = fd.load_model(path)

layout = fd.state_layout(model)
for entry in layout["q"] + layout["u"]:
    print(f"  {entry.kind:>13}  {entry.name:<18} index {entry.index}")
theta = [e.index for e in layout["q"] if e.kind == "angle"]   # joint angles in q
rate = [e.index for e in layout["u"] if e.kind == "angular_rate"]   # their rates in u
eta = [e.index for e in layout["q"] if e.kind == "modal"]

# %% [markdown]
# ## The controller
#
# A joint-space PD controller tracks a smooth rest-to-rest reference (the shoulder turns
# by +0.5 rad and the elbow by −0.5 rad in 3 s, with a quintic time scaling) and feeds
# forward the rigid-body torque of the reference acceleration, `M_jj θ̈_ref`, with
# `M_jj` the joints' block of the mass matrix. It reads only the joint angles and rates,
# as a real joint controller would.
#
# The gains need care because the controller is sampled. Over one step a joint motor
# does not move the whole arm: the links bend, and what it feels is the *effective*
# inertia `J = M_jj − M_jη M_ηη⁻¹ M_ηj` (the hub and motor plus what the links' modes do
# not carry), which is 75 to 120 times smaller than `M_jj` here. A rate gain `K_d` held
# over a step `dt` is stable only if `K_d dt / J` is below 2 (and well damped only well
# below it), so the rate gains are sized from `J` and the largest step used, and the
# angle gains give the rigid arm a natural frequency of 1 rad/s.

# %%
M0 = fd.mass_matrix(model, model.neutral_configuration())
modal = [e.index for e in layout["u"] if e.kind == "modal_rate"]
M_jj = M0[np.ix_(rate, rate)]
J_eff = M_jj - M0[np.ix_(rate, modal)] @ np.linalg.solve(M0[np.ix_(modal, modal)],
                                                          M0[np.ix_(modal, rate)])
dt_max = 0.01
Kd = np.diag(0.35 * np.diag(J_eff) / dt_max)
Kp = np.diag(np.diag(M_jj))
print("M_jj diagonal", np.round(np.diag(M_jj), 3).tolist(),
      "kg m², effective J", np.round(np.diag(J_eff), 3).tolist(), "kg m²")
delta, T_move = np.array([0.5, -0.5]), 3.0


def reference(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = min(max(t / T_move, 0.0), 1.0)
    s = 10 * x**3 - 15 * x**4 + 6 * x**5
    ds = (30 * x**2 - 60 * x**3 + 30 * x**4) / T_move if 0 < t < T_move else 0.0
    dds = (60 * x - 180 * x**2 + 120 * x**3) / T_move**2 if 0 < t < T_move else 0.0
    return delta * s, delta * ds, delta * dds


def controller(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    th_ref, w_ref, a_ref = reference(t)
    tau = np.zeros(model.nu)
    tau[rate] = M_jj @ a_ref + Kp @ (th_ref - q[theta]) + Kd @ (w_ref - u[rate])
    return tau


# %% [markdown]
# ## The simulator's own loop: a stepper with a sampled controller
#
# `fd.Stepper(model, dt)` is the model as a co-simulation component: `tau` is its input,
# held over each step (zero-order hold, as in a sampled-data system), `step()` advances
# the state by `dt` with one classical RK4 step (the same solver as
# `fd.simulate(..., integrator="rk4", h=dt)`), and `q`, `u`, `outputs()` and `work` (the
# work of the torques, `∫ τ·u dt`, integrated with the state) are read after each step.
# The controller runs once per step. (For a simulator that integrates `x = [q; u]` with
# its own method, `fd.rhs(model)` gives the derivative `f(t, x, tau)`; the C entry at the
# end is the same derivative for compiled simulators.)

# %%
dt = dt_max if QUICK else dt_max / 2
t_end = T_move + (0.0 if QUICK else 2.0)
n_steps = int(round(t_end / dt))

stepper = fd.Stepper(model, dt, outputs=["link2.tip"])
times, states, work = [0.0], [np.concatenate([stepper.q, stepper.u])], [0.0]
wall = time.perf_counter()
for _ in range(n_steps):
    stepper.tau = controller(stepper.t, stepper.q, stepper.u)  # sampled once per step, held
    stepper.step()
    times.append(stepper.t)
    states.append(np.concatenate([stepper.q, stepper.u]))
    work.append(stepper.work["tau"])
wall_rk4 = time.perf_counter() - wall
times, states, work = np.array(times), np.array(states), np.array(work)
q_rk4, u_rk4 = states[:, :model.nq], states[:, model.nq:]
print(f"RK4 loop: {n_steps} steps of {dt * 1e3:g} ms, {wall_rk4:.1f} s; "
      f"tip at {np.round(stepper.outputs(), 3).tolist()} m")

energy = np.array([fd.total_energy(model, q, u) for q, u in zip(q_rk4, u_rk4, strict=True)])
e_rk4 = 100 * (energy - energy[0] - work) / np.max(np.abs(energy))
print(f"RK4 loop: energy balance error max |e_E| = {np.max(np.abs(e_rk4)):.2e} %")

# %% [markdown]
# ## The same closed loop with `flexdyn.simulate`
#
# `simulate` accepts the controller itself as `tau(t, q, u)`: the torque is then a
# continuous function of the state (no sampling), integrated with adaptive steps.

# %%
wall = time.perf_counter()
tol = 1e-6 if QUICK else 1e-9
res = fd.simulate(model, t_span=(0.0, t_end), tau=controller,
                  t_eval=times, integrator=fd.Auto(rtol=tol, atol=tol * 1e-2))
print(f"simulate: {res.nfev} rhs calls, {time.perf_counter() - wall:.1f} s, "
      f"max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} %")

# %% [markdown]
# ## Comparison
#
# The two runs differ by the controller's sampling: a torque held for `dt` acts on
# average half a step late, an error of order `dt` that the fixed-step RK4 adds to its own
# `O(dt⁴)` error. Halving `dt` halves the difference: over the 3 s move it is
# 1.1e-3 rad with `dt` = 10 ms, 5.4e-4 rad with 5 ms and 2.7e-4 rad with 2.5 ms.

# %%
d_theta = np.max(np.abs(q_rk4[:, theta] - res.q[:, theta]))
d_eta = np.max(np.abs(q_rk4[:, eta] - res.q[:, eta]))
track = np.max(np.abs(res.q[:, theta] - np.array([reference(t)[0] for t in res.t])))
defl = res.max_tip_deflection()
print(f"tracking error of the continuous loop: max {track * 1e3:.2f} mrad; "
      f"tip deflection link1 {defl['link1'] * 1e3:.1f} mm, link2 {defl['link2'] * 1e3:.1f} mm")
print(f"RK4 loop (dt = {dt * 1e3:g} ms) vs simulate: max joint angle difference "
      f"{d_theta:.2e} rad, max modal coordinate difference {d_eta:.2e}")

# %% [markdown]
# ## The same derivative as a C function
#
# A simulator written in C, C++ or Fortran (or an FMU wrapper) does not want to enter
# Python at every evaluation. The engine exposes the state derivative as one C function
# for every model,
#
# ```c
# int64_t flexdyn_state_derivative(const int64_t *ib, const double *fb, int64_t method,
#                                  const double *x, const double *tau,
#                                  const double *f_ext, double *xdot);
# ```
#
# where `ib` and `fb` are the model's packed buffers. `c_state_derivative()` gives its
# address (to hand to C code) together with the buffers; here it is called through
# `ctypes`, exactly as C would call it, and compared with `fd.rhs`.

# %%
import ctypes  # noqa: E402

from flexdyn.engine import Engine  # noqa: E402

entry = Engine(model).c_state_derivative()


def c_pointer(a: np.ndarray, kind=ctypes.c_double):
    return a.ctypes.data_as(ctypes.POINTER(kind))


x_c, tau_c = states[len(states) // 2], controller(0.5, q_rk4[0], u_rk4[0])
f_ext_c, xdot_c = np.zeros((model.n_bodies, 6)), np.empty(model.nq + model.nu)
status = entry.function(c_pointer(entry.ib, ctypes.c_int64), c_pointer(entry.fb), 0,
                        c_pointer(x_c), c_pointer(tau_c), c_pointer(f_ext_c), c_pointer(xdot_c))
d_c = np.max(np.abs(xdot_c - fd.rhs(model)(0.0, x_c, tau_c)))
assert status == -1, f"the C entry failed: status {status} (flexdyn.engine.ccall)"
print(f"C entry at address {entry.address:#x}: status -1 (success: its failures are -2, -3 or "
      f"a body's index), max |ẋ_C − rhs| = {d_c:.1e}")

# %% [markdown]
# ## The model as a C library without Python
#
# The C entry needs a running Python process. For a simulator that has none — a C++ test
# bench, a hardware-in-the-loop rig, a Modelica or Simulink model — `fd.export_c` writes
# the model as a C library: a header, a C file holding the model's data, the engine's
# compiled code as an object file and, with a C compiler on the path, `libarm.so`, which
# links the C runtime and libm only (`docs/cosimulation.md`; the first export of an
# installation compiles the engine's object, about a minute). `flexdyn.fmu.build_fmu`
# wraps the same library into an FMI 2.0 FMU for model exchange or co-simulation. The
# library is loaded here through `ctypes`, as a C program would link it.

# %%
import shutil  # noqa: E402

if shutil.which("cc") is None:
    print("no C compiler (cc) on the path: the library is not built")
else:
    with tempfile.TemporaryDirectory() as folder:
        exported = fd.export_c(model, folder, name="arm")
        library = ctypes.CDLL(str(exported.library))
        xdot_lib = np.empty(model.nq + model.nu)
        code = library.arm_state_derivative(ctypes.c_double(0.0), c_pointer(x_c),
                                            c_pointer(tau_c), c_pointer(xdot_lib))
        d_lib = np.max(np.abs(xdot_lib - fd.rhs(model)(0.0, x_c, tau_c)))
        print(f"{exported.library.name}: return code {code} (0: success), "
              f"max |ẋ_lib − rhs| = {d_lib:.1e}")

# %%
path = plot_path("03_cosimulation_loop")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot")
    else:
        fig = Figure(figsize=(8, 6), layout="constrained")
        ax1, ax2 = fig.subplots(2, 1, sharex=True)
        for j, name in zip(theta, ("shoulder", "elbow"), strict=True):
            ax1.plot(res.t, res.q[:, j], label=f"{name}, simulate")
            ax1.plot(times, q_rk4[:, j], "--", label=f"{name}, RK4 loop")
            ax2.plot(times, (q_rk4[:, j] - res.q[:, j]) * 1e3, label=name)
        ax1.set_ylabel("joint angle (rad)")
        ax2.set_ylabel("RK4 − simulate (mrad)")
        ax2.set_xlabel("t (s)")
        ax1.legend(loc="best", fontsize="small")
        ax2.legend(loc="best", fontsize="small")
        fig.savefig(path, dpi=110)
        print(f"plot written to {path}")
