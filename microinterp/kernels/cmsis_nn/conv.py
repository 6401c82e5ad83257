"""CONV_2D in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/conv.cc``).

``Init`` allocates ``OpData {OpDataConv reference_op_data; int buffer_idx;}``. ``Prepare`` keeps the reference
per-channel multipliers and shifts (int8/int16), lets ``CalculateOpDataConv`` request the int4 unpack buffer, then
requests ``arm_convolve_wrapper_s8_get_buffer_size`` (int8 input) or ``arm_convolve_wrapper_s16_get_buffer_size``
(int16 input with an int64 bias or none) when it is not zero. Float convolutions ask for nothing more.
"""

from __future__ import annotations

from . import DevicePrepare, buffer_sizes
from ._util import conv_padding, output, reference_opdata, tensor, with_ints


def prepare(op, tensors, features: str) -> DevicePrepare:
    x, w, y = tensor(op, tensors, 0), tensor(op, tensors, 1), output(op, tensors)
    bias = tensor(op, tensors, 2)
    scratch = []
    if w.type_name == "INT4":
        scratch.append(w.num_elements)
    if len(x.shape) == 4 and len(w.shape) == 4 and len(y.shape) == 4:
        _, ih, iw, ic = x.shape
        _, fh, fw, fc = w.shape
        pad = conv_padding(op, ih, iw, fh, fw)
        o = op.options
        size = 0
        if x.type_name == "INT8":
            size = buffer_sizes.convolve_wrapper_s8(
                features, pad=pad, stride=(o["stride_h"], o["stride_w"]),
                dilation=(o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)),
                input_hwc=(ih, iw, ic), filter_hwc=(fh, fw, fc), output_w=y.shape[2])
        elif x.type_name == "INT16" and (bias is None or bias.type_name == "INT64"):
            size = buffer_sizes.convolve_wrapper_s16(features, ic, fh, fw)
        if size > 0:
            scratch.append(size)
    return DevicePrepare(opdata=with_ints(reference_opdata("CONV_2D"), 1), scratch=tuple(scratch))


RULES = {"CONV_2D": prepare}
