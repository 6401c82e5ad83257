"""The interpreter: the user-facing shell of a runtime, like TFLM's MicroInterpreter.

When an :class:`Interpreter` is built it

1. **loads** the model and **resolves** every op of every subgraph; all ops without a kernel are reported at once
   (``UnsupportedOpError``); tensors TFLM cannot allocate are refused;
2. checks the user's settings (planner, arena, ``target=``, out-of-core options: one
   :class:`~microinterp.runtime.base.OutOfCore`);
3. builds one **runtime** (:mod:`microinterp.runtime`): in memory (prepare, plan, commit, bind: TFLM's
   ``AllocateTensors``; :mod:`microinterp.runtime.memory`), or out of core (:class:`~microinterp.pager.Pager`) when
   ``backing=`` is given and the in-memory plan does not fit the arena.

Every call after that (``set_input``, ``invoke``, ``get_output``, ``reset``, the profile) checks its arguments here
and goes through the runtime protocol. With ``arena=None`` the arena is exactly what the model needs (measured with a
sizing pass); an explicit arena that is too small raises ``ArenaOverflowError`` naming the smallest arena that works.
"""

from __future__ import annotations

import dataclasses
import os
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

    from .targets import Target

import numpy as np

from .arena import Arena
from .cost.mcu import McuProfile, kernel_set
from .errors import (
    ArenaOverflowError,
    ConfigError,
    HostMemoryError,
    InputError,
    MicroInterpError,
    ModelError,
    UnsupportedOpError,
)
from .litert import LiteRTMixin, litert_arguments
from .model import Model, Operator, load_model
from .pager import OpRecord, Pager, profile_json
from .resolver import OpResolver, default_resolver
from .runtime import InMemoryRuntime, OutOfCore, Preparation, Runtime
from .settings import Cost, Planning, split
from .shared_arena import SharedArena
from .sizes import parse_size

#: Tensor types TFLM's allocator has no size for (TfLiteTypeSizeOf fails, so AllocateTensors does).
_UNALLOCATABLE = ("STRING", "VARIANT")


def _check_tensor_types(model: Model) -> None:
    """Refuse a model with tensors TFLM cannot allocate, naming them all: AllocateTensors sizes every tensor of every
    subgraph (``BytesRequiredForTensor``) and fails on STRING and VARIANT, constant or not."""
    bad = [f"subgraph {sg.index} tensor {t.index} {t.name!r} ({t.type_name})"
           for sg in model.subgraphs for t in sg.tensors if t.type_name in _UNALLOCATABLE]
    if bad:
        raise ModelError(f"TFLM cannot allocate {len(bad)} tensor(s) of this model: {'; '.join(bad[:8])}"
                         + (" ..." if len(bad) > 8 else ""))


class Interpreter(LiteRTMixin):
    """Run a ``.tflite`` model exactly as TFLM would, in an arena of ``arena`` bytes.

    ``model`` is a path, bytes, a memoryview or a loaded :class:`~microinterp.model.Model`. ``arena=None`` means
    "exactly what the plan needs" (an int, or ``"512K"``, or a :class:`~microinterp.shared_arena.SharedArena`).
    ``optimized=False`` uses the reference kernels only; ``resolver=`` binds kernels of your own.

    The other settings come in groups (:mod:`microinterp.settings`), each also settable field by field by name:

    - ``backing=``: out of core, an SD image path, a storage backend or an
      :class:`~microinterp.runtime.base.OutOfCore` (``pools=``, ``flash=``, ``tile=``, ``checksum=``, ``recover=``,
      ``fuse=``, ``key=``);
    - ``planner=``: ``"tflm"``, ``"optimal"``, ``"phased"`` or a :class:`~microinterp.settings.Planning`
      (``max_arena=``, ``preserve_all_tensors=True``: TFLM's linear plan, every intermediate readable after
      ``invoke``, as the wheel's ``kPreserveAllTensors``);
    - ``target=``: a Cortex-M core or :class:`~microinterp.targets.Target` (``kernels=``);
    - ``cost=``: the cost model's board or a :class:`~microinterp.settings.Cost` (``mcu=``, ``cost_kernels=``).

    LiteRT's constructor arguments (``model_path=``, ``model_content=``, ``experimental_preserve_all_tensors=``, ...)
    are accepted too.
    """

    def __init__(self, model: str | os.PathLike | bytes | memoryview | Model | None = None, arena: int | None = None,
                 backing: str | os.PathLike | OutOfCore | Any = None, *, resolver: OpResolver | None = None,
                 optimized: bool = True, planner: str | Planning = "tflm", target: str | Target | None = None,
                 cost: str | McuProfile | Cost | None = None, **settings: Any):
        given = split(backing, planner, cost, settings)
        model, preserve_all_tensors = litert_arguments(model, given.planning.preserve_all_tensors, settings)
        planning = dataclasses.replace(given.planning, preserve_all_tensors=preserve_all_tensors)
        self.model = load_model(model)
        self.resolver = resolver if resolver is not None else default_resolver()
        self.optimized = optimized
        self.preserve_all_tensors = planning.preserve_all_tensors
        self.planner = planning.planner
        self.mcu = given.cost.profile
        self.cost_kernels = kernel_set(given.cost.kernels)
        self._subgraph = self.model.main
        _check_tensor_types(self.model)
        sg_kernels = self._resolve()
        self.target, self.device, device_resets = None, None, ()
        if arena is not None and not isinstance(arena, SharedArena):
            arena = parse_size(arena, "arena")        # 512000, "512K", "2M"
        if target is not None or given.kernels is not None:
            device_resets = self._target(target, given.kernels, arena, backing)
            arena = None            # the host runs in an arena of its own plan; the firmware's figures are above
        self.preparation = Preparation(self.model, self.resolver, sg_kernels, optimized, planning.preserve_all_tensors,
                                       planning.planner, arm_float=self.target is not None, device_image=self._image())
        self.runtime: Runtime = self._runtime(arena, given.out_of_core, planning.max_arena, device_resets)
        self.arena = self.runtime.arena
        views = self.runtime.tensor_views()
        tensors, sg = self._subgraph.tensors, self._subgraph
        # set_input / get_output fast paths in memory: (view, dtype, shape) per input, the output views
        self._input_slots = [(None if views is None or tensors[i].is_constant else views[i], tensors[i].dtype,
                              tensors[i].shape) for i in sg.inputs]
        self._input_fast = {k: slot for k, slot in enumerate(self._input_slots) if slot[0] is not None}
        self._output_fast = {} if views is None else {k: views[i] for k, i in enumerate(sg.outputs)
                                                     if views[i] is not None}
        self.invoke = self.runtime.invoke       # type: ignore[method-assign]  # one Python frame less a call

    def _runtime(self, arena: Any, ooc: OutOfCore | None, max_arena: int, device_resets: tuple[int, ...]) -> Runtime:
        """The runtime for these settings: in memory in ``arena`` (a shared arena's tenant, or the plan's own size
        when None); out of core when ``ooc`` is given and the in-memory plan does not fit ``arena``."""
        prep = self.preparation
        memory = partial(InMemoryRuntime, prep, mcu=self.mcu, cost_kernels=self.cost_kernels,
                         device_resets=device_resets)
        if isinstance(arena, SharedArena):
            if ooc is not None:
                raise ConfigError("a SharedArena runs its tenants in memory; out of core takes an arena of its own")
            return memory(arena.tenant_arena(str(self.model.source or f"tenant {len(arena.tenants)}")))
        needed = prep.measure() if (arena is None or ooc is not None) else None
        arena = int(needed if arena is None else arena)
        if ooc is not None and arena < needed:
            if self.preserve_all_tensors:
                raise InputError("preserve_all_tensors=True cannot run out of core (intermediates share the card)")
            try:
                return Pager(self.model, self.resolver, arena, ooc, optimized=self.optimized, mcu=self.mcu,
                             cost_kernels=self.cost_kernels)
            except MemoryError as e:
                if isinstance(e, MicroInterpError):
                    raise
                raise HostMemoryError(f"the host could not allocate what the out-of-core run needs ({e})") from e
        if needed is not None and needed > max_arena:
            raise HostMemoryError(f"the plan needs an arena of {needed} bytes, more than max_arena={max_arena} "
                                  "bytes held in host memory; pass backing='sd.img' and an MCU-sized arena= to run "
                                  "it out of core, or a larger max_arena=")
        try:
            return memory(Arena(arena))
        except MemoryError as e:
            if isinstance(e, ArenaOverflowError):
                raise
            raise HostMemoryError(f"the host could not allocate a kernel's buffers for this model ({e}); pass "
                                  "optimized=False (fewer host buffers) or backing='sd.img' to run it out of "
                                  "core") from e

    def _target(self, target: Any, kernels: str | None, arena: Any, backing: Any) -> tuple[int, ...]:
        """``target=``: the arena figures become those of that firmware build (:mod:`microinterp.targets`), an
        ``arena`` smaller than it needs fails as its AllocateTensors does, and kernels that keep no state on the
        device start every invoke from their initial state. The host itself runs in an arena of its own plan."""
        from .memory32 import estimate_arena
        from .targets import check_ops, get_target, stateless_state_tensors

        if target is None:
            raise ConfigError("kernels= selects the kernel set of a target; pass target='cortex-m4' (or another core)")
        if backing is not None or isinstance(arena, SharedArena):
            raise ConfigError("target= models a firmware's own arena; out of core and shared arenas run without it")
        self.target = get_target(target, kernels)
        check_ops(self.model, self.target)
        self.device = estimate_arena(self.model, target=self.target, resolver=self.resolver)
        if arena is not None and arena < self.device.total_bytes:
            raise ArenaOverflowError(
                f"the arena of a {self.target.name} firmware (AllocateTensors fails)", self.device.total_bytes,
                arena, needed_arena=self.device.total_bytes,
                hint=f"kTensorArenaSize must be at least {self.device.total_bytes} bytes on {self.target.name}")
        return stateless_state_tensors(self.model, self.target)

    def _image(self) -> Any:
        """The firmware arena's image for a Helium CMSIS-NN target (None otherwise): the kernels whose firmware
        version reads outside its tensors read it (:mod:`microinterp.kernels.cmsis_nn.device_image`)."""
        if self.target is None or self.target.features != "mve":
            return None
        from .kernels.cmsis_nn.device_image import DeviceImage

        return DeviceImage.of(self.device)

    @classmethod
    def from_file(cls, path: str | os.PathLike, arena_size: int | None = None, **kwargs: Any) -> Interpreter:
        return cls(os.fspath(path), arena=arena_size, **kwargs)

    @classmethod
    def from_bytes(cls, data: bytes, arena_size: int | None = None, **kwargs: Any) -> Interpreter:
        return cls(bytes(data), arena=arena_size, **kwargs)

    def _resolve(self) -> list[list[Any]]:
        """The kernel of every op of every subgraph; all ops without one are reported at once."""
        missing = []
        for sg in self.model.subgraphs:
            for op in sg.operators:
                if self.resolver.find(op.key, self.optimized) is None:
                    missing.append((op.index if sg.index == 0 else f"{sg.index}:{op.index}", op.key))
        if missing:
            raise UnsupportedOpError(missing)
        return [[self.resolver.find(op.key, self.optimized) for op in sg.operators] for sg in self.model.subgraphs]

    # -- running -----------------------------------------------------------------------------------------------------
    def invoke(self, progress: Any = None) -> None:
        """Run every op of the main subgraph in order (tile by tile through the SD image when out of core).

        ``progress(done, total, record)`` is called after each op when out of core (for progress bars). A condition
        TFLM checks with ``TFLITE_CHECK`` (its firmware would abort) raises :class:`InvokeError` naming the op."""
        self.runtime.invoke(progress)

    def invoke_batch(self, inputs: Any, batch: int = 64, progress: Any = None, threads: int = 1) -> Any:
        """Outputs of every sample of ``inputs`` (``[N, ...]`` arrays) in chunks of ``batch`` samples through a
        rebatched copy of the model, identical to N single invokes from a reset state (:mod:`microinterp.batch`);
        ``threads`` > 1 runs the chunks on that many threads."""
        from .batch import invoke_batch

        if self.out_of_core:
            raise ConfigError("invoke_batch runs in memory; build the interpreter without backing=")
        return invoke_batch(self, inputs, batch, progress, threads)

    def reset(self) -> None:
        """Variable tensors back to their zero point (int8) or 0, resource variables back to their default values
        and every kernel's ``reset``, as TFLM's MicroInterpreter::Reset (all subgraphs)."""
        self.runtime.reset()

    # -- inputs and outputs -------------------------------------------------------------------------------------------
    def _io_tensor(self, kind: str, index: int):
        ids = self._subgraph.inputs if kind == "input" else self._subgraph.outputs
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < len(ids):
            raise InputError(f"{kind} index {index!r} out of range: the model has {len(ids)} {kind}(s)")
        return self._subgraph.tensors[ids[index]]

    @property
    def num_inputs(self) -> int:
        return len(self._subgraph.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._subgraph.outputs)

    def set_input(self, value: Any, index: int = 0) -> None:
        """Copy ``value`` into input ``index``; its shape and dtype must match the model's exactly."""
        try:                    # fast path: an exact match in memory (a dict of the writable inputs' slots)
            view, dtype, shape = self._input_fast[index]
        except (KeyError, TypeError):
            pass
        else:                   # (True and 1.0 find slot 1: only an int index takes the path)
            if type(value) is np.ndarray and value.dtype is dtype and value.shape == shape and type(index) is int:
                view[...] = value
                return
        t = self._io_tensor("input", index)
        if t.is_constant:
            raise InputError(f"input {index} ({t.name!r}) is a constant tensor: its data is part of the model file "
                             "(TFLM would write into the flatbuffer); the model cannot take this input")
        if t.dtype is None or t.type_name == "STRING":
            raise InputError(f"input {index} ({t.name!r}) is a {t.type_name} tensor, which TFLM cannot allocate")
        if not isinstance(value, np.ndarray):
            raise InputError(f"input {index} ({t.name!r}): expected a numpy array of {t.dtype} with shape "
                             f"{t.shape}, got {type(value).__name__}")
        if value.dtype != t.dtype:
            raise InputError(f"input {index} ({t.name!r}): expected dtype {t.dtype}, got {value.dtype}")
        if tuple(value.shape) != t.shape:
            hint = ""
            if value.ndim == len(t.shape) and value.shape[1:] == t.shape[1:] and t.shape and t.shape[0] == 1:
                hint = (f"; for {value.shape[0]} samples use invoke_batch(xs) or `microinterp eval` (one sample "
                        "per invoke, as TFLM)")
            raise InputError(f"input {index} ({t.name!r}): expected shape {t.shape}, got {tuple(value.shape)}{hint}")
        self.runtime.write_input(t.index, value)

    def get_output(self, index: int = 0) -> np.ndarray:
        """A copy of output ``index`` after the last invoke."""
        try:                    # fast path in memory (as set_input's)
            view = self._output_fast[index]
        except (KeyError, TypeError):
            pass
        else:
            if type(index) is int:
                return view.copy()
        return self.runtime.read_tensor(self._io_tensor("output", index).index)

    def _check_tensor_index(self, index: Any) -> None:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or \
                not 0 <= index < len(self._subgraph.tensors):
            raise InputError(f"tensor index {index!r} out of range [0, {len(self._subgraph.tensors)})")

    def _read_tensor(self, index: int) -> np.ndarray:
        """A copy of any tensor of the main subgraph (intermediates are only meaningful with
        ``preserve_all_tensors=True``, since planned tensors share memory)."""
        self._check_tensor_index(index)
        return self.runtime.read_tensor(index)

    # -- memory figures ------------------------------------------------------------------------------------------------
    @property
    def arena_size(self) -> int:
        return self.arena.size

    @property
    def head_bytes(self) -> int:
        """Planned, non-persistent bytes (TFLM's "Arena allocation head"; with ``target=``, the firmware's)."""
        return self.arena.head_bytes if self.device is None else self.device.head_bytes

    @property
    def tail_bytes(self) -> int:
        """Persistent bytes: kernel persistent buffers and variable tensors; with ``target=``, the firmware's whole
        tail (TFLM's own structs too)."""
        return self.arena.tail_bytes if self.device is None else self.device.persistent_bytes

    @property
    def arena_used_bytes(self) -> int:
        """With ``target=``, the firmware's ``MicroInterpreter::arena_used_bytes()``."""
        return self.arena.used_bytes if self.device is None else self.device.total_bytes

    # -- out of core and profile -------------------------------------------------------------------------------------
    @property
    def out_of_core(self) -> bool:
        """True when this interpreter pages tensors and weights through an SD image."""
        return isinstance(self.runtime, Pager)

    @property
    def sd_image(self):
        """The :class:`~microinterp.storage.sd.SdImage` when out of core, else None."""
        return self.runtime.storage

    @property
    def recoveries(self) -> list[dict[str, Any]]:
        """Corrupted records recovered with ``recover=True`` (what, where, how), all invokes so far."""
        return self.runtime.recoveries()

    @property
    def profile(self) -> list[OpRecord]:
        """Per-op records of the last invoke (work, MCU cycles, flash/SD traffic, checksums, host time), each with
        its tiles. In memory every op is one tile whose weights are read from flash, and an op's host time runs from
        the previous op's end to its own (its kernel plus its dispatch by the invoke loop, about 0.1 us)."""
        return self.runtime.records()

    def host_profile(self, rounds: int = 20, warmup: int = 2) -> Any:
        """Host time per op, time in kernels and the interpreter overhead (host time outside kernels / total),
        medians over ``rounds`` invokes on the current inputs: :func:`microinterp.host_profile.measure`."""
        from .host_profile import measure

        return measure(self, rounds, warmup)

    def simulate(self) -> list[OpRecord]:
        """Out of core: the per-op records of an invoke (tiles, SD traffic, cycles) without running it — the
        pager's own bookkeeping with its counting execution (no IO, no kernel), so the numbers are exactly what :meth:`invoke` records. In memory:
        :attr:`profile`."""
        return self.runtime.simulate()

    def profile_json(self, tiles: bool = True, records: list[OpRecord] | None = None) -> dict[str, Any]:
        """The profile (or ``records``, e.g. from :meth:`simulate`) as the documented JSON document
        (docs/profile-schema.md)."""
        meta = {"model": self.model.source, "mcu": self.mcu.name, "clock_hz": self.mcu.clock_hz,
                "kernels": self.cost_kernels, "out_of_core": self.out_of_core, "arena": self.arena.size}
        meta.update(self.runtime.layout())
        return profile_json(self.profile if records is None else records, meta, tiles)

    def close(self) -> None:
        """Close the SD image (out of core); the interpreter cannot invoke afterwards."""
        self.runtime.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def plan_table(self) -> list[dict[str, Any]]:
        """Every planned buffer: kind, tensor index/name or scratch number, offset, size, lifetime (with
        ``target=``, the firmware's plan, its scratch buffers included)."""
        if self.device is not None:
            return [dict(row) for row in self.device.buffers]
        return self.runtime.plan_table()

    def describe(self) -> dict[str, str]:
        """Which implementation each op of this model resolves to."""
        return self.resolver.describe(self.model.op_names(), self.optimized)

    @property
    def operators(self) -> tuple[Operator, ...]:
        return self._subgraph.operators
