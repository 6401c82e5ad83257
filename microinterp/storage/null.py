"""A backing that stores nothing: out of core without an SD image, for dry runs.

``Interpreter(model, arena=..., backing=NullStorage())`` plans and tiles exactly as with an SD image and
:meth:`~microinterp.interpreter.Interpreter.simulate` counts every tile's traffic and cycles, but no byte is written
anywhere (``microinterp profile --dry-run``). Reading a tile back is impossible: :meth:`NullImage.read_run` raises
a :class:`~microinterp.errors.StorageError` that says to pass ``backing='sd.img'`` to run the model.
"""

from __future__ import annotations

from typing import Any

from ..errors import StorageError
from .checksum import DEFAULT_CHECKSUM, get_checksum


class NullImage:
    """The image :class:`NullStorage` opens: the SD image's interface, holding nothing."""

    path = "(none: dry run)"
    action = "dry run (nothing written)"

    def __init__(self, weights_bytes: int, checksum: str, encrypted: bool):
        self.weights_bytes = weights_bytes
        self.checksum = get_checksum(checksum)
        self.encrypted = encrypted

    @property
    def weights_ready(self) -> bool:
        """Always: there is nothing to write."""
        return True

    def write_run(self, area: str, offset: int, run: Any, data: Any) -> None:
        """Discards ``data`` (an input written before a dry run)."""

    def read_run(self, area: str, offset: int, run: Any, out: Any) -> None:
        raise StorageError("this interpreter's backing stores nothing (a dry run): simulate() counts its traffic and "
                           "cycles; pass backing='sd.img' to invoke it")

    def repair_weights(self, *args: Any, **kwargs: Any) -> None:
        self.read_run("weights", 0, None, None)

    def commit_weights(self) -> None:
        """Nothing to commit."""

    def close(self) -> None:
        """Nothing to release."""


class NullStorage:
    """``backing=NullStorage()``: out of core with no SD image (see the module)."""

    def open(self, *, fingerprint: str, weights_bytes: int, activation_bytes: int, table_entries: int,
             checksum: str = DEFAULT_CHECKSUM, key: Any = None) -> NullImage:
        return NullImage(weights_bytes, checksum, key is not None)

    def __repr__(self) -> str:
        return "NullStorage()"
