"""Write each example script as a Jupyter notebook beside it.

The examples are jupytext "percent" scripts: ``# %%`` starts a code cell and
``# %% [markdown]`` a cell of prose written as comments; the header between two ``# ---``
lines is jupytext's metadata.  Each ``NN_name.py`` becomes ``NN_name.ipynb`` (nbformat 4,
no outputs) with the standard library alone, so that the examples open as notebooks without
jupytext.  The test suite checks that the notebooks are those of the scripts.

Usage: ``python examples/make_notebooks.py [--check]`` (``--check``: write nothing, exit 1
when a notebook is missing or differs from its script).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
_CELL = re.compile(r"^# %%(?: \[(\w+)\])?[ \t]*$", re.M)


def _lines(text: str) -> list[str]:
    """``text`` without its leading and trailing blank lines, as notebook source lines (each
    but the last ending in a newline)."""
    lines = text.strip("\n").split("\n")
    return [line + "\n" for line in lines[:-1]] + lines[-1:]


def _prose(text: str) -> str:
    """A markdown cell's text from its comment lines (``# text`` or ``#``)."""
    out = []
    for line in text.strip("\n").split("\n"):
        if not (line == "#" or line.startswith("# ")):
            raise ValueError(f"a markdown cell line that is not a comment: {line!r}")
        out.append(line[2:])
    return "\n".join(out)


def notebook(script: str) -> dict:
    """The notebook (nbformat 4 as a dict) of a percent script's text."""
    if script.startswith("# ---\n"):
        script = script[script.index("\n# ---\n", 5) + len("\n# ---\n"):]
    parts = _CELL.split(script)
    if parts[0].strip():
        raise ValueError("text before the first '# %%' cell marker")
    cells = []
    for kind, body in zip(parts[1::2], parts[2::2], strict=True):
        if kind == "markdown":
            cells.append({"cell_type": "markdown", "metadata": {},
                          "source": _lines(_prose(body))})
        elif kind is None:
            cells.append({"cell_type": "code", "execution_count": None, "metadata": {},
                          "outputs": [], "source": _lines(body)})
        else:
            raise ValueError(f"unknown cell kind '# %% [{kind}]'")
    return {"cells": cells,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 4}


def notebook_text(script: str) -> str:
    """The notebook's file text: JSON indented by one space, as Jupyter writes it."""
    return json.dumps(notebook(script), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a notebook is missing or stale")
    check = parser.parse_args(argv).check
    stale = []
    for script in sorted(EXAMPLES.glob("[0-9][0-9]_*.py")):
        path = script.with_suffix(".ipynb")
        text = notebook_text(script.read_text(encoding="utf-8"))
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.name)
        if not check:
            path.write_text(text, encoding="utf-8")
    verb = "differ from their scripts" if check else "written"
    print(f"{len(stale)} notebooks {verb}" + (f": {', '.join(stale)}" if stale else ""))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
