"""UNIDIRECTIONAL_SEQUENCE_LSTM, optimized int8x8->16: the reference kernel's prepare and results, a leaner time loop.

The reference (:mod:`microinterp.kernels.unidirectional_sequence_lstm`, :mod:`..lstm_eval`) states TFLM's algorithm
and already tabulates every int16 function; an LSTM over tiny vectors then spends its time on the number of NumPy
calls per time step and on the bytes its table look-ups touch. This loop makes 14 calls per step on arrays laid out
gate-row by batch-row (``[4S, B]``: every operation, and every slice of the state, is a contiguous slab with the
batch rows innermost; time-major batches run together, as in the reference; one batch row runs on 1-D buffers)::

    acc   = [W_rec ; offsets]^T @ [h - zp_h | 1]          float32 where exact, else float64; the offsets place
    pre   = REC[int(acc)] + gin[t]                        each gate in REC: sat16(MBQM(recurrent FC)) +
                                                          sat16(input FC) + BIG's offsets
    state = BIG[pre | total]                              rows (value, R): [i f o | g R_g | c R_c] in one look-up
    p     = ([i f] * [g | c] + [R_g | R_c]) >> [E_g | E_c]   the cell products' MBQM: int32 where it fits
    total = p[:S] + p[S:]                                 sat16 and the cell clip are in the tables indexed by it
    [T R] = TANH[total]                                   rows (tanh(c) M_h, R_h), offset folded into R_h
    k     = (o * T + R) >> E_h                            the hidden state's MBQM, as an index into HIDDEN
    [h - zp_h | 1] = HIDDEN[k | one]                      clamp(. + zp_h) - zp_h, and 1 for the constant column

Why each line equals the reference (which the differential tests compare it with, op by op):

* ``BIG`` holds the reference's tables in one array of (value, rounding term) rows: the sigmoid and cell-gate
  tables (indexed by the unsaturated sum of the two FCs, offsets folded into the input FC), the cell-of-sum table
  (sat16 and clip of ``total``; its non-negative half at the start and its negative half at the end, so that
  ``total`` indexes it directly, NumPy counting negative indices from the end) and an identity region for the first
  step's cell state (whatever int16 value the variable holds).
* Cell products: the reference's own fold (:func:`..lstm_eval.fold_product_requantization`, proof there): the rows
  ``(b M, R)`` of every factor ``b`` (cell gate, cell state) give ``MBQM(a*b) = (a (b M) + R) >> (31 + e)``. Where a
  power of two ``2^j`` divides every ``b M`` and ``R`` (TFLM's cell scale is a power of two, so ``M = 2^30``), the
  rows and the shift are divided by it: ``(a 2^j v + 2^j r) >> S = (a v + r) >> (S - j)``; when then every
  ``32767 |v| + |r|`` is below 2^31 the table, the state and the products of a batch are int32 (half the bytes to
  fetch; one batch row keeps int64, as on 1-D arrays a cast between types costs more than the bytes).
* Hidden state: the same fold for ``MBQM(tanh(c) * o, M_h)`` (``o`` is a sigmoid output, ``tanh(c)`` an int16 table
  value), with ``R`` raised by ``off 2^E_h`` so that ``k = MBQM + off`` is a non-negative index (``off`` from the
  range of the fold over ``o`` in ``[0, 32767]``); ``HIDDEN[k] = clamp(k - off + zp_h, lo, hi) - zp_h``, and one
  entry past the range holds the 1 of the constant column. The loop keeps every step's ``k``; the int8 outputs are
  one look-up at the end.
* The recurrent accumulator plus the per-column table offset is a sum of exact integers: in float32 when every
  column's ``max|h - zp_h| sum|w| + |offset|`` is below 2^24, else in float64 (below 2^53).
* The input FC of all steps is one product ``W_in^T @ x`` of the raw int8 codes (float32 where ``max|x| sum|w|`` is
  below 2^24, else float64), then the reference's one-pass MBQM (:class:`~microinterp.quant.Requantizer`) with the
  bias ``b - zp_x sum W_in`` times ``M`` and BIG's offsets times ``2^(31 + e)`` folded into its additive constant
  (adding a multiple of ``2^31`` commutes with the floor shift by 31, a multiple of ``2^e`` with the rounding shift,
  which is why its threshold rises by ``offset 2^e``) and a left shift into ``M`` where ``x 2^left`` cannot wrap;
  its int16 clamp, moved by the same offsets, runs only when the accumulator range can reach it. After the shift by
  31 a batch continues in int32 where the values' bound allows. Elsewhere (an MBQM without the one-pass form, a
  left shift that could wrap, sums that could leave int64) the reference's input FC.

Reference invoke: int16 activations, float32, weights that are not constant, a recurrent FC too wide for its table,
cell or hidden products whose MBQM the fold does not cover (a left shift or an exponent above 31), zero time steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contract import Kernel
from ..lstm_eval import IntegerStep, _accumulator_range, fold_product_requantization
from ..unidirectional_sequence_lstm import CELL, HIDDEN, INPUT, LstmData
from ..unidirectional_sequence_lstm import KERNEL as REFERENCE

_SUMS = 1 << 17          # a table indexed by an unsaturated sum of two int16 values: [-65536, 65534], wrapped
#: BIG's regions: [cell of sum v >= 0 | sigmoid | cell gate | int16 identity | cell of sum v < 0], of 2^16, 2^17,
#: 2^17, 2^16 and 2^16 rows: a gate's unsaturated sum ``v`` indexes ``v + 2^17`` (sigmoid; the reference's index
#: + 2^16) or ``v + 2^18`` (cell gate), a cell sum indexes ``v`` (negative: from the end), an int16 cell state
#: ``v + _IDENTITY``.
_IDENTITY = 5 * _SUMS // 2 + _SUMS // 4
_INPUT_OFFSET = _SUMS // 2
_SIGMOID_MAX = 32767     # the fold's factor a (a sigmoid output) lies in [0, 32767]
_FLOAT32_EXACT, _FLOAT64_EXACT = 2 ** 24, 2 ** 53
_INT32_LIMIT = 2 ** 31 - 1       # the input FC's requantization continues in int32 below this bound


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
                or step.cell_fold is None):
            return FastLstmData(ref)
        hidden_fold = fold_product_requantization(step.cell_tanh_of_sum, *ref.output_mul)
        if hidden_fold is None:
            return FastLstmData(ref)
        return FastLstmData(ref, FastLoop(ref, step, hidden_fold))

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
            sequence(input_fc(xs), hidden, cell, ys)                                # input FCs: [T, 4S, B]
        return call


def _reduce(values: np.ndarray, rounding: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(v, r, S - j)`` with ``(a v + r) >> (S - j) == (a 2^j v + 2^j r) >> S``: ``2^j`` the largest power of two
    (``j <= S``) dividing every value and rounding term."""
    common = np.bitwise_or.reduce(np.concatenate([values, rounding]))
    j = shift if common == 0 else min(shift, (int(common) & -int(common)).bit_length() - 1)
    return values >> j, rounding >> j, shift - j


class FastLoop:
    """The prepared time loop for ``rows`` batch rows at once (every batch row of the op, in lockstep)."""

    def __init__(self, d: LstmData, step: IntegerStep, hidden_fold: tuple):
        self.step, self.d, self.s = step, d, d.state
        if step.sigmoid_of_sum.min() < 0:
            raise AssertionError("the cell products' rounding needs non-negative sigmoid outputs")
        batched = d.batch > 1          # narrow integer types for a batch (see _prepare_cell)
        h_max = max(abs(v - d.hidden_zp) for v in d.hidden_range)
        bound = h_max * np.abs(step.w_rec).sum(axis=0) + np.abs(step.w_rec_aug[-1])
        dtype = np.float32 if bound.max() < _FLOAT32_EXACT else np.float64
        self.weights = np.ascontiguousarray(step.w_rec_aug.T, dtype)                 # [4S, S + 1]
        self._prepare_cell(step, narrow=batched)
        self._prepare_hidden(d, hidden_fold)
        self.rec_table = step.rec_table
        self.cell_saturates = step.cell_saturates
        self._prepare_input_fc(d, step, narrow=batched)
        self._buffer_sets: dict[tuple[int, int], tuple] = {}

    def _prepare_cell(self, step: IntegerStep, narrow: bool) -> None:
        """BIG (rows of int32 where they fit and ``narrow``, else int64) and the two products' shifts. One batch row
        keeps int64: on 1-D arrays a call's fixed cost outweighs the bytes, and mixed types add a cast to each."""
        sigmoid, cell_of_sum, cell_gate = step.sigmoid_of_sum, step.cell_of_sum, step.cell_gate_of_sum
        regions = [(cell_of_sum[:_SUMS // 2], 1), (np.roll(sigmoid, _SUMS // 2), None),    # (values, their product:
                   (np.roll(cell_gate, _SUMS // 2), 0), (np.arange(-32768, 32768), 1),     # 0 i*g, 1 f*c, None:
                   (cell_of_sum[_SUMS // 2:], 1)]                                          # not a factor)
        folds = {}
        for half in (0, 1):        # each product's factor rows, reduced together (one shift per product)
            factors = np.concatenate([v for v, h in regions if h == half])
            folds[half] = list(_reduce(*fold_product_requantization(factors, *step.cell_fold[half])))
        values, rounding = [], []
        for v, half in regions:
            if half is None:
                values.append(np.asarray(v, np.int64))
                rounding.append(np.zeros(len(v), np.int64))
                continue
            fold = folds[half]     # consumed region by region, in the order they were concatenated
            values.append(fold[0][:len(v)])
            rounding.append(fold[1][:len(v)])
            fold[0], fold[1] = fold[0][len(v):], fold[1][len(v):]
        values, rounding = np.concatenate(values), np.concatenate(rounding)
        fits = _SIGMOID_MAX * int(np.abs(values).max()) + int(np.abs(rounding).max()) < 2 ** 31
        self.dtype = np.int32 if fits and narrow else np.int64
        self.table = np.ascontiguousarray(np.stack([values, rounding], axis=1).astype(self.dtype))
        self.table.flags.writeable = False
        self.shift = np.repeat(np.array([folds[0][2], folds[1][2]], self.dtype), self.s)    # [2S]: i*g | f*c

    def _prepare_hidden(self, d: LstmData, fold: tuple) -> None:
        """TANH's rows (tanh(c) M_h, R_h + off 2^E_h) and HIDDEN, indexed by the MBQM plus ``off``."""
        values, rounding, shift = fold
        ends = [(a * values + rounding) >> shift for a in (0, _SIGMOID_MAX)]     # monotone in a: the extremes
        low, high = int(min(e.min() for e in ends)), int(max(e.max() for e in ends))
        rounding = rounding + ((-low) << shift)
        if _SIGMOID_MAX * int(np.abs(values).max()) + int(np.abs(rounding).max()) >= 2 ** 63:
            raise AssertionError("the hidden state's folded product leaves int64")
        self.tanh_rows = np.ascontiguousarray(np.stack([values, rounding], axis=1))
        self.tanh_rows.flags.writeable = False
        self.hidden_shift = np.int64(shift)
        lo, hi = d.hidden_range
        codes = np.clip(np.arange(low, high + 1) + d.hidden_zp, lo, hi)
        self.one = len(codes)                                          # HIDDEN[one] = 1: the constant column
        self.hidden_codes = np.concatenate([codes, [0]]).astype(np.int8)         # the int8 outputs
        self.hidden_values = np.concatenate([codes - d.hidden_zp, [1]]).astype(self.weights.dtype)

    def _prepare_input_fc(self, d: LstmData, step: IntegerStep, narrow: bool) -> None:
        """The folded one-pass MBQM of the input FC (``fc_weights`` None: the reference's input FC), its tail in
        int32 where the values fit and ``narrow``."""
        s, n_in, shape = self.s, step.w_in.shape[0], (d.steps * d.batch, 4 * self.s)
        self.fc_weights = self.fc_half = self.fc_clamp = None
        requant = step.in_requant
        if requant is None or requant.fused is None or step.in_wraps:
            return
        # per-column constants (the Requantizer holds them at the FC's [steps * batch, 4S] shape)
        m, offset, half, exponent = (None if a is None else np.broadcast_to(a, shape) for a in requant.fused)
        left = np.broadcast_to(requant.left, shape)
        if any(a is not None and (a != a[0]).any() for a in (m, offset, half, exponent, left)):
            return
        m, offset, half, exponent, left = (None if a is None else a[0].astype(np.int64)
                                           for a in (m, offset, half, exponent, left))
        lo, hi = d.hidden_range                                       # the input has the hidden state's type
        acc_min, acc_max = _accumulator_range(step.w_in, lo - d.input_zp, hi - d.input_zp)
        acc_min, acc_max = acc_min + int(step.bias.min()), acc_max + int(step.bias.max())
        if (max(-acc_min, acc_max) << int(left.max())) >= 2 ** 31:
            return                           # x 2^left could wrap in int32 (as in C): the reference's Requantizer
        m = m << left                        # no wrap: SRDHM(x 2^left, M) = SRDHM with the multiplier M 2^left
        e = np.zeros(4 * s, np.int64) if exponent is None else exponent
        x_max = max(abs(lo), abs(hi))
        bound = x_max * np.abs(step.w_in).sum(axis=0)
        bias = step.bias - d.input_zp * step.w_in.sum(axis=0).astype(np.int64)          # exact integers
        gate_offset = (step.activation_offset + _INPUT_OFFSET).reshape(shape)[0].astype(np.int64)
        folded = [int(b) * int(mm) + int(o) + (int(g) << (31 + int(ee)))
                  for b, mm, o, g, ee in zip(bias, m, offset, gate_offset, e)]
        largest = max(int(a) * int(mm) + abs(c) for a, mm, c in zip(bound, m, folded))    # |x M + constant|
        if bound.max() >= _FLOAT64_EXACT or largest >= 2 ** 63:
            return
        dtype = np.float32 if bound.max() < _FLOAT32_EXACT else np.float64
        self.fc_weights = np.ascontiguousarray(step.w_in.T, dtype)                   # [4S, I]
        self.fc_x = np.empty((d.steps, n_in, d.batch), dtype)                       # x_t^T of every step
        # per-gate-row constants of the [T, 4S, B] result ([T, 4S] for one batch row: no axis of length 1)
        column = (4 * s, 1) if d.batch > 1 else (4 * s,)
        self.fc_multiplier, self.fc_add = m.reshape(column), np.array(folded, np.int64).reshape(column)
        # after the shift by 31 the values are small: the rest in int32 where every value and constant fits
        none = np.iinfo(np.int64).min
        half = None if exponent is None else np.where(half == none, none, half + (gate_offset << e))
        real = [] if half is None else [int(h) for h in half if h != none]
        narrow = narrow and max([(largest >> 31) + 1, *(abs(h) for h in real)]) < _INT32_LIMIT
        self.fc_dtype = tail = np.int32 if narrow else np.int64
        if half is not None:                 # no rounding (e = 0): the threshold stays the type's minimum
            self.fc_half = np.where(half == none, np.iinfo(tail).min, half).astype(tail).reshape(column)
            self.fc_exponent = exponent.astype(tail).reshape(column)
        ends = [requant(np.full(requant.multiplier.shape, a)) for a in (acc_min, acc_max)]
        if min(end.min() for end in ends) < -32768 or max(end.max() for end in ends) > 32767:    # MBQM is monotone
            self.fc_clamp = tuple((limit + gate_offset).astype(tail).reshape(column) for limit in (-32768, 32767))

    def input_fc(self, xs: np.ndarray) -> np.ndarray:
        """sat16(MBQM(FC(x_t) + bias)) + BIG's offsets for ``xs`` ``[T, B, I]``: ``[T, 4S, B]`` (int32 or int64)."""
        d, s = self.d, self.s
        if self.fc_weights is None:
            gates = self.step.input_fc(np.ascontiguousarray(xs).reshape(-1, xs.shape[-1]))
            gates += _INPUT_OFFSET
            return np.ascontiguousarray(gates.reshape(d.steps, d.batch, 4 * s).transpose(0, 2, 1))
        x = self.fc_x
        np.copyto(x, xs.transpose(0, 2, 1), casting="unsafe")
        gates = np.matmul(self.fc_weights, x).astype(np.int64)                      # [T, 4S, B]
        if d.batch == 1:
            gates = gates.reshape(d.steps, 4 * s)
        gates *= self.fc_multiplier                     # the Requantizer's one-pass MBQM, constants folded
        gates += self.fc_add
        if self.fc_dtype is np.int64:
            gates >>= 31
        else:
            gates = np.right_shift(gates, 31, out=np.empty(gates.shape, self.fc_dtype), casting="unsafe")
        if self.fc_half is not None:
            gates -= gates < self.fc_half
            gates >>= self.fc_exponent
        if self.fc_clamp is not None:
            np.maximum(gates, self.fc_clamp[0], out=gates)
            np.minimum(gates, self.fc_clamp[1], out=gates)
        return gates.reshape(d.steps, 4 * s, d.batch)

    def _buffers(self, rows: int, steps: int) -> tuple:
        """The loop's working arrays for ``rows`` batch rows (the batch axis left out for one row) and their views,
        made once."""
        s = self.s
        shape = (rows,) if rows > 1 else ()
        pre = np.empty((5 * s, *shape), np.intp)                  # [i f o g | total] indices into BIG
        state = np.empty((5 * s, *shape, 2), self.dtype)          # BIG's rows: [i f o | g R_g | c R_c]
        p = np.empty((2 * s, *shape), self.dtype)                 # [i*g | f*c] requantized
        tanh = np.empty((s, *shape, 2), np.int64)                 # TANH's rows
        product = np.empty((s, *shape), np.int64)
        acc = np.empty((4 * s, *shape), self.weights.dtype)       # the recurrent FC plus REC's offsets ...
        index = np.empty((4 * s, *shape), np.intp)                # ... as indices
        ks = np.empty((steps, s + 1, *shape), np.intp)            # every step's HIDDEN index, and the constant
        ks[:, s] = self.one
        shift = self.shift.reshape(2 * s, *[1] * len(shape))
        return (pre, pre[:4 * s], pre[4 * s:], state, state[:2 * s, ..., 0], state[2 * s:3 * s, ..., 0],
                state[3 * s:, ..., 0], state[3 * s:, ..., 1], p, p[:s], p[s:], tanh, tanh[..., 0], tanh[..., 1],
                product, acc, index, ks, shift)

    def sequence(self, gates_in: np.ndarray, hidden: np.ndarray, cell: np.ndarray, out: np.ndarray) -> None:
        """Runs ``gates_in`` ``[T, 4S, rows]`` from the states ``hidden``/``cell`` (``[rows, S]``, updated) into
        ``out`` (``[T, rows, S]``)."""
        s, steps, rows = self.s, gates_in.shape[0], gates_in.shape[2]
        if rows == 1:                                   # one row: 1-D buffers
            gates_in, hidden, cell, out = gates_in[..., 0], hidden[0], cell[0], out[:, 0]
        buffers = self._buffer_sets.get((rows, steps))
        if buffers is None:
            buffers = self._buffer_sets[rows, steps] = self._buffers(rows, steps)
        (pre, pre_gates, total, state, i_f, o, g_c, rounding, p, p_ig, p_fc, tanh_rows, t_value, t_rounding, product,
         acc, index, ks, shift) = buffers
        np.add(cell.T, np.intp(_IDENTITY), out=total)
        h = np.empty((s + 1, *hidden.shape[:-1]), self.weights.dtype)          # [h - zp_h | 1] before the first step
        h[:s] = hidden.T
        h[:s] -= self.d.hidden_zp
        h[s] = 1
        dot, add, multiply, right_shift, copyto = np.dot, np.add, np.multiply, np.right_shift, np.copyto
        weights, hidden_shift = self.weights, self.hidden_shift
        # take: faster than fancy indexing, the same elements; "wrap": a negative total counts from the end
        take, rec, tanh, values = self.table.take, self.rec_table.take, self.tanh_rows.take, self.hidden_values.take
        saturates = self.cell_saturates
        for gin, k in zip(gates_in, ks):
            dot(weights, h, acc)
            copyto(index, acc, casting="unsafe")
            add(rec(index), gin, pre_gates)
            take(pre, 0, state, "wrap")
            multiply(i_f, g_c, p)
            add(p, rounding, p)
            right_shift(p, shift, p)
            if saturates:
                np.maximum(p, -32768, out=p)
                np.minimum(p, 32767, out=p)
            add(p_ig, p_fc, total)
            tanh(total, 0, tanh_rows, "wrap")
            multiply(o, t_value, product)
            add(product, t_rounding, product)
            right_shift(product, hidden_shift, k[:s])
            h = values(k)
        out[...] = np.moveaxis(self.hidden_codes.take(ks[:, :s]), 1, -1)          # [T, S, rows] -> [T, rows, S]
        hidden[...] = out[-1]
        cell[...] = self.step.cell_of_sum[total].T


KERNEL = FastUnidirectionalSequenceLstm()
