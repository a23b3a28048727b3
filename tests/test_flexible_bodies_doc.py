"""The guide ``docs/flexible-bodies.md`` runs and prints what it shows (the page runner of
``test_docs``)."""

from __future__ import annotations

from test_docs import ROOT, _run_page


def test_flexible_bodies_page_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_page(ROOT / "docs" / "flexible-bodies.md")
