"""Typed errors. Every error microinterp raises derives from :class:`MicroInterpError`."""

from __future__ import annotations


class MicroInterpError(Exception):
    """Base class of every error raised by microinterp."""


class ModelError(MicroInterpError, ValueError):
    """The model file is malformed, truncated or inconsistent (says what and where)."""


class UnsupportedOpError(MicroInterpError):
    """One or more operators have no kernel; ``missing`` lists ``(op_index, op_name)`` for all of them."""

    def __init__(self, missing: list[tuple[int, str]], where: str = ""):
        self.missing = list(missing)
        names = sorted({name for _, name in self.missing})
        ops = ", ".join(f"op {i} {name}" for i, name in self.missing)
        super().__init__(
            f"{len(self.missing)} operator(s) have no kernel{where} ({', '.join(names)}): {ops}"
        )


class PrepareError(MicroInterpError, ValueError):
    """A kernel refused an operator at prepare time (the way TFLM's Prepare would fail)."""

    def __init__(self, op_index: int, op_name: str, rule: str):
        self.op_index = op_index
        self.op_name = op_name
        self.rule = rule
        super().__init__(f"op {op_index} ({op_name}): {rule}")


class InvokeError(MicroInterpError, RuntimeError):
    """An operator failed while running, where TFLM's Eval returns an error (a resource variable read before it was
    assigned, an index out of range that only the data reveals, ...). Names the op and the rule."""

    def __init__(self, op_index: int, op_name: str, rule: str):
        self.op_index = op_index
        self.op_name = op_name
        self.rule = rule
        super().__init__(f"op {op_index} ({op_name}) failed at invoke: {rule}")


class CheckFailed(MicroInterpError, RuntimeError):
    """A kernel met a condition TFLM checks with ``TFLITE_CHECK`` at Eval (the firmware aborts). Kernels raise it
    with the rule; :meth:`microinterp.Interpreter.invoke` turns it into an :class:`InvokeError` naming the op."""


class ArenaOverflowError(MicroInterpError, MemoryError):
    """The arena is too small. Carries the request, what was available and the smallest arena that works."""

    def __init__(self, what: str, requested: int, available: int, needed_arena: int | None = None,
                 hint: str = ""):
        self.what = what
        self.requested = int(requested)
        self.available = int(available)
        self.missing = max(0, self.requested - self.available)
        self.needed_arena = needed_arena
        msg = (f"Failed to allocate {what}. Requested: {self.requested}, available {self.available}, "
               f"missing: {self.missing}")
        if needed_arena is not None:
            msg += f"; the smallest arena that works is {needed_arena} bytes"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class HostMemoryError(MicroInterpError, MemoryError):
    """The host (the machine running microinterp) cannot or will not hold what a model needs in memory: a plan
    above ``Interpreter(max_arena=)``, or a kernel's host buffer that could not be allocated."""


class ConfigError(MicroInterpError, ValueError):
    """A bad configuration value: unknown MCU profile name, a profile field out of range, an unknown option."""


class InputError(MicroInterpError, ValueError):
    """Wrong input/output index, shape or dtype (names what was expected and what was given)."""


class IntegrityError(MicroInterpError):
    """A tile read from the SD image does not match its checksum."""


class StorageError(MicroInterpError, OSError):
    """The SD image cannot be used (foreign file, wrong geometry, I/O failure)."""


class TfliteMicroUnavailable(MicroInterpError, ImportError):
    """The optional oracle ``tflite-micro`` is not installed (pip install 'microinterp[test]')."""


class ModelShapeWarning(UserWarning):
    """A tensor shape stored in the model disagrees with what its op computes; the op runs over the stored shape,
    as TFLM does (a converter that left a dynamic batch dimension behind, for instance)."""
