"""AVERAGE_POOL_2D and MAX_POOL_2D in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/pooling.cc``).

``Init`` allocates ``OpData {OpDataPooling reference_op_data; int buffer_idx;}``. Average pooling of int8/int16
requests ``arm_avgpool_s8/s16_get_buffer_size`` (an int32 per channel on DSP cores, nothing on plain or MVE cores);
max pooling requests nothing.
"""

from __future__ import annotations

from . import DevicePrepare, buffer_sizes
from ._util import output, reference_opdata, tensor, with_ints


def average(op, tensors, features: str) -> DevicePrepare:
    x, y = tensor(op, tensors, 0), output(op, tensors)
    scratch = ()
    if x.type_name in ("INT8", "INT16") and len(y.shape) == 4:
        size = buffer_sizes.avgpool(features, y.shape[3])
        scratch = (size,) if size > 0 else ()
    return DevicePrepare(opdata=with_ints(reference_opdata("AVERAGE_POOL_2D"), 1), scratch=scratch)


def maximum(op, tensors, features: str) -> DevicePrepare:
    return DevicePrepare(opdata=with_ints(reference_opdata("MAX_POOL_2D"), 1))


RULES = {"AVERAGE_POOL_2D": average, "MAX_POOL_2D": maximum}
