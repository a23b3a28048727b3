# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Slewing a flexible arm along a planned joint trajectory
#
# A motion planner hands over joint trajectories; the structures engineer wants to know
# what torques the motors must deliver, how much the links vibrate, and what loads the
# shoulder has to carry. This example prescribes both joints of a flexible two-link arm
# along rest-to-rest cycloidal profiles while the elastic coordinates respond freely
# (`simulate(..., prescribed=...)`, by hybrid dynamics), then reads off the feedforward
# torques (`result.tau`), the tip vibration (`result.deflection`) and the loads the joints
# transmit (`result.joint_wrenches()`). Feeding the torques back to an open-loop
# simulation reproduces the motion.
#
# Run it as a script (`python examples/05_prescribed_slew.py`) or open it as a notebook
# with jupytext. Options:
#
# * `FLEXDYN_EXAMPLE_QUICK=1` — one mode per link, looser tolerances, shorter hold;
# * `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` — save a figure (needs matplotlib).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.interpolate

import flexdyn as fd

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


# %% [markdown]
# ## The arm and the planned motion
#
# `fd.models.two_link_arm` is a planar arm of two cantilever beams (2.0 m and 1.6 m,
# in-plane bending only, here with bending stiffnesses of 3000 and 1500 N m²: cantilever
# frequencies 5.4 and 4.2 Hz) with a hub, an elbow motor and a 1 kg payload; 0.5 % modal
# damping. The plan: the shoulder turns by 90° and the elbow by −45° in `T = 2 s`, each
# along the cycloid `θ(t) = Δ (t/T − sin(2πt/T)/(2π))`, whose speed and acceleration
# start and end at zero; then both joints hold still.

# %%
model = fd.models.two_link_arm(n_modes=1 if QUICK else 2, EI1=3000.0, EI2=1500.0,
                               damping_ratio=0.005)
T = 2.0
t_end = T + (0.5 if QUICK else 2.0)


def cycloid(delta: float):
    """``f(t) -> (θ, θ̇, θ̈)`` of a rest-to-rest cycloidal move of ``delta`` rad in ``T``."""
    w = 2.0 * np.pi / T

    def f(t: float) -> tuple[float, float, float]:
        if t >= T:
            return delta, 0.0, 0.0
        return (delta * (t / T - np.sin(w * t) / (2 * np.pi)),
                delta * (1.0 - np.cos(w * t)) / T, delta * w * np.sin(w * t) / T)

    return f


plan = {"link1": cycloid(np.pi / 2), "link2": cycloid(-np.pi / 4)}

# %% [markdown]
# ## Prescribed motion
#
# The joints follow the plan exactly; the modes respond. `result.tau` holds, in the
# prescribed joint entries, the torques that realise the motion.

# %%
tol = 1e-7 if QUICK else 1e-9
t_eval = np.linspace(0.0, t_end, 251 if QUICK else 501)
wall = time.perf_counter()
res = fd.simulate(model, t_span=(0.0, t_end), prescribed=plan, t_eval=t_eval,
                  integrator=fd.Auto(rtol=tol, atol=tol * 1e-2))
print(f"simulated {t_end:g} s with prescribed joints in {time.perf_counter() - wall:.1f} s "
      f"({res.nfev} right-hand-side evaluations)")
shoulder, elbow = model.u_start[0], model.u_start[1]
print(f"feedforward torque: shoulder peak {np.max(np.abs(res.tau[:, shoulder])):.2f} N m, "
      f"elbow peak {np.max(np.abs(res.tau[:, elbow])):.2f} N m")

# %% [markdown]
# For comparison, the torques a rigid arm of the same mass distribution would need: the
# same motion with the modes held at zero (every coordinate prescribed, inverse dynamics).

# %%
q_rigid = np.zeros((t_eval.size, model.nq))
u_rigid, udot_rigid = np.zeros((2, t_eval.size, model.nu))
for name, f in plan.items():
    j = model.u_start[model.body_index(name)]
    q_rigid[:, j], u_rigid[:, j], udot_rigid[:, j] = np.array([f(t) for t in t_eval]).T
tau_rigid = fd.inverse_dynamics(model, q_rigid, u_rigid, udot_rigid)
print(f"the same motion of a rigid arm: shoulder peak "
      f"{np.max(np.abs(tau_rigid[:, shoulder])):.2f} N m; largest difference from the "
      f"flexible feedforward {np.max(np.abs(tau_rigid[:, shoulder] - res.tau[:, shoulder])):.2f}"
      " N m")

# %% [markdown]
# ## Tip vibration and the loads at the shoulder
#
# `deflection("link2")` is the elastic displacement of link 2's tip in its body frame.
# `joint_wrenches()` gives, at every sample, the spatial force `[moment; force]` each joint
# transmits to its child, in the child's joint frame: at the shoulder, the bending moment
# about z is the motor torque and the forces are the shear and axial loads of the root.

# %%
defl = res.deflection("link2")[:, 1]
hold = res.t >= T
print(f"tip deflection of link 2: peak {np.max(np.abs(defl)) * 1e3:.1f} mm during the slew, "
      f"residual {np.max(np.abs(defl[hold])) * 1e3:.2f} mm after it")
W = res.joint_wrenches()
root = W[:, 0]
print(f"shoulder loads: moment about z peak {np.max(np.abs(root[:, 2])):.2f} N m, shear "
      f"peak {np.max(np.abs(root[:, 4])):.2f} N, axial peak {np.max(np.abs(root[:, 3])):.2f} N")
print(f"the moment about z is the shoulder torque: max difference "
      f"{np.max(np.abs(root[:, 2] - res.tau[:, shoulder])):.1e} N m")

# %% [markdown]
# ## Energy, and the torques fed back
#
# The work of the prescribed-joint torques is integrated with the motion (`work`); with
# the dissipation of the modal damping it balances the change of energy. Feeding the
# feedforward torques, interpolated between the samples, to an ordinary open-loop
# simulation reproduces the planned joint motion up to the interpolation error.

# %%
print(f"energy balance error: max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} % "
      f"(work of the joint torques {res.work[-1]:.3f} J)")
spline = scipy.interpolate.CubicSpline(res.t, res.tau)
t_check = T / 2
replay = fd.simulate(model, t_span=(0.0, t_check), tau=lambda t, q, u: spline(t), t_eval=[t_check],
                     integrator=fd.Auto(rtol=tol, atol=tol * 1e-2))
planned = np.array([plan["link1"](t_check)[0], plan["link2"](t_check)[0]])
replayed = replay.q[-1, [model.q_start[0], model.q_start[1]]]
print(f"open-loop replay of the torques: joint angles at t = {t_check:g} s differ from the "
      f"plan by {np.max(np.abs(replayed - planned)):.1e} rad")

# %% [markdown]
# ## Plot (optional)

# %%
path = plot_path("05_prescribed_slew")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed; no plot")
    else:
        fig = Figure(figsize=(8, 7), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        ax1.plot(res.t, res.tau[:, shoulder], label="shoulder, flexible")
        ax1.plot(res.t, tau_rigid[:, shoulder], "--", label="shoulder, rigid")
        ax1.plot(res.t, res.tau[:, elbow], label="elbow, flexible")
        ax1.set_ylabel("torque (N m)")
        ax1.legend(fontsize="small")
        ax2.plot(res.t, defl * 1e3, color="k")
        ax2.set_ylabel("link 2 tip\ndeflection (mm)")
        ax3.plot(res.t, root[:, 4], label="shear")
        ax3.plot(res.t, root[:, 3], label="axial")
        ax3.set_ylabel("shoulder\nforce (N)")
        ax3.set_xlabel("t (s)")
        ax3.legend(fontsize="small")
        fig.savefig(path, dpi=120)
        print(f"plot written to {path}")
