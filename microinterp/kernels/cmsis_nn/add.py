"""ADD in a CMSIS-NN build (``tensorflow/lite/micro/kernels/cmsis_nn/add.cc``).

``Init`` allocates the file's own ``OpData`` (a bool, twelve int32 and two floats: 60 bytes, as the reference
OpDataAdd); ``Prepare`` requests nothing.
"""

from __future__ import annotations

from . import DevicePrepare

OPDATA = 4 + 12 * 4 + 2 * 4


def prepare(op, tensors, features: str) -> DevicePrepare:
    return DevicePrepare(opdata=OPDATA)


RULES = {"ADD": prepare}
