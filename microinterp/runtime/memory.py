"""The in-memory runtime: TFLM's own execution, every tensor at its planned offset in one arena.

:class:`Preparation` is what an in-memory build decides before it has an arena: the kernels, the planner, whether
every tensor is preserved. :meth:`Preparation.allocate` does what TFLM's ``MicroAllocator`` does in
``AllocateTensors`` against any arena (a real :class:`~microinterp.arena.Arena`, a tenant of a shared one, or a
:class:`~microinterp.arena.SizingArena` that only counts):

1. **prepare** every op of every subgraph, subgraph 0 first and then in index order (``PrepareSubgraphs``): each
   kernel validates its op, computes its OpData once, requests planned scratch buffers and persistent memory (taken
   from the arena's tail);
2. **plan**: TFLM's lifetimes and greedy first-fit-decreasing planner (the linear planner when all tensors are
   preserved; the optimal or phased planner when asked) place every non-constant tensor and scratch buffer in the
   head;
3. **commit**: variable tensors go to the tail.

:class:`InMemoryRuntime` then makes every tensor a numpy view at its planned offset and runs the kernels in op order
on those views: a flat list of calls without arguments built once (a kernel's ``bind(ctx, op, data)`` when it offers
one, capturing its views and buffers; else ``kernel.invoke`` with its arguments bound), one clock reading after each
for the host profile.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ..arena import Arena, SizingArena
from ..cost.instructions import data_dependent
from ..cost.mcu import McuProfile, op_class
from ..cost.work import op_work
from ..errors import ArenaOverflowError, CheckFailed, HostMemoryError, InputError
from ..graph import MicroGraph
from ..kernels._qutil import to_int32_arm
from ..kernels.base import IN_MEMORY_CACHE_BYTES, HostBudget, InvokeContext, PrepareContext, prepare_ops
from ..model import Model, Operator
from ..planner import allocation_infos, buffer_requests, plan_greedy, plan_linear
from ..planner.greedy import plan_size
from ..planner.optimal import plan_optimal
from ..planner.table import plan_rows
from ..shared_arena import TenantArena
from .base import check_failed, reset_state, reset_variable
from .profile import OpRecord, TileRecord

#: ops up to which :meth:`InMemoryRuntime._invoker` writes one line per op (a loop over the calls beyond)
UNROLLED_OPS = 256

_OUT_OF_MEMORY = ("the host ran out of memory in a kernel ({}); pass optimized=False or backing='sd.img' to run it "
                  "out of core")


def _nothing() -> None:
    """An op of a phased segment other than its last: the segment ran (or will run) its bands."""


@dataclass
class Allocation:
    """What :meth:`Preparation.allocate` leaves: every op's OpData per subgraph, the subgraphs' graph, the planner's
    inputs and its offsets, the variable tensors' tail buffers and the scratch requests."""

    op_data: list[list[Any]]
    graph: MicroGraph
    infos: list[Any]
    owners: list[int]
    requests: list[Any]
    offsets: list[int]
    variables: dict[tuple[int, int], np.ndarray]
    scratch: list[Any]

    def plan(self) -> dict[str, Any]:
        """What the planner saw: also the scratch requests and the tensors no plan holds (VAR_HANDLE outputs), so
        other plans (optimize, reorder) can be derived from the same prepare."""
        return {"infos": self.infos, "owners": self.owners, "offsets": self.offsets, "requests": self.requests,
                "scratch": self.scratch, "unplanned": set(self.graph.resources.handles)}


@dataclass
class Preparation:
    """How an in-memory build prepares and plans (see the module docstring). ``kernels`` holds every subgraph's
    resolved kernels; ``arm_float`` rounds float-to-int32 conversions as an Arm build does (``target=``)."""

    model: Model
    resolver: Any
    kernels: list[list[Any]]
    optimized: bool = True
    preserve_all_tensors: bool = False
    planner: str = "tflm"
    arm_float: bool = False
    phased: Any = field(default=None, repr=False)   # the phased plan, computed once (sizing and build agree)
    device_image: Any = None        # target= on a Helium core: the firmware arena's image (kernels.cmsis_nn)

    def allocate(self, arena: Any) -> Allocation:
        """Prepare, plan and size the head, then put the variable tensors in the tail; works the same on a real
        :class:`Arena` and on a :class:`SizingArena`."""
        sizing = isinstance(arena, SizingArena)
        graph = MicroGraph(self.model)
        scratch: list = []
        op_data = []
        for sg, kernels in zip(self.model.subgraphs, self.kernels):
            ctx = PrepareContext(self.model, sg, arena, scratch_requests=scratch, graph=graph)
            if self.arm_float:
                ctx.float_to_int32 = to_int32_arm
            if sg.index == 0:
                ctx.device_image = self.device_image
            # sizing needs only the arena figures: no kernel should derive host copies of the weights for it
            ctx.weights_resident = not sizing
            ctx.host_budget = HostBudget(IN_MEMORY_CACHE_BYTES)
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
        return Allocation(op_data, graph, infos, owners, requests, offsets, variables, scratch)

    def measure(self) -> int:
        """Smallest arena for this model: head + tail + variables, measured without a real arena."""
        sizing = SizingArena()
        with warnings.catch_warnings():     # the build that follows prepares again and says it once
            warnings.simplefilter("ignore")
            self.allocate(sizing)
        return sizing.used_bytes

    def _phased_plan(self, infos: list, op_scopes: dict[int, tuple[int, int]]) -> Any:
        if self.phased is None:
            from ..bands.phases import band_plans
            from ..planner.phased import plan_phased

            sg = self.model.main
            plans = band_plans(self.model, self.resolver, self.optimized)
            self.phased = plan_phased(sg.tensors, plans, infos, op_scopes, set(sg.outputs))
        return self.phased

    def _variable_tensor(self, info: Any):
        if info.kind != "tensor" or info.needs_allocating:
            return None
        t = self.model.subgraphs[info.subgraph].tensors[info.index]
        return t if t.is_variable and t.data is None and t.nbytes else None


def _imaged(calls: list, image: Any, sg: Any, views: list) -> list:
    """Each op's call, then its outputs stored in the firmware arena's image (the graph inputs before the first
    op's): what a kernel reading outside its tensors on the firmware then finds there (``target=``)."""
    imaged = []
    for k, (call, i) in enumerate(calls):
        before = [(t, views[t]) for t in sg.inputs] if k == 0 else []
        after = [(t, views[t]) for t in sg.operators[i - 1].outputs if t >= 0]

        def run(call=call, before=before, after=after) -> None:
            for t, v in before:
                image.store(t, v)
            call()
            for t, v in after:
                image.store(t, v)
        imaged.append((run, i))
    return imaged


class InMemoryRuntime:
    """Runs a prepared model in ``arena`` (see the module docstring). ``device_resets`` are the variable tensors a
    firmware resets before every invoke (``target=``); ``mcu`` and ``cost_kernels`` price the records."""

    #: in memory nothing is stored outside the arena
    storage = None

    def __init__(self, prep: Preparation, arena: Arena | TenantArena, *, mcu: McuProfile, cost_kernels: str,
                 device_resets: tuple[int, ...] = ()):
        self.prep = prep
        self.model = prep.model
        self.subgraph = prep.model.main
        self.mcu, self.cost_kernels, self.device_resets = mcu, cost_kernels, device_resets
        tenant = arena if isinstance(arena, TenantArena) else None
        try:
            alloc = prep.allocate(arena)
        except ArenaOverflowError as e:
            if tenant is not None:
                raise tenant.overflow(e, prep) from None
            phased = "" if prep.planner == "phased" else (
                "planner='phased' (row-band phases: a smaller head, a few more kernel calls), or ")
            raise ArenaOverflowError(e.what, e.requested, e.available, needed_arena=prep.measure() + arena.start,
                                     hint=f"To run in less, pass {phased}backing='sd.img' (out of core: tensors "
                                          "and weights paged to a file-backed SD image)") from None
        except BaseException:
            if tenant is not None:
                tenant.rollback()
            raise
        if tenant is not None:
            tenant.commit()
        self.arena = arena
        self.graph = alloc.graph
        self.op_data = alloc.op_data[0]
        self.plan = alloc.plan()
        self.phased = prep.phased if prep.planner == "phased" else None
        all_views, scratch_views = self._views(alloc)
        self._bind_all(all_views, scratch_views, alloc.op_data)
        self.views = all_views[0]
        self.ctx, self.steps = self.all_steps[0]
        self.calls = [(call, i + 1) for i, call in enumerate(self.graph.calls[0])]
        if prep.device_image is not None and prep.device_image.wanted:
            self.calls = _imaged(self.calls, prep.device_image, self.subgraph, self.views)
        #: float32 tensors anywhere: invokes run under quiet_floats() (bound float calls enter no errstate)
        self.floats = any(t.type_name == "FLOAT32" for sg in self.model.subgraphs for t in sg.tensors)
        self.stamps = [0.0] * (len(self.calls) + 1)
        self.invoke = self._invoker()       # type: ignore[method-assign]
        self.reset()

    def _views(self, alloc: Allocation) -> tuple[list[list[np.ndarray | None]], list[np.ndarray]]:
        """Every tensor of every subgraph as a view at its planned offset (``views[s][-1]`` is None so that an
        optional input, index -1, reads as None), constants in place, and the scratch buffers."""
        arena, infos = self.arena, alloc.infos
        all_views: list[list[np.ndarray | None]] = [[None] * (len(sg.tensors) + 1) for sg in self.model.subgraphs]
        line_rows = self.phased.view_rows() if self.phased is not None else {}
        n_scratch = sum(1 for info in infos if info.kind == "scratch")
        scratch_views: list[np.ndarray] = [np.empty(0, np.uint8)] * n_scratch
        for owner, offset in zip(alloc.owners, alloc.offsets):
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
        for (si, ti), raw in alloc.variables.items():
            t = self.model.subgraphs[si].tensors[ti]
            all_views[si][ti] = raw.view(t.dtype).reshape(t.shape)
        for sg, views in zip(self.model.subgraphs, all_views):
            for t in sg.tensors:
                if t.data is not None and t.dtype is not None and t.type_name != "INT4":
                    views[t.index] = t.data
                elif views[t.index] is None and t.dtype is not None and \
                        (t.nbytes == 0 or (sg.index, t.index) in alloc.graph.resources.handles):
                    # empty tensors, and VAR_HANDLE outputs (TFLM points them at the id in the op's data)
                    views[t.index] = np.zeros(t.shape, t.dtype)
        return all_views, scratch_views

    def _bind_all(self, all_views: list, scratch_views: list, op_data: list[list[Any]]) -> None:
        graph = self.graph
        #: per subgraph, its invoke context and its steps ``(kernel, op, OpData)``: what runs the model in memory
        #: (the streams runner runs the main subgraph's steps on views of its own)
        self.all_steps: list[tuple[InvokeContext, list[tuple[Any, Any, Any]]]] = []
        for sg, views in zip(self.model.subgraphs, all_views):      # every view first: control flow binds to others'
            graph.views[sg.index] = views
        # a phased segment runs at its last op's turn (its band kernels on its line buffers); its ops are not bound
        # on their own: an intermediate of a segment has only a band of rows in the arena
        segmented = {i for seg in self.phased.segments for i in seg.ops} if self.phased is not None else set()
        for sg, views, kernels, data in zip(self.model.subgraphs, all_views, self.prep.kernels, op_data):
            ctx = InvokeContext(views, scratch_views)
            steps = list(zip(kernels, sg.operators, data))
            self.all_steps.append((ctx, steps))
            graph.calls[sg.index] = [_nothing if sg.index == 0 and i in segmented else bind(ctx, *step)
                                     for i, step in enumerate(steps)]
        if self.phased is not None:
            from ..bands.phases import SegmentRun

            for seg in self.phased.segments:
                graph.calls[0][seg.ops[-1]] = SegmentRun(seg, all_views[0], scratch_views)

    # -- the Runtime protocol ------------------------------------------------------------------------------------------
    def invoke(self, progress: Any = None) -> None:
        """Every bound call in op order. The host profiler: one clock reading before the first op and after each
        op; op i's host time is ``stamps[i + 1] - stamps[i]`` (its kernel and its dispatch: one list step, one call,
        one store). Float32 overflow and NaN are results, as in C: with a float32 tensor anywhere, the calls run
        under :func:`quiet_floats` entered once per invoke (bound float calls enter no errstate of their own).

        ``__init__`` replaces this method on the instance by :meth:`_invoker`'s function, which does the same written
        out for this model's ops."""
        self._invoker()(progress)

    def _invoker(self) -> Callable[..., None]:
        """:meth:`invoke` for this runtime, written out for its ops (as ``dataclasses`` writes its methods): one
        line per op -- its call, then its clock reading -- for up to :data:`UNROLLED_OPS` ops (a loop over the calls
        beyond), and only what this model needs (the errstate when it has float32 tensors, the firmware's variable
        resets when there are any). Its names -- the calls, the clock, the stamps, the errstate's enter and leave --
        are the generated function's globals. 0.1-0.2 us less a call than a method looping over ``self.calls``: the
        whole call of a one-op model is 1.5-3 us."""
        names: dict[str, Any] = {"stamps": self.stamps, "clock": time.perf_counter, "calls": self.calls,
                                 "reset_variable": reset_variable, "HostMemoryError": HostMemoryError,
                                 "CheckFailed": CheckFailed, "check_failed": self._check_failed,
                                 "OUT_OF_MEMORY": _OUT_OF_MEMORY,
                                 "resets": [(self.subgraph.tensors[ti], self.views[ti]) for ti in self.device_resets]}
        body = ["def invoke(progress=None):"]
        if self.device_resets:
            body += ["    for tensor, view in resets:", "        reset_variable(tensor, view)"]
        body += ["    stamps[0] = clock()"]
        if self.floats:
            if _MAKE_EXTOBJ is not None:        # NumPy 2: set and reset the context variable directly
                names.update(enter=_SET_EXTOBJ, leave=_RESET_EXTOBJ, extobj=_quiet_extobj())
            else:
                names.update(enter=lambda _: quiet_enter(), leave=quiet_leave, extobj=None)
            body += ["    token = enter(extobj)"]
        body += ["    try:"]
        if len(self.calls) <= UNROLLED_OPS:
            for k, (call, i) in enumerate(self.calls):
                names[f"call{k}"] = call
                body += [f"        call{k}()", f"        stamps[{i}] = clock()"]
            body += ["        pass"]
        else:
            body += ["        for call, i in calls:", "            call()", "            stamps[i] = clock()"]
        body += ["    except MemoryError as e:", "        raise HostMemoryError(OUT_OF_MEMORY.format(e)) from e",
                 "    except CheckFailed as e:", "        raise check_failed(e) from e"]
        if self.floats:
            body += ["    finally:", "        leave(token)"]
        exec(compile("\n".join(body), "<microinterp invoke>", "exec"), names)  # noqa: S102 - our own source
        invoke = names["invoke"]
        invoke.__doc__ = InMemoryRuntime.invoke.__doc__
        return invoke

    def _check_failed(self, error: Exception) -> Exception:
        return check_failed(error, self.subgraph.operators, self.failed_op())

    def failed_op(self) -> int | None:
        """The op an invoke that raised was running: the first call whose clock reading is older than the invoke's
        start (each call's reading is written after it returns), found afterwards -- the invoke loop pays nothing."""
        start = self.stamps[0]
        for _, i in self.calls:
            if self.stamps[i] < start:
                return i - 1
        return None

    def reset(self) -> None:
        """Variable tensors back to their zero point (int8) or 0, resource variables back to their default values
        and every kernel's ``reset``, as TFLM's MicroInterpreter::Reset (all subgraphs)."""
        self.graph.resources.reset()
        for sg, (ctx, steps) in zip(self.model.subgraphs, self.all_steps):
            reset_state(sg.tensors, ctx.views, ctx, steps)

    def write_input(self, ti: int, value: np.ndarray) -> None:
        self.views[ti][...] = value

    def read_tensor(self, ti: int) -> np.ndarray:
        view = self.views[ti]
        if view is None:
            raise InputError(f"tensor {ti} has no data (type {self.subgraph.tensors[ti].type_name})")
        if self.phased is not None and ti in self.phased.view_rows():
            raise InputError(f"tensor {ti} ({self.subgraph.tensors[ti].name!r}) is an intermediate of a phased "
                             "segment: only a band of its rows is ever in the arena (planner='tflm' keeps it whole)")
        return np.array(view, copy=True)

    def records(self) -> list[OpRecord]:
        """Every op as one tile whose weights are read from flash, priced by the cost model
        (:func:`microinterp.cost.analysis.predict_cycles`: kernel cycles plus TFLM's per-op overhead; the flash bytes
        are counted but cost no extra cycles, the board's memory factor covers running from flash). An op's host time
        runs from the previous op's end to its own (its kernel plus its dispatch by the invoke loop, about 0.1 us).
        With every tensor preserved, a data-dependent kernel (SOFTMAX) is charged for the values it saw."""
        sg, records = self.subgraph, []
        for i, op in enumerate(sg.operators):
            macs, elements = op_work(op, sg.tensors)
            flash = sum(sg.tensors[ti].nbytes for ti in op.inputs if ti >= 0 and sg.tensors[ti].data is not None)
            values = self.read_tensor(op.inputs[0]) if self.prep.preserve_all_tensors and data_dependent(op) \
                and self.stamps[-1] else None
            tile = TileRecord(0, None, None, macs, elements, flash_read_bytes=flash,
                              compute_cycles=self.mcu.op_cycles(op, sg.tensors, self.cost_kernels, values=values)
                              + self.mcu.interpreter_cycles_per_op)
            records.append(OpRecord(i, op.key, op_class(op.key), "in-memory", [tile],
                                    self.stamps[i + 1] - self.stamps[i]))
        return records

    def simulate(self) -> list[OpRecord]:
        """In memory an invoke is what it computes: the last invoke's records."""
        return self.records()

    def recoveries(self) -> list[dict[str, Any]]:
        return []

    def tensor_views(self) -> list[np.ndarray | None]:
        return self.views

    def plan_table(self) -> list[dict[str, Any]]:
        p = self.plan
        return plan_rows(self.model, p["infos"], p["owners"], p["requests"], p["offsets"])

    def layout(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        """Nothing held open."""


class _Quiet:
    """``np.errstate(all="ignore")`` at a third of its cost: :func:`quiet_enter` and :func:`quiet_leave` as a
    context manager."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = quiet_enter()

    def __exit__(self, *exc: object) -> None:
        quiet_leave(self.token)


try:        # NumPy 2: errstate is a context variable holding an extension object
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _MAKE_EXTOBJ, _SET_EXTOBJ, _RESET_EXTOBJ = _make_extobj, _extobj_contextvar.set, _extobj_contextvar.reset
except ImportError:         # another layout: np.errstate itself
    _MAKE_EXTOBJ = None


def quiet_enter() -> Any:
    """:func:`quiet_floats` entered without a context manager (the invoke loop's hot path): the same context
    variable ``np.errstate`` sets, holding the extension object :func:`_quiet_extobj` made once as
    ``errstate.__enter__`` makes it (NumPy 2's ``_ufunc_config``; ``np.errstate`` itself on other layouts). Returns
    the token for :func:`quiet_leave`."""
    if _MAKE_EXTOBJ is None:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    return _SET_EXTOBJ(_quiet_extobj())


@functools.cache
def _quiet_extobj() -> Any:
    """The "ignore everything" extension object, made once (0.16 -> 0.09 us per invoke): it differs from one made
    at each enter only in the buffer size and error callback current at its making, which change no result and,
    with every error ignored, are never called."""
    return _MAKE_EXTOBJ(all="ignore")


def quiet_leave(token: Any) -> None:
    """Leave what :func:`quiet_enter` entered."""
    if _MAKE_EXTOBJ is None:
        token.__exit__(None, None, None)
    else:
        _RESET_EXTOBJ(token)


def quiet_floats() -> Any:
    """The floating-point state every bound call runs under: overflow, invalid operations and underflow give their
    IEEE results silently, as in C (entered once per invoke, not once per op)."""
    return _Quiet()


def bind(ctx: InvokeContext, kernel: Any, op: Operator, data: Any) -> Callable[[], None]:
    """One op as a call without arguments: the kernel's own ``bind(ctx, op, data)`` when it has one (it may capture
    the tensor views, which never change after the build, and preallocated buffers; None declines), else
    ``kernel.invoke`` with its arguments bound."""
    call = kernel.bind(ctx, op, data)
    return call if call is not None else partial(kernel.invoke, ctx, op, data)
