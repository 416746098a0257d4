"""What the analysis knows about torch's API surface: which calls and attributes
produce tensors, sizes, data-dependent scalars or plain Python values.

These tables describe *types*, not graph breaks; what breaks is decided in
:mod:`dynalint.analysis.breaks`.
"""
from __future__ import annotations

from dynalint.analysis.data_dependent_ops import DATA_DEPENDENT_OUTPUT

# --- Tensor methods -----------------------------------------------------------

#: Methods returning Python values that do not depend on tensor data (guarded metadata).
SIZE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "stride", "element_size",
                          "storage_offset", "__len__"})
SIZE_ATTRS = frozenset({"shape", "ndim"})
#: Those of them that give a tensor's number of dimensions.
RANK_READS = frozenset({"dim", "ndimension", "ndim"})

#: Attributes/methods returning plain Python metadata (never a graph value).
PYTHON_ATTRS = frozenset({
    "dtype", "device", "layout", "is_cuda", "is_cpu", "is_mps", "is_xpu", "is_sparse", "is_quantized",
    "is_meta", "requires_grad", "is_leaf", "names", "is_nested", "itemsize", "nbytes", "is_mkldnn",
    "output_nr", "_version", "grad_fn",
})
PYTHON_METHODS = frozenset({
    "is_floating_point", "is_complex", "is_contiguous", "is_signed", "data_ptr", "get_device", "is_pinned",
    "is_set_to", "is_shared", "is_inference", "dim_order", "untyped_storage", "storage", "register_hook",
    "type",
})

#: Methods that move tensor *data* into Python (the value depends on the data).
SCALAR_METHODS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__"})

#: torch ops that return a Python value read from tensor data (``torch.equal``, ``t.allclose(u)``),
#: by Python name, from torch's ``data_dependent_output`` op tag: Dynamo breaks on them whatever the
#: capture settings.
DATA_READING_OPS = frozenset(op.lstrip("_") for op in DATA_DEPENDENT_OUTPUT)


def aten_name(qualname: str) -> str | None:
    """The aten op name a torch function is spelt as (``torch.linalg.lstsq`` -> ``linalg_lstsq``),
    or None for a name outside ``torch``, ``torch.linalg`` and ``torch.nn.functional``."""
    module, _, last = qualname.rpartition(".")
    if module == "torch.linalg":
        return f"linalg_{last}"
    return last if module in ("torch", "torch.nn.functional") else None


#: torch's checks of a boolean tensor: they read ``cond._is_all_true().item()`` on the host
#: (and raise TypeError for anything but a bool tensor, so the argument is a tensor).
TENSOR_CHECKS = frozenset({"torch._check_tensor_all", "torch._check_tensor_all_with"})

#: Reductions of a boolean array to one element (tensors and NumPy arrays alike).
ARRAY_REDUCTIONS = frozenset({"all", "any"})
#: Methods that move an array's data into Python values, which only tensors and NumPy arrays (and NumPy's
#: scalars) have among the values code passes around: Dynamo holds an array as a tensor, so the call reads
#: tensor data (measured on torch 2.13: ``a.tolist()`` breaks for an array argument, one made in the compiled
#: code, a module's attribute or a global; a global NumPy integer scalar is a constant).
ARRAY_EXTRACTIONS = frozenset({"item", "tolist"})
#: Methods with a data-dependent output size that only tensors and NumPy arrays have among the values code
#: passes around (an array is held as a tensor): the call is a dynamic-shape op on a tensor wherever it runs
#: (measured on torch 2.13: ``batch["labels"].nonzero()`` and ``.unique()`` of a dict argument's entries break),
#: with the most positional arguments the tensor method takes: a call with more is a module's function
#: (``lib.bincount(x)`` with ``lib`` NumPy or torch).
ARRAY_DYNAMIC_SHAPE_METHODS = {"nonzero": 0, "argwhere": 0, "unique": 0, "unique_consecutive": 0, "bincount": 0,
                               "masked_select": 1}


def marks_array_receiver(method: str, positional: int) -> bool:
    """Whether calling ``method`` with ``positional`` positional arguments on a value the analysis could not
    type makes it a tensor (or an array, which Dynamo holds as one) where the call runs: a method that moves
    an array's data into Python (:data:`ARRAY_EXTRACTIONS`), one of data-dependent size called as a tensor's
    (:data:`ARRAY_DYNAMIC_SHAPE_METHODS`), or ``backward`` (``loss.backward()`` of a loss a module or a
    gradient scaler returned), which no other value code passes around has."""
    if method in ARRAY_EXTRACTIONS or method == "backward":
        return True
    return positional <= ARRAY_DYNAMIC_SHAPE_METHODS.get(method, -1)


#: Tensor attributes that are tensors.
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})

#: Tensor methods returning one tensor.  (Names ending in ``_`` are in-place and return self.)
TENSOR_METHODS = frozenset("""
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin angle any
arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort argwhere as_strided asin asinh
atan atan2 atanh baddbmm bernoulli bfloat16 bincount bitwise_and bitwise_not bitwise_or bitwise_xor bmm
bool broadcast_to byte cauchy_ ceil char cholesky clamp clamp_max clamp_min clip clone conj contiguous copy_
cos cosh count_nonzero cpu cross cuda cummax cummin cumprod cumsum deg2rad detach diag diag_embed diagonal
diff digamma dist div divide dot double eq erf erfc erfinv exp exp2 expand expand_as expm1 exponential_
fill_ fill_diagonal_ fix flatten flip fliplr flipud float float_power floor floor_divide fmax fmin fmod frac
gather gcd ge geometric_ ger greater greater_equal gt half hardshrink heaviside histc hypot i0 index_add
index_copy index_fill index_put index_select inner int inverse isclose isfinite isinf isnan isneginf
isposinf isreal kron lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 log_normal_ log_softmax
logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor logit logsumexp long lt
masked_fill masked_scatter masked_select matmul matrix_exp matrix_power maximum mean median minimum mm mode
moveaxis movedim msort mul multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile
nansum narrow narrow_copy ne neg negative new new_empty new_full new_ones new_tensor new_zeros nextafter
nonzero norm normal_ not_equal outer permute pin_memory pinverse polygamma positive pow prod quantile
rad2deg random_ ravel reciprocal relu remainder renorm repeat repeat_interleave requires_grad_ reshape
reshape_as resize_ resize_as_ retain_grad roll rot90 round rsqrt scatter scatter_add scatter_reduce
select select_scatter sgn short sigmoid sign signbit sin sinc sinh slice_scatter smm softmax sqrt square
squeeze std sub subtract sum sum_to_size swapaxes swapdims t take take_along_dim tan tanh tensor_split
tile to trace transpose triangular_solve tril triu true_divide trunc type_as unflatten unfold uniform_
unique unique_consecutive unsqueeze values var vdot view view_as where xlogy zero_ logdet det
absolute_ abs_ add_ addcdiv_ addcmul_ clamp_ div_ exp_ fill_ index_add_ index_copy_ index_fill_ index_put_
masked_fill_ masked_scatter_ mul_ neg_ pow_ relu_ scatter_ scatter_add_ sigmoid_ sqrt_ sub_ tanh_
uniform_ zero_ normal_ clamp_min_ clamp_max_ copy_ detach_ squeeze_ unsqueeze_ t_ transpose_ resize_
sort topk max min kthvalue aminmax split chunk unbind hsplit vsplit dsplit sum nanmean float16
to_dense to_sparse coalesce indices crow_indices col_indices sign_ floor_ ceil_ round_ trunc_ frac_
lerp_ logical_not_ log_ log1p_ exp2_ erf_ sin_ cos_ bitwise_and_ bitwise_or_ remainder_ fmod_
""".split())

#: Methods/functions that return several tensors (a tuple or a named tuple).
#: ``max``/``min``/``median``/``mode`` only do when given a dimension.
MULTI_OUTPUT = frozenset({"sort", "topk", "kthvalue", "aminmax", "split", "chunk", "unbind", "tensor_split",
                          "hsplit", "vsplit", "dsplit", "meshgrid", "broadcast_tensors", "std_mean",
                          "var_mean", "frexp", "cummax", "cummin", "slogdet", "histogram", "lu", "qr",
                          "svd", "eig", "eigh", "lstsq", "atleast_1d_multi"})
MULTI_OUTPUT_WITH_DIM = frozenset({"max", "min", "median", "mode", "nanmedian"})
#: ``unique``-style: a tuple only when one of these keyword arguments is true.
MULTI_OUTPUT_FLAGS = frozenset({"return_inverse", "return_counts", "as_tuple", "return_indices"})

#: Keyword arguments only torch (not NumPy, not Python) uses: a method called with
#: one of them is a tensor method.
TORCH_ONLY_KWARGS = frozenset({"dim", "keepdim"})

#: Tensor methods no Python number, container, string, NumPy array or ``nn.Module`` has: whatever the
#: analysis could not follow, a receiver of one of them is a tensor (``labels.unsqueeze(1)``).
TENSOR_ONLY_METHODS = frozenset("""
unsqueeze unsqueeze_ masked_fill masked_fill_ masked_select masked_scatter detach permute contiguous
clamp clamp_ clamp_min clamp_max abs sigmoid softmax log_softmax long bool new_zeros new_ones new_full
new_empty new_tensor expand_as view_as reshape_as type_as isnan isinf isfinite logical_not logical_and
logical_or index_select repeat_interleave rsqrt
""".split())

# --- torch.* functions ---------------------------------------------------------

#: ``torch.<name>`` constants that are dtypes, layouts and memory formats (Python values Dynamo guards on by
#: equality), with the dtype each alias names (``torch.double`` is ``torch.float64``)
TORCH_DTYPE_NAMES = frozenset({
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8", "int16", "int32",
    "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
    "float8_e4m3fn", "float8_e5m2", "qint8", "quint8", "strided", "sparse_coo", "contiguous_format",
    "channels_last", "preserve_format",
})
TORCH_DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                       "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
#: ``torch.<name>`` callables that do not return tensors.
TORCH_PYTHON_FUNCS = frozenset({
    "is_tensor", "is_storage", "is_floating_point", "is_complex", "get_default_dtype", "set_default_dtype",
    "is_grad_enabled", "is_inference_mode_enabled", "set_grad_enabled", "no_grad", "enable_grad",
    "inference_mode", "autocast", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "compile", "device", "dtype",
    "finfo", "iinfo", "Generator", "typename", "is_autocast_enabled", "get_autocast_dtype",
    "set_printoptions", "save", "load", "result_type", "promote_types", "can_cast", "is_same_size",
    "is_anomaly_enabled", "get_num_threads", "set_num_threads", "_assert", "_check", "_check_is_size",
    "_check_with", "_assert_async", "get_device_module", "is_deterministic_algorithms_warn_only_enabled",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "is_warn_always_enabled",
})
#: torch functions creating tensors from sizes and numbers (their arguments are not tensors).
TORCH_CREATION_FUNCS = frozenset({
    "arange", "range", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "tensor",
    "as_tensor", "asarray", "scalar_tensor", "linspace", "logspace", "eye", "tril_indices", "triu_indices",
    "empty_strided", "kaiser_window", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
    "from_numpy", "frombuffer", "normal", "poisson", "manual_seed", "get_rng_state", "quantize_per_tensor",
})


def makes_tensor_from_sizes(qualname: str | None) -> bool:
    """``qualname`` is a torch function that makes a tensor from sizes and numbers (``torch.ones``): Dynamo
    guards the tensor it returns on its type and sizes, not its values (``manual_seed`` makes a generator)."""
    return qualname is not None and qualname.startswith("torch.") and qualname[6:] in TORCH_CREATION_FUNCS \
        and qualname[6:] != "manual_seed"


def returns_tensor(qualname: str | None) -> bool:
    """``qualname`` is a function of ``torch`` or of its tensor submodules (``F.one_hot``, ``torch.fft.rfft``)
    that returns a tensor or several, never ``None`` nor a Python value: not one of
    :data:`TORCH_PYTHON_FUNCS`, the size functions, the ops that read data into Python (``torch.equal``) or
    a class."""
    if qualname is None:
        return False
    module, _, last = qualname.rpartition(".")
    return (module == "torch" or module in TORCH_TENSOR_SUBMODULES) and last[:1].islower() \
        and last not in TORCH_PYTHON_FUNCS and last not in TORCH_SIZE_FUNCS and last not in DATA_READING_OPS


#: torch functions whose first two positional arguments are tensors.
TORCH_TWO_TENSOR_FUNCS = frozenset({
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_similarity", "pairwise_distance", "matmul", "mm", "bmm", "mv", "dot", "outer", "linear", "bilinear",
    "embedding", "maximum", "minimum", "atan2", "cdist", "einsum_pair", "masked_select", "isin",
})
TORCH_SIZE_FUNCS = frozenset({"numel", "broadcast_shapes", "Size", "sym_int", "sym_float", "sym_max",
                              "sym_min", "sym_not", "sym_ite"})
#: Submodules of torch whose functions return tensors.
TORCH_TENSOR_SUBMODULES = frozenset({"torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                                     "torch.nn.init", "torch.sparse", "torch.masked", "torch.ops.aten"})
#: Functions of ``torch.nn.utils`` that Dynamo traces and that return a tensor (a norm of the gradients, the
#: parameters as one vector; measured on torch 2.13: ``if clip_grad_norm_(ps, 1.0) > 100:`` breaks at the test), and
#: ``nn.Transformer.generate_square_subsequent_mask``, a float mask.
TENSOR_RESULT_UTILS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.get_total_norm",
    "torch.nn.utils.clip_grad.get_total_norm", "torch.nn.utils.parameters_to_vector",
    "torch.nn.utils.convert_parameters.parameters_to_vector", "torch.nn.Transformer.generate_square_subsequent_mask"})
#: ``functional_call(module, params, args)``: the module's ``forward`` run on ``args`` with other tensors.
FUNCTIONAL_CALLS = frozenset({"torch.func.functional_call", "torch.nn.utils.stateless.functional_call"})
#: torch.func transforms of a function: each returns a function whose results are tensors (gradients,
#: Jacobians, the batched outputs; with ``has_aux`` a pair of those and the function's auxiliary output).
FUNCTION_TRANSFORMS = frozenset({
    *(f"torch.func.{name}" for name in ("grad", "grad_and_value", "vmap", "jacrev", "jacfwd", "hessian")),
    "torch.vmap",
})
#: Names in torch.nn that are tensors, not modules.
NN_TENSOR_CLASSES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
NN_CONTAINER_CLASSES = frozenset({"ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
#: nn modules whose forward returns several tensors.
NN_MULTI_OUTPUT_CLASSES = frozenset({"LSTM", "GRU", "RNN", "MultiheadAttention", "LSTMCell",
                                     "AdaptiveLogSoftmaxWithLoss"})

#: Recurrent modules Dynamo does not trace (their cuDNN/flat-weight kernels): calling one breaks.
NN_RNN_CLASSES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN", "torch.nn.RNNBase"})

#: ``nn.Module`` methods that register a hook: each returns a ``torch.utils.hooks.RemovableHandle``,
#: whose constructor bumps a class-level counter Dynamo cannot set (measured on torch 2.13).
#: (``Tensor.register_hook`` is traced and is not here.)
MODULE_HOOK_METHODS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook", "register_state_dict_pre_hook",
    "register_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook",
})
#: ``nn.Module`` methods and attributes whose code never calls the module (its ``forward``): a use of an
#: instance through one of them (``opt = SGD(model.parameters())``, ``model.eval()``) is no call of it.
MODULE_API_NOT_CALLING = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules", "state_dict", "load_state_dict", "eval", "train", "training", "to", "cpu", "cuda",
    "half", "float", "double", "bfloat16", "requires_grad_", "zero_grad", "register_buffer",
    "register_parameter", "register_module", "add_module", "get_submodule", "get_parameter", "get_buffer",
    "extra_repr", "type", "share_memory", *MODULE_HOOK_METHODS,
})
#: ``nn.Module`` methods that visit every submodule: called in compiled code on a module holding an LSTM, GRU
#: or RNN (at any depth), each breaks there, as Dynamo meets the recurrent module ("Attempted to wrap RNN,
#: GRU, or LSTM", measured on torch 2.13 for each of these on a module with an ``nn.LSTM`` attribute).
CHILD_WALKING_MODULE_METHODS = frozenset({
    "train", "eval", "modules", "named_modules", "children", "named_children", "parameters",
    "named_parameters", "buffers", "named_buffers", "zero_grad", "requires_grad_", "apply", "state_dict",
})
#: those of them that return a generator: a break while it is stepped leaves Dynamo a generator it cannot
#: rebuild to resume ("Generator reconstruction with mutations"), so the rest of the function runs eagerly;
#: after the others (``model.train()``) the function resumes
GENERATING_MODULE_METHODS = frozenset({
    "modules", "named_modules", "children", "named_children", "parameters", "named_parameters", "buffers",
    "named_buffers",
})
#: Registrations of hooks that run inside the module's call, so Dynamo traces them with ``forward`` when the
#: module is compiled (a hook registered before the compile; measured on torch 2.13), each taking the hook
#: first or as ``hook=`` (the global ``register_module_*`` variants run around every module's call).
FORWARD_HOOK_REGISTRATIONS = frozenset({"register_forward_hook", "register_forward_pre_hook",
                                        "register_module_forward_hook", "register_module_forward_pre_hook"})
#: Registrations of a module's backward hooks: a call of the module in compiled code breaks (measured on torch
#: 2.13, under no_grad too: Dynamo needs compiled autograd for them).
BACKWARD_HOOK_REGISTRATIONS = frozenset({"register_full_backward_hook", "register_full_backward_pre_hook"})
#: ``torch.Tensor`` methods that take arguments (so the generated table, which probes methods called with
#: none, leaves them out) and that Dynamo breaks on whatever the arguments, measured on torch 2.13: it has
#: no rule for resizing a tensor's storage or pointing it at another's (``set_``), and cannot put the Python
#: function ``apply_`` runs in a graph.
#: Values are the graph-break type texts (``dynalint.core.gb_types``).
ARGUMENT_TENSOR_METHODS: dict[str, str] = {
    "resize_": "Unsupported Tensor.resize_() call",
    "resize_as_": "Unsupported Tensor.resize_as_() call",
    "apply_": "Failed to convert args/kwargs to proxy",
    "set_": "Unsupported function call (delayed)",
    "random_": "Tensor.random_ op",  # with bounds (`random_(1, n)`), as without
}
#: Other ``nn.Module`` methods Dynamo breaks on (measured on torch 2.13 by compiling each call on a
#: small module; ``state_dict``, ``parameters``, ``named_modules``, ``apply``, ``to``, ``train``/``eval``
#: and ``zero_grad`` are traced) -> the graph-break type Dynamo reports.  ``load_state_dict`` asks
#: ``torch.nn.parameter.is_lazy`` of every tensor, a torch function returning a bool; ``share_memory``
#: calls ``Tensor.share_memory_``, which Dynamo does not handle.
BREAKING_MODULE_METHODS: dict[str, str] = {
    "load_state_dict": "torch.* op returned non-Tensor",
    "share_memory": "Unhandled args for method",
}
#: The global variants in ``torch.nn.modules.module``.
GLOBAL_MODULE_HOOK_FUNCS = frozenset({
    "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook", "register_module_backward_hook",
    "register_module_buffer_registration_hook", "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
})

#: Calls that tell, at trace time, whether the code runs under torch.compile.
COMPILING_TRUE_SUFFIXES = ("is_torchdynamo_compiling", "is_compiling", "is_dynamo_compiling")
#: Functions of torch (any submodule) that are false under torch.compile: TorchScript, the JIT
#: tracer, FX symbolic tracing, ONNX and torch.export are other ways of capturing code, never on
#: while Dynamo traces it.  ``_get_tracing_state`` returns None there.
COMPILING_FALSE_TORCH_FUNCS = frozenset({
    "is_scripting", "is_tracing", "is_fx_tracing", "is_fx_symbolic_tracing", "is_in_onnx_export",
    "is_exporting", "is_torchdynamo_exporting",
})
COMPILING_NONE_TORCH_FUNCS = frozenset({"_get_tracing_state"})
#: The same tests, when wrapped by other libraries (judged by name only when the name says exactly this).
COMPILING_FALSE_NAMES = frozenset({"is_torchdynamo_exporting", "is_exporting"})

#: Annotations naming tensors / plain Python types.
TENSOR_ANNOTATIONS = frozenset({"Tensor", "torch.Tensor", "FloatTensor", "LongTensor", "BoolTensor",
                                "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor",
                                "torch.nn.Parameter", "Parameter", "nn.Parameter", "torch.IntTensor"})
PYTHON_ANNOTATIONS = frozenset({"bool", "int", "float", "str", "None", "complex", "bytes",
                                "torch.dtype", "torch.device", "dtype", "device"})

#: Python builtins whose result is a plain Python value whatever the argument.
PYTHON_BUILTINS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "id", "type", "repr",
                             "hash", "getattr", "setattr", "dir", "vars", "globals", "locals", "iter",
                             "next", "chr", "ord", "format", "print", "open", "super", "object"})

#: Methods of str/bytes/list/dict/set/tuple that show a parameter is not a tensor: the public methods of
#: those types that neither ``torch.Tensor`` nor ``numpy.ndarray`` (traced as a tensor) has (torch 2.13,
#: NumPy 2; the test suite checks the names against the installed ones).
CONTAINER_METHODS = frozenset("""
append capitalize casefold center clear count decode difference difference_update discard encode endswith
expandtabs extend find format format_map fromkeys get insert intersection intersection_update isalnum isalpha
isascii isdecimal isdigit isdisjoint isidentifier islower isnumeric isprintable isspace issubset issuperset
istitle isupper items join keys ljust lower lstrip maketrans pop popitem remove removeprefix removesuffix
replace reverse rfind rindex rjust rpartition rsplit rstrip setdefault splitlines startswith strip swapcase
symmetric_difference symmetric_difference_update title translate union update upper zfill
""".split())
#: Python calls Dynamo skips that return a new number each call (measured on torch 2.13: the frame
#: resumed after the break guards on the number and recompiles when it first changes).
SKIPPED_NUMBER_CALLS = frozenset({"random.random", "random.choice", "time.time", "time.perf_counter"})
#: Functions of ``random`` (and methods of ``random.Random``) Dynamo traces: it holds their result as a
#: tensor, and a Python operator on it and a number (``n - w``, ``w * 2``, ``w // 2``) breaks,
#: "unimplemented builtin op on tensor arguments"; with a tensor, ``min``, ``abs`` or a comparison it is
#: traced (measured on torch 2.13 from the graph-break log: at the frame Dynamo compiles, the break makes
#: it run the whole function eagerly and is not counted in ``counters["graph_break"]``).
TRACED_RANDOM_FUNCS = frozenset({"randint", "randrange", "uniform"})

#: torch functions that draw a fresh tensor from the random generator at every call (their aten ops carry
#: torch's ``nondeterministic_seeded`` tag, checked in the tests): a tensor they make is data, not a constant
#: of the graph, and changes from call to call
TORCH_RANDOM_FUNCS = frozenset({"randn", "rand", "randint", "randn_like", "rand_like", "randint_like",
                                "randperm", "normal", "bernoulli", "multinomial"})
#: Methods of a ``random.Random`` instance Dynamo traces (its ``RandomVariable``): ``random()`` too, which the
#: module's function is not (skipped before torch 2.14), and the state methods, which return no number.  Any
#: other method of the instance breaks, "Unsupported method call" (measured on torch 2.13: ``rng.gauss(0, 1)``).
TRACED_RANDOM_METHODS = TRACED_RANDOM_FUNCS | {"random"}
RANDOM_STATE_METHODS = frozenset({"seed", "getstate", "setstate"})


def traced_random_draw(q: str | None) -> bool:
    """``q`` is the qualname of a number ``random`` drew in traced code (``random.randint()``, or
    ``random.Random().random()`` of an instance): one Dynamo holds as a tensor."""
    if not q or not q.endswith("()"):
        return False
    owner, _, name = q[:-2].rpartition(".")
    return (owner == "random" and name in TRACED_RANDOM_FUNCS) \
        or (owner == "random.Random()" and name in TRACED_RANDOM_METHODS)

#: NumPy functions whose result is an array. Dynamo traces NumPy code as tensor code (``torch._numpy``): an
#: array made in compiled code is a tensor of the graph, even one made from Python numbers only
#: (measured on torch 2.13: ``if (np.array([1, 2]) < 0).any():``, ``if not np.isfinite(f):`` of a float
#: argument, ``any(np.array(t) < 0)`` and ``a[a > 0]`` break; ``x[np.arange(4)]`` is traced).
NUMPY_ARRAY_FUNCS = frozenset("""
array asarray asanyarray ascontiguousarray zeros ones empty full zeros_like ones_like empty_like full_like
arange linspace eye identity concatenate stack vstack hstack abs absolute sqrt square exp log log2 log10 sin cos
tan floor ceil round around clip maximum minimum add subtract multiply divide true_divide floor_divide mod
remainder power negative sign cumsum cumprod dot matmul outer transpose reshape squeeze expand_dims flip roll
sort argsort argmax argmin sum prod mean std var max min amax amin isfinite isnan isinf logical_and logical_or
logical_not logical_xor equal not_equal less less_equal greater greater_equal any all
""".split())
#: The functions of ``numpy.linalg`` Dynamo traces as tensor code: those ``torch._numpy.linalg`` defines
#: (torch 2.13); each gives an array.
NUMPY_LINALG_FUNCS = frozenset("""
cholesky cond det eig eigh eigvals eigvalsh inv lstsq matrix_power matrix_rank multi_dot norm pinv qr slogdet
solve svd tensorinv tensorsolve
""".split())
#: those whose result is boolean
NUMPY_BOOL_FUNCS = frozenset("""
isfinite isnan isinf logical_and logical_or logical_not logical_xor equal not_equal less less_equal greater
greater_equal any all
""".split())
#: those that reduce a whole array to a 0-d one when given only the array
NUMPY_REDUCTIONS = frozenset("sum prod mean std var max min amax amin any all argmax argmin".split())
#: The qualname of a tensor value that is a NumPy array (made by NumPy in compiled code, or computed from one).
#: Reading one as a Python number is judged only for a reduction's (``int(np.prod(shape))`` breaks, see
#: ``breaks.scalar_extraction``): for an elementwise function of numbers it depends on the dtype (measured on
#: torch 2.13: ``int(np.ceil(h / 4))`` and ``float(np.log(n))`` are traced, ``int(np.abs(-n))`` and
#: ``int(np.maximum(n, 3))`` break).
NUMPY_ARRAY = "numpy.ndarray"
#: NumPy's random generator classes. Dynamo calls none of an instance's methods (measured on torch 2.13:
#: ``rs.rand()`` of a ``RandomState`` breaks, "Unsupported method call"), so an instance is a value of its own,
#: whose qualname is the class's followed by ``()`` (as if made by calling the class with no argument).
NUMPY_GENERATOR_CLASSES = frozenset({"numpy.random.RandomState", "numpy.random.Generator"})
#: Classes of torch whose files Dynamo skips, so that every method of an instance breaks ("Attempted to inline
#: function marked as skipped", measured on torch 2.13: a scheduler's ``step()``/``get_last_lr()``, a
#: ``GradScaler``'s ``scale()``/``step()``/``update()``/``unscale_()``/``get_scale()``), by qualified name or
#: prefix; an instance's qualname is the class's followed by ``()``.
SKIPPED_TORCH_CLASSES = ("torch.optim.lr_scheduler.", "torch.amp.GradScaler", "torch.amp.grad_scaler.",
                         "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler", "torch.quasirandom.")


def skipped_torch_instance(qualname: str | None) -> bool:
    """An instance of one of :data:`SKIPPED_TORCH_CLASSES` (its qualname, the class's with ``()``)."""
    return qualname is not None and qualname.endswith("()") and qualname[:-2].startswith(SKIPPED_TORCH_CLASSES)


#: The value the functions of ``numpy.random`` are methods of (``np.random.random.__self__``): the global
#: ``RandomState``, whose methods Dynamo does not call either (measured on torch 2.13).
NUMPY_GLOBAL_GENERATOR = "numpy.random.RandomState()"
#: the qualnames of NumPy generator objects (made by a class, or by ``np.random.default_rng``)
NUMPY_GENERATOR_OBJECTS = frozenset({f"{c}()" for c in NUMPY_GENERATOR_CLASSES} | {"numpy.random.default_rng()"})


def joined_numpy_draw(a: str | None, b: str | None) -> str | None:
    """The qualname of a value that is the NumPy draw function ``a`` on one path and ``b`` on another
    (``np.random.randint if rs is None else rs.randint``): a function of ``numpy.random`` is a method of the
    global ``RandomState``, so either is a generator's method, which Dynamo does not call (measured on torch
    2.13: the call breaks with either); None unless both are such functions."""
    draws = [q for q in (a, b) if q is not None and _numpy_draw(q)]
    if len(draws) < 2:
        return None
    return next((q for q in draws if "()." in q), draws[0])


def joined_nn_module(a: str | None, b: str | None) -> str | None:
    """The qualname of a module that is the ``torch.nn`` module ``a`` on one path and ``b`` on another (the
    entries of an ``nn.Sequential(nn.Linear(...), nn.ReLU())``): ``torch.nn.Module`` when calling either gives
    one tensor, so calling the one it is does too; ``torch.nn.RNNBase`` when both are recurrent modules (or
    classes of them); None otherwise."""
    if a in NN_RNN_CLASSES and b in NN_RNN_CLASSES:
        return "torch.nn.RNNBase"  # `nn.LSTM(...) if lstm else nn.GRU(...)`: a recurrent module either way
    return "torch.nn.Module" if _one_tensor_module(a) and _one_tensor_module(b) else None


def _one_tensor_module(q: str | None) -> bool:
    """``q`` is a ``torch.nn`` module class whose call gives one tensor (no container, no tuple of outputs)."""
    head, _, last = (q or "").rpartition(".")
    return head == "torch.nn" and last[:1].isupper() and last not in NN_CONTAINER_CLASSES \
        and last not in NN_MULTI_OUTPUT_CLASSES


def _numpy_draw(q: str) -> bool:
    """``numpy.random.randint``, or ``numpy.random.RandomState().rand``: not a generator class or object."""
    head, _, last = q.rpartition(".")
    if head == "numpy.random":
        return not last.endswith("()") and last not in ("RandomState", "Generator", "default_rng", "__self__")
    return head in NUMPY_GENERATOR_OBJECTS


#: The qualname of the tensor ``torch.sparse_coo_tensor`` makes: Dynamo skips the call, and the frame it resumes
#: in cannot take a sparse tensor as an input (measured on torch 2.13: "Attempted to wrap sparse Tensor" at the
#: first use of it there, after which the rest of the function runs eagerly).
SPARSE_TENSOR = "torch.sparse_coo_tensor()"

#: The qualname of a ``torch.Generator`` (made by the class, or annotated): Dynamo cannot hand one to an op in
#: the graph, and breaks at each of its methods.
TORCH_GENERATOR = "torch.Generator()"
#: What ``t.untyped_storage()`` returns, as a value's qualname: Dynamo traces its ``size()`` and ``resize_()``
#: alone and breaks at its other methods (measured on torch 2.13: ``nbytes()``, ``element_size()``,
#: ``data_ptr()``, "Unsupported method call").
UNTYPED_STORAGE = "torch.UntypedStorage()"
TRACED_STORAGE_METHODS = frozenset({"size", "resize_"})
#: A parameter annotated ``Callable[[...], R]``: calling it gives what ``R`` promises (its ``element``).
ANNOTATED_CALLABLE = "typing.Callable"

#: methods of torch objects that return the object itself (torch's stubs, ``torch/_C/__init__.pyi``:
#: ``Generator.manual_seed(seed) -> Generator``), so ``g = torch.Generator().manual_seed(0)`` is the generator
RETURNS_RECEIVER = frozenset({"torch.Generator().manual_seed"})

#: functions that wrap a function so that Dynamo skips it: calling one inside compiled code is itself
#: skipped, and calling what it returned ends the graph (measured on torch 2.13)
DISABLE_FUNCS = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
#: what ``open(...)`` returns, as a value's qualname (a file object)
OPEN_FILE = "builtins.open()"


def disabled_function(q: str | None) -> bool:
    """``q`` names what ``torch.compiler.disable(fn)`` returned (a function Dynamo skips)."""
    return q is not None and q.endswith("()") and q[:-2] in DISABLE_FUNCS

#: The methods of Python's lists, dicts, sets and deques that change how many elements they hold (or which).
LENGTH_CHANGES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "add", "discard",
                            "update", "setdefault", "popitem", "appendleft", "extendleft", "popleft"})
