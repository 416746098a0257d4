"""What the fixers share: the fixer base class and context, code generation, and the proofs they rest on
(branches, masks, purity, tensor flow), and the cut of a function in two (split)."""
