# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A UR5 with a flexible forearm, from its URDF
#
# A UR5-like arm comes in from a URDF file (`fd.load_urdf`, docs/urdf.md): the one of the
# `example-robot-data` package when it is installed, else `examples/ur5.urdf`. Its forearm
# is then replaced by a slender aluminium tube — a flexible beam from the elbow to the
# wrist with two bending modes — and both arms follow the same joint trajectory exactly
# (computed torque with ideal servo loops). The script reports the tube's modes, the joint
# torques of both arms and how far the tool tip of the flexible arm strays from the rigid
# arm's.
#
# Run it as a script (`python examples/07_flexible_urdf_arm.py [--plot FILE]
# [--animate FILE.gif]`) or open it as a notebook with jupytext.
# `FLEXDYN_EXAMPLE_QUICK=1`: a shorter motion.

# %%
import argparse
import importlib.metadata
import os
import time
from pathlib import Path

import numpy as np

import flexdyn as fd
from flexdyn.beam import ALUMINIUM, tube

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def ur5_urdf() -> Path:
    """example-robot-data's UR5 when installed, else the copy beside this script."""
    try:
        for f in importlib.metadata.files("example-robot-data") or []:
            if f.name == "ur5_robot.urdf":
                return Path(f.locate())
    except importlib.metadata.PackageNotFoundError:
        pass
    return Path(__file__).resolve().parent / "ur5.urdf"


# %% [markdown]
# The forearm becomes a tube of 30 mm diameter and 1 mm wall, from the elbow (the link
# origin) to the wrist joint (the link's only child joint, so `end` need not be given).
# `keep_inertia=False`: the tube replaces the forearm's mass too. The rigid arm the
# controller is designed on has the same mass: the flexible model with its modes removed
# (the tube's nodes as point masses).

# %%
path = ur5_urdf()
TUBE = tube(0.015, 0.001)
arm = fd.load_urdf(path, flexible={"forearm_link": {
    "material": ALUMINIUM, "section": TUBE, "n_elements": 8, "n_modes": 2,
    "damping_ratio": 0.02, "keep_inertia": False}})
spec = arm.to_dict()
forearm = next(b for b in spec["bodies"] if b["name"] == "forearm_link")
for key in ("modes", "stiffness", "damping"):
    forearm["flex"].pop(key)
rigid = fd.Model.from_dict(spec)
fa = arm.index("forearm_link")
print(f"{arm} from {path.name}")
print(f"forearm tube: {float(np.sum(arm.bodies[fa].node_masses)):.3f} kg, cantilever modes "
      f"{np.round(np.sqrt(np.diag(arm.bodies[fa].K)) / (2 * np.pi), 1)} Hz")

# %% [markdown]
# The plan: a quintic joint-space move of the shoulder and elbow in `T` seconds, then a
# hold. Each arm follows it exactly — the limit of computed-torque control with stiff
# servo loops — by hybrid dynamics (`simulate(..., prescribed=...)`): the joints move as
# planned, the tube's modes respond, and the result's `tau` holds the joint torques that
# realise the motion. The rigid arm's computed torques are its inverse dynamics along the
# plan.

# %%
T, HOLD = (0.6, 0.2) if QUICK else (1.5, 0.5)
q_start = np.array([0.0, -1.2, 1.0, -1.4, -1.57, 0.0])
q_goal = np.array([1.2, -0.5, 0.3, -1.4, -1.57, 0.0])


def plan(t: float):
    s = min(max(t / T, 0.0), 1.0)
    pos = 10 * s**3 - 15 * s**4 + 6 * s**5
    vel = (30 * s**2 - 60 * s**3 + 30 * s**4) / T if 0.0 < t < T else 0.0
    acc = (60 * s - 180 * s**2 + 120 * s**3) / T**2 if 0.0 < t < T else 0.0
    d = q_goal - q_start
    return q_start + pos * d, vel * d, acc * d


moving = [i for i in range(arm.n_bodies) if arm.nu_joint[i]]
prescribed = {arm.names[i]: (lambda t, k=k: tuple(x[k] for x in plan(t)))
              for k, i in enumerate(moving)}
# start at rest with the tube sagging under gravity: K η = −b_η(q, η = 0) (linear statics)
q0 = np.zeros(arm.nq)
q0[[int(arm.q_start[i]) for i in moving]] = q_start
modal = np.arange(int(arm.u_start[fa]) + 1, int(arm.u_start[fa]) + 1 + int(arm.n_modes[fa]))
q0[modal] = -np.linalg.solve(arm.bodies[fa].K, fd.bias_forces(arm, q0, np.zeros(arm.nu))[modal])
t_eval = np.linspace(0.0, T + HOLD, 401)
wall = time.perf_counter()
res = fd.simulate(arm, q0, np.zeros(arm.nu), (0.0, T + HOLD), prescribed=prescribed,
                  t_eval=t_eval, integrator=fd.Auto(rtol=1e-8, atol=1e-10))
print(f"simulated {T + HOLD:g} s with prescribed joints in {time.perf_counter() - wall:.1f} s "
      f"({res.nfev} rhs evaluations)")
joints = np.array([int(arm.u_start[i]) for i in moving])
q_plan = np.array([plan(t)[0] for t in t_eval])
tau_rigid = np.array([fd.inverse_dynamics(rigid, *plan(t)) for t in t_eval])
print(f"computed torque: elbow peak {np.max(np.abs(res.tau[:, joints[2]])):.2f} N m with the "
      f"flexible forearm, {np.max(np.abs(tau_rigid[:, 2])):.2f} N m for the rigid arm; "
      f"largest difference {np.max(np.abs(res.tau[:, joints] - tau_rigid)):.2f} N m")

# %% [markdown]
# The tool tip is 82.3 mm along the y axis of the last link (`wrist_3_link`); its
# inertial position comes from `fd.frame_pose`. Both arms' joints are where the plan puts
# them, so the difference is what the tube's bending does to the tip.

# %%
FLANGE = np.array([0.0, 0.0823, 0.0])


def tip(model: fd.Model, q: np.ndarray) -> np.ndarray:
    R, p = fd.frame_pose(model, q, "wrist_3_link")
    return p + R @ FLANGE


deviation = np.linalg.norm(tip(arm, res.q) - tip(rigid, q_plan), axis=1) * 1e3
print(f"tip deviation from the rigid arm: {deviation[0]:.2f} mm static sag at the start, peak "
      f"{np.max(deviation[t_eval <= T]):.2f} mm during the move, "
      f"{np.max(deviation[t_eval > T]):.2f} mm during the hold")
bend = res.deflection("forearm_link", -1)
print(f"forearm tube tip deflection: peak {np.max(np.linalg.norm(bend, axis=1)) * 1e3:.2f} mm")
print(f"energy balance error: max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} %")

# %%
parser = argparse.ArgumentParser()
parser.add_argument("--plot", metavar="FILE", help="plot the tip deviation to FILE")
parser.add_argument("--animate", metavar="FILE.gif", help="animate the flexible arm")
args, _ = parser.parse_known_args()
if args.plot:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(t_eval, deviation)
    ax.axvline(T, color="0.6", lw=0.8)
    ax.set(xlabel="t (s)", ylabel="tip deviation (mm)",
           title="UR5 with a flexible forearm vs the rigid arm")
    fig.tight_layout()
    fig.savefig(args.plot)
    print(f"plot written to {args.plot}")
if args.animate:
    from flexdyn.animation import animate

    print(f"animation written to {animate(res, args.animate, exaggerate=20.0)}")
