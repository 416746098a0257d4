"""nn.Module code under torch.compile: containers, training flag, buffers, hooks, attribute mutation."""
import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_module_list_loop():
    torch.compile(Stack(), backend="eager")(torch.randn(1, 2))


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 1)})

    def forward(self, x, name):
        return self.heads[name](x)


def test_module_dict_index():
    torch.compile(Heads(), backend="eager")(torch.randn(1, 2), "a")


class TrainingFlag(nn.Module):
    def forward(self, x):
        if self.training:
            return x * 2
        return x


def test_training_flag():
    torch.compile(TrainingFlag(), backend="eager")(torch.randn(2))


class BufferUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(2))

    def forward(self, x):
        self.running.mul_(0.9).add_(x.detach() * 0.1)
        return x - self.running


def test_buffer_update():
    torch.compile(BufferUpdate(), backend="eager")(torch.randn(2))


class StepCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps


def test_step_counter():
    m = torch.compile(StepCounter(), backend="eager")
    m(torch.randn(2))


class RegistersInForward(nn.Module):
    def forward(self, x):
        self.register_buffer("cache", x.detach())
        return x + 1


def test_register_buffer_in_forward():
    torch.compile(RegistersInForward(), backend="eager")(torch.randn(2))


class SequentialIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))

    def forward(self, x):
        return self.seq[-1](self.seq[:2](x))


def test_sequential_index():
    torch.compile(SequentialIndex(), backend="eager")(torch.randn(1, 2))


class ParamsLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        reg = sum(p.pow(2).sum() for p in self.parameters())
        return self.lin(x).sum() + reg


def test_params_loop():
    torch.compile(ParamsLoop(), backend="eager")(torch.randn(1, 2))


class NamedModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)

    def forward(self, x):
        for name, m in self.named_children():
            if name == "a":
                x = m(x)
        return x


def test_named_children():
    torch.compile(NamedModules(), backend="eager")(torch.randn(1, 2))


def _pre_hook(module, args):
    return (args[0] * 2,)


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.lin.register_forward_pre_hook(_pre_hook)

    def forward(self, x):
        return self.lin(x)


def test_forward_pre_hook():
    torch.compile(Hooked(), backend="eager")(torch.randn(1, 2))


def _printing_hook(module, args, out):
    print("out", out.shape)


class PrintHooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.lin.register_forward_hook(_printing_hook)

    def forward(self, x):
        return self.lin(x) + 1


def test_forward_hook_print():
    torch.compile(PrintHooked(), backend="eager")(torch.randn(1, 2))


class StoresTensorAttr(nn.Module):
    def forward(self, x):
        self.last = x.detach()
        return x * 2


def test_store_tensor_attr():
    torch.compile(StoresTensorAttr(), backend="eager")(torch.randn(2))


class CreatesModule(nn.Module):
    def forward(self, x):
        lin = nn.Linear(2, 2)
        return lin(x)


def test_module_created_in_forward():
    torch.compile(CreatesModule(), backend="eager")(torch.randn(1, 2))


class CallsTrainEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        self.drop.eval()
        return self.drop(x)


def test_eval_inside_forward():
    torch.compile(CallsTrainEval(), backend="eager")(torch.randn(2))


class StateDictInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        sd = self.lin.state_dict()
        return x + sd["bias"]


def test_state_dict_in_forward():
    torch.compile(StateDictInForward(), backend="eager")(torch.randn(2))


class ApplyInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        nn.init.zeros_(self.lin.bias)
        return self.lin(x)


def test_init_in_forward():
    torch.compile(ApplyInit(), backend="eager")(torch.randn(1, 2))


class GetSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(2, 2))

    def forward(self, x):
        return self.get_submodule("block.0")(x)


def test_get_submodule():
    torch.compile(GetSubmodule(), backend="eager")(torch.randn(1, 2))


class CompiledMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    @torch.compile(backend="eager")
    def score(self, x):
        return self.lin(x).softmax(-1)


def test_compiled_method_decorator():
    CompiledMethod().score(torch.randn(1, 2))


class ParamDataInplace(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(2))

    def forward(self, x):
        with torch.no_grad():
            self.w.data.clamp_(0, 1)
        return x * self.w


def test_param_data_inplace():
    torch.compile(ParamDataInplace(), backend="eager")(torch.randn(2))


if __name__ == "__main__":
    from _case_runner import run_cases

    run_cases(globals())
