"""The ``microinterp`` commands that run a model: ``run``, ``profile``, ``eval``, ``demo``, ``listen``, ``lm``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from ..interpreter import Interpreter


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


def _running_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Interpreter keyword arguments from :func:`_running_options` (only those given)."""
    kw: dict[str, Any] = {"arena": args.arena, "planner": args.planner, "mcu": args.mcu,
                          "optimized": args.kernels != "reference", "cost_kernels": args.kernels}
    if args.backing:
        kw.update(backing=args.backing, pools=args.pools, key=_read_key(args.key_file), recover=args.recover,
                  flash=args.flash, tile=args.tile, checksum=args.checksum, fuse=not args.no_fuse)
    elif args.pools or args.key_file or args.recover or args.flash is not None or args.tile is not None \
            or args.no_fuse or args.checksum != "crc32":
        raise ConfigError("--pools, --key-file, --recover, --flash, --tile, --checksum and --no-fuse are "
                          "out-of-core options: pass --backing too")
    if args.target:
        kw.update(target=args.target, kernels=args.kernels)
    return kw


def _labels(path: str, samples: int) -> np.ndarray:
    """The labels of ``--labels``, read and checked before the evaluation runs."""
    try:
        labels = np.load(path, allow_pickle=False).reshape(-1)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot read {path} as a .npy array of labels: {e}") from None
    if labels.dtype.kind not in "iub":
        raise InputError(f"{path} holds {labels.dtype} values; labels are integer class indices")
    if len(labels) != samples:
        raise InputError(f"{path} has {len(labels)} labels for {samples} samples")
    if len(labels) and labels.min() < 0:
        raise InputError(f"{path} has negative labels; labels are class indices >= 0")
    return labels.astype(np.int64)


def cmd_eval(args: argparse.Namespace) -> int:
    """A dataset through invoke_batch: outputs (--output), and with labels the accuracy and confusion matrix of
    the first output's argmax."""
    try:
        xs = np.load(args.inputs, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot read {args.inputs} as a .npy array: {e}") from None
    if not isinstance(xs, np.ndarray) or xs.ndim == 0:
        raise InputError(f"{args.inputs} must hold one array of samples along its first axis")
    if len(xs) == 0:
        raise InputError(f"{args.inputs} holds no samples (its first axis is empty): nothing to evaluate")
    it = Interpreter(args.model)
    labels = _labels(args.labels, len(xs)) if args.labels else None
    if args.quantize:
        from ..batch import quantize_samples

        xs = quantize_samples(it, xs)
    else:
        want = it.get_input_details(0)["dtype"]
        if xs.dtype != want and xs.dtype.kind == "f" and np.dtype(want).kind in "iu":
            raise InputError(f"{args.inputs} holds {xs.dtype} samples and the model's input is {np.dtype(want)}: "
                             "add --quantize to quantize them with the input's scale and zero point")
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
    if labels is not None:
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


def cmd_run(args: argparse.Namespace) -> int:
    it = Interpreter(args.model, **_running_kwargs(args))
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


def cmd_profile(args: argparse.Namespace) -> int:
    from ..pager import format_table
    from ..storage.null import NullStorage

    kw = _running_kwargs(args)
    if args.backing and args.dry_run:     # --dry-run writes nothing: the pager counts against a null backing
        kw.update(backing=NullStorage())
    with Interpreter(args.model, **kw) as it:
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
            p = it.runtime
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

    if not args.json:
        return run_demo(seed=args.seed, workdir=args.workdir, small=args.small, size=args.size, arena=args.arena,
                        mcu=args.mcu)
    import contextlib

    summary: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):        # the narration on stderr, the document on stdout
        status = run_demo(seed=args.seed, workdir=args.workdir, small=args.small, size=args.size,
                          arena=args.arena, mcu=args.mcu, summary=summary)
    print(json.dumps({**summary, "exit_code": status}, indent=1))
    return status


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
    if len(args.wav) > 1:
        return _listen_many(args, pre, clf)
    heard = listen(args.wav[0], pre, clf, mcu=args.mcu)
    if args.json:
        print(json.dumps({"label": heard.label, "scores": dict(zip(("silence", "unknown", "yes", "no"),
                                                                    heard.scores.tolist())),
                          "cycles": heard.cycles}, indent=2))
        return 0
    print(f"{args.wav[0]}: {heard.label}")
    print("scores  " + "  ".join(f"{k} {v:4d}" for k, v in zip(("silence", "unknown", "yes", "no"),
                                                                 heard.scores.tolist())))
    for stage, cycles in heard.cycles.items():
        print(f"{stage:28s} {cycles:>12,d} cycles ({args.mcu})")
    print(f"cycles model {get_profile(args.mcu).figure_note()}")
    return 0


def _listen_many(args: argparse.Namespace, pre: Any, clf: Any) -> int:
    """Several WAVs: a line each (label and scores), the clips run together (:func:`.audio.listen_many`)."""
    import json

    from .audio import LABELS, listen_many

    heard = listen_many(args.wav, pre, clf, mcu=args.mcu)
    if args.json:
        print(json.dumps([{"wav": w, "label": h.label, "scores": dict(zip(LABELS, h.scores.tolist()))}
                          for w, h in zip(args.wav, heard)], indent=2))
        return 0
    for w, h in zip(args.wav, heard):
        print(f"{w}: {h.label:8s} " + "  ".join(f"{k} {v:4d}" for k, v in zip(LABELS, h.scores.tolist())))
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
    prompt = list(args.prompt)
    from ..cost.boards import split_boards

    mcus = split_boards(args.mcu)
    doc = report(llm.prefill, llm.step, config, prompt, args.steps, mcus=mcus, kernels=args.kernels,
                 arena=args.arena, backing=args.backing, flash=args.flash, recover=args.recover)
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
    host = doc["host"]
    if host["tokens_per_s"] is None:
        print("host: one token, no step to time (give --steps 2 or more)")
    else:
        print(f"host: {host['step_ms_median']:.2f} ms per step (median, whole calls) = {host['tokens_per_s']:.0f} "
              "tokens/s")
    for name, m in doc["mcu"].items():
        print(f"{name:10s} ({m['clock_hz'] / 1e6:g} MHz, {args.kernels}): prompt {m['prefill_cycles'] / 1e6:.2f} M "
              f"cycles, {m['step_cycles'] / 1e6:.3f} M cycles/token = {m['tokens_per_s']:.1f} tokens/s")
        print(f"{'':10s} cycles model {m['cost_build']}")
    if args.profile:        # the per-op table of one real step (in memory, or out of core with --backing)
        from ..pager import format_table
        from .lm import generate

        kw = {"arena": args.arena, "backing": f"{args.backing}.profile", "flash": args.flash,
              "recover": args.recover} if args.backing else {}
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
