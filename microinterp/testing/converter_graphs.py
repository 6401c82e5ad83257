"""Builder-made equivalents of what the stock TFLite converter writes for common Keras layers (int8, batch 1).

Each function returns model bytes whose op sequence, tensor types and option use follow the converter's output for:

* :func:`dilated_conv1d_swish` -- ``Conv1D(dilation_rate=2)`` + swish: TF lowers the dilated 1-D convolution to
  SPACE_TO_BATCH_ND (3-D) -> EXPAND_DIMS -> CONV_2D -> SQUEEZE -> BATCH_TO_SPACE_ND, swish to LOGISTIC + MUL;
* :func:`reflect_pixel_shuffle` -- ``tf.pad(mode="REFLECT")``, a VALID convolution, ``tf.nn.depth_to_space`` /
  ``space_to_depth``, ``tf.reverse`` and ``x * x`` (the converter's int8 square is a MUL);
* :func:`where_reduce_min_cumsum` -- ``tf.where(x > y, x, y)``, ``tf.reduce_min``, ``tf.math.cumsum``;
* :func:`attention_block` -- ``LayerNormalization`` (MEAN, SQUARED_DIFFERENCE, ADD epsilon, RSQRT, SUB, MUL) and a
  two-head ``MultiHeadAttention`` (FULLY_CONNECTED projections, RESHAPE/TRANSPOSE into heads, BATCH_MATMUL for
  ``Q K^T`` and ``scores V``, SOFTMAX), with the residual ADD.

Weights are random with a fixed seed; quantization parameters are in the ranges the converter produces (per-channel
int8 convolution weights, per-tensor activations). They are test models: the outputs carry no meaning, the point is
that every op and its parameters are the converter's kind, so a model of that kind runs bit-exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .builder import ModelBuilder


class _Graph:
    """A tiny int8 graph writer: tensors with explicit quantization, ops appended in order."""

    def __init__(self, seed: int, name: str):
        self.b = ModelBuilder(description=name)
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def t(self, shape: Sequence[int], scale: float | None = 0.05, zp: int = 0, type_name: str = "INT8",
          data: Any = None, axis: int = 0) -> int:
        self.n += 1
        kw = {} if scale is None else {"scale": scale, "zero_point": zp}
        return self.b.add_tensor(f"t{self.n}", tuple(shape), type_name, data=data, axis=axis, **kw)

    def const_i32(self, values) -> int:
        arr = np.asarray(values, dtype=np.int32)
        return self.t(arr.shape, None, type_name="INT32", data=arr)

    def weights(self, shape: Sequence[int], channels_axis: int | None = 0) -> int:
        w = self.rng.integers(-127, 128, size=tuple(shape)).astype(np.int8)
        if channels_axis is None:
            return self.t(shape, 0.01, 0, data=w)
        scales = self.rng.uniform(0.004, 0.012, size=shape[channels_axis]).astype(np.float32)
        return self.b.add_tensor(f"w{self.n}", tuple(shape), "INT8", data=w, scale=scales,
                                 zero_point=[0] * len(scales), axis=channels_axis)

    def bias(self, n: int, scale: float | np.ndarray) -> int:
        b = self.rng.integers(-500, 500, size=n).astype(np.int32)
        scales = np.broadcast_to(np.asarray(scale, np.float32), (n,)).astype(np.float32)
        return self.b.add_tensor(f"b{self.n}", (n,), "INT32", data=b, scale=scales, zero_point=[0] * n)

    def op(self, name: str, inputs: Sequence[int], out: int, **options) -> int:
        self.b.add_op(name, list(inputs), [out], **options)
        return out

    def build(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        self.b.inputs, self.b.outputs = list(inputs), list(outputs)
        return self.b.build()


def _conv(g: _Graph, x: int, in_scale: float, shape_out: Sequence[int], kernel: tuple[int, int], cin: int,
          out_q: tuple[float, int], **options) -> int:
    cout = shape_out[-1]
    w = g.weights((cout, kernel[0], kernel[1], cin))
    scales = g.b.tensors[w].scales
    bias = g.bias(cout, np.asarray(scales, np.float64) * in_scale)
    return g.op("CONV_2D", [x, w, bias], g.t(shape_out, *out_q), **options)


def dilated_conv1d_swish(steps: int = 30, channels: int = 6, filters: int = 8, seed: int = 0,
                         padding: str = "valid") -> bytes:
    """(1, steps, channels) -> Conv1D(filters, 3, dilation 2, padding) -> swish, as the converter lowers it.

    ``padding="same"`` makes SPACE_TO_BATCH_ND pad, and TFLM fills that padding from a field its Prepare never
    sets (see :mod:`microinterp.kernels.space_to_batch_nd`): the wheel's result then changes from run to run, so the
    wheel comparison uses ``"valid"`` (an even ``steps``: no padding).
    """
    g = _Graph(seed, "converter pattern: dilated Conv1D + swish")
    x = g.t((1, steps, channels), 0.04, -3)
    if padding == "same":
        before, after = 2, 2 + (steps + 4) % 2
    else:
        before, after = 0, steps % 2
    padded = steps + before + after
    out_steps = steps if padding == "same" else steps - 4
    s2b = g.op("SPACE_TO_BATCH_ND", [x, g.const_i32([2]), g.const_i32([[before, after]])],
               g.t((2, padded // 2, channels), 0.04, -3))
    e = g.op("EXPAND_DIMS", [s2b, g.const_i32([1])], g.t((2, 1, padded // 2, channels), 0.04, -3))
    c = _conv(g, e, 0.04, (2, 1, padded // 2 - 2, filters), (1, 3), channels, (0.08, 5), padding="VALID",
              stride_w=1, stride_h=1, fused_activation_function="NONE")
    sq = g.op("SQUEEZE", [c], g.t((2, padded // 2 - 2, filters), 0.08, 5), squeeze_dims=[1])
    b2s = g.op("BATCH_TO_SPACE_ND", [sq, g.const_i32([2]), g.const_i32([[0, padded - 4 - out_steps]])],
               g.t((1, out_steps, filters), 0.08, 5))
    sig = g.op("LOGISTIC", [b2s], g.t((1, out_steps, filters), 1 / 256, -128))
    y = g.op("MUL", [b2s, sig], g.t((1, out_steps, filters), 0.06, -40), fused_activation_function="NONE")
    return g.build([x], [y])


def reflect_pixel_shuffle(size: int = 12, channels: int = 4, seed: int = 1) -> bytes:
    """REFLECT pad -> 3x3 VALID conv to 4C -> depth_to_space(2) -> space_to_depth(2) -> reverse(W) -> x*x."""
    g = _Graph(seed, "converter pattern: reflect padding + pixel shuffle")
    x = g.t((1, size, size, channels), 0.03, 7)
    p = g.op("MIRROR_PAD", [x, g.const_i32([[0, 0], [1, 1], [1, 1], [0, 0]])],
             g.t((1, size + 2, size + 2, channels), 0.03, 7), mode=0)
    c = _conv(g, p, 0.03, (1, size, size, 4 * channels), (3, 3), channels, (0.07, -2), padding="VALID",
              stride_w=1, stride_h=1, fused_activation_function="RELU")
    d2s = g.op("DEPTH_TO_SPACE", [c], g.t((1, 2 * size, 2 * size, channels), 0.07, -2), block_size=2)
    s2d = g.op("SPACE_TO_DEPTH", [d2s], g.t((1, size, size, 4 * channels), 0.07, -2), block_size=2)
    rev = g.op("REVERSE_V2", [s2d, g.const_i32([2])], g.t((1, size, size, 4 * channels), 0.07, -2))
    y = g.op("MUL", [rev, rev], g.t((1, size, size, 4 * channels), 0.2, -128), fused_activation_function="NONE")
    return g.build([x], [y])


def where_reduce_min_cumsum(rows: int = 6, cols: int = 16, seed: int = 2) -> bytes:
    """tf.where(x > y, x, y) with a constant y, reduce_min over the last axis, cumsum over the rows."""
    g = _Graph(seed, "converter pattern: where / reduce_min / cumsum")
    x = g.t((1, rows, cols), 0.05, -10)
    yv = g.rng.integers(-128, 128, size=(1, rows, cols)).astype(np.int8)
    y = g.t((1, rows, cols), 0.05, -10, data=yv)
    gt = g.op("GREATER", [x, y], g.t((1, rows, cols), None, type_name="BOOL"))
    sel = g.op("SELECT_V2", [gt, x, y], g.t((1, rows, cols), 0.05, -10))
    red = g.op("REDUCE_MIN", [sel, g.const_i32([2])], g.t((1, rows), 0.05, -10), keep_dims=False)
    out = g.op("CUMSUM", [red, g.const_i32([1])], g.t((1, rows), 0.3, -20), exclusive=False, reverse=False)
    return g.build([x], [out])


def attention_block(seq: int = 8, dim: int = 16, heads: int = 2, seed: int = 3) -> bytes:
    """LayerNormalization + 2-head self-attention + residual, int8, as the converter writes the Keras layers."""
    g = _Graph(seed, "converter pattern: LayerNormalization + MultiHeadAttention")
    hd = dim // heads
    x = g.t((1, seq, dim), 0.05, 2)
    # LayerNormalization: mean, variance, rsqrt(var + eps), (x - mean) * rsqrt
    mean = g.op("MEAN", [x, g.const_i32([2])], g.t((1, seq, 1), 0.05, 2), keep_dims=True)
    sqd = g.op("SQUARED_DIFFERENCE", [x, mean], g.t((1, seq, dim), 0.02, -128))
    var = g.op("MEAN", [sqd, g.const_i32([2])], g.t((1, seq, 1), 0.02, -128), keep_dims=True)
    eps = g.t((1,), 0.02, -128, data=np.array([-127], np.int8))
    var_eps = g.op("ADD", [var, eps], g.t((1, seq, 1), 0.02, -128), fused_activation_function="NONE")
    inv = g.op("RSQRT", [var_eps], g.t((1, seq, 1), 0.05, -128))
    centered = g.op("SUB", [x, mean], g.t((1, seq, dim), 0.05, 0), fused_activation_function="NONE")
    normed = g.op("MUL", [centered, inv], g.t((1, seq, dim), 0.03, 0), fused_activation_function="NONE")
    flat = g.op("RESHAPE", [normed, g.const_i32([seq, dim])], g.t((seq, dim), 0.03, 0), new_shape=[seq, dim])

    def project(name_q: tuple[float, int]) -> int:
        w = g.weights((dim, dim), channels_axis=None)
        bias = g.bias(dim, 0.03 * 0.01)
        return g.op("FULLY_CONNECTED", [flat, w, bias], g.t((seq, dim), *name_q), fused_activation_function="NONE",
                    keep_num_dims=False)

    def split_heads(t: int, q: tuple[float, int]) -> int:
        r = g.op("RESHAPE", [t, g.const_i32([1, seq, heads, hd])], g.t((1, seq, heads, hd), *q),
                 new_shape=[1, seq, heads, hd])
        return g.op("TRANSPOSE", [r, g.const_i32([0, 2, 1, 3])], g.t((1, heads, seq, hd), *q))

    qq, kq, vq = (0.04, 1), (0.04, -2), (0.04, 3)
    qh, kh, vh = (split_heads(project(q), q) for q in (qq, kq, vq))
    scores = g.op("BATCH_MATMUL", [qh, kh], g.t((1, heads, seq, seq), 0.1, -5), adj_x=False, adj_y=True)
    probs = g.op("SOFTMAX", [scores], g.t((1, heads, seq, seq), 1 / 256, -128), beta=1.0 / np.sqrt(hd))
    ctx = g.op("BATCH_MATMUL", [probs, vh], g.t((1, heads, seq, hd), 0.03, 2), adj_x=False, adj_y=False)
    merged = g.op("TRANSPOSE", [ctx, g.const_i32([0, 2, 1, 3])], g.t((1, seq, heads, hd), 0.03, 2))
    m2 = g.op("RESHAPE", [merged, g.const_i32([seq, dim])], g.t((seq, dim), 0.03, 2), new_shape=[seq, dim])
    w_o = g.weights((dim, dim), channels_axis=None)
    attn = g.op("FULLY_CONNECTED", [m2, w_o, g.bias(dim, 0.03 * 0.01)], g.t((seq, dim), 0.05, 0),
                fused_activation_function="NONE", keep_num_dims=False)
    a3 = g.op("RESHAPE", [attn, g.const_i32([1, seq, dim])], g.t((1, seq, dim), 0.05, 0), new_shape=[1, seq, dim])
    y = g.op("ADD", [x, a3], g.t((1, seq, dim), 0.07, 1), fused_activation_function="NONE")
    return g.build([x], [y])


GRAPHS = {"dilated_conv1d_swish": dilated_conv1d_swish, "reflect_pixel_shuffle": reflect_pixel_shuffle,
          "where_reduce_min_cumsum": where_reduce_min_cumsum, "attention_block": attention_block}
