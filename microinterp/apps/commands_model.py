"""The ``microinterp`` commands about a model file: ``info``, ``plan``, ``deploy``, ``report``, ``optimize``, ``analyze``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import MicroInterpError
from ..interpreter import Interpreter
from ..model import load_model
from ..planner.picture import arena_picture
from ..resolver import default_resolver
from .options import cli_hint


# -- info --------------------------------------------------------------------------------------------------------------
def _tensor_doc(t) -> dict[str, Any]:
    q = t.quantization
    return {"index": t.index, "name": t.name, "type": t.type_name, "shape": list(t.shape), "bytes": t.nbytes,
            "kind": "const" if t.is_constant else ("variable" if t.is_variable else "planned"),
            "quantization": None if q is None else {"scales": [float(v) for v in q.scales[:16]],
                                                    "zero_points": [int(v) for v in q.zero_points[:16]],
                                                    "axis": q.axis, "channels": int(q.scales.size)}}


def _shapes(sg, ids) -> str:
    return " ".join(f"{sg.tensors[i].type_name}{list(sg.tensors[i].shape)}" if i >= 0 else "-" for i in ids)


def cmd_info(args: argparse.Namespace) -> int:
    m = load_model(args.model)
    resolver = default_resolver()
    sg = m.main
    counts: dict[str, int] = {}
    for s in m.subgraphs:
        for op in s.operators:
            counts[op.key] = counts.get(op.key, 0) + 1
    desc = resolver.describe(m.op_names())
    if args.json:
        json.dump({"model": str(args.model), "bytes": m.nbytes, "schema_version": m.version,
                   "subgraphs": len(m.subgraphs), "description": m.description, "weights_bytes": m.weight_bytes(),
                   "inputs": [_tensor_doc(sg.tensors[i]) for i in sg.inputs],
                   "outputs": [_tensor_doc(sg.tensors[i]) for i in sg.outputs],
                   "ops": [{"name": n, "count": counts[n], "kernel": desc[n]} for n in m.op_names()],
                   "operators": [{"index": op.index, "op": op.key, "inputs": list(op.inputs),
                                  "outputs": list(op.outputs),
                                  "input_shapes": [list(sg.tensors[i].shape) if i >= 0 else None for i in op.inputs],
                                  "output_shapes": [list(sg.tensors[i].shape) for i in op.outputs if i >= 0],
                                  "options": {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
                                              for k, v in op.options.items()}} for op in sg.operators],
                   "tensors": [_tensor_doc(t) for t in sg.tensors]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    out = []
    out.append(f"model: {args.model}  ({m.nbytes} bytes, schema v{m.version}, {len(m.subgraphs)} subgraph(s))")
    if m.description:
        out.append(f"description: {m.description}")
    out.append(f"weights: {m.weight_bytes()} bytes in constant tensors")
    for kind, ids in (("input", sg.inputs), ("output", sg.outputs)):
        for i, ti in enumerate(ids):
            t = sg.tensors[ti]
            q = t.quantization
            qs = f" scale={q.scale:.6g} zp={q.zero_point}" if q else ""
            out.append(f"{kind} {i}: tensor {ti} {t.name!r} {t.type_name}{list(t.shape)}{qs}")
    out.append("")
    out.append("ops the resolver needs:")
    for name in m.op_names():
        out.append(f"  {name:<32} x{counts[name]:<4} {desc[name]}")
    out.append("")
    out.append(f"{'op':>4}  {'name':<24} {'inputs -> outputs (type[shape])':<60} options")
    for op in sg.operators:
        opts = ", ".join(f"{k}={v}" for k, v in op.options.items())
        io = f"{_shapes(sg, op.inputs)} -> {_shapes(sg, op.outputs)}"
        out.append(f"{op.index:>4}  {op.key:<24} {io:<60} {opts}")
    out.append("")
    out.append(f"{'tensor':>6}  {'type':<8} {'shape':<20} {'bytes':>9}  kind      name")
    for t in sg.tensors:
        kind = "const" if t.is_constant else ("variable" if t.is_variable else "planned")
        out.append(f"{t.index:>6}  {t.type_name:<8} {list(t.shape)!s:<20} {t.nbytes:>9}  {kind:<9} {t.name}")
    print("\n".join(out))
    return 0


# -- plan --------------------------------------------------------------------------------------------------------------
def cmd_plan(args: argparse.Namespace) -> int:
    if args.planner == "all":
        return _plan_strategies(args)
    target = {} if args.target is None else {"target": args.target, "kernels": args.kernels}
    it = Interpreter(args.model, arena=args.arena, optimized=args.kernels != "reference", planner=args.planner,
                     **target)
    rows = it.plan_table()
    if args.json:
        doc = {
            "model": str(args.model),
            "arena_size": it.arena_size,
            "head_bytes": it.head_bytes,
            "tail_bytes": it.tail_bytes,
            "arena_used_bytes": it.arena_used_bytes,
            "planner": "linear" if it.preserve_all_tensors else it.planner,
            "target": None if it.target is None else it.target.describe(),
            "buffers": rows,
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if it.target is not None:
        print(f"the firmware built for {it.target.name}: head {it.head_bytes} (planned, its scratch buffers "
              f"included) + tail {it.tail_bytes} (persistent) = {it.arena_used_bytes} used (arena_used_bytes())")
    else:
        print(f"arena {it.arena_size} bytes: head {it.head_bytes} (planned) + tail {it.tail_bytes} (persistent) "
              f"= {it.arena_used_bytes} used")
    print()
    print(f"{'buf':>4} {'kind':<7} {'tensor':>6} {'offset':>9} {'size':>9} {'life':>9}  name")
    for i, r in enumerate(rows):
        life = f"{r['first']}..{r['last']}"
        idx = r["index"] if r["kind"] == "tensor" else "-"
        print(f"{i:>4} {r['kind']:<7} {idx:>6} {r['offset']:>9} {r['size']:>9} {life:>9}  {r['name']}")
    print()
    print(arena_picture(rows, it.head_bytes, width=args.width))
    return 0


def _plan_strategies(args: argparse.Namespace) -> int:
    """Head bytes per strategy: TFLM's greedy plan, the lower bound, the optimal search, reordered ops, phased
    execution (with its cost in kernel calls and MCU cycles); ``--picture``: the arena over time per strategy."""
    from ..cost.analysis import predict_cycles
    from ..cost.mcu import get_profile, kernel_set
    from ..planner.greedy import plan_greedy, plan_size
    from ..planner.optimal import lower_bound, plan_optimal
    from ..planner.reorder import best_order, requests_for_order

    it = Interpreter(args.model, optimized=args.kernels != "reference")
    req = it.runtime.plan["requests"]
    tflm = plan_size(req, plan_greedy(req))
    order, _ = best_order(it.model, it.runtime.plan["scratch"], it.runtime.plan["unplanned"])
    reordered = requests_for_order(it.model, order, it.runtime.plan["scratch"], it.runtime.plan["unplanned"])
    phased_it = Interpreter(it.model, optimized=args.kernels != "reference", planner="phased")
    phased = phased_it.runtime.phased
    rows = {"tflm": tflm, "lower_bound": lower_bound(req), "optimal": plan_size(req, plan_optimal(req)),
            "reordered_lower_bound": lower_bound(reordered),
            "reordered_optimal": plan_size(reordered, plan_optimal(reordered)), "phased": phased_it.head_bytes}
    mcu = get_profile(args.mcu)
    kernels = kernel_set(args.kernels)
    base = sum(predict_cycles(it.model, mcu, kernels))
    extra = phased.extra_cycles(mcu, it.model.main.tensors, kernels)
    cost = {"segments": [s.ops for s in phased.segments], "extra_kernel_calls": phased.extra_calls(),
            "moved_bytes": phased.moved_bytes(), "mcu": mcu.name, "kernels": kernels, "cycles": base,
            "extra_cycles": extra, "throughput_decrease_percent": 100 * (1 - base / (base + extra)) if base else 0.0}
    if args.json:
        json.dump({"model": str(args.model), "heads": rows, "phased": cost}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{'planner':<22} {'head bytes':>11} {'below TFLM':>11}")
    for name, head in rows.items():
        print(f"{name:<22} {head:>11,d} {100 * (tflm - head) / tflm if tflm else 0:>10.1f}%")
    print(f"\nphased: {len(phased.segments)} segments, {cost['extra_kernel_calls']} extra kernel calls, "
          f"{cost['moved_bytes']:,d} line-buffer bytes moved per invoke; on {mcu.name} ({kernels}) "
          f"{base:,.0f} -> {base + extra:,.0f} cycles, throughput -{cost['throughput_decrease_percent']:.1f}%")
    if args.picture:
        optimal = Interpreter(it.model, optimized=args.kernels != "reference", planner="optimal")
        for name, interp in (("tflm", it), ("optimal", optimal), ("phased", phased_it)):
            print(f"\n{name}: head {interp.head_bytes:,d} bytes")
            print(arena_picture(interp.plan_table(), interp.head_bytes, width=args.width))
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    """Exit codes a script can trust: 0 fits, 1 does not fit in memory (out-of-core settings may follow), 2 TFLM or
    the board cannot run the model -- an op with no TFLM kernel or needing an accelerator the board lacks, a model
    TFLM's Prepare refuses, a file that is not a model -- or the arguments are wrong."""
    from .deploy import deploy, out_of_core_command

    try:
        d = deploy(args.model, args.mcu, args.kernels, target=args.target)
    except MicroInterpError as e:
        if args.json:
            _json({"model": args.model, "deployable": False, "why_not": f"{type(e).__name__}: {cli_hint(str(e))}",
                   "latency_ms": None, "exit_code": 2})
        else:
            print(f"microinterp deploy: NOT deployable: {type(e).__name__}: {cli_hint(str(e))}", file=sys.stderr)
        return 2
    status = 2 if not d.deployable else 0 if d.fits else 1
    if args.json:
        _json({**d.as_dict(), "exit_code": status})
        return status
    p = d.mcu
    print(f"{d.model} on {p.name} ({p.core} @ {p.clock_hz / 1e6:g} MHz, {p.sram_bytes // 1024} KB SRAM, "
          f"{p.flash_bytes // 1024} KB flash), {'cmsis-nn' if d.kernels == 'optimized' else d.kernels} kernels")
    if p.assumed:
        print(f"  ({p.assumed})")
    print()
    print(d.resolver)
    t = d.target
    print(f"constexpr size_t kTensorArenaSize = {d.arena_size};   // arena_used_bytes() {d.arena_bytes}: "
          f"head {d.head_bytes} + tail {d.tail_bytes}")
    print("alignas(16) static uint8_t tensor_arena[kTensorArenaSize];")
    print(f"// for TFLM built for {t['core']} with {t['kernels']} kernels ({t['features']}, {t['float_abi']} float "
          f"ABI): {t['tflm']}, {t['cmsis_nn']}")
    if t["core"] != p.core_key:
        print(f"// the latency below is {p.name}'s ({p.core_key}); this arena is the {t['core']} build's")
    if d.unmodelled_ops:
        print(f"// not modelled for this build: {', '.join(d.unmodelled_ops)} (their reference Prepare is counted)")
    print()
    print(f"weights {d.weights_bytes:,d} B of {p.flash_bytes:,d} B flash; arena {d.arena_size:,d} B of "
          f"{p.sram_bytes:,d} B SRAM: {'fits' if d.fits else 'does NOT fit in memory'}")
    if not d.deployable:
        print(f"NOT deployable on {p.name}: {d.why_not} (no latency: this firmware cannot run the model)")
        return status
    print(f"latency {d.latency_ms:.2f} ms ({d.cycles / 1e6:.2f} M cycles; cost model of {p.figure_note(d.kernels)})")
    if d.calibrated_latency_ms is not None:
        print(f"  calibrated: {d.calibrated_latency_ms:.2f} ms ({d.calibrated_cycles / 1e6:.2f} M cycles) with "
              f"{p.calibration_note(d.kernels)}")
    if args.per_op:
        for i, op, c in d.per_op:
            print(f"  {i:>3} {op:<24} {c / 1e3:>10.1f} k cycles")
    o = d.out_of_core
    if o is not None:
        if o.get("runs"):
            print(f"out of core: Interpreter(model, arena={o['arena']}, backing={o['backing']!r}, flash={o['flash']}, "
                  f"{'' if o['pools'] is None else 'pools=' + str(o['pools']) + ', '}mcu={o['mcu']!r}) -> {o['latency_ms']:.1f} ms, SD {o['sd_read_bytes']:,d} B "
                  f"read / {o['sd_write_bytes']:,d} B written per invoke")
            print(f"  on the command line: {out_of_core_command(o)}")
        else:
            print(f"out of core: does not fit this part either (smallest arena {o.get('needed_arena')} bytes)")
    z = d.optimized
    if z is not None:
        print(f"after microinterp optimize: arena {z['arena_bytes']:,d} bytes ({'fits' if z['fits'] else 'still above'}"
              f" {p.sram_bytes:,d}), {z['extra_macs']:+.1%} MACs, {z['extra_cycles']:+.1%} cycles")
        print(f"  on the command line: {z['command']}")
    return status


def _json(doc: dict) -> None:
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write

    path = write(args.model, args.output, arena=args.arena, mcu=args.mcu, target=args.target)
    if args.json:
        _json({"model": str(args.model), "report": str(path)})
    else:
        print(path)
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    from .optimize import optimize, rewrite

    if args.plan_only:
        r = optimize(args.model, budget_s=args.budget)
        with open(args.output, "wb") as f:
            f.write(r.data)
        if args.json:
            _json({"model": str(args.model), "output": args.output, "tensors_placed": sum(o >= 0 for o in r.offsets),
                   "tflm_head": r.tflm_head, "head": r.predicted_head, "saved": r.saved,
                   "lower_bound": r.lower_bound})
            return 0
        print(f"{args.output}: OfflineMemoryAllocation for {sum(o >= 0 for o in r.offsets)} tensors; arena head "
              f"{r.tflm_head:,d} -> {r.predicted_head:,d} bytes ({r.saved:,d} less; lower bound {r.lower_bound:,d})")
        return 0
    w = rewrite(args.model, max_extra_macs=args.max_extra_macs / 100, target=args.target, budget_s=args.budget,
                mcu=args.mcu, regroup_s=args.regroup)
    with open(args.output, "wb") as f:
        f.write(w.data)
    if args.json:
        _json({"model": str(args.model), "output": args.output, **w.as_dict()})
        return 0
    if w.arena_before is None:
        print(f"{args.output}: {w.message}")
        return 0
    print(f"{args.output}: whole arena in the TFLM wheel {w.arena_before:,d} -> {w.arena_after:,d} bytes "
          f"({w.arena_before / w.arena_after:.2f}x)")
    if w.target:
        print(f"  {w.target} firmware arena: {w.target_arena_before:,d} -> {w.target_arena_after:,d} bytes "
              f"({w.target_arena_before / w.target_arena_after:.2f}x); kTensorArenaSize {w.k_tensor_arena_size:,d}"
              + (" (less makes TFLM's STRIDED_SLICE crash in Prepare, not fail cleanly)"
                 if any(op.name == "STRIDED_SLICE" for op in load_model(w.data).main.operators) else ""))
    print(f"  price: {w.extra_macs:+.1%} MACs, {w.extra_cycles:+.1%} cycles on {w.board} "
          f"({w.cycles_before / 1e6:,.1f} -> {w.cycles_after / 1e6:,.1f} M cycles)")
    for c in w.cuts:
        print(f"  cut: {c.describe()}")
    if w.message:
        print(f"  {w.message}")
    return 0


# -- analyze -----------------------------------------------------------------------------------------------------------
def cmd_analyze(args: argparse.Namespace) -> int:
    from ..cost.analysis import analyze
    from ..memory32 import estimate_arena

    a = analyze(args.model, mcu=args.mcu, kernels=args.kernels)
    mem = estimate_arena(args.model) if args.memory else None
    if args.json:
        doc = a.as_dict()
        if mem is not None:
            doc["memory32"] = mem.as_dict()
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(a.format_table())
    if mem is not None:
        print(f"  arena on a 32-bit MCU: persistent {mem.persistent_bytes} + head {mem.head_bytes} "
              f"= {mem.total_bytes} bytes")
    return 0
