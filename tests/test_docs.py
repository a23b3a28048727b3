"""The code in the README and in the documentation pages runs and prints what the pages show.

Each page's ``python`` blocks run in order in one namespace (in a temporary directory, since
they write model files); a ``text`` block that follows a block's output must match it, apart
from wall-clock times.  Blocks that start with ``>>>`` are run as doctests.  A ``console``
block holds ``$ python -m flexdyn ...`` commands, each followed by what it prints; they run
through the command line's ``main`` in the same directory.  The README's and the
installation page's install commands and extras tables are one text.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["docs/quickstart.md", "docs/model-format.md", "docs/prescribed-motion.md",
         "docs/closed-chains.md", "docs/nodal-bodies.md", "docs/symbolic.md",
         "docs/control-design.md", "docs/cosimulation.md", "docs/urdf.md"]
PAGES += ["docs/index.md", "docs/animations.md"]
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_WALL_TIME = re.compile(r"\d+(\.\d+)? s\b")
#: lines whose seconds are wall-clock times
_TIMED = ("rhs evaluations", "wall time", "total time")


def _blocks(path: Path) -> list[tuple[str, str]]:
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


def _normalize(text: str) -> str:
    lines = [_WALL_TIME.sub("<t> s", ln.rstrip()) if any(w in ln for w in _TIMED)
             else ln.rstrip() for ln in text.strip().splitlines()]
    return "\n".join(lines)


def _run_page(path: Path) -> None:
    namespace: dict = {"__name__": "__docs__"}
    output = None
    for lang, code in _blocks(path):
        if lang == "python" and code.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(code, namespace, path.name, str(path), 0)
            runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
            runner.run(test)
            assert runner.summarize(verbose=False).failed == 0, f"doctest failed in {path}"
            output = None
        elif lang == "python":
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, str(path), "exec"), namespace)
            output = buf.getvalue()
        elif lang == "text" and output:
            assert _normalize(output) == _normalize(code), f"output differs in {path}"
            output = None
        elif lang == "console":
            _run_console(code, path)
            output = None


def _run_console(block: str, path: Path) -> None:
    """Run each ``$ python -m flexdyn ARGS`` of a console block through the command line's
    ``main`` and compare what it prints (standard output and error) with the lines that
    follow the command; an exit status other than 0 is shown as ``[exit N]``."""
    from flexdyn.__main__ import main

    commands = re.split(r"^\$ ", block, flags=re.M)[1:]
    assert commands, f"a console block without a '$ ' command in {path}"
    for command in commands:
        line, _, shown = command.partition("\n")
        words = shlex.split(line)
        assert words[:3] == ["python", "-m", "flexdyn"], f"{path}: not a flexdyn command: {line}"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(words[3:])
        printed = out.getvalue() + err.getvalue() + (f"[exit {status}]\n" if status else "")
        assert _normalize(printed) == _normalize(shown), f"{path}: {line} printed\n{printed}"


@pytest.mark.parametrize("page", PAGES)
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if page == "docs/model-format.md":  # the page's JSON example, as boom.json
        json_text = next(code for lang, code in _blocks(ROOT / page) if lang == "json")
        (tmp_path / "boom.json").write_text(json_text, encoding="utf-8")
    _run_page(ROOT / page)


def _fenced(text: str, lang: str) -> list[str]:
    return [code for block_lang, code in _BLOCK.findall(text) if block_lang == lang]


def _extras_table(text: str) -> str:
    """The table of optional extras: the lines from its header row to its last row."""
    start = text.index("| extra |")
    end = text.find("\n\n", start)
    return text[start:end if end >= 0 else None].strip()


def test_readme_and_install_page_give_the_same_commands():
    """The README opens with two commands for a fresh machine (install and run the demo;
    install and run the tests); the installation page gives both, word for word, and the
    same table of extras, whose names are those of ``pyproject.toml``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    opening = _fenced(readme.split("\n---\n")[0], "bash")
    assert len(opening) == 2, opening
    assert opening[0].strip().endswith("python -m flexdyn demo")
    assert "pytest" in opening[1]
    shown = _fenced(install, "bash")
    for command in opening:
        assert command in shown, f"docs/install.md lacks the README's command {command!r}"
    assert _extras_table(readme) == _extras_table(install)
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    rows = re.findall(r"^\| `([\w-]+)` \|", _extras_table(readme), re.M)
    assert sorted(rows) == sorted(extras)


def test_readme_snippet_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = next(code for lang, code in _blocks(ROOT / "README.md") if lang == "python")
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert float(capsys.readouterr().out.strip()) < 1e-4  # e_E in percent


def test_api_summary_lists_every_top_level_name():
    """The API reference opens with a table of every name ``import flexdyn`` gives."""
    import flexdyn as fd

    text = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    table = text[text.index("## Top-level names"):text.index("## Package")]
    missing = [n for n in fd.__all__ if f"`fd.{n} <" not in table and f"`fd.{n}`" not in table]
    assert not missing, f"docs/api.md's table lacks {missing}"
