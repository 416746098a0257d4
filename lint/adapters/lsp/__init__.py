"""The language server: the ``lsp`` command, the protocol transport, documents, analysis processes and
code actions."""
