"""PADV2: PAD with an explicit fill value (third input ``constant_values``).

TFLM registers the very same Prepare/Eval for PAD and PADV2 (``micro/kernels/pad.cc``); see :mod:`.pad` for the
algorithm and the int8 rule (``constant_values`` must share the output's scale and zero point; no requantization).
"""

from __future__ import annotations

from .pad import Pad, PadData

__all__ = ["KERNEL", "Pad", "PadData"]

KERNEL = Pad("PADV2")
