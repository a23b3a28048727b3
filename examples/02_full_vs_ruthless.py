# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Full vs ruthless body models
#
# flexdyn has two body models (*fidelities*):
#
# * `"full"` keeps every inertial term of the lumped-mass nodal model: the modal mass
#   matrix, the interbody geometry and the velocity products are evaluated at the actual
#   deformation `η` and rate `η̇`. The equations are Lagrangian and conserve energy.
# * `"ruthless"` is the ruthless linearization of Jain & Rodriguez's Appendix B (Damaren &
#   Sharf's "RL" model): the body matrices and the interbody geometry are taken at `η = 0`
#   and the velocity products keep the hinge rates only. Much of the work can then be
#   precomputed once per model, but the equations no longer conserve energy exactly.
#
# Neither model has *geometric stiffening* (the stiffening of a beam by the axial force a
# rotation puts in it). This matters in the second part: Damaren & Sharf's spin-up beam.
#
# Run it as a script or open it as a notebook with jupytext. `FLEXDYN_EXAMPLE_QUICK=1`
# shortens the runs; `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` saves a figure (needs
# matplotlib).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

import flexdyn as fd
from flexdyn.models import spinup_beam, spinup_profile, spinup_torque

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")
TOL = 1e-5 if QUICK else 1e-8  # relative tolerance of the integrator


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


#: the two models without geometric stiffening compared here (Part 3: the stiffened one)
MODELS = ("full", "ruthless")


def run(model, tau, t_end, fidelity, tol):
    wall = time.perf_counter()
    res = fd.simulate(model, t_span=(0.0, t_end), tau=tau, fidelity=fidelity,
                      t_eval=np.linspace(0.0, t_end, 201), integrator=fd.Auto(rtol=tol,
                      atol=tol * 1e-2))
    return res, time.perf_counter() - wall


# %% [markdown]
# ## Part 1: the arm slew of example 01
#
# The built-in two-link arm, slewed rest to rest by 0.5 rad (shoulder) and −0.5 rad
# (elbow) in 3 s with the rigid-body torque profile of example 01, then left to coast.

# %%
arm = fd.models.two_link_arm()
joints = [int(s) for s in arm.u_start]          # the joints' slots in u (and tau)
delta, T_slew = np.array([0.5, -0.5]), 3.0
M_jj = fd.mass_matrix(arm, arm.neutral_configuration())[np.ix_(joints, joints)]
amplitude = M_jj @ delta / (3.0 / (16.0 * np.pi) * T_slew**2)


def slew(t, q, u):
    out = np.zeros(arm.nu)
    if 0.0 <= t < T_slew:
        x = t / T_slew
        out[joints] = amplitude * np.sin(2 * np.pi * x) * np.sin(np.pi * x) ** 2
    return out


t_arm = T_slew + (0.0 if QUICK else 2.0)
arm_runs = {}
for fidelity in MODELS:
    res, wall = run(arm, slew, t_arm, fidelity, TOL)
    arm_runs[fidelity] = res
    tips = res.max_tip_deflection()
    th = res.q[-1, arm.q_start]
    print(f"arm, {fidelity:>8}: max tip deflection link1 {tips['link1'] * 1e3:6.2f} mm, "
          f"link2 {tips['link2'] * 1e3:5.2f} mm; joint angles at {t_arm:g} s "
          f"({th[0]:+.4f}, {th[1]:+.4f}) rad; max |e_E| "
          f"{np.max(np.abs(res.energy_balance_error)):.2e} % ({wall:.1f} s)")

# %% [markdown]
# The tip deflections agree to a fraction of a millimetre: for this slow maneuver the
# deformation is small and mostly quasi-static. The joint angles differ by a tenth of a
# radian or more. The ruthless model leaves out every term of the order of
# (deformation × rate): the dependence of the modal mass matrices and of the joint
# geometry on `η` (link 2 rides on the deflected, rotated tip of link 1) and the velocity
# products of the modal rates `η̇`. The open-loop torques do not correct anything, so
# these differences accumulate into the final joint angles. They shrink quickly with the
# size of the maneuver: relative to the slew angle, like its square (with
# `delta = np.array([0.05, -0.05])` they are about 0.15 % of it instead of 15 %). The
# energy-balance error, computed for each run with its own model's energy as Damaren &
# Sharf do, is at the integration tolerance for `"full"` and close to one percent for
# `"ruthless"`, whose equations are not those of a conservative system.

# %% [markdown]
# ## Part 2: the spin-up beam (Damaren & Sharf, Sec 4.1)
#
# A uniform beam, 12 kg and 10 m long with EI = 14 004 N m², pinned at one end, is spun up
# in the plane in which it bends by an open-loop hub torque (rigid-beam inverse dynamics
# of the prescribed rate `θ̇(t) = Ω (t/T − sin(2πt/T)/(2π))`, T = 15 s) to Ω = 6 rad/s.
# Here the beam has bending modes only (`n_axial=0`: the paper's axial mode, at about
# 800 rad/s, only makes the integration stiff and slow).

# %%
beam = spinup_beam(n_bending=1 if QUICK else 2, n_axial=0)
body = beam.bodies[0]
m = body.n_modes
omega_b = np.sqrt(scipy.linalg.eigh(body.K, body.M_m0[:m, :m], eigvals_only=True))
T_spin, omega_s = 15.0, 6.0
t_spin = T_spin + (0.0 if QUICK else 5.0)
print(f"spin-up beam: bending frequencies {np.round(omega_b, 3).tolist()} rad/s; "
      f"final rate Ω = {omega_s:g} rad/s reached in T = {T_spin:g} s")
spin_runs = {}
for fidelity in MODELS:
    res, wall = run(beam, spinup_torque(beam, T=T_spin, omega_s=omega_s), t_spin, fidelity,
                    TOL)
    spin_runs[fidelity] = res
    _, rate = res.joint("beam")
    tip = res.deflection("beam")[:, 1]
    print(f"spin-up, {fidelity:>8}: max tip deflection {np.max(np.abs(tip)):6.3f} m, "
          f"hub rate at {t_spin:g} s {rate[-1, 0]:.3f} rad/s (prescribed {omega_s:g}); "
          f"max |e_E| {np.max(np.abs(res.energy_balance_error)):.2e} % ({wall:.1f} s)")

# %% [markdown]
# The ruthless model follows the prescribed spin-up: the beam lags behind the hub by a
# few tens of centimetres while the hub accelerates and straightens out once the rate is
# constant. The full model, with the same torque, bends by almost 9 m and its hub rate
# levels off near the first bending frequency, 3.78 rad/s: this is the result Damaren &
# Sharf report for their *inconsistent* model I, which is what the full model is (all
# inertial nonlinearities, no geometric stiffening).
#
# The full model keeps the centrifugal *softening* of the bending modes: as the beam
# bends, its nodes move sideways, and the centrifugal field pulls them further out.
# For bending in the plane of rotation this lowers the first mode's stiffness from `ω₁²`
# to `ω₁² − Ω²`. What balances it in a real beam is *geometric stiffening*, the
# stiffness added by the axial tension that spinning puts in the beam (about `+1.2 Ω²`
# for the first mode); that is a second-order effect of the deformation, which assumed
# modes of a linear elastic model do not carry. So a beam spun faster than its first
# bending frequency bends without bound in the full model: the torque pumps energy into
# the deflection instead of the spin. The ruthless model drops the velocity products of
# the deformation, and with them the softening; here, where softening and stiffening
# nearly cancel, that happens to give the right answer, but Damaren & Sharf show that the
# ruthless model fails for fast maneuvers of a three-dimensional manipulator. Neither
# model should be used for bodies that spin near or above their first bending frequency.
#
# Below the first bending frequency the two models agree closely:

# %%
for fidelity in MODELS:
    res, _ = run(beam, spinup_torque(beam, T=T_spin, omega_s=2.0), t_spin, fidelity,
                 TOL)
    _, rate = res.joint("beam")
    tip = res.deflection("beam")[:, 1]
    print(f"spin-up to 2 rad/s, {fidelity:>8}: max tip deflection {np.max(np.abs(tip)):.4f} m, "
          f"hub rate at {t_spin:g} s {rate[-1, 0]:.4f} rad/s")

# %% [markdown]
# ## Part 3: with geometric stiffening
#
# The default fidelity, `"exact"` (Damaren & Sharf's EE), adds to the full model the
# elastic force of the nonlinear strain: the strain energy's cubic and quartic parts in the
# modal coordinates, which `beam_modes` computes from the beam's axial stiffness. The
# centrifugal tension stretches the beam through its stretch mode, and the stretch
# stiffens the bending; so the spin-up beam needs its axial mode back (`n_axial=1`, the
# paper's model), at the price of a stiffer integration.

# %%
stiff_beam = spinup_beam(n_bending=1 if QUICK else 2, n_axial=1)
res, wall = run(stiff_beam, spinup_torque(stiff_beam, T=T_spin, omega_s=omega_s), t_spin,
                "exact", 1e-6 if QUICK else TOL)
_, rate = res.joint("beam")
tip = res.deflection("beam")
print(f"spin-up,    exact: max tip deflection {np.max(np.abs(tip[:, 1])):6.3f} m, "
      f"hub rate at {t_spin:g} s {rate[-1, 0]:.3f} rad/s (prescribed {omega_s:g}); "
      f"stretch {tip[-1, 0] * 1e3:.2f} mm; "
      f"max |e_E| {np.max(np.abs(res.energy_balance_error)):.2e} % ({wall:.1f} s)")

# %% [markdown]
# With stiffening the beam follows the prescribed spin-up, bends by decimetres rather
# than metres (as a chain of rigid segments with bending springs does: 0.57 m, the
# geometrically exact answer), and the exact model conserves energy like the full one.
#
# ## Plot (optional)

# %%
path = plot_path("02_full_vs_ruthless")
if path is not None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot")
    else:
        fig = Figure(figsize=(9, 7), layout="constrained")
        axes = fig.subplots(2, 2, sharex="col")
        for fidelity, style in (("full", "-"), ("ruthless", "--")):
            r = arm_runs[fidelity]
            axes[0, 0].plot(r.t, r.deflection("link1")[:, 1] * 1e3, style,
                            label=f"link 1, {fidelity}")
            axes[1, 0].plot(r.t, r.energy_balance_error, style, label=fidelity)
            r = spin_runs[fidelity]
            axes[0, 1].plot(r.t, r.deflection("beam")[:, 1], style, label=fidelity)
            axes[1, 1].plot(r.t, r.joint("beam")[1][:, 0], style, label=fidelity)
        axes[1, 1].plot(r.t, spinup_profile(r.t, T_spin, omega_s)[1], ":", color="0.4",
                        label="prescribed")
        axes[0, 0].set_ylabel("arm: link 1 tip deflection (mm)")
        axes[1, 0].set_ylabel("arm: e_E (%)")
        axes[0, 1].set_ylabel("spin-up: tip deflection (m)")
        axes[1, 1].set_ylabel("spin-up: hub rate (rad/s)")
        for ax in axes.flat:
            ax.legend(loc="best", fontsize="small")
        for ax in axes[1]:
            ax.set_xlabel("t (s)")
        fig.savefig(path, dpi=110)
        print(f"plot written to {path}")
