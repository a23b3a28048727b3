"""Ensembles never lose a member they did not run.

Members that end their worker process on purpose (``os._exit`` in the ``tau`` callable, a
segmentation fault) or raise ``SystemExit`` sit among good members; every good member must
come back equal to the same case run alone in this process, and each bad one be reported
as its own failure.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import sys
import threading

import numpy as np
import pytest

import flexdyn as fd

T_SPAN = (0.0, 0.05)


def exits(t, q, u):
    """A member that ends its process without a result."""
    os._exit(1)


def crashes(t, q, u):
    """A member that crashes its process (reads address 0; no traceback dump)."""
    faulthandler.disable()
    ctypes.string_at(0)


def leaves(t, q, u):
    """A member that calls ``sys.exit``."""
    sys.exit(3)


def interrupted(t, q, u):
    raise KeyboardInterrupt


def good_cases(n: int) -> list[dict]:
    return [{"q0": np.array([0.1 * k, -0.05 * k, 0.0, 0.0])} for k in range(n)]


@pytest.fixture(scope="module")
def arm() -> fd.Model:
    return fd.models.two_link_arm()


def check_members(ens: fd.EnsembleResult, arm: fd.Model, bad: dict[int, str]) -> None:
    """The good members equal their case run alone; each bad one is reported with ``bad``'s
    text and no result."""
    assert sorted(ens.errors) == sorted(bad)
    for i, case in enumerate(ens.cases):
        if i in bad:
            assert ens.results[i] is None and bad[i] in ens.errors[i], ens.errors[i]
            assert ens.table()["error"][i] == ens.errors[i]
        else:
            alone = fd.simulate(arm, t_span=T_SPAN, **case)
            assert np.array_equal(ens.results[i].q, alone.q)
            assert np.array_equal(ens.results[i].u, alone.u)


def test_a_dead_worker_process_costs_only_its_own_member(arm):
    """Five good members among one that calls ``os._exit``, one that crashes and one that
    calls ``sys.exit``: the five complete, the three are reported (exit code, signal,
    ``SystemExit``)."""
    cases = good_cases(5)
    cases.insert(1, {"tau": exits})
    cases.insert(3, {"tau": crashes})
    cases.insert(5, {"tau": leaves})
    ens = fd.simulate_many(cases, model=arm, t_span=T_SPAN, workers=2)
    check_members(ens, arm, {1: "WorkerDied: the process running this member ended without "
                                "a result (exit code 1",
                             3: "killed by signal SIGSEGV", 5: "SystemExit: 3"})
    assert repr(ens) == "EnsembleResult(8 cases, 5 completed, 3 failed)"


def test_system_exit_in_this_process_is_reported_and_an_interrupt_goes_on(arm):
    """``workers=1`` runs in this process: ``sys.exit`` in a member is that member's failure,
    a ``KeyboardInterrupt`` is the user's and stops the ensemble."""
    cases = good_cases(2)
    cases.insert(1, {"tau": leaves})
    ens = fd.simulate_many(cases, model=arm, t_span=T_SPAN, workers=1)
    check_members(ens, arm, {1: "SystemExit: 3"})
    with pytest.raises(KeyboardInterrupt):
        fd.simulate_many([{"tau": interrupted}, {}], model=arm, t_span=T_SPAN, workers=1)


def test_an_interrupt_inside_a_worker_is_that_members_failure(arm):
    cases = good_cases(2) + [{"tau": interrupted}]
    ens = fd.simulate_many(cases, model=arm, t_span=T_SPAN, workers=2)
    check_members(ens, arm, {2: "KeyboardInterrupt"})


def finishes_within(seconds: float, fn):
    """``fn()``'s value; the test fails if it has not returned after ``seconds``."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"simulate_many still running after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.slow
def test_dask_worker_killed_by_a_member_takes_no_innocent_member(arm):
    """On a local Dask cluster of two single-thread worker processes that fails a task at
    its first worker death (so that innocent members on that worker fail with it): the
    member that kills its worker is reported, every other member completes, and the same
    client then runs a clean ensemble."""
    distributed = pytest.importorskip("distributed")
    import dask

    cases = good_cases(6)
    cases.insert(2, {"tau": exits})
    cases.insert(4, {"tau": leaves})
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for _ in range(2):
            ens = finishes_within(240, lambda: fd.simulate_many(
                cases, model=arm, t_span=T_SPAN, client=client))
            check_members(ens, arm, {2: "WorkerDied: the Dask worker running this member "
                                        "died (KilledWorker", 4: "SystemExit: 3"})
        clean = finishes_within(240, lambda: fd.simulate_many(
            good_cases(3), model=arm, t_span=T_SPAN, client=client))
        check_members(clean, arm, {})
