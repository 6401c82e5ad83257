"""The kernel registry, derived from the kernel modules: no hand-kept table.

Every public module of a kernel package (``microinterp.kernels``, ``.signal``, ``.optimized``) that exports a
``KERNEL`` (one op's kernel) or ``KERNELS`` (the ops of one TFLM file, such as the comparisons) contributes each
kernel under every op in its ``ops``; private modules (``_name``) hold shared code only. Like ONNX's reference
evaluator, the op set is what the kernel classes say they serve. An op claimed by two kernels of one package is a
packaging error and raises at import.

:func:`declaration_of` answers for the shipped kernels what the cost model and the firmware arena ask about an op
by name (a model's op that no shipped kernel serves gets the conservative :data:`~.contract.UNDECLARED`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

from .contract import Declaration, Kernel, declaration


def collect(*packages: str) -> Mapping[str, Kernel]:
    """``{op: kernel}`` of the kernels the public modules of ``packages`` export (see the module docstring)."""
    table: dict[str, Kernel] = {}
    for package in packages:
        for name in public_modules(importlib.import_module(package).__path__):
            module = importlib.import_module(f"{package}.{name}")
            exported = vars(module)
            kernels = exported.get("KERNELS", ()) + ((exported["KERNEL"],) if "KERNEL" in exported else ())
            for kernel in kernels:
                if not isinstance(kernel, Kernel) or not kernel.ops:
                    raise TypeError(f"{module.__name__}: {kernel!r} is not a Kernel declaring its ops")
                for op in kernel.ops:
                    if op in table and table[op] is not kernel:
                        raise TypeError(f"{op} is served by two kernels: {table[op]!r} and {kernel!r}")
                    table[op] = kernel
    return MappingProxyType(table)


def public_modules(path: list[str]) -> list[str]:
    """The public modules (``*.py`` not starting with ``_``) of a package's directories, sorted."""
    return sorted({entry.name[:-3] for folder in path for entry in os.scandir(folder)
                   if entry.name.endswith(".py") and not entry.name.startswith("_") and entry.is_file()})


@cache
def reference() -> Mapping[str, Kernel]:
    """The reference kernels: TFLM's builtin ops and its signal library."""
    return collect("microinterp.kernels", "microinterp.kernels.signal")


@cache
def optimized() -> Mapping[str, Kernel]:
    """The optimized kernels (bit-exact with the reference; the resolver puts them above it)."""
    return collect("microinterp.kernels.optimized")


@cache
def builtin_ids() -> frozenset[int]:
    """The identities of every shipped kernel object, reference and optimized."""
    return frozenset(id(k) for k in (*reference().values(), *optimized().values()))


@cache
def declaration_of(op: str) -> Declaration:
    """The shipped reference kernel's declaration for ``op`` (by builtin name or custom code); the conservative
    defaults when no shipped kernel serves it."""
    kernel = reference().get(op)
    return declaration(kernel if kernel is not None else Kernel())
