"""SVDF: TFLM's reference kernel (int8 input with int8 or int16 state/time weights, and float32).

TFLM (``micro/kernels/svdf.cc``, ``svdf_common.cc``). Inputs: 0 = input ``[B, I]``, 1 = weights_feature
``[F, I]``, 2 = weights_time ``[F, M]``, 3 = bias ``[F / rank]``, 4 = activation state (a *variable* tensor
``[B, F·M]``, viewed as ``[B, F, M]``); output ``[B, F / rank]``. One invoke:

1. shift the whole flat state buffer left by one element (``state[i] = state[i + 1]``);
2. feature matmul into the newest slot ``state[b, f, M - 1]``: int8: ``d = MBQM(Σ wf·(x − zp_in), e1)``
   clamped to the state type's range, then ``state = d + zp_state`` cast to the state type, i.e. *wrapping*
   (the wheel adds the zero point after the clamp; newer TFLM sources add it before); float: a sequential
   float32 dot product;
3. time matmul ``s[b, f] = Σ_m wt[f, m]·(state[b, f, m] − zp_state)`` (int32, wrapping; float: sequential
   float32);
4. ``out[b, u] = bias[u] + Σ_{r < rank} s[b, u·rank + r]``; int8: ``clamp(MBQM(out, e2) + zp_out, -128, 127)``
   (no fused activation in the integer path); float: the fused activation (``ActivationValFloat``: RELU,
   RELU6, RELU_N1_TO_1, TANH via libm ``tanhf``, SIGN_BIT).

``e1 = s_in·s_wf/s_state`` and ``e2 = s_state·s_wt/s_out`` in double (wheel), QuantizeMultiplier. Prepare
requires ``|s_bias − s_state·s_wt| < 1e-5`` for int8. The integer kernel is templated on the weights_time type
and reads the state with the same type, so both must agree. Scratch requests (planned): int8
``[4·B·F, 4·B·units]``, float ``[4·B·F]``. TFLM dereferences the bias unconditionally (TODO #1751; the wheel
segfaults without one), so a missing bias is refused here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy._core import umath as np_umath

from ..libm import tanhf
from ..quant import QMAX, QMIN, Requantizer, quantize_multiplier, wrap_int32
from ._float_dot import BoundDot, c_einsum, sequential_dot_core, sequential_taps_core
from ._qutil import copyto


@dataclass(frozen=True)
class SvdfData:
    quantized: bool
    rank: int
    activation: str
    e1: tuple[int, int]
    e2: tuple[int, int]
    input_zp: int
    state_zp: int
    output_zp: int
    state_min: int
    state_max: int
    features: np.ndarray | None = None      # int8: constant weights_feature as float64 [I, F] (exact products)
    time_weights: np.ndarray | None = None  # int8: constant weights_time as int64 [F, M]
    requantize: tuple[Requantizer, Requantizer] | None = None      # int8: MBQM with e1, e2, prepared once


class Svdf:
    def prepare(self, ctx, op) -> SvdfData:
        ctx.check_io_count(op, 5, 1)
        x, wf, wt = (ctx.require_input(op, k) for k in range(3))
        bias, state, y = ctx.input(op, 3), ctx.require_input(op, 4), ctx.output(op, 0)
        rank = int(op.options.get("rank", 0))
        if rank <= 0:
            raise ctx.fail(op, f"rank must be positive, got {rank}")
        if len(x.shape) != 2 or len(wf.shape) != 2 or len(wt.shape) != 2:
            raise ctx.fail(op, "input, weights_feature and weights_time must be 2-D")
        batch, input_size = x.shape
        filters, memory = wf.shape[0], wt.shape[1]
        if filters % rank:
            raise ctx.fail(op, f"{filters} filters are not a multiple of rank {rank}")
        units = filters // rank
        if x.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"input type {x.type_name} not supported")
        if y.shape != (batch, units):
            raise ctx.fail(op, f"output shape {y.shape} must be {(batch, units)}")
        if wf.shape[1] != input_size or wt.shape[0] != filters:
            raise ctx.fail(op, f"weight shapes {wf.shape}, {wt.shape} do not match input {x.shape}")
        if bias is None:
            raise ctx.fail(op, "a bias is required (TFLM dereferences it unconditionally)")
        if bias.shape[:1] != (units,):
            raise ctx.fail(op, f"bias shape {bias.shape} must start with {units}")
        if state.shape != (batch, memory * filters):
            raise ctx.fail(op, f"state shape {state.shape} must be {(batch, memory * filters)}")
        if not state.is_variable:
            raise ctx.fail(op, "the activation state must be a variable tensor")
        act = op.options.get("fused_activation_function", "NONE")

        if x.type_name == "INT8":
            if wf.type_name != "INT8":
                raise ctx.fail(op, f"weights_feature type {wf.type_name} must be INT8")
            if wt.type_name not in ("INT8", "INT16") or state.type_name not in ("INT8", "INT16"):
                raise ctx.fail(op, "weights_time and state must be INT8 or INT16")
            if wt.type_name != state.type_name:
                raise ctx.fail(op, f"state type {state.type_name} must match weights_time type "
                                   f"{wt.type_name}")
            if bias.type_name != "INT32":
                raise ctx.fail(op, f"bias type {bias.type_name} must be INT32")
            if y.type_name != "INT8":
                raise ctx.fail(op, f"output type {y.type_name} must be INT8")
            q = [t.quantization for t in (x, wf, wt, bias, state, y)]
            if any(v is None for v in q):
                raise ctx.fail(op, "int8 SVDF needs quantization on every tensor")
            qx, qwf, qwt, qb, qs, qy = q
            s_state = np.float64(qs.scale)
            if not abs(np.float64(qb.scale) - s_state * np.float64(qwt.scale)) < 1e-5:
                raise ctx.fail(op, "bias scale must equal state scale * weights_time scale")
            e1 = quantize_multiplier(np.float64(qx.scale) * np.float64(qwf.scale) / s_state)
            e2 = quantize_multiplier(s_state * np.float64(qwt.scale) / np.float64(qy.scale))
            ctx.request_scratch(op, batch * filters * 4)
            ctx.request_scratch(op, batch * units * 4)
            return SvdfData(True, rank, act, e1, e2, qx.zero_point, qs.zero_point, qy.zero_point,
                            QMIN[state.type_name], QMAX[state.type_name],
                            None if wf.data is None else np.ascontiguousarray(wf.data.astype(np.float64).T),
                            None if wt.data is None else wt.data.astype(np.int64),
                            (Requantizer(*e1), Requantizer(*e2)))
        for t, what in ((wf, "weights_feature"), (wt, "weights_time"), (state, "state"), (bias, "bias"),
                        (y, "output")):
            if t.type_name != "FLOAT32":
                raise ctx.fail(op, f"{what} type {t.type_name} must be FLOAT32")
        if act not in _FLOAT_ACTIVATIONS:
            raise ctx.fail(op, f"activation {act} not supported")
        ctx.request_scratch(op, batch * filters * 4)
        return SvdfData(False, rank, act, (0, 0), (0, 0), 0, 0, 0, 0, 0)

    def bind(self, ctx, op, data: SvdfData):
        """Constant weights on fixed views: :func:`_bind_quantized` (int8) or :func:`_bind_float` (None otherwise:
        :meth:`invoke`)."""
        x, wf, wt, bias, state_view = (ctx.input(op, k) for k in range(5))
        if any(t.flags.writeable for t in (wf, wt, bias)):
            return None
        if not data.quantized:
            return _bind_float(x, wf, wt, bias, state_view, ctx.output(op, 0), data)
        return _bind_quantized(x, bias, state_view, ctx.output(op, 0), data)     # (prepare kept the constants)

    def invoke(self, ctx, op, data: SvdfData) -> None:
        x, wf, wt, bias, state_view = (ctx.input(op, k) for k in range(5))
        out = ctx.output(op, 0)
        batch = x.shape[0]
        filters, memory = wt.shape
        flat = state_view.reshape(-1)
        flat[:-1] = flat[1:]            # NumPy copies overlapping ranges as memmove does
        state = flat.reshape(batch, filters, memory)
        if data.quantized:
            first, second = data.requantize
            features = data.features if data.features is not None else wf.astype(np.float64).T
            dot = (x.astype(np.float64) - data.input_zp) @ features             # exact: |acc| < 2^53
            d = first(wrap_int32(dot.astype(np.int64)))
            d = np.minimum(np.maximum(d, data.state_min), data.state_max)
            state[:, :, -1] = (d + data.state_zp).astype(state.dtype)    # C narrowing cast: wraps
            centred = state.astype(np.int64) - data.state_zp
            time_weights = data.time_weights if data.time_weights is not None else wt.astype(np.int64)
            s = wrap_int32(np.einsum("bfm,fm->bf", centred, time_weights))
            acc = wrap_int32(s.reshape(batch, -1, data.rank).sum(axis=2) + bias.astype(np.int64))
            out[...] = np.minimum(np.maximum(second(acc) + data.output_zp, -128), 127)
            return
        # Float: every sum is sequential float32, in TFLM's order (the feature dot product as the FC kernel's; the
        # time one per filter, over its own memory)
        with np.errstate(all="ignore"):
            state[:, :, -1] = sequential_dot_core(np.ascontiguousarray(x.T, np.float32), np.asarray(wf, np.float32))
            xs_t = np.ascontiguousarray(state.transpose(2, 0, 1))                       # [M, B, F]
            s = sequential_taps_core(xs_t, np.ascontiguousarray(np.asarray(wt, np.float32).T))
        s = s.reshape(batch, -1, data.rank)
        acc = np.broadcast_to(bias.reshape(-1)[:s.shape[1]], s.shape[:2]).astype(np.float32)
        for r in range(data.rank):
            acc = acc + s[:, :, r]
        out[...] = _FLOAT_ACTIVATIONS[data.activation](acc)


def _bind_quantized(x: np.ndarray, bias: np.ndarray, state_view: np.ndarray, out: np.ndarray, data: SvdfData):
    """:meth:`Svdf.invoke`'s int8 steps on kept buffers: the state shifted by one copy (NumPy copies overlapping
    ranges as memmove does), the feature product in float64 (exact: ``|acc| < 2^53``), its MBQM, clamp and wrapping
    store into the newest slot, the time product as float64 products summed over the memory (exact integers), the
    rank sums plus the bias; each int32 wrap only where the sums can leave int32 (bounds from the constant
    weights), then the second MBQM, the output zero point and the clamp."""
    batch, filters, memory = x.shape[0], *data.time_weights.shape
    units, rank = filters // data.rank, data.rank
    flat = state_view.reshape(-1)
    head, tail = flat[:-1], flat[1:]
    state = flat.reshape(batch, filters, memory)
    newest = state[:, :, -1]
    features, time_weights = data.features, data.time_weights.astype(np.float64)
    xf, dot = np.empty(x.shape, np.float64), np.empty((batch, filters), np.float64)
    d, d32, y = np.empty((batch, filters), np.int64), np.empty((batch, filters), np.int32), np.empty((batch, filters),
                                                                                                    np.int64)
    centred, sums = np.empty(state.shape, np.float64), np.empty((batch, filters), np.float64)
    s = np.empty((batch, filters), np.int64)
    acc, acc32, z = (np.empty((batch, units), t) for t in (np.int64, np.int32, np.int64))
    bias64 = bias.reshape(-1)[:units].astype(np.int64)
    # the largest magnitudes each int32 sum can reach (inputs and state anywhere in their types): a wrap (one C
    # cast to int32) only where one can leave int32; the time sums and the bias add up modulo 2^32 in C, so one
    # wrap of their exact total is the C code's
    feature_reach = 255 * float(np.abs(features).sum(axis=0).max(initial=0))
    state_span = max(abs(data.state_min - data.state_zp), abs(data.state_max - data.state_zp))
    time_reach = state_span * float(np.abs(time_weights).sum(axis=1).max(initial=0))
    wrap_features = feature_reach >= 2 ** 31
    wrap_acc = rank * time_reach + float(np.abs(bias64).max(initial=0)) >= 2 ** 31
    first = data.requantize[0].bind(d32 if wrap_features else d, y)
    second = data.requantize[1].bind(acc32 if wrap_acc else acc, z)
    time_sums = s.reshape(batch, units, rank)
    zp_in, zp_state = np.array(float(data.input_zp)), np.array(float(data.state_zp))
    state_lo, state_hi, zp_state64 = (np.array(v, np.int64) for v in (data.state_min, data.state_max, data.state_zp))
    out_lo, out_hi, zp_out64 = (np.array(v, np.int64) for v in (-128, 127, data.output_zp))

    def call() -> None:
        copyto(head, tail)                              # state[i] = state[i + 1]
        copyto(xf, x)
        np.subtract(xf, zp_in, out=xf)
        np.matmul(xf, features, out=dot)
        copyto(d, dot, casting="unsafe")
        if wrap_features:
            copyto(d32, d, casting="unsafe")
        first()
        np_umath.clip(y, state_lo, state_hi, out=y)
        np.add(y, zp_state64, out=y)
        copyto(newest, y, casting="unsafe")             # C's narrowing store: wraps
        copyto(centred, state)
        np.subtract(centred, zp_state, out=centred)
        c_einsum("bfm,fm->bf", centred, time_weights, out=sums)
        copyto(s, sums, casting="unsafe")
        if rank == 1:
            np.add(time_sums[:, :, 0], bias64, out=acc)
        else:
            np.add.reduce(time_sums, axis=2, out=acc)
            np.add(acc, bias64, out=acc)
        if wrap_acc:
            copyto(acc32, acc, casting="unsafe")
        second()
        np.add(z, zp_out64, out=z)
        np_umath.clip(z, out_lo, out_hi, out=z)
        copyto(out, z, casting="unsafe")
    return call


def _bind_float(x: np.ndarray, wf: np.ndarray, wt: np.ndarray, bias: np.ndarray, state_view: np.ndarray,
                out: np.ndarray, data: SvdfData):
    """:meth:`Svdf.invoke`'s float steps on kept buffers: the state shifted by one copy, the feature sums as a
    :class:`._float_dot.BoundDot` (TFLM's sequential float32 order, x86's NaNs) into the newest slot, the time sums
    over each filter's memory as :meth:`._float_dot.BoundDot.taps` on the state laid out memory first, then the
    bias plus the rank sums and the activation, as the invoke's own operations."""
    batch, filters, memory = x.shape[0], *wt.shape
    units, rank = filters // data.rank, data.rank
    flat = state_view.reshape(-1)
    head, tail = flat[:-1], flat[1:]
    state = flat.reshape(batch, filters, memory)
    newest, memory_first = state[:, :, -1], state.transpose(2, 0, 1)
    x_t, xs_t = np.empty((x.shape[1], batch), np.float32), np.empty((memory, batch, filters), np.float32)
    features = BoundDot(x_t, np.ascontiguousarray(wf, np.float32))
    time_sums = BoundDot.taps(xs_t, np.ascontiguousarray(np.asarray(wt, np.float32).T))
    start = np.broadcast_to(bias.reshape(-1)[:units], (batch, units)).astype(np.float32)
    acc = np.empty((batch, units), np.float32)
    activation = _FLOAT_ACTIVATIONS[data.activation]

    def call() -> None:            # under the runtime's quiet errstate
        copyto(head, tail)                              # state[i] = state[i + 1]
        copyto(x_t, x.T)
        copyto(newest, features())
        copyto(xs_t, memory_first)
        s = time_sums().reshape(batch, units, rank)
        np.add(start, s[:, :, 0], out=acc)
        for r in range(1, rank):
            np.add(acc, s[:, :, r], out=acc)
        out[...] = activation(acc)
    return call


def _relu(a: np.ndarray) -> np.ndarray:
    """TfLiteMax(0.0f, a)."""
    return np.where(a > 0, a, np.float32(0))


_FLOAT_ACTIVATIONS = {
    "NONE": lambda a: a,
    "RELU": _relu,
    "RELU_N1_TO_1": lambda a: np.maximum(np.float32(-1), np.minimum(a, np.float32(1))),
    "RELU6": lambda a: _relu(np.minimum(a, np.float32(6))),
    "TANH": tanhf,
    "SIGN_BIT": lambda a: np.signbit(a).astype(np.float32),
}


KERNEL = Svdf()
