"""Developer instruments for flexdyn's benchmarks (not part of the installed package).

* :mod:`flexdyn_bench.costs` — the operation-count polynomials of Jain & Rodriguez (1992),
  Sec VII and Fig 2;
* :mod:`flexdyn_bench.opcount` — counts the multiplications and additions that flexdyn's
  reference tier performs, through the observation seam of :mod:`flexdyn.linalg` and counting
  copies of the data (nothing of flexdyn is patched).

The scripts in ``benchmarks/`` import it from their own folder (``sys.path[0]``); the tests
put ``benchmarks/`` on ``sys.path`` themselves.
"""
