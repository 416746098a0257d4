"""Measurement with real Dynamo (``dynalint verify``); torch is imported only in worker processes."""
