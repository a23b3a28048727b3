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

Everything a case holds travels to the workers by pickling: models and results pickle;
callables (``tau``, ``build``) must be module-level functions (not lambdas) for processes
and clusters (``workers=1`` runs in this process and takes anything).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
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
    errors : case index → ``"ExceptionType: message"`` of the members that failed.
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


def _run_member(index: int, model: Model | None, build: Callable | None,
                case: Mapping[str, Any], common: Mapping[str, Any]
                ) -> tuple[int, SimulationResult | None, str]:
    """One member (in a worker): ``(index, result, "")`` or ``(index, None, error)``."""
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
    except Exception as exc:  # noqa: BLE001 — reported with the member's inputs
        return index, None, f"{type(exc).__name__}: {exc}"


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
    ``errors`` with their error, the others complete.
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

    def gather(futures: dict, completed: Callable) -> None:
        """Collect finished members; a member whose task itself failed (its inputs would not
        pickle, its worker died) is reported like one that raised."""
        for future in completed(list(futures)):
            try:
                collect(*future.result())
            except Exception as exc:  # noqa: BLE001 — reported, the others go on
                collect(futures[future], None, f"{type(exc).__name__}: {exc}")

    try:
        if client is not None:
            from distributed import as_completed as dask_completed

            gather({client.submit(_run_member, *a, pure=False): a[0] for a in args},
                   dask_completed)
        elif workers == 1 or len(cases) <= 1:
            for a in args:
                collect(*_run_member(*a))
        else:
            n = min(workers or os.cpu_count() or 1, len(cases))
            with ProcessPoolExecutor(max_workers=max(1, n)) as pool:
                gather({pool.submit(_run_member, *a): a[0] for a in args}, as_completed)
    finally:
        if bar is not None:
            bar.close()
    return EnsembleResult(cases, results, dict(sorted(errors.items())))

