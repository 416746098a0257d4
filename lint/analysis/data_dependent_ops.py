"""The aten ops whose result depends on tensor data (generated from torch 2.13.0
by ``python -m dynalint.verify.data_dependent_ops_table``; do not edit).

``DYNAMIC_OUTPUT_SHAPE``: op -> whether ``capture_dynamic_output_shape_ops`` keeps it in the
graph (False: the fake tensor has no kernel that makes an unbacked size, and Dynamo breaks
whatever the flag). ``DATA_DEPENDENT_OUTPUT``: ops that return a Python value read from data.
Ops that decompose into others first are not listed.
"""

DYNAMIC_OUTPUT_SHAPE: dict[str, bool] = {
    '_ctc_loss': False,
    '_unique': True,
    '_unique2': True,
    'bincount': True,
    'index': True,
    'linalg_lstsq': False,
    'masked_select': True,
    'nonzero': True,
    'repeat_interleave': True,
    'unique_consecutive': True,
    'unique_dim': True,
    'unique_dim_consecutive': False,
}

DATA_DEPENDENT_OUTPUT: frozenset[str] = frozenset({
    '_local_scalar_dense',
    'allclose',
    'equal',
})
