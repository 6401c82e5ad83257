"""SVDF in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/svdf.cc``).

``Init`` allocates ``CmsisNnOpDataSvdf`` (nine int32 and the ``kernel_sums`` pointer on a
``KERNELS_OPTIMIZED_FOR_SPEED`` build: 40 bytes on a 32-bit core). int8 inputs request ``batch * num_filters``
and ``batch * num_units`` int32 scratch buffers, and on MVE precompute ``num_filters`` int32 kernel sums
(``arm_svdf_s8_get_buffer_size``) into a persistent buffer; float inputs request ``batch * num_filters`` floats.
"""

from __future__ import annotations

from . import DevicePrepare, buffer_sizes
from ._util import tensor

OPDATA = 10 * 4


def prepare(op, tensors, features: str) -> DevicePrepare:
    x, wf = tensor(op, tensors, 0), tensor(op, tensors, 1)
    if x is None or wf is None or len(x.shape) < 2 or not wf.shape:
        return DevicePrepare(opdata=OPDATA)
    batch, filters = x.shape[0], wf.shape[0]
    rank = max(int(op.options.get("rank", 1)), 1)
    if x.type_name == "INT8":
        sums = buffer_sizes.svdf_s8(features, filters)
        return DevicePrepare(opdata=OPDATA, scratch=(batch * filters * 4, batch * (filters // rank) * 4),
                             persistent=(sums,) if sums > 0 else ())
    return DevicePrepare(opdata=OPDATA, scratch=(batch * filters * 4,))


RULES = {"SVDF": prepare}
