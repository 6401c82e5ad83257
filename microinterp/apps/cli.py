"""The ``microinterp`` command line: the parser, the options every command that runs a model shares, and ``main``.
The commands are :mod:`.commands_model` (about a model file) and :mod:`.commands_run` (running one); ``schedule``
and ``sweep`` are :mod:`microinterp.schedule.cli`'s.

Every command exits 0 on success, 2 on a usage error and 1 with a one-line message on a microinterp error (bad model,
unsupported ops, arena too small, wrong input).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import MicroInterpError
from ..planner import PLANNERS
from ..sizes import size_argument as _size
from .commands_model import cmd_analyze, cmd_deploy, cmd_info, cmd_optimize, cmd_plan, cmd_report
from .commands_run import cmd_demo, cmd_eval, cmd_listen, cmd_lm, cmd_profile, cmd_run


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
    s.add_argument("--mcu", default=None, help="the board priced: stm32f746 (default), apollo3, stm32l4r5, "
                                               "stm32h7a3, stm32u575, nrf5340, or CORE@CLOCK such as "
                                               "cortex-m33@200MHz; with --target alone, a board of that core")
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
                                      "the scores and the cycles of each stage (several WAVs: a label each, the "
                                      "clips run together as streams)")
    s.add_argument("wav", nargs="+")
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


if __name__ == "__main__":
    sys.exit(main())
