"""Time to write an animation (:func:`flexdyn.animation.animate`) of 81 frames at the default
size (6 × 6 in at 80 dpi): the two-link arm's slew in its plane and in 3-D, a tumbling
spacecraft in 3-D, as GIF and (with imageio-ffmpeg) MP4.  The simulations are run first and
not timed; each figure is the best of ``--repeat`` writes.

The load average is printed beside the figures: on a 2-core machine a load above 2 stretches
every figure.

Usage: ``python benchmarks/bench_animation.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import flexdyn as fd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    print("load " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    t_eval = np.linspace(0.0, 4.0, 81)
    arm = fd.models.two_link_arm()
    slew = fd.simulate(arm, t_span=(0.0, 4.0), t_eval=t_eval,
                       tau=fd.models.slew_torque(arm, duration=3.0, angle=0.5))
    sc = fd.models.spacecraft()
    u0 = np.zeros(sc.nu)
    u0[:3] = [0.1, 0.0, 0.2]
    tumble = fd.simulate(sc, u0=u0, t_span=(0.0, 4.0), t_eval=t_eval)
    cases = [("arm, its plane", slew, {}), ("arm, 3-D", slew, {"view": "3d"}),
             ("spacecraft, 3-D", tumble, {})]
    suffixes = [".gif"] + ([".mp4"] if importlib.util.find_spec("imageio_ffmpeg") else [])
    with tempfile.TemporaryDirectory() as folder:
        slew.animate(Path(folder) / "warm.gif", frames=2)  # matplotlib's first-use costs
        for what, result, options in cases:
            for suffix in suffixes:
                best = float("inf")
                for _ in range(repeat):
                    wall = time.perf_counter()
                    result.animate(Path(folder) / f"movie{suffix}", **options)
                    best = min(best, time.perf_counter() - wall)
                print(f"{what:<18} {suffix}  {best:6.2f} s for 81 frames "
                      f"({1e3 * best / 81:.1f} ms a frame, best of {repeat})")


if __name__ == "__main__":
    main()
