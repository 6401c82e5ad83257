"""Out-of-core execution: tensors and weights on a file-backed SD image, tiles through the arena's pools.

:class:`Pager` builds the state (homes, pools, tiles, image) and runs invokes; its per-op and per-tile records
(``Interpreter.profile``) are the runtimes' common ones (:mod:`microinterp.runtime.profile`), re-exported here.
"""

from ..runtime.profile import SCHEMA, OpRecord, TileRecord, format_table, profile_json
from .pager import DEFAULT_POOLS, Pager

__all__ = ["DEFAULT_POOLS", "SCHEMA", "OpRecord", "Pager", "TileRecord", "format_table", "profile_json"]
