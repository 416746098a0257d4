"""The user's code and its input stream, loaded in a worker process.

Every measurement phase loads the target's module afresh (new globals, new
code objects), builds the input sets again under the same seeds and creates
its own instances, so phases cannot leak state into each other; within a phase each file is
loaded once, whichever options name it (a global the input factory sets is the one the hook
reads).  The module is
imported under the name Python would give it (its package included), so its
relative and sibling imports work, and a fixed copy stands in for the
original under that same name.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import inspect
import os
import random
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from dynalint.verify.probe import dynamo_config_patches, unwrap_compiled
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.targets import BEFORE_CALL_CONVENTION

_EXPLICIT_KEYS = frozenset({"init", "init_kwargs", "args", "kwargs"})


class InputError(Exception):
    """The input factory's result cannot be read as a stream of calls."""


def seed_all(seed: int, *, started_devices_only: bool = False) -> None:
    """Seed Python's, numpy's and torch's generators, those of every device type included.

    ``started_devices_only`` (the reseeding before every call) leaves out the device types that
    have not started: for each of those ``torch.manual_seed`` queues a seeding, with the call's stack
    recorded, to run when it starts, which costs more than the rest of a small call's bookkeeping.
    Such a device, started later, gets the seeding queued when the stream was set up."""
    random.seed(seed)
    if started_devices_only and not _accelerator_started():
        torch.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2**32))
    except ImportError:
        pass


def _accelerator_started() -> bool:
    """Whether a device type whose generators ``torch.manual_seed`` seeds lazily has started."""
    for name in ("cuda", "xpu", "mtia"):
        started = getattr(getattr(torch, name, None), "is_initialized", None)
        if started is not None and started():
            return True
    renamed = getattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")()
    return torch.backends.mps.is_available() or renamed != "privateuseone"  # an out-of-tree device type


def import_name(path: str) -> tuple[str, str]:
    """(dotted module name, directory to put on sys.path) for a file, walking up through packages."""
    path = os.path.abspath(path)
    directory, fname = os.path.split(path)
    parts = [os.path.splitext(fname)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, pkg = os.path.split(directory)
        parts.insert(0, pkg)
    return ".".join(parts), directory


def load_module(path: str, origin: str | None = None) -> types.ModuleType:
    """Execute ``path`` as a fresh module named after ``origin`` (default: itself)."""
    name, root = import_name(origin or path)
    if root not in sys.path:
        sys.path.insert(0, root)
    parent = name.rpartition(".")[0]
    if parent:
        importlib.import_module(parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Substitutes(importlib.abc.MetaPathFinder):
    """Imports a fixed copy in place of a user's module, under the module's own name."""

    def __init__(self, by_name: dict[str, str]) -> None:
        self.by_name = by_name

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        fixed = self.by_name.get(fullname)
        return importlib.util.spec_from_file_location(fullname, fixed) if fixed else None


def install_substitutes(substitutes: dict[str, str]) -> None:
    """Make every import of an original file (user file -> fixed copy) load its fixed copy, whichever
    module imports it first; modules already imported under those names are dropped."""
    by_name = {}
    for origin, fixed in substitutes.items():
        name, root = import_name(origin)
        if root not in sys.path:
            sys.path.insert(0, root)
        by_name[name] = fixed
        sys.modules.pop(name, None)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Substitutes)]
    if by_name:
        sys.meta_path.insert(0, _Substitutes(by_name))


@dataclass
class Call:
    """One input set: how to build the instance (classes, factories) and what to call it with."""

    args: tuple
    kwargs: dict
    init_args: tuple = ()
    init_kwargs: dict = field(default_factory=dict)

    def instance_key(self) -> str:
        return repr((self.init_args, sorted(self.init_kwargs.items())))


def _as_args(value: Any, what: str) -> tuple[tuple, dict]:
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    raise InputError(f"{what} must be a tuple of arguments or a dict of keyword arguments, not {type(value).__name__}")


def normalize(raw: Any, constructs: bool, index: int) -> Call:
    """Read one input set.

    - ``{"init": ..., "init_kwargs": {...}, "args": (...), "kwargs": {...}}``: explicit;
    - a class or factory target: ``(ctor_args, call_args)``, each a tuple (positional) or a
      dict (keyword); anything else is the call's arguments with no constructor arguments;
    - a function target: a tuple of arguments (a single non-tuple value is one argument).
    """
    where = f"input set {index}"
    if isinstance(raw, dict) and raw and set(raw) <= _EXPLICIT_KEYS:
        init_args, init_kwargs = _as_args(raw.get("init", ()), f"{where}: 'init'")
        init_kwargs.update(raw.get("init_kwargs", {}))
        args, kwargs = _as_args(raw.get("args", ()), f"{where}: 'args'")
        kwargs.update(raw.get("kwargs", {}))
        return Call(args, kwargs, init_args, init_kwargs)
    if constructs and isinstance(raw, (tuple, list)) and len(raw) == 2 and all(
            isinstance(v, (tuple, list, dict)) for v in raw):
        init_args, init_kwargs = _as_args(raw[0], f"{where}: constructor arguments")
        args, kwargs = _as_args(raw[1], f"{where}: call arguments")
        return Call(args, kwargs, init_args, init_kwargs)
    if isinstance(raw, (tuple, list)):
        return Call(tuple(raw), {})
    return Call((raw,), {})


def map_tensors(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply ``fn`` to every tensor inside tuples, lists and dicts (other values unchanged)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(map_tensors(v, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def tensor_leaves(value: Any, path: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from tensor_leaves(v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from tensor_leaves(v, f"{path}[{k!r}]")


class Target:
    """The thing to call: a function, or instances of a class/factory keyed by constructor arguments."""

    def __init__(self, module: types.ModuleType, name: str) -> None:
        if not hasattr(module, name):
            raise InputError(f"{name!r} is not defined in {module.__file__}")
        self.module = module
        self.name = name
        obj = getattr(module, name)
        self.obj = unwrap_compiled(obj)
        self.patches = dynamo_config_patches(obj)
        """``torch._dynamo.config.patch`` decorators around the target: its compiled calls run under them."""
        self._first_instance: Any = None
        if inspect.isclass(self.obj):
            self.kind = "module class" if issubclass(self.obj, torch.nn.Module) else "class"
        elif callable(self.obj):
            self.kind = "factory" if self._is_factory() else "function"
        else:
            raise InputError(f"{name!r} is a {type(obj).__name__}, not a function, class or factory")

    @property
    def constructs(self) -> bool:
        return self.kind != "function"

    def under_patches(self, compiled: Any) -> Any:
        """``compiled`` called under the target's own ``torch._dynamo.config.patch`` decorators."""
        for patch in reversed(self.patches):
            compiled = patch(compiled)
        return compiled

    def _is_factory(self) -> bool:
        """A function annotated to return a module, or one without parameters that returns one."""
        try:
            ret = typing.get_type_hints(self.obj).get("return")
        except Exception:
            ret = None
        if inspect.isclass(ret) and issubclass(ret, torch.nn.Module):
            return True
        try:
            params = inspect.signature(self.obj).parameters
        except (TypeError, ValueError):
            return False
        if params:
            return False
        made = self.obj()
        if isinstance(made, torch.nn.Module):
            self._first_instance = made
            return True
        return False

    def build(self, call: Call) -> Any:
        if self._first_instance is not None and not call.init_args and not call.init_kwargs:
            made, self._first_instance = self._first_instance, None
            return made
        return self.obj(*call.init_args, **call.init_kwargs)

    def entry_function(self, instance: Any) -> tuple[Any, bool]:
        """The function a call of the target enters first, and whether it takes the instance first.

        For a module that is ``type(instance).forward`` as it is, decorators included: Dynamo
        compiles (and caches) the frame the call enters, the decorator's wrapper when there is one.
        """
        if self.kind == "function":
            return self.obj, False
        fn = type(instance).forward if isinstance(instance, torch.nn.Module) else type(instance).__call__
        return fn, True

    def code_and_signature(self, instance: Any) -> tuple[types.CodeType | None, inspect.Signature | None, bool]:
        """The code object the user wrote (decorators unwrapped), its signature, and whether it takes the
        instance first: what the names in a failing guard are read against."""
        fn, bound = self.entry_function(instance)
        fn = inspect.unwrap(fn)
        try:
            return fn.__code__, inspect.signature(fn), bound
        except (AttributeError, TypeError, ValueError):
            return None, None, bound


def wrapped_chain(fn: Any) -> list[Any]:
    """``fn``, then what it wraps (``__wrapped__``), outermost first."""
    chain, seen = [], set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        chain.append(fn)
        fn = getattr(fn, "__wrapped__", None)
    return chain


def frame_locals(fn: Any, bound: bool, obj: Any, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """The locals a frame of ``fn`` starts with for this call (arguments and closure cells), as the
    frame evaluator hands them to the guards; None when they cannot be built."""
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
        bound_args = sig.bind(obj, *args, **kwargs) if bound else sig.bind(*args, **kwargs)
        bound_args.apply_defaults()
        f_locals = dict(bound_args.arguments)
        code = fn.__code__
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                f_locals[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        return f_locals
    except (AttributeError, TypeError, ValueError):
        return None


def _parameters(fn: Callable[..., Any]) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 1


class Stream:
    """One phase's view of the stream: a fresh module, its input sets and its instances."""

    def __init__(self, spec: MeasureSpec, phase_seed: int = 0) -> None:
        self.spec = spec
        self.device = torch.device(spec.device)
        seed_all(spec.seed)
        install_substitutes(spec.substitutes)
        before = set(sys.modules)
        self.module = load_module(spec.module_path, spec.origin_path)
        self._loaded = {os.path.realpath(spec.origin_path): self.module}
        self._imported_by_target = {name: mod for name, mod in sys.modules.items() if name not in before}
        self.target = Target(self.module, spec.name)
        self.inputs_module = self._side_module(spec.inputs_path)
        self.hook = self._hook()
        self._hook_takes_name = self.hook is not None and _parameters(self.hook) >= 2
        seed_all(spec.seed)
        factory = getattr(self.inputs_module, spec.inputs_name, None)
        if factory is None:
            raise InputError(f"no input sets: {self.inputs_module.__file__} defines no {spec.inputs_name}() "
                             f"(or pass --inputs FILE::FACTORY)")
        raw = self._call_factory(factory)
        self.calls = [normalize(r, self.target.constructs, i) for i, r in enumerate(raw)]
        if not self.calls:
            raise InputError(f"{spec.inputs_name}() returned no input sets")
        self.calls = [self._to_device(c) for c in self.calls]
        self.instances: dict[str, Any] = {}

    def _side_module(self, path: str | None) -> types.ModuleType:
        """The module of an input factory's or a hook's file, loaded once per stream: a file named
        by both ``--inputs`` and ``--before-call`` (or imported by the target's module) is one
        module, so a global its factory sets is the one its hook reads."""
        if path is None:
            return self.module
        real = os.path.realpath(path)
        if real not in self._loaded:
            name, _ = import_name(path)
            imported = self._imported_by_target.get(name)
            fixed = self.spec.substitutes.get(os.path.abspath(path))  # the copy imported in its place
            files = {real} | ({os.path.realpath(fixed)} if fixed else set())
            same = imported is not None and os.path.realpath(getattr(imported, "__file__", "") or "") in files
            self._loaded[real] = imported if same else load_module(path)
        return self._loaded[real]

    def _hook(self) -> Callable[..., Any] | None:
        if self.spec.hook_name:
            mod = self._side_module(self.spec.hook_path)
            hook = getattr(mod, self.spec.hook_name, None)
            if hook is None:
                raise InputError(f"{mod.__file__} defines no {self.spec.hook_name}()")
            return hook
        return getattr(self.inputs_module, BEFORE_CALL_CONVENTION, None) or getattr(
            self.module, BEFORE_CALL_CONVENTION, None)

    def _call_factory(self, factory: Callable[..., Any]) -> list[Any]:
        try:
            wants_device = "device" in inspect.signature(factory).parameters
        except (TypeError, ValueError):
            wants_device = False
        raw = factory(device=self.spec.device) if wants_device else factory()
        if isinstance(raw, (tuple, list)) or inspect.isgenerator(raw):
            return list(raw)
        raise InputError(f"{self.spec.inputs_name}() must return a list of input sets, not {type(raw).__name__}")

    def _to_device(self, call: Call) -> Call:
        if self.device.type == "cpu":
            return call
        move = lambda t: t.to(self.device)  # noqa: E731
        return Call(map_tensors(call.args, move), map_tensors(call.kwargs, move),
                    map_tensors(call.init_args, move), map_tensors(call.init_kwargs, move))

    def before_call(self, i: int) -> None:
        seed_all(self.spec.seed + 1000 + i, started_devices_only=True)
        if self.hook is None:
            return
        self.hook(i, self.spec.name) if self._hook_takes_name else self.hook(i)

    def instance(self, call: Call, wrap: Callable[[Any], Any] | None = None) -> tuple[Any, Any]:
        """(the object whose code runs, the callable to call): one per constructor-argument set."""
        key = call.instance_key() if self.target.constructs else ""
        if key not in self.instances:
            seed_all(self.spec.seed + 1)
            obj = self.target.build(call) if self.target.constructs else self.target.obj
            if isinstance(obj, torch.nn.Module):
                obj = obj.to(self.device)
                obj.train(self.spec.mode == "train")
            self.instances[key] = (obj, self.target.under_patches(wrap(obj)) if wrap else obj)
        return self.instances[key]

    def prepared_args(self, call: Call) -> tuple[tuple, dict]:
        """The call's arguments; in train mode floating tensors become fresh leaves that require grad."""
        if self.spec.mode != "train":
            return call.args, call.kwargs

        def leaf(t: torch.Tensor) -> torch.Tensor:
            if t.is_floating_point() or t.is_complex():
                return t.detach().clone().requires_grad_(True)
            return t

        return map_tensors(call.args, leaf), map_tensors(call.kwargs, leaf)
