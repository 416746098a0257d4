"""The bottom layer: reading and decoding source, positions, diagnostics, noqa comments, safe writes and
processes. It imports nothing else of dynalint."""
