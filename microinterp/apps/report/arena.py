"""The report's arena figures: the arena over time per planner, with the peak op and the tail marked, and the arena
of TFLM's firmware for every supported Cortex-M core and kernel set."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...errors import MicroInterpError
from .markup import escape as _e

#: Colours of the kinds of buffer in the arena pictures (colour-blind-safe Okabe-Ito).
KIND_COLOURS = {"tensor": "#0072B2", "scratch": "#E69F00", "variable": "#009E73", "offline": "#CC79A7"}
TAIL_COLOUR = "#999999"


def peak(rows: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(time step, bytes): the op at which the planned buffers reach highest in the head (the first such op)."""
    best_t, best = 0, -1
    steps = sorted({t for r in rows for t in range(min(r["first"], r["last"]), max(r["first"], r["last"]) + 1)})
    for t in steps:
        top = max((r["offset"] + r["size"] for r in rows if min(r["first"], r["last"]) <= t <= max(r["first"],
                                                                                                  r["last"])),
                  default=0)
        if top > best:
            best_t, best = t, top
    return best_t, max(best, 0)


def arena_svg(rows: Sequence[dict[str, Any]], head: int, tail: int, title: str, op_names: Sequence[str] = ()) -> str:
    """The arena over time: x is the op (time step), y the byte offset; one rectangle per buffer while it lives, the
    persistent tail as a band above the head, and the op at the head's peak marked."""
    if not rows or head <= 0:
        return f"<p>{_e(title)}: nothing planned</p>"
    t0 = min(min(r["first"], r["last"]) for r in rows)
    t1 = max(max(r["first"], r["last"]) for r in rows)
    total = head + max(tail, 0)
    w, h, ml, mb, mt = 760, 300, 80, 40, 28
    steps = max(1, t1 - t0 + 1)
    sx, sy = w / steps, h / total
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{ml + w + 190}" height="{mt + h + mb}" '
              f'role="img" aria-label="{_e(title)}" class="arena"><text x="{ml}" y="16" font-size="13" '
              f'font-weight="600">{_e(title)}</text>')]
    for r in rows:
        x = ml + (min(r["first"], r["last"]) - t0) * sx
        width = (abs(r["last"] - r["first"]) + 1) * sx
        y = mt + h - (r["offset"] + r["size"]) * sy
        colour = KIND_COLOURS.get(r.get("kind", "tensor"), "#777")
        label = f"{r.get('kind')} {r.get('index')} {r.get('name', '')}: {r['size']} B at {r['offset']}, ops " \
                f"{r['first']}..{r['last']}"
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 1):.1f}" '
                     f'height="{max(r["size"] * sy, 1):.1f}" fill="{colour}" fill-opacity="0.55" stroke="{colour}">'
                     f'<title>{_e(label)}</title></rect>')
    if tail > 0:            # the persistent tail: allocated once, alive for the whole run, above the head
        y = mt + h - total * sy
        parts.append(f'<rect class="tail" x="{ml}" y="{y:.1f}" width="{w}" height="{max(tail * sy, 2):.1f}" '
                     f'fill="{TAIL_COLOUR}" fill-opacity="0.35" stroke="{TAIL_COLOUR}"><title>tail (persistent): '
                     f'{tail:,} bytes</title></rect><text x="{ml + w + 8}" y="{y + max(tail * sy, 10) / 2 + 4:.1f}" '
                     f'font-size="10">tail {tail:,} B</text>')
    t_peak, top = peak(rows)
    xp = ml + (t_peak - t0 + 0.5) * sx
    name = op_names[t_peak] if 0 <= t_peak < len(op_names) else ""
    parts.append(f'<line class="peak" x1="{xp:.1f}" y1="{mt}" x2="{xp:.1f}" y2="{mt + h}" stroke="#b00020" '
                 f'stroke-dasharray="4,3"/><text x="{min(xp + 4, ml + w - 150):.1f}" y="{mt + 10}" font-size="10" '
                 f'fill="#b00020">peak: op {t_peak} {_e(name)}, {top:,} B</text>')
    parts.append(f'<line x1="{ml}" y1="{mt + h}" x2="{ml + w}" y2="{mt + h}" stroke="#000"/>'
                 f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{mt + h}" stroke="#000"/>')
    for k in range(5):
        v = total * k / 4
        y = mt + h - v * sy
        parts.append(f'<line x1="{ml - 4}" y1="{y:.1f}" x2="{ml}" y2="{y:.1f}" stroke="#000"/>'
                     f'<text x="{ml - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(v):,}</text>')
    tick = max(1, math.ceil(steps / 10))
    for t in range(t0, t1 + 1, tick):
        x = ml + (t - t0 + 0.5) * sx
        parts.append(f'<text x="{x:.1f}" y="{mt + h + 14}" font-size="10" text-anchor="middle">{t}</text>')
    parts.append(f'<text x="{ml + w / 2}" y="{mt + h + 32}" font-size="11" text-anchor="middle">op (time step)'
                 f'</text><text x="14" y="{mt + h / 2}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {mt + h / 2})">offset in the arena (bytes)</text>')
    kinds = sorted({r.get("kind", "tensor") for r in rows})
    legend = [(KIND_COLOURS.get(k, "#777"), k) for k in kinds] + ([(TAIL_COLOUR, "tail (persistent)")] if tail else [])
    for j, (colour, text) in enumerate(legend):
        y = mt + h - 18 * (len(legend) - j)         # at the bottom: the tail's label stands at the top
        parts.append(f'<rect x="{ml + w + 16}" y="{y}" width="12" height="12" fill="{colour}" fill-opacity="0.55"/>'
                     f'<text x="{ml + w + 34}" y="{y + 10}" font-size="11">{_e(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def arenas(model: Any) -> tuple[str, dict[str, tuple[int, int]]]:
    """One SVG per planner, and per planner that plans the model (head bytes, arena bytes used)."""
    from ...interpreter import Interpreter
    from ...planner.picture import arena_picture

    out, sizes, picture = [], {}, ""
    names = [op.key for op in model.main.operators]
    for planner in ("tflm", "optimal", "phased"):
        try:
            it = Interpreter(model, planner=planner)
        except MicroInterpError as e:
            out.append(f"<p>{_e(planner)}: not planned ({_e(e)})</p>")
            continue
        sizes[planner] = (it.head_bytes, it.arena_used_bytes)
        out.append(arena_svg(it.plan_table(), it.head_bytes, it.tail_bytes,
                             f"planner={planner}: head {it.head_bytes:,} bytes, tail {it.tail_bytes:,}", names))
        if planner == "tflm":
            picture = arena_picture(it.plan_table(), it.head_bytes)
    if picture:
        out.append(f"<details><summary>text picture of the greedy plan (as <code>microinterp plan --picture</code>)"
                   f"</summary><pre>{_e(picture)}</pre></details>")
    return "".join(out), sizes


def core_arenas(model: Any) -> list[dict[str, Any]]:
    """The arena of TFLM's firmware for every supported core and both kernel sets (the byte-exact replay of
    :func:`microinterp.memory32.estimate_arena`), or why it cannot be built."""
    from ...memory32 import estimate_arena
    from ...targets import CORES, get_target

    out = []
    for core in CORES:
        for kernels in ("cmsis-nn", "reference"):
            row: dict[str, Any] = {"core": core, "kernels": kernels}
            try:
                est = estimate_arena(model, target=get_target(core, kernels))
            except MicroInterpError as e:
                row["error"] = f"{type(e).__name__}: {e}"
            else:
                row.update(arena=est.total_bytes, head=est.head_bytes, tail=est.persistent_bytes,
                           kTensorArenaSize=-(-est.total_bytes // 1024) * 1024)
            out.append(row)
    return out


def core_table(rows: Sequence[dict[str, Any]], optimized: dict[str, Any] | None = None) -> str:
    """The per-core table; with ``optimized`` (a deployment's :attr:`optimized`) a column with each core's arena
    after ``microinterp optimize`` for that kernel set."""
    after = (optimized or {}).get("per_core", {})
    kernels = (optimized or {}).get("kernels")
    extra = "<th>after optimize</th>" if after else ""
    cells = [("<table class=cores><tr><th class=l>core</th><th class=l>kernels</th><th>kTensorArenaSize</th>"
             f"<th>arena_used_bytes()</th><th>head</th><th>tail</th>{extra}</tr>")]
    for r in rows:
        if "error" in r:
            cells.append(f"<tr><td class=l>{_e(r['core'])}</td><td class=l>{_e(r['kernels'])}</td>"
                         f"<td class=l colspan={5 if after else 4}>{_e(r['error'])}</td></tr>")
        else:
            value = after.get(r["core"]) if r["kernels"] == kernels else None
            cell = (f"<td>{value:,}</td>" if value is not None else "<td></td>") if after else ""
            cells.append(f"<tr><td class=l>{_e(r['core'])}</td><td class=l>{_e(r['kernels'])}</td>"
                         f"<td>{r['kTensorArenaSize']:,}</td><td>{r['arena']:,}</td><td>{r['head']:,}</td>"
                         f"<td>{r['tail']:,}</td>{cell}</tr>")
    return "".join(cells) + "</table>"
