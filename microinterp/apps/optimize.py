"""Hand a smaller plan back to TFLM: a model file whose ``OfflineMemoryAllocation`` metadata places every planned
tensor where :func:`~microinterp.planner.optimal.plan_optimal` put it.

TFLM honours that metadata (``micro_allocation_info.cc``): offline-planned tensors take their offsets as given and
only the scratch buffers are planned online, first fit, around them -- so the head the real runtime will report is
:func:`~microinterp.planner.greedy.plan_greedy` run on those requests, which :func:`optimize` computes and returns as
the prediction (``tests/apps/test_optimize.py`` checks it against the wheel, and the outputs bit for bit).

The model is rewritten through the model builder (:func:`microinterp.rewrite.rebuild`): tensors (shapes, types, quantization, constant
data, variables), every subgraph's ops with their builtin or custom options and intermediates, and the metadata
are kept; SignatureDefs, tensor shape signatures and operator versions are not written (TFLM reads none of them to
run a model). Variable tensors and anything TFLM does not plan keep ``-1`` (an offline offset would move a variable
from the tail into the head).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from ..errors import MicroInterpError
from ..model import Model, load_model
from ..planner.greedy import plan_greedy, plan_size
from ..planner.optimal import lower_bound, plan_optimal
from ..planner.rigid import lower_bound as rigid_lower_bound
from ..planner.rigid import plan_rigid
from ..rewrite import rebuild


@dataclass(frozen=True)
class Optimized:
    """What :func:`optimize` produced: the model bytes and the heads (bytes) before, predicted, and the bound."""

    data: bytes
    tflm_head: int
    predicted_head: int
    lower_bound: int
    offsets: tuple[int, ...]        # one per tensor of all subgraphs (-1: not offline-planned)
    order: tuple[int, ...] | None = None    # subgraph 0's op order when reordered (positions), else None

    @property
    def saved(self) -> int:
        return self.tflm_head - self.predicted_head


def optimize(model: Any, budget_s: float = 2.0, reorder: bool = True, share_bytes: bool = False,
             reorder_states: int | None = None) -> Optimized:
    """The model with the optimal offline plan -- for the best op order found (``reorder``,
    :mod:`microinterp.planner.reorder`) when that lowers the head -- never worse than TFLM's own: when the search
    finds nothing smaller, the plan written is TFLM's greedy one in the original order, so the head stays the same.
    ``share_bytes`` lets slices, joins and pads share bytes with the tensors they cut, fill or pad
    (:mod:`microinterp.planner.aliases`), and frees the bytes of a tensor read in pieces piece by piece, as its
    last reader of each has run (:func:`_consumed_parts`); the lower bound is then the one of those items."""
    from ..interpreter import Interpreter

    loaded = load_model(model)
    if loaded.offline_offsets is not None:      # a plan written before: plan again from scratch
        loaded = load_model(rebuild(loaded, {"OfflineMemoryAllocation": None}).build())
    interp = Interpreter(loaded)
    tflm = plan_size(interp.runtime.plan["requests"], plan_greedy(interp.runtime.plan["requests"]))
    candidates = [None]
    if reorder:
        from ..planner.reorder import best_order

        order, _ = best_order(loaded, interp.runtime.plan["scratch"], interp.runtime.plan["unplanned"],
                              max_states=reorder_states)
        if order != list(range(len(order))):
            candidates.append(order)
    best = None
    for order in candidates:
        for share in (False, True) if share_bytes else (False,):     # a group's members move together:
            found = _plan_for(loaded, interp, order, budget_s, share_bytes=share)     # sharing can cost more
            if best is None or found[1] < best[1]:
                best = (*found, order)
    tensor_offsets, predicted, bound, order = best
    if predicted > tflm:     # scratch placement undid the gain: keep TFLM's own plan, written out
        tensor_offsets, predicted, bound = _plan_for(loaded, interp, None, budget_s, greedy=True)
        order = None
    offsets = tuple(tensor_offsets.get((sg.index, t.index), -1) for sg in loaded.subgraphs for t in sg.tensors)
    b = rebuild(loaded, {"OfflineMemoryAllocation": None}, op_order=order)
    b.add_offline_plan(offsets)
    return Optimized(b.build(), tflm, predicted, bound, offsets, tuple(order) if order else None)


#: How far a chain of outputs placed over their own inputs may walk down the arena, as a fraction of the most bytes
#: its tensors hold at once (:func:`microinterp.planner.aliases.share`); -1: no such placement. Which is best depends
#: on the model, so the plan is made with each and the smallest kept.
WINDOW_SLACKS = (-1.0, 0.0, 0.125, 0.5)


def _plan_for(loaded: Model, interp: Any, order: list[int] | None, budget_s: float, greedy: bool = False,
              share_bytes: bool = False) -> tuple[dict, int, int]:
    """Tensor offsets (TFLM's greedy or the optimal search) for ``order`` (None: the model's), the head TFLM gets
    with the tensors fixed and the scratch buffers planned online around them, and the lower bound; with
    ``share_bytes``, the smallest of the sharing variants (:func:`_shared`)."""
    from ..planner.lifetimes import allocation_infos, buffer_requests
    from ..planner.reorder import requests_for_order

    handles, scratch = interp.runtime.plan["unplanned"], interp.runtime.plan["scratch"]
    if order is None:
        infos, owners, requests = interp.runtime.plan["infos"], interp.runtime.plan["owners"], interp.runtime.plan["requests"]
    else:
        requests = requests_for_order(loaded, order, scratch, handles)
        main = loaded.main
        permuted = replace(loaded, subgraphs=(replace(main, operators=tuple(main.operators[i] for i in order)),
                                              *loaded.subgraphs[1:]))
        infos = allocation_infos(permuted, scratch, handles)
        owners = buffer_requests(infos)[1]
    is_tensor = [infos[owner].kind == "tensor" for owner in owners]
    best = None
    plain = None
    for variant in _shared(loaded, order, requests, owners, infos) if share_bytes else [None]:
        if variant is None:
            if plain is None:
                plain = (plan_greedy(requests) if greedy else plan_optimal(requests, budget_s=budget_s),
                         lower_bound(requests))
            plan, bound = plain
        else:
            items, expand = variant
            plan, bound = expand(plan_rigid(items, budget_s=budget_s, greedy=greedy)), rigid_lower_bound(items)
        head = _head_with(requests, is_tensor, plan)
        if best is None or head < best[1]:
            best = (plan, head, bound)
    plan, head, bound = best
    at = {(infos[o].subgraph, infos[o].index): plan[i] for i, o in enumerate(owners) if is_tensor[i]}
    return at, head, bound


def _head_with(requests: list, is_tensor: list[bool], plan: list[int]) -> int:
    """The head TFLM gets with the tensors at ``plan``'s offsets and the scratch buffers planned online around them."""
    fixed = [replace(r, offline_offset=plan[i]) if is_tensor[i] else r for i, r in enumerate(requests)]
    return plan_size(fixed, plan_greedy(fixed))


def _shared(loaded: Model, order: list[int] | None, requests: list, owners: list, infos: list) -> list:
    """One sharing variant per entry of :data:`WINDOW_SLACKS` (and, for each slack, one more without the outputs
    placed over an input that another op reads too): the requests as rigid items
    (:mod:`microinterp.planner.rigid`) -- each group of byte-sharing tensors
    (:func:`microinterp.planner.aliases.share`) one item whose members keep their own bytes and lifetimes, every
    other request an item of its own -- with the function that turns the items' offsets into one per request; None
    for a variant where no tensor shares or frees bytes (the plain requests are its plan)."""
    from ..planner.aliases import candidates, reads, share

    main = loaded.main
    position = list(range(len(main.operators))) if order is None else [0] * len(main.operators)
    if order is not None:
        for k, i in enumerate(order):
            position[i] = k
    request_of = {infos[o].index: i for i, o in enumerate(owners)
                  if infos[o].kind == "tensor" and infos[o].subgraph == 0 and requests[i].offline_offset < 0}
    lifetimes = {t: (requests[i].first, requests[i].last) for t, i in request_of.items()}
    if any(op.subgraph_refs for op in main.operators):
        return [None]          # lifetimes count the called subgraphs' ops too: not modelled here
    writes = [[] for _ in range(len(main.operators) + 1)]      # TFLM's lifetimes: op k runs at step k + 1
    for i, op in enumerate(main.operators):
        writes[position[i] + 1] = [t for t in op.outputs if t >= 0]
    aliases = [replace(a, op=position[a.op] + 1) for a in candidates(loaded)]
    without_windows = [a for a in aliases if a.kind != "window"]
    nbytes = {t: main.tensors[t].nbytes for t in request_of}
    step = [*(p + 1 for p in position), len(position) + 1]
    read = {t: [(step[k], lo, hi) for k, lo, hi in spans] for t, spans in reads(loaded).items()}
    chunked = {t: _consumed_parts(requests[i], read.get(t, ())) for t, i in request_of.items()}
    chunked = {t: parts for t, parts in chunked.items() if len(parts) > 1}
    # an output over an input that other ops read first glues a long-lived tensor into a chain: a stiffer group
    single_reader = [a for a in aliases if a.kind != "window" or len(read.get(a.member, ())) <= 1]
    configs = [(aliases if slack >= 0 else without_windows, max(slack, 0.0)) for slack in WINDOW_SLACKS]
    configs += [(single_reader, slack) for slack in WINDOW_SLACKS if slack >= 0]
    variants = []
    for allowed, slack in configs:
        groups = share(allowed, lifetimes, writes, nbytes, read, window_slack=slack)
        variants.append(_rigid_items(groups, chunked, requests, owners, infos, request_of, lifetimes, nbytes)
                        if groups or chunked else None)
    return variants


def _rigid_items(groups: list, chunked: dict, requests: list, owners: list, infos: list, request_of: dict,
                 lifetimes: dict, nbytes: dict) -> tuple[list, Any]:
    """The rigid items of one sharing variant of :func:`_shared`, and the function from their offsets to one offset
    per request."""
    from ..planner.rigid import Rigid

    items, rows = [], []
    grouped = {t for g in groups for t in g.at}
    for i, r in enumerate(requests):
        t = infos[owners[i]].index if infos[owners[i]].kind == "tensor" and infos[owners[i]].subgraph == 0 else None
        if t is None or t not in grouped:
            rows.append(("one", i))
            parts = chunked.get(t) or ((0, r.size, r.first, r.last),)
            items.append(Rigid(tuple(parts), r.offline_offset))
    for g in groups:
        lo = g.extent(nbytes)[0]
        rows.append(("group", g, lo))
        parts = []
        for t, p in g.at.items():
            i = request_of[t]
            parts += [(a + p - lo, b + p - lo, f, last)
                      for a, b, f, last in chunked.get(t) or ((0, requests[i].size, *lifetimes[t]),)]
        items.append(Rigid(tuple(sorted(parts))))

    def expand(plan: list[int]) -> list[int]:
        out = [0] * len(requests)
        for row, offset in zip(rows, plan):
            if row[0] == "one":
                out[row[1]] = offset
            else:
                _, g, lo = row
                for t, p in g.at.items():
                    out[request_of[t]] = offset + p - lo
        return out

    return items, expand


def _consumed_parts(request: Any, read: list[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """A tensor read only in pieces (box cuts) as parts that die when their last reader has run: its bytes split
    at the 16-byte-aligned edges of the pieces read, each part alive from the tensor's creation to the last read
    that touches it (a part no op reads dies at once). One part (the whole tensor) when some op reads it whole."""
    from ..planner.lifetimes import ALIGNMENT

    size = request.size
    if not read or any(start == 0 and stop >= size - ALIGNMENT + 1 for _, start, stop in read):
        return [(0, size, request.first, request.last)]
    edges = {0, size}
    for _, start, stop in read:
        edges.add(start // ALIGNMENT * ALIGNMENT)
        edges.add(min(size, -(-stop // ALIGNMENT) * ALIGNMENT))
    edges = sorted(edges)
    parts = []
    for a, b in itertools.pairwise(edges):
        last = max((step for step, start, stop in read if start < b and stop > a), default=request.first)
        if parts and parts[-1][3] == last and parts[-1][1] == a:
            parts[-1] = (parts[-1][0], b, request.first, last)
        else:
            parts.append((a, b, request.first, last))
    return parts


# -- the graph rewrite ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rewritten:
    """What :func:`rewrite` produced: the model bytes, the whole arenas before and after (the wheel's 64-bit build,
    and ``target``'s firmware build when one was named), the MACs and predicted cycles before and after, the cuts
    applied and, when nothing was cut, why."""

    data: bytes
    arena_before: int | None        # None: the model's arena cannot be replayed (control flow)
    arena_after: int | None
    target: str | None
    target_arena_before: int | None
    target_arena_after: int | None
    macs_before: int
    macs_after: int
    cycles_before: float
    cycles_after: float
    board: str
    cuts: tuple[Any, ...]
    plan: Optimized
    message: str

    @property
    def extra_macs(self) -> float:
        return self.macs_after / self.macs_before - 1 if self.macs_before else 0.0

    @property
    def k_tensor_arena_size(self) -> int | None:
        """The ``target`` build's arena rounded up to the next KiB, as ``deploy`` writes ``kTensorArenaSize``."""
        return None if self.target_arena_after is None else -(-self.target_arena_after // 1024) * 1024

    @property
    def extra_cycles(self) -> float:
        return self.cycles_after / self.cycles_before - 1 if self.cycles_before else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"arena_before": self.arena_before, "arena_after": self.arena_after, "target": self.target,
                "target_arena_before": self.target_arena_before, "target_arena_after": self.target_arena_after,
                "kTensorArenaSize": self.k_tensor_arena_size,
                "macs_before": self.macs_before, "macs_after": self.macs_after, "extra_macs": self.extra_macs,
                "cycles_before": self.cycles_before, "cycles_after": self.cycles_after,
                "extra_cycles": self.extra_cycles, "board": self.board,
                "cuts": [c.describe() for c in self.cuts], "message": self.message}


def wheel_arena(model: Any, share_bytes: bool = False) -> int:
    """The whole arena (head + tail) the ``tflite-micro`` wheel's 64-bit build needs for ``model``
    (:func:`microinterp.memory32.estimate_arena`, LP64 with TFLM's compression fields, plus the wheel's recording
    allocator, :data:`RECORDING_ALLOCATOR_BYTES`); with ``share_bytes`` the
    head is TFLM's greedy plan of the byte-sharing groups (:mod:`microinterp.planner.aliases`), as the offline plan
    :func:`optimize` writes will have it."""
    from ..memory32 import estimate_arena

    return _whole(estimate_arena(model, "lp64", compression=True), model, share_bytes) + RECORDING_ALLOCATOR_BYTES


#: What the wheel's tail holds beyond a firmware's: its Python interpreter always allocates through TFLM's
#: RecordingMicroAllocator, whose own counters take 240-248 bytes of the arena (``tests/test_memory32.py``); the
#: upper end, so that the figure is never below the ``arena_size`` the wheel needs.
RECORDING_ALLOCATOR_BYTES = 248


def target_arena(model: Any, target: Any, share_bytes: bool = False) -> int:
    """The whole arena of ``target``'s firmware build for ``model`` (a core name: its CMSIS-NN build; or a
    :class:`~microinterp.targets.Target`); ``share_bytes`` as for :func:`wheel_arena`."""
    from ..memory32 import estimate_arena

    return _whole(estimate_arena(model, target=target), model, share_bytes)


def _whole(est: Any, model: Any, share_bytes: bool) -> int:
    """An estimate's tail plus its head, or with ``share_bytes`` the smallest head TFLM's greedy order gives any of
    the sharing variants (:func:`_shared`, one rigid item per group of byte-sharing tensors)."""
    from ..planner.lifetimes import allocation_infos, buffer_requests

    if not share_bytes:
        return est.persistent_bytes + est.head_bytes
    loaded = load_model(model)
    infos = allocation_infos(loaded, list(est.scratch))
    requests, owners = buffer_requests(infos)
    is_tensor = [infos[o].kind == "tensor" for o in owners]
    heads = [_head_with(requests, is_tensor, plan_greedy(requests) if variant is None else
                        variant[1](plan_rigid(variant[0], greedy=True)))
             for variant in _shared(loaded, None, requests, owners, infos)]
    return est.persistent_bytes + min(heads)


def rewrite(model: Any, *, max_extra_macs: float = 0.15, target: Any = None, budget_s: float = 2.0,
            mcu: Any = None, check_seeds: tuple[int, ...] = (0, 1), quick: bool = False,
            regroup_s: float = 0.0) -> Rewritten:
    """``model`` rewritten so that stock TFLM runs it in a smaller whole arena with identical outputs.

    0. :func:`microinterp.patching.pads.fold_pads` folds each explicit ``PAD`` that the next convolution's ``SAME``
       padding computes exactly (a PyTorch export's);
    1. :func:`microinterp.patching.search.search` cuts the memory-heavy stages into patches (minimising the wheel's
       whole arena, or ``target``'s firmware arena when a core is named), recomputing at most ``max_extra_macs``
       (a fraction) more MACs than the original;
    2. :func:`optimize` then writes the optimal offline plan (and op order) of the rewritten graph;
    3. the result runs in microinterp against the original on seeded inputs; outputs must be identical bit for bit,
       and its planned arena must be smaller than the original's with its own optimal offline plan; else that
       original is written and the message says why;
    4. with ``regroup_s`` > 0, up to that many seconds of :func:`.regroup.regroup`: one more convolution chain near
       the planned peak split in two groups of channels at a time, kept while the written plan's arena drops (each
       try plans the model: tens of seconds per round on mobilenet_v2).

    The cycles are the cost model's (:func:`microinterp.cost.analysis.predict_cycles`) for ``mcu``, or a board of
    ``target``'s core, or the default deploy board. ``quick`` searches fewer stages and grids (what ``deploy`` and
    ``report`` show in a few seconds; ``microinterp optimize`` searches more)."""
    from ..cost.analysis import predict_cycles
    from ..patching.pads import fold_pads
    from ..patching.search import model_macs, search
    from .pricing import board_for

    original = load_model(model)
    arena_of = ((lambda m: target_arena(m, target, share_bytes=True)) if target else
                (lambda m: wheel_arena(m, share_bytes=True)))
    core = target if isinstance(target, str) or target is None else target.core.name
    board = board_for(mcu, core)
    effort = {"limit": 4, "max_grid": 3, "max_patches": 6, "rounds": 2} if quick else {}
    macs, cycles = model_macs(original), sum(predict_cycles(original, board))
    try:
        folded = fold_pads(original)
        start, cuts = (original, ()) if folded is None else (load_model(folded[0]), (folded[1],))
        patched = search(start, arena_of, max_extra_macs=max_extra_macs, **effort)
    except MicroInterpError as e:     # control flow, resource variables: the arena replay cannot prepare them
        plan = optimize(original, budget_s=budget_s)
        return Rewritten(plan.data, None, None, core, None, None, macs, macs, cycles, cycles, board.name, (), plan,
                         f"not rewritten: the whole arena of this model cannot be replayed ({e}); its offline plan "
                         f"is written")
    planned_arena = (lambda m: target_arena(m, target)) if target else wheel_arena   # the written plan's own
    baseline = optimize(original, budget_s=budget_s, share_bytes=True, reorder_states=20_000)
    plan, message = baseline, ""
    cuts = (*cuts, *patched.cuts)
    if not cuts:
        message = _why_not(original, max_extra_macs)
    elif check_seeds and not _same_outputs(original, patched.data, check_seeds):
        cuts = ()
        message = "the rewritten model's outputs differed from the original's on the check run: written unchanged"
    else:
        candidate = optimize(patched.data, budget_s=budget_s, share_bytes=True,   # a patched graph's exact reorder
                             reorder_states=20_000)                              # search runs out: greedy order
        if planned_arena(candidate.data) < planned_arena(baseline.data):
            plan = candidate
            if regroup_s > 0:
                from .regroup import regroup

                regrouped, more = regroup(plan, planned_arena, lambda d: optimize(
                    d, budget_s=budget_s, share_bytes=True, reorder_states=20_000), regroup_s)
                if more and (not check_seeds or _same_outputs(original, regrouped.data, check_seeds)):
                    plan, cuts = regrouped, (*cuts, *more)
        else:
            cuts = ()
            message = ("nothing to split: once planned, the rewrite needs no less arena than the original with its "
                       "own offline plan, which is written")
    rewritten = load_model(plan.data)
    return Rewritten(plan.data, wheel_arena(original), wheel_arena(rewritten), core,
                     target_arena(original, target) if target else None,
                     target_arena(rewritten, target) if target else None,
                     macs, model_macs(rewritten), cycles, sum(predict_cycles(rewritten, board)), board.name,
                     cuts, plan, message)


def _why_not(model: Model, max_extra_macs: float) -> str:
    from ..patching.channels import find_chains
    from ..patching.search import candidate_stages

    if not candidate_stages(model) and not find_chains(model):
        return ("nothing to split: no run of convolutions, pools, pads and pointwise ops with one feature map in and "
                "one out passes through the ops where the most memory is alive, and no convolution is followed by "
                "channelwise ops that could run in groups of channels")
    return (f"nothing to split: every patch grid and channel grouping tried either adds more persistent memory "
            f"(each op's node and OpData) than it frees or recomputes more than {max_extra_macs:.0%} extra MACs")


def _same_outputs(original: Model, data: bytes, seeds: tuple[int, ...]) -> bool:
    """Run both models in microinterp on seeded random inputs; True when every output is bit-identical."""
    from ..interpreter import Interpreter
    from ..testing.device import seeded_inputs

    a, b = Interpreter(original), Interpreter(data)
    for seed in seeds:
        for i, x in enumerate(seeded_inputs(a, seed)):
            a.set_tensor(a.get_input_details(i)["index"], x)
            b.set_tensor(b.get_input_details(i)["index"], x)
        a.invoke()
        b.invoke()
        for k in range(a.num_outputs):
            ya = a.get_tensor(a.get_output_details(k)["index"])
            yb = b.get_tensor(b.get_output_details(k)["index"])
            if ya.shape != yb.shape or ya.dtype != yb.dtype or ya.tobytes() != yb.tobytes():
                return False
    return True
