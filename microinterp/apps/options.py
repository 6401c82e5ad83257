"""The command line's one vocabulary: option types and the options several commands share, each with one spelling
and one meaning everywhere.

* ``--arena SIZE`` (``512000``, ``512K``, ``2M``); ``schedule`` and ``sweep`` also accept their old ``--sram``.
* ``--pools A:B:C`` -- the input : weights : output shares of an out-of-core arena (``2,1,1`` is accepted too).
* ``--kernels cmsis-nn|reference`` -- the kernel set: the host's kernels, the firmware build's and the cost model's
  (``optimized`` is another name for ``cmsis-nn``; ``--reference`` is short for ``--kernels reference``).
* Files are checked before any long work starts: an input file must exist, an output file's folder must exist and
  be writable (argparse's usage error, exit 2).
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

KERNEL_CHOICES = ("cmsis-nn", "reference")


def pools_argument(text: str) -> tuple[float, float, float]:
    """``--pools 2:1:1`` (input : weights : output shares of the out-of-core arena; ``2,1,1`` accepted)."""
    try:
        parts = tuple(float(v) for v in text.replace(",", ":").split(":"))
    except ValueError:
        parts = ()
    if len(parts) != 3 or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f"--pools takes three positive shares input:weights:output such as 2:1:1, "
                                         f"got {text!r}")
    return parts  # type: ignore[return-value]


def percent_argument(text: str) -> float:
    """A non-negative percentage (``15``, ``15%``, ``2.5``)."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a percentage such as 15 or 2.5%, got {text!r}")
    return value


def core_argument(text: str) -> str:
    """``--target``: a Cortex-M core microinterp models a firmware build of (cortex-m4, m55, ...)."""
    from ..errors import ConfigError
    from ..targets import get_target

    try:
        get_target(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def kernels_argument(text: str) -> str:
    """``--kernels``: ``cmsis-nn`` or ``reference``, or another name the cost model knows for one of them
    (:data:`microinterp.cost.mcu.KERNEL_ALIASES`: optimized, ref, ...)."""
    from ..cost.mcu import kernel_set
    from ..errors import ConfigError

    try:
        return "cmsis-nn" if kernel_set(text) == "optimized" else "reference"
    except ConfigError:
        raise argparse.ArgumentTypeError(f"unknown kernel set {text!r}; choose {' or '.join(KERNEL_CHOICES)} "
                                         "(optimized is another name for cmsis-nn)") from None


def input_file(text: str) -> str:
    """A file the command reads: it must exist and be a file."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    return text


def input_folder(text: str) -> str:
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    return text


def output_file(text: str) -> str:
    """A file the command writes: its folder must exist and be writable, and it must not be a folder."""
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the folder {folder} does not exist (create it first)")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"the folder {folder} is not writable")
    return text


def output_folder(text: str) -> str:
    """A folder the command writes into: it is created if its parent exists; it must be writable."""
    path = os.path.abspath(text)
    if os.path.exists(path) and not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    if not os.path.isdir(path):
        if not os.path.isdir(os.path.dirname(path)):
            raise argparse.ArgumentTypeError(f"the folder {os.path.dirname(path)} does not exist (create it first)")
    elif not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"the folder {text} is not writable")
    return text


def count_argument(minimum: int) -> Any:
    """An integer option that must be at least ``minimum`` (an argparse ``type``)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {n}")
        return n
    return parse


def ids_argument(text: str) -> list[int]:
    """Comma-separated token ids (``1,2,3``)."""
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated whole numbers such as 1,2,3") from None
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one token id, each >= 0")
    return ids


def sizes_argument(text: str) -> list[int]:
    """Comma-separated byte counts (``512K,1M``)."""
    from ..sizes import size_argument

    sizes = [size_argument(t) for t in text.split(",") if t.strip()]
    if not sizes:
        raise argparse.ArgumentTypeError("give at least one size, e.g. 512K,1M")
    return sizes


def add_kernels(s: argparse.ArgumentParser, default: str = "cmsis-nn", what: str = "") -> None:
    """``--kernels`` and its short form ``--reference``."""
    s.add_argument("--kernels", type=kernels_argument, default=default,
                   help=f"kernel set: cmsis-nn (default{'' if default == 'cmsis-nn' else ' here: ' + default}) or "
                        f"reference{what}")
    s.add_argument("--reference", dest="kernels", action="store_const", const="reference",
                   help="short for --kernels reference")


def add_json(s: argparse.ArgumentParser) -> None:
    s.add_argument("--json", action="store_true", help="machine-readable output")


#: Python keyword arguments in error hints -> the command line's options (the API and the CLI share the messages).
#: A fact inside a board spec (``cortex-m7@480MHz,sram=1M,flash=2M``: after a comma, and a size with a unit) is the
#: spec's own text, not a keyword argument.
_HINTS = (
    (re.compile(r"\bpools=\(([\d.]+), ([\d.]+), ([\d.]+)\)"), r"--pools \1:\2:\3"),
    (re.compile(r"\b(planner|backing|target|kernels|mcu|checksum)='([^']*)'"), r"--\1 \2"),
    (re.compile(r"(?<!,)\b(arena|flash|tile)=(\d+)(?!\w|\.\d)"), r"--\1 \2"),
    (re.compile(r"\b(arena|flash|tile) >= (\d+)"), r"--\1 \2 or more"),
    (re.compile(r"\brecover=True"), "--recover"),
    (re.compile(r"\b(backing|pools|tile|arena|flash|kernels|target)=(?=[\s,;).]|$)"), r"--\1"),
)


def cli_hint(message: str) -> str:
    """``message`` with its Python keyword hints (``planner='phased'``, ``pools=(2, 1, 1)``) written as options."""
    for pattern, repl in _HINTS:
        message = pattern.sub(repl, message)
    return message
