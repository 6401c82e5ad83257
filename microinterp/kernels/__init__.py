"""Reference kernels, one file per op: the executable specification of TFLM's behaviour.

``REFERENCE_KERNELS`` is the explicit registry (op name -> kernel object) the resolver starts from.
"""

from __future__ import annotations

from . import reshape
from . import conv, depthwise_conv
from . import svdf, transpose_conv, unidirectional_sequence_lstm
from . import arg_max, arg_min, dequantize, leaky_relu, maximum, minimum, prelu, quantize, relu, relu6
from . import resize_bilinear, resize_nearest_neighbor
from . import mean, reduce_max, sum
from . import hard_swish, logistic, softmax, tanh
from . import add, average_pool, fully_connected, max_pool, mul, sub
from . import pad, padv2, transpose
from . import concatenation, expand_dims, pack, shape, split, split_v, squeeze, unpack
from . import gather, slice, strided_slice

REFERENCE_KERNELS: dict[str, object] = {
    "RESHAPE": reshape.KERNEL,
    "AVERAGE_POOL_2D": average_pool.KERNEL,
    "MAX_POOL_2D": max_pool.KERNEL,
    "FULLY_CONNECTED": fully_connected.KERNEL,
    "ADD": add.KERNEL,
    "SUB": sub.KERNEL,
    "MUL": mul.KERNEL,
    "CONV_2D": conv.KERNEL,
    "DEPTHWISE_CONV_2D": depthwise_conv.KERNEL,
    "SVDF": svdf.KERNEL,
    "TRANSPOSE_CONV": transpose_conv.KERNEL,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm.KERNEL,
    "MEAN": mean.KERNEL,
    "SUM": sum.KERNEL,
    "REDUCE_MAX": reduce_max.KERNEL,
    "SOFTMAX": softmax.KERNEL,
    "LOGISTIC": logistic.KERNEL,
    "TANH": tanh.KERNEL,
    "HARD_SWISH": hard_swish.KERNEL,
    "PAD": pad.KERNEL,
    "PADV2": padv2.KERNEL,
    "TRANSPOSE": transpose.KERNEL,
    "SQUEEZE": squeeze.KERNEL,
    "EXPAND_DIMS": expand_dims.KERNEL,
    "SHAPE": shape.KERNEL,
    "PACK": pack.KERNEL,
    "UNPACK": unpack.KERNEL,
    "SPLIT": split.KERNEL,
    "SPLIT_V": split_v.KERNEL,
    "CONCATENATION": concatenation.KERNEL,
    "STRIDED_SLICE": strided_slice.KERNEL,
    "SLICE": slice.KERNEL,
    "GATHER": gather.KERNEL,
    "QUANTIZE": quantize.KERNEL,
    "DEQUANTIZE": dequantize.KERNEL,
    "RELU": relu.KERNEL,
    "RELU6": relu6.KERNEL,
    "LEAKY_RELU": leaky_relu.KERNEL,
    "PRELU": prelu.KERNEL,
    "MAXIMUM": maximum.KERNEL,
    "MINIMUM": minimum.KERNEL,
    "ARG_MAX": arg_max.KERNEL,
    "ARG_MIN": arg_min.KERNEL,
    "RESIZE_NEAREST_NEIGHBOR": resize_nearest_neighbor.KERNEL,
    "RESIZE_BILINEAR": resize_bilinear.KERNEL,
}
