"""The docs are a user's guide: indexed by task, free of development history, and linking nothing outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_HISTORY = re.compile(r"\b(session \d+|sessions? start|(?<!single-)issue \d+|issue.s|the issue\b|mid-session)", re.IGNORECASE)


def test_the_index_lists_every_doc():
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in DOCS if p.name != "README.md" and f"]({p.name})" not in index]
    assert not missing, f"docs/README.md does not index {missing}"


def test_no_development_history_in_the_docs():
    found = [(p.name, m.group(0)) for p in [*DOCS, ROOT / "README.md"] for m in _HISTORY.finditer(p.read_text())]
    assert not found, found


def test_every_link_stays_inside_the_repository_and_resolves():
    bad = []
    for p in [*DOCS, ROOT / "README.md"]:
        for target in _LINK.findall(p.read_text()):
            if re.match(r"[a-z]+://", target):
                continue                      # web pages are fine
            path = (p.parent / target).resolve()
            if ROOT not in path.parents and path != ROOT or not path.exists():
                bad.append((p.name, target))
    assert not bad, bad
