"""The report's operator graph: a layered drawing that stays readable on large models.

Layout (a Sugiyama-style layering, without crossing minimisation): each op's layer is the longest path to it from
the model's inputs, so every edge points down; the ops of one layer stand side by side in execution order. Edges
never cross a box or a label:

* an edge between adjacent layers is a straight segment inside the gap between the two rows of boxes;
* a longer edge (a skip connection) drops into the gap below its source, runs right to a vertical lane in the margin
  beside the boxes (lanes are reused once an edge has ended), down to the gap above its target, and in.

Boxes are coloured by op kind (the cost model's op classes), with a legend.
"""

from __future__ import annotations

from typing import Any

from .markup import escape as _e

#: Op kind -> colour (Okabe-Ito, colour-blind safe) and legend name.
KIND_COLOURS = {"conv": ("#56B4E9", "convolution"), "depthwise": ("#009E73", "depthwise"),
                "fc": ("#E69F00", "fully connected / matmul"), "pool": ("#CC79A7", "pooling / reduction"),
                "elementwise": ("#F0E442", "elementwise"), "softmax": ("#D55E00", "softmax"),
                "other": ("#BBBBBB", "data movement / other")}
BOX_W, BOX_H, COL_GAP, ROW_GAP, MARGIN, LANE = 190, 34, 22, 34, 20, 9


def layers(model: Any) -> tuple[list[int], dict[int, int]]:
    """Each op's layer (longest path from the inputs; model inputs are layer -1) and each tensor's producer."""
    ops = model.main.operators
    producer = {ti: i for i, op in enumerate(ops) for ti in op.outputs if ti >= 0}
    layer: list[int] = []
    for op in ops:
        preds = [layer[producer[ti]] for ti in op.inputs if ti >= 0 and producer.get(ti, len(layer)) < len(layer)]
        layer.append(1 + max(preds, default=-1))
    return layer, producer


def graph_svg(model: Any, describe: Any) -> str:
    """The main subgraph as an SVG (see the module docstring); ``describe(tensor)`` labels a box's output."""
    from ...cost.mcu import op_class

    sg = model.main
    ops = sg.operators
    layer, producer = layers(model)
    rows: dict[int, list[int]] = {}
    for i, lv in enumerate(layer):
        rows.setdefault(lv, []).append(i)
    col = {i: rows[layer[i]].index(i) for i in range(len(ops))}
    cols = max((len(r) for r in rows.values()), default=1)
    pitch = BOX_H + ROW_GAP
    top = MARGIN + 18 + ROW_GAP                   # the inputs' caption, then the gap above layer 0

    def x_of(i: int) -> float:
        return MARGIN + col[i] * (BOX_W + COL_GAP)

    def y_of(lv: int) -> float:                   # top of a layer's row of boxes
        return top + lv * pitch

    edges: list[tuple[int, int]] = []           # (source op or -1 for a model input, reader)
    for i, op in enumerate(ops):
        for ti in dict.fromkeys(op.inputs):
            if ti >= 0 and sg.tensors[ti].data is None:
                edges.append((producer.get(ti, -1), i))
    lanes_end: list[int] = []                     # per lane, the last layer its current edge reaches
    lane_of: dict[tuple[int, int], int] = {}
    for src, dst in sorted(edges, key=lambda e: (layer[e[0]] if e[0] >= 0 else -1, layer[e[1]])):
        s_lv = layer[src] if src >= 0 else -1
        if layer[dst] - s_lv <= 1:
            continue
        free = [k for k, end in enumerate(lanes_end) if end < s_lv]
        k = free[0] if free else len(lanes_end)
        if k == len(lanes_end):
            lanes_end.append(0)
        lanes_end[k] = layer[dst]
        lane_of[(src, dst)] = k
    boxes_right = MARGIN + cols * (BOX_W + COL_GAP)
    width = boxes_right + LANE * (len(lanes_end) + 1) + MARGIN
    height = int(y_of(max(layer, default=0) + 1)) + 24
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="operator graph" class="graph">'),
             ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>'),
             (f'<text x="{MARGIN}" y="{MARGIN + 10}" font-size="11">inputs: '
             f'{_e(", ".join(describe(sg.tensors[t]) for t in sg.inputs))}</text>')]
    in_x, in_y = MARGIN + BOX_W / 2, MARGIN + 16
    for src, dst in edges:
        s_lv = layer[src] if src >= 0 else -1
        xs = x_of(src) + BOX_W / 2 if src >= 0 else in_x
        ys = y_of(s_lv) + BOX_H if src >= 0 else in_y
        xt, yt = x_of(dst) + BOX_W / 2, y_of(layer[dst])
        if (src, dst) not in lane_of:
            d = f"M{xs:.0f},{ys:.0f} L{xt:.0f},{yt:.0f}"
            colour = "#555"
        else:
            lane = boxes_right + LANE * (lane_of[(src, dst)] + 1)
            below, above = ys + ROW_GAP * 0.35, yt - ROW_GAP * 0.35
            d = (f"M{xs:.0f},{ys:.0f} L{xs:.0f},{below:.0f} L{lane:.0f},{below:.0f} L{lane:.0f},{above:.0f} "
                 f"L{xt:.0f},{above:.0f} L{xt:.0f},{yt:.0f}")
            colour = "#0072B2"
        parts.append(f'<path class="edge" d="{d}" fill="none" stroke="{colour}" marker-end="url(#arrow)"/>')
    for i, op in enumerate(ops):
        kind = op_class(op.key)
        fill = KIND_COLOURS[kind][0]
        x, y = x_of(i), y_of(layer[i])
        out = sg.tensors[op.outputs[0]] if op.outputs and op.outputs[0] >= 0 else None
        label = _e(describe(out)) if out is not None else ""
        parts.append(f'<g class="op" data-kind="{kind}"><rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" '
                     f'height="{BOX_H}" rx="4" fill="{fill}" fill-opacity="0.45" stroke="#333"/>'
                     f'<text x="{x + 6:.0f}" y="{y + 14:.0f}" font-size="11" font-weight="600">{i} {_e(op.key[:24])}'
                     f'</text><text x="{x + 6:.0f}" y="{y + 27:.0f}" font-size="9.5" textLength="{BOX_W - 12}" '
                     f'lengthAdjust="spacingAndGlyphs">{label}</text><title>op {i} {_e(op.key)}: {label}</title></g>')
    parts.append("</svg>")
    used = sorted({op_class(op.key) for op in ops}, key=list(KIND_COLOURS).index)
    legend = "".join(f'<span class="swatch" style="background:{KIND_COLOURS[k][0]}"></span>{_e(KIND_COLOURS[k][1])} '
                     for k in used)
    return f'<p class="legend">{legend}<span class="swatch edge-skip"></span>skip connection</p>' + "".join(parts)


def graph_table(model: Any, describe: Any) -> str:
    sg = model.main
    rows = ["<table><tr><th>#</th><th class=l>op</th><th class=l>inputs</th><th class=l>outputs</th></tr>"]
    for i, op in enumerate(sg.operators):
        ins = ", ".join("-" if t < 0 else f"{t}: {describe(sg.tensors[t])}" +
                        (" (const)" if sg.tensors[t].data is not None else "") for t in op.inputs)
        outs = ", ".join(f"{t}: {describe(sg.tensors[t])}" for t in op.outputs if t >= 0)
        rows.append(f"<tr><td>{i}</td><td class=l>{_e(op.key)}</td><td class=l>{_e(ins)}</td>"
                    f"<td class=l>{_e(outs)}</td></tr>")
    return "".join(rows) + "</table>"
