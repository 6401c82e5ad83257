"""The pager: builds an out-of-core interpreter state (prepare, homes, pools, tiles, SD image) and runs it.

Built by :class:`~microinterp.interpreter.Interpreter` when ``backing=`` is given and the in-memory plan does not fit
the arena. Steps:

1. **prepare** every op with ``ctx.weights_resident = False`` (kernels must not derive weight-sized data: the weights
   may be on the card), first on a sizing arena (the tail decides the pools), then on the real one; persistent data
   and variable tensors take the tail exactly as in memory. CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED keep the
   optimized kernel (when the interpreter is optimized): prepared out of core it keeps per-channel metadata instead
   of whole-tensor plans, and the tiles call its band functions; other ops resolved to the optimized layer use the
   reference kernel here, whose band functions the tiles call; plugin and explicit kernels keep their own
   ``invoke`` and run whole;
2. **homes** for every tensor (:mod:`.layout`): constants in flash up to ``flash`` bytes, the rest on the SD weights
   area; activations on the SD activations area;
3. **pools** from what the tail and the scratch region leave, and **tiles** for every op (:mod:`.plan`); when an op
   cannot be tiled, :class:`~microinterp.errors.ArenaOverflowError` names it and the smallest arena that works;
   then, with ``fuse=True`` (the default), **chains** of row-band ops whose intermediates stay in the arena and
   their bands (:mod:`.fusion`);
4. **the SD image** is opened (created, reused, re-initialised or rebuilt; a foreign file is refused) and, unless
   it already holds this model's weights, the SD-resident constants are written once and committed.

The image fingerprint covers the model bytes, the flash budget and the record layout of the weights, so an image is
reused exactly when its weights area is what this configuration would write.
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any

import numpy as np

from ..arena import Arena, SizingArena, align_up
from ..bands.op_plan import OpPlan
from ..bands.tiling import band_kernel, tiler_for
from ..cost.mcu import McuProfile, get_profile
from ..errors import ArenaOverflowError, CheckFailed, ConfigError, HostMemoryError, InputError
from ..kernels.base import InvokeContext, PrepareContext, prepare_ops
from ..runtime.base import OutOfCore, check_failed, reset_state
from ..runtime.memory import quiet_floats
from ..runtime.profile import OpRecord, TileRecord
from ..storage.base import Backing, is_path
from ..storage.sd import SdImage
from .engine import Engine
from .fusion import ChainPlanner, find_chains
from .layout import RECORD_TARGET, Home
from .plan import (
    ALIGN,
    NoFit,
    Planner,
    PoolBuffers,
    PoolNeeds,
    Pools,
    fold_data,
    fuse_pads,
    layout_homes,
    pool_minima,
)

DEFAULT_POOLS = (1.0, 2.0, 1.0)


def _fingerprint(model: Any, flash: int, homes: list[Home | None]) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{model.fingerprint};flash={flash};record={RECORD_TARGET};".encode())
    for home in homes:
        if home is not None and home.device == "weights":
            h.update(f"{home.tensor}:{home.offset}:{home.record_bytes};".encode())
    return f"microinterp-ooc:{h.hexdigest()}"


def _check_dataflow(sg: Any) -> None:
    """Out of core needs every tensor written by one op at most, before any op reads it (what converters write).
    TFLM runs a graph that breaks this (a tensor written twice, or read before a later op writes it) in memory, and
    so does microinterp; the pager's homes and chains assume it, so it refuses such a graph with a ConfigError."""
    writer: dict[int, int] = {}
    for op in sg.operators:
        for t in op.outputs:
            if t in writer:
                raise ConfigError(f"out of core: tensor {t} is written by ops {writer[t]} and {op.index}; run this "
                                  "model in memory (a larger arena=, or no backing)")
            writer[t] = op.index
    for op in sg.operators:
        for t in op.inputs:
            if t >= 0 and writer.get(t, -1) > op.index:
                raise ConfigError(f"out of core: op {op.index} ({op.key}) reads tensor {t} before op {writer[t]} "
                                  "writes it; run this model in memory (a larger arena=, or no backing)")


class Pager:
    """The out-of-core runtime (:class:`~microinterp.runtime.base.Runtime`): the state of one interpreter, built
    as the module docstring says, and its invokes."""

    def __init__(self, model: Any, resolver: Any, arena_size: int, config: OutOfCore, *, optimized: bool = True,
                 mcu: str | McuProfile = "stm32f746", cost_kernels: str = "optimized"):
        self.model = model
        self.subgraph = model.main
        self.tensors = self.subgraph.tensors
        graph_ops = sorted({op.key for sg in self.model.subgraphs for op in sg.operators
                            if resolver.declaration(op.key, optimized).traits.graph})
        if graph_ops:
            raise ConfigError(f"out of core runs one subgraph without resource variables; this model uses "
                              f"{', '.join(graph_ops)}, whose kernels run other subgraphs or use resource variables "
                              "(a kernel that does not say otherwise is taken to: declare its traits, docs/ops.md): "
                              "run it in memory (a larger arena=, or none)")
        _check_dataflow(self.subgraph)
        self.config = config
        self.mcu = mcu if isinstance(mcu, McuProfile) else get_profile(mcu)
        self.cost_kernels = cost_kernels
        self.flash = int(self.mcu.flash_bytes if config.flash is None else config.flash)
        self.fractions = _fractions(config.pools)
        #: no pools= given: when the default shares do not fit an op, pools sized to what the ops need (pool_minima)
        self.auto_pools = config.pools is None
        self.tile = None if config.tile is None else int(config.tile)
        if self.tile is not None and self.tile < 1:
            raise ValueError(f"tile must be a positive number of bytes, got {config.tile}")
        self.recover = bool(config.recover)

        # tiles call band functions: the optimized CONV_2D / DEPTHWISE_CONV_2D ones when the interpreter runs the
        # optimized layer and it resolves to them, the reference layer's for everything else (their OpData is what
        # the reference band functions read); plugins and explicit kernels stay
        kernels = [band_kernel(resolver, op.key, optimized) for op in self.subgraph.operators]
        # a sizing pass first: the tail it measures decides the pools, and an arena too small even for the tail
        # still gets the smallest arena that works in its error
        sizing = SizingArena()
        op_data, ctx = self._prepare(kernels, sizing)
        variables = self._variables(sizing)
        self.tail_bytes = sizing.tail_bytes
        self.scratch_bytes = max(self._scratch_region(ctx), default=0)
        self.plans = [OpPlan(op.index, op, k, d, tiler_for(op, d, self.tensors, k, resolver.shipped(op.key)))
                      for op, k, d in zip(self.subgraph.operators, kernels, op_data)]
        self.virtual = fuse_pads(self.plans, set(self.subgraph.outputs), self.tensors)
        self.homes, weights_bytes, act_bytes, records = layout_homes(
            self.tensors, self.plans, list(self.subgraph.inputs), set(variables), self.flash, self.virtual)
        # who wrote a tensor's records (an alias's output records are its input's)
        self.producer = {ti: p.index for p in self.plans for ti in p.op.outputs
                         if ti >= 0 and p.mode not in ("alias", "fused")}
        self.pools = self._plan_all(int(arena_size))
        # fused row bands: chains whose intermediates stay in the arena (fusion.py); per-op plans stay the fallback
        self.chains = ChainPlanner(self.planner).plan(find_chains(self.plans, set(self.subgraph.outputs)),
                                                      self.pools) if config.fuse else []
        self.chain_of = {p.index: c for c in self.chains for p in c.plans}
        self.fused_tensors = {ti for c in self.chains for ti in c.intermediates()}

        self.arena = Arena(int(arena_size))
        op_data, ctx = self._prepare(kernels, self.arena)
        for p, d in zip(self.plans, op_data):      # in op order: a folded PAD's data is set before its reader's
            p.data = fold_data(p, d, self.tensors)
        variables = self._variables(self.arena)
        # views: constants in flash read in place, variables in the tail, the rest set per op
        views: list[np.ndarray | None] = [None] * (len(self.tensors) + 1)
        for t in self.tensors:
            if t.data is not None and t.dtype is not None and t.type_name != "INT4":
                views[t.index] = t.data
            elif t.dtype is not None and t.nbytes == 0:
                views[t.index] = np.zeros(t.shape, t.dtype)
        for ti, raw in variables.items():
            t = self.tensors[ti]
            views[ti] = raw.view(t.dtype).reshape(t.shape)
        self.views = views
        region = self.arena.head_view(0, self.scratch_bytes)
        self.ctx = InvokeContext(views, self._scratch_views(ctx, region))
        self.variables = variables
        self.arena.set_head(self.scratch_bytes + self.pools.input + self.pools.weights + self.pools.output)
        base = self.arena.head_view(0, self.arena.head_bytes)
        s = self.scratch_bytes
        self.buffers = PoolBuffers(base[s:s + self.pools.input], base[s + self.pools.input:s + self.pools.input +
                                self.pools.weights], base[s + self.pools.input + self.pools.weights:])
        self.buffers.joint = base[s:s + self.pools.input + self.pools.weights]     # fused chains (fusion.py)

        # a path opens an SD image; a storage object (NullStorage: nothing stored, dry runs) opens its own
        backing = config.backing
        if not (is_path(backing) or isinstance(backing, Backing)):
            raise ConfigError(f"backing= is a path to an SD image or a storage backend with an open() method "
                              f"(microinterp.storage.base.Backing), not {type(backing).__name__}")
        opener = partial(SdImage.open, backing) if is_path(backing) else backing.open
        self.sd = opener(fingerprint=_fingerprint(self.model, self.flash, self.homes), weights_bytes=weights_bytes,
                         activation_bytes=act_bytes, table_entries=max(records, 1), checksum=config.checksum,
                         key=config.key)
        try:
            self.weights_written = 0
            if not self.sd.weights_ready:
                self._write_weights()
            self.engine = Engine(self)
            self.input_io = TileRecord(-1)
            # inputs start zeroed, as a fresh arena is, and so does a tensor some op reads that no op writes and
            # the model does not take (in memory it holds the fresh arena's zeros too)
            written = {ti for op in self.subgraph.operators for ti in op.outputs}
            ghosts = [ti for op in self.subgraph.operators for ti in op.inputs
                      if ti >= 0 and ti not in written and self.homes[ti] is not None
                      and self.homes[ti].device == "activations"]
            for ti in dict.fromkeys([*self.subgraph.inputs, *ghosts]):
                t = self.tensors[ti]
                if t.dtype is not None and self.homes[ti] is not None:
                    self.write_input(ti, np.zeros(t.shape, t.dtype))
        except BaseException:
            self.sd.close()
            raise
        self.last_records: list[OpRecord] = []

    # -- building ------------------------------------------------------------------------------------------------------
    def _prepare(self, kernels: list[Any], arena: Any) -> tuple[list[Any], PrepareContext]:
        ctx = PrepareContext(self.model, self.subgraph, arena)
        ctx.weights_resident = False
        return prepare_ops(ctx, kernels, self.subgraph.operators), ctx

    def _variables(self, arena: Any) -> dict[int, np.ndarray]:
        out = {}
        for t in self.tensors:
            if t.is_variable and t.data is None and t.nbytes:
                out[t.index] = arena.allocate_persistent(t.nbytes)
        return out

    def _scratch_region(self, ctx: PrepareContext) -> list[int]:
        per_op: dict[int, int] = {}
        for req in ctx.scratch_requests:
            per_op[req.node] = per_op.get(req.node, 0) + align_up(req.nbytes, ALIGN)
        return list(per_op.values())

    @staticmethod
    def _scratch_views(ctx: PrepareContext, region: np.ndarray) -> list[np.ndarray]:
        views, at = [], {}
        for req in ctx.scratch_requests:
            off = at.get(req.node, 0)
            views.append(region[off:off + req.nbytes])
            at[req.node] = off + align_up(req.nbytes, ALIGN)
        return views

    def _pools_for(self, arena_size: int) -> Pools:
        return Pools.split(self.scratch_bytes, self._free_bytes(arena_size), self.fractions, self.tile)

    def arena_for(self, pool_bytes: int) -> int:
        """The arena whose pools total ``pool_bytes``: the tail, the scratch region and alignment slack on top."""
        return pool_bytes + self.tail_bytes + 2 * ALIGN + self.scratch_bytes

    def _free_bytes(self, arena_size: int) -> int:
        return max(arena_size - self.tail_bytes - 2 * ALIGN - self.scratch_bytes, 0)  # start and tail alignment slack

    def _fitted_pools(self, planner: Planner, arena_size: int) -> Pools | None:
        """Without ``pools=``: pools sized to the ops' needs (:func:`pool_minima`), or None when they do not fit."""
        if not self.auto_pools:
            return None
        return Pools.fitted(self.scratch_bytes, self._free_bytes(arena_size), self._needs(planner).sizes,
                            self.fractions, self.tile)

    def _needs(self, planner: Planner) -> PoolNeeds:
        """:func:`pool_minima` of the plans, found once per planning."""
        if self._minima is None:
            self._minima = pool_minima(planner, self.plans, self.tile)
        return self._minima

    def _plan_all(self, arena_size: int) -> Pools:
        planner = self.planner = Planner(self.tensors, self.homes, self.virtual)
        self._minima: PoolNeeds | None = None
        pools = self._pools_for(arena_size)
        try:
            if pools.input + pools.weights + pools.output == 0:
                raise NoFit(-1, "", "input", 1, 0)
            try:
                for p in self.plans:
                    planner.plan(p, pools)
            except NoFit as e:      # the default shares leave some pool short: shares that follow the ops' needs
                fitted = self._fitted_pools(planner, arena_size) if e.op_index >= 0 else None
                if fitted is None:
                    raise
                pools = fitted
                for p in self.plans:
                    planner.plan(p, pools)
        except NoFit as e:
            if self.tile is not None and e.pool != "weights" and e.need > self.tile:
                raise ArenaOverflowError(
                    f"tile buffers of op {e.op_index} ({e.op_name})", e.need, self.tile,
                    hint=f"no arena works with tile={self.tile}: one row band of this op needs a {e.need}-byte "
                         f"{e.pool} tile; use tile >= {e.need} or no tile cap") from None
            if e.op_index < 0:
                need = self._smallest_arena(planner, arena_size)
                raise ArenaOverflowError("the persistent data and scratch buffers", self.tail_bytes +
                                         self.scratch_bytes, max(arena_size - ALIGN, 0), needed_arena=need,
                                         hint="out of core, tensors and weights are paged but persistent data "
                                              "(the arena tail) stays in the arena") from None
            need = self._smallest_arena(planner, arena_size)
            if self.auto_pools:         # the pools the ops need do not fit: say what each needs and for which op
                needs = self._needs(planner)
                raise ArenaOverflowError(
                    "the out-of-core pools, even one row per tile", sum(needs.sizes),
                    self._free_bytes(arena_size), needed_arena=need,
                    hint=f"the ops need pools of {needs.describe()} bytes next to the persistent tail "
                         f"({self.tail_bytes} bytes) and the scratch buffers ({self.scratch_bytes} bytes)") from None
            raise ArenaOverflowError(
                f"tile buffers of op {e.op_index} ({e.op_name}), even one row per tile", e.need, e.have,
                needed_arena=need,
                hint=f"its {e.pool} pool needs {e.need} bytes and has {e.have} (pools input:weights:output = "
                     f"{':'.join(f'{f:g}' for f in self.fractions)}, out of core); other shares may run it in "
                     "less: without pools= the pager sizes them to what the ops need (`microinterp deploy` names "
                     "settings that fit the part)") from None
        return pools

    def _smallest_arena(self, planner: Planner, start: int) -> int:
        if self.auto_pools:         # pools sized to the needs: their sum is the answer
            return self.arena_for(max(sum(self._needs(planner).sizes), 4 * ALIGN))

        def ok(size: int) -> bool:
            pools = self._pools_for(size)
            try:
                for p in self.plans:
                    planner.plan(p, pools)
            except NoFit:
                return False
            return True

        hi = max(start, 1024)
        while not ok(hi):
            hi *= 2
            if hi > 1 << 40:
                return hi
        lo = start
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _write_weights(self) -> None:
        """Stream every SD-resident constant from the memory-mapped model onto the card, one command each."""
        for home in self.homes:
            if home is None or home.device != "weights":
                continue
            raw = np.asarray(self.tensors[home.tensor].data).reshape(-1).view(np.uint8)
            rb = home.record_bytes
            # at most ~1 MB per command so no large host buffer is ever needed
            step = max(1, (1 << 20) // max(rb, 1))
            for r0 in range(0, home.records, step):
                r1 = min(home.records, r0 + step)
                self.sd.write_run("weights", home.record_offset(r0), home.run(r0, r1, keep=False),
                                  raw[r0 * rb:min(r1 * rb, home.nbytes)])
            self.weights_written += home.nbytes
        self.sd.commit_weights()

    # -- running ---------------------------------------------------------------------------------------------------------
    def invoke(self, progress: Any = None) -> None:
        """Every op tile by tile, under the float state the in-memory runtime runs in (overflow, invalid operations
        and underflow give their IEEE results silently, as in C: no NumPy warnings from a kernel's float work)."""
        try:
            with quiet_floats():
                self.last_records = self.engine.invoke(self.buffers, progress)
        except MemoryError as e:
            raise HostMemoryError(f"the host ran out of memory in an out-of-core kernel ({e}); a smaller "
                                  "tile= or pools= keeps its buffers smaller") from e
        except CheckFailed as e:
            raise check_failed(e, self.subgraph.operators, self.failed_op()) from e

    def records(self) -> list[OpRecord]:
        return self.last_records

    def failed_op(self) -> int | None:
        """The op (a fused chain's last op) the engine was running when an invoke raised."""
        index = self.engine.current_record.index
        return index if index >= 0 else None

    def reset(self) -> None:
        """Variable tensors (in the tail) back to their initial value and every kernel's ``reset``."""
        reset_state(self.tensors, self.views, self.ctx, [(p.kernel, p.op, p.data) for p in self.plans])

    def simulate(self) -> list[OpRecord]:
        """The records an invoke would produce (same tiles, same IO counts, same cycles), without moving or
        computing anything: the engine counts with its counting execution (:mod:`.execution`). Host times are
        those of the bookkeeping only."""
        return self.engine.count(self.buffers)

    def write_input(self, ti: int, value: np.ndarray) -> None:
        home = self.homes[ti]
        if home is None:      # a variable or empty tensor
            self.views[ti][...] = value
            return
        if home.records:
            self.engine.write_records(home, 0, home.records, np.ascontiguousarray(value), self.input_io)

    def read_tensor(self, ti: int) -> np.ndarray:
        t, home = self.tensors[ti], self.homes[ti]
        if ti in self.fused_tensors:
            raise InputError(f"tensor {ti} ({t.name!r}) is an intermediate of a fused chain: its bands stay in the "
                             "arena and never reach the card (pass fuse=False to keep every tensor on the card)")
        if home is None or home.device == "flash":
            view = self.views[ti]
            if view is None:
                raise InputError(f"tensor {ti} has no data (type {t.type_name})")
            return np.array(view, copy=True)
        out = np.empty(home.nbytes, np.uint8)
        if home.records:
            self.engine.read_records(home, 0, home.records, out, TileRecord(-1))
        return out.view(t.dtype).reshape(t.shape)

    #: out of core nothing is planned: the head holds the pools (:meth:`plan_table`)
    plan = None

    @property
    def storage(self) -> Any:
        return self.sd

    def recoveries(self) -> list[dict[str, Any]]:
        return list(self.engine.recoveries)

    def tensor_views(self) -> None:
        return None

    def plan_table(self) -> list[dict[str, Any]]:
        """The head out of core: the scratch region, then the input, weights and output pools (every op's tiles
        go through them), one row each; the tail's variables follow TFLM's tail, not a plan."""
        rows, offset = [], 0
        for kind, size in (("scratch", self.scratch_bytes), ("input pool", self.pools.input),
                           ("weights pool", self.pools.weights), ("output pool", self.pools.output)):
            rows.append({"kind": kind, "subgraph": 0, "index": -1, "name": kind, "offset": offset, "size": size,
                         "nbytes": size, "first": 0, "last": len(self.plans) - 1, "offline": False})
            offset += size
        return rows

    def layout(self) -> dict[str, Any]:
        return {"pools": {"input": self.pools.input, "weights": self.pools.weights, "output": self.pools.output},
                "scratch": self.scratch_bytes, "tail": self.arena.tail_bytes, "flash_budget": self.flash,
                "tile": self.tile, "checksum": self.sd.checksum.name, "backing": self.sd.path,
                "image_action": self.sd.action}

    def close(self) -> None:
        self.sd.close()


def _fractions(pools: Any) -> tuple[float, float, float]:
    if pools is None:
        return DEFAULT_POOLS
    try:
        vals = tuple(float(v) for v in pools)
    except TypeError:
        raise ValueError(f"pools must be three numbers (input, weights, output), got {pools!r}") from None
    if len(vals) != 3 or min(vals) <= 0 or not all(np.isfinite(vals)):
        raise ValueError(f"pools must be three positive numbers (input, weights, output), got {pools!r}")
    return vals
