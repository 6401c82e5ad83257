"""Band machinery: running an op, a chain or a tree of ops in pieces (row bands, channel groups), shared by the
out-of-core pager (:mod:`microinterp.pager`) and the phased planner's runtime.

* :mod:`.tiling` -- which tiler runs an op (the kernel's declaration, :mod:`microinterp.kernels.bands`, plus what
  holds for every op), row geometry;
* :mod:`.op_plan` -- one op with its kernel, OpData, tiler and tiles;
* :mod:`.chains` -- chains and trees of row-band ops, their bands and line buffers;
* :mod:`.phases` -- the in-memory runtime of phased segments (``planner='phased'``).
"""
