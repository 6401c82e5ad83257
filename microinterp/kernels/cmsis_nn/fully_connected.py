"""FULLY_CONNECTED in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/fully_connected.cc``).

``Init`` allocates ``OpData {OpDataFullyConnected reference_op_data; int buffer_conv_1x1_idx, buffer_idx;
int32_t* kernel_sums; int32_t batches, accum_depth, output_depth;}``. ``Prepare`` keeps the reference per-channel
arrays, then for int8 inputs with int8 filters:

* output rank > 2 and ``accum_depth % 4 == 0`` (the 1x1-convolution path): a per-tensor filter requests
  ``output_depth * 8`` bytes for per-channel quantization; ``arm_convolve_1x1_s8_fast_get_buffer_size`` adds
  nothing under GCC;
* otherwise ``arm_fully_connected_s8_get_buffer_size`` (``output_depth * 4`` on MVE, else 0): with a constant filter
  and bias (``KERNELS_OPTIMIZED_FOR_SPEED``) the kernel sums are precomputed into a persistent buffer of that size
  instead of a scratch buffer.

int16 inputs ask for ``arm_fully_connected_s16_get_buffer_size`` (0); float and int4 filters for nothing.
"""

from __future__ import annotations

from . import DevicePrepare, buffer_sizes
from ._util import output, reference_opdata, tensor


def prepare(op, tensors, features: str) -> DevicePrepare:
    x, w, y = tensor(op, tensors, 0), tensor(op, tensors, 1), output(op, tensors)
    bias = tensor(op, tensors, 2)
    scratch, persistent = [], []
    if x.type_name == "INT8" and w.type_name == "INT8" and y.shape and w.shape:
        output_depth = y.shape[-1]
        accum_depth = w.shape[-1]
        per_channel = w.quantization is not None and w.quantization.scales.size > 1
        if len(y.shape) > 2 and accum_depth % 4 == 0:
            if not per_channel:
                scratch.append(output_depth * 8)
        else:
            size = buffer_sizes.fully_connected_s8(features, output_depth)
            if size > 0 and w.is_constant and (bias is None or bias.is_constant):
                persistent.append(size)
            elif size > 0:
                scratch.append(size)
    opdata = (reference_opdata("FULLY_CONNECTED") + 3) // 4 * 4 + 24      # the reference OpData + 6 ints
    return DevicePrepare(opdata=opdata, scratch=tuple(scratch), persistent=tuple(persistent))


RULES = {"FULLY_CONNECTED": prepare}
