"""The engine: runs the analysis and the rules over files and projects, fixes, caches and worker pools.
Above the rules and fixers, below the adapters."""
