"""UNIDIRECTIONAL_SEQUENCE_LSTM in a CMSIS-NN build
(``tensorflow/lite/micro/kernels/cmsis_nn/unidirectional_sequence_lstm.cc``).

``Init`` allocates ``OpData {OpDataLSTM params_ref; cmsis_nn_lstm_params params_cmsis_nn;}``: OpDataLSTM is 688
bytes on every ABI (no pointers; int64 members make it 8-aligned) and ``cmsis_nn_lstm_params`` 15 int32 and four
gates of 40 bytes on a 32-bit core (220), so 912 with the struct's alignment. With int8 or int16 activations and an
int16 cell state, ``Prepare`` precomputes eight kernel sums of ``state_dimension`` int32 (int8) or int64 (int16)
into persistent buffers and requests three scratch buffers of ``batch * state_dimension * sizeof(cell)``; other
type combinations request four, as the reference kernel does.
"""

from __future__ import annotations

from . import DevicePrepare
from ._util import output, tensor

OPDATA = 912
_CELL_STATE = 19


def prepare(op, tensors, features: str) -> DevicePrepare:
    x, y = tensor(op, tensors, 0), output(op, tensors)
    cell = tensor(op, tensors, _CELL_STATE)
    if cell is None or len(y.shape) < 2:
        return DevicePrepare(opdata=OPDATA)
    time_major = op.options.get("time_major", False)
    batch = y.shape[1] if time_major and len(y.shape) == 3 else y.shape[0]
    state = y.shape[-1]
    cell_bytes = cell.dtype.itemsize if cell.dtype is not None else 4
    buffer = batch * state * cell_bytes
    if cell.type_name == "INT16" and x.type_name in ("INT8", "INT16"):
        sums = state * (4 if x.type_name == "INT8" else 8)
        return DevicePrepare(opdata=OPDATA, scratch=(buffer,) * 3, persistent=(sums,) * 8)
    return DevicePrepare(opdata=OPDATA, scratch=(buffer,) * 4)


RULES = {"UNIDIRECTIONAL_SEQUENCE_LSTM": prepare}
