"""Optimized MUL (int8: one gather from the exact 256 x 256 table) against the wheel and the reference kernel;
the cases are in ``binary_edges.edge_tests``."""

from __future__ import annotations

from .binary_edges import edge_tests

test_int8_edges, test_all_pairs, test_large, test_paths, test_strided_output_falls_back = edge_tests("MUL")
