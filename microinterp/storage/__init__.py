"""Storage under the out-of-core pager: the file-backed SD image and tile checksums.

- :mod:`microinterp.storage.base`: the seam, :class:`~.base.Backing` (what ``backing=`` may be besides a path) and
  :class:`~.base.Image` (what the pager reads and writes), which every backend implements;
- :mod:`microinterp.storage.format`: the SD image's on-disk format, a block device of 512-byte sectors on a file
  (header, checksum table, weights area, activations area), its geometry, records and digests;
- :mod:`microinterp.storage.sd`: :class:`SdImage`, the file IO: crash-safe creation and reuse, verified tile IO, IO
  counters;
- :mod:`microinterp.storage.null`: :class:`NullStorage`, a backing that stores nothing (dry runs);
- :mod:`microinterp.storage.checksum`: :func:`get_checksum` (crc32, blake2b, blake2b-64, xxh3 with the optional
  ``xxhash`` package).
"""

from .checksum import CHECKSUM_NAMES, DEFAULT_CHECKSUM, Checksum, get_checksum
from .format import SECTOR_SIZE, AreaStats, Geometry, SdStats
from .sd import SdImage

__all__ = [
    "CHECKSUM_NAMES",
    "DEFAULT_CHECKSUM",
    "SECTOR_SIZE",
    "AreaStats",
    "Checksum",
    "Geometry",
    "SdImage",
    "SdStats",
    "get_checksum",
]
