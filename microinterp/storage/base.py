"""The storage seam: what the out-of-core pager needs from the place tensors and weights live.

``backing=`` is a path (an :class:`~.sd.SdImage` opened or created there) or a :class:`Backing`: an object whose
``open`` returns an :class:`Image`. Two implementations ship: the SD image (:mod:`.sd`) and :class:`~.null.NullStorage`
(dry runs, nothing stored); a new backend implements these two protocols and nothing else.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Image(Protocol):
    """An opened store of one model's weights and activations, addressed as runs of records per area."""

    #: where it lives (shown in profiles and errors)
    path: str
    #: what opening it did ("created", "reused", "dry run (nothing written)", ...)
    action: str
    #: the tile checksum (:class:`~.checksum.Checksum`)
    checksum: Any
    #: whether its records are encrypted (AES-GCM)
    encrypted: bool
    weights_bytes: int

    @property
    def weights_ready(self) -> bool:
        """The weights area holds this model's weights already (a reused image)."""

    def write_run(self, area: str, offset: int, run: Any, data: Any) -> None:
        """Write ``data`` as the records of ``run`` at ``offset`` of ``area`` ("weights" or "activations")."""

    def read_run(self, area: str, offset: int, run: Any, out: Any) -> None:
        """Read the records of ``run`` at ``offset`` of ``area`` into ``out``, verified."""

    def repair_weights(self, *args: Any, **kwargs: Any) -> None:
        """Rewrite corrupted weight records from the model (``recover=True``)."""

    def commit_weights(self) -> None:
        """Mark the weights area complete (a crash before this leaves an image that is rebuilt)."""

    def close(self) -> None:
        """Release the file; no IO afterwards."""


@runtime_checkable
class Backing(Protocol):
    """``backing=`` other than a path: opens the :class:`Image` one pager uses."""

    def open(self, *, fingerprint: str, weights_bytes: int, activation_bytes: int, table_entries: int,
             checksum: str = ..., key: Any = None) -> Image: ...


def is_path(backing: Any) -> bool:
    """``backing=`` names a file (an SD image) rather than giving a :class:`Backing`."""
    return isinstance(backing, (str, os.PathLike))
