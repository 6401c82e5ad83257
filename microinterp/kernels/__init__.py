"""Reference kernels, one file per op: the executable specification of TFLM's behaviour.

``REFERENCE_KERNELS`` is the explicit registry (op name -> kernel object) the resolver starts from.
"""

from __future__ import annotations

from . import reshape

REFERENCE_KERNELS: dict[str, object] = {
    "RESHAPE": reshape.KERNEL,
}
