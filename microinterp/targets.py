"""Device targets: which firmware build ``Interpreter(model, target=...)`` and ``deploy --target`` stand for.

A firmware is TFLM compiled for one Cortex-M core, usually with the CMSIS-NN kernels (``OPTIMIZED_KERNEL_DIR=cmsis_nn``).
Its arena differs from the x86-64 wheel's in two ways, and a :class:`Target` names both:

* **the kernel set's Prepare**: CMSIS-NN's TFLM kernels (``tensorflow/lite/micro/kernels/cmsis_nn/*.cc``) keep
  other OpData structs, request other scratch buffers and, on some cores, keep extra persistent buffers; what they
  request depends on the core's feature set, as CMSIS-NN's ``*_get_buffer_size*`` functions do (no DSP extension,
  DSP, or Helium/MVE). The rules live in :mod:`microinterp.kernels.cmsis_nn`, next to the kernels they describe.
* **a 32-bit ABI**: TFLM's own structs (eval tensors, nodes, allocator objects) are those of an ILP32 build
  (:mod:`microinterp.memory32`), built without ``USE_TFLM_COMPRESSION``.

The figures are checked against TFLM's own Cortex-M build run in ``qemu-system-arm`` (the goldens under
``tests/goldens/device/``; the build is :data:`BUILD`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .errors import ConfigError
from .kernels.cmsis_nn import STATELESS_INPUTS

#: The software build the targets model (the device oracle's build; say it wherever a figure is printed).
BUILD: Mapping[str, str] = MappingProxyType({
    "tflm": "tensorflow/tflite-micro 90b983c2b3f1480642e040bbd2ddb37b998f3424 (2026-08-20)",
    "cmsis_nn": "ARM-software/CMSIS-NN 4ab83cc3cc98fb85ed6dafb55e8ca02f1628dcae (pinned by that TFLM)",
    "compiler": "arm-none-eabi-gcc 12.2.1 (Debian 12.2.rel1), TFLM Makefile flags, KERNELS_OPTIMIZED_FOR_SPEED",
})

#: Kernel sets a target can be built with.
KERNEL_SETS = ("cmsis-nn", "reference")


@dataclass(frozen=True)
class Core:
    """A Cortex-M core: its CMSIS-NN feature set (``none``: plain C, ``dsp``: ARM_MATH_DSP, ``mve``: ARM_MATH_MVEI
    with Helium), the float ABI its firmware is built with, and the QEMU board the oracle runs it on."""

    name: str
    features: str
    float_abi: str
    board: str


CORES: Mapping[str, Core] = MappingProxyType({c.name: c for c in (
    Core("cortex-m3", "none", "soft", "mps2-an385"),
    Core("cortex-m4", "dsp", "soft", "mps2-an386"),
    Core("cortex-m7", "dsp", "soft", "mps2-an500"),
    Core("cortex-m33", "dsp", "soft", "mps2-an505"),
    # -mfloat-abi=soft makes GCC drop MVE: a Helium build is a hard-float build.
    Core("cortex-m55", "mve", "hard", "mps3-an547"),
    # No QEMU machine emulates the M85 (no oracle): CMSIS-NN selects its kernels by __ARM_FEATURE_MVE alone
    # (ARM_MATH_MVEI, arm_nn_math_types.h), so its firmware runs the M55's code: the M55's arena and outputs.
    Core("cortex-m85", "mve", "hard", ""),
)})


@dataclass(frozen=True)
class Target:
    """One firmware build: a core and a kernel set."""

    core: Core
    kernels: str = "cmsis-nn"

    @property
    def name(self) -> str:
        return f"{self.core.name}/{self.kernels}"

    @property
    def features(self) -> str:
        """The CMSIS-NN feature set the kernels are compiled for (``reference`` kernels use none)."""
        return self.core.features if self.kernels == "cmsis-nn" else "none"

    def describe(self) -> dict[str, str]:
        """The build this target stands for, for reports."""
        return {"core": self.core.name, "kernels": self.kernels, "features": self.core.features,
                "float_abi": self.core.float_abi, **BUILD}


def get_target(target: str | Target, kernels: str | None = None) -> Target:
    """``"cortex-m55"`` (CMSIS-NN kernels), ``"cortex-m4/reference"``, or a :class:`Target`; ``kernels`` overrides
    the kernel set. Unknown names raise :class:`ConfigError` listing the known ones."""
    if isinstance(target, Target):
        return target if kernels is None else Target(target.core, _kernel_set(kernels))
    if not isinstance(target, str):
        raise ConfigError(f"target must be a core name such as 'cortex-m55', got {type(target).__name__}")
    name, _, kset = target.strip().lower().partition("/")
    if name not in CORES:
        raise ConfigError(f"unknown target core {target!r}; known cores: {', '.join(CORES)}")
    return Target(CORES[name], _kernel_set(kernels or kset or "cmsis-nn"))


def target_of_core(core: str, kernels: str = "cmsis-nn") -> Target:
    """The target of an MCU profile's core name (``"Cortex-M4F"`` -> cortex-m4; the FPU suffix is dropped)."""
    name = core.strip().lower().rstrip("f")
    return get_target(name, kernels)


def _kernel_set(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    key = "cmsis-nn" if key == "optimized" else key
    if key not in KERNEL_SETS:
        raise ConfigError(f"unknown kernel set {name!r}; known kernel sets: {', '.join(KERNEL_SETS)}")
    return key


def check_ops(model: Any, target: Target) -> None:
    """Refuse a model with ops the firmware build has no kernel for (TFLM registers no such op or custom code),
    listing every one of them (:class:`~microinterp.errors.UnsupportedOpError`)."""
    from .errors import UnsupportedOpError
    from .tflm.ops import RESOLVER_METHODS

    missing = [(op.index if sg.index == 0 else f"{sg.index}:{op.index}", op.key)
               for sg in model.subgraphs for op in sg.operators if op.key not in RESOLVER_METHODS]
    if missing:
        raise UnsupportedOpError(missing, where=f" in TFLM's {target.name} build")


def stateless_state_tensors(model: Any, target: Target) -> tuple[int, ...]:
    """Variable tensors of subgraph 0 that ``target``'s kernels start from their initial value on every invoke."""
    if target.kernels != "cmsis-nn":
        return ()
    sg = model.main
    found: list[int] = []
    for op in sg.operators:
        slots = STATELESS_INPUTS.get(op.key, ())
        x = sg.tensors[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
        if not slots or x is None or x.type_name not in ("INT8", "INT16"):
            continue
        for slot in slots:
            if slot < len(op.inputs) and op.inputs[slot] >= 0 and sg.tensors[op.inputs[slot]].is_variable:
                found.append(op.inputs[slot])
    return tuple(found)
