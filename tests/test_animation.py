"""Animations (:mod:`flexdyn.animation`): GIF and MP4 files of the arm and the spacecraft,
the drawn geometry against the result's own node positions, the plane of a planar motion
and the drawing's pixels."""

from __future__ import annotations

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.animation import frame_points, planar_view
from helpers import rel_err
from strategies import random_rotation

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
    # 241 × 240 pixels: libx264's 4:2:0 needs even sizes, the encoder pads the odd one
    path = arm_run.animate(tmp_path / "arm.mp4", frames=4, dpi=40, size=(6.025, 6.0))
    assert path.read_bytes()[4:8] == b"ftyp"  # an MP4 container
    assert [p.name for p in tmp_path.iterdir()] == ["arm.mp4"]  # no temporary file left
    with pytest.raises(ValueError, match=r"written as \.gif or \.mp4, got '\.avi'"):
        arm_run.animate(tmp_path / "arm.avi")
    with pytest.raises(ValueError, match=r"view 'xyz': expected one of 3d, xy, xz, yz"):
        arm_run.animate(tmp_path / "arm.gif", view="xyz")
    assert not (tmp_path / "arm.gif").exists()


def test_planar_view_of_points():
    """The coordinate plane that holds every point, whatever the points' spread in it; None
    once one point leaves it by more than round-off; a line lies in the plane of its
    coordinate and the next one."""
    rng = np.random.default_rng(7)
    for normal, plane in ((2, "xy"), (1, "xz"), (0, "yz")):
        points = rng.normal(size=(50, 3)) * 10.0 ** rng.uniform(-3, 3, size=3)
        points[:, normal] = rng.normal()  # any constant offset of the plane
        assert planar_view(points) == plane
        points[17, normal] += 1e-6 * np.ptp(points, axis=0).max()
        assert planar_view(points) is None
    line = np.zeros((4, 3))
    line[:, 2] = [0.0, 1.0, 2.0, 5.0]
    assert planar_view(line) == "xz"
    assert planar_view(np.ones((3, 3))) == "xy"
    assert planar_view(rng.normal(size=(5, 3)) @ random_rotation(rng)) is None


def _blue_rows_and_columns(gif, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the pixels of ``frame`` drawn in the first body's colour
    (matplotlib's C0, #1f77b4), below the top fifth (the legend's)."""
    gif.seek(frame)
    rgb = np.asarray(gif.convert("RGB")).astype(int)
    near = np.abs(rgb - [0x1F, 0x77, 0xB4]).max(axis=-1) < 40
    near[:rgb.shape[0] // 5] = False
    rows, cols = np.nonzero(near)
    return rows, cols


def test_planar_models_are_drawn_in_their_plane(arm_run, tmp_path):
    """The arm moves in the x-y plane: by default it is drawn in that plane, where at t = 0
    its first link lies along x, a horizontal row of pixels (in the 3-D view the same link is
    drawn as a slanted line); the title sits inside the figure, below its top edge and
    between its sides."""
    PIL = pytest.importorskip("PIL.Image")
    every = np.concatenate([p for k in range(len(arm_run)) for p in frame_points(arm_run, k)])
    assert planar_view(every) == "xy"
    flat = arm_run.animate(tmp_path / "flat.gif", frames=3, dpi=50)
    slanted = arm_run.animate(tmp_path / "slanted.gif", frames=3, dpi=50, view="3d")
    with PIL.open(flat) as im:
        rows, cols = _blue_rows_and_columns(im, 0)
        assert np.ptp(cols) > 60 and np.ptp(rows) < 8  # markers 3 pt across
        im.seek(0)
        gray = np.asarray(im.convert("L"))
        dark = np.nonzero(gray.min(axis=1) < 128)[0]  # rows that hold text or lines
        assert dark[0] > 0 and dark[0] < 0.06 * gray.shape[0]  # the title, not cut at the top
    with PIL.open(slanted) as im:
        rows, cols = _blue_rows_and_columns(im, 0)
        assert np.ptp(cols) > 20 and np.ptp(rows) > 10
    # a title longer than a small figure is wide wraps rather than running off its sides
    small = arm_run.animate(tmp_path / "small.gif", frames=1, dpi=60, size=(3.0, 3.0),
                            exaggerate=5)
    with PIL.open(small) as im:
        top = np.asarray(im.convert("L"))[:25]
        assert top.min() < 128 and top[:, :2].min() > 200 and top[:, -2:].min() > 200


def test_motion_out_of_every_coordinate_plane_is_drawn_in_3d(tmp_path):
    """The arm with its shoulder axis turned to a random direction sweeps a cone: the
    default view is 3-D; ``view="xz"`` draws the projection on the x-z plane."""
    d = fd.models.two_link_arm().to_dict()
    d["bodies"][0]["joint"]["axis"] = random_rotation(np.random.default_rng(3))[:, 0].tolist()
    arm = fd.Model.from_dict(d)
    run = fd.simulate(arm, u0=np.eye(arm.nu)[0], t_span=(0.0, 1.0),
                      t_eval=np.linspace(0.0, 1.0, 4))
    every = np.concatenate([p for k in range(4) for p in frame_points(run, k)])
    assert planar_view(every) is None
    assert run.animate(tmp_path / "xz.gif", view="xz", dpi=30).stat().st_size > 0
