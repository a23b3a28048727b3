"""The integrator benchmark ``benchmarks/bench_simulate.py``: its arm model is the one it
describes, and its solver wrapper counts every right-hand side without changing the run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

_BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if _BENCHMARKS not in sys.path:  # the developer instruments are not installed
    sys.path.insert(0, _BENCHMARKS)

import bench_simulate as bs  # noqa: E402

import flexdyn as fd  # noqa: E402


def test_arm_model_matches_its_description():
    model = bs.aluminium_arm()
    assert model.n_bodies == 4 and model.nu == 3 + 3 * 2  # 3 joints, 2 modes per link
    tubes = sum(2700.0 * np.pi / 4.0 * (D**2 - (D - 2 * w) ** 2) * L for D, w, L in bs.ARM_TUBES)
    mass = sum(b.total_mass for b in model.bodies)
    assert abs(mass - (tubes + 3 * 0.5 + 1.5)) < 1e-9
    freqs = fd.models.modal_frequencies(model)
    # in-plane cantilever bending of the Ø40×2 tube, 0.5 m: Euler–Bernoulli 153.3 / 960.9 Hz
    assert abs(freqs[2][0] - 152.6) < 0.5 and abs(freqs[2][1] - 945.9) < 0.5


def test_counting_solver_counts_every_rhs_and_leaves_the_run_unchanged():
    model = fd.models.spinup_beam()
    tau = fd.models.spinup_torque(model)
    plain = fd.simulate(model, t_span=(0.0, 0.05), tau=tau, integrator="Radau")
    cls = bs.counting("Radau")
    counted = fd.simulate(model, t_span=(0.0, 0.05), tau=tau, integrator=cls)
    np.testing.assert_array_equal(plain.q, counted.q)
    # the Jacobian comes from simulate (one batched engine call), so scipy calls the
    # right-hand side only for the stages: its count is every call
    assert cls.calls == counted.nfev
    assert cls.last.njev >= 1
    assert cls.steps >= len(counted.t) - 1


@pytest.mark.slow
def test_implicit_integrators_survive_a_coordinate_the_dynamics_ignores():
    """The arm's first joint angle and the work integrals do not enter ẋ: scipy's own
    finite-difference Jacobian grew their columns' increments tenfold per Jacobian until the
    state overflowed (BDF failed at t = 0.37 s); simulate's engine Jacobian does not."""
    problem = bs.arm_problem(0.5)
    result = fd.simulate(problem.model, t_span=(0.0, 0.5), tau=problem.tau, integrator="BDF")
    reference = fd.simulate(problem.model, t_span=(0.0, 0.5), tau=problem.tau, t_eval=result.t[-1:],
                            integrator=fd.Auto(rtol=1e-10, atol=1e-12))
    assert np.max(np.abs(result.q[-1] - reference.q[-1])) < 1e-5
