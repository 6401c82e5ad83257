"""Patch-based inference for stock TFLM (MCUNetV2's idea, written as a model TFLM runs unchanged).

:mod:`.pads` folds a PyTorch export's explicit ``PAD`` into the convolution after it (``SAME`` padding, identical
outputs); :mod:`.regions` says which part of each input an op reads for a part of its output; :mod:`.stage` finds the runs
of ops that can be computed patch by patch; :mod:`.emit` writes a model with one such stage cut into a grid of
patches (``STRIDED_SLICE`` halos, border padding as the original, ``CONCATENATION`` joins); :mod:`.search` picks
the stages and grids that lower the whole arena. :func:`microinterp.apps.optimize.rewrite` runs them and writes the
offline plan; ``docs/optimize.md`` explains the method and its measured gains.
"""
