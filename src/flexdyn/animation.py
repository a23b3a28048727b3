"""Animations of simulation results: the deformed bodies as a 3-D stick-and-node drawing,
written as a GIF (matplotlib and Pillow) or an MP4 (matplotlib and the ffmpeg binary of
``imageio-ffmpeg`` from the package index; no system ffmpeg is assumed).  Extra
``animation``.

Each body is drawn as the polyline from its frame's origin through its nodes, deformed
(node positions of the result's body model, the elastic displacements scaled by
``exaggerate``), with a marker at the origin (where its joint puts it); a rigid body
without nodes is its origin and a line to each child's origin.  ``exaggerate`` scales each
body's own drawing only: a child hangs where the true deformation puts it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .files import file_mode
from .terms import state_terms

__all__ = ["animate", "frame_points"]


def frame_points(result: Any, k: int, exaggerate: float = 1.0) -> list[np.ndarray]:
    """Per body, the points (n, 3) of its stick at sample ``k`` of ``result`` (inertial
    frame, m): its frame's origin, then its nodes deformed with the elastic displacements
    times ``exaggerate`` (for a rigid body: the origins of its children)."""
    model = result.model
    pos = state_terms(model, result.q[k], None, result.fidelity)[0]
    sticks = []
    for i, body in enumerate(model.bodies):
        pose = pos.pose[i]
        if body.n_nodes:
            local = body.nodes + exaggerate * (pos.frames[i].p - body.nodes)
            points = [pose.p, *(pose.apply(p) for p in local)]
        else:
            points = [pose.p, *(pos.pose[c].p for c in range(model.n_bodies)
                                if int(model.parent[c]) == i)]
        sticks.append(np.array(points))
    return sticks


def _writer(path: Path, fps: float):
    """The matplotlib writer for the suffix of ``path``."""
    from matplotlib import animation

    suffix = path.suffix.lower()
    if suffix == ".gif":
        return animation.PillowWriter(fps=fps)
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg
        except ImportError:
            raise ImportError("an MP4 needs the ffmpeg of imageio-ffmpeg: pip install "
                              "'flexdyn[animation]' (or write a .gif)") from None
        import matplotlib

        matplotlib.rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()
        return animation.FFMpegWriter(fps=fps, codec="libx264",
                                      extra_args=["-pix_fmt", "yuv420p"])
    raise ValueError(f"{path}: the animation is written as .gif or .mp4, got {suffix!r}")


def animate(result: Any, path: str | Path, *, fps: float = 20.0, frames: int | None = None,
            exaggerate: float = 1.0, size: tuple[float, float] = (6.0, 6.0),
            dpi: int = 80, elev: float = 25.0, azim: float = -60.0) -> Path:
    """Write an animation of ``result`` (a :class:`~flexdyn.SimulationResult`) to ``path``
    (``.gif`` or ``.mp4``) and return the path.

    Parameters
    ----------
    fps : frames per second of the file.
    frames : number of frames, spread evenly over the samples (default: every sample, at
        most 200).
    exaggerate : scale of the elastic displacements in the drawing (1: true size).
    size, dpi : figure size (inches) and resolution.
    elev, azim : the 3-D view (degrees).

    The file is written to a temporary name in the destination's folder and moved onto
    ``path`` when complete.  ``ImportError`` naming the extra without matplotlib (or, for
    MP4, imageio-ffmpeg); ``ValueError`` for another suffix or an empty result.
    """
    try:
        from matplotlib import animation
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("animations need matplotlib: pip install 'flexdyn[animation]'"
                          ) from None
    path = Path(path)
    writer = _writer(path, fps)
    n = len(result.t)
    if n == 0:
        raise ValueError("the result has no samples to animate")
    count = min(n, 200) if frames is None else max(1, min(int(frames), n))
    samples = np.unique(np.linspace(0, n - 1, count).round().astype(int))
    sticks = [frame_points(result, int(k), exaggerate) for k in samples]
    every = np.concatenate([p for frame in sticks for p in frame])
    centre = (every.max(axis=0) + every.min(axis=0)) / 2
    half = max(float(np.max(every.max(axis=0) - every.min(axis=0))) / 2, 1e-3) * 1.1

    fig = Figure(figsize=size, dpi=dpi)
    ax = fig.add_subplot(projection="3d")
    ax.view_init(elev=elev, azim=azim)
    for c, setter in zip(centre, (ax.set_xlim, ax.set_ylim, ax.set_zlim), strict=True):
        setter(c - half, c + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    lines = [ax.plot([], [], [], "-o", markersize=3, label=b.name)[0]
             for b in result.model.bodies]
    title = ax.set_title("")
    if len(lines) <= 8:
        ax.legend(loc="upper left", fontsize="small")

    def draw(f: int) -> list:
        for line, points in zip(lines, sticks[f], strict=True):
            line.set_data_3d(points[:, 0], points[:, 1], points[:, 2])
        title.set_text(f"{result.model.name}: t = {result.t[samples[f]]:.3f} s"
                       + (f" (deformation × {exaggerate:g})" if exaggerate != 1 else ""))
        return [*lines, title]

    movie = animation.FuncAnimation(fig, draw, frames=len(samples), blit=False)
    folder = path.parent if str(path.parent) else Path(".")
    fd_, tmp = tempfile.mkstemp(suffix=path.suffix, dir=folder)
    os.close(fd_)
    try:
        movie.save(tmp, writer=writer)
        os.chmod(tmp, file_mode(path))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
