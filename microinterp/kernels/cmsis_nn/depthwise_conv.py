"""DEPTHWISE_CONV_2D in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc``).

``Init`` allocates ``OpData {OpDataConv reference_op_data; int buffer_idx;}``. ``Prepare`` keeps the reference
per-channel arrays, lets ``CalculateOpDataDepthwiseConv`` request the int4 unpack buffer, and for int8 inputs requests
``arm_depthwise_conv_wrapper_s8_get_buffer_size`` (``..._s4_...`` for int4 filters: the same sizes for the shapes it
covers) when it is not zero. int16 and float inputs ask for nothing more.

Pitfall kept as TFLM has it: ``Prepare`` fills only padding and dilation of ``cmsis_nn_dw_conv_params``; on MVE a
one-input-channel depthwise convolution sizes its buffer as a convolution, whose 1xN test reads the (unset) stride.
The stride of the op is used here, which is what the buffer needs.
"""

from __future__ import annotations

from . import DevicePrepare, buffer_sizes
from ._util import conv_padding, output, reference_opdata, tensor, with_ints


def prepare(op, tensors, features: str) -> DevicePrepare:
    x, w, y = tensor(op, tensors, 0), tensor(op, tensors, 1), output(op, tensors)
    scratch = []
    if w.type_name == "INT4":
        scratch.append(w.num_elements)
    if x.type_name == "INT8" and len(x.shape) == 4 and len(w.shape) == 4 and len(y.shape) == 4:
        n, ih, iw, ic = x.shape
        _, fh, fw, _ = w.shape
        _, oh, ow, oc = y.shape
        o = op.options
        size = buffer_sizes.depthwise_conv_wrapper_s8(
            features, pad=conv_padding(op, ih, iw, fh, fw), stride=(o["stride_h"], o["stride_w"]),
            dilation=(o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)), input_nhwc=(n, ih, iw, ic),
            filter_hwc=(fh, fw, oc), output_hwc=(oh, ow, oc))
        if size > 0:
            scratch.append(size)
    return DevicePrepare(opdata=with_ints(reference_opdata("DEPTHWISE_CONV_2D"), 1), scratch=tuple(scratch))


RULES = {"DEPTHWISE_CONV_2D": prepare}
