"""The ``microinterp`` command line: the parser, the options every command that runs a model shares, and ``main``.
The commands are :mod:`.commands_model` (about a model file) and :mod:`.commands_run` (running one); ``schedule``
and ``sweep`` are :mod:`.commands_schedule`'s.

Every command exits 0 on success, 2 on a usage error and 1 with a one-line message on a microinterp error (bad model,
unsupported ops, arena too small, wrong input); ``deploy`` says 0 fits, 1 does not fit, 2 cannot run. No error a
user can cause ends in a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import MicroInterpError
from ..planner import PLANNERS
from ..sizes import size_argument as _size
from .commands_model import cmd_analyze, cmd_deploy, cmd_info, cmd_optimize, cmd_plan, cmd_report
from .commands_run import cmd_demo, cmd_eval, cmd_listen, cmd_lm, cmd_profile, cmd_run
from .commands_schedule import add_parsers as add_schedule_parsers
from .options import (
    add_json,
    add_kernels,
    cli_hint,
    core_argument,
    count_argument,
    ids_argument,
    input_file,
    input_folder,
    output_file,
    output_folder,
    percent_argument,
    pools_argument,
)


def _running_options(s: argparse.ArgumentParser) -> None:
    """The options every command that runs a model takes, with one meaning everywhere."""
    s.add_argument("--arena", type=_size, default=None, help="arena bytes (512000, 512K, 2M); default: what the "
                                                              "plan needs")
    s.add_argument("--backing", type=output_file, default=None,
                   help="SD image file: runs out of core when the arena is too small")
    s.add_argument("--pools", type=pools_argument, default=None,
                   help="out of core: input:weights:output shares of the arena (e.g. 2:1:1, as deploy suggests)")
    s.add_argument("--key-file", type=input_file, default=None,
                   help="encrypt the SD image (AES-256-GCM): a file with the 32-byte key (raw, or 64 hex digits); "
                        "needs the crypto extra")
    s.add_argument("--recover", action="store_true", help="out of core: recompute tiles whose checksum fails and "
                                                          "rewrite damaged weight records from the model")
    s.add_argument("--flash", type=_size, default=None,
                   help="out of core: flash budget for weights (default: the board's flash)")
    s.add_argument("--tile", type=_size, default=None, help="out of core: largest tile buffer in bytes "
                                                            "(default: the pools)")
    s.add_argument("--checksum", default="crc32", help="out of core: crc32 (default), blake2b, blake2b-64 or xxh3")
    s.add_argument("--no-fuse", action="store_true", help="out of core: no fused chains (every tensor on the card)")
    s.add_argument("--planner", default="tflm", choices=tuple(PLANNERS),
                   help="; ".join(f"{k}: {v}" for k, v in PLANNERS.items()))
    s.add_argument("--target", default=None, help="the arena figures of TFLM built for this Cortex-M core "
                                                  "(cortex-m3, -m4, -m7, -m33, -m55)")
    _mcu(s)
    add_kernels(s, what=": the host's kernels, --target's build and the cycle figures")
    add_json(s)


def _mcu(s: argparse.ArgumentParser, default: str | None = "stm32f746", what: str = "for cycles") -> None:
    s.add_argument("--mcu", default=default, help=f"board {what}: stm32f746 (default), apollo3, stm32l4r5, "
                                                  "stm32h7a3, stm32u575, nrf5340, or CORE@CLOCK (cortex-m33@200MHz)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="microinterp", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"microinterp {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("info", help="ops (with their tensors' shapes), tensors, sizes and the kernels a model needs")
    s.add_argument("model")
    add_json(s)
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("plan", help="the arena plan: head, tail, every buffer's offset, size and lifetime")
    s.add_argument("model")
    s.add_argument("--arena", type=_size, default=None, help="arena size in bytes (default: exactly what is needed)")
    add_json(s)
    s.add_argument("--width", type=int, default=64, help="columns of the arena picture")
    add_kernels(s, what=": the host's kernels and --target's build")
    s.add_argument("--planner", "--strategy", dest="planner", default="tflm", choices=(*PLANNERS, "all"),
                   help="; ".join(f"{k}: {v}" for k, v in PLANNERS.items()) + "; all: a table of every planner "
                        "(--strategy is the old name)")
    s.add_argument("--picture", action="store_true", help="with --planner all: the arena over time per planner")
    _mcu(s, what="for the phased cycle cost (--planner all)")
    s.add_argument("--target", default=None, help="the plan of TFLM built for this core (cortex-m3, cortex-m4, "
                                                  "cortex-m7, cortex-m33, cortex-m55, cortex-m85), its scratch buffers included")
    s.set_defaults(fn=cmd_plan)

    s = sub.add_parser("eval", help="a dataset (.npy, samples along the first axis) through invoke_batch: exact "
                                    "outputs, accuracy and confusion matrix with --labels")
    s.add_argument("model")
    s.add_argument("--inputs", required=True, type=input_file, help=".npy with N samples of the (single) input")
    s.add_argument("--labels", default=None, type=input_file, help=".npy with N integer labels")
    s.add_argument("--output", default=None, type=output_file, help="write the first output's N results to this .npy")
    s.add_argument("--batch", type=count_argument(1), default=64)
    s.add_argument("--threads", type=count_argument(1), default=1, help="run the chunks on N threads of this process")
    s.add_argument("--jobs", type=count_argument(1), default=None, help="spread the chunks over N local processes")
    s.add_argument("--ray", nargs="?", const="local", default=None,
                   help="spread the chunks over Ray ('local' starts one, 'auto' or an address joins a cluster)")
    s.add_argument("--quantize", action="store_true",
                   help="quantize float inputs with the model input's scale and zero point (as QUANTIZE does)")
    add_json(s)
    s.set_defaults(fn=cmd_eval)

    s = sub.add_parser("deploy", help="what goes into the firmware: the MicroMutableOpResolver, the arena size for a "
                                      "32-bit target, latency, memory against the part, out-of-core settings; "
                                      "exit 0 when it fits, 1 when it does not, 2 when TFLM cannot run it")
    s.add_argument("model")
    _mcu(s, default=None, what="priced (with --target alone: a board of that core)")
    add_kernels(s, what=": the firmware build and the cycle figures")
    s.add_argument("--target", default=None, help="the core the firmware is built for (cortex-m3, cortex-m4, "
                                                  "cortex-m7, cortex-m33, cortex-m55, cortex-m85); default: the MCU's")
    s.add_argument("--per-op", action="store_true", help="list the cycles of every op")
    add_json(s)
    s.set_defaults(fn=cmd_deploy)

    s = sub.add_parser("report", help="one self-contained HTML page: the headline (RAM, flash, latency, fits), the "
                                      "arena per core and per planner, the graph, per-op cycles and out-of-core "
                                      "traffic, the deploy snippet")
    s.add_argument("model")
    s.add_argument("-o", "--output", type=output_file, default="report.html",
                   help="the HTML file to write (default report.html)")
    s.add_argument("--arena", type=_size, default=512_000,
                   help="arena for the out-of-core columns (a dry run; default 512K)")
    _mcu(s, default=None, what="priced in the headline and the deploy section")
    s.add_argument("--target", default=None, help="the core of the headline's arena (default: the board's)")
    add_json(s)
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("optimize", help="rewrite the model so stock TFLM runs it in a smaller arena, outputs "
                                        "identical (patch-based stages + the optimal offline plan)")
    s.add_argument("model")
    s.add_argument("-o", "--output", type=output_file, required=True, help="the .tflite file to write")
    s.add_argument("--budget", type=float, default=2.0, help="seconds the plan search may take (default 2)")
    s.add_argument("--max-extra-macs", type=percent_argument, default=15.0, metavar="PCT",
                   help="recompute at most PCT %% more MACs than the original (default 15)")
    s.add_argument("--target", type=core_argument, default=None, help="minimise this core's firmware arena (e.g. cortex-m4), not the "
                                                   "wheel's")
    s.add_argument("--plan-only", action="store_true", help="only write the offline plan; do not rewrite the graph")
    s.add_argument("--regroup", type=float, default=0.0, metavar="SECONDS",
                   help="after the search, spend up to SECONDS splitting more convolution chains near the planned "
                        "peak into groups of channels (each try plans the model; default 0: none)")
    _mcu(s, default=None, what="priced for the extra cycles")
    add_json(s)
    s.set_defaults(fn=cmd_optimize)

    s = sub.add_parser("run", help="run a model on .npy / .npz inputs (in memory, out of core, or as a firmware)")
    s.add_argument("model")
    s.add_argument("--input", action="append", type=input_file,
                   help=".npy file for each input, in order, or one .npz with all")
    s.add_argument("--output", action="append", type=output_file, help=".npy file to write each output to")
    _running_options(s)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("analyze", help="per layer W (MOps), Q (MB), N and compute-/IO-bound class for an MCU")
    s.add_argument("model")
    _mcu(s)
    add_kernels(s, what=": S_cpu and the cycle figures")
    add_json(s)
    s.add_argument("--memory", action="store_true", help="also predict the arena on a 32-bit MCU")
    s.set_defaults(fn=cmd_analyze)

    s = sub.add_parser("profile", help="run once (in memory or out of core) and show per-op cycles, SD and flash "
                                       "traffic, checksum cost and host time")
    s.add_argument("model")
    _running_options(s)
    s.add_argument("--seed", type=int, default=0, help="seed of the random input")
    s.add_argument("--dry-run", action="store_true", help="count tiles, traffic and cycles without running kernels")
    s.add_argument("--host-rounds", type=count_argument(0), default=None,
                   help="invokes timed for the host time and interpreter overhead (default 20 in memory, 3 out of "
                        "core; 0 skips)")
    s.add_argument("--no-tiles", action="store_true", help="JSON without the per-tile lists")
    s.set_defaults(fn=cmd_profile)

    s = sub.add_parser("demo", help="build a VGG16-shaped model in-process, run it out of core in 512 KB and check "
                                    "it against an in-memory run")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--small", action="store_true", help="the quick in-memory demo (small CNN, checked against TFLM)")
    s.add_argument("--size", type=count_argument(32), default=224,
                   help="input height and width of the VGG16-shaped model (at least 32)")
    s.add_argument("--arena", type=_size, default=512_000, help="arena bytes for the out-of-core run")
    _mcu(s, what="for the cycle estimates")
    s.add_argument("--workdir", type=output_folder, default=None,
                   help="where to write the demo model (default: a temporary folder)")
    add_json(s)
    s.set_defaults(fn=cmd_demo)

    s = sub.add_parser("listen", help="a 1 s 16 kHz WAV through TFLM's audio front end and micro_speech: the label, "
                                      "the scores and the cycles of each stage (several WAVs: a label each, the "
                                      "clips run together as streams)")
    s.add_argument("wav", nargs="+", type=input_file)
    s.add_argument("--models", type=input_folder, default=None,
                   help="folder with audio_preprocessor_int8.tflite and micro_speech_quantized.tflite")
    s.add_argument("--preprocessor", type=input_file, default=None)
    s.add_argument("--classifier", type=input_file, default=None)
    _mcu(s, what="for the cycle estimates")
    add_json(s)
    s.set_defaults(fn=cmd_listen)

    s = sub.add_parser("lm", help="a TinyStories-class int8 Llama built in-process: greedy generation with a KV "
                                  "cache, plans, cycles per token, out of core")
    s.add_argument("--prompt", type=ids_argument, default=[1, 2, 3, 4, 5],
                   help="comma-separated token ids (default 1,2,3,4,5)")
    s.add_argument("--steps", type=count_argument(1), default=33,
                   help="tokens to generate (default 33: prompt pass + 32 steps)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    s.add_argument("--layers", type=int, default=8)
    s.add_argument("--context", type=int, default=64, help="KV cache rows")
    s.add_argument("--prompt-len", type=int, default=16, help="the prompt model's padded length")
    s.add_argument("--mcu", default="stm32f746,apollo3", help="comma-separated boards (names or CORE@CLOCK specs with their facts, e.g. apollo3,cortex-m7@480MHz,flash_ws=4)")
    add_kernels(s, what=": the cycle figures")
    s.add_argument("--arena", type=_size, default=64_000, help="arena bytes for the out-of-core run (with --backing)")
    s.add_argument("--backing", type=output_file, default=None,
                   help="also generate out of core; images BACKING.prefill/.step")
    s.add_argument("--recover", action="store_true", help="out of core: recompute tiles whose checksum fails")
    s.add_argument("--flash", type=_size, default=None, help="flash budget for weights out of core")
    s.add_argument("--save", type=output_folder, default=None,
                   help="write tiny_llama_prefill.tflite and tiny_llama_step.tflite here")
    s.add_argument("--profile", action="store_true", help="also print the per-op profile of one step")
    add_json(s)
    s.set_defaults(fn=cmd_lm)

    add_schedule_parsers(sub, _size)  # schedule, sweep
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 success, 1 a microinterp error (bad model, unsupported ops, arena too small, wrong input;
    ``deploy`` has its own, see its help), 2 a usage error, 3 an internal error (a bug: the message asks for a
    report; ``MICROINTERP_DEBUG=1`` shows the traceback), 130 interrupted."""
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except MicroInterpError as e:
        print(f"microinterp {args.command}: {type(e).__name__}: {cli_hint(str(e))}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `microinterp plan MODEL | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"microinterp {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if os.environ.get("MICROINTERP_DEBUG"):
            raise
        print(f"microinterp {args.command}: internal error ({type(e).__name__}: {e}); this is a bug in "
              "microinterp -- please report it with the command that caused it (MICROINTERP_DEBUG=1 shows the "
              "traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
