"""The README's supported-ops table lists exactly the registered reference kernels."""

from __future__ import annotations

import re
from pathlib import Path

from microinterp.kernels import REFERENCE_KERNELS


def test_ops_table_matches_registry():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = text.split("<!-- ops-table -->")[1].split("<!-- /ops-table -->")[0]
    listed = set()
    for line in table.splitlines()[2:]:
        cell = line.split("|")[1]
        listed |= {name.strip() for name in cell.split(",") if re.fullmatch(r"\s*[A-Za-z0-9_]+\s*", name)}
    assert listed == set(REFERENCE_KERNELS)
