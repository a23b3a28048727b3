"""The integrators of ``simulate`` as option objects (:mod:`flexdyn.simulation.options`):
each integrates the pendulum to its exact period, checks its own options, and the former
keywords of ``simulate`` still work with a warning naming the object; a run stopped by a
user's exception or ``KeyboardInterrupt`` keeps its samples; ``simulate`` says what span it
assumed and shows progress without tqdm."""

from __future__ import annotations

import builtins
import warnings

import numpy as np
import pytest
import scipy.integrate

import flexdyn as fd
from flexdyn import models
from helpers import euler_body, pendulum, pendulum_period

AMPLITUDE = 1.0
#: the bottom of the pendulum (θ = −π/2) and the start a swing ``AMPLITUDE`` away
BOTTOM = -np.pi / 2
PERIOD = pendulum_period(AMPLITUDE)

OPTION_OBJECTS = [
    (fd.ScipyIVP("DOP853", rtol=1e-11, atol=1e-12), "DOP853", 1e-8),
    (fd.ScipyIVP(scipy.integrate.Radau, rtol=1e-10, atol=1e-12), "Radau", 1e-6),
    (fd.RadauIIA(rtol=1e-10, atol=1e-12), "radau-iia", 1e-7),
    (fd.GaussLegendre(h=PERIOD / 2000, newton_tol=1e-13), "gauss-legendre", 1e-8),
    (fd.GeneralizedAlpha(h=PERIOD / 4000, rho_inf=1.0, newton_tol=1e-12),
     "generalized-alpha", 1e-4),
    (fd.RK4(h=PERIOD / 2000), "rk4", 1e-8),
]


@pytest.mark.parametrize("integrator, name, tol", OPTION_OBJECTS,
                         ids=[name for _, name, _ in OPTION_OBJECTS])
def test_each_integrator_returns_the_pendulum_after_its_exact_period(integrator, name, tol):
    """One period of a swing of 1 rad (elliptic-integral period): the angle and rate come
    back to the start, each integrator to its order's accuracy."""
    res = fd.simulate(pendulum(), q0=[BOTTOM + AMPLITUDE], t_span=(0.0, PERIOD),
                      t_eval=np.array([PERIOD]), integrator=integrator)
    assert res.settings["integrator"] == name
    assert abs(res.q[-1, 0] - (BOTTOM + AMPLITUDE)) < tol
    assert abs(res.u[-1, 0]) < 20 * tol


def test_auto_passes_its_tolerances_to_its_choice():
    arm = models.two_link_arm()
    res = fd.simulate(arm, t_span=(0.0, 0.02), integrator=fd.Auto(rtol=1e-7, atol=1e-9))
    assert (res.settings["integrator"], res.settings["error_norm"]) == ("radau-iia",
                                                                        "displacement")
    assert (res.settings["rtol"], res.settings["atol"]) == (1e-7, 1e-9)
    res = fd.simulate(pendulum(), t_span=(0.0, 0.02), integrator="auto")
    assert (res.settings["integrator"], res.settings["rtol"]) == ("DOP853", 1e-8)


@pytest.mark.parametrize("legacy, name, options", [
    ({"integrator": "gauss-legendre", "h": 1e-3}, "GaussLegendre", {"h": 1e-3}),
    ({"integrator": "radau-iia", "rtol": 1e-9, "error_norm": "displacement"}, "RadauIIA",
     {"rtol": 1e-9, "error_norm": "displacement"}),
    ({"integrator": "generalized-alpha", "h": 1e-3, "rho_inf": 0.5}, "GeneralizedAlpha",
     {"h": 1e-3, "rho_inf": 0.5}),
    ({"integrator": "rk4", "h": 1e-3}, "RK4", {"h": 1e-3}),
    ({"integrator": "DOP853", "rtol": 1e-10}, "ScipyIVP", {"rtol": 1e-10}),
    ({"rtol": 1e-10}, "Auto", {"rtol": 1e-10}),
])
def test_the_former_keywords_warn_and_run_the_option_object(legacy, name, options):
    model = pendulum()
    q0 = [BOTTOM + AMPLITUDE]
    with pytest.warns(DeprecationWarning, match=rf"pass integrator=flexdyn\.{name}\("):
        old = fd.simulate(model, q0, t_span=(0.0, 0.05), **legacy)
    make = getattr(fd, name)
    method = ([legacy["integrator"]] if name == "ScipyIVP" else [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = fd.simulate(model, q0, t_span=(0.0, 0.05), integrator=make(*method, **options))
    np.testing.assert_array_equal(old.t, new.t)
    np.testing.assert_array_equal(old.q, new.q)
    assert old.settings == new.settings


@pytest.mark.parametrize("make, match", [
    (lambda: fd.RadauIIA(rtol=-1.0), "rtol must be a positive number"),
    (lambda: fd.RadauIIA(atol=float("nan")), "atol must be a positive number"),
    (lambda: fd.RadauIIA(error_norm="energy"), "unknown error_norm 'energy'"),
    (lambda: fd.RadauIIA(newton_tol=2.0), r"newton_tol must lie in \(0, 1\)"),
    (lambda: fd.GaussLegendre(), "takes fixed steps: give h"),
    (lambda: fd.GaussLegendre(h=0.0), "h must be a positive number"),
    (lambda: fd.GeneralizedAlpha(rho_inf=1.5), r"rho_inf must lie in \[0, 1\]"),
    (lambda: fd.GeneralizedAlpha(h="1e-3"), "h must be a number"),
    (lambda: fd.RK4(), "needs the step h"),
    (lambda: fd.ScipyIVP("Euler"), "unknown scipy method 'Euler'"),
    (lambda: fd.ScipyIVP(dict), "OdeSolver subclass"),
    (lambda: fd.Auto(rtol=True), "rtol must be a number"),
])
def test_option_objects_check_their_options(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_simulate_names_misplaced_and_unknown_options():
    model = pendulum()
    with pytest.raises(ValueError, match=r"h: give them to the integrator object "
                                         r"\(RadauIIA\(\.\.\.\)\)"):
        fd.simulate(model, t_span=(0.0, 0.1), integrator=fd.RadauIIA(), h=0.01)
    with pytest.raises(ValueError, match=r"h: options of the compiled integrators .*, not "
                                         r"of 'DOP853' \(flexdyn\.ScipyIVP takes atol, "
                                         r"rtol\)"):
        fd.simulate(model, t_span=(0.0, 0.1), integrator="DOP853", h=0.01)
    with pytest.raises(ValueError, match="unknown integrator 'euler'"):
        fd.simulate(model, t_span=(0.0, 0.1), integrator="euler")
    with pytest.raises(ValueError, match="rho_inf: an option of integrator='generalized-alpha', "
                                         "not of 'radau-iia'"):
        fd.simulate(model, t_span=(0.0, 0.1), integrator="radau-iia", rho_inf=0.5)
    with pytest.raises(ValueError, match="coordinates are their own rates"):  # q̇ ≠ u
        fd.simulate(euler_body(), t_span=(0.0, 0.1), integrator=fd.RadauIIA())


class Stop(Exception):
    """A user's callable failing mid-run."""


def failing_torque(t_stop: float, exc: type[BaseException]):
    """Zero torque that raises ``exc`` from ``t_stop`` on: every time for an exception of
    the callable's own, once for ``KeyboardInterrupt`` (Ctrl-C arrives once)."""
    raised = []

    def tau(t, q, u):
        if t >= t_stop and not (raised and exc is KeyboardInterrupt):
            raised.append(t)
            raise exc("stop")
        return np.zeros(1)

    return tau


@pytest.mark.parametrize("integrator", [fd.ScipyIVP("DOP853"), fd.RadauIIA(),
                                        fd.GaussLegendre(h=1e-3)], ids=lambda i: i.label)
@pytest.mark.parametrize("exc", [Stop, KeyboardInterrupt])
def test_a_run_stopped_by_an_exception_keeps_its_samples(integrator, exc):
    """The exception propagates as itself, with the samples before it as ``.partial``;
    they are the samples of the same run left to finish (same steps, same numbers)."""
    model = pendulum()
    q0 = [BOTTOM + AMPLITUDE]
    t_eval = np.linspace(0.0, 0.5, 51)
    with pytest.raises(exc) as info:
        fd.simulate(model, q0, t_span=(0.0, 0.5), t_eval=t_eval, integrator=integrator,
                    tau=failing_torque(0.3, exc))
    partial = info.value.partial
    assert isinstance(partial, fd.SimulationResult)
    n = partial.t.size
    assert 10 < n <= 31 and partial.t[-1] < 0.3 + 1e-12
    full = fd.simulate(model, q0, t_span=(0.0, 0.5), t_eval=t_eval, integrator=integrator,
                       tau=lambda t, q, u: np.zeros(1))
    np.testing.assert_array_equal(partial.t, full.t[:n])
    np.testing.assert_allclose(partial.q, full.q[:n], rtol=0, atol=1e-12)


def test_without_t_span_simulate_says_what_it_integrates():
    with pytest.warns(UserWarning, match=r"no t_span given; integrating t_span=\(0\.0, 1\.0\)"):
        res = fd.simulate(pendulum())
    assert (res.t[0], res.t[-1]) == (0.0, 1.0)


def test_progress_without_tqdm_prints_plain_lines(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    fd.simulate(pendulum(), t_span=(0.0, 0.5), progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("simulate: 100 % (0.5/0.5 s,")
    assert 2 <= len(lines) <= 10


def test_the_former_module_path_warns_and_gives_the_same_objects():
    with pytest.warns(DeprecationWarning, match="flexdyn.simulate.auto_integrator is "
                                                "deprecated; use flexdyn.simulation"):
        from flexdyn.simulate import auto_integrator
    assert auto_integrator is fd.simulation.auto_integrator
    assert callable(fd.simulate) and fd.simulate is fd.simulation.simulate


def test_an_event_direction_that_is_not_a_number_is_named():
    def bottom(t, q, u):
        return q[0] - BOTTOM

    bottom.direction = "up"
    with pytest.raises(ValueError, match=r"events\[0\]\.direction must be a number .* got 'up'"):
        fd.simulate(pendulum(), t_span=(0.0, 0.1), events=bottom)


@pytest.mark.parametrize("tau", [np.array([0.3, 0.0, -0.2, 0.0]),
                                 lambda t, q, u: np.array([np.sin(t), 0.0, -q[2], 0.0])],
                         ids=["constant", "feedback"])
def test_many_samples_take_the_batched_accelerations(tau):
    """From ``BATCHED_SAMPLES`` samples on, ``udot`` and ``tau`` of the result come from one
    batched call: each sample's row equals the numpy reference's accelerations there."""
    from flexdyn.simulation.problem import BATCHED_SAMPLES

    arm = models.two_link_arm()
    t_eval = np.linspace(0.0, 0.05, BATCHED_SAMPLES + 1)
    res = fd.simulate(arm, t_span=(0.0, 0.05), t_eval=t_eval, tau=tau)
    assert res.udot.shape == (t_eval.size, arm.nu)
    for k in (0, 1234, t_eval.size - 1):
        applied = tau(res.t[k], res.q[k], res.u[k]) if callable(tau) else tau
        np.testing.assert_array_equal(res.tau[k], applied)
        ref = fd.forward_dynamics(arm, res.q[k], res.u[k], applied, backend="reference")
        np.testing.assert_allclose(res.udot[k], ref, rtol=1e-10, atol=1e-10)
