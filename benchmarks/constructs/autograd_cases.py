"""Autograd inside compiled functions: custom Functions, backward, grad, checkpoint, functorch."""
import torch
import torch.utils.checkpoint


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


@torch.compile(backend="eager")
def autograd_function_apply(x):
    return Square.apply(x) + 1


def test_autograd_function_apply():
    autograd_function_apply(torch.randn(2, requires_grad=True)).sum().backward()


class PrintingFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        print("forward")
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g


@torch.compile(backend="eager")
def autograd_function_with_print(x):
    return PrintingFunction.apply(x) * 2


def test_autograd_function_with_print():
    autograd_function_with_print(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def backward_inside(x, w):
    loss = (x * w).sum()
    loss.backward()
    return w.grad


def test_backward_inside():
    backward_inside(torch.randn(2), torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def autograd_grad_inside(x):
    x = x.detach().requires_grad_(True)
    y = (x ** 2).sum()
    (g,) = torch.autograd.grad(y, x)
    return g


def test_autograd_grad_inside():
    autograd_grad_inside(torch.randn(2))


def _block(x):
    return torch.relu(x) * 2


@torch.compile(backend="eager")
def checkpoint_call(x):
    return torch.utils.checkpoint.checkpoint(_block, x, use_reentrant=False)


def test_checkpoint_call():
    checkpoint_call(torch.randn(2, requires_grad=True)).sum().backward()


@torch.compile(backend="eager")
def checkpoint_reentrant(x):
    return torch.utils.checkpoint.checkpoint(_block, x, use_reentrant=True)


def test_checkpoint_reentrant():
    checkpoint_reentrant(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def func_grad(x):
    return torch.func.grad(lambda t: (t.sin()).sum())(x)


def test_func_grad():
    func_grad(torch.randn(3))


@torch.compile(backend="eager")
def vmap_call(x):
    return torch.vmap(lambda r: r.dot(r))(x)


def test_vmap_call():
    vmap_call(torch.randn(3, 2))


@torch.compile(backend="eager")
def detach_and_clone(x):
    return x.detach().clone() + x


def test_detach_and_clone():
    detach_and_clone(torch.randn(2, requires_grad=True))


@torch.compile(backend="eager")
def grad_mode_query(x):
    if torch.is_grad_enabled():
        return x * 2
    return x


def test_grad_mode_query():
    grad_mode_query(torch.randn(2))


class WithItem(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = x.max().item()
        return x * ctx.scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale


@torch.compile(backend="eager")
def autograd_function_with_item(x):
    return WithItem.apply(x)


def test_autograd_function_with_item():
    autograd_function_with_item(torch.rand(2, requires_grad=True))


@torch.compile(backend="eager")
def jacrev_call(x):
    return torch.func.jacrev(torch.sin)(x)


def test_jacrev_call():
    jacrev_call(torch.randn(3))


@torch.compile(backend="eager")
def zero_grad_manual(p):
    p.grad = None
    return p * 2


def test_zero_grad_manual():
    zero_grad_manual(torch.nn.Parameter(torch.randn(2)))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
