"""Files flexdyn writes and reads back under hostile conditions.

Writes: every writer replaces its destination in one step (a symbolic link is replaced, not
written through; set-user-ID and set-group-ID bits are not kept; ``overwrite=False``
refuses an existing file), and ``build_fmu`` leaves a good FMU intact when its write fails
half-way.  Reads: ``SimulationResult.from_npz`` checks every entry's header before
inflating it and turns crafted files into ``ValueError``s naming the file and the entry.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import flexdyn as fd
from flexdyn import files
from flexdyn.fmu import SLAVE_SOURCE, _class_name, build_fmu


@pytest.fixture(scope="module")
def arm() -> fd.Model:
    return fd.models.two_link_arm()


@pytest.fixture(scope="module")
def result(arm) -> fd.SimulationResult:
    return fd.simulate(arm, t_span=(0.0, 0.05), t_eval=np.linspace(0.0, 0.05, 6))


WRITERS = {
    "save_model": lambda res, path, **kw: fd.save_model(res.model, path, **kw),
    "to_csv": lambda res, path, **kw: res.to_csv(path, **kw),
    "to_npz": lambda res, path, **kw: res.to_npz(path, **kw),
}


def dot_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ---------------------------------------------------------------------------------------------
# writes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_symlink_is_replaced_and_set_id_bits_are_not_kept(writer, result, tmp_path):
    """Writing onto a link to a mode-4755 file: the target keeps its bytes and mode, the
    link becomes a regular file without set-user-ID bit."""
    target = tmp_path / "victim"
    target.write_bytes(b"do not touch")
    target.chmod(0o4755)
    link = tmp_path / "out"
    link.symlink_to(target)
    WRITERS[writer](result, link)
    assert target.read_bytes() == b"do not touch"
    assert stat.S_IMODE(target.stat().st_mode) == 0o4755
    st = os.lstat(link)
    assert stat.S_ISREG(st.st_mode)
    assert st.st_mode & (stat.S_ISUID | stat.S_ISGID) == 0
    assert dot_files(tmp_path) == []


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_replacing_a_set_id_file_drops_the_bits_and_keeps_the_rest(writer, result, tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b"old")
    path.chmod(0o6750)
    WRITERS[writer](result, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert path.read_bytes() != b"old"


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_overwrite_false_refuses_an_existing_file_or_link(writer, result, tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b"old")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    for existing in (path, dangling):
        with pytest.raises(FileExistsError, match="overwrite=True"):
            WRITERS[writer](result, existing, overwrite=False)
    assert path.read_bytes() == b"old"
    assert os.readlink(dangling) == str(tmp_path / "nowhere")
    fresh = tmp_path / "fresh"
    WRITERS[writer](result, fresh, overwrite=False)
    assert fresh.stat().st_size > 0
    assert dot_files(tmp_path) == []


def test_the_content_is_on_disk_before_the_file_appears(tmp_path, monkeypatch):
    """``fsync`` of the temporary file comes before the move onto the destination."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd_: (events.append("fsync"), real_fsync(fd_)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"),
                                                     real_replace(a, b)))
    files.write_atomically(tmp_path / "f.txt", lambda fh: fh.write("x"))
    assert events == ["fsync", "replace"]


# ---------------------------------------------------------------------------------------------
# FMU
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["none", "None", "true", "false", "path", "real", "class",
                                  "json", "fmi2slave", "pythonfmu", "flexdyn", "1st arm",
                                  "", "名前", "a-b c"])
def test_every_model_name_gives_a_valid_slave_module(name):
    """The generated module compiles and defines the slave class without shadowing the
    names it uses (``none`` once gave ``class None``, ``path`` a class hiding ``Path``)."""
    pythonfmu = pytest.importorskip("pythonfmu")
    cls = _class_name(name)
    assert cls.isidentifier() and cls.isascii() and cls[0].isalpha()
    namespace: dict = {}
    exec(compile(SLAVE_SOURCE.format(name=cls, description=f"model {name!r}"), "<slave>",
                 "exec"), namespace)
    assert issubclass(namespace[cls], pythonfmu.Fmi2Slave)
    assert namespace["pythonfmu"] is pythonfmu and namespace["flexdyn"] is fd
    assert namespace["json"] is json and namespace["pathlib"].Path is Path


def test_an_existing_fmu_is_refused_before_building(arm, tmp_path):
    """With ``overwrite=False`` the folder's ``<Name>.fmu``, a named FMU and a dangling link
    named ``.FMU`` (upper case: an FMU path, not a folder) are refused; nothing is
    created."""
    pytest.importorskip("pythonfmu")
    (tmp_path / "TwoLinkArm.fmu").write_bytes(b"old")
    (tmp_path / "other.FMU").symlink_to(tmp_path / "nowhere")
    for path in (tmp_path, tmp_path / "TwoLinkArm.fmu", tmp_path / "other.FMU"):
        with pytest.raises(FileExistsError, match="overwrite=True"):
            build_fmu(arm, path, dt=0.01, overwrite=False)
    assert (tmp_path / "TwoLinkArm.fmu").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TwoLinkArm.fmu", "other.FMU"]


@pytest.mark.slow
def test_fmu_write_is_atomic_not_through_links_and_runs(tmp_path, monkeypatch):
    """A model named ``real`` built onto ``ARM.FMU``, a link to another file: the link is
    replaced by a valid FMU that fmpy runs, the link's target is untouched; a rebuild whose
    write fails half-way (a full disk) leaves that FMU as it was; a rebuild without
    ``overwrite`` replaces it with a warning."""
    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    model = fd.models.two_link_arm()
    model = fd.Model.from_dict({**model.to_dict(), "name": "real"})
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"not an fmu")
    path = tmp_path / "ARM.FMU"
    path.symlink_to(victim)
    assert build_fmu(model, path, dt=0.01, outputs=["link1.theta"], overwrite=True,
                     native=False) == path
    assert victim.read_bytes() == b"not an fmu"
    assert not path.is_symlink() and zipfile.is_zipfile(path)
    assert not any(p.is_dir() for p in tmp_path.iterdir())
    rows = fmpy.simulate_fmu(str(path), stop_time=0.04, step_size=0.02,
                             output=["link1.theta"])
    assert rows["time"][-1] == pytest.approx(0.04) and np.isfinite(rows["link1.theta"]).all()
    good = path.read_bytes()

    def disk_full(source, fh, *args):
        fh.write(source.read(1000))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("shutil.copyfileobj", disk_full)
    with pytest.raises(OSError, match="No space left"):
        build_fmu(model, path, dt=0.02, overwrite=True, native=False)
    assert path.read_bytes() == good
    assert dot_files(tmp_path) == []
    monkeypatch.undo()
    with pytest.warns(DeprecationWarning, match="overwrite=True"):
        build_fmu(model, path, dt=0.02, outputs=["link1.theta"], native=False)
    assert path.read_bytes() != good and zipfile.is_zipfile(path)


# ---------------------------------------------------------------------------------------------
# hostile result files
# ---------------------------------------------------------------------------------------------


def entries(result: fd.SimulationResult, tmp_path: Path) -> dict[str, np.ndarray]:
    path = tmp_path / "good.npz"
    result.to_npz(path)
    with np.load(path) as d:
        return {k: d[k] for k in d.files}


def crafted(tmp_path: Path, arrays: dict) -> Path:
    path = tmp_path / "crafted.npz"
    np.savez_compressed(path, **arrays)
    return path


def test_an_inflating_entry_is_refused_before_it_is_inflated(result, tmp_path):
    """``t`` of 4 million zeros (32 MB, stored in about 30 kB) against ``q`` of 6 samples:
    refused from the headers, with far less memory than the array would take."""
    arrays = entries(result, tmp_path)
    arrays["t"] = np.zeros(4_000_000)
    path = crafted(tmp_path, arrays)
    assert path.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"crafted\.npz: entry 'q' has shape \(6, 4\), "
                                             r"expected \(4000000, 4\)"):
            fd.SimulationResult.from_npz(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000


def test_consistent_but_larger_than_the_limit_is_refused(result, tmp_path):
    path = tmp_path / "good.npz"
    result.to_npz(path)
    assert len(fd.SimulationResult.from_npz(path)) == 6
    with pytest.raises(ValueError, match="more than the limit of 1000 bytes"):
        fd.SimulationResult.from_npz(path, max_bytes=1000)


def lying_header(tmp_path: Path, arrays: dict) -> Path:
    """``arrays`` with the header of ``t`` claiming 10⁹ samples over its 6 stored."""
    path = tmp_path / "lying.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, value in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, value)
            data = buf.getvalue()
            if name == "t":
                data = data.replace(b"(6,)", b"(1000000000,)".ljust(4 + 9), 1)
            z.writestr(f"{name}.npy", data)
    return path


def test_a_header_larger_than_its_data_is_refused(result, tmp_path):
    path = lying_header(tmp_path, entries(result, tmp_path))
    with pytest.raises(ValueError, match=r"lying\.npz: entry 't' stores \d+ bytes for an "
                                         r"array of shape \(1000000000,\)"):
        fd.SimulationResult.from_npz(path)


CRAFTS = {
    "missing q": (lambda a: a.pop("q"), r"entry 'q' is missing"),
    "q of a wrong shape": (lambda a: a.update(q=a["q"][:, :3]), r"entry 'q' has shape"),
    "t all NaN": (lambda a: a.update(t=np.full(6, np.nan)), r"entry 't' must hold finite"),
    "t decreasing": (lambda a: a.update(t=a["t"][::-1].copy()), r"entry 't' must hold"),
    "t of text": (lambda a: a.update(t=np.array(["a"] * 6)), r"entry 't' holds <U1"),
    "model not JSON": (lambda a: a.update(model=np.array("{")), r"entry 'model' is not JSON"),
    "model nested deep": (lambda a: a.update(model=np.array("[" * 100_000 + "]" * 100_000)),
                          r"entry 'model' is not (JSON|a valid model)"),
    "model a list": (lambda a: a.update(model=np.array("[1, 2]")),
                     r"entry 'model' is not a valid model"),
    "model without bodies": (lambda a: a.update(model=np.array('{"name": "x"}')),
                             r"entry 'model' is not a valid model"),
    "model as numbers": (lambda a: a.update(model=np.arange(3)), r"entry 'model' holds"),
    "settings not JSON": (lambda a: a.update(settings=np.array("{x")),
                          r"entry 'settings' is not JSON"),
    "unknown fidelity": (lambda a: a.update(fidelity=np.array("bogus")), r"fidelity"),
}


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_crafted_result_files_give_value_errors_naming_file_and_entry(craft, result,
                                                                       tmp_path):
    arrays = entries(result, tmp_path)
    change, message = CRAFTS[craft]
    change(arrays)
    path = crafted(tmp_path, arrays)
    with pytest.raises(ValueError, match=message) as info:
        fd.SimulationResult.from_npz(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not a zip", b"PK\x03\x04 broken"])
def test_files_that_are_not_results_give_value_errors(content, tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"x\.npz"):
        fd.SimulationResult.from_npz(path)
    np.save(tmp_path / "single.npy", np.zeros(3))
    with pytest.raises(ValueError, match="single array"):
        fd.SimulationResult.from_npz(tmp_path / "single.npy")
