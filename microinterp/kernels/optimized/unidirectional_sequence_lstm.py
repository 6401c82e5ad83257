"""UNIDIRECTIONAL_SEQUENCE_LSTM, optimized int8x8->16: the reference kernel's prepare and results, a leaner time loop.

The reference (:mod:`microinterp.kernels.unidirectional_sequence_lstm`, :mod:`..lstm_eval`) states TFLM's algorithm
and already tabulates every int16 function; an LSTM over tiny vectors then spends its time on the number of NumPy
calls per time step. This loop makes 13 (time-major batches run together, as in the reference; one batch row runs on
1-D buffers, which are cheaper)::

    acc   = [h - zp_h | 1] @ [W_rec ; offsets]            float64, exact; the offsets place each gate in REC
    pre   = REC[int(acc)] + gin[t]                        sat16(MBQM(recurrent FC)) + sat16(input FC) + offsets
    state = BIG[pre | total]                              rows (value, R): [i f o | g M_i | c M_f] in one look-up
    p     = [i f] * [g M_i | c M_f] + [R_g | R_c]         the cell products' MBQM in two operations ...
    p   >>= 31 + E                                        ... and one shift (below)
    total = p[:S] + p[S:]                                 sat16 and the cell clip are in the tables indexed by it
    k     = searchsorted(T', TANH[total] * o)             the int8 hidden state's step function: code lo + k - 1
                                                          (a grid guess and one check, :class:`.._step_requant.GridIndex`)
    [h - zp_h | 1] = HVAL[k]                              one more threshold above every product gives the 1

Why each line equals the reference (which the differential tests compare it with, op by op):

* ``BIG`` holds the reference's tables in one int64 array of (value, rounding term) rows: the sigmoid and cell-gate
  tables (indexed by the unsaturated sum of the two FCs, offsets folded into the input FC), the cell-of-sum table
  (sat16 and clip of ``total``; its non-negative half at the start and its negative half at the end, so that
  ``total`` indexes it directly, NumPy counting negative indices from the end) and an identity region for the first
  step's cell state (whatever int16 value the variable holds).
* Cell products: the reference's own fold (:func:`..lstm_eval.fold_product_requantization`, proof there): ``BIG``
  stores the rows ``(b M, R)`` of every factor ``b`` (cell gate, cell state), so ``MBQM(a*b) = (a (b M) + R) >>
  (31 + e)``, the same table rows the reference loop takes.
* The reference's step function of the hidden state returns index ``k`` into ``values = [lo, lo, lo+1, ..., hi]``;
  the products ``tanh(c) * o`` lie in ``[-32767*32768, 32767^2]`` (the range its thresholds were built for), so an
  extra threshold ``32767^2 + 1`` is reached only by the constant key of the last column.
* The recurrent accumulator plus the per-column table offset is the same float64 sum of exact integers below 2^53.
* The input FC of all steps is one product ``[x | 1] @ [W_in ; bias - zp_x sum W_in]`` (exact integers in float64,
  checked at prepare) with the reference's Requantizer; its int16 clamp only runs when the accumulator range can
  reach it.

Reference invoke: int16 activations (their hidden step function would have 65535 thresholds), float32, weights that
are not constant, a recurrent FC too wide for its table, cell products whose MBQM the fold does not cover (a left
shift or an exponent above 31), zero time steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._step_requant import bracket
from ..contract import Kernel
from ..lstm_eval import _PRODUCTS, IntegerStep, _accumulator_range, fold_product_requantization
from ..unidirectional_sequence_lstm import CELL, HIDDEN, INPUT, LstmData
from ..unidirectional_sequence_lstm import KERNEL as REFERENCE

_INT16_MIN, _INT16_MAX = np.array(-32768), np.array(32767)     # 0-d arrays: faster operands than scalars
_SUMS = 1 << 17          # a table indexed by an unsaturated sum of two int16 values: [-65536, 65534], wrapped
#: BIG's regions: [cell of sum v >= 0 | sigmoid | cell gate | int16 identity | cell of sum v < 0], of 2^16, 2^17,
#: 2^17, 2^16 and 2^16 rows: a gate's unsaturated sum ``v`` indexes ``v + 2^17`` (sigmoid; the reference's index
#: + 2^16) or ``v + 2^18`` (cell gate), a cell sum indexes ``v`` (negative: from the end), an int16 cell state
#: ``v + _IDENTITY``.
_IDENTITY = 5 * _SUMS // 2 + _SUMS // 4
_INPUT_OFFSET = _SUMS // 2


@dataclass(frozen=True)
class FastLstmData:
    ref: LstmData
    loop: FastLoop | None = None        # None: the reference invoke


class FastUnidirectionalSequenceLstm(Kernel):
    ops = ("UNIDIRECTIONAL_SEQUENCE_LSTM",)
    def prepare(self, ctx, op) -> FastLstmData:
        ref = REFERENCE.prepare(ctx, op)
        step = ref.step
        if (ref.kind != "INT8" or ref.steps == 0 or not isinstance(step, IntegerStep) or step.rec_table is None
                or step.hidden_steps is None or step.cell_fold is None):
            return FastLstmData(ref)
        return FastLstmData(ref, FastLoop(ref, step))

    def invoke(self, ctx, op, data: FastLstmData) -> None:
        if data.loop is None:
            REFERENCE.invoke(ctx, op, data.ref)
            return
        self._call(ctx, op, data)()

    def bind(self, ctx, op, data: FastLstmData):
        """The invoke as a call on this build's views (the interpreter's bound-call protocol; None: invoke)."""
        return None if data.loop is None else self._call(ctx, op, data)

    @staticmethod
    def _call(ctx, op, data: FastLstmData):
        d, loop = data.ref, data.loop
        x, out = ctx.input(op, INPUT), ctx.output(op, 0)
        hidden = ctx.views[op.inputs[HIDDEN]].reshape(d.batch, d.state)
        cell = ctx.views[op.inputs[CELL]].reshape(d.batch, d.state)
        xs = x if d.time_major else np.swapaxes(x, 0, 1)                             # [T, B, I]
        ys = out if d.time_major else np.swapaxes(out, 0, 1)          # [T, B, S]: every batch row in lockstep
        input_fc, sequence = loop.input_fc, loop.sequence

        def call() -> None:
            sequence(input_fc(xs), hidden, cell, ys)                                # input FCs: [T, B, 4S]
        return call


class FastLoop:
    """The prepared time loop for ``rows`` batch rows at once (every batch row of the op, in lockstep)."""

    def __init__(self, d: LstmData, step: IntegerStep):
        s = d.state
        self.step, self.d, self.s = step, d, s
        # the reference step's tables (int16 functions of an unsaturated sum); its fold needs sigmoid >= 0
        sigmoid, cell_of_sum, cell_gate = step.sigmoid_of_sum, step.cell_of_sum, step.cell_gate_of_sum
        if sigmoid.min() < 0:
            raise AssertionError("the cell products' rounding needs non-negative sigmoid outputs")
        regions = [(cell_of_sum[:_SUMS // 2], 1), (np.roll(sigmoid, _SUMS // 2), None),    # (values, their product:
                   (np.roll(cell_gate, _SUMS // 2), 0), (np.arange(-32768, 32768), 1),     # 0 i*g, 1 f*c, None:
                   (cell_of_sum[_SUMS // 2:], 1)]                                          # not a factor)
        values, rounding, shifts = [], [], {}
        for v, half in regions:
            if half is None:
                values.append(v.astype(np.int64))
                rounding.append(np.zeros(len(v), np.int64))
                continue
            scaled, r, shift = fold_product_requantization(v, *step.cell_fold[half])   # (M, shift)
            values.append(scaled)
            rounding.append(r)
            shifts[half] = shift
        self.table = np.ascontiguousarray(np.stack([np.concatenate(values), np.concatenate(rounding)], axis=1))
        self.table.flags.writeable = False
        self.shift = np.repeat(np.array([shifts[0], shifts[1]], np.int64), s)            # [2S]: i*g | f*c
        self.rec_table, self.weights = step.rec_table, step.w_rec_aug                   # [S + 1, 4S] float64
        self.tanh_of_sum = step.cell_tanh_of_sum.astype(np.int32)     # int16 values in half the bytes of int64
        lo, _ = d.hidden_range
        # the step function's thresholds behind a sentinel for the constant column: k = len(thresholds) -> 1.0
        self.one_key = _PRODUCTS[1] + 1
        self.thresholds = np.concatenate([step.hidden_steps.thresholds, [self.one_key]]).astype(np.int64)
        self.index = bracket(self.thresholds, d.batch * (s + 1))     # searchsorted(thresholds, keys, "right")
        codes = lo - 1 + np.arange(len(self.thresholds) + 1, dtype=np.int64)               # k -> code lo + k - 1
        self.centred = (codes - d.hidden_zp).astype(np.float64)
        self.centred[-1] = 1.0
        self.code_offset = lo - 1
        self.cell_saturates = step.cell_saturates
        self._prepare_input_fc(d, step)
        self._buffer_sets: dict[int, tuple] = {}

    def _prepare_input_fc(self, d: LstmData, step: IntegerStep) -> None:
        n_in = step.w_in.shape[0]
        bias = step.bias - d.input_zp * step.w_in.sum(axis=0)
        lo, hi = d.hidden_range                                       # the input has the hidden state's type
        acc_min, acc_max = _accumulator_range(step.w_in, lo - d.input_zp, hi - d.input_zp)
        acc_min, acc_max = acc_min + int(step.bias.min()), acc_max + int(step.bias.max())
        exact = max(-lo, hi) * np.abs(step.w_in).sum(axis=0).max() + np.abs(bias).max() < 2.0 ** 53
        self.fc_weights = np.concatenate([step.w_in, bias[None]]) if exact and not step.in_wraps else None
        self.fc_x = np.empty((d.steps, d.batch, n_in + 1), np.float64)   # [x | 1] of every step and batch row
        self.fc_x[..., n_in] = 1.0
        ends = [step.in_requant(np.full(step.in_requant.multiplier.shape, a)) for a in (acc_min, acc_max)]
        self.fc_clamps = bool(min(e.min() for e in ends) < -32768 or max(e.max() for e in ends) > 32767)  # monotone
        self.fc_offset = (step.activation_offset + _INPUT_OFFSET).reshape(d.steps, d.batch, -1)

    def input_fc(self, xs: np.ndarray) -> np.ndarray:
        """sat16(MBQM(FC(x_t) + bias)) + BIG's offsets for ``xs`` ``[T, B, I]``: ``[T, B, 4S]`` int64."""
        if self.fc_weights is None:
            gates = self.step.input_fc(xs.reshape(-1, xs.shape[-1])).reshape(self.fc_offset.shape)
            gates += _INPUT_OFFSET
            return gates
        x = self.fc_x
        x[..., :-1] = xs
        gates = self.step.in_requant(np.dot(x.reshape(-1, x.shape[-1]), self.fc_weights).astype(np.int64))
        if self.fc_clamps:
            np.maximum(gates, _INT16_MIN, out=gates)
            np.minimum(gates, _INT16_MAX, out=gates)
        gates = gates.reshape(self.fc_offset.shape)
        gates += self.fc_offset
        return gates

    def _buffers(self, rows: int) -> tuple:
        """The loop's working arrays for ``rows`` batch rows (1-D for one row) and their views, made once."""
        s = self.s
        shape = (rows,) if rows > 1 else ()
        pre = np.empty((*shape, 5 * s), np.intp)                  # [i f o g | total] indices into BIG
        state = np.empty((*shape, 5 * s, 2), np.int64)            # BIG's rows: [i f o | g M_i | c M_f], with R
        p = np.empty((*shape, 2 * s), np.int64)                   # [i*g | f*c] requantized
        keys = np.empty((*shape, s + 1), np.int64)                # [tanh(c) * o | the sentinel key]
        keys[..., s] = self.one_key
        h0 = np.empty((*shape, s + 1), np.float64)                # [h - zp_h | 1] before the first step
        h0[..., s] = 1.0
        return (pre, pre[..., :4 * s], pre[..., 4 * s:], state, state[..., :2 * s, 0], state[..., 2 * s:3 * s, 0],
                state[..., 3 * s:, 0], state[..., 3 * s:, 1], p, p[..., :s], p[..., s:], keys, keys[..., :s], h0)

    def sequence(self, gates_in: np.ndarray, hidden: np.ndarray, cell: np.ndarray, out: np.ndarray) -> None:
        """Runs ``gates_in`` ``[T, rows, 4S]`` from the states ``hidden``/``cell`` (``[rows, S]``, updated) into
        ``out`` (``[T, rows, S]``)."""
        s, rows = self.s, gates_in.shape[1]
        if rows == 1:                                   # one row: 1-D buffers
            gates_in, hidden, cell, out = gates_in[:, 0], hidden[0], cell[0], out[:, 0]
        buffers = self._buffer_sets.get(rows)
        if buffers is None:
            buffers = self._buffer_sets[rows] = self._buffers(rows)
        pre, pre_gates, total, state, i_f, o, g_c, rounding, p, p_ig, p_fc, keys, product, h = buffers
        np.add(cell, np.intp(_IDENTITY), out=total)
        np.subtract(hidden, np.float64(self.d.hidden_zp), out=h[..., :s])
        dot, add, multiply, right_shift, intp = np.dot, np.add, np.multiply, np.right_shift, np.intp
        weights, shift, search = self.weights, self.shift, self.index
        # take: faster than fancy indexing, the same elements
        take, rec, tanh, centred = self.table.take, self.rec_table.take, self.tanh_of_sum.take, self.centred.take
        saturates = self.cell_saturates
        ks = []
        for gin in gates_in:
            add(rec(dot(h, weights).astype(intp)), gin, pre_gates)
            take(pre, 0, state, "wrap")                 # a negative total counts from the end
            multiply(i_f, g_c, p)
            add(p, rounding, p)
            right_shift(p, shift, p)
            if saturates:
                np.maximum(p, _INT16_MIN, out=p)
                np.minimum(p, _INT16_MAX, out=p)
            add(p_ig, p_fc, total)
            multiply(tanh(total, mode="wrap"), o, product)      # a negative total counts from the end
            k = search(keys)
            h = centred(k)
            ks.append(k)
        codes = np.array(ks)[..., :s]
        np.add(codes, self.code_offset, out=out, casting="unsafe")
        hidden[...] = out[-1]
        cell[...] = self.step.cell_of_sum[total]


KERNEL = FastUnidirectionalSequenceLstm()
