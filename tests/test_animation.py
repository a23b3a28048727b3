"""Animations (:mod:`flexdyn.animation`): GIF and MP4 files of the arm and the spacecraft,
and the drawn geometry against the result's own node positions."""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.animation import frame_points
from helpers import rel_err

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def arm_run() -> fd.SimulationResult:
    arm = fd.models.two_link_arm()
    return fd.simulate(arm, t_span=(0.0, 1.0), tau=fd.models.slew_torque(arm, duration=0.8),
                       t_eval=np.linspace(0.0, 1.0, 11))


def test_sticks_are_the_deformed_nodes(arm_run):
    """Each stick runs from the body's origin through its deformed nodes: the last point is
    the result's tip position; ``exaggerate`` scales the elastic displacement only."""
    k = 7
    sticks = frame_points(arm_run, k)
    assert len(sticks) == 2 and sticks[1].shape == (8, 3)
    assert rel_err(sticks[1][-1], arm_run.tip_position("link2")[k]) < 1e-14
    assert rel_err(sticks[1][0], arm_run.body_pose("link2", k).p) < 1e-14
    pose = arm_run.body_pose("link1", k)
    big = frame_points(arm_run, k, exaggerate=10.0)[0][-1]
    deflection = pose.R.T @ (sticks[0][-1] - big)
    assert rel_err(-deflection / 9.0, arm_run.deflection("link1")[k]) < 1e-12


def test_gif_of_the_arm_and_the_spacecraft(arm_run, tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    path = arm_run.animate(tmp_path / "arm.gif", frames=6, dpi=40, exaggerate=5)
    with PIL.open(path) as im:
        assert im.format == "GIF" and im.n_frames == 6
    sc = fd.models.spacecraft()
    u0 = np.zeros(sc.nu)
    u0[2] = 0.2
    run = fd.simulate(sc, u0=u0, t_span=(0.0, 1.0), t_eval=np.linspace(0.0, 1.0, 5))
    with PIL.open(run.animate(tmp_path / "spacecraft.gif", dpi=40)) as im:
        assert im.n_frames == 5


def test_mp4_and_errors(arm_run, tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    path = arm_run.animate(tmp_path / "arm.mp4", frames=4, dpi=40)
    assert path.read_bytes()[4:8] == b"ftyp"  # an MP4 container
    with pytest.raises(ValueError, match=r"written as \.gif or \.mp4, got '\.avi'"):
        arm_run.animate(tmp_path / "arm.avi")
