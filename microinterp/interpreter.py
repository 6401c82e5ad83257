"""The interpreter: resolve → prepare → plan → commit → invoke, like TFLM's MicroInterpreter.

Lifecycle when an :class:`Interpreter` is built:

1. **resolve** every op of every subgraph; all ops without a kernel are reported at once (``UnsupportedOpError``);
2. **prepare** every op of subgraph 0 in order: each kernel validates its op, computes its OpData once, requests
   planned scratch buffers and persistent memory (taken from the arena's tail);
3. **plan**: TFLM's lifetimes and greedy first-fit-decreasing planner (or the linear planner when all tensors are
   preserved) place every non-constant tensor and scratch buffer in the head;
4. **commit**: variable tensors go to the tail, every tensor becomes a numpy view at its planned offset;
5. **invoke** runs the kernels in op order on those views: a flat list of calls without arguments built once (a
   kernel's ``bind(ctx, op, data)`` when it offers one, capturing its views and buffers; else ``kernel.invoke`` with
   its arguments bound), one clock reading after each for the host profile.

With ``arena=None`` the arena is exactly what the model needs (measured with a sizing pass); an explicit arena that is
too small raises ``ArenaOverflowError`` naming the smallest arena that works.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

    from .targets import Target

import numpy as np

from .arena import Arena, SizingArena
from .cost.instructions import DATA_DEPENDENT
from .cost.mcu import McuProfile, get_profile, kernel_set, op_class
from .errors import (
    ArenaOverflowError,
    ConfigError,
    HostMemoryError,
    InputError,
    MicroInterpError,
    ModelError,
    UnsupportedOpError,
)
from .graph import MicroGraph
from .kernels._qutil import to_int32_arm
from .kernels.base import InvokeContext, PrepareContext, prepare_ops
from .litert import LiteRTMixin, litert_arguments
from .model import Model, Operator, load_model
from .pager import OpRecord, Pager, profile_json
from .pager.profile import TileRecord
from .pager.work import op_work
from .planner import PLANNERS, allocation_infos, buffer_requests, plan_greedy, plan_linear
from .planner.greedy import plan_size
from .planner.optimal import plan_optimal
from .planner.table import plan_rows
from .resolver import OpResolver, default_resolver
from .shared_arena import SharedArena, TenantArena
from .sizes import parse_size

#: Default ``max_arena``: the largest planned arena run in host memory (real MCU models need a few MB; the optimized
#: kernels keep host buffers several times the activations' size, so a mutated model asking for gigabytes would take
#: the machine's memory). Out of core (``backing=``) has no such limit.
MAX_ARENA = 256 << 20


def _nothing() -> None:
    """An op of a phased segment other than its last: the segment ran (or will run) its bands."""


def _reset_variable(t: Any, view: np.ndarray | None) -> None:
    """TFLM's ResetTensorData: memset a variable tensor with its zero point (INT8 tensors; only the low byte
    counts) or 0."""
    if t.is_variable and view is not None:
        zp = t.quantization.zero_point if (t.quantization and t.type_name == "INT8") else 0
        view.view(np.uint8)[...] = zp & 0xFF


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


#: ``planner=``: TFLM's greedy plan (what the device does), the smallest plan microinterp finds (what the device
#: does with the model ``microinterp optimize`` writes), or phased execution (row-local ops in row-band phases with
#: line buffers, :mod:`microinterp.planner.phased`; a runtime that runs phases is needed, so it stays here).


class Interpreter(LiteRTMixin):
    """Run a ``.tflite`` model exactly as TFLM would, in an arena of ``arena`` bytes.

    ``model`` is a path, bytes, a memoryview or a loaded :class:`~microinterp.model.Model`. ``arena=None`` means
    "exactly what the plan needs". ``optimized=False`` uses the reference kernels only. ``preserve_all_tensors=True``
    plans with TFLM's linear planner so every intermediate tensor stays readable after ``invoke`` (as the wheel's
    ``kPreserveAllTensors``).
    """

    def __init__(self, model: str | os.PathLike | bytes | memoryview | Model | None = None, arena: int | None = None,
                 backing: str | os.PathLike | Any = None, *, resolver: OpResolver | None = None,
                 optimized: bool = True, preserve_all_tensors: bool = False, pools: Any = None,
                 flash: int | None = None, mcu: str | McuProfile = "stm32f746", tile: int | None = None,
                 checksum: str = "crc32", recover: bool = False, cost_kernels: str = "optimized",
                 fuse: bool = True, key: Any = None, planner: str = "tflm", max_arena: int = MAX_ARENA,
                 target: str | Target | None = None, kernels: str | None = None, **kwargs: Any):
        model, preserve_all_tensors = litert_arguments(model, preserve_all_tensors, kwargs)
        self.model = load_model(model)
        self.resolver = resolver if resolver is not None else default_resolver()
        self.optimized = optimized
        self.preserve_all_tensors = preserve_all_tensors
        if planner not in PLANNERS:
            raise ConfigError(f"unknown planner {planner!r}; use one of {', '.join(PLANNERS)}")
        if planner == "phased" and preserve_all_tensors:
            raise ConfigError("planner='phased' keeps only bands of intermediate tensors; it cannot preserve them all")
        self.planner = planner
        self._phased: Any = None
        self.mcu = mcu if isinstance(mcu, McuProfile) else get_profile(mcu)
        self.cost_kernels = kernel_set(cost_kernels)
        self._subgraph = self.model.main
        _check_tensor_types(self.model)
        self._sg_kernels = self._resolve()
        self._kernels = self._sg_kernels[0]
        self._pager: Pager | None = None
        self._records: list[OpRecord] = []
        self._input_slots: list[tuple] = []         # in memory: (view, dtype, shape) per input, for set_input
        self._output_views: list[np.ndarray | None] = []
        self.target, self.device, self._device_resets = None, None, ()
        if arena is not None and not isinstance(arena, SharedArena):
            arena = parse_size(arena, "arena")        # 512000, "512K", "2M"
        if target is not None or kernels is not None:
            self._target(target, kernels, arena, backing)
            arena = None            # the host runs in an arena of its own plan; the firmware's figures are above
        if isinstance(arena, SharedArena):
            if backing is not None:
                raise ConfigError("a SharedArena runs its tenants in memory; out of core takes an arena of its own")
            self._build(arena.tenant_arena(str(self.model.source or f"tenant {len(arena.tenants)}")))
            return
        needed = self._measure() if (arena is None or backing is not None) else None
        if arena is None:
            arena = needed
        arena = int(arena)
        if backing is not None and arena < needed:
            if preserve_all_tensors:
                raise InputError("preserve_all_tensors=True cannot run out of core (intermediates share the card)")
            try:
                self._pager = Pager(self, arena, backing, pools=pools, flash=flash, mcu=self.mcu, tile=tile,
                                    checksum=checksum, recover=recover, cost_kernels=self.cost_kernels, fuse=fuse,
                                    key=key)
            except MicroInterpError:
                raise
            except MemoryError as e:
                raise HostMemoryError(f"the host could not allocate what the out-of-core run needs ({e})") from e
            self.arena = self._pager.arena
            return
        if needed is not None and needed > max_arena:
            raise HostMemoryError(f"the plan needs an arena of {needed} bytes, more than max_arena={max_arena} "
                                  "bytes held in host memory; pass backing='sd.img' and an MCU-sized arena= to run "
                                  "it out of core, or a larger max_arena=")
        try:
            self._build(Arena(arena))
        except MemoryError as e:
            if isinstance(e, ArenaOverflowError):
                raise
            raise HostMemoryError(f"the host could not allocate a kernel's buffers for this model ({e}); pass "
                                  "optimized=False (fewer host buffers) or backing='sd.img' to run it out of "
                                  "core") from e

    def _target(self, target: Any, kernels: str | None, arena: Any, backing: Any) -> None:
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
        self._device_resets = stateless_state_tensors(self.model, self.target)

    @classmethod
    def from_file(cls, path: str | os.PathLike, arena_size: int | None = None, **kwargs: Any) -> Interpreter:
        return cls(os.fspath(path), arena=arena_size, **kwargs)

    @classmethod
    def from_bytes(cls, data: bytes, arena_size: int | None = None, **kwargs: Any) -> Interpreter:
        return cls(bytes(data), arena=arena_size, **kwargs)

    # -- building --------------------------------------------------------------------------------------------------
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

    def _allocate(self, arena: Any) -> tuple[list[list[Any]], MicroGraph, list, list[int], list, list[int], dict,
                                             list]:
        """Prepare every op of every subgraph against ``arena`` (subgraph 0 first, then in index order, as TFLM's
        PrepareSubgraphs; tail allocations happen here), plan and size the head, then put the variable tensors in
        the tail; the scratch requests come last. Works the same on a real :class:`Arena` and on a :class:`SizingArena`."""
        sizing = isinstance(arena, SizingArena)
        graph = MicroGraph(self.model)
        scratch: list = []
        op_data = []
        for sg, kernels in zip(self.model.subgraphs, self._sg_kernels):
            ctx = PrepareContext(self.model, sg, arena, scratch_requests=scratch, graph=graph)
            if self.target is not None:
                ctx.float_to_int32 = to_int32_arm
            # sizing needs only the arena figures: no kernel should derive host copies of the weights for it
            ctx.weights_resident = not sizing
            # sizing prepares with the reference layer: optimized kernels share its prepare and arena requests, and
            # their host-side buffers (im2col, converted weights) have no business in a sizing pass
            if sizing:
                kernels = [self.resolver.find(op.key, False) for op in sg.operators]
            op_data.append(prepare_ops(ctx, kernels, sg.operators))
        op_scopes: dict[int, tuple[int, int]] = {}
        infos = allocation_infos(self.model, scratch, unplanned=set(graph.resources.handles), op_scopes=op_scopes)
        requests, owners = buffer_requests(infos)
        if self.preserve_all_tensors:
            offsets = plan_linear(requests)
        elif self.planner == "phased":
            phased = self._phased_plan(infos, op_scopes)
            requests, offsets = phased.requests, phased.offsets
        elif self.planner == "optimal":     # as if the model carried this plan as OfflineMemoryAllocation
            offsets = plan_optimal(requests)
        else:
            offsets = plan_greedy(requests)
        arena.set_head(plan_size(requests, offsets))
        variables = {}
        for info in infos:
            t = self._variable_tensor(info)
            if t is not None:
                variables[(info.subgraph, t.index)] = arena.allocate_persistent(t.nbytes)
        return op_data, graph, infos, owners, requests, offsets, variables, scratch

    def _phased_plan(self, infos: list, op_scopes: dict[int, tuple[int, int]]) -> Any:
        """The phased plan (computed once: the sizing pass and the build see the same lifetimes)."""
        if self._phased is None:
            from .phases import band_plans
            from .planner.phased import plan_phased

            self._band_plans = band_plans(self.model, self.resolver, self.optimized)
            self._phased = plan_phased(self._subgraph.tensors, self._band_plans, infos, op_scopes,
                                       set(self._subgraph.outputs))
        return self._phased

    def _measure(self) -> int:
        """Smallest arena for this model: head + tail + variables, measured without a real arena."""
        sizing = SizingArena()
        with warnings.catch_warnings():     # the build that follows prepares again and says it once
            warnings.simplefilter("ignore")
            self._allocate(sizing)
        return sizing.used_bytes

    def _variable_tensor(self, info: Any):
        if info.kind != "tensor" or info.needs_allocating:
            return None
        t = self.model.subgraphs[info.subgraph].tensors[info.index]
        return t if t.is_variable and t.data is None and t.nbytes else None

    def _build(self, arena: Arena | TenantArena) -> None:
        tenant = arena if isinstance(arena, TenantArena) else None
        try:
            op_data, graph, infos, owners, requests, offsets, variables, scratch = self._allocate(arena)
        except ArenaOverflowError as e:
            if tenant is not None:
                raise tenant.overflow(e, self) from None
            needed = self._measure()
            phased = "" if self.planner == "phased" else (
                "planner='phased' (row-band phases: a smaller head, a few more kernel calls), or ")
            raise ArenaOverflowError(e.what, e.requested, e.available, needed_arena=needed + arena.start,
                                     hint=f"To run in less, pass {phased}backing='sd.img' (out of core: tensors "
                                          "and weights paged to a file-backed SD image)") from None
        except BaseException:
            if tenant is not None:
                tenant.rollback()
            raise
        if tenant is not None:
            tenant.commit()
        self.arena = arena
        self._graph = graph
        self._op_data = op_data[0]
        # what the planner saw: also the scratch requests and the tensors no plan holds (VAR_HANDLE outputs), so
        # other plans (optimize, reorder) can be derived from the same prepare
        self._plan = {"infos": infos, "owners": owners, "offsets": offsets, "requests": requests,
                      "scratch": scratch, "unplanned": set(graph.resources.handles)}

        # views[s][-1] is None so that an optional input (index -1) reads as None.
        all_views: list[list[np.ndarray | None]] = [[None] * (len(sg.tensors) + 1) for sg in self.model.subgraphs]
        line_rows = self._phased.view_rows() if self.planner == "phased" else {}
        n_scratch = sum(1 for info in infos if info.kind == "scratch")
        scratch_views: list[np.ndarray] = [np.empty(0, np.uint8)] * n_scratch
        for owner, offset in zip(owners, offsets):
            info = infos[owner]
            if info.kind == "scratch":
                scratch_views[info.index] = arena.head_view(offset, info.nbytes)
            else:
                t = self.model.subgraphs[info.subgraph].tensors[info.index]
                shape = t.shape
                if info.subgraph == 0 and t.index in line_rows:     # a phased line buffer: some rows of it
                    shape = (shape[0], line_rows[t.index], *shape[2:])
                nbytes = int(np.prod(shape)) * t.dtype.itemsize
                all_views[info.subgraph][t.index] = arena.head_view(offset, nbytes).view(t.dtype).reshape(shape)
        for (si, ti), raw in variables.items():
            t = self.model.subgraphs[si].tensors[ti]
            all_views[si][ti] = raw.view(t.dtype).reshape(t.shape)
        for sg, views in zip(self.model.subgraphs, all_views):
            for t in sg.tensors:
                if t.data is not None and t.dtype is not None and t.type_name != "INT4":
                    views[t.index] = t.data
                elif views[t.index] is None and t.dtype is not None and \
                        (t.nbytes == 0 or (sg.index, t.index) in graph.resources.handles):
                    # empty tensors, and VAR_HANDLE outputs (TFLM points them at the id in the op's data)
                    views[t.index] = np.zeros(t.shape, t.dtype)
        self._all_steps = []
        for sg, views, kernels, data in zip(self.model.subgraphs, all_views, self._sg_kernels, op_data):
            ctx = InvokeContext(views, scratch_views)
            steps = list(zip(kernels, sg.operators, data))
            self._all_steps.append((ctx, steps))
            graph.views[sg.index] = views
            graph.calls[sg.index] = [self._bind(ctx, *step) for step in steps]
        if self.planner == "phased":    # a segment runs at its last op's turn; its other ops do nothing then
            from .phases import SegmentRun

            for seg in self._phased.segments:
                for i in seg.ops:
                    graph.calls[0][i] = _nothing
                graph.calls[0][seg.ops[-1]] = SegmentRun(seg, all_views[0], scratch_views)
        views = all_views[0]
        self._views = views
        self._ctx, self._steps = self._all_steps[0]
        self._calls = [(call, i + 1) for i, call in enumerate(graph.calls[0])]
        self._stamps = [0.0] * (len(self._calls) + 1)
        sg = self._subgraph
        tensors = sg.tensors
        self._input_slots = [(None if tensors[i].is_constant else views[i], tensors[i].dtype, tensors[i].shape)
                             for i in sg.inputs]
        self._output_views = [views[i] for i in sg.outputs]
        self.reset()

    @staticmethod
    def _bind(ctx: InvokeContext, kernel: Any, op: Operator, data: Any) -> Callable[[], None]:
        """One op as a call without arguments: the kernel's own ``bind(ctx, op, data)`` when it has one (it may
        capture the tensor views, which never change after the build, and preallocated buffers; None declines),
        else ``kernel.invoke`` with its arguments bound."""
        bind = getattr(kernel, "bind", None)
        call = bind(ctx, op, data) if bind is not None else None
        return call if call is not None else partial(kernel.invoke, ctx, op, data)

    # -- running -----------------------------------------------------------------------------------------------------
    def invoke(self, progress: Any = None) -> None:
        """Run every op of the main subgraph in order (tile by tile through the SD image when out of core).

        ``progress(done, total, record)`` is called after each op when out of core (for progress bars)."""
        if self._pager is not None:
            try:
                self._records = self._pager.invoke(progress)
            except MicroInterpError:
                raise
            except MemoryError as e:
                raise HostMemoryError(f"the host ran out of memory in an out-of-core kernel ({e}); a smaller "
                                      "tile= or pools= keeps its buffers smaller") from e
            return
        # The host profiler: one clock reading before the first op and after each op; op i's host time is
        # stamps[i + 1] - stamps[i] (its kernel and its dispatch: one list step, one call, one store).
        if self._device_resets:
            for ti in self._device_resets:
                _reset_variable(self._subgraph.tensors[ti], self._views[ti])
        clock = time.perf_counter
        stamps = self._stamps
        stamps[0] = clock()
        try:
            for call, i in self._calls:
                call()
                stamps[i] = clock()
        except MemoryError as e:
            raise HostMemoryError(f"the host ran out of memory in a kernel ({e}); pass optimized=False or "
                                  "backing='sd.img' to run it out of core") from e

    def invoke_batch(self, inputs: Any, batch: int = 64, progress: Any = None, threads: int = 1) -> Any:
        """Outputs of every sample of ``inputs`` (``[N, ...]`` arrays) in chunks of ``batch`` samples through a
        rebatched copy of the model, identical to N single invokes from a reset state (:mod:`microinterp.batch`);
        ``threads`` > 1 runs the chunks on that many threads."""
        from .batch import invoke_batch

        if self._pager is not None:
            raise ConfigError("invoke_batch runs in memory; build the interpreter without backing=")
        return invoke_batch(self, inputs, batch, progress, threads)

    def reset(self) -> None:
        """Variable tensors back to their zero point (int8) or 0, resource variables back to their default values
        and every kernel's ``reset``, as TFLM's MicroInterpreter::Reset (all subgraphs)."""
        if self._pager is not None:
            views = self._pager.views
            for t in self._subgraph.tensors:
                _reset_variable(t, views[t.index])
            for p in self._pager.plans:
                reset = getattr(p.kernel, "reset", None)
                if reset is not None:
                    reset(self._pager.ctx, p.op, p.data)
            return
        for sg, (ctx, steps) in zip(self.model.subgraphs, self._all_steps):
            for t in sg.tensors:
                _reset_variable(t, ctx.views[t.index])
        self._graph.resources.reset()
        for ctx, steps in self._all_steps:
            for kernel, op, data in steps:
                reset = getattr(kernel, "reset", None)
                if reset is not None:
                    reset(ctx, op, data)

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
        if type(index) is int and 0 <= index < len(self._input_slots) and type(value) is np.ndarray:
            view, dtype, shape = self._input_slots[index]       # fast path: an exact match in memory
            if value.dtype is dtype and value.shape == shape and view is not None:
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
        if self._pager is not None:
            self._pager.write_input(t.index, value)
            return
        self._views[t.index][...] = value

    def get_output(self, index: int = 0) -> np.ndarray:
        """A copy of output ``index`` after the last invoke."""
        if type(index) is int and 0 <= index < len(self._output_views):
            view = self._output_views[index]
            if view is not None:
                return view.copy()
        t = self._io_tensor("output", index)
        if self._pager is not None:
            return self._pager.read_tensor(t.index)
        return np.array(self._views[t.index], copy=True)

    def _check_tensor_index(self, index: Any) -> None:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or \
                not 0 <= index < len(self._subgraph.tensors):
            raise InputError(f"tensor index {index!r} out of range [0, {len(self._subgraph.tensors)})")

    def _read_tensor(self, index: int) -> np.ndarray:
        """A copy of any tensor of the main subgraph (intermediates are only meaningful with
        ``preserve_all_tensors=True``, since planned tensors share memory)."""
        self._check_tensor_index(index)
        if self._pager is not None:
            return self._pager.read_tensor(index)
        view = self._views[index]
        if view is None:
            raise InputError(f"tensor {index} has no data (type {self._subgraph.tensors[index].type_name})")
        if self._phased is not None and index in self._phased.view_rows():
            raise InputError(f"tensor {index} ({self._subgraph.tensors[index].name!r}) is an intermediate of a phased "
                             "segment: only a band of its rows is ever in the arena (planner='tflm' keeps it whole)")
        return np.array(view, copy=True)

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
        return self._pager is not None

    @property
    def sd_image(self):
        """The :class:`~microinterp.storage.sd.SdImage` when out of core, else None."""
        return self._pager.sd if self._pager is not None else None

    @property
    def recoveries(self) -> list[dict[str, Any]]:
        """Corrupted records recovered with ``recover=True`` (what, where, how), all invokes so far."""
        return list(self._pager.engine.recoveries) if self._pager is not None else []

    @property
    def profile(self) -> list[OpRecord]:
        """Per-op records of the last invoke (work, MCU cycles, flash/SD traffic, checksums, host time), each with
        its tiles. In memory every op is one tile whose weights are read from flash, and an op's host time runs from
        the previous op's end to its own (its kernel plus its dispatch by the invoke loop, about 0.1 us)."""
        if self._pager is not None:
            return self._pager.records
        records = []
        for i, op in enumerate(self._subgraph.operators):
            cls = op_class(op.key)
            macs, elements = op_work(op, self._subgraph.tensors)
            flash = sum(self._subgraph.tensors[ti].nbytes for ti in op.inputs
                        if ti >= 0 and self._subgraph.tensors[ti].data is not None)
            # the cost model (analysis.predict_cycles): kernel cycles plus TFLM's per-op overhead; the flash
            # bytes are counted but cost no extra cycles (the board's memory factor covers running from flash) --
            # analyze, profile and schedule give one estimate
            # with every tensor preserved, a data-dependent kernel (SOFTMAX) is charged for the values it saw
            values = self._read_tensor(op.inputs[0]) if self.preserve_all_tensors and op.key in DATA_DEPENDENT \
                and self._stamps[-1] else None
            tile = TileRecord(0, None, None, macs, elements, flash_read_bytes=flash,
                              compute_cycles=self.mcu.op_cycles(op, self._subgraph.tensors, self.cost_kernels,
                                                                values=values)
                              + self.mcu.interpreter_cycles_per_op)
            records.append(OpRecord(i, op.key, cls, "in-memory", [tile], self._stamps[i + 1] - self._stamps[i]))
        return records

    def host_profile(self, rounds: int = 20, warmup: int = 2) -> Any:
        """Host time per op, time in kernels and the interpreter overhead (host time outside kernels / total),
        medians over ``rounds`` invokes on the current inputs: :func:`microinterp.host_profile.measure`."""
        from .host_profile import measure

        return measure(self, rounds, warmup)

    def simulate(self) -> list[OpRecord]:
        """Out of core: the per-op records of an invoke (tiles, SD traffic, cycles) without running it — the
        pager's own bookkeeping in dry mode, so the numbers are exactly what :meth:`invoke` records. In memory:
        :attr:`profile`."""
        return self._pager.simulate() if self._pager is not None else self.profile

    def profile_json(self, tiles: bool = True, records: list[OpRecord] | None = None) -> dict[str, Any]:
        """The profile (or ``records``, e.g. from :meth:`simulate`) as the documented JSON document
        (docs/profile-schema.md)."""
        meta = {"model": self.model.source, "mcu": self.mcu.name, "clock_hz": self.mcu.clock_hz,
                "kernels": self.cost_kernels, "out_of_core": self.out_of_core, "arena": self.arena.size}
        if self._pager is not None:
            p = self._pager
            meta.update(pools={"input": p.pools.input, "weights": p.pools.weights, "output": p.pools.output},
                        scratch=p.scratch_bytes, tail=self.arena.tail_bytes, flash_budget=p.flash, tile=p.tile,
                        checksum=p.sd.checksum.name, backing=p.sd.path, image_action=p.sd.action)
        return profile_json(self.profile if records is None else records, meta, tiles)

    def close(self) -> None:
        """Close the SD image (out of core); the interpreter cannot invoke afterwards."""
        if self._pager is not None:
            self._pager.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def plan_table(self) -> list[dict[str, Any]]:
        """Every planned buffer: kind, tensor index/name or scratch number, offset, size, lifetime (with
        ``target=``, the firmware's plan, its scratch buffers included)."""
        if self.device is not None:
            return [dict(row) for row in self.device.buffers]
        p = self._plan
        return plan_rows(self.model, p["infos"], p["owners"], p["requests"], p["offsets"])

    def describe(self) -> dict[str, str]:
        """Which implementation each op of this model resolves to."""
        return self.resolver.describe(self.model.op_names(), self.optimized)

    @property
    def operators(self) -> tuple[Operator, ...]:
        return self._subgraph.operators
