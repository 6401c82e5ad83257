"""Write a model with one stage computed patch by patch, with TFLM builtin ops only.

For a grid of ``rows x cols`` patches of the stage's output ``y`` (near-equal bands), each patch is computed from
the region of ``x`` its receptive field needs, walking the stage's ops backwards (:mod:`.regions`):

1. ``STRIDED_SLICE`` cuts that region of ``x`` (halos included);
2. each op of the stage runs on the patch: a convolution or pool with ``VALID`` padding, after a ``PAD`` where the
   patch touches the feature map's border (the original padding, made explicit: TFLM pads int8 with the zero point,
   which contributes exactly what a skipped tap does, ``0 = (zp - zp) * w``; float with 0); the model's own PAD ops
   pad only the sides the patch touches, or vanish; where a feature map feeds two ops that need different regions
   (a residual), the smaller is cut from the larger with another ``STRIDED_SLICE``;
3. ``CONCATENATION`` joins the patches: over columns within a band of rows, then the bands over rows, into ``y``
   itself, so every op after the stage reads what it read before.

Every output value is computed from the same input values by the same kernel arithmetic as in the original model,
so the outputs are bit-identical (tested in the wheel and in microinterp). Ops before and after the stage, the
other subgraphs and the metadata are kept (an ``OfflineMemoryAllocation`` is dropped: it described the old tensors);
tensors no op uses any more are not written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kernels.padding import compute_padding_height_width
from ..model import Model
from ..model_writer import ModelBuilder
from ..rewrite import KEEP, copy_op, copy_tensor, rebuild
from .regions import Region, Window, clip, geometry, padding_outside, union, window_of, windowed
from .stage import Stage, feature_inputs


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into ``parts`` bands whose sizes differ by at most one (the larger first)."""
    q, r = divmod(n, parts)
    edges = [0]
    for i in range(parts):
        edges.append(edges[-1] + q + (1 if i < r else 0))
    return list(itertools.pairwise(edges))


@dataclass
class Writer:
    """Subgraph 0 of the new model: original tensors copied when first used, new ones appended."""

    model: Model
    b: ModelBuilder
    index: dict[int, int] = field(default_factory=dict)
    consts: dict[tuple, int] = field(default_factory=dict)

    def old(self, ti: int) -> int:
        if ti < 0:
            return ti
        if ti not in self.index:
            self.index[ti] = copy_tensor(self.b, self.model.main.tensors[ti])
        return self.index[ti]

    def like(self, ti: int, shape: tuple[int, ...], name: str) -> int:
        """A new feature map of ``shape``, typed and quantized as tensor ``ti``."""
        return copy_tensor(self.b, self.model.main.tensors[ti], name=name, shape=shape, data=None, is_variable=False)

    def sliced(self, ti: int, channels: tuple[int, int, int], name: str, data: Any = KEEP) -> int:
        """Tensor ``ti``'s slice ``(axis, start, stop)``: its data and per-channel quantization along that axis."""
        return copy_tensor(self.b, self.model.main.tensors[ti], name=name, channels=channels, data=data,
                           is_variable=False)

    def const(self, values: list, name: str) -> int:
        key = (name.split("/")[-1], tuple(map(tuple, values)) if isinstance(values[0], list) else tuple(values))
        if key not in self.consts:
            arr = np.asarray(values, dtype=np.int32)
            self.consts[key] = self.b.add_tensor(name, arr.shape, "INT32", data=arr)
        return self.consts[key]

    def paddings(self, pads: tuple[int, int, int, int], name: str) -> int:
        """A PAD's paddings of an NHWC map: (top, bottom, left, right) rows and columns, batch and channels none."""
        return self.const([[0, 0], [pads[0], pads[1]], [pads[2], pads[3]], [0, 0]], f"{name}/paddings")


def patch_stage(model: Model, stage: Stage, rows: int, cols: int) -> bytes:
    """``model`` with ``stage`` computed as ``rows x cols`` patches of its output (see the module docstring)."""
    b = rebuild(without_main_ops(model), {"OfflineMemoryAllocation": None})
    w = Writer(model, b)
    sg = model.main
    for op in sg.operators[:stage.start]:
        _copy_op(w, op)
    y = sg.tensors[stage.y]
    lay = stage.layouts[stage.y]
    height, width = y.shape[lay.h], y.shape[lay.w]
    bands = []
    for r, (h0, h1) in enumerate(split(height, rows)):
        pieces = [_emit_patch(w, stage, (h0, h1, w0, w1), f"p{r}_{c}")
                  for c, (w0, w1) in enumerate(split(width, cols))]
        if len(pieces) == 1:
            bands.append(pieces[0])
            continue
        band = w.old(stage.y) if rows == 1 else w.like(stage.y, lay.shape(y.shape, (h0, h1, 0, width)),
                                                       f"{y.name}/band{r}")
        b.add_op("CONCATENATION", pieces, [band], axis=lay.w, fused_activation_function="NONE")
        bands.append(band)
    if rows > 1:
        b.add_op("CONCATENATION", bands, [w.old(stage.y)], axis=lay.h, fused_activation_function="NONE")
    for op in sg.operators[stage.stop:]:
        _copy_op(w, op)
    b.inputs = [w.old(t) for t in sg.inputs]
    b.outputs = [w.old(t) for t in sg.outputs]
    return b.build()


def without_main_ops(model: Model) -> Model:
    from dataclasses import replace

    main = replace(model.main, operators=(), tensors=(), inputs=(), outputs=())
    return replace(model, subgraphs=(main, *model.subgraphs[1:]))


def _copy_op(w: Writer, op: Any) -> None:
    copy_op(w.b, op, w.old)


def _extent(stage: Stage, tensors: Any, ti: int) -> Region:
    return stage.layouts[ti].extent(tensors[ti].shape)


def _emit_patch(w: Writer, stage: Stage, patch: Region, tag: str) -> int:
    """Emit one patch's ops; return the new tensor holding ``patch`` of ``y``."""
    sg = w.model.main
    tensors, ops = sg.tensors, sg.operators
    need: dict[int, Region] = {stage.y: patch}
    wanted: dict[tuple[int, int], Region] = {}
    windows: dict[int, Window] = {}
    for i in reversed(stage.ops):
        op = ops[i]
        out = op.outputs[0]
        if out not in need:
            continue
        win = windows[i] = window_of(op, tensors) if windowed(op) else None
        for pos in feature_inputs(op, tensors) or ():
            ti = op.inputs[pos]
            reg = win.input_region(need[out]) if win is not None else need[out]
            wanted[(i, pos)] = reg
            need[ti] = union(need.get(ti), clip(reg, _extent(stage, tensors, ti)))
    whole_x = (w.old(stage.x), _extent(stage, tensors, stage.x))
    have: dict[int, tuple[int, Region]] = {stage.x: (_crop(w, stage, stage.x, need[stage.x], whole_x, tag),
                                                     need[stage.x])}
    for i in stage.ops:
        op = ops[i]
        out = op.outputs[0]
        if out not in need:
            continue
        features = feature_inputs(op, tensors) or []
        inputs = [t if pos in features else w.old(t) for pos, t in enumerate(op.inputs)]
        pads = (0, 0, 0, 0)
        for pos in features:
            ti = op.inputs[pos]
            extent = _extent(stage, tensors, ti)
            reg = clip(wanted[(i, pos)], extent)
            inputs[pos] = _crop(w, stage, ti, reg, have[ti], tag)
            pads = padding_outside(wanted[(i, pos)], extent)
        name = f"{tensors[out].name}/{tag}"
        out_shape = stage.layouts[out].shape(tensors[out].shape, need[out])
        options = dict(op.options)
        if geometry(op) == "pad":
            if not any(pads):
                have[out] = (inputs[0], need[out])
                continue
            inputs[1] = w.paddings(pads, name)
        elif windowed(op):       # the convolutions and pools (the PADs are above)
            options["padding"] = _implicit_padding(op, windows[i], pads, w.b.tensors[inputs[0]].shape)
            if options["padding"] is None:
                options["padding"] = "VALID"
                src = tensors[op.inputs[0]]
                r = wanted[(i, 0)]
                padded = w.like(op.inputs[0], (1, r[1] - r[0], r[3] - r[2], src.shape[3]), f"{name}/padded")
                w.b.add_op("PAD", [inputs[0], w.paddings(pads, name)], [padded])
                inputs[0] = padded
        new_out = w.like(out, out_shape, name)
        w.b.add_op(op.name, inputs, [new_out], custom_code=op.custom_code, custom_options=op.custom_options,
                   **options)
        have[out] = (new_out, need[out])
    return have[stage.y][0]


def _implicit_padding(op: Any, win: Window, pads: tuple[int, int, int, int], x: tuple[int, ...]) -> str | None:
    """VALID or SAME when the kernel itself pads the patch exactly as needed, else None (an explicit PAD is needed).

    TFLM's windowed kernels loop over the output tensor's rows and columns, start each window at ``o * stride - pad``
    with ``pad`` the "before" padding ComputePaddingHeightWidth gives for the *input's* size, and skip taps outside
    the input -- exactly what the original op did at the feature map's border. So a patch needing only "after"
    padding runs as VALID (pad 0, the extra output rows/columns come from the declared shape), and one needing
    "before" padding runs as SAME when SAME's pad for the patch's size (``x``, the patch input's shape) is that
    padding on both axes. Pools never reach here with padding (their stages exclude it)."""
    if not any(pads):
        return "VALID"
    if geometry(op) == "pool":
        return None
    for padding in ("VALID", "SAME"):
        p = compute_padding_height_width(win.sh, win.sw, win.dh, win.dw, x[1], x[2], win.kh, win.kw, padding)
        if (p.height, p.width) == (pads[0], pads[2]):
            return padding
    return None


def _crop(w: Writer, stage: Stage, ti: int, reg: Region, held: tuple[int, Region], tag: str) -> int:
    """The new tensor holding region ``reg`` of ``ti``: ``held`` itself, or a STRIDED_SLICE of it."""
    src, src_reg = held
    if src_reg == reg:
        return src
    t = w.model.main.tensors[ti]
    lay = stage.layouts[ti]
    begin, end = [0] * len(t.shape), list(lay.shape(t.shape, src_reg))
    begin[lay.h], end[lay.h] = reg[0] - src_reg[0], reg[1] - src_reg[0]
    begin[lay.w], end[lay.w] = reg[2] - src_reg[2], reg[3] - src_reg[2]
    name = f"{t.name}/{tag}/{reg[0]}_{reg[1]}_{reg[2]}_{reg[3]}"
    out = w.like(ti, lay.shape(t.shape, reg), name)
    w.b.add_op("STRIDED_SLICE", [src, w.const(begin, f"{name}/begin"), w.const(end, f"{name}/end"),
                                 w.const([1] * len(t.shape), f"{name}/strides")], [out],
               begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, offset=False)
    return out
