"""A text picture of a plan: the arena head over time (``microinterp plan --picture``, the HTML report)."""

from __future__ import annotations

from typing import Any

import numpy as np


def arena_picture(rows: list[dict[str, Any]], head: int, width: int = 64) -> str:
    """A text picture of the head over time: one line per time step, one column per ``head/width`` bytes.

    Each buffer is drawn with a symbol (its number in the table, modulo the symbol set) where it is alive.
    """
    if not rows or head == 0:
        return "(nothing planned)"
    symbols = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    t_end = max(max(r["last"], r["first"]) for r in rows)
    t_start = min(min(r["first"], r["last"]) for r in rows)
    scale = head / width
    lines = [f"time  0{'bytes ->':>{width - 1}}|{head}"]
    for t in range(t_start, t_end + 1):
        line = ["."] * width
        for i, r in enumerate(rows):
            if r["first"] <= t <= r["last"]:
                a = int(r["offset"] / scale)
                b = max(a + 1, int(np.ceil((r["offset"] + r["size"]) / scale)))
                for c in range(a, min(b, width)):
                    line[c] = symbols[i % len(symbols)]
        lines.append(f"{t:>4}  {''.join(line)}")
    lines.append("each symbol is the buffer of that number in the table (0-9, A-Z, a-z, then again); '.' is free")
    scratch = [symbols[i % len(symbols)] for i, r in enumerate(rows) if r["kind"] == "scratch"]
    if scratch:
        lines.append(f"scratch buffers (kernels' working memory while their op runs): {' '.join(scratch)}")
    return "\n".join(lines)
