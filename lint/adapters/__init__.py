"""The faces of the engine: the command line (``check``, ``fix``, ``rule``), its reporters (text,
JSON, GitHub, SARIF), the language server and the flake8 plugin.  They resolve settings through
:mod:`dynalint.config.resolver` and call the engine; nothing in the engine imports them."""
