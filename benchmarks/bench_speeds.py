"""What Banerjee & Lemak's generalized speeds buy in flexdyn (``docs/generalized-speeds.md``).

For each choice of :data:`flexdyn.speeds.SPEEDS` on three models — (0) one free body whose
D'Eleuterio–Barfoot mass matrix is exactly constant, (1) one free flexible beam tumbling,
(2) a revolute flexible link carrying a payload on a Hooke (universal) joint at its tip — it
prints

* the time per forward-dynamics call in the speeds ``v`` (``flexdyn.speeds.forward_dynamics``,
  compiled engine for ``u̇``, numpy for ``W``) and of flexdyn's own call;
* the condition number of the mass matrix ``M_v`` over a run (min / max of 2-norm
  condition numbers at 21 sampled states of a reference trajectory) and how much ``M_v``
  varies over the run (max-norm, relative);
* ``solve_ivp`` steps, right-hand-side evaluations (Radau: and Jacobians) for DOP853 and
  Radau at the same tolerances, with the error of ``q(t1)`` against a tight reference.

Run ``python benchmarks/bench_speeds.py`` (``--quick``: short horizon, few repeats; used by
the test suite).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

import flexdyn as fd
from flexdyn import speeds as sp
from flexdyn.beam import beam_modes

__all__ = ["exact_body", "free_beam", "hooke_chain", "main"]


def exact_body(n_nodes: int = 5, n_shapes: int = 2, seed: int = 0) -> fd.Model:
    """One free flexible body for which the D'Eleuterio–Barfoot mass matrix is constant:
    point-mass nodes (no rotary inertia) and modes ``R³ ⊗ U`` (each of ``n_shapes`` random
    scalar node shapes along x, y and z; random elastic rotations ``Π_r``), free joint."""
    rng = np.random.default_rng(seed)
    nodes = rng.uniform(-1.0, 1.0, (n_nodes, 3))
    U = rng.normal(size=(n_nodes, n_shapes)) * 0.3
    m = 3 * n_shapes
    Pi = np.zeros((n_nodes, 6, m))
    for k in range(3):
        Pi[:, 3 + k, k * n_shapes:(k + 1) * n_shapes] = U
    Pi[:, :3, :] = rng.normal(size=(n_nodes, 3, m)) * 0.2
    A = rng.normal(size=(m, m))
    flex = {"nodes": nodes, "node_masses": rng.uniform(0.5, 2.0, n_nodes),
            "modes": Pi.reshape(6 * n_nodes, m), "stiffness": A @ A.T + m * np.eye(m)}
    return (fd.ModelBuilder("exact_body", gravity=(0.0, 0.0, 0.0))
            .add_body("body", None, joint={"type": "free"},
                      rigid={"mass": 3.0, "com": [0.1, 0.0, 0.0],
                             "inertia": np.diag([0.4, 0.5, 0.6])},
                      flex=flex).build())


def _beam(n_modes: int) -> dict:
    return beam_modes(2.0, 2.0, EI_y=60.0, EI_z=120.0, GJ=40.0, polar_inertia_per_length=0.01,
                      n_elements=6, n_modes=n_modes).to_flex_dict()


def free_beam(n_modes: int = 4) -> fd.Model:
    """Model (1): a 2 m, 4 kg flexible beam (cantilever modes, bending both ways and torsion)
    on a rigid 10 kg hub, one ``free`` body in zero gravity."""
    return (fd.ModelBuilder("free_beam", gravity=(0.0, 0.0, 0.0))
            .add_body("beam", None, joint={"type": "free"},
                      rigid={"mass": 10.0, "com": [0.0, 0.0, 0.0],
                             "inertia": np.diag([0.3, 0.4, 0.5])},
                      flex=_beam(n_modes)).build())


def hooke_chain(n_modes: int = 4, flexible_payload: bool = False) -> fd.Model:
    """Model (2): the same beam on a revolute joint (axis z) carrying a 3 kg payload on a
    universal joint (axes z, then y: perpendicular) at its tip node; zero gravity.  With
    ``flexible_payload`` the payload is a second such beam hanging on its own node 3 (so its
    joint frame moves with its modes)."""
    flex = _beam(n_modes)
    tip = len(flex["nodes"]) - 1
    joint = {"type": "universal", "axes": [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]],
             "parent_node": tip}
    if flexible_payload:
        joint["child_node"] = 3
    return (fd.ModelBuilder("hooke_chain", gravity=(0.0, 0.0, 0.0))
            .add_body("link", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                      rigid={"mass": 2.0, "com": [0.0, 0.0, 0.0],
                             "inertia": np.diag([0.01, 0.01, 0.01])},
                      flex=flex)
            .add_body("payload", "link", joint=joint,
                      rigid={"mass": 3.0, "com": [0.3, 0.0, 0.0],
                             "inertia": np.diag([0.02, 0.05, 0.05])},
                      flex=flex if flexible_payload else None).build())


def initial_state(model: fd.Model, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A tumbling start: random joint angles, small deformation, speeds of ~1 rad/s."""
    rng = np.random.default_rng(seed)
    q = np.array(model.neutral_configuration(), dtype=float)
    for i, j in enumerate(model.joints):
        s = int(model.q_start[i])
        if j.quaternion:
            quat = rng.normal(size=4)
            q[s:s + 4] = quat / np.linalg.norm(quat)
        else:
            q[s:s + j.nq] = rng.uniform(-0.5, 0.5, j.nq)
        m = int(model.n_modes[i])
        q[s + j.nq:s + j.nq + m] = rng.normal(size=m) * 0.02
    u = rng.normal(size=model.nu)
    for i, j in enumerate(model.joints):
        if j.quaternion:  # tumble about an intermediate axis, slow translation
            s = int(model.u_start[i])
            u[s:s + 3] = [0.1, 2.0, 0.1]
            u[s + 3:s + 6] *= 0.1
    return q, u


def _time_per_call(f, repeats: int) -> float:
    f()
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeats):
            f()
        best = min(best, (time.perf_counter() - t0) / repeats)
    return best


def measure(model: fd.Model, t1: float, repeats: int, rtol: float = 1e-8,
            atol: float = 1e-10) -> dict:
    """All the numbers for one model: ``{speeds: {...}}`` plus ``"flexdyn"`` (the call of
    flexdyn's own forward dynamics)."""
    q0, u0 = initial_state(model)
    tau = np.zeros(model.nu)
    out: dict = {"flexdyn": {"us_per_call": 1e6 * _time_per_call(
        lambda: fd.forward_dynamics(model, q0, u0, tau), repeats)}}
    f0 = sp.rhs(model, "default")
    ref = solve_ivp(f0, (0.0, t1), np.concatenate([q0, u0]), method="DOP853", rtol=1e-12,
                    atol=1e-13, dense_output=True)
    q_ref = ref.y[:model.nq, -1]
    samples = ref.sol(np.linspace(0.0, t1, 21))
    for name in sp.SPEEDS:
        v0 = sp.to_speeds(model, q0, u0, name)
        row = {"us_per_call": 1e6 * _time_per_call(
            lambda name=name, v0=v0: sp.forward_dynamics(model, q0, v0, tau, speeds=name),
            repeats)}
        Ms = [sp.mass_matrix(model, x[:model.nq], name) for x in samples.T]
        conds = [np.linalg.cond(M) for M in Ms]
        row["cond_min"], row["cond_max"] = min(conds), max(conds)
        row["dM_rel"] = max(np.abs(M - Ms[0]).max() for M in Ms) / np.abs(Ms[0]).max()
        f = sp.rhs(model, name)
        x0 = np.concatenate([q0, v0])
        for method in ("DOP853", "Radau"):
            sol = solve_ivp(f, (0.0, t1), x0, method=method, rtol=rtol, atol=atol)
            row[method] = {"steps": len(sol.t) - 1, "nfev": sol.nfev, "njev": sol.njev,
                           "error": float(np.max(np.abs(sol.y[:model.nq, -1] - q_ref)))}
        out[name] = row
    return out


def report(title: str, res: dict) -> None:
    """Print one model's table."""
    print(f"\n{title}: flexdyn forward_dynamics {res['flexdyn']['us_per_call']:.0f} µs/call")
    print("| speeds | µs/call | cond(M_v) min–max | max ‖M_v(t) − M_v(0)‖ / ‖M_v(0)‖ "
          "| DOP853 steps / nfev / err q(t1) | Radau steps / nfev / njev / err q(t1) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in sp.SPEEDS:
        r = res[name]
        d, ra = r["DOP853"], r["Radau"]
        print(f"| {name} | {r['us_per_call']:.0f} | {r['cond_min']:.3g}–{r['cond_max']:.3g} "
              f"| {r['dM_rel']:.2g} "
              f"| {d['steps']} / {d['nfev']} / {d['error']:.1e} "
              f"| {ra['steps']} / {ra['nfev']} / {ra['njev']} / {ra['error']:.1e} |")


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; returns ``{model name: measure(...)}``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short horizon, few repeats")
    args = ap.parse_args(argv)
    t1, repeats = (0.2, 3) if args.quick else (3.0, 50)
    results = {}
    for title, model in (("(0) free body, point masses, modes R³ ⊗ U", exact_body()),
                         ("(1) free flexible beam, tumbling", free_beam()),
                         ("(2) flexible link + payload on a Hooke joint", hooke_chain())):
        results[model.name] = res = measure(model, t1, repeats)
        report(title, res)
    return results


if __name__ == "__main__":
    main()
