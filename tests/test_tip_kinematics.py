"""Tip kinematics (Damaren & Sharf Sec 2.4): the parametrisations of the elastic node
rotations selected per model (``"tip_kinematics"``, :mod:`flexdyn.tip_kinematics`).

* each option's ``R(θ)``, ``J(θ)`` and ``J̇`` are a holonomic triple (``Rᵀ Ṙ = (J θ̇)~``
  and ``J̇`` by central differences), and the Euler sequences are products of elementary
  rotations;
* a planar arm (bending in its plane, rotations about the normal) has the same forward
  dynamics and trajectories for the exponential map and both Euler sequences, to round-off;
  neglecting the rotation is a different model;
* with no forces a 3-D flexible chain conserves ``fd.total_energy`` with every option, and
  the options give different motions there;
* the compiled engine equals the reference for every option and fidelity;
* rigid bodies and bodies without rotational mode shapes do not depend on the option;
* the option survives ``to_dict``/``from_dict``, files and ``ModelBuilder``, and bad values
  are rejected with a message that names the key and the choices.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexdyn as fd
from flexdyn.spatial import axis_angle_rotation, unskew
from flexdyn.tip_kinematics import TIP_KINEMATICS
from helpers import assert_close
from strategies import random_model_dict, random_state, random_stiffening
from test_energy import flexible_chain, initial_state

OPTIONS = tuple(TIP_KINEMATICS)
#: the options that parametrise the rotation itself (all but "neglect")
ROTATIONS = ("exponential", "euler-123", "euler-321")


pytestmark = pytest.mark.usefixtures("quiet_numba")


def with_option(d: dict, option: str) -> fd.Model:
    """The model of the dict ``d`` with the tip kinematics ``option``."""
    return fd.Model.from_dict({**d, "tip_kinematics": option})


# ---------------------------------------------------------------------------------------------
# the maps
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("option", OPTIONS)
def test_maps_are_holonomic(option):
    tk = TIP_KINEMATICS[option]
    rng = np.random.default_rng(3)
    h = 1e-6
    for _ in range(5):
        th, thd = rng.normal(size=3), rng.normal(size=3)
        R, J = tk.maps(th)
        (Rp, Jp), (Rm, Jm) = tk.maps(th + h * thd), tk.maps(th - h * thd)
        assert_close(R.T @ R, np.eye(3), "RᵀR", tol=1e-14, scale=1.0)
        assert_close(unskew(R.T @ (Rp - Rm) / (2 * h)), J @ thd, "ω", tol=1e-8, scale=1.0)
        assert_close(tk.rate(th, thd), (Jp - Jm) / (2 * h), "J̇", tol=1e-8, scale=1.0)
        # batched over nodes as the body uses them
        Rb, Jb = tk.maps(np.stack([th, -th]))
        assert np.array_equal(Rb[0], R) and np.array_equal(Jb[0], J)
    R0, J0 = tk.maps(np.zeros(3))
    assert np.array_equal(R0, np.eye(3))
    assert np.array_equal(J0, np.zeros((3, 3)) if option == "neglect" else np.eye(3))


def test_euler_sequences_are_products_of_axis_rotations():
    th = np.array([0.3, -0.7, 1.1])
    e = np.eye(3)
    Rx, Ry, Rz = (axis_angle_rotation(e[k], th[k]) for k in range(3))
    assert_close(TIP_KINEMATICS["euler-123"].maps(th)[0], Rx @ Ry @ Rz, "R 1-2-3", tol=1e-15,
                 scale=1.0)
    assert_close(TIP_KINEMATICS["euler-321"].maps(th)[0], Rz @ Ry @ Rx, "R 3-2-1", tol=1e-15,
                 scale=1.0)
    # the textbook rate matrices (angular velocity in the rotated frame)
    c, s = np.cos(th), np.sin(th)
    J123 = np.array([[c[1] * c[2], s[2], 0], [-c[1] * s[2], c[2], 0], [s[1], 0, 1]])
    J321 = np.array([[1, 0, -s[1]], [0, c[0], s[0] * c[1]], [0, -s[0], c[0] * c[1]]])
    assert_close(TIP_KINEMATICS["euler-123"].maps(th)[1], J123, "J 1-2-3", tol=1e-15, scale=1.0)
    assert_close(TIP_KINEMATICS["euler-321"].maps(th)[1], J321, "J 3-2-1", tol=1e-15, scale=1.0)


# ---------------------------------------------------------------------------------------------
# a planar arm: every parametrisation is the angle about the normal
# ---------------------------------------------------------------------------------------------
def planar_arm() -> dict:
    """Three flexible links in the x–y plane, revolute joints about z, each link attached at
    its parent's tip node, two bending modes per link in the plane (displacement along y,
    rotation about z), node rotary inertias, gravity in the plane."""
    xi = np.linspace(0.0, 1.0, 5)
    n = xi.size
    Pi = np.zeros((n, 6, 2))
    for j, x in enumerate(xi):
        Pi[j, 4], Pi[j, 2] = (x**2, x**3 - x**2), (2 * x, 3 * x**2 - 2 * x)
    bodies = []
    for k in range(3):
        joint = {"type": "revolute", "axis": [0, 0, 1], "parent_node": None if k == 0 else n - 1}
        bodies.append({
            "name": f"link{k}", "parent": None if k == 0 else f"link{k - 1}", "joint": joint,
            "rigid": {"mass": 0.4, "com": [0.5, 0, 0], "inertia": np.diag([1e-3, 0.03, 0.03])},
            "flex": {"nodes": [[x, 0, 0] for x in xi], "node_masses": [0.2] * n,
                     "node_inertias": [np.diag([1e-3, 5e-4, 5e-4])] * n,
                     "modes": Pi.reshape(6 * n, 2), "stiffness": [[3.0, 0.4], [0.4, 6.0]]}})
    return {"name": "planar arm", "gravity": [0.0, -9.81, 0.0], "bodies": bodies}


def planar_state(model: fd.Model, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Large joint angles, deformations and rates (the slopes reach ~1 rad)."""
    q = rng.uniform(-1.0, 1.0, size=model.nq)
    u = rng.normal(size=model.nu)
    return q, u, rng.normal(size=model.nu)


def rk4(model: fd.Model, y0: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """Fixed-step RK4 of the free motion (torque-free, with gravity); (steps + 1, nq + nu)."""
    nq = model.nq

    def f(y):
        return np.concatenate([model.qdot(y[:nq], y[nq:]),
                               fd.forward_dynamics(model, y[:nq], y[nq:])])

    ys = [y0]
    for _ in range(steps):
        y = ys[-1]
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        ys.append(y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.array(ys)


@pytest.mark.parametrize("backend", ["engine", "reference"])
def test_planar_arm_is_the_same_for_every_rotation(backend):
    d = planar_arm()
    models = {o: with_option(d, o) for o in OPTIONS}
    rng = np.random.default_rng(11)
    for _ in range(4):
        q, u, udot = planar_state(models["exponential"], rng)
        tau = rng.normal(size=u.size)
        ref = fd.forward_dynamics(models["exponential"], q, u, tau, backend=backend)
        M = fd.mass_matrix(models["exponential"], q, backend=backend)
        E = fd.total_energy(models["exponential"], q, u, backend=backend)
        for o in ROTATIONS[1:]:
            assert_close(fd.forward_dynamics(models[o], q, u, tau, backend=backend), ref,
                         f"u̇ {o}", tol=1e-12, scale=1.0)
            assert_close(fd.mass_matrix(models[o], q, backend=backend), M, f"M {o}", tol=1e-13)
            assert abs(fd.total_energy(models[o], q, u, backend=backend) - E) < 1e-12 * abs(E)
        # neglecting the elastic rotation is another model
        got = fd.forward_dynamics(models["neglect"], q, u, tau, backend=backend)
        assert np.max(np.abs(got - ref)) > 1e-3 * np.max(np.abs(ref))


def test_planar_arm_trajectories_coincide():
    d = planar_arm()
    models = {o: with_option(d, o) for o in OPTIONS}
    q0, u0, _ = planar_state(models["exponential"], np.random.default_rng(5))
    y0 = np.concatenate([q0, u0])
    runs = {o: rk4(models[o], y0, 0.005, 200) for o in (*ROTATIONS, "neglect")}
    swing = np.max(np.abs(runs["exponential"] - y0))
    assert swing > 0.5  # the arm moves and bends a lot
    for o in ROTATIONS[1:]:
        assert_close(runs[o], runs["exponential"], f"trajectory {o}", tol=1e-11, scale=1.0)
    assert np.max(np.abs(runs["neglect"] - runs["exponential"])) > 1e-2


# ---------------------------------------------------------------------------------------------
# 3-D: energy conservation, the engine against the reference
# ---------------------------------------------------------------------------------------------
def free_motion(model: fd.Model, t_end: float, fidelity: str = "full"
                ) -> tuple[np.ndarray, np.ndarray]:
    """States at 41 times over ``t_end`` s of free, undamped motion (DOP853 at
    ``rtol = atol = 1e-12``, so that the energy error of the integration is ~1e-9)."""
    nq = model.nq

    def rhs(_t, y):
        return np.concatenate([model.qdot(y[:nq], y[nq:]),
                               fd.forward_dynamics(model, y[:nq], y[nq:], fidelity=fidelity)])

    sol = solve_ivp(rhs, (0.0, t_end), initial_state(model), method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=np.linspace(0.0, t_end, 41))
    assert sol.success, sol.message
    return sol.t, sol.y.T


def stiffened_chain() -> dict:
    """The chain of ``tests/test_energy.py`` with (small) random stiffening tensors."""
    d = flexible_chain()
    rng = np.random.default_rng(23)
    for body in d["bodies"]:
        data = random_stiffening(rng, len(body["flex"]["stiffness"]))
        for key in ("geometric_stiffness_1", "geometric_stiffness_2"):
            data[key] = (0.02 * np.array(data[key])).tolist()
        body["flex"].update(data)
    return d


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("fidelity", ["full", "exact"])
def test_free_flexible_chain_conserves_energy(option, fidelity):
    """I(·) and EE(·) of Damaren & Sharf for every tip kinematics (without and with the
    stiffening tensors)."""
    model = with_option(flexible_chain() if fidelity == "full" else stiffened_chain(), option)
    _, ys = free_motion(model, 5.0, fidelity)
    nq = model.nq
    E = np.array([fd.total_energy(model, y[:nq], y[nq:], fidelity) for y in ys])
    drift = np.max(np.abs(E - E[0])) / abs(E[0])
    print(f"{fidelity}, {option}: E0 = {E[0]:.6f} J, relative drift {drift:.2e}")
    assert drift < 1e-8, (option, fidelity, drift)


def test_options_differ_in_three_dimensions():
    """The chain bends in two planes: the rotations about y and z do not commute, so the
    options are different models there (their states after 5 s differ by 0.09 to 0.97)."""
    runs = {o: free_motion(with_option(flexible_chain(), o), 5.0)[1] for o in OPTIONS}
    for a in OPTIONS:
        for b in OPTIONS:
            if a < b:
                assert np.max(np.abs(runs[a][-1] - runs[b][-1])) > 1e-2, (a, b)


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_engine_equals_reference(option, fidelity):
    rng = np.random.default_rng(17)
    for parents, joints in (([-1, 0, 1, 1], ["revolute", "spherical", "free", "universal"]),
                            ([-1, 0, 0, 2], ["free", "revolute", "cylindrical", "screw"])):
        d = random_model_dict(rng, parents, joints, [4, 5, 3, 4], [3, 4, 2, 3], gravity=True)
        model = with_option(d, option)
        q, u, udot = random_state(model, rng, eta_scale=0.5)
        tau = rng.normal(size=model.nu)
        f = rng.normal(size=(model.n_bodies, 6))
        M = fd.mass_matrix(model, q, fidelity, backend="reference")
        scale = float(np.max(np.abs(M)))
        assert_close(fd.mass_matrix(model, q, fidelity), M, "M")
        ref = fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f, backend="reference")
        assert_close(fd.inverse_dynamics(model, q, u, udot, fidelity, f_ext=f), ref, "τ",
                     scale=scale)
        for method in ("articulated", "composite", "articulated-split"):
            ref = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity,
                                      f_ext=f, backend="reference")
            got = fd.forward_dynamics(model, q, u, tau, method=method, fidelity=fidelity,
                                      f_ext=f)
            assert_close(got, ref, f"u̇ ({method})", tol=1e-8, scale=1.0)
        E = fd.total_energy(model, q, u, fidelity, backend="reference")
        assert_close(fd.total_energy(model, q, u, fidelity), E, "E", scale=abs(E))


def test_complex_step_through_the_euler_maps():
    """The reference path takes complex states (complex-step derivatives) with every option."""
    d = planar_arm()
    d["bodies"][1]["flex"]["modes"] = np.random.default_rng(2).normal(size=(30, 2))
    for option in OPTIONS:
        model = with_option(d, option)
        q, u, _ = planar_state(model, np.random.default_rng(9))
        dq = np.random.default_rng(4).normal(size=q.size)
        h = 1e-30
        cs = fd.kinetic_energy(model, q + 1j * h * dq, u, backend="reference").imag / h
        e = 1e-6
        fdiff = (fd.kinetic_energy(model, q + e * dq, u) - fd.kinetic_energy(model, q - e * dq, u)
                 ) / (2 * e)
        assert abs(cs - fdiff) < 1e-6 * max(1.0, abs(cs)), option


# ---------------------------------------------------------------------------------------------
# bodies the option does not touch
# ---------------------------------------------------------------------------------------------
def test_rigid_bodies_and_bodies_without_rotational_modes_are_unaffected():
    d = planar_arm()
    for body in d["bodies"]:
        Pi = np.array(body["flex"]["modes"]).reshape(-1, 6, 2)
        Pi[:, :3] = 0.0  # translation only
        Pi[:, 5] = Pi[:, 4]  # and out of the plane too
        body["flex"]["modes"] = Pi.reshape(-1, 2)
    d["bodies"].append({"name": "payload", "parent": "link2",
                        "joint": {"type": "spherical", "parent_node": 4},
                        "rigid": {"mass": 1.0, "com": [0.1, 0.2, 0], "inertia": np.eye(3)}})
    models = {o: with_option(d, o) for o in OPTIONS}
    rng = np.random.default_rng(8)
    q, u, _ = random_state(models["exponential"], rng)
    tau = rng.normal(size=u.size)
    for backend in ("engine", "reference"):
        ref = fd.forward_dynamics(models["exponential"], q, u, tau, backend=backend)
        for o in OPTIONS:
            got = fd.forward_dynamics(models[o], q, u, tau, backend=backend)
            assert np.array_equal(got, ref), (o, backend)


# ---------------------------------------------------------------------------------------------
# the model file
# ---------------------------------------------------------------------------------------------
HINGE = {"type": "revolute", "axis": [0, 0, 1]}
DISK = {"mass": 1.0, "inertia": np.eye(3)}


@pytest.mark.parametrize("option", OPTIONS)
def test_round_trip(option, tmp_path):
    model = with_option(planar_arm(), option)
    assert model.tip_kinematics == option
    d = model.to_dict()
    assert d.get("tip_kinematics", "exponential") == option
    assert ("tip_kinematics" in d) == (option != "exponential")  # the default is left out
    path = tmp_path / "arm.json"
    fd.save_model(model, path)
    loaded = fd.load_model(path)
    assert loaded.tip_kinematics == option
    q, u, _ = planar_state(model, np.random.default_rng(1))
    assert np.array_equal(fd.forward_dynamics(loaded, q, u), fd.forward_dynamics(model, q, u))
    assert fd.Model.from_dict(d).to_dict() == d


def test_model_builder_takes_the_option():
    d = planar_arm()
    builder = fd.ModelBuilder("arm", gravity=d["gravity"], tip_kinematics="euler-321")
    for body in d["bodies"]:
        builder.add_body(body["name"], body["parent"], joint=body["joint"], rigid=body["rigid"],
                         flex=body["flex"])
    model = builder.build()
    assert model.tip_kinematics == "euler-321"
    assert all(b.rotation is TIP_KINEMATICS["euler-321"] for b in model.bodies)
    assert fd.ModelBuilder("x").add_body("b", joint=HINGE, rigid=DISK).build().tip_kinematics \
        == "exponential"


@pytest.mark.parametrize("value, message", [
    ("euler-213", "model: tip_kinematics must be one of 'exponential', 'neglect', 'euler-123', "
                  "'euler-321', got 'euler-213'"),
    (3, "got 3"),
    (["exponential"], "got ['exponential']"),
    ("first-order", "first-order (b) and integrated (d) tip kinematics are not offered"),
    ("exact", "docs/stiffening.md"),
])
def test_bad_values_are_rejected(value, message):
    with pytest.raises(ValueError) as info:
        fd.Model.from_dict({**planar_arm(), "tip_kinematics": value})
    assert message in str(info.value)
    with pytest.raises(ValueError):
        fd.ModelBuilder("x", tip_kinematics=value).add_body("b", joint=HINGE, rigid=DISK).build()
