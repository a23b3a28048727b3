"""Failures timed: ensembles whose members kill their workers, and hostile result files.

* **process pool**: five good members of the two-link arm alone, then with a member that
  calls ``os._exit``, one that crashes (segmentation fault) and one that calls ``sys.exit``
  (``workers=2``): wall time, members completed, members reported;
* **Dask** (``--dask``; a local cluster of two single-thread worker processes, the
  scheduler's default of three retries): the same ensemble, then a clean one on the same
  client;
* **hostile ``.npz`` results**: a 383 MB ``t`` of zeros stored in under a megabyte beside a
  result of six samples, a header claiming 10⁹ samples, a model nested 100,000 deep, a
  ``t`` of NaN: wall time of ``SimulationResult.from_npz`` until its ``ValueError`` and the
  peak of the memory it allocated (``tracemalloc``).

The load average is printed beside the figures: on a 2-core machine a load above 2 stretches
every figure.

Usage: ``python benchmarks/bench_failures.py [--dask]``
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import io
import os
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np

import flexdyn as fd

T_SPAN = (0.0, 0.05)


def exits(t, q, u):
    os._exit(1)


def crashes(t, q, u):
    faulthandler.disable()
    ctypes.string_at(0)


def leaves(t, q, u):
    sys.exit(3)


def cases() -> tuple[list[dict], list[dict]]:
    good = [{"q0": np.array([0.1 * k, -0.05 * k, 0.0, 0.0])} for k in range(5)]
    bad = list(good)
    bad.insert(1, {"tau": exits})
    bad.insert(3, {"tau": crashes})
    bad.insert(5, {"tau": leaves})
    return good, bad


def report(label: str, run) -> None:
    start = time.perf_counter()
    ens = run()
    wall = time.perf_counter() - start
    print(f"  {label:<44} {wall:7.2f} s   {int(ens.ok.sum())} completed, "
          f"{len(ens.errors)} reported: " + ", ".join(
              f"{i}: {e.split(':')[0]}" for i, e in ens.errors.items()))


def ensembles(dask: bool) -> None:
    arm = fd.models.two_link_arm()
    good, bad = cases()
    print("process pool (workers=2):")
    report("5 good members", lambda: fd.simulate_many(good, model=arm, t_span=T_SPAN,
                                                      workers=2))
    report("5 good + os._exit + SIGSEGV + sys.exit", lambda: fd.simulate_many(
        bad, model=arm, t_span=T_SPAN, workers=2))
    if not dask:
        return
    import logging

    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    bad = [c for c in bad if c.get("tau") is not crashes]
    print("Dask (2 worker processes, 1 thread each, 3 retries):")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        report("5 good members", lambda: fd.simulate_many(good, model=arm, t_span=T_SPAN,
                                                          client=client))
        report("5 good + os._exit + sys.exit", lambda: fd.simulate_many(
            bad, model=arm, t_span=T_SPAN, client=client))
        report("5 good, same client after the failures", lambda: fd.simulate_many(
            good, model=arm, t_span=T_SPAN, client=client))


def _entries(folder: Path) -> dict[str, np.ndarray]:
    result = fd.simulate(fd.models.two_link_arm(), t_span=T_SPAN,
                         t_eval=np.linspace(*T_SPAN, 6))
    result.to_npz(folder / "good.npz")
    with np.load(folder / "good.npz") as d:
        return {k: d[k] for k in d.files}


def _write(path: Path, arrays: dict, big_t: int = 0, lying_t: bool = False) -> Path:
    """``arrays`` as an ``.npz``; ``big_t``: a ``t`` of that many zeros written in pieces (never
    held in memory); ``lying_t``: ``t``'s header claims 10⁹ samples."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, value in arrays.items():
            if name == "t" and big_t:
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header, {"descr": "<f8", "fortran_order": False, "shape": (big_t,)})
                with z.open("t.npy", "w", force_zip64=True) as fh:
                    fh.write(header.getvalue())
                    chunk = bytes(2**20)
                    for start in range(0, 8 * big_t, len(chunk)):
                        fh.write(chunk[:min(len(chunk), 8 * big_t - start)])
                continue
            buf = io.BytesIO()
            np.lib.format.write_array(buf, value)
            data = buf.getvalue()
            if name == "t" and lying_t:
                data = data.replace(b"(6,)", b"(1000000000,)".ljust(13), 1)
            z.writestr(f"{name}.npy", data)
    return path


def hostile_files() -> None:
    print("hostile .npz results (SimulationResult.from_npz until its ValueError):")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        arrays = _entries(folder)
        files = {
            "t of 383 MB of zeros beside 6 samples": _write(folder / "big.npz", arrays,
                                                            big_t=383_000_000 // 8),
            "t's header claims 1e9 samples": _write(folder / "lying.npz", arrays,
                                                    lying_t=True),
            "model nested 100,000 deep": _write(folder / "deep.npz", {
                **arrays, "model": np.array("[" * 100_000 + "]" * 100_000)}),
            "t all NaN": _write(folder / "nan.npz", {**arrays, "t": np.full(6, np.nan)}),
        }
        for label, path in files.items():
            tracemalloc.start()
            start = time.perf_counter()
            try:
                fd.SimulationResult.from_npz(path)
                outcome = "loaded"
            except ValueError as exc:
                outcome = "ValueError: " + str(exc).split(": ", 1)[1][:60]
            wall = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"  {label:<40} file {path.stat().st_size / 1e6:6.2f} MB  {wall * 1e3:8.1f} ms"
                  f"  peak {peak / 1e6:6.2f} MB  {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dask", action="store_true", help="time a local Dask cluster too")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    ensembles(args.dask)
    hostile_files()


if __name__ == "__main__":
    main()
