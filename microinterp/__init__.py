"""microinterp: a TensorFlow-Lite-Micro-style interpreter emulator in pure Python/NumPy.

Runs int8 ``.tflite`` models bit-exactly as TFLM does, with TFLM's arena arithmetic (two-stack arena, greedy
first-fit-decreasing planner). Sub-packages live inside this one import package: ``microinterp.kernels``,
``microinterp.kernels.optimized``, ``microinterp.planner``, ``microinterp.storage``.
"""

from .errors import (
    ArenaOverflowError,
    ConfigError,
    HostMemoryError,
    InputError,
    IntegrityError,
    InvokeError,
    MicroInterpError,
    ModelError,
    PrepareError,
    StorageError,
    UnsupportedOpError,
)
from .interpreter import Interpreter
from .kernels.contract import Kernel, Traits
from .model import Model, load_model
from .resolver import OpResolver, RegistrationError, default_resolver, register_kernel
from .shared_arena import SharedArena

__version__ = "0.1.0"

__all__ = [
    "ArenaOverflowError",
    "ConfigError",
    "HostMemoryError",
    "InputError",
    "IntegrityError",
    "Interpreter",
    "InvokeError",
    "Kernel",
    "MicroInterpError",
    "Model",
    "ModelError",
    "OpResolver",
    "PrepareError",
    "RegistrationError",
    "SharedArena",
    "StorageError",
    "Traits",
    "UnsupportedOpError",
    "default_resolver",
    "load_model",
    "register_kernel",
]
