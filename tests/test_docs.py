"""The code in the README and in the documentation pages runs and prints what the pages show.

Each page's ``python`` blocks run in order in one namespace (in a temporary directory, since
they write model files); a ``text`` block that follows a block's output must match it, apart
from wall-clock times.  Blocks that start with ``>>>`` are run as doctests.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["docs/quickstart.md", "docs/model-format.md", "docs/prescribed-motion.md",
         "docs/closed-chains.md", "docs/nodal-bodies.md", "docs/symbolic.md",
         "docs/control-design.md", "docs/cosimulation.md", "docs/urdf.md"]
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_WALL_TIME = re.compile(r"\d+(\.\d+)? s\b")


def _blocks(path: Path) -> list[tuple[str, str]]:
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


def _normalize(text: str) -> str:
    lines = [_WALL_TIME.sub("<t> s", ln.rstrip()) if "rhs evaluations" in ln else ln.rstrip()
             for ln in text.strip().splitlines()]
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


@pytest.mark.parametrize("page", PAGES)
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if page == "docs/model-format.md":  # the page's JSON example, as boom.json
        json_text = next(code for lang, code in _blocks(ROOT / page) if lang == "json")
        (tmp_path / "boom.json").write_text(json_text, encoding="utf-8")
    _run_page(ROOT / page)


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
