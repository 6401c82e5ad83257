"""UNIDIRECTIONAL_SEQUENCE_LSTM: TFLM's own LSTM kernel (not LiteRT's): int8x8->16, 16x8->16 and float32.

TFLM (``micro/kernels/unidirectional_sequence_lstm.cc``, ``lstm_eval.{h,cc}``, ``lstm_eval_common.cc``)
supports only the standard LSTM: 24 inputs (``lstm_shared.h``) with all eight weight matrices and four gate
biases; no CIFG, peephole, projection or layer norm (those inputs must be absent); hidden state (18) and cell
state (19) are variable tensors; intermediates are ignored. Sizes: input ``[B, T, I]`` (``[T, B, I]`` when
``time_major``), ``S`` = hidden state dim 1.

One time step (``LstmStep``), gates in the order forget, input, cell, output::

    gate = act(FC(x_t, W_x, bias) + FC(h, W_h))    # act: sigmoid; cell gate: the fused activation
    c = f ⊙ c;  c = sat(c + i ⊙ g);  c = clip(c)   # clip only when cell_clip > 0
    h = tanh(c) ⊙ o;  output[t] = h

A cell-gate activation other than TANH reaches ``TFLITE_ASSERT_FALSE``, compiled out in release builds such as
the wheel: the gate then keeps its raw pre-activation, and so does this kernel.

Integer (int16 cell state): each FC writes int16 at the fixed scale 2^-12 (zero point 0, full int16 range):
``clamp(MBQM(Σ (w − zp_w)(x − zp_x) + bias, M, s))``, ``M, s`` from ``double(s_x)·double(s_w)/2^-12``. int8
activations accumulate in int32 with int32 biases (double-rounding MBQM); int16 activations in int64 with
int64 biases (single-rounding MBQM64). The wheel subtracts the input zero point in both cases (its 16x8 FC is
the generalized one, unlike ``reference_integer_ops::FullyConnected<int16>`` in the sources). The two FCs are
added with int16 saturation; the int16 LUT sigmoid/tanh (Q3.12 in) give Q0.15. Products use
``MulElementwise`` with scales ``2^-15·s_c/s_c`` (f⊙c), ``2^-15·2^-15/s_c`` (i⊙g) and ``2^-15·2^-15/s_h``
(tanh(c)⊙o, output zero point = the hidden state's, clamped to its type). ``tanh(c)`` rescales the cell by
its scale power ``p = round(log2 s_c)`` (exactness is not enforced). Cell clip:
``int16(clamp(double(clip)/double(s_c), ±32768))`` (truncating cast). Per-channel weights are refused: the
gate FCs only carry a per-tensor multiplier (the wheel computes garbage for them).

Float: the same steps with ``reference_ops`` (sequential float32 sums, libm ``expf``/``tanhf``, results
clamped to ±FLT_MAX as ``ActivationFunctionWithMinMax`` does).

Batch-major inputs run batch by batch (state offsets move with the batch); time-major inputs run all batches
per step. Scratch: four buffers of ``B·S·sizeof(cell)`` bytes, requested after validation (they are planned).
The input FCs depend only on the input, so all gates' input FCs for all time steps are computed at once. With
constant weights (the usual case) Prepare puts the four gates' weights side by side once and builds the step object
(:mod:`.lstm_eval`; the integer one tabulates its requantizations there), so invoke only runs the time loop.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..quant import quantize_multiplier
from . import lstm_common as lc
from .contract import PURE, Kernel
from .lstm_eval import FloatStep, IntegerStep

INPUT, HIDDEN, CELL = 0, 18, 19
INPUT_WEIGHTS = (2, 1, 3, 4)         # input_to_{forget, input, cell, output}
RECURRENT_WEIGHTS = (6, 5, 7, 8)     # recurrent_to_{forget, input, cell, output}
BIASES = (13, 12, 14, 15)            # {forget, input, cell, output} gate bias
MUST_BE_ABSENT = (9, 10, 11, 16, 17, 20, 21, 22, 23)
GATE_SCALE = 2.0 ** -12              # FC output: Q3.12
ACT_SCALE = 2.0 ** -15               # sigmoid/tanh output: Q0.15
_TYPE_RANGE = {"INT8": (-128, 127), "INT16": (-32768, 32767)}


@dataclass(frozen=True)
class LstmData:
    kind: str                 # "INT8", "INT16" (activation type) or "FLOAT32"
    time_major: bool
    batch: int
    steps: int
    state: int
    input_zp: int
    hidden_zp: int
    input_mult: tuple[np.ndarray, np.ndarray]        # (M, s) per gate, repeated over S: [4S] each
    input_weight_zp: np.ndarray                      # [4S] zero points of the gates' weight rows
    recurrent_weight_zp: np.ndarray
    recurrent_mult: tuple[np.ndarray, np.ndarray]
    forget_cell_mul: tuple[int, int]
    input_mul: tuple[int, int]
    output_mul: tuple[int, int]
    hidden_range: tuple[int, int]
    tanh_params: tuple[int, int]
    cell_clip: float
    quantized_cell_clip: int
    cell_gate_tanh: bool = True
    step: FloatStep | IntegerStep | None = None      # prepared from constant weights; None: built at invoke


class UnidirectionalSequenceLstm(Kernel):
    ops = ("UNIDIRECTIONAL_SEQUENCE_LSTM",)
    traits = PURE
    opdata = 688
    def prepare(self, ctx, op) -> LstmData:
        ctx.check_io_count(op, 24, 1)
        x, out = ctx.input(op, INPUT), ctx.output(op, 0)
        hidden, cell = ctx.input(op, HIDDEN), ctx.input(op, CELL)
        if x is None or hidden is None or cell is None:
            raise ctx.fail(op, "input, hidden state and cell state are required")
        if not hidden.is_variable or not cell.is_variable:
            raise ctx.fail(op, "hidden state and cell state must be variable tensors")
        if hidden.type_name != x.type_name or out.type_name != x.type_name:
            raise ctx.fail(op, f"input, hidden state and output types differ ({x.type_name}, "
                               f"{hidden.type_name}, {out.type_name})")
        weights = [ctx.input(op, k) for k in range(1, 9)]
        if any(w is None for w in weights):
            raise ctx.fail(op, "all eight weight tensors are required (no CIFG)")
        if any(w.type_name != weights[1].type_name for w in weights):
            raise ctx.fail(op, "weight tensors must share one type")
        biases = [ctx.input(op, k) for k in range(12, 16)]
        if any(b is None for b in biases) or any(b.type_name != biases[1].type_name for b in biases):
            raise ctx.fail(op, "all four gate biases are required, of one type")
        if any(ctx.input(op, k) is not None for k in MUST_BE_ABSENT):
            raise ctx.fail(op, "peephole, projection and layer-norm LSTMs are not supported")
        if len(x.shape) != 3 or len(hidden.shape) < 2:
            raise ctx.fail(op, f"input must be 3-D and the hidden state at least 2-D, got {x.shape}, "
                               f"{hidden.shape}")
        time_major = bool(op.options.get("time_major", False))
        batch, steps = (x.shape[1], x.shape[0]) if time_major else (x.shape[0], x.shape[1])
        n_in, n_state = x.shape[2], hidden.shape[1]
        for k, w in zip(range(1, 9), weights):
            want = (n_state, n_in) if k <= 4 else (n_state, n_state)
            if w.shape != want:
                raise ctx.fail(op, f"weight {k} has shape {w.shape}, expected {want}")
        if any(b.shape != (n_state,) for b in biases):
            raise ctx.fail(op, f"gate biases must have shape ({n_state},)")
        if hidden.num_elements != batch * n_state or cell.num_elements != batch * n_state:
            raise ctx.fail(op, f"hidden and cell states must hold {batch}x{n_state} elements")
        if len(out.shape) != 3 or out.shape != (x.shape[0], x.shape[1], n_state):
            raise ctx.fail(op, f"output shape {out.shape} must be {(x.shape[0], x.shape[1], n_state)}")
        # The cell gate applies tanh for TANH; any other activation hits TFLITE_ASSERT_FALSE, which release
        # builds (the wheel) compile out, so the gate keeps its raw pre-activation.
        cell_tanh = op.options.get("fused_activation_function", "NONE") == "TANH"
        clip = float(np.float32(op.options.get("cell_clip", 0.0)))

        if cell.type_name == "FLOAT32":
            if {x.type_name, weights[1].type_name, biases[1].type_name} != {"FLOAT32"}:
                raise ctx.fail(op, "a float cell state needs float input, weights and biases")
            zeros = np.zeros(4 * n_state, np.int64)
            data = LstmData("FLOAT32", time_major, batch, steps, n_state, 0, 0, (), zeros, zeros, (), (0, 0),
                            (0, 0), (0, 0), (0, 0), (0, 0), clip, 0)
        elif cell.type_name == "INT16":
            data = self._prepare_integer(ctx, op, x, hidden, cell, weights, biases, time_major, batch, steps,
                                         n_state, clip)
        else:
            raise ctx.fail(op, f"cell state type {cell.type_name} not supported (int16 or float32 only)")
        for _ in range(4):
            ctx.request_scratch(op, batch * n_state * cell.dtype.itemsize)
        data = dataclasses.replace(data, cell_gate_tanh=cell_tanh)
        if all(ctx.input(op, k).data is not None for k in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS, *BIASES)):
            data = dataclasses.replace(data, step=_make_step(data, _gate_weights(lambda k: ctx.input(op, k).data,
                                                                                 data)))
        return data

    @staticmethod
    def _prepare_integer(ctx, op, x, hidden, cell, weights, biases, time_major, batch, steps, n_state, clip):
        kind = x.type_name
        want_bias = {"INT8": "INT32", "INT16": "INT64"}.get(kind)
        if want_bias is None or weights[1].type_name != "INT8":
            raise ctx.fail(op, f"{kind} activations with {weights[1].type_name} weights not supported")
        if biases[1].type_name != want_bias:
            raise ctx.fail(op, f"{kind} LSTM needs {want_bias} biases, got {biases[1].type_name}")
        tensors = (x, hidden, cell, *weights)
        if any(t.quantization is None for t in tensors):
            raise ctx.fail(op, "integer LSTM needs quantization on input, states and weights")
        if any(w.quantization.scales.size != 1 for w in weights):
            # TFLM's gate FCs only copy the per-tensor multiplier; the wheel computes garbage for these.
            raise ctx.fail(op, "per-channel LSTM weights are not supported")

        def weight_zps(indices):
            zps = [weights[k - 1].quantization.zero_point for k in indices]
            return np.repeat(zps, n_state).astype(np.int64)

        def gate_multipliers(source, indices):
            pairs = [quantize_multiplier(np.float64(source.quantization.scale)
                                         * np.float64(weights[k - 1].quantization.scale) / GATE_SCALE)
                     for k in indices]
            m = np.repeat(np.array([p[0] for p in pairs], np.int64), n_state)
            s = np.repeat(np.array([p[1] for p in pairs], np.int64), n_state)
            return m, s

        s_cell = np.float64(cell.quantization.scale)
        s_hidden = np.float64(hidden.quantization.scale)
        if not (s_cell > 0 and s_hidden > 0):
            raise ctx.fail(op, f"cell state scale ({s_cell}) and hidden state scale ({s_hidden}) must be positive")
        # CheckedLog2: the power is rounded, its exactness is not enforced by the new TFLM LSTM.
        power = round(math.log(float(s_cell)) / math.log(2.0))
        qclip = int(min(max(np.float64(clip) / s_cell, -32768.0), 32767.0)) if clip > 0 else 0
        return LstmData(
            kind, time_major, batch, steps, n_state, x.quantization.zero_point,
            hidden.quantization.zero_point,
            gate_multipliers(x, INPUT_WEIGHTS), weight_zps(INPUT_WEIGHTS), weight_zps(RECURRENT_WEIGHTS),
            gate_multipliers(hidden, RECURRENT_WEIGHTS),
            quantize_multiplier(ACT_SCALE * s_cell / s_cell),
            quantize_multiplier(ACT_SCALE * ACT_SCALE / s_cell),
            quantize_multiplier(ACT_SCALE * ACT_SCALE / s_hidden), _TYPE_RANGE[kind], lc.tanh_params(power),
            clip, qclip)

    # -- invoke ---------------------------------------------------------------------------------------------
    def invoke(self, ctx, op, data: LstmData) -> None:
        step = data.step or _make_step(data, _gate_weights(lambda k: ctx.input(op, k), data))
        self._call(ctx, op, data, step)()

    def bind(self, ctx, op, data: LstmData):
        """The invoke as a call on this build's views (the interpreter's bound-call protocol): the tensor look-ups
        and reshapes happen once. Weights that are not constant (no prepared step): None, i.e. ``invoke``."""
        return None if data.step is None else self._call(ctx, op, data, data.step)

    @staticmethod
    def _call(ctx, op, data: LstmData, step):
        """One invoke on ``ctx``'s views as a call without arguments."""
        x, out = ctx.input(op, INPUT), ctx.output(op, 0)
        hidden = ctx.views[op.inputs[HIDDEN]].reshape(data.batch, data.state)
        cell = ctx.views[op.inputs[CELL]].reshape(data.batch, data.state)
        xs = x if data.time_major else np.swapaxes(x, 0, 1)                             # [T, B, I]
        n_in, gates_shape = xs.shape[-1], (data.steps, data.batch, -1)
        # all batch rows run each step together, batch major too: TFLM runs a batch-major batch row by row, each
        # through all its steps, but no row reads another's, so each row's arithmetic is the same in lockstep
        ys = out if data.time_major else np.swapaxes(out, 0, 1)                         # [T, B, S]
        input_fc, sequence = step.input_fc, step.sequence

        def call() -> None:
            gates_in = input_fc(xs.reshape(-1, n_in)).reshape(gates_shape)    # the input FCs of all steps at once
            ys[...], hidden[...], cell[...] = sequence(gates_in, hidden, cell)
        return call


def _gate_weights(get, data: LstmData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All four gates side by side, weight zero points subtracted: ``w_in [4S, I]``, ``w_rec [4S, S]`` (float64)
    and ``bias [4S]``; ``get(k)`` returns input ``k``'s array."""
    w_in = np.concatenate([get(k) for k in INPUT_WEIGHTS], axis=0).astype(np.float64)
    w_rec = np.concatenate([get(k) for k in RECURRENT_WEIGHTS], axis=0).astype(np.float64)
    w_in -= data.input_weight_zp[:, None]
    w_rec -= data.recurrent_weight_zp[:, None]
    return w_in, w_rec, np.concatenate([get(k) for k in BIASES])


def _make_step(data: LstmData, weights) -> FloatStep | IntegerStep:
    """The step object for ``sequence`` calls of all batch rows together."""
    return (FloatStep if data.kind == "FLOAT32" else IntegerStep)(data, *weights, data.batch)


KERNEL = UnidirectionalSequenceLstm()
