"""``microinterp report MODEL -o report.html``: one self-contained HTML page about a model.

Sections (each an element with its ``id``, so tests and links can find it), the first two on the first screen:

- ``headline``: does it fit the board (``mcu``, or a board of ``target``'s core), RAM, flash, latency in ms, and when
  it does not fit the out-of-core and phased settings that would run it (:mod:`.headline`);
- ``cores``: the arena of TFLM's firmware for every supported Cortex-M core and kernel set (:mod:`.arena`);
- ``summary``: file, ops, weights, inputs and outputs with shapes, types and quantization;
- ``graph``: the ops as a layered SVG graph coloured by kind, no edge through a box (:mod:`.graph`), and a table of
  every op's input and output tensors;
- ``arena``: the arena over time for each planner (TFLM's greedy plan, the optimal plan, the phased plan), with the
  peak op and the tail marked, and the CLI's text picture of the greedy plan;
- ``ops``: per op the MACs, the cycles on every MCU profile (today's build) and, run out of core in ``arena`` bytes,
  its tiles and SD traffic (counted by a dry run: nothing is written);
- ``deploy``: the firmware snippet (op resolver, ``kTensorArenaSize``) and the ops TFLM has no kernel for.

Everything is inline (CSS, SVG): the page needs no network and no other file.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import ArenaOverflowError, MicroInterpError
from .arena import arenas, core_arenas, core_table
from .graph import graph_svg, graph_table
from .headline import headline
from .markup import escape as _e
from .markup import tensor_desc as _tensor_desc

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}pre{background:#f7f7f7;padding:8px;font-size:11px;overflow:auto}
.bad{color:#b00020;font-weight:600}.ok{color:#1b7f2a}svg{background:#fff}
.card{border:2px solid #1b7f2a;border-radius:8px;padding:10px 16px;margin:8px 0}.card-bad{border-color:#b00020}
.verdict{font-size:20px;font-weight:700}.tiles{display:flex;gap:16px;flex-wrap:wrap;margin:8px 0}
.tile{border:1px solid #ddd;border-radius:6px;padding:6px 12px;min-width:220px}.what{font-size:12px;color:#555}
.figure{font-size:22px;font-weight:700;color:#222}.note{font-size:11px;color:#666}
.legend{font-size:12px}.swatch{display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;opacity:.6;
border:1px solid #333;vertical-align:middle}.edge-skip{background:#0072B2;height:3px;border:none}
table.cores td,table.cores th{font-size:12px}
"""


# -- per op ------------------------------------------------------------------------------------------------------------
def _ops_table(model: Any, arena: int) -> tuple[str, str]:
    """The per-op table (MACs, cycles per MCU profile, out-of-core tiles and SD traffic) and a note on the run."""
    from ...cost.mcu import MCU_PROFILES
    from ...cost.work import op_work
    from ...interpreter import Interpreter
    from ...storage.null import NullStorage

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


def _deploy(d: Any) -> str:
    """The deploy section of a Deployment (or of the error that stopped one)."""
    if isinstance(d, Exception):
        return f"<p class=bad>TFLM cannot run this model: {_e(type(d).__name__)}: {_e(d)}</p>"
    lines = [d.resolver, (f"constexpr size_t kTensorArenaSize = {d.arena_size};   // arena_used_bytes() "
                          f"{d.arena_bytes}: head {d.head_bytes} + tail {d.tail_bytes}")]
    status = ("<p class=ok>TFLM has a kernel for every op.</p>" if d.deployable else
              f"<p class=bad>Not deployable: {_e(d.why_not)}.</p>")
    return (f"<p>For {_e(d.mcu.name)} ({_e(d.target['core'] if d.target else '')}, {_e(d.kernels)} kernels): "
            f"arena {d.arena_size:,} of {d.mcu.sram_bytes:,} bytes of SRAM, weights {d.weights_bytes:,} of "
            f"{d.mcu.flash_bytes:,} bytes of flash: {'fits' if d.fits else 'does not fit'}.</p>{status}"
            f"<pre>{_e(chr(10).join(lines))}</pre>")


def render(source: Any, *, arena: int = 512_000, mcu: str | None = None, target: str | None = None) -> str:
    """The report of ``source`` (a path, bytes or a Model) as one HTML string; ``mcu`` the board of the headline
    and the deploy section (default stm32f746, or a board of ``target``'s core), ``arena`` the out-of-core columns'
    arena."""
    from ...model import load_model
    from ..deploy import deploy
    from ..pricing import board_for

    board = board_for(mcu, target)      # an unknown board or core is the caller's error, not a line of the report
    model = load_model(source)
    name = os.path.basename(model.source) if isinstance(model.source, str) else (model.description or "model")
    sg = model.main
    ins = "".join(f"<li>input {i}: {_e(sg.tensors[t].name)} {_e(_tensor_desc(sg.tensors[t]))}</li>"
                  for i, t in enumerate(sg.inputs))
    outs = "".join(f"<li>output {i}: {_e(sg.tensors[t].name)} {_e(_tensor_desc(sg.tensors[t]))}</li>"
                   for i, t in enumerate(sg.outputs))
    arena_figures, sizes = arenas(model)
    ops_table, ops_note = _ops_table(model, arena)
    phased = sizes.get("phased")
    try:                                # one deployment for the headline and the deploy section
        d: Any = deploy(model, board, target=target)
    except MicroInterpError as e:
        d = e
    sections = [
        ("headline", "At a glance", headline(d, phased[1] if phased else None)),
        ("cores", "Arena per Cortex-M core (TFLM's firmware, to the byte)",
         core_table(core_arenas(model), getattr(d, "optimized", None))),
        ("summary", "Summary", (f"<p>{len(sg.operators)} ops in the main subgraph ({len(model.subgraphs)} "
                               f"subgraph(s)), {model.weight_bytes():,} bytes of weights; heads: "
                               f"{_e(', '.join(f'{p} {h:,}' for p, (h, _) in sizes.items()))}</p><ul>{ins}{outs}</ul>")),
        ("graph", "Graph", graph_svg(model, _tensor_desc) + graph_table(model, _tensor_desc)),
        ("arena", "Arena over time", arena_figures),
        ("ops", "Per op: work, cycles, out of core", ops_note + ops_table),
        ("deploy", "Deploy", _deploy(d)),
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
