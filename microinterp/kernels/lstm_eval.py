"""One LSTM time step, integer and float (TFLM's ``lstm_internal::LstmStep``), for
:mod:`.unidirectional_sequence_lstm`.

Both step objects take the kernel's OpData and the recurrent weights of all four gates side by side
(``[4S, S]``, gate order forget, input, cell, output, weight zero points already subtracted). ``input_fc``
computes the input FCs of every time step at once (they do not depend on the state); ``run`` advances one step
for a group of batch rows and returns the new hidden and cell states.
"""

from __future__ import annotations

import numpy as np

from ..libm import tanhf
from ..quant import Requantizer, mbqm, mbqm_int64, wrap_int32
from . import lstm_common as lc
from .logistic import logistic_float


class IntegerStep:
    """Integer LSTM step. Sigmoid/tanh of int16 values are table lookups (the exact LUT functions evaluated
    for all 65536 inputs); the int32 MBQMs use precomputed :class:`~microinterp.quant.Requantizer` objects."""

    def __init__(self, data, w_rec: np.ndarray):
        self.d = data
        self.w_rec = w_rec.T                          # [S, 4S]; products and sums are exact in float64
        self.acc64 = data.kind == "INT16"
        s = data.state
        self.rec_requant = None if self.acc64 else Requantizer(*data.recurrent_mult)
        self.sigmoid = lc.sigmoid_lut()
        self.gate_tanh = lc.tanh_lut(*lc.tanh_params(-12))
        self.cell_tanh = lc.tanh_lut(*data.tanh_params)
        # f⊙c and i⊙g in one call: multipliers broadcast over the two halves of a [.., 2S] vector.
        (mf, sf), (mi, si) = data.forget_cell_mul, data.input_mul
        self.cell_requant = Requantizer(np.repeat([mf, mi], s), np.repeat([sf, si], s))
        self.hidden_requant = Requantizer(*data.output_mul)

    def _requant(self, acc: np.ndarray, mult, requantizer=None) -> np.ndarray:
        if self.acc64:
            res = mbqm_int64(acc, *mult)
        elif requantizer is not None:
            res = requantizer(wrap_int32(acc))
        else:
            res = mbqm(wrap_int32(acc), *mult)
        return _sat16(res)

    def input_fc(self, x: np.ndarray, w_in: np.ndarray, bias: np.ndarray) -> np.ndarray:
        acc = ((x.astype(np.float64) - self.d.input_zp) @ w_in.T).astype(np.int64)
        return self._requant(acc + bias.astype(np.int64), self.d.input_mult)

    def run(self, gates_in: np.ndarray, h: np.ndarray, c: np.ndarray):
        d, s = self.d, self.d.state
        rec = ((h.astype(np.float64) - d.hidden_zp) @ self.w_rec).astype(np.int64)
        pre = _sat16(gates_in + self._requant(rec, d.recurrent_mult, self.rec_requant)) + 32768
        act = self.sigmoid[pre]                                          # f, i, (unused), o
        g = self.gate_tanh[pre[:, 2 * s:3 * s]] if d.cell_gate_tanh else pre[:, 2 * s:3 * s] - 32768
        # c = sat(f⊙c + i⊙g): both products requantized in one call, then the saturating add.
        prods = np.concatenate([act[:, :s] * c, act[:, s:2 * s] * g], axis=1)
        both = _sat16(self.cell_requant(prods))
        c = _sat16(both[:, :s] + both[:, s:])
        if d.cell_clip > 0:
            c = np.maximum(np.minimum(c, d.quantized_cell_clip), -d.quantized_cell_clip)
        h = self.cell_tanh[c + 32768] * act[:, 3 * s:]
        lo, hi = d.hidden_range
        h = np.minimum(np.maximum(self.hidden_requant(h) + d.hidden_zp, lo), hi)
        return h, c


def _sat16(x: np.ndarray) -> np.ndarray:
    """Clamp to int16 (np.minimum/np.maximum: much cheaper than np.clip on tiny arrays)."""
    return np.minimum(np.maximum(x, -32768), 32767)


class FloatStep:
    """Float LSTM step: every FC sum is a sequential float32 accumulation (TFLM's loop order)."""

    def __init__(self, data, w_rec: np.ndarray):
        self.d = data
        self.w_rec = w_rec.astype(np.float32)

    @staticmethod
    def _fc(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        total = np.zeros((x.shape[0], w.shape[0]), np.float32)
        for k in range(w.shape[1]):
            total += x[:, k:k + 1] * w[:, k]
        return lc.clamp_float(total + (bias if bias is not None else np.float32(0)))

    def input_fc(self, x: np.ndarray, w_in: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return self._fc(x.astype(np.float32), w_in.astype(np.float32), bias.astype(np.float32))

    def run(self, gates_in: np.ndarray, h: np.ndarray, c: np.ndarray):
        s = self.d.state
        pre = gates_in + self._fc(h, self.w_rec, None)
        f = logistic_float(pre[:, :s])
        i = logistic_float(pre[:, s:2 * s])
        g = tanhf(pre[:, 2 * s:3 * s]) if self.d.cell_gate_tanh else pre[:, 2 * s:3 * s]
        o = logistic_float(pre[:, 3 * s:])
        c = lc.clamp_float(f * c)
        c = c + lc.clamp_float(i * g)
        if self.d.cell_clip > 0:
            clip = np.float32(self.d.cell_clip)
            c = np.maximum(np.minimum(clip, c), -clip)
        h = lc.clamp_float(tanhf(c) * o)
        return h, c
