"""Dynamo's graph-break types that diagnostics map to.

Each entry is the ``Gb_type`` text of torch's ``torch/_dynamo/graph_break_registry.json``
with its id; the test suite checks every entry against the installed torch.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphBreakType:
    id: str
    text: str

    def __str__(self) -> str:
        return f"{self.text} ({self.id})"


def _gb(id_: str, text: str) -> GraphBreakType:
    return GraphBreakType(id_, text)


DATA_DEPENDENT_BRANCHING = _gb("GB0170", "Data-dependent branching")
ITEM = _gb("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False")
DATA_DEPENDENT_OPERATOR = _gb("GB0033", "Data dependent operator")
TOLIST_FLOAT = _gb("GB0109", "Tensor.tolist() with non-integer tensor")
DYNAMIC_SHAPE_OPERATOR = _gb("GB0036", "Dynamic shape operator")
BUILTIN_OPERATOR = _gb("GB0059", "Failed to trace builtin operator")
PYTHON_TYPE = _gb("GB4841", "Unsupported python_type() call")
LOGGER_METHOD = _gb("GB0291", "logging.Logger method not supported for non-export cases")
SKIPPED_FUNCTION = _gb("GB0007", "Attempted to call function marked as skipped")
DEEPCOPY_TENSOR = _gb("GB4198", "Attempted to copy.deepcopy a tensor")
NON_TENSOR_OP = _gb("GB0208", "torch.* op returned non-Tensor")
REPR_TENSOR = _gb("GB0569", "repr() on tensor")
EXPLICIT_BREAK = _gb("GB0025", "Call to `torch._dynamo.graph_break()`")
DISABLED_FUNCTION = _gb("GB0098", "Skip calling `torch.compiler.disable()`d function")
REQUIRES_GRAD = _gb("GB8985", "requires_grad_() intermediate leaked as output")
UNSUPPORTED_METHOD = _gb("GB0156", "Unsupported method call")
CONTEXT_MANAGER = _gb("GB0142", "Unsupported context manager")
RNN_MODULE = _gb("GB0014", "Attempted to wrap RNN, GRU, or LSTM")
DATA_POINTER = _gb("GB5976", "Data pointer comparison")
LOOP = _gb("GB7000", "graph break in loop")
UNSUPPORTED_SETATTR = _gb("GB0467", "setattr() on unsupported type")
BACKWARD = _gb("GB0123", "Unsupported Tensor.backward() call")
SKIPPED_INLINE = _gb("GB0008", "Attempted to inline function marked as skipped")
NOT_REORDERABLE = _gb("GB0296", "attempted to reorder a debugging function that can't actually be reordered")
PROXY_ARGUMENTS = _gb("GB0055", "Failed to convert args/kwargs to proxy")
OPAQUE_OBJECT = _gb("GB0363", "An opaque object was created in the middle of the program.")
GENERATOR_METHOD = _gb("GB7650", "torch.Generator method")
CONSTANT_FOLD = _gb("GB0178", "constant fold exception")
RICHCOMPARE = _gb("GB9648", "Missing richcompare_impl override")
UNHANDLED_METHOD_ARGS = _gb("GB0117", "Unhandled args for method")
SORT_NON_CONSTANT_KEYS = _gb("GB0207", "sort with non-constant keys")
DATACLASS_FIELDS = _gb("GB0180", "dataclass fields failure")
BUILD_CLASS = _gb("GB8977", "Invalid call to __build_class__")
TENSOR_BUILTIN_OPERATOR = _gb("GB0213", "unimplemented builtin op on tensor arguments")
AUTOGRAD_GRAD = _gb("GB9186",
                    "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`")
ONE_HOT_DYNAMIC = _gb("GB0246",
                      "Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape")
PARAMETER_CONSTRUCTOR = _gb("GB0264", "Attempted to use `torch.nn.Parameter()` constructor with Dynamo")
RETAIN_GRAD = _gb("GB0108", "Tensor.retain_grad() with AOTDispatcher")
IS_INFERENCE = _gb("GB0045", "Encountered tensor.is_inference() during tracing")
RANDOM_OP = _gb("GB0107", "Tensor.random_ op")
SPARSE_TENSOR = _gb("GB0277", "Attempted to wrap sparse Tensor with VariableTracker")
RESIZE = _gb("GB0126", "Unsupported Tensor.resize_() call")
RESIZE_AS = _gb("GB0127", "Unsupported Tensor.resize_as_() call")
MISSING_TP_ITERNEXT = _gb("GB4347", "Missing tp_iternext")
OBSERVED_EXCEPTION = _gb("GB0088", "Observed exception")
BUILD_STRING_TYPE = _gb("GB0021", "BUILD_STRING type error")
SETATTR_REQUIRES_GRAD = _gb("GB0206", "setattr() on Tensor.requires_grad")
MUTATE_TENSOR_DATA = _gb("GB0056", "Failed to mutate tensor data attribute")
UNSUPPORTED_REQUIRES_GRAD = _gb("GB0125", "Unsupported Tensor.requires_grad_() call")
MODULE_BACKWARD_HOOKS = _gb("GB0083", "Module-level backwards hooks require compiled autograd.")
INFERENCE_MODE_QUERY = _gb("GB0046", "Encountered torch.is_inference_mode_enabled during tracing")
FAKE_TENSOR_UNSUPPORTED = _gb("GB0090", "Operator does not support running with fake tensors")
RECONSTRUCTION_FAILURE = _gb("GB0092", "Reconstruction failure")
NDARRAY_ATTRIBUTE = _gb("GB0157", "Unsupported ndarray attribute access")
NDARRAY_METHOD = _gb("GB0158", "Unsupported ndarray method call")
NUMPY_UNSUPPORTED = _gb("GB0294", "attempted to trace numpy function unsupported by PyTorch")
NUMPY_METHOD = _gb("GB0290", "attempted to trace numpy.* function as a method")
AS_SUBCLASS = _gb("GB0001", "Argument of `as_subclass` must be a non-dispatcher-style tensor subclass")
SUBCLASS_ATTRIBUTE = _gb("GB0164", "Unsupported tensor subclass overridden attribute access")
UNSUPPORTED_FUNCTION = _gb("GB0147", "Unsupported function call")
UNSUPPORTED_DELAYED_CALL = _gb("GB0148", "Unsupported function call (delayed)")
GROUPBY_ARGUMENTS = _gb("GB0134", "Unsupported arguments for itertools.groupby")
CREATION_REQUIRES_GRAD = _gb("GB0225", "Attempted to use tensor creation function with requires_grad=True")
INLINE_BINDING = _gb("GB7312", "failed to bind arguments when attempting to inline")
OPTIONAL_KEYS_TYPED_DICT = _gb("GB0257", "TypedDict with optional keys")
UNINITIALIZED_MODULE = _gb("GB0119", "Uninitialized nn.Module")
BUILTIN_HANDLER_ARGUMENTS = _gb("GB0193", "invalid call to builtin op handler")
SUPER_NOT_FUNCTION = _gb("GB0006", "Attempted to call a super() attribute that is not a function or method")
UNINITIALIZED_CELL = _gb("GB0091", "Read uninitialized cell")
MISSING_TP_ITER = _gb("GB0811", "missing tp_iter")

ALL: tuple[GraphBreakType, ...] = tuple(v for v in list(globals().values()) if isinstance(v, GraphBreakType))
