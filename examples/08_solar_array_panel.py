# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A spacecraft with a solar-array panel from a finite-element model
#
# A solar-array panel comes out of a finite-element tool as node coordinates and mass and
# stiffness matrices. `examples/solar_array.npz` is such a model (written by
# `examples/make_solar_array.py`): a 2 m × 1 m grid of aluminium tubes, 45 nodes, 270
# degrees of freedom, with the consistent (coupled) mass matrix of its frame elements.
# The script reads it, reduces it to a flexible body by its cantilever modes, fixes it to a
# free-flying spacecraft bus, checks the spacecraft's frequencies against the full
# finite-element model, and slews the spacecraft with a bang-bang torque: the panel's tip
# motion and the loads at its root come out of the simulation.
#
# Run it as a script (`python examples/08_solar_array_panel.py`) or open it as a notebook
# with jupytext. Options:
#
# * `FLEXDYN_EXAMPLE_QUICK=1` — fewer modes, a shorter run;
# * `--plot PATH` or `FLEXDYN_EXAMPLE_PLOT=DIR` — save a figure (needs matplotlib).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

import flexdyn as fd

QUICK = os.environ.get("FLEXDYN_EXAMPLE_QUICK", "") not in ("", "0")


def plot_path(stem: str) -> Path | None:
    """Where to save the figure: ``--plot PATH`` or ``$FLEXDYN_EXAMPLE_PLOT/<stem>.png``."""
    if "--plot" in sys.argv[1:-1]:
        return Path(sys.argv[sys.argv.index("--plot") + 1])
    folder = os.environ.get("FLEXDYN_EXAMPLE_PLOT")
    return Path(folder) / f"{stem}.png" if folder else None


HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path("examples")

# %% [markdown]
# ## The component and its reduction
#
# `fd.fe.load_component` reads the file; `info()` reports what the mass matrix gives as a
# rigid body. The panel is fixed to the bus at node 2, the middle of its root edge (the
# origin of its frame); `reduce` keeps the lowest normal modes of the panel clamped there.
# Its mass matrix is consistent, so the body carries the inertia invariants of its kinetic
# energy (`inertia_invariants_0/1/2`) instead of node masses.

# %%
panel = fd.fe.load_component(HERE / "solar_array.npz")
print(panel.info())
ATTACH, TIP = 2, panel.n_nodes - 1  # the root middle node; a tip corner
n_modes = 6 if QUICK else 12
flex = panel.reduce(ATTACH, n_modes=n_modes, method="cantilever")
print(f"reduced to {n_modes} cantilever modes, invariants "
      + ", ".join(f"{k[-1]}: {np.shape(flex[k])}" for k in flex if k.startswith("inertia")))

BUS_MASS, BUS_INERTIA, FACE = 300.0, np.diag([60.0, 50.0, 70.0]), 0.6  # kg, kg m², m
sc = (fd.ModelBuilder("spacecraft", gravity=(0, 0, 0))
      .add_body("bus", joint={"type": "free"}, rigid={"mass": BUS_MASS, "inertia": BUS_INERTIA})
      .add_body("panel", "bus", flex=flex,
                joint={"type": "fixed", "child_node": ATTACH,
                       "placement": {"translation": [FACE, 0.0, 0.0]}})
      .build())
print(sc)

# %% [markdown]
# ## Frequencies against the full finite-element model
#
# The full model of the spacecraft: the bus's six rigid motions and every panel node but the
# attach node, which moves with the bus (`t = v + ω × r`, `r = ω`). Its eigenvalues are
# what the reduced model should approach from above as modes are added.

# %%
order = np.r_[3, 4, 5, 0, 1, 2]  # the bus's [v; ω] as flexdyn's [ω; v]
n_dof = panel.n_dof
T = np.zeros((n_dof, 6 + n_dof - 6))
r = np.array([FACE, 0.0, 0.0])
T[6 * ATTACH:6 * ATTACH + 3, :3] = np.eye(3)
T[6 * ATTACH:6 * ATTACH + 3, 3:6] = -np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]],
                                                [-r[1], r[0], 0]])
T[6 * ATTACH + 3:6 * ATTACH + 6, 3:6] = np.eye(3)
others = np.setdiff1d(np.arange(n_dof), np.arange(6 * ATTACH, 6 * ATTACH + 6))
T[others, 6 + np.arange(others.size)] = 1.0
M_full, K_full = T.T @ panel.mass @ T, T.T @ panel.stiffness @ T
M_full[:3, :3] += BUS_MASS * np.eye(3)
M_full[3:6, 3:6] += BUS_INERTIA
full = np.sqrt(np.abs(scipy.linalg.eigh(K_full, M_full, eigvals_only=True,
                                        subset_by_index=[0, 11]))) / (2 * np.pi)
modes = fd.modal_analysis(sc)
reduced = modes.frequencies[~modes.rigid]
k = min(6, reduced.size)
print(f"free-flying spacecraft: {int(modes.rigid.sum())} rigid-body modes")
print("elastic frequencies (Hz), reduced: " + ", ".join(f"{f:.3f}" for f in reduced[:k]))
print("elastic frequencies (Hz), full FE: " + ", ".join(f"{f:.3f}" for f in full[6:6 + k]))
print(f"largest difference: {np.max(reduced[:k] / full[6:6 + k] - 1) * 100:.1e} %")

# %% [markdown]
# ## A slew about the bus's y axis
#
# A bang-bang torque of 20 N m about the bus's y axis for 4 s (2 s accelerating, 2 s
# braking) turns the spacecraft by about 60° and bends the panel out of its plane; it keeps
# vibrating after the slew. `simulate`'s automatic choice is the compiled Radau IIA, which
# takes the free joint's rotation and displacement in local coordinates.
# `result.node_motion("panel")` gives every node's elastic rotation and displacement in the
# panel's frame (the finite-element displacement vector, node by node), and
# `result.joint_wrenches()` the loads the bus puts on the panel at its
# root (the fixed joint's reaction, in the joint frame).

# %%
TORQUE, T_SLEW = 20.0, 4.0
t_end = 6.0 if QUICK else 10.0
layout = fd.state_layout(sc)
wy = next(e.index for e in layout["u"] if e.name == "bus.wy")


@fd.of_time
def tau(t: float) -> np.ndarray:
    out = np.zeros(sc.nu)
    out[wy] = TORQUE * (1.0 if t < T_SLEW / 2 else -1.0 if t < T_SLEW else 0.0)
    return out


start = time.perf_counter()
res = fd.simulate(sc, sc.neutral_configuration(), np.zeros(sc.nu), (0.0, t_end), tau=tau,
                  t_eval=np.linspace(0.0, t_end, int(50 * t_end) + 1))
wall = time.perf_counter() - start
print(f"simulated {t_end:g} s in {wall:.1f} s with {res.settings['integrator']} "
      f"({res.nfev} rhs evaluations)")
angle = np.degrees(2 * np.arcsin(np.linalg.norm(res.q[-1, 1:4])))
print(f"slew angle {angle:.2f} deg")

motion = res.node_motion("panel")  # (nt, n, 6): [rx, ry, rz, tx, ty, tz] per node
tip = motion[:, TIP, 5]
during, after = res.t <= T_SLEW, res.t > T_SLEW
print(f"panel tip deflection (out of plane): peak {1e3 * np.max(np.abs(tip[during])):.2f} mm "
      f"during the slew, {1e3 * np.max(np.abs(tip[after])):.2f} mm after it")
root = res.joint_wrenches()[:, sc.body_index("panel")]  # [moment; force] at the root
print(f"root loads: bending moment about y peak {np.max(np.abs(root[:, 1])):.2f} N m, "
      f"shear along z peak {np.max(np.abs(root[:, 5])):.2f} N")
print(f"energy balance error: max |e_E| = {np.max(np.abs(res.energy_balance_error)):.2e} %")

# %% [markdown]
# The same slew with the panel rigid (`n_modes=0`: its consistent mass as a rigid body)
# gives the root moment that the panel's inertia alone asks for; the flexible panel's peak
# is larger, because each switch of the torque sets it swinging at its first frequency.

# %%
rigid_sc = (fd.ModelBuilder("rigid spacecraft", gravity=(0, 0, 0))
            .add_body("bus", joint={"type": "free"},
                      rigid={"mass": BUS_MASS, "inertia": BUS_INERTIA})
            .add_body("panel", "bus", flex=panel.reduce(ATTACH, n_modes=0, method="cantilever"),
                      joint={"type": "fixed", "child_node": ATTACH,
                             "placement": {"translation": [FACE, 0.0, 0.0]}})
            .build())
res_rigid = fd.simulate(rigid_sc, rigid_sc.neutral_configuration(), np.zeros(rigid_sc.nu),
                        (0.0, t_end), tau=fd.of_time(lambda t: tau(t)[:rigid_sc.nu]),
                        t_eval=res.t)
root_rigid = res_rigid.joint_wrenches()[:, 1]
print(f"rigid panel: root moment about y peak {np.max(np.abs(root_rigid[:, 1])):.2f} N m; "
      f"the flexible panel's is {np.max(np.abs(root[:, 1])) / np.max(np.abs(root_rigid[:, 1])):.2f}"
      " times it")

# %%
path = plot_path("08_solar_array_panel")
if path is not None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    ax1.plot(res.t, 1e3 * tip)
    ax1.set_ylabel("tip deflection (mm)")
    ax2.plot(res.t, root[:, 1], label="bending moment about y (N m)")
    ax2.plot(res.t, root_rigid[:, 1], "--", label="the same, rigid panel")
    ax2.plot(res.t, root[:, 5], label="shear along z (N)")
    ax2.set_xlabel("t (s)")
    ax2.legend()
    for ax in (ax1, ax2):
        ax.axvline(T_SLEW, color="0.7", lw=0.8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")
