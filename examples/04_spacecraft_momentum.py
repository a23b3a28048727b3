# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A free-flying spacecraft: modal frequencies and momentum conservation
#
# The built-in spacecraft is a rigid cubic hub on a `free` joint (six degrees of freedom
# relative to the inertial frame) carrying two flexible solar arrays, modelled as
# cantilever beams with bending in both planes and torsion. There is no gravity and no
# external force, so whatever the solar-array drives do, the total momentum of the
# spacecraft must stay constant. This example
#
# 1. compares the arrays' cantilever frequencies with the frequencies of the free-flying
#    spacecraft, and
# 2. rotates both arrays with their drive motors while the spacecraft tumbles slowly, and
#    checks that linear and angular momentum are conserved and that the energy balance
#    closes.
#
# Run it as a script or open it as a notebook with jupytext. `FLEXDYN_EXAMPLE_QUICK=1`
# shortens the run; `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` saves a figure (needs
# matplotlib).

# %%
import os
import sys
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
# ## Modal frequencies
#
# Each array's own modes are cantilever modes: their frequencies, with the hub held fixed,
# follow from the array's modal stiffness `K` and the modal block `M_ff` of its
# undeformed modal mass matrix (this is what `python -m flexdyn info` prints). On the
# free-flying spacecraft the hub moves too: `fd.modal_analysis` solves `K φ = ω² M φ` for
# the whole vehicle at rest — the mass matrix `M(q₀)` and the tangent stiffness `K` (here
# the arrays' modal stiffnesses) — and marks the rigid-body modes (zero frequency): six
# for a free flyer.

# %%
sc = fd.models.spacecraft()
print(sc)
for body, f in zip(sc.bodies, fd.models.modal_frequencies(sc), strict=True):
    if f.size:
        print(f"{body.name} cantilever frequencies (Hz): " + ", ".join(f"{v:.4f}" for v in f))

modes = fd.modal_analysis(sc)
n_rigid = int(modes.rigid.sum())
print(f"free-flying spacecraft: {n_rigid} rigid-body modes; elastic frequencies (Hz): "
      + ", ".join(f"{f:.4f}" for f in modes.frequencies[~modes.rigid]))

# %% [markdown]
# On the vehicle the hub is no clamp: it recoils, so no frequency is lower than on the
# clamp. Each array mode appears twice, once in each of the two combinations of the two
# arrays (in phase or in opposition). One combination pushes the hub sideways and shifts
# little, because the hub (1000 kg) is much heavier than an array (24 kg); the other turns
# the hub and shifts more, most for the first out-of-plane bending (0.193 Hz on the clamp,
# 0.196 and 0.323 Hz on the vehicle), because the arrays' moment of inertia about the
# hub's roll axis is twice the hub's own. The torsion combination that puts no net torque
# on the hub stays exactly at the cantilever frequency.
#
# ## Momentum conservation with the solar-array drives running
#
# The spacecraft with `array_joint="revolute"` has a drive on each array, turning it
# about its long axis. Both drives accelerate their arrays for 2 s and brake them for
# 2 s (`τ = ±A sin(2πt/4 s)`), in the same sense in inertial space (the arrays point
# in opposite directions, so the joint torques have opposite signs); the hub reacts by
# turning the other way. The spacecraft starts with a slow tumble and drift.

# %%
sc = fd.models.spacecraft(array_joint="revolute")
layout = fd.state_layout(sc)
print("u =", [e.name for e in layout["u"]])
drives = [e.index for e in layout["u"] if e.kind == "angular_rate"]
omega = [e.index for e in layout["u"] if e.name.startswith("hub.w")]

u0 = np.zeros(sc.nu)
velocity = [e.index for e in layout["u"] if e.name.startswith("hub.v")]
u0[omega] = [0.01, -0.02, 0.05]      # rad/s, in hub coordinates
u0[velocity] = [0.02, 0.0, -0.01]    # m/s, in hub coordinates
A, T_drive = 2.0, 4.0                # N m, s


@fd.of_time
def drive(t: float) -> np.ndarray:
    tau = np.zeros(sc.nu)
    if t < T_drive:
        tau[drives] = A * np.sin(2 * np.pi * t / T_drive) * np.array([1.0, -1.0])
    return tau


# The arrays' modes are slow (below 1.5 Hz): the model is not stiff, and at these tight
# tolerances the explicit eighth-order DOP853 is the fast integrator for it (simulate's
# automatic choice takes the compiled Radau IIA for every flexible model).
t_end = T_drive + (0.0 if QUICK else 16.0)
tol = 1e-6 if QUICK else 1e-9
wall = time.perf_counter()
res = fd.simulate(sc, u0=u0, t_span=(0.0, t_end), tau=drive,
                  t_eval=np.linspace(0.0, t_end, 201),
                  integrator=fd.ScipyIVP("DOP853", rtol=tol, atol=tol * 1e-2))
print(f"simulated {t_end:g} s in {time.perf_counter() - wall:.1f} s ({res.nfev} rhs calls)")

# %% [markdown]
# `res.momentum()` is the total spatial momentum `[h; p]` in inertial coordinates:
# angular momentum about the inertial origin and linear momentum, summed over the
# hub and all nodes of the arrays.

# %%
hp = res.momentum()
drift = np.max(np.abs(hp - hp[0]), axis=0)
print(f"angular momentum h(0) = {np.round(hp[0, :3], 4).tolist()} N m s, "
      f"max drift {np.max(drift[:3]):.2e} N m s "
      f"({np.max(drift[:3]) / np.linalg.norm(hp[0, :3]):.1e} relative)")
print(f"linear momentum p(0) = {np.round(hp[0, 3:], 4).tolist()} N s, "
      f"max drift {np.max(drift[3:]):.2e} N s")

(th_pos, _), (th_neg, _) = res.joint("array_pos"), res.joint("array_neg")
print(f"array drive angles at {T_drive:g} s: {th_pos[res.t <= T_drive][-1, 0]:+.4f}, "
      f"{th_neg[res.t <= T_drive][-1, 0]:+.4f} rad")
tips = res.max_tip_deflection()
print("max array tip deflection: "
      + ", ".join(f"{k} {v * 1e3:.2f} mm" for k, v in tips.items()))
print(f"energy balance error: max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} % "
      f"(drive work at the end {res.work[-1]:.2e} J, peak energy "
      f"{np.max(res.total_energy):.4f} J)")

# %% [markdown]
# The drives do work on the arrays while they accelerate and take it back while they
# brake, so the net work is close to zero, but momentum is exchanged between the hub and
# the arrays all along, and it is the *sum* that is conserved. Momentum and energy are
# conserved to the integration tolerance because the `"full"` body model is derived from
# the exact kinetic energy of the nodal model. The `"ruthless"` model, whose equations
# are not derived from an energy, conserves neither exactly:

# %%
res_r = fd.simulate(sc, u0=u0, t_span=(0.0, t_end), tau=drive, fidelity="ruthless",
                    t_eval=np.linspace(0.0, t_end, 201),
                    integrator=fd.ScipyIVP("DOP853", rtol=tol, atol=tol * 1e-2))
hp_r = res_r.momentum()
drift_r = np.max(np.abs(hp_r[:, :3] - hp_r[0, :3]))
print(f"ruthless: max angular momentum drift {drift_r:.2e} N m s "
      f"({drift_r / np.linalg.norm(hp_r[0, :3]):.1e} relative), "
      f"max |e_E| = {np.max(np.abs(res_r.energy_balance_error)):.2e} %")

# %%
path = plot_path("04_spacecraft_momentum")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot")
    else:
        fig = Figure(figsize=(8, 7), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        ax1.plot(res.t, th_pos[:, 0], label="array_pos drive")
        ax1.plot(res.t, th_neg[:, 0], label="array_neg drive")
        ax1.set_ylabel("drive angle (rad)")
        for c, name in enumerate(("h_x", "h_y", "h_z")):
            ax2.plot(res.t, hp[:, c] - hp[0, c], color=f"C{c}", label=f"{name}, full")
            ax2.plot(res_r.t, hp_r[:, c] - hp_r[0, c], "--", color=f"C{c}",
                     label=f"{name}, ruthless")
        ax2.set_ylabel("h(t) − h(0) (N m s)")
        ax3.plot(res.t, res.energy_balance_error, label="full")
        ax3.plot(res_r.t, res_r.energy_balance_error, "--", label="ruthless")
        ax3.set_ylabel("e_E (%)")
        ax3.set_xlabel("t (s)")
        for ax in (ax1, ax2, ax3):
            ax.legend(loc="best", fontsize="small", ncols=2)
        fig.savefig(path, dpi=110)
        print(f"plot written to {path}")
