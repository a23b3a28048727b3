"""Ensembles: many simulations — parameter sweeps, Monte Carlo — in parallel processes on
one machine, or on a Dask cluster.

:func:`simulate_many` runs :func:`flexdyn.simulate` once per *case*.  A case is a mapping of
``simulate``'s keyword arguments (``q0``, ``u0``, ``t_span``, ``tau``, ``t_eval``,
``fidelity``, …) over the common ones, with the model given by the case (``"model"``: a
:class:`~flexdyn.Model`), built from parameters (``"params"``: a mapping passed as keywords
to ``build``, e.g. :func:`flexdyn.models.two_link_arm`), or the common ``model``.  Members
run in worker processes (:class:`concurrent.futures.ProcessPoolExecutor`), or as tasks of a
:class:`dask.distributed.Client` when one is passed — Dask schedules them; this module
only submits and gathers.  A member that raises is reported with its inputs and the error;
the others complete.

Members are isolated from one another: a member that ends its worker process (``os._exit``,
a crash in compiled code, an out-of-memory kill) costs only itself.  When a worker process
dies the pool breaks and every member it had not finished is run again, each in a process of
its own, so that the death is attributed to the member that caused it (reported as
``"WorkerDied: ..."`` with the exit code or signal) and the others complete; such a member
runs twice.  On Dask, when several members failed with a dying worker (``KilledWorker``),
they are run again one at a time.  A member that raises anything — ``SystemExit`` from
``sys.exit`` included — is reported like any failure; only a ``KeyboardInterrupt`` of the
calling process stops the ensemble.

Everything a case holds travels to the workers by pickling: models and results pickle;
callables (``tau``, ``build``) must be module-level functions (not lambdas) for processes
and clusters (``workers=1`` runs in this process and takes anything).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .chain import Model, state_layout
from .results import SimulationResult
from .simulation import simulate

__all__ = ["EnsembleResult", "simulate_many"]


@dataclass
class EnsembleResult:
    """The members of :func:`simulate_many`, in the order of the cases.

    Attributes
    ----------
    cases : the cases as given (their inputs).
    results : per case, its :class:`~flexdyn.SimulationResult`, or None if it failed.
    errors : case index → ``"ExceptionType: message"`` of the members that failed;
        ``"WorkerDied: ..."`` for a member whose worker process ended without a result
        (its exit code or signal, or Dask's ``KilledWorker``).
    """

    cases: list[Mapping[str, Any]]
    results: list[SimulationResult | None]
    errors: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.cases)

    def __repr__(self) -> str:
        return (f"EnsembleResult({len(self)} cases, {len(self) - len(self.errors)} completed, "
                f"{len(self.errors)} failed)")

    @property
    def ok(self) -> np.ndarray:
        """(n,) bool: which members completed."""
        return np.array([r is not None for r in self.results], dtype=bool)

    def final_states(self) -> np.ndarray:
        """(n, nq + nu) the last state ``[q; u]`` of every member (NaN rows for failed
        ones); ``ValueError`` when the members' models differ in size."""
        sizes = {r.q.shape[1] + r.u.shape[1] for r in self.results if r is not None}
        if len(sizes) > 1:
            raise ValueError(f"the members' states differ in size ({sorted(sizes)}); read "
                             "results[i] one by one")
        n = sizes.pop() if sizes else 0
        out = np.full((len(self), n), np.nan)
        for i, r in enumerate(self.results):
            if r is not None:
                out[i] = np.concatenate([r.q[-1], r.u[-1]])
        return out

    def table(self) -> dict[str, np.ndarray]:
        """One table, a column per input and result (``pandas.DataFrame(table())`` makes a
        frame of it): ``case`` (index), each scalar ``params`` entry and scalar case key, ``ok``,
        ``error`` (message or ""), ``t_end`` (s, NaN if failed), and the final ``q:<name>``,
        ``u:<name>`` of the state layout when all members share it."""
        n = len(self)
        columns: dict[str, Any] = {"case": np.arange(n)}
        keys: list[str] = []
        for case in self.cases:
            for key, value in {**case.get("params", {}), **case}.items():
                if key != "params" and np.isscalar(value) and key not in keys:
                    keys.append(key)
        for key in keys:
            columns[key] = np.array([{**c.get("params", {}), **c}.get(key, None)
                                     for c in self.cases], dtype=object)
        columns["ok"] = self.ok
        columns["error"] = np.array([self.errors.get(i, "") for i in range(n)], dtype=object)
        columns["t_end"] = np.array([r.t[-1] if r is not None else np.nan
                                     for r in self.results])
        done = [r for r in self.results if r is not None]
        layouts = {tuple(e.name for e in state_layout(r.model)["q"] + state_layout(r.model)["u"])
                   for r in done}
        if len(layouts) == 1:
            layout = state_layout(done[0].model)
            names = ["q:" + e.name for e in layout["q"]] + ["u:" + e.name for e in layout["u"]]
            for name, column in zip(names, self.final_states().T, strict=True):
                columns[name] = column
        return columns


Member = tuple[int, SimulationResult | None, str]


def _run_member(index: int, model: Model | None, build: Callable | None,
                case: Mapping[str, Any], common: Mapping[str, Any], in_worker: bool = True
                ) -> Member:
    """One member: ``(index, result, "")`` or ``(index, None, error)``.

    Everything the member raises is its own and is reported, ``SystemExit`` included; in
    this process (``in_worker=False``) a ``KeyboardInterrupt`` is the user's and goes on."""
    try:
        options = {**common, **{k: v for k, v in case.items() if k not in ("model", "params")}}
        if "params" in case:
            if build is None:
                raise ValueError("the case has 'params' but simulate_many got no build=")
            member_model = build(**case["params"])
        else:
            member_model = case.get("model", model)
        if member_model is None:
            raise ValueError("no model: give simulate_many(model=...) or a case 'model'")
        return index, simulate(member_model, **options), ""
    except BaseException as exc:  # noqa: BLE001 — reported with the member's inputs
        if isinstance(exc, KeyboardInterrupt) and not in_worker:
            raise
        return index, None, _describe(exc)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _death(exitcode: int | None) -> str:
    """The error of a member whose process ended without a result."""
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"killed by signal {-exitcode}"
    else:
        how = f"exit code {exitcode}"
    return (f"WorkerDied: the process running this member ended without a result ({how}; "
            "os._exit, a crash in compiled code or an out-of-memory kill)")


def _member_process(conn: multiprocessing.connection.Connection, args: tuple) -> None:
    """Body of an isolated member's process: send its ``(index, result, error)`` back."""
    with conn:
        out = _run_member(*args)
        try:
            conn.send(out)
        except BaseException as exc:  # noqa: BLE001 — the result would not pickle
            conn.send((out[0], None, f"{_describe(exc)} (sending the result back)"))


def _run_isolated(args: Sequence[tuple], n: int, collect: Callable[..., None]) -> None:
    """Run each member in a process of its own, ``n`` at a time: a process that ends without
    sending its result back is that member's death alone."""
    ctx = multiprocessing.get_context()
    waiting = list(reversed(args))
    running: dict[Any, tuple[Any, int]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < n:
                a = waiting.pop()
                receive, send = ctx.Pipe(duplex=False)
                process = ctx.Process(target=_member_process, args=(send, a))
                try:
                    process.start()
                except Exception as exc:  # noqa: BLE001 — inputs that do not pickle (spawn)
                    receive.close()
                    collect(a[0], None, _describe(exc))
                    continue
                finally:
                    send.close()
                running[receive] = (process, a[0])
            sentinels = {process.sentinel: conn for conn, (process, _) in running.items()}
            ready = multiprocessing.connection.wait([*running, *sentinels])
            for conn in {sentinels.get(r, r) for r in ready}:
                process, index = running.pop(conn)
                out: Member | None = None
                if conn.poll():  # a result, or the end of the pipe
                    try:
                        out = conn.recv()
                    except EOFError:
                        pass
                    except Exception as exc:  # noqa: BLE001 — a result that does not unpickle
                        out = (index, None, _describe(exc))
                conn.close()
                process.join()
                collect(*(out if out is not None else (index, None, _death(process.exitcode))))
    finally:
        for conn, (process, _) in running.items():  # interrupted: end what still runs
            process.kill()
            process.join()
            conn.close()


#: seconds a Dask rerun waits for the cluster's dead workers to be replaced
_DASK_RECOVERY_S = 60.0
#: seconds to gather a finished Dask member's result before it counts as lost
_DASK_GATHER_S = 30.0
#: times a member's result may be lost with its worker before it is reported
_DASK_LOST_RESULTS = 3


def _killed_worker(exc: BaseException) -> bool:
    return type(exc).__name__ == "KilledWorker"


def _progress(total: int, on: bool):
    if not on:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="run")


def simulate_many(cases: Sequence[Mapping[str, Any]], *, model: Model | None = None,
                  build: Callable[..., Model] | None = None, client: Any = None,
                  workers: int | None = None, progress: bool = False,
                  **common: Any) -> EnsembleResult:
    """Run :func:`flexdyn.simulate` for every case (module docstring) in parallel.

    Parameters
    ----------
    cases : sequence of mappings — per member its ``simulate`` keywords, and ``"model"`` or
        ``"params"`` (keywords of ``build``).
    model : the model of the cases that give none.
    build : ``build(**params) -> Model`` for the cases with ``"params"``.
    client : a :class:`dask.distributed.Client`: the members run as its tasks.  None (the
        default): worker processes on this machine.
    workers : processes (default: the machine's CPUs, at most the number of cases); 1: run
        in this process, one after the other.
    progress : show a progress bar (``tqdm``, if installed).
    common : ``simulate`` keywords for every case (a case's own win).

    Returns
    -------
    :class:`EnsembleResult` — results in the order of ``cases``; failed members in
    ``errors`` with their error (``"WorkerDied: ..."`` for one that ended its worker
    process), the others complete.
    """
    cases = list(cases)
    for i, case in enumerate(cases):
        if not isinstance(case, Mapping):
            raise ValueError(f"cases[{i}] must be a mapping of simulate keywords, got {case!r}")
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    results: list[SimulationResult | None] = [None] * len(cases)
    errors: dict[int, str] = {}
    bar = _progress(len(cases), progress)

    def collect(index: int, result: SimulationResult | None, error: str) -> None:
        results[index] = result
        if error:
            errors[index] = error
        if bar is not None:
            bar.update(1)

    args = [(i, model, build, case, common) for i, case in enumerate(cases)]
    try:
        if client is not None:
            _on_dask(client, args, collect)
        elif workers == 1 or len(cases) <= 1:
            for a in args:
                collect(*_run_member(*a, in_worker=False))
        else:
            n = max(1, min(workers or os.cpu_count() or 1, len(cases)))
            unfinished = _on_pool(n, args, collect)
            _run_isolated([args[i] for i in unfinished], n, collect)
    finally:
        if bar is not None:
            bar.close()
    return EnsembleResult(cases, results, dict(sorted(errors.items())))


def _on_pool(n: int, args: Sequence[tuple], collect: Callable[..., None]) -> list[int]:
    """Run the members on a pool of ``n`` worker processes; return the indices of those that
    did not finish because a worker process died (the pool is then broken)."""
    unfinished = []
    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = {pool.submit(_run_member, *a): a[0] for a in args}
        for future in as_completed(futures):
            try:
                collect(*future.result())
            except BrokenProcessPool:
                unfinished.append(futures[future])
            except Exception as exc:  # noqa: BLE001 — inputs that do not pickle
                collect(futures[future], None, _describe(exc))
    return sorted(unfinished)


def _on_dask(client: Any, args: Sequence[tuple], collect: Callable[..., None]) -> None:
    """Run the members as tasks of a Dask client.

    Dask retries a task whose worker died, and fails with ``KilledWorker`` every task that
    was on the dying workers too often; when several members failed so, they are run again
    one at a time (once the cluster has replaced its dead workers), so that a further death
    is the running member's own."""
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    suspects = _dask_round(client, args, collect)
    if len(suspects) > 1:
        ones = []
        for a, _ in sorted(suspects, key=lambda s: s[0][0]):
            with contextlib.suppress(Exception):  # a worker dead for good: go on with fewer
                client.wait_for_workers(n_workers, timeout=_DASK_RECOVERY_S)
            ones += _dask_round(client, [a], collect)
        suspects = ones
    for a, exc in suspects:
        collect(a[0], None, f"WorkerDied: the Dask worker running this member died "
                            f"({_describe(exc)})")


def _dask_round(client: Any, args: Sequence[tuple], collect: Callable[..., None]
                ) -> list[tuple[tuple, BaseException]]:
    """Run members as Dask tasks and collect them; return those whose workers died
    (``KilledWorker``) uncollected.

    Under workers' deaths a client can miss the end of a task (its result lost with the
    worker, or its report): when nothing has finished for :data:`_DASK_GATHER_S`, a member
    the scheduler no longer runs or holds is submitted again (at most
    :data:`_DASK_LOST_RESULTS` times)."""
    from distributed import wait

    futures = {client.submit(_run_member, *a, pure=False): a for a in args}
    lost = dict.fromkeys((a[0] for a in args), 0)
    killed = []

    def again(future: Any) -> None:
        a = futures.pop(future)
        lost[a[0]] += 1
        if lost[a[0]] > _DASK_LOST_RESULTS:
            collect(a[0], None, f"WorkerDied: the result of this member was lost with its "
                                f"Dask worker {lost[a[0]]} times")
        else:
            futures[client.submit(_run_member, *a, pure=False)] = a

    while futures:
        done, _ = wait(list(futures), timeout=_DASK_GATHER_S, return_when="FIRST_COMPLETED")
        if not done:
            states = client.run_on_scheduler(_task_states, keys=[f.key for f in futures])
            for future in [f for f in futures if states.get(f.key) not in _DASK_ACTIVE]:
                again(future)
            continue
        for future in done:
            a = futures[future]
            try:
                out = future.result(timeout=_DASK_GATHER_S)
            except TimeoutError:  # finished, but its result went with its worker
                again(future)
                continue
            except Exception as exc:  # noqa: BLE001 — reported, the others go on
                if _killed_worker(exc):
                    killed.append((a, exc))
                else:  # the task itself failed: inputs that do not pickle
                    collect(a[0], None, _describe(exc))
            else:
                collect(*out)
            del futures[future]  # gathered: the cluster may forget the task
    return killed


#: scheduler states of a task still on its way to a result
_DASK_ACTIVE = ("released", "waiting", "queued", "processing", "no-worker")


def _task_states(dask_scheduler: Any, keys: Sequence[str]) -> dict[str, str]:
    """On the scheduler: the state of each task in ``keys`` (absent: forgotten)."""
    return {k: dask_scheduler.tasks[k].state for k in keys if k in dask_scheduler.tasks}
