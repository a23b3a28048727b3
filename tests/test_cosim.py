"""Co-simulation and ensembles: :class:`flexdyn.Stepper`, :func:`flexdyn.simulate_many`,
and the FMU of :mod:`flexdyn.fmu`.

Checked: the stepper against ``simulate`` with the same fixed-step method (to round-off,
with torques, wrenches at bodies and nodes, prescribed motion, substeps), an adaptive
stepper against the adaptive ``simulate``, inputs and outputs by name; ensembles in worker
processes and on a local Dask cluster against the serial loop, a failing member reported
with its inputs while the rest complete.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from helpers import euler_body, rel_err


@pytest.fixture(scope="module")
def arm() -> fd.Model:
    return fd.models.two_link_arm(gravity=(0.0, -9.81, 0.0))


def _tau(model: fd.Model) -> np.ndarray:
    tau = np.zeros(model.nu)
    tau[0], tau[int(model.u_start[1])] = 2.0, -0.5
    return tau


def test_stepper_equals_simulate_rk4(arm):
    """Constant inputs: the stepper's states equal ``simulate(integrator="rk4", h)`` at
    every macro step to 1e-12, with one and with four RK4 steps per macro step."""
    tau = _tau(arm)
    f_ext = np.zeros((arm.n_bodies, 6))
    f_ext[1, 4] = 0.3
    for substeps in (1, 4):
        st = fd.Stepper(arm, 0.01, substeps=substeps)
        st.tau, st.f_ext = tau, f_ext
        ref = fd.simulate(arm, t_span=(0.0, 0.5), integrator="rk4", h=0.01 / substeps,
                          tau=tau, f_ext=f_ext, t_eval=np.linspace(0.0, 0.5, 51))
        for k in range(1, 51):
            st.step()
            assert abs(st.t - ref.t[k]) < 1e-12
            assert rel_err(np.concatenate([st.q, st.u]),
                           np.concatenate([ref.q[k], ref.u[k]])) < 1e-12
        assert abs(st.work["tau"] - ref.work[-1]) < 1e-12 * max(1.0, abs(st.work["tau"]))


def test_stepper_with_gauss_legendre_follows_the_reference(arm):
    """Constant inputs: macro steps of the compiled Gauss–Legendre loop (restarted each macro
    step: a one-step method loses nothing) follow a tight DOP853 run to its Newton
    tolerance (1e-6 of the accelerations), and the work integrals go on across macro
    steps."""
    tau = _tau(arm)
    st = fd.Stepper(arm, 0.01, integrator="gauss-legendre", substeps=4)
    st.tau = tau
    ref = fd.simulate(arm, t_span=(0.0, 0.5), tau=tau, t_eval=np.linspace(0.0, 0.5, 51),
                      rtol=1e-11, atol=1e-13, integrator="DOP853")
    tol = 5e-6
    for k in range(1, 51):
        st.step()
        assert rel_err(np.concatenate([st.q, st.u]),
                       np.concatenate([ref.q[k], ref.u[k]])) < tol, k
    assert abs(st.work["tau"] - ref.work[-1]) < tol * abs(ref.work[-1])


def test_stepper_gauss_legendre_takes_stiff_macro_steps():
    """A steel beam whose highest mode makes RK4 unstable at the macro step: RK4 blows up,
    Gauss–Legendre (A-stable) follows the reference at one step per macro step, and so does
    Radau IIA with adaptive steps inside each macro step."""
    from flexdyn.beam import beam_modes

    beam = beam_modes(0.5, 7850.0 * 4e-4, EI_y=210e9 * 1.33e-8, EI_z=210e9 * 1.33e-8,
                      n_elements=6, n_modes=4, damping_ratio=0.005)
    model = (fd.ModelBuilder("stiff", gravity=(0.0, -9.81, 0.0))
             .add_body("beam", joint={"type": "revolute", "axis": [0, 0, 1]}, flex=beam)
             .build())
    dt = 2e-3
    assert fd.max_stable_step(model, "rk4") < dt / 2
    ref = fd.simulate(model, t_span=(0.0, 0.2), t_eval=[0.2], rtol=1e-11, atol=1e-13,
                      integrator="DOP853")
    gl = fd.Stepper(model, dt, integrator="gauss-legendre")
    gl.step(100)
    assert np.max(np.abs(gl.q - ref.q[-1])) < 1e-4 * np.max(np.abs(ref.q[-1]))
    radau = fd.Stepper(model, dt, integrator="radau-iia", rtol=1e-8, atol=1e-10)
    radau.step(100)
    assert np.max(np.abs(radau.q - ref.q[-1])) < 1e-6 * np.max(np.abs(ref.q[-1]))
    rk4 = fd.Stepper(model, dt)
    try:
        rk4.step(100)
        diverged = not np.all(np.isfinite(rk4.q)) or np.max(np.abs(rk4.q - ref.q[-1])) > 1.0
    except fd.SimulationError:
        diverged = True
    assert diverged


def test_stepper_compiled_integrator_refusals(arm):
    with pytest.raises(ValueError, match="not supported with prescribed motion"):
        fd.Stepper(arm, 0.01, integrator="gauss-legendre",
                   prescribed={"link1": lambda t: (0.0, 0.0, 0.0)})
    with pytest.raises(ValueError, match="own rates"):  # quasi-velocities
        fd.Stepper(euler_body(), 0.01, integrator="gauss-legendre")


@pytest.mark.parametrize("integrator", ["gauss-legendre", "radau-iia"])
def test_compiled_stepper_with_node_wrenches(arm, integrator):
    """A wrench at link 2's last node, which turns with the node's frame, through a compiled
    stepper (restarted every macro step) against DOP853 at rtol 1e-12 over the same span;
    its work is the external work, ``τ`` doing none."""
    loads = {("link2", -1): np.array([0.0, 0.0, 0.1, 0.5, 1.0, 0.0])}
    st = fd.Stepper(arm, 0.02, integrator=integrator, substeps=10, rtol=1e-10, atol=1e-12)
    st.f_nodes = loads
    st.step(10)
    ref = fd.simulate(arm, t_span=(0.0, 0.2), f_nodes=loads, t_eval=[0.2],
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-12, atol=1e-12))
    assert rel_err(st.q, ref.q[-1]) < 1e-7 and rel_err(st.u, ref.u[-1]) < 1e-5
    assert st.work["tau"] == 0.0
    assert abs(st.work["external"] - ref.external_work[-1]) < 1e-7 * abs(ref.external_work[-1])


def test_stepper_advance_by_a_duration(arm):
    """``advance(0.025)`` with ``dt = 0.01`` takes three equal RK4 steps, as ``simulate``
    with ``h = 0.01`` over the same span does."""
    st = fd.Stepper(arm, 0.01)
    st.tau = _tau(arm)
    st.advance(0.025)
    ref = fd.simulate(arm, t_span=(0.0, 0.025), integrator="rk4", h=0.01, tau=_tau(arm))
    assert len(ref.t) == 4 and st.t == 0.025
    assert rel_err(st.q, ref.q[-1]) < 1e-12
    with pytest.raises(ValueError, match="duration must be a positive"):
        st.advance(0.0)


def test_stepper_prescribed_and_node_loads(arm):
    """Prescribed shoulder motion and a wrench at the last node of link 2, both through the
    stepper and through ``simulate`` with the same steps."""
    drive = {"link1": lambda t: (np.array([0.3 * t**2]), np.array([0.6 * t]),
                                 np.array([0.6]))}
    loads = {("link2", -1): np.array([0.0, 0.0, 0.1, 0.5, 0.0, 0.0])}
    st = fd.Stepper(arm, 0.02, prescribed=drive)
    st.f_nodes = loads
    st.step(20)
    ref = fd.simulate(arm, t_span=(0.0, 0.4), integrator=fd.RK4(h=0.02), prescribed=drive,
                      f_nodes=loads)
    assert rel_err(st.q, ref.q[-1]) < 1e-12 and rel_err(st.u, ref.u[-1]) < 1e-12
    assert abs(st.q[0] - 0.3 * 0.4**2) < 1e-14  # the prescribed angle, imposed


def test_adaptive_stepper_and_io_by_name(arm):
    """A Radau stepper (restarted every macro step) against the adaptive ``simulate``;
    inputs set by name; outputs by name equal the result's accessors."""
    st = fd.Stepper(arm, 0.05, integrator="Radau", rtol=1e-10, atol=1e-12,
                    outputs=["link2.tip", "link1.theta", "link2.theta_dot"])
    assert st.output_names[:3] == ["link2.node[6].x", "link2.node[6].y", "link2.node[6].z"]
    for name, value in zip(st.input_names, _tau(arm), strict=True):
        st.set_input(name, value)
    st.step(10)
    ref = fd.simulate(arm, t_span=(0.0, 0.5), tau=_tau(arm), rtol=1e-11, atol=1e-13,
                      integrator="DOP853")
    assert rel_err(st.q, ref.q[-1]) < 1e-7
    out = st.outputs()
    assert rel_err(out[:3], ref.tip_position("link2")[-1]) < 1e-7
    assert out[3] == st.q[0] and out[4] == st.u[int(arm.u_start[1])]
    st.set_state(np.zeros(arm.nq), np.zeros(arm.nu), t=0.0)
    assert st.t == 0.0 and st.work == {"tau": 0.0, "external": 0.0, "damping": 0.0}


def test_stepper_errors(arm):
    with pytest.raises(ValueError, match="dt must be a positive"):
        fd.Stepper(arm, 0.0)
    with pytest.raises(ValueError, match="unknown integrator 'generalized-alpha'"):
        fd.Stepper(arm, 0.01, integrator="generalized-alpha")
    st = fd.Stepper(arm, 0.01)
    with pytest.raises(ValueError, match="unknown input 'tau.elbow'"):
        st.set_input("tau.elbow", 1.0)
    with pytest.raises(ValueError, match=r"tau has shape \(3,\)"):
        st.tau = np.zeros(3)
    with pytest.raises(ValueError, match="unknown output 'link3.tip'"):
        fd.Stepper(arm, 0.01, outputs=["link3.tip"])
    st.tau = np.full(arm.nu, 1e300)
    with pytest.raises(fd.SimulationError, match="step from t = 0 s failed"):
        st.step(5)


def _cases() -> list[dict]:
    """Six arms of different elbow stiffness and payload, one with a negative length."""
    cases = [{"params": {"EI2": EI, "payload_mass": m}, "q0": np.array([0.1, 0.2, 0, 0])}
             for EI in (100.0, 150.0, 300.0) for m in (0.5, 1.0)]
    cases[3] = {"params": {"length1": -1.0}}
    return cases


def _serial(cases: list[dict], **common) -> list:
    out = []
    for case in cases:
        try:
            out.append(fd.simulate(fd.models.two_link_arm(**case["params"]),
                                   **{k: v for k, v in case.items() if k != "params"},
                                   **common))
        except ValueError:
            out.append(None)
    return out


COMMON = {"t_span": (0.0, 0.3), "tau": np.array([1.0, 0.0, 0.5, 0.0]), "rtol": 1e-9,
          "atol": 1e-11}


def _check_ensemble(ens: fd.EnsembleResult) -> None:
    ref = _serial(_cases(), **COMMON)
    assert list(ens.ok) == [True, True, True, False, True, True]
    assert "length1=-1.0 must be" in ens.errors[3] and ens.results[3] is None
    for got, want in zip(ens.results, ref, strict=True):
        if want is not None:
            assert rel_err(got.q, want.q) < 1e-12 and rel_err(got.u, want.u) < 1e-12
    table = ens.table()
    assert list(table["EI2"][:3]) == [100.0, 100.0, 150.0] and table["ok"][3] == False  # noqa: E712
    assert np.isnan(table["q:link1.theta"][3])
    assert table["q:link1.theta"][0] == ref[0].q[-1, 0]


def test_simulate_many_in_processes():
    ens = fd.simulate_many(_cases(), build=fd.models.two_link_arm, workers=2, **COMMON)
    _check_ensemble(ens)
    assert repr(ens) == "EnsembleResult(6 cases, 5 completed, 1 failed)"


@pytest.mark.slow
def test_simulate_many_on_a_local_dask_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        ens = fd.simulate_many(_cases(), build=fd.models.two_link_arm, client=client,
                               **COMMON)
    _check_ensemble(ens)


def test_simulate_many_reports_members_that_cannot_travel():
    """A case holding a lambda cannot be pickled to a worker process: that member is
    reported, the others complete."""
    cases = [{"q0": np.array([0.1, 0, 0, 0])},
             {"tau": lambda t, q, u: np.zeros(4)},  # not picklable
             {"q0": np.array([0.2, 0, 0, 0])}]
    ens = fd.simulate_many(cases, model=fd.models.two_link_arm(), t_span=(0.0, 0.05),
                           workers=2)
    assert list(ens.ok) == [True, False, True]
    assert "pickle" in ens.errors[1].lower()


def test_simulate_many_errors():
    with pytest.raises(ValueError, match=r"cases\[1\] must be a mapping"):
        fd.simulate_many([{}, 3])
    ens = fd.simulate_many([{"t_span": (0, 0.1)}], workers=1)
    assert "no model" in ens.errors[0]


def test_fmu_reproduces_the_stepper(arm, tmp_path):
    """The pythonfmu FMU of the arm passes fmpy's validation of its model description and, run by
    fmpy's co-simulation master with a constant shoulder torque, gives the stepper's
    outputs at every communication point."""
    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    from fmpy.validation import validate_fmu

    from flexdyn.fmu import build_fmu

    path = build_fmu(arm, tmp_path, dt=0.01, outputs=["link1.theta", "link2.tip"], native=False)
    assert path.name == "TwoLinkArm.fmu"
    assert validate_fmu(str(path)) == []
    rows = fmpy.simulate_fmu(str(path), stop_time=0.3, step_size=0.02, output_interval=0.02,
                             start_values={"tau.link1.theta_dot": 1.5},
                             output=["link1.theta", "link2.node[6].x", "link2.node[6].y"])
    st = fd.Stepper(arm, 0.01, outputs=["link1.theta", "link2.tip"])
    st.set_input("tau.link1.theta_dot", 1.5)
    for row in rows[1:]:
        st.step(2)
        assert abs(row["time"] - st.t) < 1e-12
        out = st.outputs()
        assert rel_err(np.array([row["link1.theta"], row["link2.node[6].x"],
                                 row["link2.node[6].y"]]), out[:3]) < 1e-12
    with pytest.raises(ValueError, match="dt must be a positive"):
        build_fmu(arm, tmp_path, dt=-1.0)


@pytest.mark.parametrize("n", [0, -1, 0.5, 2.9, "3", True, None])
def test_stepper_step_takes_positive_integers_only(arm, n):
    """``step(n)`` counts macro steps: anything but a positive integer would silently do
    the wrong amount of work (``step(0.5)`` nothing, ``step(2.9)`` two steps)."""
    st = fd.Stepper(arm, 0.01)
    with pytest.raises(ValueError, match="positive integer"):
        st.step(n)
    assert st.t == 0.0


def test_a_stepper_whose_time_no_longer_advances_says_so(arm):
    """At t0 = 1e17 s a step of 1 ms rounds away (t + dt == t): an error, not a state
    that never moves in time; step(2) advances exactly two steps."""
    st = fd.Stepper(arm, 1e-3, t0=1e17)
    with pytest.raises(ValueError, match="does not advance the time"):
        st.step()
    ok = fd.Stepper(arm, 1e-3)
    ok.step(np.int64(2))
    assert ok.t == pytest.approx(2e-3, rel=1e-12)


def test_a_forked_process_shares_its_batches_among_threads_of_its_own():
    """A batch in the parent starts the pool that shares batches among threads; a child made
    by fork (a process pool's worker) has none of its threads and must make its own."""
    import multiprocessing

    model = fd.models.two_link_arm()
    q = np.tile(model.neutral_configuration(), (256, 1))
    u = np.zeros_like(q)
    parent = fd.forward_dynamics(model, q, u, u)  # starts the parent's pool
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.apply_async(fd.forward_dynamics, (model, q, u, u)).get(timeout=120)
    np.testing.assert_array_equal(child, parent)
