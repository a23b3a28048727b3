"""Animations of simulation results: the deformed bodies as a stick-and-node drawing, in 3-D
or in the plane of a planar model, written as a GIF (matplotlib and Pillow) or an MP4
(matplotlib and the ffmpeg binary of ``imageio-ffmpeg`` from the package index; no system
ffmpeg is assumed).  Extra ``animation``.

Each body is drawn as the polyline from its frame's origin through its nodes, deformed
(node positions of the result's body model, the elastic displacements scaled by
``exaggerate``), with a marker at the origin (where its joint puts it); a rigid body
without nodes is its origin and a line to each child's origin.  ``exaggerate`` scales each
body's own drawing only: a child hangs where the true deformation puts it.

The axes, their ticks and the legend are drawn once; each frame redraws only the sticks and
the title over that background (blitting) and hands the pixels to the file's encoder.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .files import write_atomically
from .terms import state_terms

__all__ = ["VIEWS", "animate", "frame_points", "planar_view"]

#: The views of :func:`animate`: the 3-D drawing, or the projection on a coordinate plane
#: (horizontal axis first).
VIEWS = ("3d", "xy", "xz", "yz")

#: A coordinate whose range over every drawn point is at most this fraction of the largest
#: range is taken as constant by :func:`planar_view`.
PLANAR_TOLERANCE = 1e-9


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


def planar_view(points: np.ndarray) -> str | None:
    """The coordinate plane (``"xy"``, ``"xz"`` or ``"yz"``) that holds every one of
    ``points`` (n, 3), or None when they span all three directions.

    A coordinate is constant when its range is at most :data:`PLANAR_TOLERANCE` times the
    largest range; when two are (the points on a line) the plane is the one of the moving
    coordinate and the next one of x, y, z.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    extent = np.ptp(points, axis=0)
    flat = extent <= PLANAR_TOLERANCE * max(float(extent.max()), np.finfo(float).tiny)
    if not flat.any():
        return None
    if flat.sum() == 1:
        plane = np.flatnonzero(~flat)
    else:  # on a line (or at a point)
        moving = int(np.argmax(~flat))
        plane = sorted({moving, (moving + 1) % 3})
    return "".join("xyz"[c] for c in plane)


def _encoder(path: Path, fps: float) -> Callable[[Iterator[np.ndarray], tuple[int, int]], None]:
    """``encode(frames, (width, height))``: writes the RGBA frames (height, width, 4) to
    ``path`` through ``flexdyn.files.write_atomically``, as the suffix of ``path``
    says."""
    suffix = path.suffix.lower()
    if suffix == ".gif":
        from PIL import Image

        def gif(frames: Iterator[np.ndarray], size: tuple[int, int]) -> None:
            # one palette for every frame, that of the first (where every body is drawn), each
            # frame kept with one byte a pixel until the file is written
            images, palette = [], None
            for frame in frames:
                rgb = Image.frombuffer("RGBA", size, frame, "raw", "RGBA", 0, 1).convert("RGB")
                if palette is None:
                    palette = rgb.quantize(256)
                images.append(rgb.quantize(palette=palette, dither=Image.Dither.NONE))
            write_atomically(path, lambda fh: images[0].save(
                fh, format="GIF", save_all=True, append_images=images[1:],
                duration=round(1000 / fps), loop=0), binary=True)

        return gif
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg
        except ImportError:
            raise ImportError("an MP4 needs the ffmpeg of imageio-ffmpeg: pip install "
                              "'flexdyn[animation]' (or write a .gif)") from None

        def mp4(frames: Iterator[np.ndarray], size: tuple[int, int]) -> None:
            # ffmpeg writes a file of its own: encoded beside, then copied into place
            with tempfile.TemporaryDirectory() as folder:
                movie = Path(folder) / "movie.mp4"
                sink = imageio_ffmpeg.write_frames(
                    str(movie), size, fps=fps, codec="libx264", pix_fmt_in="rgba",
                    pix_fmt_out="yuv420p", macro_block_size=2, ffmpeg_log_level="error")
                sink.send(None)
                for frame in frames:
                    sink.send(np.ascontiguousarray(frame))
                sink.close()
                with movie.open("rb") as source:
                    write_atomically(path, lambda fh: shutil.copyfileobj(source, fh),
                                     binary=True)

        return mp4
    raise ValueError(f"{path}: the animation is written as .gif or .mp4, got {suffix!r}")


def animate(result: Any, path: str | Path, *, fps: float = 20.0, frames: int | None = None,
            exaggerate: float = 1.0, size: tuple[float, float] = (6.0, 6.0),
            dpi: int = 80, view: str | None = None, elev: float = 25.0,
            azim: float = -60.0) -> Path:
    """Write an animation of ``result`` (a :class:`~flexdyn.SimulationResult`) to ``path``
    (``.gif`` or ``.mp4``) and return the path.

    Parameters
    ----------
    fps : frames per second of the file.
    frames : number of frames, spread evenly over the samples (default: every sample, at
        most 200).
    exaggerate : scale of the elastic displacements in the drawing (1: true size).
    size, dpi : figure size (inches) and resolution.
    view : ``"3d"``, or a coordinate plane (``"xy"``, ``"xz"``, ``"yz"``; horizontal axis
        first) to draw the projection on; default: the plane of a planar motion (every
        drawn point in one coordinate plane, :func:`planar_view`), else 3-D.
    elev, azim : the 3-D view (degrees).

    The file is written through ``flexdyn.files.write_atomically``: ``path`` is
    replaced only by a complete file.  ``ImportError`` naming the extra without matplotlib
    (or, for MP4, imageio-ffmpeg); ``ValueError`` for another suffix, an unknown view or an
    empty result.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("animations need matplotlib: pip install 'flexdyn[animation]'"
                          ) from None
    path = Path(path)
    encode = _encoder(path, fps)
    if view is not None and view not in VIEWS:
        raise ValueError(f"view {view!r}: expected one of {', '.join(VIEWS)} (or None: "
                         "the plane of a planar motion, else 3d)")
    n = len(result.t)
    if n == 0:
        raise ValueError("the result has no samples to animate")
    count = min(n, 200) if frames is None else max(1, min(int(frames), n))
    samples = np.unique(np.linspace(0, n - 1, count).round().astype(int))
    sticks = [frame_points(result, int(k), exaggerate) for k in samples]
    every = np.concatenate([p for frame in sticks for p in frame])
    if view is None:
        view = planar_view(every) or "3d"
    axes = [0, 1, 2] if view == "3d" else ["xyz".index(a) for a in view]
    centre = (every.max(axis=0) + every.min(axis=0)) / 2
    half = max(float(np.max(np.ptp(every[:, axes], axis=0))) / 2, 1e-3) * 1.1

    fig = Figure(figsize=size, dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    # the title is the figure's, above the axes: a 3-D axes' own title is cut at the top
    title = fig.text(0.5, 0.985, "", ha="center", va="top", wrap=True, animated=True)
    if view == "3d":
        ax = fig.add_axes((0.0, 0.0, 1.0, 0.92), projection="3d")
        ax.view_init(elev=elev, azim=azim)
        ax.set_box_aspect((1, 1, 1))
    else:
        ax = fig.add_axes((0.15, 0.1, 0.8, 0.8))
        ax.set_aspect("equal", adjustable="box")
        ax.grid(True, linewidth=0.5, alpha=0.5)
    for which, c in zip("xyz", axes, strict=False):
        getattr(ax, f"set_{which}lim")(centre[c] - half, centre[c] + half)
        getattr(ax, f"set_{which}label")(f"{'xyz'[c]} (m)")
    lines = [ax.plot(*([[]] * len(axes)), "-o", markersize=3, label=b.name, animated=True)[0]
             for b in result.model.bodies]
    if len(lines) <= 8:
        ax.legend(loc="upper left", fontsize="small")
    canvas.draw()  # axes, ticks, legend: the background of every frame
    background = canvas.copy_from_bbox(fig.bbox)
    scaled = f" (deformation × {exaggerate:g})" if exaggerate != 1 else ""

    def render() -> Iterator[np.ndarray]:
        for f, k in enumerate(samples):
            canvas.restore_region(background)
            for line, points in zip(lines, sticks[f], strict=True):
                if view == "3d":
                    line.set_data_3d(points[:, 0], points[:, 1], points[:, 2])
                else:
                    line.set_data(points[:, axes[0]], points[:, axes[1]])
                ax.draw_artist(line)
            title.set_text(f"{result.model.name}: t = {result.t[k]:.3f} s{scaled}")
            fig.draw_artist(title)
            yield np.asarray(canvas.buffer_rgba())

    encode(render(), canvas.get_width_height())
    return path
