"""SOFTMAX in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/softmax.cc``).

``Init`` allocates ``CMSISNNSoftmaxParams {SoftmaxParams softmax_params; int32_t num_rows, row_size;}``;
``Prepare`` is the reference ``CalculateSoftmaxParams`` (its int16 LUTs are the reference arrays) and requests no
scratch buffer.
"""

from __future__ import annotations

from . import DevicePrepare
from ._util import reference_opdata, with_ints


def prepare(op, tensors, features: str) -> DevicePrepare:
    return DevicePrepare(opdata=with_ints(reference_opdata("SOFTMAX"), 2))


RULES = {"SOFTMAX": prepare}
