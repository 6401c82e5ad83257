"""CONV_2D, optimized: the reference kernel's prepare and results, computed as one float GEMM on raw int8 values
plus the merged requantization epilogue (:mod:`._epilogue`). Bit-exact with :mod:`microinterp.kernels.conv`.

Fast path (int8 input, int8 or int4 constant filter, constant or no bias, one group, strides and dilations >= 1;
anything else runs the reference invoke):

* Zero point folded into the bias: TFLM's ``acc = sum_{taps in image} w (x - zp_in) + bias`` equals ``sum_{all
  taps} w x' + bias'`` with ``bias' = bias - zp_in sum_k w`` and ``x' = x`` inside the image, ``x' = zp_in`` on
  padded taps (their terms cancel against the bias). So the im2col buffer ``[rows, K + 1]`` holds raw input values,
  ``zp_in`` where a tap falls outside the image and a constant 1.0 column that multiplies the weight row ``bias'``:
  the GEMM returns TFLM's exact accumulator, bias included.
* GEMM precision, chosen once per layer (:func:`._epilogue.gemm_weights`): float32 when ``128 sum_k |w[c,k]| +
  |bias'_c| < 2^24`` for every channel — every partial sum of any summation order is then an integer below 2^24,
  exact in float32 — else float64 (exact below 2^53); ``plan.weights.dtype`` says which. Channels the epilogue
  finds constant (pruned filters: the bias alone decides the output) get zero columns, so their biases, often far
  beyond 2^24, do not force float64.
* im2col: the input is cast once into a zp-filled float32 image with the padding margins (allocated at prepare; the
  margins are never written again), and one strided copy of its ``as_strided`` windows fills the column buffer
  (also allocated at prepare; its 1.0 column is never overwritten). 1x1 convolutions without padding copy the
  (strided) input straight into the column buffer.
* Requantization: :class:`._epilogue.Epilogue` with each channel's exact accumulator range (weights, int8 input
  range, bias): merged float64 rounding for the channels whose exactness condition holds, a constant for channels
  whose output cannot change, the int64 MBQM for the rest (``plan.epilogue.kinds()``).
* Constant channels skip the GEMM: when the products saved outweigh a scatter (``K (C_out - live) >= 128
  live``), the weight operand keeps only the other columns and the product is scattered into an accumulator
  buffer whose constant columns stay 0 (pruned late layers of small CNNs: most of their channels).
* Folded GEMM (1x1 filters, ``C_in < 48``, at most 2^17 outputs, clamping activation: no signed rounding):
  :meth:`._epilogue.Epilogue.fold` scales the float64 operand by each channel's requantization scale and adds the
  rounding offset to the bias row when every partial sum stays an exact float64 (checked at prepare); the
  product is then ``T`` itself and :meth:`._epilogue.Epilogue.finish` only clamps and stores (three NumPy passes
  fewer than the float32 accumulator's epilogue, for a float64 GEMM that costs less than them at these sizes).
* The int4 unpack scratch the reference requests stays in the arena plan; the fast path unpacks the (constant)
  filter once at prepare instead of on every invoke.

These buffers are host-side scratch of the Python process, not arena memory: the arena plan (scratch requests,
persistent multipliers) is exactly the reference prepare's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .._qutil import unpack_int4
from ..conv import KERNEL as REFERENCE
from ..conv import ConvData
from ._epilogue import Epilogue, accumulator_range, gemm, gemm_weights

_FOLD_BELOW = 48     # folded GEMM (float64, requantization scale inside) for 1x1 filters with C_in below this: the
                     # float64 product costs less than the epilogue passes it saves (measured; an im2col in float64
                     # costs more than that)

_FOLD_OUTPUTS = 1 << 17     # ... and at most this many outputs: on larger layers (mobilenet_v2's 1x1 expansions)
                             # the float64 product's memory traffic ate the gain in whole invokes (measured)
#: Most bytes of host buffers (the zp-filled image and the im2col block, float64 at worst) one layer's plan may take;
#: a layer above it (a mutated stride or dilation asking for gigabytes of padding) runs the reference invoke instead.
#: VGG16's largest layer (224x224 rows of 577 columns) takes ~230 MB.
_MAX_PLAN_BYTES = 512 << 20
_SCATTER_COST = 128  # constant channels skip the GEMM when K (C_out - live) >= this times the live channels


@dataclass(frozen=True)
class FastConvData(ConvData):
    """The reference OpData (every field, so reference helpers accept it) plus the fast path's plan."""

    plan: ConvPlan | None = None        # None: the reference invoke runs


class ConvPlan:
    """Everything the fast invoke needs, built at prepare: buffers, views, GEMM weights and the epilogue."""

    __slots__ = ("cols", "cols_source", "epilogue", "folded", "full", "image", "interior", "live", "rows", "source",
                 "target", "weights")

    def __init__(self, data: ConvData, x_shape, w: np.ndarray, bias: np.ndarray | None, y_shape) -> None:
        n, in_h, in_w, c_in = x_shape
        c_out, kh, kw, _ = w.shape
        _, oh, ow, _ = y_shape
        zp_in = -data.input_offset
        k = kh * kw * c_in
        w2 = w.reshape(c_out, k).astype(np.int64)
        bias64 = np.zeros(c_out, np.int64) if bias is None else bias.astype(np.int64).reshape(-1)
        self.epilogue = Epilogue(data.multipliers, data.shifts, data.output_offset, int(data.act_min),
                                 int(data.act_max), accumulator_range(w2, zp_in, bias64))
        self.weights = gemm_weights(w2, bias64 - zp_in * w2.sum(axis=1), self.epilogue.constant)
        fold = kh == kw == 1 and k < _FOLD_BELOW and n * oh * ow * c_out <= _FOLD_OUTPUTS and not self.epilogue.signed
        folded = self.epilogue.fold(self.weights.astype(np.int64)) if fold else None
        self.folded = folded is not None
        if self.folded:
            self.weights = folded
        # channels with a constant output need no products: the GEMM runs on the others' columns, scattered into
        # an accumulator buffer whose constant columns stay 0 (what their zero weight columns would give), when
        # the products saved outweigh the scatter (about 70 multiply-adds per scattered value, measured)
        live = np.flatnonzero(~self.epilogue.constant)
        self.full = None
        if not self.folded and (k + 1) * (c_out - len(live)) >= _SCATTER_COST * len(live):
            self.full = np.zeros((n * oh * ow, c_out), self.weights.dtype)
            self.weights = np.ascontiguousarray(self.weights[:, live])
        self.live = live
        dtype = self.weights.dtype
        self.rows = n * oh * ow
        self.cols = np.full((self.rows, k + 1), zp_in, dtype)
        self.cols[:, k] = 1.0
        windows = _view(self.cols[:, :k], (n, oh, ow, kh, kw, c_in))
        sh, sw, dh, dw, ph, pw = (data.stride_h, data.stride_w, data.dilation_h, data.dilation_w, data.pad_h,
                                  data.pad_w)
        if kh == kw == 1 and ph == pw == 0 and (oh - 1) * sh < in_h and (ow - 1) * sw < in_w:
            # 1x1 without padding: every tap is inside the image, the strided input is the column block
            self.image = self.interior = self.cols_source = None
            self.source = (slice(None), slice(0, (oh - 1) * sh + 1, sh), slice(0, (ow - 1) * sw + 1, sw))
            self.target = windows[:, :, :, 0, 0, :]
            return
        # zp-filled image covering every tap position: input rows [-ph, -ph + h), columns [-pw, -pw + wd)
        h, wd = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
        self.image = np.full((n, h, wd, c_in), zp_in, dtype)
        r0, r1 = max(0, -ph), min(in_h, h - ph)
        c0, c1 = max(0, -pw), min(in_w, wd - pw)
        self.source = (slice(None), slice(r0, max(r0, r1)), slice(c0, max(c0, c1)))
        self.interior = self.image[:, r0 + ph:max(r0, r1) + ph, c0 + pw:max(c0, c1) + pw]
        s = self.image.strides
        self.target = windows
        self.cols_source = np.lib.stride_tricks.as_strided(
            self.image, (n, oh, ow, kh, kw, c_in), (s[0], sh * s[1], sw * s[2], dh * s[1], dw * s[2], s[3]),
            writeable=False)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        if self.image is None:
            np.copyto(self.target, x[self.source])
        else:
            np.copyto(self.interior, x[self.source])
            np.copyto(self.target, self.cols_source)
        if self.full is not None:
            if len(self.live):
                self.full[:, self.live] = gemm(self.cols, self.weights, "conv_acc")
            self.epilogue(self.full, out)
        elif self.folded:
            self.epilogue.finish(gemm(self.cols, self.weights, "conv_acc"), out)
        else:
            self.epilogue(gemm(self.cols, self.weights, "conv_acc"), out)


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (raises if that is impossible), so writes reach ``a``."""
    v = a.view()
    v.shape = shape
    return v


def _plan(ctx, op, data: ConvData) -> ConvPlan | None:
    x, w, y = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
    bias = ctx.input(op, 2)
    if data.kind != "int8" or data.groups != 1 or y.type_name != "INT8":
        return None
    if min(data.stride_h, data.stride_w, data.dilation_h, data.dilation_w) < 1 or y.num_elements == 0:
        return None
    if data.int4_packed is not None:
        weights = unpack_int4(data.int4_packed, np.empty(data.filter_shape, np.int8))
    elif w.data is not None:
        weights = w.data
    else:
        return None
    if bias is not None and bias.data is None:
        return None
    n, _, _, c_in = x.shape
    c_out, kh, kw, _ = data.filter_shape
    _, oh, ow, _ = y.shape
    image = n * ((oh - 1) * data.stride_h + (kh - 1) * data.dilation_h + 1) * \
        ((ow - 1) * data.stride_w + (kw - 1) * data.dilation_w + 1) * c_in
    if 8 * (image + n * oh * ow * (kh * kw * c_in + 1 + c_out)) > _MAX_PLAN_BYTES:
        return None
    return ConvPlan(data, x.shape, weights, None if bias is None else bias.data, y.shape)


class Conv2D:
    def prepare(self, ctx, op) -> FastConvData:
        data = REFERENCE.prepare(ctx, op)
        return FastConvData(**{f.name: getattr(data, f.name) for f in fields(ConvData)}, plan=_plan(ctx, op, data))

    def invoke(self, ctx, op, data: FastConvData) -> None:
        if data.plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        out = ctx.output(op, 0)
        data.plan.run(ctx.input(op, 0), out.reshape(data.plan.rows, out.shape[-1]))


KERNEL = Conv2D()
