"""Energy conservation of a free, undamped flexible chain.

A spatial chain of four flexible links (revolute joints about alternating axes, 2–4 bending
modes per link in two planes, each link attached at its parent's tip node and at its own
clamped base node) is integrated for 10 s without gravity, damping or forces.  The ``"full"``
fidelity is energy conserving, so ``T + V`` must stay constant to the integrator's accuracy;
the ``"ruthless"`` linearization is not, and its drift must be far larger.

The modal frequencies are low (the clamped links at 0.4–0.8 rad/s, the assembled chain below
1.5 rad/s) and the initial speeds small, so DOP853 at ``rtol = atol = 1e-10`` needs a few
hundred steps while the links still bend by up to ~0.25 m.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexdyn as fd

T_END = 10.0
#: Range of the clamped-link modal frequencies, rad/s (keeps DOP853 at rtol 1e-10 cheap).
OMEGA = (0.4, 0.8)
#: Initial joint speed scale (rad/s), modal coordinates and modal rates (1/s).
SPEED0 = 0.03
ETA0 = 0.1
ETA_DOT0 = 0.04


def flexible_chain() -> dict:
    """Four flexible links of length 1 along their body x axes (model-file dict)."""
    rng = np.random.default_rng(20240601)
    xi = np.array([0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0])  # node positions along the link

    def shapes(kinds):
        """Π (24 × m): polynomial bending shapes in y and z, zero at node 0 (clamped)."""
        Pi = np.zeros((6 * xi.size, len(kinds)))
        for k, kind in enumerate(kinds):
            for j, x in enumerate(xi):
                w, slope = (x**2, 2 * x) if kind[1] == "2" else (x**3 - x**2, 3 * x**2 - 2 * x)
                if kind[0] == "y":  # displacement along y, rotation about z
                    Pi[6 * j + 4, k], Pi[6 * j + 2, k] = w, slope
                else:  # displacement along z, rotation about −y
                    Pi[6 * j + 5, k], Pi[6 * j + 1, k] = w, -slope
        return Pi

    modes = [["y2", "z2"], ["y2", "z2", "y3"], ["y2", "z2", "y3", "z3"], ["y2", "y3"]]
    axes = [[0, 0, 1], [0, 1, 0], [0, 0, 1], [0, 0.6, 0.8]]
    child_nodes = [0, 0, 0, 0]
    node_masses = np.full(xi.size, 0.3)
    node_inertia = np.diag([2e-3, 1e-3, 1e-3])
    bodies = []
    for k in range(4):
        m = len(modes[k])
        Pi = shapes(modes[k]).reshape(xi.size, 6, m)
        # clamped-link modal mass, and a stiffness giving frequencies of OMEGA rad/s
        M_eta = sum(
            node_masses[j] * Pi[j, 3:].T @ Pi[j, 3:] + Pi[j, :3].T @ node_inertia @ Pi[j, :3]
            for j in range(xi.size)
        )
        L = np.linalg.cholesky(M_eta)
        Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
        K = L @ Q @ np.diag(rng.uniform(*OMEGA, size=m) ** 2) @ Q.T @ L.T
        if k == 0:  # the base link carries the others: stiffer
            K *= 4.0
        joint = {
            "type": "revolute",
            "axis": axes[k],
            "parent_node": None if k == 0 else 3,
            "child_node": child_nodes[k],
        }
        if k == 3:
            c, s = np.cos(0.4), np.sin(0.4)
            joint["placement"] = {
                "translation": [0.05, 0.0, 0.0],
                "rotation": [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]],
            }
        bodies.append(
            {
                "name": f"link{k + 1}",
                "parent": None if k == 0 else f"link{k}",
                "joint": joint,
                "rigid": {
                    "mass": 0.5,
                    "com": [0.5, 0.0, 0.0],
                    "inertia": [[0.002, 0.0, 0.0], [0.0, 0.042, 0.0], [0.0, 0.0, 0.042]],
                },
                "flex": {
                    "nodes": [[x, 0.0, 0.0] for x in xi],
                    "node_masses": node_masses.tolist(),
                    "node_inertias": [node_inertia.tolist()] * xi.size,
                    "modes": Pi.reshape(6 * xi.size, m).tolist(),
                    "stiffness": (0.5 * (K + K.T)).tolist(),
                },
            }
        )
    return {"name": "flexible chain", "gravity": [0.0, 0.0, 0.0], "bodies": bodies}


def initial_state(model: fd.Model) -> np.ndarray:
    q = np.zeros(model.nq)
    u = np.zeros(model.nu)
    for i in range(model.n_bodies):
        qs, us = model.q_slice(i), model.u_slice(i)
        q[qs] = [0.3 * (-1) ** i] + [ETA0] * int(model.n_modes[i])
        u[us] = [SPEED0 * (1.0 - 0.4 * i)] + [ETA_DOT0 * (-1) ** i] * int(model.n_modes[i])
    return np.concatenate([q, u])


def simulate(model: fd.Model, fidelity: str) -> tuple[np.ndarray, np.ndarray, object]:
    """Integrate 10 s; return times, total energies and the solver result."""
    nq = model.nq

    def rhs(t, y):
        q, u = y[:nq], y[nq:]
        udot = fd.forward_dynamics(model, q, u, method="composite", fidelity=fidelity)
        return np.concatenate([model.qdot(q, u), udot])

    sol = solve_ivp(
        rhs,
        (0.0, T_END),
        initial_state(model),
        method="DOP853",
        rtol=1e-10,
        atol=1e-10,
        t_eval=np.linspace(0.0, T_END, 101),
    )
    E = np.array(
        [fd.total_energy(model, y[:nq], y[nq:], fidelity) for y in sol.y.T]
    )
    return sol.t, E, sol


def test_model_is_a_moving_flexible_chain():
    model = fd.Model.from_dict(flexible_chain())
    assert model.n_bodies == 4
    assert model.n_modes.tolist() == [2, 3, 4, 2]
    y0 = initial_state(model)
    q0, u0 = y0[:model.nq], y0[model.nq:]
    T = fd.kinetic_energy(model, q0, u0)
    V = fd.potential_energy(model, q0)
    assert T > 0.01 and V > 0.001  # both kinds of energy take part


def test_full_fidelity_conserves_energy():
    model = fd.Model.from_dict(flexible_chain())
    start = time.perf_counter()
    t, E, sol = simulate(model, "full")
    elapsed = time.perf_counter() - start
    assert sol.success, sol.message
    drift = np.max(np.abs(E - E[0])) / abs(E[0])
    print(f"full: E0 = {E[0]:.6f} J, max relative drift {drift:.3e} over {t[-1]:.0f} s, "
          f"{sol.nfev} evaluations, {elapsed:.1f} s")
    assert drift < 1e-7
    # the motion is not trivial: the modes take up and give back energy
    nq = model.nq
    V = np.array([fd.potential_energy(model, y[:nq]) for y in sol.y.T])
    assert np.ptp(V) > 1e-3 * E[0]


@pytest.mark.slow
def test_ruthless_fidelity_energy_drift():
    """The energy check above can tell a conservative model from a non-conservative one.

    The ``"ruthless"`` linearization drops the deformation dependence of the inertia (and of
    the velocity products), so it does not conserve its own energy ``T + V``: on the same
    run, with the same integrator settings, its drift must be orders of magnitude above the
    full model's (which is at the integrator's ~1e-9 level), and clearly above round-off.
    A ruthless model that happened to conserve energy would mean the fidelities are not
    different models, or that the energy monitor is blind to the modal coupling.
    """
    model = fd.Model.from_dict(flexible_chain())
    drifts = {}
    for fidelity in ("full", "ruthless"):
        _, E, sol = simulate(model, fidelity)
        assert sol.success, f"{fidelity}: {sol.message}"
        assert np.all(np.isfinite(E)), fidelity
        drifts[fidelity] = np.max(np.abs(E - E[0])) / abs(E[0])
    assert drifts["full"] < 1e-7, drifts
    assert drifts["ruthless"] > 1e-3, drifts
    assert drifts["ruthless"] > 1e3 * drifts["full"], drifts
