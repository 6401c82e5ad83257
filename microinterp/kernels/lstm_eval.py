"""The LSTM time loop, integer and float (TFLM's ``lstm_internal::LstmStep`` once per time step), for
:mod:`.unidirectional_sequence_lstm`.

Every step object takes the kernel's OpData, the gate weights of all four gates side by side (gate order forget,
input, cell, output; weight zero points already subtracted: ``w_in`` ``[4S, I]``, ``w_rec`` ``[4S, S]``, ``bias``
``[4S]``) and the number of batch rows one ``sequence`` call runs together. ``input_fc`` computes the input FCs of
every time step at once (they do not depend on the state); ``sequence`` runs the time steps for a group of batch
rows and returns the hidden state of every step and the final hidden and cell states.
"""

from __future__ import annotations

import numpy as np
from numpy._core import umath as np_umath

from .. import libm
from ..libm import tanhf
from ..quant import INT32_MAX, INT32_MIN, Requantizer, mbqm_int64, wrap_int32
from . import lstm_common as lc
from ._float_dot import BoundDot, sequential_dot_core
from ._qutil import copyto
from ._step_requant import requantization_steps
from ._x86_nan import add_bias_x86
from .binary_common import both_nan_as_x86
from .logistic import bind_logistic_float, logistic_float

_INT16_MIN, _INT16_MAX = np.array(-32768), np.array(32767)     # 0-d arrays: faster operands than scalars
#: The recurrent FC's requantization is tabulated when its accumulators span at most this many values (all gates).
_MAX_REC_TABLE = 1 << 22
#: A sigmoid output in [0, 32767] times an int16 value: the range of the products f*c, i*g and tanh(c)*o.
_PRODUCTS = (-32767 * 32768, 32767 * 32767)
#: The step keeps the gates in the order (input, forget, output, cell) so that, with the cell state appended,
#: [i | f] * [g | c] is one multiplication; GATES[k] is the OpData's gate (forget, input, cell, output) in slot k.
GATES = (1, 0, 3, 2)
#: libm's tanhf written into an output (no errstate of its own)
tanh = libm.into("tanhf")


class IntegerStep:
    """Integer LSTM step. Per step, with ``pre = sat16(input FC) + sat16(MBQM(recurrent FC))`` (in [-65536, 65534],
    not saturated)::

        i, f, o = SIGMOID[pre]; g = CELL_GATE[pre]   SIGMOID[v] = sigmoid(sat16(v)) (Q0.15), CELL_GATE[v] =
                                                     tanh(sat16(v)), or sat16(v) for a non-TANH cell gate
        sum = sat16(MBQM(i*g)) + sat16(MBQM(f*c))    both products and requantizations at once; the MBQMs are
                                                     folded into the g and c tables (fold_product_requantization)
        c   = CELL[sum]                              clip(sat16(v)): the saturating add and the cell clip
        h   = clamp(MBQM(CELL_TANH[sum] * o) + zp_h) CELL_TANH[v] = tanh(CELL[v])

    sigmoid/tanh are TFLM's int16 LUT functions evaluated for every input (:mod:`.lstm_common`).

    Speed (an LSTM over tiny vectors spends its time on the number of NumPy calls per step, about twenty here): the
    state stays in one int64 row ``[i | f | o | g | c]`` during the time loop (int64 tables and state: no dtype
    conversions; one batch row runs on 1-D arrays, which NumPy handles faster); the gate activations are one
    ``take`` from one table (the sigmoid and cell-gate tables side by side, the offsets folded into the input FC) into
    that row; the recurrent FC's requantization is tabulated for every accumulator it can produce (when that range is
    not huge), and the loop keeps ``[h - zp_h | 1]`` so that the matrix product adds each column's table offset; every
    int16 saturation of a sum is folded into a table indexed by the unsaturated sum; the int8 hidden state's
    requantization is a step function (:mod:`._step_requant`, 255 thresholds); the cell products use the one-pass
    :class:`~microinterp.quant.Requantizer` (a step function with 65535 thresholds would miss the cache on every
    search), folded into the tables of their second factors (:func:`fold_product_requantization`: g and c are looked
    up as rows ``(b M, R)``, so each MBQM is one multiply, one add and one shift; the Requantizer where the fold is not
    proved exact), and skip the int16 clamp where the ranges show it cannot act. Constants have the exact shapes they
    meet: a broadcasting operation costs more than the arithmetic. (:mod:`.optimized.unidirectional_sequence_lstm` goes
    further: 14 calls per step, int32 rows, the hidden state's MBQM folded like the cell products'.)
    """

    def __init__(self, data, w_in: np.ndarray, w_rec: np.ndarray, bias: np.ndarray, rows: int):
        self.d = d = data
        s = d.state
        columns = np.concatenate([np.arange(g * s, (g + 1) * s) for g in GATES])    # OpData order -> step order
        self.w_in, self.bias = w_in[columns].T, bias[columns].astype(np.int64)      # [I, 4S]
        self.w_rec = w_rec[columns].T                  # [S, 4S]; products and sums are exact in float64
        self.acc64 = d.kind == "INT16"
        row_shape = (rows,) if rows > 1 else ()        # one row runs on 1-D buffers (cheaper NumPy calls)
        self.input_mult = tuple(a[columns] for a in d.input_mult)
        rec_mult = tuple(a[columns] for a in d.recurrent_mult)
        h_lo, h_hi = d.hidden_range
        # The recurrent FC multiplies h - zp_h (the loop keeps h centred). Its accumulators' exact range decides
        # whether the int32 accumulator can wrap (as in C) and the size of their requantization table.
        rec_min, rec_max = _accumulator_range(self.w_rec, h_lo - d.hidden_zp, h_hi - d.hidden_zp)
        self.rec_wraps = not self.acc64 and (rec_min < INT32_MIN or rec_max > INT32_MAX)
        x_lo, x_hi = d.hidden_range         # the input has the hidden state's type
        in_min, in_max = _accumulator_range(self.w_in, x_lo - d.input_zp, x_hi - d.input_zp)
        self.in_wraps = not self.acc64 and (in_min + self.bias.min() < INT32_MIN or
                                            in_max + self.bias.max() > INT32_MAX)
        # The input FC runs once per invoke on [steps * batch, 4S]: its constants get that exact shape (broadcasting
        # a [4S] row costs more than the arithmetic on these sizes).
        fc_shape = (d.steps * d.batch, 4 * s)
        self.in_requant = None if self.acc64 else Requantizer(*(_full(a, fc_shape) for a in self.input_mult))
        span = rec_max - rec_min + 1
        if 4 * span <= _MAX_REC_TABLE:
            # sat16(MBQM(acc)) of every accumulator, gate after gate: index = acc - rec_min + gate * span.
            per_gate = tuple(a[::s] for a in rec_mult)
            acc = np.arange(rec_min, rec_max + 1, dtype=np.int64)[:, None]
            table = self._requant16(acc, per_gate, None if self.acc64 else Requantizer(*per_gate), self.rec_wraps)
            self.rec_table = np.ascontiguousarray(table.T).reshape(-1).astype(np.int16)     # saturated: int16 values
            offsets = np.repeat(np.arange(4) * span - rec_min, s).astype(np.float64)
        else:
            self.rec_table, self.rec_mult = None, rec_mult
            self.rec_requant = None if self.acc64 else Requantizer(*(np.broadcast_to(a, (*row_shape, 4 * s))
                                                                       for a in rec_mult))
            offsets = np.zeros(4 * s)
        # The loop keeps [h - zp_h | 1]: the last row adds each column's offset into the table (exact in float64).
        self.w_rec_aug = np.concatenate([self.w_rec, offsets[None]])
        # i*g | f*c: the input and forget multipliers over the two halves.
        (mf, sf), (mi, si) = d.forget_cell_mul, d.input_mul
        halves = (*row_shape, 2 * s)
        self.cell_requant = Requantizer(np.broadcast_to(np.repeat([mi, mf], s), halves),
                                        np.broadcast_to(np.repeat([si, sf], s), halves))
        ends = self.cell_requant(np.broadcast_to(np.array(_PRODUCTS).reshape(2, *[1] * len(halves)), (2, *halves)))
        self.cell_saturates = bool(ends.min() < -32768 or ends.max() > 32767)    # MBQM is monotone here
        # The same MBQMs folded into the g and c tables (exact for these multipliers, or None: the Requantizer).
        sigmoid = lc.sum_table("sigmoid")
        folds = [fold_product_requantization(np.zeros(0), *mul) for mul in (d.input_mul, d.forget_cell_mul)]
        exact = None not in folds and sigmoid.min() >= 0          # the proof needs a = i, f >= 0
        self.cell_fold, self.cell_shift = (d.input_mul, d.forget_cell_mul) if exact else None, None
        if self.cell_fold is not None:                 # 31 + e per product: i*g | f*c
            shifts = [f[2] for f in folds]
            self.cell_shift = np.array(shifts[0]) if shifts[0] == shifts[1] else _full(np.repeat(shifts, s), halves)
        self.hidden_requant = Requantizer(*d.output_mul)
        self.hidden_steps = None if d.kind != "INT8" else requantization_steps(
            *d.output_mul, d.hidden_zp, h_lo, h_hi, *_PRODUCTS, dtype=np.int64, values_dtype=np.float64)
        if self.hidden_steps is not None:
            self.hidden_centred = self.hidden_steps.values - d.hidden_zp
            self.hidden_search = self.hidden_steps.thresholds.searchsorted    # StepRequantizer.index, prebound
        # Activations of the unsaturated sums: sigmoid table then cell-gate table, non-negative indices
        # pre + 65536 (+ 131072 for the cell gate); those offsets are added to the input FC once per invoke.
        cell_gate = lc.sum_table("tanh", lc.tanh_params(-12)) if d.cell_gate_tanh else lc.sum_table()
        self.sigmoid_of_sum, self.cell_gate_of_sum = sigmoid, cell_gate     # kept for the optimized loop's tables
        # int64 tables and state: products and indices then need no conversions
        # Rows (value, rounding term): the sigmoid's with R = 0, the cell gate's and the cell's as (b M, R) when the
        # cell products are folded, else (b, 0).
        self.activation = np.concatenate([_rows(np.roll(sigmoid, 65536)),
                                          self._factor_rows(np.roll(cell_gate, 65536), 0)])
        self.activation_offset = _full(np.repeat([65536, 65536, 65536, 3 * 65536], s), fc_shape)
        clip = d.quantized_cell_clip if d.cell_clip > 0 else None
        self.cell_of_sum = lc.sum_table(clip=clip).astype(np.int64)
        self.cell_rows_of_sum = self._factor_rows(self.cell_of_sum, 1)
        self.cell_tanh_of_sum = lc.sum_table("tanh", d.tanh_params, clip).astype(np.int64)

    def _factor_rows(self, values: np.ndarray, product: int) -> np.ndarray:
        """``[N, 2]`` int64 rows for the factors ``values`` of the cell product ``product`` (0: i*g, 1: f*c): ``(b M,
        R)`` of :func:`fold_product_requantization` when the products are folded, else ``(b, 0)``."""
        if self.cell_fold is None:
            return _rows(values)
        scaled, rounding, _ = fold_product_requantization(values, *self.cell_fold[product])
        return np.stack([scaled, rounding], axis=-1)

    def _requant16(self, acc: np.ndarray, mult, requantizer, wraps: bool = True, saturates: bool = True):
        """sat16(MBQM(acc)): the int64 MBQM for 16x8, else the int32 one (wrapping the accumulator if it can)."""
        if self.acc64 and mult is not None:
            res = mbqm_int64(acc, *mult)
        else:
            res = requantizer(wrap_int32(acc) if wraps else acc)
        if saturates:
            np.maximum(res, _INT16_MIN, out=res)
            np.minimum(res, _INT16_MAX, out=res)
        return res

    def input_fc(self, x: np.ndarray) -> np.ndarray:
        """sat16(MBQM(FC(x_t, W_x) + bias)) for all time steps plus the activation table's offsets: ``[N, I] ->
        [N, 4S]`` (int64, step gate order)."""
        acc = np.dot(x - np.float64(self.d.input_zp), self.w_in).astype(np.int64)    # exact in float64
        acc += self.bias
        gates = self._requant16(acc, self.input_mult, self.in_requant, self.in_wraps)
        gates += self.activation_offset
        return gates

    def _recurrent(self, h: np.ndarray) -> np.ndarray:
        """sat16(MBQM((h - zp_h) . W_rec)) per gate for ``h = [h - zp_h | 1]``: looked up in the table (the 1
        adds each column's table offset) or computed."""
        acc = np.dot(h, self.w_rec_aug)
        if self.rec_table is not None:
            return self.rec_table[acc.astype(np.intp)]
        return self._requant16(acc.astype(np.int64), self.rec_mult, self.rec_requant, self.rec_wraps)

    def _hidden(self, prod: np.ndarray, out: np.ndarray) -> None:
        """The new hidden state minus zp_h into ``out`` (float64): clamp(MBQM(tanh(c) * o) + zp_h) - zp_h."""
        if self.hidden_steps is not None:
            self.hidden_centred.take(self.hidden_search(prod, "right"), 0, out, "wrap")   # the step function
            return
        lo, hi = self.d.hidden_range
        out[...] = np.minimum(np.maximum(self.hidden_requant(prod) + self.d.hidden_zp, lo), hi) - self.d.hidden_zp

    def sequence(self, gates_in: np.ndarray, h0: np.ndarray, c0: np.ndarray):
        d, s = self.d, self.d.state
        steps, rows = gates_in.shape[:2]
        if rows == 1:                                    # 1-D buffers, as the constants
            gates_in, h0, c0 = gates_in[:, 0], h0[0], c0[0]
        # the row [i | f | o | g | c] of table rows (value, rounding term): g and c as (b M, R) when folded
        state = np.empty((*h0.shape[:-1], 5 * s, 2), np.int64)
        gates, i_f, o, g_c, rounding, c = (state[..., :4 * s, :], state[..., :2 * s, 0], state[..., 2 * s:3 * s, 0],
                                           state[..., 3 * s:, 0], state[..., 3 * s:, 1], state[..., 4 * s:, :])
        c[...] = self._factor_rows(c0, 1)
        hs = np.empty((steps + 1, *h0.shape[:-1], s + 1), np.float64)   # [h - zp_h | 1] per step, hs[0] from h0
        hs[0, ..., :s] = h0
        hs[0, ..., :s] -= d.hidden_zp
        hs[..., s] = 1.0
        recurrent, hidden, cell_requant, saturates = self._recurrent, self._hidden, self.cell_requant, \
            self.cell_saturates
        folded, shift = self.cell_fold is not None, self.cell_shift
        activation, cell_rows_of_sum, cell_tanh_of_sum = self.activation, self.cell_rows_of_sum, self.cell_tanh_of_sum
        total = None
        for h, gin, h_next in zip(hs[:-1], gates_in, hs[1:, ..., :s]):
            index = recurrent(h) + gin                 # + sat16(input FC) + offsets: not saturated, the tables do it
            activation.take(index, 0, gates, "wrap")   # gates = activation[index] ("wrap": no buffered bounds check)
            if folded:                                 # MBQM(i*g) | MBQM(f*c) = (a (b M) + R) >> (31 + e)
                both = i_f * g_c
                both += rounding
                both >>= shift
            else:
                both = cell_requant(i_f * g_c)
            if saturates:
                both = np.minimum(np.maximum(both, _INT16_MIN), _INT16_MAX)
            total = both[..., :s] + both[..., s:]
            cell_rows_of_sum.take(total, 0, c, "wrap")  # c = CELL[total] (a negative sum counts from the end)
            hidden(cell_tanh_of_sum[total] * o, h_next)
        cell = c0 if total is None else self.cell_of_sum[total]
        hs = hs[..., :s] + d.hidden_zp
        return hs[1:].reshape(steps, rows, s), hs[-1].reshape(rows, s), cell.reshape(rows, s)


def fold_product_requantization(values, multiplier: int, shift: int):
    """TFLM's requantization of a cell product, precomputed per table entry: for the factors ``b`` (``values``,
    int16) of products ``a*b`` with ``a`` in ``[0, 32767]`` (a sigmoid output), returns ``(b M, R, 31 + e)`` with::

        MBQM(a*b, M, shift) == (a * (b M) + R) >> (31 + e)       e = -shift,  R = 2^30 + 2^31 (h - [b < 0]) (e > 0)
                                                                 h = 2^(e-1), R = 2^30                      (e = 0)

    or None where this is not proved exact (a left shift, ``e > 31``, ``M`` outside ``[0, 2^31)``).

    TFLM computes ``MBQM(a*b, M, shift) = RDBPOT(SRDHM(a*b, M), e)``; because ``b`` takes only a table's values, the
    product's rounding is precomputed per entry. Identity proof (``x = a b``, ``|x| < 2^31``: no int32 wrap; ``M >=
    0``: SRDHM never saturates):

    1. ``SRDHM(x, M) = trunc((x M + n) / 2^31)`` with ``n = 2^30`` for ``x M >= 0``, else ``1 - 2^30``. For ``x M >= 0``
       the truncation is the floor; for ``p = x M < 0``, ``-floor((2^30 - 1 - p) / 2^31) = floor((p + 2^30) / 2^31)``.
       So ``SRDHM(x, M) = floor((x M + 2^30) / 2^31)``.
    2. ``RDBPOT(y, e)`` adds 1 to ``y >> e`` when the remainder exceeds ``h - 1`` (``y >= 0``) or ``h`` (``y < 0``):
       it is ``(y + h - [y < 0]) >> e`` (for ``e = 0``: ``y``).
    3. ``[SRDHM < 0] = [b < 0]`` up to one case that does not matter: ``a >= 0`` and ``M >= 0`` give ``x M <= 0``
       (so SRDHM <= 0) when ``b < 0`` and SRDHM >= 0 when ``b >= 0``; with ``b < 0`` and SRDHM = 0, subtracting 1
       gives ``(h - 1) >> e = 0 = h >> e``.
    4. Subtracting a multiple of ``2^31`` commutes with the floor shift by 31, and ``(z >> 31) >> e = z >> (31 + e)``:
       ``MBQM = (a (b M) + 2^30 + 2^31 (h - [b < 0])) >> (31 + e)``.

    No int64 overflow: ``|a b M| < 2^15 2^15 2^31 = 2^61`` and ``|R| <= 2^30 + 2^61``. The int16 saturation that
    follows is not part of it. Used by :class:`IntegerStep` and :mod:`.optimized.unidirectional_sequence_lstm`.
    """
    m, e = int(multiplier), -int(shift)
    if e < 0 or e > 31 or not 0 <= m < 1 << 31:
        return None
    values = np.asarray(values, dtype=np.int64)
    rounding = np.full(values.shape, 1 << 30, np.int64)
    if e > 0:
        rounding += ((1 << (e - 1)) - (values < 0)) << 31
    return values * m, rounding, 31 + e


def _rows(values: np.ndarray) -> np.ndarray:
    """``[N, 2]`` int64 table rows ``(value, 0)``."""
    values = np.asarray(values, np.int64)
    return np.stack([values, np.zeros_like(values)], axis=-1)


def _full(row: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``row`` repeated to ``shape`` as a contiguous int64 array."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(row, dtype=np.int64), shape))


def _accumulator_range(w: np.ndarray, x_lo: int, x_hi: int) -> tuple[int, int]:
    """Exact range of every column of ``x @ w`` (``w`` ``[K, N]``) over all ``x`` with entries in
    ``[x_lo, x_hi]``: the smallest column minimum and the largest column maximum."""
    ends = np.stack([w * x_lo, w * x_hi])
    return int(ends.min(axis=0).sum(axis=0).min()), int(ends.max(axis=0).sum(axis=0).max())


#: :meth:`FloatStep._finite_sequence` leaves the recurrent FC's clamp out while its sums are bounded below this
#: (far below FLT_MAX: float32 rounding cannot carry a partial sum across it).
_NO_CLAMP_BELOW = 1e37

#: Where both operands of the LSTM's elementwise add (``AddElementWise``) or product (``reference_ops::Mul``) are NaN,
#: the operand whose NaN TFLM's compiled loop keeps (measured against the wheel): the first, and the second.
ADD_KEEPS, MUL_KEEPS = 0, 1


class FloatStep:
    """Float LSTM step: every FC sum is a sequential float32 accumulation (TFLM's loop order), computed as
    :func:`._float_dot.sequential_dot_core` computes it -- the input FCs of all steps in one call, the recurrent FC
    of each step by a :class:`._float_dot.BoundDot` on kept buffers --, then the bias (``+ 0.f`` without one) and the
    ±FLT_MAX clamp of ``ActivationFunctionWithMinMax``; the gates with libm's ``expf``/``tanhf``."""

    def __init__(self, data, w_in: np.ndarray, w_rec: np.ndarray, bias: np.ndarray, rows: int = 1):
        self.d = data
        self.w_in, self.bias = np.ascontiguousarray(w_in, np.float32), bias.astype(np.float32)
        self.w_rec = np.ascontiguousarray(w_rec, np.float32)
        self.w_in_t, self.w_rec_t = np.ascontiguousarray(self.w_in.T), np.ascontiguousarray(self.w_rec.T)
        self.finite = all(np.isfinite(a).all() for a in (self.w_in, self.w_rec, self.bias))
        self.w_rec_fast = None      # the recurrent weights in :meth:`_finite_sequence`'s gate order, made once

    def input_fc(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            total = sequential_dot_core(np.ascontiguousarray(x.astype(np.float32).T), self.w_in, None, self.w_in_t)
            add_bias_x86(total, self.bias, nan_from="bias")         # reference FullyConnected, as the FC kernel
            return lc.clamp_float(total)

    def sequence(self, gates_in: np.ndarray, h: np.ndarray, c: np.ndarray):
        s = self.d.state
        steps, rows = gates_in.shape[:2]
        hs = np.empty((steps, rows, s), np.float32)
        # with finite weights, gate inputs (the input FCs, clamped) and state, no NaN arises (the gates are bounded,
        # the cell grows by at most one a step): no two NaNs meet and NumPy's operands are as good as x86's; else
        # (below) every add and product keeps the operand's NaN TFLM's loops keep
        if self.finite and all(np.isfinite(a).all() for a in (gates_in, h, c)):
            with np.errstate(all="ignore"):
                return self._finite_sequence(gates_in, h, c, hs)
        h_t = np.empty((s, rows), np.float32)            # the recurrent FC's input, refreshed every step
        dot = BoundDot(h_t, self.w_rec, None, self.w_rec_t)
        zero = np.float32(0.0)
        with np.errstate(all="ignore"):
            for t in range(steps):
                copyto(h_t, h.T)
                rec = lc.clamp_float(dot() + zero)
                pre = gates_in[t] + rec
                both_nan_as_x86(ADD_KEEPS, gates_in[t], rec, pre)
                h, c = self._gates(pre, c)
                hs[t] = h
        return hs, h, c

    def _finite_sequence(self, gates_in: np.ndarray, h: np.ndarray, c: np.ndarray, hs: np.ndarray):
        """:meth:`sequence` where no NaN can arise, on kept buffers: the gates in the order (input, forget, output,
        cell) so that the three sigmoids are one slice and ``[i | f] * [g | c]`` one product (with the cell state
        kept after the cell gate). The clamps of ``f c``, ``i g`` and ``h`` are left out: with gates in [0, 1] and
        [-1, 1] and a finite cell they cannot overflow. Float addition and multiplication commute (NaN aside), so
        ``ig + fc`` is TFLM's ``fc + ig``. ``sequence`` is already under an errstate ignoring float errors."""
        d, s = self.d, self.d.state
        steps, rows = gates_in.shape[:2]
        order = np.r_[s:2 * s, 0:s, 3 * s:4 * s, 2 * s:3 * s]
        if self.w_rec_fast is None:
            w = np.ascontiguousarray(self.w_rec[order])
            # the largest |recurrent FC| per unit of |h|: every partial sum of a gate stays below it times max |h|
            reach = float(np.abs(w.astype(np.float64)).sum(axis=1).max(initial=0.0))
            self.w_rec_fast = (w, np.ascontiguousarray(w.T), reach)
        w, w_t, reach = self.w_rec_fast
        # the recurrent FC's ±FLT_MAX clamp changes nothing while its sums stay far below FLT_MAX: |h| <= 1 after the
        # first step (o * tanh(c)), the state's own |h| before it
        clamp_first = reach * float(np.abs(h).max(initial=0.0)) >= _NO_CLAMP_BELOW
        clamp_later = reach >= _NO_CLAMP_BELOW
        g_in = np.ascontiguousarray(gates_in[:, :, order])
        h_t = np.empty((s, rows), np.float32)
        dot = BoundDot(h_t, w, None, w_t)
        rec = dot.sums if dot.sums is not None else dot        # finite: no NaN for the dot to repair
        pre = np.empty((rows, 4 * s), np.float32)
        sig = np.empty((rows, 3 * s), np.float32)
        sigmoids = bind_logistic_float(pre[:, :3 * s], sig)
        gc = np.empty((rows, 2 * s), np.float32)       # [g | c]
        gc[:, s:] = c
        cell, products, t = gc[:, s:], np.empty((rows, 2 * s), np.float32), np.empty((rows, s), np.float32)
        lo, hi = np.array(-lc.FLT_MAX, np.float32), np.array(lc.FLT_MAX, np.float32)
        # the cell clip as the clip ufunc (finite values: min(max()) and max(min()) agree, the bounds are nonzero)
        clip = (np.array(-d.cell_clip, np.float32), np.array(d.cell_clip, np.float32)) if d.cell_clip > 0 else None
        # every view the loop uses, made once (a slice costs about 0.15 us)
        h_in, cell_pre, g_gate, if_sig, o_sig = h_t.T, pre[:, 3 * s:], gc[:, :s], sig[:, :2 * s], sig[:, 2 * s:]
        ig, fc, g_steps, h_steps = products[:, :s], products[:, s:], list(g_in), list(hs)
        # ufuncs with their output positional (a keyword costs a call 40 ns more)
        add, multiply, clip_ufunc = np.add, np.multiply, np_umath.clip
        for step in range(steps):
            copyto(h_in, h)
            if clamp_later or (step == 0 and clamp_first):
                clip_ufunc(rec(), lo, hi, pre)
                add(g_steps[step], pre, pre)
            else:
                add(g_steps[step], rec(), pre)
            sigmoids()
            if d.cell_gate_tanh:
                tanh(cell_pre, g_gate)
            else:
                copyto(g_gate, cell_pre)
            multiply(if_sig, gc, products)          # [i g | f c]
            add(ig, fc, cell)
            if clip is not None:
                clip_ufunc(cell, clip[0], clip[1], cell)
            tanh(cell, t)
            h = h_steps[step]
            multiply(t, o_sig, h)
        return hs, h, cell.copy()

    def _gates(self, pre: np.ndarray, c: np.ndarray):
        """One step's gates, cell and output where a NaN may arise: every add and product with the NaN TFLM's loop
        keeps where two meet."""
        s = self.d.state
        sig = logistic_float(pre)           # elementwise: the forget, input and output gates in one call
        f, i, o = sig[:, :s], sig[:, s:2 * s], sig[:, 3 * s:]
        g = tanhf(pre[:, 2 * s:3 * s]) if self.d.cell_gate_tanh else pre[:, 2 * s:3 * s]
        fc, ig = f * c, i * g
        both_nan_as_x86(MUL_KEEPS, f, c, fc)
        both_nan_as_x86(MUL_KEEPS, i, g, ig)
        fc, ig = lc.clamp_float(fc), lc.clamp_float(ig)
        c = fc + ig
        both_nan_as_x86(ADD_KEEPS, fc, ig, c)
        if self.d.cell_clip > 0:
            clip = np.float32(self.d.cell_clip)
            c = np.maximum(np.minimum(clip, c), -clip)
        t = tanhf(c)
        h = t * o
        both_nan_as_x86(MUL_KEEPS, t, o, h)
        return lc.clamp_float(h), c
