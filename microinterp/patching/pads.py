"""Fold an explicit ``PAD`` into the convolution after it, as that convolution's ``SAME`` padding.

Models exported from PyTorch pad explicitly: ``PAD`` (the input's zero point all round) followed by a ``VALID``
``CONV_2D`` or ``DEPTHWISE_CONV_2D``. Where ``SAME`` would pad exactly as much before the rows and columns, the pair
computes what the convolution alone computes with ``SAME``:

* TFLM's window kernels (``reference_integer_ops::ConvPerChannel`` / ``DepthwiseConvPerChannel`` and CMSIS-NN's) start
  output pixel ``o``'s window at input ``o * stride - pad`` with ``pad`` the "before" padding
  (``ComputePaddingHeightWidth``, :mod:`microinterp.kernels.padding`) and skip taps outside the input. With the
  explicit ``PAD`` the window starts at ``o * stride`` of the padded map, i.e. ``o * stride - before`` of the input:
  the same taps when ``before`` equals ``SAME``'s.
* A tap on the padded border reads the zero point ``zp`` (int8; int16 pads with 0, its only zero point), and the
  kernel adds ``(zp - zp) * w = 0`` to the int32 accumulator -- exactly what the skipped tap adds. So every
  accumulator, and every output, is identical; the "after" padding needs no check beyond the output size (a tap past
  the end is skipped either way, or zero).

The fold needs: the ``PAD``'s output read by that convolution only and not a graph output; input and output of the
``PAD`` quantized alike (the kernel copies codes, and the convolution's input offset and multipliers come from its
input's quantization); paddings on H and W only; ``PADV2``'s constant equal to the zero point; int8 or int16 (a
float ``PAD`` adds ``0.0 * w``, which is not a skipped tap for ``w`` = inf or NaN, and can turn a ``-0.0`` sum
positive); not a one-row ``CONV_2D`` that CMSIS-NN runs through ``arm_convolve_1_x_n_s8``, whose Helium build
computes other outputs when the padding's total is odd (a fold would change what that firmware computes). Removing
the ``PAD`` removes an op and a feature map: its node, OpData and eval tensor from the tail, and a padded copy of
the map from the head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernels.cmsis_nn.buffer_sizes import is_convolve_1_x_n
from ..kernels.padding import compute_padding_height_width
from ..model import Model
from ..rewrite import copy_op, rebuild
from .emit import Writer, without_main_ops
from .regions import geometry, window_of


@dataclass(frozen=True)
class FoldedPads:
    """The rewrite applied: the positions of the ``PAD`` ops folded (in the model they were folded in)."""

    pads: tuple[int, ...]

    def describe(self) -> str:
        n = len(self.pads)
        return f"{n} explicit PAD{'s' if n > 1 else ''} folded into the next convolution's SAME padding"


def _same_quantization(a: Any, b: Any) -> bool:
    qa, qb = a.quantization, b.quantization
    return (qa is not None and qb is not None and np.array_equal(qa.scales, qb.scales)
            and np.array_equal(qa.zero_points, qb.zero_points))


def _pad_value_is_zero_point(op: Any, tensors: Any) -> bool:
    x = tensors[op.inputs[0]]
    zero = x.quantization.zero_point if x.type_name == "INT8" else 0
    if x.type_name == "INT16" and zero != 0:
        return False
    if len(op.inputs) > 2 and op.inputs[2] >= 0:          # PADV2: constant_values
        c = tensors[op.inputs[2]].data
        return c is not None and c.size == 1 and int(c.reshape(-1)[0]) == zero
    return True


def foldable(pad: Any, conv: Any, tensors: Any) -> bool:
    """Whether ``pad`` followed by ``conv`` (its output's only reader) computes what ``conv`` with ``SAME`` padding
    computes on ``pad``'s input (module docstring)."""
    if geometry(pad) != "pad" or geometry(conv) != "filter" or conv.inputs[0] != pad.outputs[0]:
        return False
    x, y = tensors[pad.inputs[0]], tensors[pad.outputs[0]]
    if x.type_name not in ("INT8", "INT16") or y.type_name != x.type_name or not _same_quantization(x, y):
        return False
    if len(x.shape) != 4 or len(y.shape) != 4 or not _pad_value_is_zero_point(pad, tensors):
        return False
    before = window_of(pad, tensors)        # None unless constant paddings on H and W only
    if before is None:
        return False
    o = conv.options
    if o.get("padding", "VALID") != "VALID" or len(tensors[conv.inputs[1]].shape) != 4:
        return False
    _, kh, kw, _ = tensors[conv.inputs[1]].shape
    sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
    dh, dw = o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
    if min(sh, sw, dh, dw) < 1:
        return False
    if _one_row_conv(conv, x, tensors):
        return False
    same = compute_padding_height_width(sh, sw, dh, dw, x.shape[1], x.shape[2], kh, kw, "SAME")
    out = tensors[conv.outputs[0]].shape
    return ((same.height, same.width) == (before.ph, before.pw)
            and (-(-x.shape[1] // sh), -(-x.shape[2] // sw)) == (out[1], out[2]))


def _one_row_conv(conv: Any, x: Any, tensors: Any) -> bool:
    """A CONV_2D that CMSIS-NN's wrapper runs through ``arm_convolve_1_x_n_s8``: on a Helium build its outputs
    depend on the padding's parity (:mod:`microinterp.kernels.cmsis_nn.convolve_1_x_n`), so a fold could change
    what that firmware computes. Left alone (a one-row input holds little memory anyway)."""
    f = tensors[conv.inputs[1]].shape
    return conv.name == "CONV_2D" and is_convolve_1_x_n(
        conv.options.get("dilation_w_factor", 1), conv.options.get("stride_w", 1), (x.shape[1], x.shape[3]),
        (f[1], f[3]))


def fold_pads(model: Model) -> tuple[bytes, FoldedPads] | None:
    """``model`` with every foldable ``PAD`` of subgraph 0 removed and its convolution padding ``SAME`` (None when
    there is none). Other ops, subgraphs and the metadata are kept; an ``OfflineMemoryAllocation`` is dropped."""
    sg = model.main
    readers: dict[int, list[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in op.inputs:
            if t >= 0:
                readers.setdefault(t, []).append(i)
    outputs = set(sg.outputs)
    into: dict[int, int] = {}          # convolution position -> the position of the PAD folded into it
    for i, op in enumerate(sg.operators):
        if geometry(op) != "pad" or op.outputs[0] in outputs:
            continue
        r = readers.get(op.outputs[0], [])
        if len(r) == 1 and foldable(op, sg.operators[r[0]], sg.tensors):
            into[r[0]] = i
    if not into:
        return None
    skipped = set(into.values())
    w = Writer(model, rebuild(without_main_ops(model), {"OfflineMemoryAllocation": None}))
    for i, op in enumerate(sg.operators):
        if i in skipped:
            continue
        if i not in into:
            copy_op(w.b, op, w.old)
            continue
        pad = sg.operators[into[i]]
        w.b.add_op(op.name, [w.old(pad.inputs[0]), *(w.old(t) for t in op.inputs[1:])],
                   [w.old(t) for t in op.outputs], custom_code=op.custom_code, custom_options=op.custom_options,
                   **{**dict(op.options), "padding": "SAME"})
    w.b.inputs = [w.old(t) for t in sg.inputs]
    w.b.outputs = [w.old(t) for t in sg.outputs]
    return w.b.build(), FoldedPads(tuple(sorted(skipped)))

