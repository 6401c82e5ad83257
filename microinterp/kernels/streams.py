"""How a kernel declares that it runs many independent streams at once: the vocabulary :mod:`microinterp.streams` reads.

A stream is one sequence of invokes of a model, with its own state (a clip's windows through an audio front end).
:class:`~microinterp.streams.Streams` runs ``S`` of them in lockstep: every non-constant tensor gets a leading stream
axis, and each op runs once per step for every stream. A kernel says how:

- ``streams = INVOKE``: its own ``invoke`` already computes every stream when each non-constant tensor has the
  leading axis (it reshapes by the last axes, as RESHAPE, CAST and SignalRfft do) and it keeps no state across
  invokes;
- ``streams = BIND``: the same for its ``bind``, which the streams runner calls once on its views (kept buffers: no
  temporaries a step, as SignalWindow, SignalEnergy, SignalPCAN and SignalFilterBank); where ``bind`` declines, its
  ``invoke_streams`` if it has one, else its ``invoke``. An elementwise op (DIV) binds and invokes on the views
  described below for the elementwise ops;
- ``invoke_streams(ctx, op, data, state)``: an explicit version, for kernels that reduce or index along an axis
  (SignalFftAutoScale's peak per stream, STRIDED_SLICE, CONCATENATION) or keep state: ``stream_state(data,
  streams)`` then gives the state of every stream (zeroed as ``reset`` zeroes the single stream's), and
  ``reset_streams(data, state)`` resets it;
- the elementwise ops of :data:`~microinterp.bands.tiling.ELEMENTWISE_OPS`: their ``invoke`` on views of one rank
  more, constants broadcast to every stream (so every operand has the stream axis and the op's own broadcasting
  rules apply within a stream).

Any other op runs stream by stream through the single-stream views when it keeps no state (its kernel has no
``reset`` and it writes no variable tensor): correct, at single-stream speed. A stateful op without a declaration
is refused. Every declaration is checked bit for bit against the streams run one by one (``tests/test_streams.py``).
"""

from __future__ import annotations

#: The kernel's ``invoke`` handles a leading stream axis on every non-constant tensor (see the module docstring).
INVOKE = "invoke"
#: The kernel's ``bind`` does, where it binds; else its ``invoke_streams`` or ``invoke`` (see the module docstring).
BIND = "bind"
