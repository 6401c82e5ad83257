"""``microinterp report MODEL -o report.html``: one self-contained HTML page about a model.

Sections (each an element with its ``id``, so tests and links can find it):

- ``summary``: file, ops, weights, inputs and outputs with shapes, types and quantization;
- ``graph``: the ops as an SVG graph (one box per op in execution order, an edge per tensor from its producer to
  each reader, long edges curved to the side) and a table of every op's input and output tensors;
- ``arena``: the arena over time for each planner (TFLM's greedy plan, the optimal plan, the phased plan), one SVG
  each with axes, labels and a legend, and the CLI's text picture of the greedy plan;
- ``ops``: per op the MACs, the cycles on every MCU profile (today's build; :mod:`microinterp.mcu`) and, run out of
  core in ``arena`` bytes, its tiles and SD traffic (counted by a dry run: nothing is written);
- ``deploy``: the firmware snippet (op resolver, ``kTensorArenaSize``) and the ops TFLM has no kernel for.

Everything is inline (CSS, SVG): the page needs no network and no other file.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from typing import Any

from ..errors import ArenaOverflowError, MicroInterpError
from ..planner.picture import arena_picture

#: Colours of the kinds of buffer in the arena pictures (colour-blind-safe Okabe-Ito).
_KIND_COLOURS = {"tensor": "#0072B2", "scratch": "#E69F00", "variable": "#009E73", "offline": "#CC79A7"}
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}pre{background:#f7f7f7;padding:8px;font-size:11px;overflow:auto}
.bad{color:#b00020;font-weight:600}.ok{color:#1b7f2a}svg{background:#fff}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _tensor_desc(t: Any) -> str:
    q = t.quantization
    quant = ""
    if q is not None and q.scales.size:
        quant = f" q({q.scale:.4g}, {q.zero_point})" if not q.per_channel else f" q(per-channel x{q.scales.size})"
    return f"{t.type_name}{list(t.shape)}{quant}"


# -- graph ---------------------------------------------------------------------------------------------------------------
def graph_svg(model: Any) -> str:
    """The main subgraph as an SVG: boxes in execution order, an edge per (producer, reader) pair."""
    sg = model.main
    ops = sg.operators
    producer = {ti: i for i, op in enumerate(ops) for ti in op.outputs if ti >= 0}
    row, box_w, box_h, left = 46, 260, 30, 40
    height = row * (len(ops) + 2)
    width = left + box_w + 240
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
              f'aria-label="operator graph">'),
             ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
              'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>')]
    y_in = row // 2
    parts.append(f'<text x="{left}" y="{y_in}" font-size="11">inputs: '
                 f'{_e(", ".join(_tensor_desc(sg.tensors[i]) for i in sg.inputs))}</text>')
    for i, op in enumerate(ops):
        y = row * (i + 1)
        readers = [ti for ti in op.inputs if ti >= 0 and sg.tensors[ti].data is None]
        for ti in readers:
            src = producer.get(ti)
            if src is None:           # a model input
                parts.append(f'<line x1="{left + box_w // 2}" y1="{y_in + 4}" x2="{left + box_w // 2}" y2="{y}" '
                             'stroke="#999" stroke-dasharray="3,3" marker-end="url(#arrow)"/>')
            elif src == i - 1:
                parts.append(f'<line x1="{left + box_w // 2}" y1="{row * i + box_h}" x2="{left + box_w // 2}" '
                             f'y2="{y}" stroke="#555" marker-end="url(#arrow)"/>')
            else:                     # a skip connection: an arc on the right, wider for longer jumps
                y0, x0 = row * (src + 1) + box_h // 2, left + box_w
                bulge = min(220, 30 + 12 * (i - src))
                parts.append(f'<path d="M{x0},{y0} C{x0 + bulge},{y0} {x0 + bulge},{y + box_h // 2} '
                             f'{x0},{y + box_h // 2}" fill="none" stroke="#0072B2" marker-end="url(#arrow)"/>')
        out = sg.tensors[op.outputs[0]] if op.outputs and op.outputs[0] >= 0 else None
        parts.append(f'<rect x="{left}" y="{y}" width="{box_w}" height="{box_h}" rx="4" fill="#eef4fb" '
                     f'stroke="#335"/><text x="{left + 6}" y="{y + 13}" font-size="11" font-weight="600">'
                     f'{i} {_e(op.key)}</text><text x="{left + 6}" y="{y + 25}" font-size="10">'
                     f'{_e(_tensor_desc(out) if out is not None else "")}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="11">outputs: '
                 f'{_e(", ".join(_tensor_desc(sg.tensors[i]) for i in sg.outputs))}</text></svg>')
    return "".join(parts)


def _graph_table(model: Any) -> str:
    sg = model.main
    rows = ["<table><tr><th>#</th><th class=l>op</th><th class=l>inputs</th><th class=l>outputs</th></tr>"]
    for i, op in enumerate(sg.operators):
        ins = ", ".join("-" if t < 0 else f"{t}: {_tensor_desc(sg.tensors[t])}" +
                        (" (const)" if sg.tensors[t].data is not None else "") for t in op.inputs)
        outs = ", ".join(f"{t}: {_tensor_desc(sg.tensors[t])}" for t in op.outputs if t >= 0)
        rows.append(f"<tr><td>{i}</td><td class=l>{_e(op.key)}</td><td class=l>{_e(ins)}</td>"
                    f"<td class=l>{_e(outs)}</td></tr>")
    return "".join(rows) + "</table>"


# -- arena ---------------------------------------------------------------------------------------------------------------
def arena_svg(rows: Sequence[dict[str, Any]], head: int, title: str) -> str:
    """The head over time: x is the op (time step), y the byte offset; one rectangle per buffer while it lives."""
    if not rows or head <= 0:
        return f"<p>{_e(title)}: nothing planned</p>"
    t0 = min(min(r["first"], r["last"]) for r in rows)
    t1 = max(max(r["first"], r["last"]) for r in rows)
    w, h, ml, mb, mt = 760, 300, 80, 40, 28
    steps = max(1, t1 - t0 + 1)
    sx, sy = w / steps, h / head
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{ml + w + 150}" height="{mt + h + mb}" '
              f'role="img" aria-label="{_e(title)}"><text x="{ml}" y="16" font-size="13" font-weight="600">'
              f'{_e(title)}</text>')]
    for r in rows:
        x = ml + (min(r["first"], r["last"]) - t0) * sx
        width = (abs(r["last"] - r["first"]) + 1) * sx
        y = mt + h - (r["offset"] + r["size"]) * sy
        colour = _KIND_COLOURS.get(r.get("kind", "tensor"), "#777")
        label = f"{r.get('kind')} {r.get('index')} {r.get('name', '')}: {r['size']} B at {r['offset']}, ops " \
                f"{r['first']}..{r['last']}"
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 1):.1f}" height="{max(r["size"] * sy, 1):.1f}" '
                     f'fill="{colour}" fill-opacity="0.55" stroke="{colour}"><title>{_e(label)}</title></rect>')
    # axes, ticks and labels
    parts.append(f'<line x1="{ml}" y1="{mt + h}" x2="{ml + w}" y2="{mt + h}" stroke="#000"/>'
                 f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{mt + h}" stroke="#000"/>')
    for k in range(5):
        v = head * k / 4
        y = mt + h - v * sy
        parts.append(f'<line x1="{ml - 4}" y1="{y:.1f}" x2="{ml}" y2="{y:.1f}" stroke="#000"/>'
                     f'<text x="{ml - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(v):,}</text>')
    tick = max(1, math.ceil(steps / 10))
    for t in range(t0, t1 + 1, tick):
        x = ml + (t - t0 + 0.5) * sx
        parts.append(f'<text x="{x:.1f}" y="{mt + h + 14}" font-size="10" text-anchor="middle">{t}</text>')
    parts.append(f'<text x="{ml + w / 2}" y="{mt + h + 32}" font-size="11" text-anchor="middle">op (time step)'
                 f'</text><text x="14" y="{mt + h / 2}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {mt + h / 2})">offset in the arena head (bytes)</text>')
    kinds = sorted({r.get("kind", "tensor") for r in rows})
    for j, kind in enumerate(kinds):
        y = mt + 10 + 18 * j
        parts.append(f'<rect x="{ml + w + 16}" y="{y}" width="12" height="12" fill="{_KIND_COLOURS.get(kind, "#777")}" '
                     f'fill-opacity="0.55"/><text x="{ml + w + 34}" y="{y + 10}" font-size="11">{_e(kind)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _arenas(model: Any) -> tuple[str, list[tuple[str, int]]]:
    """One SVG per planner, and (planner, head bytes)."""
    from ..interpreter import Interpreter

    out, heads, picture = [], [], ""
    for planner in ("tflm", "optimal", "phased"):
        try:
            it = Interpreter(model, planner=planner)
        except MicroInterpError as e:
            out.append(f"<p>{_e(planner)}: not planned ({_e(e)})</p>")
            continue
        heads.append((planner, it.head_bytes))
        out.append(arena_svg(it.plan_table(), it.head_bytes,
                             f"planner={planner}: head {it.head_bytes:,} bytes, tail {it.tail_bytes:,}"))
        if planner == "tflm":
            picture = arena_picture(it.plan_table(), it.head_bytes)
    if picture:
        out.append(f"<details><summary>text picture of the greedy plan (as <code>microinterp plan --picture</code>)"
                   f"</summary><pre>{_e(picture)}</pre></details>")
    return "".join(out), heads


# -- per op ------------------------------------------------------------------------------------------------------------
def _ops_table(model: Any, arena: int) -> tuple[str, str]:
    """The per-op table (MACs, cycles per MCU profile, out-of-core tiles and SD traffic) and a note on the run."""
    from ..cost.mcu import MCU_PROFILES
    from ..interpreter import Interpreter
    from ..pager.work import op_work
    from ..storage.null import NullStorage

    sg = model.main
    cycles = {name: [p.op_cycles(op, sg.tensors) + p.interpreter_cycles_per_op for op in sg.operators]
              for name, p in MCU_PROFILES.items()}
    ooc: dict[int, Any] = {}
    try:
        with Interpreter(model, arena=arena, backing=NullStorage()) as it:
            if it.out_of_core:
                ooc = {r.index: r for r in it.simulate()}
                note = f"Out of core in a {arena:,}-byte arena (a dry run: nothing written)."
            else:
                note = f"The plan fits a {arena:,}-byte arena: the model runs in memory, no SD traffic."
    except (ArenaOverflowError, MicroInterpError) as e:
        note = f"Out of core in {arena:,} bytes: not possible ({e})."
    head = "".join(f"<th>{_e(n)} k cycles</th>" for n in cycles)
    rows = [(f"<table><tr><th>#</th><th class=l>op</th><th>MMACs</th>{head}<th>tiles</th><th>SD read kB</th>"
             f"<th>SD written kB</th></tr>")]
    for i, op in enumerate(sg.operators):
        macs = op_work(op, sg.tensors)[0]
        r = ooc.get(i)
        tiles = len(r.tiles) if r is not None else ""
        rd = f"{r.sd_read_bytes / 1e3:.1f}" if r is not None else ""
        wr = f"{r.sd_write_bytes / 1e3:.1f}" if r is not None else ""
        cells = "".join(f"<td>{cycles[n][i] / 1e3:,.1f}</td>" for n in cycles)
        rows.append(f"<tr><td>{i}</td><td class=l>{_e(op.key)}</td><td>{macs / 1e6:.3f}</td>{cells}"
                    f"<td>{tiles}</td><td>{rd}</td><td>{wr}</td></tr>")
    totals = "".join(f"<td><b>{sum(c) / 1e3:,.1f}</b></td>" for c in cycles.values())
    macs_total = sum(op_work(op, sg.tensors)[0] for op in sg.operators)
    rows.append(f"<tr><td></td><td class=l><b>total</b></td><td><b>{macs_total / 1e6:.3f}</b></td>{totals}"
                "<td></td><td></td><td></td></tr></table>")
    notes = "".join(f"<li>{_e(p.figure_note())}</li>" for p in MCU_PROFILES.values())
    return "".join(rows), f"<p>{_e(note)}</p><p>Cycles model:</p><ul>{notes}</ul>"


def _deploy(model: Any, mcu: str) -> str:
    from .deploy import deploy

    d = deploy(model, mcu)
    lines = [d.resolver, (f"constexpr size_t kTensorArenaSize = {d.arena_size};   // arena_used_bytes() "
                          f"{d.arena_bytes}: head {d.head_bytes} + tail {d.tail_bytes}")]
    status = ("<p class=ok>TFLM has a kernel for every op.</p>" if d.deployable else
              f"<p class=bad>Not deployable: TFLM has no kernel for {_e(', '.join(d.unsupported))}.</p>")
    return (f"<p>For {_e(d.mcu.name)} ({_e(d.target['core'] if d.target else '')}, {_e(d.kernels)} kernels): "
            f"arena {d.arena_size:,} of {d.mcu.sram_bytes:,} bytes of SRAM, weights {d.weights_bytes:,} of "
            f"{d.mcu.flash_bytes:,} bytes of flash: {'fits' if d.fits else 'does not fit'}.</p>{status}"
            f"<pre>{_e(chr(10).join(lines))}</pre>")


def render(source: Any, *, arena: int = 512_000, mcu: str = "stm32f746") -> str:
    """The report of ``source`` (a path, bytes or a Model) as one HTML string."""
    from ..model import load_model

    model = load_model(source)
    name = os.path.basename(model.source) if isinstance(model.source, str) else (model.description or "model")
    sg = model.main
    ins = "".join(f"<li>input {i}: {_e(sg.tensors[t].name)} {_e(_tensor_desc(sg.tensors[t]))}</li>"
                  for i, t in enumerate(sg.inputs))
    outs = "".join(f"<li>output {i}: {_e(sg.tensors[t].name)} {_e(_tensor_desc(sg.tensors[t]))}</li>"
                   for i, t in enumerate(sg.outputs))
    arenas, heads = _arenas(model)
    ops_table, ops_note = _ops_table(model, arena)
    sections = [
        ("summary", "Summary", (f"<p>{len(sg.operators)} ops in the main subgraph ({len(model.subgraphs)} "
                               f"subgraph(s)), {model.weight_bytes():,} bytes of weights; heads: "
                               f"{_e(', '.join(f'{p} {h:,}' for p, h in heads))}</p><ul>{ins}{outs}</ul>")),
        ("graph", "Graph", graph_svg(model) + _graph_table(model)),
        ("arena", "Arena over time", arenas),
        ("ops", "Per op: work, cycles, out of core", ops_note + ops_table),
        ("deploy", "Deploy", _deploy(model, mcu)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{_e(title)}</h2>{content}</section>' for sid, title, content in sections)
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>microinterp report: {_e(name)}"
            f"</title><style>{_CSS}</style></head><body><h1>microinterp report: {_e(name)}</h1>{body}</body></html>")


def write(source: Any, path: str | os.PathLike, **kwargs: Any) -> str:
    """Render the report of ``source`` into ``path``; returns the path."""
    text = render(source, **kwargs)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fspath(path)
