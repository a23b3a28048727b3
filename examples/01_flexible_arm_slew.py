# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A flexible two-link arm slewing under a smooth torque
#
# This example builds a planar two-link manipulator whose links are flexible beams,
# starting from beam properties (length, mass per length, bending stiffness), and slews it
# rest to rest with an open-loop torque profile. It reports how far the link tips deflect,
# where the payload ends up compared with a rigid arm, and how well the simulation
# balances energy (the energy-balance error of Damaren & Sharf, which should be tiny for
# the energy-conserving `"full"` body model).
#
# Run it as a script (`python examples/01_flexible_arm_slew.py`) or open it as a notebook
# with jupytext. Options:
#
# * `FLEXDYN_EXAMPLE_QUICK=1` — fewer modes, looser tolerances, shorter coast phase;
# * `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` — save a figure (needs matplotlib).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

import flexdyn as fd
from flexdyn.beam import beam_modes

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


# %% [markdown]
# ## The links, from beam properties
#
# `beam_modes` discretises a straight uniform beam along its body x-axis into lumped-mass
# Euler–Bernoulli elements and returns the nodes, node masses and inertias, the
# mass-normalised cantilever modes and the modal stiffness. Passing only `EI_z` keeps the
# bending in the x-y plane, the plane in which the arm moves.

# %%
n_modes = 1 if QUICK else 2
link1 = beam_modes(2.0, 2.0, EI_z=300.0, n_elements=6, n_modes=n_modes)  # L (m), kg/m, N m²
link2 = beam_modes(1.6, 1.5, EI_z=150.0, n_elements=6, n_modes=n_modes)
for name, beam in (("link1", link1), ("link2", link2)):
    freqs = ", ".join(f"{f:.3f}" for f in beam.frequencies / (2 * np.pi))
    print(f"{name}: {beam.n_nodes} nodes, {beam.total_mass:.2f} kg, "
          f"bare-beam cantilever frequencies {freqs} Hz")

# %% [markdown]
# ## The model
#
# `ModelBuilder` takes one body at a time, with the keys of the model file: the joint, an
# optional rigid part and the flexible part (`BeamModes.to_flex_dict()`). The shoulder
# carries a rigid hub, the elbow a motor (both thin disks about z), and the payload is a
# point mass added to the last node of link 2, so it moves with the deformed tip. Link 2
# is jointed to the last node of link 1 (`parent_node`), so the elbow follows the tip's
# deflection and slope.

# %%
def disk(mass: float, izz: float) -> dict:
    return {"mass": mass, "com": [0.0, 0.0, 0.0],
            "inertia": [[izz / 2, 0.0, 0.0], [0.0, izz / 2, 0.0], [0.0, 0.0, izz]]}


payload_mass = 1.0
flex2 = link2.to_flex_dict()
flex2["node_masses"][-1] += payload_mass

model = (
    fd.ModelBuilder("two-link flexible arm")
    .add_body("link1", None, joint={"type": "revolute", "axis": [0, 0, 1]},
              rigid=disk(2.0, 0.1), flex=link1.to_flex_dict())
    .add_body("link2", "link1",
              joint={"type": "revolute", "axis": [0, 0, 1], "parent_node": link1.n_nodes - 1},
              rigid=disk(1.0, 0.01), flex=flex2)
    .build()
)
print(model)
print("u =", [e.name for e in fd.state_layout(model)["u"]])

# The built-in arm is this model (its defaults are the numbers above):
M0 = fd.mass_matrix(model, model.neutral_configuration())
M_builtin = fd.mass_matrix(fd.models.two_link_arm(n_modes=n_modes),
                           model.neutral_configuration())
print("same mass matrix as fd.models.two_link_arm:", bool(np.allclose(M0, M_builtin)))

# Cantilever frequencies of the links as built (hub, motor and payload included): the
# modal block M_ff of each body's undeformed modal mass matrix against its stiffness K.
for body in model.bodies:
    m = body.n_modes
    lam = scipy.linalg.eigh(body.K, body.M_m0[:m, :m], eigvals_only=True)
    freqs = ", ".join(f"{f:.3f}" for f in np.sqrt(lam) / (2 * np.pi))
    print(f"{body.name} in the model: cantilever frequencies {freqs} Hz")

# %% [markdown]
# ## A smooth rest-to-rest torque profile
#
# Each joint should turn by `Δθ` in `T` seconds with the acceleration shape
# `s(x) = sin(2πx) sin²(πx)`, `x = t/T`: zero rate and acceleration at both ends and a
# smooth start, which excites the flexible modes less than a bang-bang profile. For the
# rigid arm the torque is `τ = M_jj θ̈`, with `M_jj` the joints' block of the mass
# matrix at the start; since `∫₀¹∫₀ˣ s = 3/(16π)`, `θ̈(t) = Δθ s(t/T) / (3T²/(16π))`.
# Velocity products and the flexibility are left out, so the arm does not stop exactly
# on target: that is the point of simulating it.

# %%
joints = [int(model.u_start[i]) for i in range(model.n_bodies)]  # u-slots of the joints
delta = np.array([0.5, -0.5])                                   # shoulder, elbow (rad)
T_slew = 3.0
t_end = T_slew + (0.5 if QUICK else 3.0)
M_jj = M0[np.ix_(joints, joints)]
amplitude = M_jj @ delta / (3.0 / (16.0 * np.pi) * T_slew**2)


def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = np.zeros(model.nu)
    if 0.0 <= t < T_slew:
        x = t / T_slew
        out[joints] = amplitude * np.sin(2 * np.pi * x) * np.sin(np.pi * x) ** 2
    return out


peak = np.max(np.abs([tau(t, None, None)[joints] for t in np.linspace(0, T_slew, 301)]),
              axis=0)
print(f"peak torques: shoulder {peak[0]:.3f} N m, elbow {peak[1]:.3f} N m")

# %% [markdown]
# ## Simulate
#
# `fd.simulate` integrates the equations of motion with the articulated-body O(N) forward
# dynamics and, alongside the state, the work done by `τ`; `t_eval` gives a uniform grid
# of output samples.

# %%
tol = 1e-6 if QUICK else 1e-8
wall = time.perf_counter()
res = fd.simulate(model, t_span=(0.0, t_end), tau=tau,
                  t_eval=np.linspace(0.0, t_end, 301), integrator=fd.Auto(rtol=tol,
                  atol=tol * 1e-2))
print(f"simulated {t_end:g} s in {time.perf_counter() - wall:.1f} s "
      f"({res.nfev} right-hand-side evaluations)")

# %% [markdown]
# ## Results
#
# `deflection(body)` is the elastic displacement `Π_t η` of a node (default: the last)
# in its body frame, so its y-component is the bending deflection. `tip_position` is the
# inertial position of the deformed node.

# %%
theta1, _ = res.joint("link1")
theta2, _ = res.joint("link2")
defl1 = res.deflection("link1")[:, 1]
defl2 = res.deflection("link2")[:, 1]
k1, k2 = np.argmax(np.abs(defl1)), np.argmax(np.abs(defl2))
print(f"max tip deflection: link1 {abs(defl1[k1]) * 1e3:.1f} mm at t = {res.t[k1]:.2f} s, "
      f"link2 {abs(defl2[k2]) * 1e3:.1f} mm at t = {res.t[k2]:.2f} s")
coast = res.t >= T_slew
print(f"residual vibration after the slew: link1 {np.max(np.abs(defl1[coast])) * 1e3:.3f} mm, "
      f"link2 {np.max(np.abs(defl2[coast])) * 1e3:.3f} mm")
print(f"joint angles at t = {T_slew:g} s: shoulder {theta1[coast][0, 0]:+.4f} rad, "
      f"elbow {theta2[coast][0, 0]:+.4f} rad (target {delta[0]:+.1f}, {delta[1]:+.1f})")

# payload: deformed tip of link 2 vs the tip of a rigid arm at the target angles
tip = res.tip_position("link2")[np.argmax(coast)]
a1, a2 = delta[0], delta[0] + delta[1]
rigid_tip = np.array([2.0 * np.cos(a1) + 1.6 * np.cos(a2), 2.0 * np.sin(a1) + 1.6 * np.sin(a2)])
print(f"payload at t = {T_slew:g} s: ({tip[0]:.4f}, {tip[1]:.4f}) m, "
      f"{np.linalg.norm(tip[:2] - rigid_tip) * 1e3:.1f} mm from the rigid-arm target")

e = res.energy_balance_error
print(f"energy balance error: max |e_E| = {np.max(np.abs(e)):.2e} %, "
      f"RMS {res.energy_balance_rms:.2e} % (peak energy {np.max(res.total_energy):.3f} J)")

# %% [markdown]
# The energy-balance error compares the change of the total energy `E = T + V` with the
# work of the joint torques, in percent of the peak energy. The `"full"` body model
# conserves energy exactly, so what remains is the integration error: it shrinks with the
# tolerances.
#
# ## Plot (optional)

# %%
path = plot_path("01_flexible_arm_slew")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot")
    else:
        fig = Figure(figsize=(8, 7), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        ax1.plot(res.t, theta1[:, 0], label="shoulder θ1")
        ax1.plot(res.t, theta2[:, 0], label="elbow θ2")
        ax1.set_ylabel("joint angle (rad)")
        ax2.plot(res.t, defl1 * 1e3, label="link 1 tip")
        ax2.plot(res.t, defl2 * 1e3, label="link 2 tip")
        ax2.set_ylabel("bending deflection (mm)")
        ax3.plot(res.t, e, color="k")
        ax3.set_ylabel("e_E (%)")
        ax3.set_xlabel("t (s)")
        for ax in (ax1, ax2):
            ax.axvline(T_slew, color="0.6", lw=0.8)
            ax.legend(loc="best")
        fig.savefig(path, dpi=110)
        print(f"plot written to {path}")
