"""Optimized kernels: same OpData as the reference (they reuse its prepare), faster invoke, bit-exact.

``OPTIMIZED_KERNELS`` is the explicit list the resolver puts above the reference layer.
"""

from __future__ import annotations

from . import (
    add,
    average_pool,
    batch_matmul,
    conv,
    depthwise_conv,
    fully_connected,
    mean,
    mul,
    pad,
    padv2,
    softmax,
    sub,
    transpose,
    unidirectional_sequence_lstm,
)

OPTIMIZED_KERNELS: dict[str, object] = {
    "CONV_2D": conv.KERNEL,
    "FULLY_CONNECTED": fully_connected.KERNEL,
    "DEPTHWISE_CONV_2D": depthwise_conv.KERNEL,
    "ADD": add.KERNEL,
    "SUB": sub.KERNEL,
    "MUL": mul.KERNEL,
    "AVERAGE_POOL_2D": average_pool.KERNEL,
    "MEAN": mean.KERNEL,
    "PAD": pad.KERNEL,
    "PADV2": padv2.KERNEL,
    "SOFTMAX": softmax.KERNEL,
    "TRANSPOSE": transpose.KERNEL,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm.KERNEL,
    "BATCH_MATMUL": batch_matmul.KERNEL,
}
