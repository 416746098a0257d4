"""Regenerates :mod:`dynalint.analysis.numpy_calls` from the installed torch and NumPy.

    python -m dynalint.verify.numpy_calls_table > lint/analysis/numpy_calls.py

Dynamo traces NumPy code through ``torch._numpy``: a call of a function of ``numpy``, ``numpy.linalg`` or
``numpy.fft`` is looked up in its map of NumPy functions to ``torch._numpy`` ones
(``torch._dynamo.variables.misc.get_np_to_tnp_map``), and an array it holds is a tensor whose attributes
and methods are those of ``torch._numpy.ndarray``. What it cannot trace is measured here, each entry by
compiling a tiny function with ``fullgraph=True`` (at a break Dynamo raises instead of running the call):

- a NumPy function called with no argument breaks when Dynamo refuses the function itself (it is not in
  the map, or NumPy's own Python code is skipped): the refusal comes before the arguments are looked at,
  so any call of it breaks. A function it traces fails on the missing arguments instead, which says
  nothing, and is probed again with one array argument, a float one and an integer one: it is listed
  when both break because its result is not an array ("torch.* op returned non-Tensor", ``np.isscalar``),
  which does not depend on the argument either;
- an attribute of ``ndarray`` that is not a method is read on an array Dynamo holds (``a.dtype``);
- a method of ``ndarray`` that NumPy lets be called without arguments is called so, on a float and on
  an integer array (``a.tolist()`` breaks only on the first under ``fullgraph``: not listed, the analysis
  knows it reads the array's data);
- a function traced with one array argument is probed again without ``fullgraph`` (which lets Dynamo keep
  an op of data-dependent size in the graph): it is listed among the calls of data-dependent size when
  both arrays make Dynamo break with "Dynamic shape operator" (``np.argwhere``, ``np.unique``). These
  probes run the function for real, on a two-element array.

``numpy.random`` is not probed: its functions Dynamo maps to ``torch._numpy.random`` (read from the same map)
are traced, drawing from torch's generator (``TRACED_NUMPY_RANDOM``), and the others are refused; which of the
traced calls give a number (and so break where it is read) depends on their arguments, as the analysis knows.
"""
from __future__ import annotations

import sys
from typing import Any, Iterator

from dynalint.verify.skipped_calls_table import _probe_break, probe_in_child

#: NumPy's namespaces whose functions Dynamo maps to ``torch._numpy``
MODULES = ("numpy", "numpy.linalg", "numpy.fft")
#: what an array is made from in a probe of a float tensor ``x``: a float array and an integer one
_ARRAYS = ("x.numpy()", "x.long().numpy()")
_MODULE = "dynalint.verify.numpy_calls_table"


def _callables(module_name: str) -> Iterator[str]:
    """Dotted names of the public callables of a NumPy namespace (functions, ufuncs, classes)."""
    import importlib

    module = importlib.import_module(module_name)
    for name in sorted(dir(module)):
        if not name.startswith("_") and callable(getattr(module, name, None)):
            yield f"{module_name}.{name}"


def _ufunc_methods(dotted: str) -> list[str]:
    """The methods of a NumPy ufunc (``at``, ``reduce``, ``accumulate``, ``outer``...); none for another
    callable."""
    import importlib

    module_name, _, name = dotted.rpartition(".")
    obj = getattr(importlib.import_module(module_name), name, None)
    return [m for m in _UFUNC_METHODS if hasattr(obj, m)] if type(obj).__name__ == "ufunc" else []


_UFUNC_METHODS = ("accumulate", "at", "outer", "reduce", "reduceat")


def _refusals() -> set[str]:
    """The graph-break types that are Dynamo's refusal of a call itself, whatever its arguments."""
    from dynalint.core import gb_types

    return {gb_types.NUMPY_UNSUPPORTED.text, gb_types.NUMPY_METHOD.text, gb_types.SKIPPED_FUNCTION.text,
            gb_types.SKIPPED_INLINE.text}


def _graph_break_types(statement: str, namespace: dict[str, Any]) -> set[str] | None:
    """The graph-break types Dynamo logs for ``r = statement`` in a function of a float tensor ``x`` that
    returns ``r``, compiled without ``fullgraph`` and run; None for an error that is not a graph break (the
    call fails eagerly too: ``np.bincount`` of a float array)."""
    import torch
    from torch._dynamo.utils import counters

    exec(f"def probe(x):\n    r = {statement}\n    return x + 1, r\n", namespace)
    torch._dynamo.reset()
    counters.clear()
    try:
        torch.compile(namespace["probe"], backend="eager")(torch.ones(2))
    except Exception:  # noqa: BLE001 - an error that is not a graph break says nothing
        return None
    finally:
        torch._dynamo.reset()
    return {reason.split("\n", 1)[0] for reason in counters["graph_break"]}


def probe_functions() -> tuple[dict[str, str], list[str], list[str]]:
    """(dotted name -> graph-break type, for the NumPy functions any call of which breaks; the functions
    whose call with one array has a data-dependent size; those whose call reads the arrays' data).

    A function reads the data when Dynamo breaks so on a call with one array or, for a function that needs
    two, the same array twice (``np.cov(a)``, ``np.allclose(a, a)``).  Data-dependent sizes are probed
    without ``fullgraph``: a function is listed when every array it runs on makes Dynamo break so and it runs
    on one at least (``np.bincount`` only takes integers)."""
    import numpy

    from dynalint.core import gb_types

    namespace = {"numpy": numpy}
    refusals = _refusals()
    found: dict[str, str] = {}
    dynamic: list[str] = []
    reading: list[str] = []
    for module_name in MODULES:
        for dotted in _callables(module_name):
            for method in _ufunc_methods(dotted):
                # `np.add.at(a, idx, v)`, `np.logical_or.reduce(m)`: Dynamo refuses any call of one
                kind = _probe_break(f"{dotted}.{method}()", namespace)
                if kind in refusals:
                    found[f"{dotted}.{method}"] = kind  # type: ignore[assignment]
            kind = _probe_break(f"{dotted}()", namespace)
            if kind in refusals:
                found[dotted] = kind  # type: ignore[assignment]
                continue
            kinds = {_probe_break(f"{dotted}({array})", namespace) for array in _ARRAYS}
            if kinds == {gb_types.NON_TENSOR_OP.text}:
                found[dotted] = gb_types.NON_TENSOR_OP.text
                continue
            reads = {gb_types.DATA_DEPENDENT_OPERATOR.text}
            if kinds != reads and kinds != {None}:  # (one that needs two arguments fails on one)
                kinds = {_probe_break(f"{dotted}({array}, {array})", namespace) for array in _ARRAYS}
            if kinds == reads:
                reading.append(dotted)
            elif kinds == {None}:
                ran = [t for t in (_graph_break_types(f"{dotted}({array})", namespace) for array in _ARRAYS)
                       if t is not None]
                if ran and all(t == {gb_types.DYNAMIC_SHAPE_OPERATOR.text} for t in ran):
                    dynamic.append(dotted)
    return found, dynamic, reading


def _ndarray_members() -> Iterator[tuple[str, bool]]:
    """(name, whether it is a method) for the public members of ``numpy.ndarray``."""
    import numpy

    for name in sorted(dir(numpy.ndarray)):
        if not name.startswith("_"):  # a property is a descriptor of the class, not callable
            yield name, callable(getattr(numpy.ndarray, name, None))


def _callable_without_arguments(name: str) -> bool:
    """Whether NumPy lets ``ndarray.name()`` be called with no argument (run eagerly on an array)."""
    import numpy

    try:
        getattr(numpy.ones(2), name)()
    except TypeError:
        return False
    except Exception:  # noqa: BLE001 - any other failure is the method's own, called as it may be
        return True
    return True


def probe_ndarray() -> tuple[dict[str, str], dict[str, str]]:
    """(attribute -> graph-break type, method -> graph-break type) for the members of ``ndarray`` that
    break on every array of :data:`_ARRAYS`."""
    import numpy

    from dynalint.core import gb_types

    known = {gb.text for gb in gb_types.ALL}
    attributes: dict[str, str] = {}
    methods: dict[str, str] = {}
    for name, is_method in _ndarray_members():
        if is_method and not _callable_without_arguments(name):
            continue
        use = f"{name}()" if is_method else name
        kinds = [_probe_break(f"a = {array}; a.{use}", {"numpy": numpy}) for array in _ARRAYS]
        if all(k in known for k in kinds):
            (methods if is_method else attributes)[name] = kinds[0]  # type: ignore[assignment]
    return attributes, methods


def probe_scalar_types() -> list[str]:
    """The NumPy scalar types (``numpy.uint8``...) whose comparison with ``==`` breaks (Dynamo holds a NumPy
    type as an object with no rich comparison; ``is`` and ``in`` are traced)."""
    import numpy

    from dynalint.core import gb_types

    names = sorted(f"numpy.{n}" for n in dir(numpy) if not n.startswith("_")
                   and isinstance(getattr(numpy, n), type) and issubclass(getattr(numpy, n), numpy.generic))
    return [t for t in names if _probe_break(f"{t} == {t}", {"numpy": numpy}) == gb_types.RICHCOMPARE.text]


def table() -> dict[str, dict[str, str]]:
    """The probes, run in a child process with its own working and temporary directories (a probe that
    Dynamo traces through runs for real)."""
    return probe_in_child(_MODULE)


def main() -> None:
    import numpy
    import torch

    found = table()
    w = sys.stdout.write
    w('"""NumPy calls, array attributes and array methods Dynamo graph-breaks on in compiled code (generated from\n'
      f'torch {torch.__version__.split("+")[0]} and NumPy {numpy.__version__} by '
      '``python -m dynalint.verify.numpy_calls_table``; do not edit).\n\n'
      "Dynamo traces NumPy code as tensor code through ``torch._numpy``; these are what it cannot trace.\n"
      "``BREAKING_NUMPY_CALLS``: dotted name, as user code calls it -> the graph-break type of any call of it.\n"
      "``BREAKING_NDARRAY_ATTRIBUTES``: attributes of an array Dynamo holds whose reading breaks.\n"
      "``BREAKING_NDARRAY_METHODS``: array methods that break when called with no argument, on a float and on\n"
      "an integer array alike.\n"
      "``DYNAMIC_SHAPE_NUMPY_CALLS``: functions whose call with one array makes an array of data-dependent size\n"
      "(Dynamo breaks unless ``capture_dynamic_output_shape_ops`` is on, or ``fullgraph``).\n"
      "``DATA_READING_NUMPY_CALLS``: functions whose call with arrays reads their data (``np.cov`` and\n"
      "``np.allclose`` compare with ``torch.equal``): Dynamo breaks there.\n"
      "``COMPARED_NUMPY_TYPES``: NumPy scalar types whose comparison with ``==`` or ``!=`` breaks (``is`` does not).\n"
      "``TRACED_NUMPY_RANDOM``: functions of NumPy's global RNG Dynamo traces through ``torch._numpy.random``\n"
      "(drawing from torch's generator); it refuses the others.\n"
      '"""\n\n')
    for i, title in enumerate(("BREAKING_NUMPY_CALLS", "BREAKING_NDARRAY_ATTRIBUTES", "BREAKING_NDARRAY_METHODS")):
        w("\n\n" if i else "")
        w(f"{title}: dict[str, str] = {{\n")
        for name, gb in sorted(found[title].items()):
            w(f"    {name!r}: {gb!r},\n")
        w("}\n")
    for title in ("DYNAMIC_SHAPE_NUMPY_CALLS", "DATA_READING_NUMPY_CALLS", "COMPARED_NUMPY_TYPES", "TRACED_NUMPY_RANDOM"):
        w(f"\n\n{title}: frozenset[str] = frozenset({{\n")
        for name in sorted(found[title]):
            w(f"    {name!r},\n")
        w("})\n")


def traced_numpy_random() -> list[str]:
    """The functions of ``numpy.random`` Dynamo maps to ``torch._numpy.random``, by dotted name."""
    import numpy
    from torch._dynamo.variables.misc import get_np_to_tnp_map

    mapped = get_np_to_tnp_map()
    return sorted(f"numpy.random.{name}" for name in dir(numpy.random)
                  if not name.startswith("_") and getattr(numpy.random, name) in mapped)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        import json
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            attributes, methods = probe_ndarray()
            functions, dynamic, reading = probe_functions()
            result: dict[str, Any] = {"BREAKING_NUMPY_CALLS": functions,
                                      "BREAKING_NDARRAY_ATTRIBUTES": attributes,
                                      "BREAKING_NDARRAY_METHODS": methods,
                                      "DYNAMIC_SHAPE_NUMPY_CALLS": dynamic,
                                      "DATA_READING_NUMPY_CALLS": reading,
                                      "COMPARED_NUMPY_TYPES": probe_scalar_types(),
                                      "TRACED_NUMPY_RANDOM": traced_numpy_random()}
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(result, f)
    else:
        main()
