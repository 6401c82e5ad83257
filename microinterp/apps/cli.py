"""The ``microinterp`` command line: ``info``, ``plan``, ``run``, ``analyze``, ``profile``, ``demo``.

Every command exits 0 on success, 2 on a usage error and 1 with a one-line message on a microinterp error (bad model,
unsupported ops, arena too small, wrong input).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import __version__
from ..errors import ConfigError, InputError, MicroInterpError
from ..interpreter import Interpreter
from ..model import load_model
from ..planner import PLANNERS
from ..planner.picture import arena_picture
from ..resolver import default_resolver
from ..sizes import size_argument as _size


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
    it = Interpreter(args.model, arena=args.arena, optimized=not args.reference, planner=args.planner, **target)
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
    from ..cost.mcu import get_profile
    from ..planner.greedy import plan_greedy, plan_size
    from ..planner.optimal import lower_bound, plan_optimal
    from ..planner.reorder import best_order, requests_for_order

    it = Interpreter(args.model, optimized=not args.reference)
    req = it._plan["requests"]
    tflm = plan_size(req, plan_greedy(req))
    order, _ = best_order(it.model, it._plan["scratch"], it._plan["unplanned"])
    reordered = requests_for_order(it.model, order, it._plan["scratch"], it._plan["unplanned"])
    phased_it = Interpreter(it.model, optimized=not args.reference, planner="phased")
    phased = phased_it._phased
    rows = {"tflm": tflm, "lower_bound": lower_bound(req), "optimal": plan_size(req, plan_optimal(req)),
            "reordered_lower_bound": lower_bound(reordered),
            "reordered_optimal": plan_size(reordered, plan_optimal(reordered)), "phased": phased_it.head_bytes}
    mcu = get_profile(args.mcu)
    kernels = "reference" if args.reference else "optimized"
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
        optimal = Interpreter(it.model, optimized=not args.reference, planner="optimal")
        for name, interp in (("tflm", it), ("optimal", optimal), ("phased", phased_it)):
            print(f"\n{name}: head {interp.head_bytes:,d} bytes")
            print(arena_picture(interp.plan_table(), interp.head_bytes, width=args.width))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """A dataset through invoke_batch: outputs (--output), and with labels the accuracy and confusion matrix of
    the first output's argmax."""
    try:
        xs = np.load(args.inputs, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise SystemExit(f"microinterp eval: cannot read {args.inputs} as a .npy array: {e}") from None
    it = Interpreter(args.model)
    if args.quantize:
        from ..batch import quantize_samples

        xs = quantize_samples(it, xs)
    progress = None
    bar = None
    if not args.json:
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(xs), unit="sample", file=sys.stderr)

            def progress(done: int, total: int) -> None:
                bar.update(done - bar.n)
        except ImportError:
            def progress(done: int, total: int) -> None:
                print(f"\r{done}/{total} samples", end="", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        if args.jobs or args.ray is not None:
            from .scaleout import evaluate

            ys = evaluate(args.model, xs, args.batch, jobs=args.jobs, ray=args.ray, progress=progress)
        else:
            ys = it.invoke_batch(xs, args.batch, progress, threads=args.threads)
    finally:        # the bar ends its line before anything else is printed, an error included
        if bar is not None:
            bar.close()
        elif progress is not None:
            print(file=sys.stderr)
    seconds = time.perf_counter() - t0
    first = ys if isinstance(ys, np.ndarray) else ys[0]
    if args.output:
        np.save(args.output, first)
    doc: dict[str, Any] = {"model": str(args.model), "samples": len(xs), "seconds": seconds,
                           "ms_per_sample": seconds / max(len(xs), 1) * 1e3}
    if args.labels:
        labels = np.load(args.labels).reshape(-1).astype(np.int64)
        if len(labels) != len(xs):
            raise InputError(f"{len(labels)} labels for {len(xs)} samples")
        pred = first.reshape(len(xs), -1).argmax(axis=1)
        classes = int(max(pred.max(initial=0), labels.max(initial=0))) + 1
        confusion = np.zeros((classes, classes), np.int64)
        np.add.at(confusion, (labels, pred), 1)
        doc.update(accuracy=float((pred == labels).mean()), confusion=confusion.tolist())
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"{doc['samples']} samples in {seconds:.2f} s ({doc['ms_per_sample']:.3f} ms/sample, exact as single "
          "invokes)")
    if "accuracy" in doc:
        print(f"accuracy {doc['accuracy']:.4f}")
        print("confusion (rows: label, columns: prediction)")
        for row in doc["confusion"]:
            print("  " + " ".join(f"{v:6d}" for v in row))
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    from .deploy import deploy

    d = deploy(args.model, args.mcu, args.kernels, target=args.target)
    # exit codes a script can trust: 0 fits, 1 does not fit in memory (out-of-core settings may follow), 2 TFLM
    # cannot run the model (ops it has no kernel for)
    status = 2 if not d.deployable else 0 if d.fits else 1
    if args.json:
        json.dump({**d.as_dict(), "exit_code": status}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return status
    p = d.mcu
    print(f"{d.model} on {p.name} ({p.core} @ {p.clock_hz / 1e6:g} MHz, {p.sram_bytes // 1024} KB SRAM, "
          f"{p.flash_bytes // 1024} KB flash), {d.kernels} kernels")
    print()
    print(d.resolver)
    t = d.target
    print(f"constexpr size_t kTensorArenaSize = {d.arena_size};   // arena_used_bytes() {d.arena_bytes}: "
          f"head {d.head_bytes} + tail {d.tail_bytes}")
    print("alignas(16) static uint8_t tensor_arena[kTensorArenaSize];")
    print(f"// for TFLM built for {t['core']} with {t['kernels']} kernels ({t['features']}, {t['float_abi']} float "
          f"ABI): {t['tflm']}, {t['cmsis_nn']}")
    if d.unmodelled_ops:
        print(f"// not modelled for this build: {', '.join(d.unmodelled_ops)} (their reference Prepare is counted)")
    print()
    print(f"weights {d.weights_bytes:,d} B of {p.flash_bytes:,d} B flash; arena {d.arena_size:,d} B of "
          f"{p.sram_bytes:,d} B SRAM: {'fits' if d.fits else 'does NOT fit in memory'}")
    if not d.deployable:
        print(f"NOT deployable: TFLM has no kernel for {', '.join(d.unsupported)} (no latency: a firmware cannot "
              "run this model)")
        return status
    print(f"latency {d.latency_ms:.2f} ms ({d.cycles / 1e6:.2f} M cycles; cost model of {p.figure_note(d.kernels)})")
    if d.calibrated_cycles is not None:
        print(f"  calibrated: {d.calibrated_latency_ms:.2f} ms ({d.calibrated_cycles / 1e6:.2f} M cycles) with "
              f"{p.calibration_note(d.kernels)}")
    if args.per_op:
        for i, op, c in d.per_op:
            print(f"  {i:>3} {op:<24} {c / 1e3:>10.1f} k cycles")
    o = d.out_of_core
    if o is not None:
        if o.get("runs"):
            print(f"out of core: Interpreter(model, arena={o['arena']}, backing={o['backing']!r}, flash={o['flash']}, "
                  f"pools={o['pools']}, mcu={o['mcu']!r}) -> {o['latency_ms']:.1f} ms, SD {o['sd_read_bytes']:,d} B "
                  f"read / {o['sd_write_bytes']:,d} B written per invoke")
        else:
            print(f"out of core: does not fit this part either (smallest arena {o.get('needed_arena')} bytes)")
    return status


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write

    print(write(args.model, args.output, arena=args.arena, mcu=args.mcu))
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    from .optimize import optimize

    r = optimize(args.model, budget_s=args.budget)
    with open(args.output, "wb") as f:
        f.write(r.data)
    print(f"{args.output}: OfflineMemoryAllocation for {sum(o >= 0 for o in r.offsets)} tensors; arena head "
          f"{r.tflm_head:,d} -> {r.predicted_head:,d} bytes ({r.saved:,d} less; lower bound {r.lower_bound:,d})")
    return 0


# -- run ---------------------------------------------------------------------------------------------------------------
def _run_inputs(it: Interpreter, paths: list[str]) -> list[np.ndarray]:
    """One array per model input: ``.npy`` files in input order, or one ``.npz`` holding them (by input name, or
    ``arr_0``, ``arr_1`` ... in order)."""
    if len(paths) == 1 and paths[0].endswith(".npz"):
        try:
            with np.load(paths[0], allow_pickle=False) as z:
                names = [d["name"] for d in it.get_input_details()]
                keys = names if all(n in z for n in names) else [f"arr_{i}" for i in range(it.num_inputs)]
                missing = [k for k in keys if k not in z]
                if missing:
                    raise SystemExit(f"microinterp run: {paths[0]} has no array {missing[0]!r} (it holds "
                                     f"{', '.join(z.files)}; name them after the inputs: {', '.join(names)})")
                return [z[k] for k in keys]
        except (OSError, ValueError, EOFError) as e:
            raise SystemExit(f"microinterp run: cannot read {paths[0]} as a .npz archive: {e}") from None
    if len(paths) != it.num_inputs:
        raise SystemExit(f"microinterp run: the model has {it.num_inputs} input(s); give --input once per input "
                         "(.npy), or one .npz holding them all")
    arrays = []
    for path in paths:
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except (OSError, ValueError, EOFError) as e:
            raise SystemExit(f"microinterp run: cannot read {path} as a .npy array: {e}") from None
    return arrays


def cmd_run(args: argparse.Namespace) -> int:
    it = Interpreter(args.model, optimized=not args.reference, **_running_kwargs(args))
    for i, x in enumerate(_run_inputs(it, args.input or [])):
        it.set_input(x, i)
    it.invoke()
    outs = [it.get_output(i) for i in range(it.num_outputs)]
    if args.output:
        if len(args.output) != len(outs):
            raise SystemExit(f"microinterp run: the model has {len(outs)} output(s); give --output once per output")
        for path, y in zip(args.output, outs):
            np.save(path, y)
    if args.json:
        json.dump({"outputs": [{"dtype": str(y.dtype), "shape": list(y.shape), "values": y.tolist()} for y in outs],
                   "arena_size": it.arena_size, "arena_used_bytes": it.arena_used_bytes, "head_bytes": it.head_bytes,
                   "tail_bytes": it.tail_bytes, "out_of_core": it.out_of_core,
                   "target": None if it.target is None else it.target.describe()}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        it.close()
        return 0
    for i, y in enumerate(outs):
        flat = np.array2string(y.reshape(-1)[:16], separator=" ")
        more = " ..." if y.size > 16 else ""
        print(f"output {i}: {y.dtype}{list(y.shape)} {flat}{more}")
    where = f" out of core (SD image {args.backing})" if it.out_of_core else ""
    print(f"arena: {it.arena_used_bytes} bytes used of {it.arena_size}{where} (head {it.head_bytes}, "
          f"tail {it.tail_bytes})")
    it.close()
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


# -- profile -----------------------------------------------------------------------------------------------------------
def _pools(text: str) -> tuple[float, ...]:
    """``--pools 2:1:1`` (input : weights : output shares of the out-of-core arena)."""
    try:
        parts = tuple(float(v) for v in text.replace(",", ":").split(":"))
    except ValueError:
        parts = ()
    if len(parts) != 3 or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f"--pools takes three positive shares input:weights:output, got {text!r}")
    return parts


def _running_options(s: argparse.ArgumentParser) -> None:
    """The options every command that runs a model takes, with one meaning everywhere."""
    s.add_argument("--arena", type=_size, default=None, help="arena bytes (512000, 512K, 2M); default: what the "
                                                              "plan needs")
    s.add_argument("--backing", default=None, help="SD image file: runs out of core when the arena is too small")
    s.add_argument("--pools", type=_pools, default=None, help="out of core: input:weights:output shares of the "
                                                               "arena (e.g. 2:1:1, as deploy suggests)")
    s.add_argument("--key-file", default=None, help="encrypt the SD image (AES-256-GCM): a file with the 32-byte key "
                                                    "(raw, or 64 hex digits); needs the crypto extra")
    s.add_argument("--planner", default="tflm", choices=tuple(PLANNERS),
                   help="; ".join(f"{k}: {v}" for k, v in PLANNERS.items()))
    s.add_argument("--target", default=None, help="the arena figures of TFLM built for this Cortex-M core "
                                                  "(cortex-m3, -m4, -m7, -m33, -m55)")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile for cycles: stm32f746, apollo3, stm32l4r5, "
                                                      "stm32h7a3, stm32u575, nrf5340")


def _running_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Interpreter keyword arguments from :func:`_running_options` (only those given)."""
    kw: dict[str, Any] = {"arena": args.arena, "planner": args.planner, "mcu": args.mcu}
    if args.backing:
        kw.update(backing=args.backing, pools=args.pools, key=_read_key(args.key_file))
    elif args.pools or args.key_file:
        raise ConfigError("--pools and --key-file are out-of-core options: pass --backing too")
    if args.target:
        ks = "reference" if str(getattr(args, "kernels", "")).lower() in ("reference", "ref") else "cmsis-nn"
        kw.update(target=args.target, kernels=ks)
    return kw


def _read_key(path: str | None) -> bytes | str | None:
    """An SD image key file: 32 raw bytes, or 64 hexadecimal digits (whitespace ignored)."""
    if path is None:
        return None
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.strip()
    if len(text) == 64 and all(c in b"0123456789abcdefABCDEF" for c in text):
        return text.decode()
    return raw


def cmd_profile(args: argparse.Namespace) -> int:
    from ..pager import format_table
    from ..storage.null import NullStorage

    kw = _running_kwargs(args)
    if args.backing:            # --dry-run writes nothing: the pager counts against a backing that stores nothing
        kw.update(backing=NullStorage() if args.dry_run else args.backing, flash=args.flash, tile=args.tile,
                  checksum=args.checksum, recover=args.recover, fuse=not args.no_fuse)
    with Interpreter(args.model, cost_kernels=args.kernels, optimized=not args.reference, **kw) as it:
        rng = np.random.default_rng(args.seed)
        for i in range(it.num_inputs):
            d = it.get_input_details(i)
            dtype = np.dtype(d["dtype"])
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                x = rng.integers(info.min, info.max, size=tuple(d["shape"]), endpoint=True, dtype=dtype)
            else:
                x = rng.standard_normal(tuple(d["shape"])).astype(dtype)
            it.set_input(x, i)
        host = None
        if args.dry_run:
            records = it.simulate()
        else:
            rounds = args.host_rounds if args.host_rounds is not None else (3 if it.out_of_core else 20)
            if rounds > 0:      # its invokes (warm-up ones in memory) leave the profile of the last one
                host = it.host_profile(rounds, warmup=0 if it.out_of_core else 2)
            else:
                it.invoke()
            records = it.profile
        if args.json:
            doc = it.profile_json(tiles=not args.no_tiles, records=records)
            if host is not None:
                doc["host"] = host.as_dict()
            json.dump(doc, sys.stdout, indent=1)
            sys.stdout.write("\n")
            return 0
        mode = "out of core" if it.out_of_core else "in memory"
        print(f"{args.model}: {mode}, arena {it.arena_size} bytes; cycles model {it.mcu.figure_note(it.cost_kernels)}")
        if it.out_of_core:
            p = it._pager
            print(f"pools: input {p.pools.input}, weights {p.pools.weights}, output {p.pools.output} bytes; "
                  f"tail {it.tail_bytes}, scratch {p.scratch_bytes}; flash budget {p.flash}; "
                  f"SD image {p.sd.path} ({p.sd.action}, {p.sd.checksum.name})")
        print(format_table(records, it.mcu.clock_hz))
        if host is not None:
            print(host.summary())
    return 0


# -- demo --------------------------------------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(seed=args.seed, workdir=args.workdir, small=args.small, size=args.size, arena=args.arena,
                    mcu=args.mcu)


# -- listen ------------------------------------------------------------------------------------------------------------
def cmd_listen(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from ..cost.mcu import get_profile
    from .audio import default_models, listen

    models = Path(args.models) if args.models else None
    if models is None:
        for guess in (os.environ.get("MICROINTERP_MODELS"), "models", "../shared/models"):
            if guess and (Path(guess) / "micro_speech_quantized.tflite").exists():
                models = Path(guess)
                break
    pre, clf = default_models(models) if models is not None else (None, None)
    pre = Path(args.preprocessor) if args.preprocessor else pre
    clf = Path(args.classifier) if args.classifier else clf
    if pre is None or clf is None or not pre.exists() or not clf.exists():
        print("microinterp listen: the audio preprocessor and micro_speech models are needed: pass --models DIR "
              "(holding audio_preprocessor_int8.tflite and micro_speech_quantized.tflite), or --preprocessor and "
              "--classifier, or set MICROINTERP_MODELS", file=sys.stderr)
        return 2
    heard = listen(args.wav, pre, clf, mcu=args.mcu)
    if args.json:
        print(json.dumps({"label": heard.label, "scores": dict(zip(("silence", "unknown", "yes", "no"),
                                                                    heard.scores.tolist())),
                          "cycles": heard.cycles}, indent=2))
        return 0
    print(f"{args.wav}: {heard.label}")
    print("scores  " + "  ".join(f"{k} {v:4d}" for k, v in zip(("silence", "unknown", "yes", "no"),
                                                                 heard.scores.tolist())))
    for stage, cycles in heard.cycles.items():
        print(f"{stage:28s} {cycles:>12,d} cycles ({args.mcu})")
    print(f"cycles model {get_profile(args.mcu).figure_note()}")
    return 0


# -- lm ----------------------------------------------------------------------------------------------------------------
def cmd_lm(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from ..testing.llm import tiny_llama
    from .lm import LlmConfig, report

    config = LlmConfig(layers=args.layers, context=args.context, prompt=args.prompt_len)
    llm = tiny_llama(args.seed, config)
    if args.save:
        folder = Path(args.save)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tiny_llama_prefill.tflite").write_bytes(llm.prefill)
        (folder / "tiny_llama_step.tflite").write_bytes(llm.step)
    prompt = [int(t) for t in args.prompt.split(",") if t.strip()]
    mcus = [m.strip() for m in args.mcu.split(",")]
    doc = report(llm.prefill, llm.step, config, prompt, args.steps, mcus=mcus, kernels=args.kernels,
                 arena=args.arena, backing=args.backing, flash=args.flash)
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    c = doc["config"]
    print(f"tiny Llama: hidden {c['hidden']}, {c['layers']} layers, {c['heads']} heads, FFN {c['ffn']}, "
          f"vocabulary {c['vocab']}, {c['context']} cache rows; int8")
    print(f"prompt {doc['prompt']} -> {doc['tokens']}")
    for name, p in doc["plan"].items():
        print(f"{name:8s} arena {p['arena']:>8,d} bytes (head {p['head']:,d}, tail {p['tail']:,d}); "
              f"weights {p['weights']:,d} bytes")
    print(f"KV cache {doc['cache_bytes']:,d} bytes (explicit inputs/outputs of the step model, in its head)")
    print(f"host: {doc['host']['step_ms_median']:.2f} ms per step (median, whole calls) = "
          f"{doc['host']['tokens_per_s']:.0f} tokens/s")
    for name, m in doc["mcu"].items():
        print(f"{name:10s} ({m['clock_hz'] / 1e6:g} MHz, {args.kernels}): prompt {m['prefill_cycles'] / 1e6:.2f} M "
              f"cycles, {m['step_cycles'] / 1e6:.3f} M cycles/token = {m['tokens_per_s']:.1f} tokens/s")
        print(f"{'':10s} cycles model {m['cost_build']}")
    if args.profile:        # the per-op table of one real step (in memory, or out of core with --backing)
        from ..pager import format_table
        from .lm import generate

        kw = {"arena": args.arena, "backing": f"{args.backing}.profile", "flash": args.flash} if args.backing else {}
        with Interpreter(llm.step, mcu=mcus[0], cost_kernels=args.kernels, **kw) as step:
            generate(Interpreter(llm.prefill), step, prompt, 2, config)
            print(f"one step, {'out of core' if step.out_of_core else 'in memory'}, arena {step.arena_size} bytes:")
            print(format_table(step.profile, step.mcu.clock_hz))
    o = doc.get("out_of_core")
    if o:
        print(f"out of core ({o['arena']} byte arena, {o['mcu']}): same tokens {o['same_tokens']}, same logits "
              f"{o['same_logits']}; per token SD read {o['step_sd_read_bytes']:,d} B, written "
              f"{o['step_sd_write_bytes']:,d} B, flash {o['step_flash_read_bytes']:,d} B; "
              f"{o['step_cycles'] / 1e6:.2f} M cycles = {o['tokens_per_s']:.1f} tokens/s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="microinterp", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"microinterp {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("info", help="ops (with their tensors' shapes), tensors, sizes and the kernels a model needs")
    s.add_argument("model")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("plan", help="the arena plan: head, tail, every buffer's offset, size and lifetime")
    s.add_argument("model")
    s.add_argument("--arena", type=_size, default=None, help="arena size in bytes (default: exactly what is needed)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--width", type=int, default=64, help="columns of the arena picture")
    s.add_argument("--reference", action="store_true", help="reference kernels only")
    s.add_argument("--planner", "--strategy", dest="planner", default="tflm", choices=(*PLANNERS, "all"),
                   help="; ".join(f"{k}: {v}" for k, v in PLANNERS.items()) + "; all: a table of every planner "
                        "(--strategy is the old name)")
    s.add_argument("--picture", action="store_true", help="with --planner all: the arena over time per planner")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile for the phased cycle cost (--planner all)")
    s.add_argument("--target", default=None, help="the plan of TFLM built for this core (cortex-m3, cortex-m4, "
                                                  "cortex-m7, cortex-m33, cortex-m55), its scratch buffers included")
    s.add_argument("--kernels", default="cmsis-nn", help="with --target: cmsis-nn (default) or reference")
    s.set_defaults(fn=cmd_plan)

    s = sub.add_parser("eval", help="a dataset (.npy, samples along the first axis) through invoke_batch: exact "
                                    "outputs, accuracy and confusion matrix with --labels")
    s.add_argument("model")
    s.add_argument("--inputs", required=True, help=".npy with N samples of the (single) input")
    s.add_argument("--labels", default=None, help=".npy with N integer labels")
    s.add_argument("--output", default=None, help="write the first output's N results to this .npy")
    s.add_argument("--batch", type=int, default=64)
    s.add_argument("--threads", type=int, default=1, help="run the chunks on N threads of this process")
    s.add_argument("--jobs", type=int, default=None, help="spread the chunks over N local processes")
    s.add_argument("--ray", nargs="?", const="local", default=None,
                   help="spread the chunks over Ray ('local' starts one, 'auto' or an address joins a cluster)")
    s.add_argument("--quantize", action="store_true",
                   help="quantize float inputs with the model input's scale and zero point (as QUANTIZE does)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_eval)

    s = sub.add_parser("deploy", help="what goes into the firmware: the MicroMutableOpResolver, the arena size for a "
                                      "32-bit target, latency, memory against the part, out-of-core settings; "
                                      "exit 0 when it fits, 1 when it does not, 2 when TFLM cannot run it")
    s.add_argument("model")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile: stm32f746, apollo3, stm32l4r5, stm32h7a3, stm32u575, nrf5340")
    s.add_argument("--kernels", default="optimized", help="optimized (CMSIS-NN) or reference")
    s.add_argument("--target", default=None, help="the core the firmware is built for (cortex-m3, cortex-m4, "
                                                  "cortex-m7, cortex-m33, cortex-m55); default: the MCU's")
    s.add_argument("--per-op", action="store_true", help="list the cycles of every op")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_deploy)

    s = sub.add_parser("report", help="one self-contained HTML page: the graph, the arena over time per planner, "
                                      "per-op work, cycles per MCU and out-of-core traffic, the deploy snippet")
    s.add_argument("model")
    s.add_argument("-o", "--output", default="report.html", help="the HTML file to write (default report.html)")
    s.add_argument("--arena", type=_size, default=512_000,
                   help="arena for the out-of-core columns (a dry run; default 512K)")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile of the deploy section")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("optimize", help="write the model with the smallest plan found as OfflineMemoryAllocation "
                                        "metadata (TFLM then uses that head)")
    s.add_argument("model")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--budget", type=float, default=2.0, help="seconds the plan search may take (default 2)")
    s.set_defaults(fn=cmd_optimize)

    s = sub.add_parser("run", help="run a model on .npy / .npz inputs (in memory, out of core, or as a firmware)")
    s.add_argument("model")
    s.add_argument("--input", action="append", help=".npy file for each input, in order, or one .npz with all")
    s.add_argument("--output", action="append", help=".npy file to write each output to")
    _running_options(s)
    s.add_argument("--kernels", default="cmsis-nn", help="with --target: cmsis-nn or reference")
    s.add_argument("--reference", action="store_true", help="reference kernels only (host)")
    s.add_argument("--json", action="store_true", help="outputs and arena figures as JSON")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("analyze", help="per layer W (MOps), Q (MB), N and compute-/IO-bound class for an MCU")
    s.add_argument("model")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile: stm32f746 (default), apollo3, stm32l4r5, stm32h7a3, stm32u575, nrf5340")
    s.add_argument("--kernels", default="cmsis-nn", help="kernel set for S_cpu and cycles: cmsis-nn or reference")
    s.add_argument("--json", action="store_true", help="machine-readable output (schema: docs/cost-model.md)")
    s.add_argument("--memory", action="store_true", help="also predict the arena on a 32-bit MCU")
    s.set_defaults(fn=cmd_analyze)

    s = sub.add_parser("profile", help="run once (in memory or out of core) and show per-op cycles, SD and flash "
                                       "traffic, checksum cost and host time")
    s.add_argument("model")
    _running_options(s)
    s.add_argument("--kernels", default="optimized", help="kernel set the cycles (and --target's build) assume: "
                                                           "optimized (cmsis-nn) or reference")
    s.add_argument("--flash", type=_size, default=None, help="flash budget for weights (default: the MCU's flash)")
    s.add_argument("--tile", type=_size, default=None, help="largest tile buffer in bytes (default: the pools)")
    s.add_argument("--checksum", default="crc32", help="crc32 (default), blake2b, blake2b-64 or xxh3")
    s.add_argument("--recover", action="store_true", help="recompute tiles whose checksum fails")
    s.add_argument("--no-fuse", action="store_true", help="out of core: no fused chains (every tensor on the card)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random input")
    s.add_argument("--reference", action="store_true", help="reference kernels only (in memory)")
    s.add_argument("--dry-run", action="store_true", help="count tiles, traffic and cycles without running kernels")
    s.add_argument("--host-rounds", type=int, default=None,
                   help="invokes timed for the host time and interpreter overhead (default 20 in memory, 3 out of "
                        "core; 0 skips)")
    s.add_argument("--json", action="store_true", help="the JSON document of docs/profile-schema.md")
    s.add_argument("--no-tiles", action="store_true", help="JSON without the per-tile lists")
    s.set_defaults(fn=cmd_profile)

    s = sub.add_parser("demo", help="build a VGG16-shaped model in-process, run it out of core in 512 KB and check "
                                    "it against an in-memory run")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--small", action="store_true", help="the quick in-memory demo (small CNN, checked against TFLM)")
    s.add_argument("--size", type=int, default=224, help="input height and width of the VGG16-shaped model")
    s.add_argument("--arena", type=_size, default=512_000, help="arena bytes for the out-of-core run")
    s.add_argument("--mcu", default="stm32f746", help="MCU profile for the cycle estimates")
    s.add_argument("--workdir", default=None, help="where to write the demo model (default: a temporary folder)")
    s.set_defaults(fn=cmd_demo)

    s = sub.add_parser("listen", help="a 1 s 16 kHz WAV through TFLM's audio front end and micro_speech: the label, "
                                      "the scores and the cycles of each stage")
    s.add_argument("wav")
    s.add_argument("--models", default=None, help="folder with audio_preprocessor_int8.tflite and "
                                                  "micro_speech_quantized.tflite")
    s.add_argument("--preprocessor", default=None)
    s.add_argument("--classifier", default=None)
    s.add_argument("--mcu", default="stm32f746", help="MCU profile for the cycle estimates")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_listen)

    s = sub.add_parser("lm", help="a TinyStories-class int8 Llama built in-process: greedy generation with a KV "
                                  "cache, plans, cycles per token, out of core")
    s.add_argument("--prompt", default="1,2,3,4,5", help="comma-separated token ids (default 1,2,3,4,5)")
    s.add_argument("--steps", type=int, default=33, help="tokens to generate (default 33: prompt pass + 32 steps)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    s.add_argument("--layers", type=int, default=8)
    s.add_argument("--context", type=int, default=64, help="KV cache rows")
    s.add_argument("--prompt-len", type=int, default=16, help="the prompt model's padded length")
    s.add_argument("--mcu", default="stm32f746,apollo3", help="comma-separated MCU profiles")
    s.add_argument("--kernels", default="optimized", help="kernel set the cycles assume: optimized or reference")
    s.add_argument("--arena", type=_size, default=64_000, help="arena bytes for the out-of-core run (with --backing)")
    s.add_argument("--backing", default=None, help="also generate out of core; images BACKING.prefill/.step")
    s.add_argument("--flash", type=_size, default=None, help="flash budget for weights out of core")
    s.add_argument("--save", default=None, help="write tiny_llama_prefill.tflite and tiny_llama_step.tflite here")
    s.add_argument("--profile", action="store_true", help="also print the per-op profile of one step")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_lm)

    from ..schedule.cli import add_parsers as add_schedule_parsers  # schedule, sweep

    add_schedule_parsers(sub, _size)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except MicroInterpError as e:
        print(f"microinterp {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `microinterp plan MODEL | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
