"""Dynamo's own controls inside compiled functions: disable, graph_break, allow_in_graph, is_compiling."""
import torch
import torch._dynamo


@torch._dynamo.disable
def eager_helper(x):
    return x * 2


@torch.compile(backend="eager")
def calls_dynamo_disabled(x):
    y = x + 1
    return eager_helper(y) - 1


def test_calls_dynamo_disabled():
    calls_dynamo_disabled(torch.randn(2))


@torch.compiler.disable
def compiler_disabled_helper(x):
    return x.sum()


@torch.compile(backend="eager")
def calls_compiler_disabled(x):
    return compiler_disabled_helper(x) + 1


def test_calls_compiler_disabled():
    calls_compiler_disabled(torch.randn(2))


@torch.compile(backend="eager")
def disable_inline_call(x):
    f = torch.compiler.disable(lambda t: t + 1)
    return f(x)


def test_disable_inline_call():
    disable_inline_call(torch.randn(2))


@torch.compile(backend="eager")
def explicit_graph_break(x):
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


def test_explicit_graph_break():
    explicit_graph_break(torch.randn(2))


@torch.compile(backend="eager")
def is_compiling_branch(x):
    if torch.compiler.is_compiling():
        return x + 1
    return x - 1


def test_is_compiling_branch():
    is_compiling_branch(torch.randn(2))


@torch.compile(backend="eager")
def dynamo_is_compiling_branch(x):
    if not torch._dynamo.is_compiling():
        print("eager")
    return x


def test_dynamo_is_compiling_branch():
    dynamo_is_compiling_branch(torch.randn(2))


def _opaque(x):
    return x * 3


_opaque_allowed = torch._dynamo.allow_in_graph(_opaque)


@torch.compile(backend="eager")
def calls_allow_in_graph(x):
    return _opaque_allowed(x) + 1


def test_calls_allow_in_graph():
    calls_allow_in_graph(torch.randn(2))


@torch._dynamo.assume_constant_result
def _const_config():
    return 4


@torch.compile(backend="eager")
def calls_assume_constant(x):
    return x * _const_config()


def test_calls_assume_constant():
    calls_assume_constant(torch.randn(2))


@torch.compile(backend="eager")
def nested_compile_call(x):
    return _inner_compiled(x) + 1


@torch.compile(backend="eager")
def _inner_compiled(x):
    return x * 2


def test_nested_compile_call():
    nested_compile_call(torch.randn(2))


@torch.compile(backend="eager")
def disabled_method_on_object(m, x):
    return m.eager(x) + 1


class WithEager:
    @torch.compiler.disable
    def eager(self, x):
        return x - 1


def test_disabled_method_on_object():
    disabled_method_on_object(WithEager(), torch.randn(2))


@torch.compile(backend="eager")
def mark_dynamic_inside(x):
    torch._dynamo.mark_dynamic(x, 0)
    return x + 1


def test_mark_dynamic_inside():
    mark_dynamic_inside(torch.randn(2))


@torch.compile(backend="eager")
def substitute_in_graph_free(x):
    return torch._dynamo.is_compiling() and x + 1


def test_substitute_in_graph_free():
    substitute_in_graph_free(torch.randn(2))


@torch.compile(backend="eager")
def compiler_assume_constant_module(x):
    return x * torch.get_default_dtype().itemsize


def test_compiler_assume_constant_module():
    compiler_assume_constant_module(torch.randn(2))


def _skip_me(x):
    return x + 1


@torch.compile(backend="eager")
def calls_disable_recursive_false(x):
    return torch._dynamo.disable(_skip_me, recursive=False)(x)


def test_calls_disable_recursive_false():
    calls_disable_recursive_false(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
