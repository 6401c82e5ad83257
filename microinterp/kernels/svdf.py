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
from ..quant import INT32_MAX, INT32_MIN, QMAX, QMIN, Requantizer, quantize_multiplier, wrap_int32
from ._float_dot import BoundDot, sequential_dot_core, sequential_taps_core
from ._float_order import c_einsum
from ._qutil import copyto
from ._step_requant import bracket, requantization_steps
from ._weight_stats import accumulator_range
from .contract import PURE, Kernel


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


class Svdf(Kernel):
    ops = ("SVDF",)
    traits = PURE
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
    ranges as memmove does); the feature product ``[x | 1] @ [W ; -zp_in sum W]`` in float64 (exact: ``|acc| <
    2^53``, the input zero point folded into a last row); its MBQM, clamp and wrapping store into the newest slot;
    the time product as float64 products over the memory plus a last tap holding ``bias - zp_state sum_m wt`` (the
    state zero point and the bias folded in: exact integers) and the rank sums; each int32 wrap only where the sums
    can leave int32 (bounds from the constant weights), then the second MBQM, the output zero point and the clamp.

    Both requantizations are non-decreasing step functions of their accumulators where nothing wraps before them
    (:mod:`._step_requant`): then each is one ``searchsorted`` whose index, stored by the narrowing cast, is the
    value -- for the state, ``clamp(MBQM) + zp_state`` modulo the state type, as the wheel stores it
    (:meth:`._step_requant.StepRequantizer.coded`). Elsewhere (a left shift that wraps, accumulators past int32)
    the MBQM, clamp and zero point run as array operations. None (the invoke) where a product could pass 2^53."""
    batch, filters, memory = x.shape[0], *data.time_weights.shape
    units, rank = filters // data.rank, data.rank
    inputs = x.shape[1]
    flat = state_view.reshape(-1)
    head, tail = flat[:-1], flat[1:]
    state = flat.reshape(batch, filters, memory)
    newest = state[:, :, -1]
    features = np.concatenate([data.features, -data.input_zp * data.features.sum(axis=0, keepdims=True)])
    bias64 = bias.reshape(-1)[:units].astype(np.int64)
    folded = -data.state_zp * data.time_weights.sum(axis=1)              # [F]: -zp_state sum_m wt
    folded[::rank] += bias64                                             # each unit's bias on its first filter
    time_weights = np.concatenate([data.time_weights, folded[:, None]], axis=1).astype(np.float64)
    # float64 holds every partial sum of both products exactly below 2^53 (raw int8 inputs, the state's values)
    state_abs = max(abs(data.state_min), abs(data.state_max))
    time_bound = rank * float((state_abs * np.abs(data.time_weights).sum(axis=1) + np.abs(folded)).max(initial=0))
    feature_bound = float((128 * np.abs(features[:-1]).sum(axis=0) + np.abs(features[-1])).max(initial=0))
    if max(time_bound, feature_bound) >= 2.0 ** 53:
        return None                 # (no model comes near: the invoke's int64 arithmetic)
    xf = np.ones((batch, inputs + 1), np.float64)                        # [x | 1]
    xs, dot = xf[:, :inputs], np.empty((batch, filters), np.float64)
    taps = np.ones((batch, filters, memory + 1), np.float64)             # [state | 1]
    state_taps, sums = taps[:, :, :memory], np.empty((batch, filters), np.float64)
    total = sums if rank == 1 else np.empty((batch, units), np.float64)
    # the largest magnitudes each int32 sum can reach (inputs and state anywhere in their types): a wrap (one C
    # cast to int32) only where one can leave int32; the time sums and the bias add up modulo 2^32 in C, so one
    # wrap of their exact total is the C code's
    lows, highs = accumulator_range(data.features.T, data.input_zp)      # every filter's feature sum
    acc_lo, acc_hi = int(lows.min(initial=0)), int(highs.max(initial=0))
    wrap_features = acc_lo < INT32_MIN or acc_hi > INT32_MAX
    state_span = max(abs(data.state_min - data.state_zp), abs(data.state_max - data.state_zp))
    time_reach = state_span * float(np.abs(data.time_weights).sum(axis=1).max(initial=0))
    reach = rank * time_reach + float(np.abs(bias64).max(initial=0))
    wrap_acc = reach >= 2 ** 31
    bits = 8 * state.itemsize
    state_steps = None if wrap_features else requantization_steps(
        *data.e1, 0, data.state_min, data.state_max, acc_lo, acc_hi)
    state_codes = None if state_steps is None else state_steps.coded(bits, data.state_zp)
    out_range = (INT32_MIN, INT32_MAX) if wrap_acc else (-int(reach), int(reach))
    out_steps = requantization_steps(*data.e2, data.output_zp, -128, 127, *out_range,
                                     dtype=np.int64 if wrap_acc else np.float64)
    out_codes = None if out_steps is None else out_steps.coded(8)
    store_state = _stored_by_steps(state_codes, dot, newest) if state_codes is not None else \
        _stored_by_mbqm(data.requantize[0], dot, newest, wrap_features, data.state_min, data.state_max,
                        data.state_zp)
    wrapped = (np.empty((batch, units), np.int64), np.empty((batch, units), np.int32)) if wrap_acc else None
    keys = total if wrapped is None else wrapped[1]
    store_out = _stored_by_steps(out_codes, keys, out) if out_codes is not None else \
        _stored_by_mbqm(data.requantize[1], keys, out, False, -128 - data.output_zp, 127 - data.output_zp,
                        data.output_zp)
    by_unit = sums.reshape(batch, units, rank)

    def call() -> None:
        copyto(head, tail)                              # state[i] = state[i + 1]
        copyto(xs, x)
        np.matmul(xf, features, out=dot)
        store_state()
        copyto(state_taps, state)
        c_einsum("bfm,fm->bf", taps, time_weights, out=sums)
        if rank > 1:
            np.add.reduce(by_unit, axis=2, out=total)
        if wrapped is not None:                         # the exact total, modulo 2^32 as C's int32 sums
            copyto(wrapped[0], total, casting="unsafe")
            copyto(wrapped[1], wrapped[0], casting="unsafe")
        store_out()
    return call


def _stored_by_steps(coded: np.ndarray, keys: np.ndarray, dst: np.ndarray):
    """``dst[...] = index`` of the kept ``keys`` among the ``coded`` thresholds: the narrowing store makes the index
    the value (:meth:`._step_requant.StepRequantizer.coded`)."""
    find = bracket(coded, keys.size)        # searchsorted "right" (a grid guess and a check for many keys)

    def store() -> None:
        copyto(dst, find(keys), casting="unsafe")
    return store


def _stored_by_mbqm(requantize: Requantizer, keys: np.ndarray, dst: np.ndarray, wrap: bool, lo: int, hi: int,
                    zero_point: int):
    """``dst[...] = clamp(MBQM(keys), lo, hi) + zero_point`` (a narrowing, wrapping store) on kept buffers, the keys
    (exact integers) first wrapped to int32 where ``wrap``."""
    acc, acc32, y = (np.empty(keys.shape, t) for t in (np.int64, np.int32, np.int64))
    mbqm = requantize.bind(acc32 if wrap else acc, y)
    lo_hi = (np.array(lo, np.int64), np.array(hi, np.int64))
    zp = np.array(zero_point, np.int64)

    def store() -> None:
        copyto(acc, keys, casting="unsafe")
        if wrap:
            copyto(acc32, acc, casting="unsafe")
        mbqm()
        np_umath.clip(y, *lo_hi, out=y)
        np.add(y, zp, out=y)
        copyto(dst, y, casting="unsafe")             # C's narrowing store: wraps
    return store


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
    w = np.ascontiguousarray(wf, np.float32)
    features = BoundDot(x_t, w, None, np.ascontiguousarray(w.T))    # the transpose: the channels-innermost einsum
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
