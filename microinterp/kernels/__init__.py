"""Reference kernels, one file per op: the executable specification of TFLM's behaviour.

``REFERENCE_KERNELS`` (op name -> kernel object) is what the resolver starts from; it is derived from the kernel
modules themselves (:mod:`.registry`): a new op is a new module exporting a :class:`~.contract.Kernel`.
"""

from __future__ import annotations

from .registry import reference

REFERENCE_KERNELS = reference()
