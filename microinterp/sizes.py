"""Byte counts as people write them: ``512000``, ``512K``, ``2M``, ``1.5MB`` (K = 1024), for the API and the CLI."""

from __future__ import annotations

import argparse
from typing import Any

from .errors import ConfigError

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(value: Any, what: str = "size") -> int:
    """An int, or a string with an optional K/M/G suffix (powers of 1024, a trailing B allowed); ConfigError when
    it is neither or negative, saying what is accepted."""
    if isinstance(value, bool):
        raise ConfigError(f"{what} must be a byte count, got {value!r}")
    if isinstance(value, int) or (hasattr(value, "__index__") and not isinstance(value, str)):
        n = int(value)
    elif isinstance(value, str):
        t = value.strip().upper().removesuffix("B")
        mult = 1
        if t and t[-1] in _UNITS:
            mult, t = _UNITS[t[-1]], t[:-1]
        try:
            n = int(float(t) * mult)
        except ValueError:
            raise ConfigError(f"{what} {value!r} is not a byte count: write 512000, '512K' or '2M' "
                              "(K = 1024)") from None
    else:
        raise ConfigError(f"{what} must be a byte count such as 512000 or '512K', got {type(value).__name__}")
    if n < 0:
        raise ConfigError(f"{what} must be >= 0, got {value!r}")
    return n


def size_argument(text: str, what: str = "size") -> int:
    """:func:`parse_size` as an argparse ``type``: the CLIs' byte-count options (an ArgumentTypeError, which argparse
    prints with the option's name, instead of ConfigError)."""
    try:
        return parse_size(text, what)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
