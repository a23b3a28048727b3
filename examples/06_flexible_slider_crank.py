# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A slider-crank with a flexible coupler
#
# The classic benchmark of flexible mechanisms: a crank drives a slender aluminium
# connecting rod whose far end carries a slider on a straight guide. The rod bends under
# its own inertia as the crank spins up. The mechanism is a closed loop: the crank, the
# rod (jointed to the crank) and the slider (on a prismatic joint) form a tree, and a
# `pin` closure joins the rod's tip node to the slider (docs/closed-chains.md).
#
# The script assembles the loop, simulates a spin-up of the crank, and reports the rod's
# midspan deflection, the slider's motion against the rigid mechanism's closed form, the
# force the rod pushes the slider with, the closure drift and the energy balance.
#
# Run it as a script (`python examples/06_flexible_slider_crank.py`) or open it as a
# notebook with jupytext. Options:
#
# * `FLEXDYN_EXAMPLE_QUICK=1` — one mode, a shorter run;
# * `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` — save a figure (needs matplotlib).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np

import flexdyn as fd
from flexdyn.beam import beam_modes

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


CRANK, ROD = 0.15, 0.30  # m
rod = beam_modes(ROD, 2700.0 * 6e-5, EI_z=7e10 * 1.2e-10, n_elements=8,  # 12 × 5 mm
                 n_modes=1 if QUICK else 2, damping_ratio=0.01)
z = [0, 0, 1]
model = (
    fd.ModelBuilder("slider-crank")
    .add_body("crank", None, joint={"type": "revolute", "axis": z},
              rigid={"mass": 0.5, "com": [CRANK / 2, 0, 0],
                     "inertia": np.diag([1e-5, 1e-3, 1e-3])})
    .add_body("rod", "crank", flex=rod.to_flex_dict(),
              joint={"type": "revolute", "axis": z, "placement": {"translation": [CRANK, 0, 0]}})
    .add_body("slider", None, joint={"type": "prismatic", "axis": [1, 0, 0]},
              rigid={"mass": 0.3, "com": [0, 0, 0], "inertia": np.eye(3) * 1e-4})
    .add_constraint("wrist", "pin", "rod", "slider", node=8, other_point=[0, 0, 0], axis=z)
    .build()
)
print(model, f"— {model.n_constraints} closure rows; rod modes "
      f"{np.round(np.sqrt(np.diag(model.bodies[1].K)) / (2 * np.pi), 1)} Hz")

# %% [markdown]
# Assemble the loop at a crank angle of zero (the slider's coordinate is solved for), then
# spin the crank up with a motor torque that fades out: `T = T0 (1 − t/t_r)` for
# `t < t_r`. The torque is a function of time alone (`fd.of_time`), which the compiled
# integrator takes at its stage times without pausing for Python between steps; `simulate`'s
# default chooses the compiled Radau IIA for this flexible closed loop, which solves the
# closure forces with the motion.

# %%
SLIDER = model.q_slice(model.body_index("slider")).start  # q = [crank; rod, η; slider]
guess = model.neutral_configuration()
guess[SLIDER] = 0.4
q0, u0 = fd.assemble(model, guess, fixed=["crank"])
print(f"assembled: slider at {q0[SLIDER]:.6f} m (closed form {CRANK + ROD:.6f} m)")
T0, t_ramp = 1.5, 0.3
t_end = 0.3 if QUICK else 1.0


@fd.of_time
def motor(t):
    tau = np.zeros(model.nu)
    tau[0] = T0 * max(0.0, 1.0 - t / t_ramp)
    return tau


wall = time.perf_counter()
res = fd.simulate(model, q0, u0, (0.0, t_end), tau=motor, t_eval=np.linspace(0, t_end, 301),
                  integrator=fd.Auto(rtol=1e-8, atol=1e-10))
print(f"simulated {t_end:g} s in {time.perf_counter() - wall:.1f} s "
      f"({res.settings['integrator']}, {res.nfev} residual evaluations); crank speed at the "
      f"end {res.u[-1, 0] / (2 * np.pi):.1f} rev/s")

# %% [markdown]
# The rod's midspan deflection (node 4) in its own frame, the slider against the rigid
# mechanism's position for the same crank angle, the closure force along the guide and the
# bookkeeping.

# %%
mid = res.deflection("rod", 4)
print(f"rod midspan deflection: peak {np.max(np.abs(mid[:, 1])) * 1e3:.3f} mm")
theta = res.q[:, 0]
rigid = CRANK * np.cos(theta) + np.sqrt(ROD**2 - (CRANK * np.sin(theta)) ** 2)
print(f"slider vs the rigid mechanism: max difference "
      f"{np.max(np.abs(res.q[:, SLIDER] - rigid)) * 1e3:.3f} mm")
print(f"closure force on the slider: peak {np.max(np.abs(res.constraint_forces)):.2f} N; "
      f"closure drift: max {res.max_closure_drift:.1e} m")
print(f"energy balance error: max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} % "
      "(motor work, modal damping)")

# %% [markdown]
# ## Plot (optional)

# %%
path = plot_path("06_flexible_slider_crank")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed; no plot")
    else:
        fig = Figure(figsize=(8, 7), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        ax1.plot(res.t, res.q[:, SLIDER], label="flexible rod")
        ax1.plot(res.t, rigid, "--", label="rigid mechanism")
        ax1.set_ylabel("slider (m)")
        ax1.legend(fontsize="small")
        ax2.plot(res.t, mid[:, 1] * 1e3, color="k")
        ax2.set_ylabel("rod midspan\ndeflection (mm)")
        ax3.plot(res.t, res.energy_balance_error, color="k")
        ax3.set_ylabel("energy balance\nerror e_E (%)")
        ax3.set_xlabel("t (s)")
        fig.savefig(path, dpi=120)
        print(f"plot written to {path}")
