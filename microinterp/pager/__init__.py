"""Out-of-core execution: tensors and weights on a file-backed SD image, tiles through the arena's pools.

:class:`Pager` builds the state (homes, pools, tiles, image) and runs invokes; :mod:`.profile` holds the per-op and
per-tile records (``Interpreter.profile``).
"""

from .pager import DEFAULT_POOLS, Pager
from .profile import SCHEMA, OpRecord, TileRecord, format_table, profile_json

__all__ = ["DEFAULT_POOLS", "SCHEMA", "OpRecord", "Pager", "TileRecord", "format_table", "profile_json"]
