"""The fix engine: rounds to a fixed point, refusals, text edits, and what `check --format json` carries."""
from __future__ import annotations

import textwrap

import libcst as cst

from dynalint.engine.fixing import apply_text_edits, diagnostics_with_fixes, fix_source, text_edits
from dynalint.config.settings import Settings


def fixed(code: str, unsafe: bool = True) -> str:
    return fix_source(textwrap.dedent(code), "m.py", Settings(), unsafe=unsafe).source


def test_nested_findings_are_fixed_over_several_rounds():
    code = """\
        import torch

        @torch.compile
        def f(x):
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            if y.mean() > 1:
                y = y.clamp(max=1)
            return y[y > 0].sum()
    """
    out = fixed(code)
    cst.parse_module(out)
    assert "if " not in out and out.count("torch.where") == 3
    assert fix_source(out, "m.py", Settings(), unsafe=True).applied == []


def test_a_fix_inside_what_an_earlier_fix_left_for_a_later_round_rewrites_waits_for_it():
    """branch-to-where takes round one; eager-tail, which overlaps it, is left for round two.  The
    ``print`` at the end of the step, which eager-tail takes out of the compiled code, waits for it:
    deferred in round one, it would leave a process-wide line that changes only other code."""
    code = textwrap.dedent("""\
        import torch

        w = torch.nn.Parameter(torch.ones(4))
        opt = torch.optim.SGD([w], lr=0.1)


        @torch.compile
        def step(x):
            y = w * x
            if y.sum() > 0:
                y = y * 2
            loss = (y.sum() - 1.0) ** 2
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss:", loss)
            return loss
    """)
    result = fix_source(code, "m.py", Settings(), unsafe=True)
    assert [a.fixer for a in result.applied] == ["branch-to-where", "eager-tail"], result.source
    assert "reorderable_logging_functions" not in result.source
    alone = fix_source(code.replace("    opt.zero_grad()\n    loss.backward()\n    opt.step()\n", ""), "m.py",
                       Settings(), unsafe=True)
    assert "defer-logging" in {a.fixer for a in alone.applied}  # the print alone is deferred


def test_rewrites_that_would_change_behaviour_are_refused():
    # a list grown in a branch, an in-place update of a parameter, a branch with a side effect,
    # and branches whose values have different shapes (the loop apart: after its break Dynamo runs the
    # rest of its function eagerly, and the branches there are no breaks)
    code = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F

        @torch.compile
        def grow(lens):
            out = [0]
            for n in torch.unbind(lens):
                r = n % 4
                if r != 0:
                    out += [r]
            return out

        @torch.compile
        def f(x, y):
            if x.sum() > 0:
                y += 1
            if x.mean() > 0:
                print("positive")
                x = x * 2
            if x.max() > 3:
                x = F.pad(x, (0, 1))
            return x, y
    """)
    result = fix_source(code, "m.py", Settings(), unsafe=True)
    assert [d.code for d in result.remaining].count("DYN101") == 4
    assert "torch.cond" not in result.source and "torch.where" not in result.source


def test_safe_only_by_default_and_unsafe_counted():
    code = textwrap.dedent("""\
        import torch

        @torch.compile
        def f(x):
            print("x", x.sum())
            if x.sum() > 0:
                return x * 2
            return x
    """)
    result = fix_source(code, "m.py", Settings())
    assert result.applied == [] and result.source == code  # no fixer is safe for every input
    assert result.unsafe_available == 2 and [d.code for d in result.remaining] == ["DYN105", "DYN101"]
    unsafe = fix_source(code, "m.py", Settings(), unsafe=True)
    assert [a.fixer for a in unsafe.applied] == ["defer-logging", "branch-to-where"]


def test_check_json_fix_edits_reproduce_the_rewrite():
    code = textwrap.dedent("""\
        import torch

        @torch.compile
        def f(x):
            return x[x > 0].sum()
    """)
    (diag,) = diagnostics_with_fixes(code, "m.py", Settings())
    assert diag.code == "DYN104" and diag.fix is not None and diag.fix.safety == "unsafe"
    assert diag.fix.fixer == "masked-reduction"
    assert apply_text_edits(code, diag.fix.edits) == fixed(code, unsafe=True)
    fix = diag.to_json()["fix"]
    assert fix.keys() == {"applicability", "message", "fixer", "edits"} and fix["applicability"] == "unsafe"
    assert fix["fixer"] == "masked-reduction"
    assert fix["edits"][0].keys() == {"content", "location", "end_location"}  # ruff's shape
    assert fix["edits"][0]["location"].keys() == {"row", "column"}


def test_text_edits_round_trip():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nd\ne\n"
    edits = text_edits(old, new)
    assert apply_text_edits(old, edits) == new
    assert [(e.line, e.column, e.end_line, e.end_column, e.new_text) for e in edits] == [
        (2, 1, 2, 2, "B"), (5, 1, 5, 1, "e\n")]


def test_env_read_once_refused_where_it_would_change_results():
    # the module sets the variable itself; a computed key; two reads of one key with different defaults
    writes = """\
        import os
        import torch.nn as nn

        class Scale(nn.Module):
            def forward(self, x):
                return x * 2 if os.environ.get("UPCAST", "0") == "1" else x

        def enable():
            os.environ.setdefault("UPCAST", "1")
    """
    computed = """\
        import os
        import torch.nn as nn

        PREFIX = "MODEL_"

        class Scale(nn.Module):
            def forward(self, x):
                return x * 2 if os.getenv(PREFIX + "UPCAST") == "1" else x
    """
    two_defaults = """\
        import os
        import torch.nn as nn

        class Scale(nn.Module):
            def forward(self, x):
                a = os.environ.get("UPCAST", "0")
                b = os.environ.get("UPCAST", "1")
                return x if a == b else x * 2
    """
    for code in (writes, computed, two_defaults):
        result = fix_source(textwrap.dedent(code), "m.py", Settings(), unsafe=True)
        assert not result.applied and "DYN202" in [d.code for d in result.remaining], code


def test_env_read_once_forms():
    out = fixed("""\
        import os
        import torch.nn as nn

        class Scale(nn.Module):
            def forward(self, x):
                if "FAST" in os.environ:
                    x = x * 2
                return x * float(os.environ["GAIN"])
    """)
    assert '_HAS_ENV_FAST = "FAST" in os.environ' in out and "if _HAS_ENV_FAST:" in out
    # `os.environ[k]` raises KeyError when k is unset: read at import it could raise where the original did not
    assert 'float(os.environ["GAIN"])' in out and "_ENV_GAIN" not in out
    assert fix_source(out, "m.py", Settings(), unsafe=True).applied == []


def test_global_to_tensor_refused_where_the_global_is_a_python_value():
    # read outside compiled code, used as a Python count, mutated through a method
    outside = """\
        import torch.nn as nn

        scale = 1.0

        def set_scale(v):
            global scale
            scale = v

        def describe():
            return f"scale={scale}"

        class Block(nn.Module):
            def forward(self, x):
                return x * scale
    """
    count = """\
        import torch.nn as nn

        repeats = 1

        def set_repeats(v):
            global repeats
            repeats = v

        class Block(nn.Module):
            def forward(self, x):
                for _ in range(repeats):
                    x = x * 2
                return x
    """
    for code in (outside, count):
        result = fix_source(textwrap.dedent(code), "m.py", Settings(), unsafe=True)
        assert "torch.tensor(" not in result.source and "DYN201" in [d.code for d in result.remaining], code


def test_an_attribute_or_keyword_of_the_same_name_is_no_use_of_the_variable():
    """``cfg.scale`` and ``f(scale=...)`` name no variable: they neither read the value a fixer
    follows nor stop the fix, and they come out unchanged."""
    cases = {
        "keep-tensor": ("""\
            import torch

            @torch.compile
            def f(x, cfg):
                scale = x.abs().max().item()
                return x / scale + cfg.scale + cfg.make(scale=1)
        """, "cfg.scale + cfg.make(scale=1)"),
        "global-to-tensor": ("""\
            import torch.nn as nn

            scale = 1.0

            def set_scale(v: float):
                global scale
                scale = v

            def describe(fmt):
                return fmt(scale=2)

            class Block(nn.Module):
                def forward(self, x):
                    return x * scale
        """, "fmt(scale=2)"),
        "hoist-decision": ("""\
            import torch

            @torch.compile
            def step(x, t):
                if t.sum(dim=0) < 100:
                    x = torch.cat([x, x * 0.1])
                return x.relu()
        """, "t.sum(dim=0) < 100"),
    }
    for fixer, (code, kept) in cases.items():
        result = fix_source(textwrap.dedent(code), "m.py", Settings(), unsafe=True)
        assert [a.fixer for a in result.applied] == [fixer] and kept in result.source, result.source


def test_python_state_to_buffer_only_for_modules():
    # with every function analysed, a plain object's counter is reported but has no register_buffer
    from dynalint.analysis.program import Scope

    code = textwrap.dedent("""\
        import torch

        class Tracker:
            def __init__(self):
                super().__init__()
                self.count = 0

            def step(self, x: torch.Tensor):
                self.count += 1
                return torch.relu(x) * self.count
    """)
    result = fix_source(code, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert result.source == code and "DYN203" in [d.code for d in result.remaining]


def test_compound_replacements_keep_operator_precedence():
    # the masked mean becomes `(masked / count).sum()`: a call, which needs no parentheses
    out = fixed("""\
        import torch

        @torch.compile
        def f(x, y):
            a = y / x[x > 0].mean()
            b = x[x > 0].mean() ** 2
            c = x[x > 0].mean()
            return a, b, c
    """, unsafe=True)
    mean = "(torch.where(x > 0, x, 0) / (x > 0).sum()).sum()"
    assert f"a = y / {mean}" in out and f"b = {mean} ** 2" in out and f"c = {mean}\n" in out


def test_masked_elementwise_loss_refusals():
    # the selection is used twice; a comment would be lost; the mask is rebound in between;
    # a loss that rejects out-of-range values; reduction="none"; an extra weight
    cases = {
        "used twice": """\
            sel = pred[m]
            return F.l1_loss(sel, target[m]) + sel.sum()
        """,
        "comment": """\
            # the positive rows
            sel = pred[m]
            return F.l1_loss(sel, target[m])
        """,
        "rebound": """\
            sel = pred[m]
            m = target > 1
            return F.l1_loss(sel, target[m])
        """,
        "range-checked loss": "return F.binary_cross_entropy(pred[m], target[m])\n",
        "no reduction": 'return F.l1_loss(pred[m], target[m], reduction="none")\n',
        "weight": "return F.binary_cross_entropy_with_logits(pred[m], target[m], weight=target[m])\n",
    }
    for why, body in cases.items():
        code = ("import torch\nimport torch.nn.functional as F\n\n@torch.compile\ndef f(pred, target):\n"
                "    m = target > 0\n" + textwrap.indent(textwrap.dedent(body), "    "))
        result = fix_source(code, "m.py", Settings(), unsafe=True)
        assert "torch.where" not in result.source, why
        # the capture flag, the last resort, may still take the finding
        assert "DYN104" in [d.code for d in result.remaining] or \
            {a.fixer for a in result.applied if a.code == "DYN104"} == {"capture-flags"}, why


def test_rewritten_statements_keep_their_comments():
    out = fixed("""\
        import torch

        @torch.compile
        def f(x):
            # clip large activations
            if x.abs().max() > 10:  # rare
                # scale down
                x = x / 10
            else:
                x = x * 1.0  # keep
            return x
    """)
    assert "torch.where" in out
    for comment in ("# clip large activations", "# rare", "# scale down", "# keep"):
        assert out.count(comment) == 1, (comment, out)
    cst.parse_module(out)
    assert out.index("# clip large activations") < out.index("# rare") < out.index("torch.where")


def test_a_fix_that_would_drop_a_comment_is_not_applied():
    # a comment inside the masked selection's arguments has nowhere to go in the rewritten call
    code = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F

        @torch.compile
        def f(logits, labels):
            keep = labels != -100
            return F.cross_entropy(
                logits[keep],  # rows to score
                labels[keep],
            )
    """)
    result = fix_source(code, "m.py", Settings(), unsafe=True)
    assert "# rows to score" in result.source
    assert result.source == code and "DYN104" in [d.code for d in result.remaining]


def test_a_fix_that_would_copy_a_comment_is_not_applied():
    # (found by the property test) the split of the compiled part after its first break would write the
    # module's trailing comment twice
    code = textwrap.dedent("""\
        # keep
        import torch
        import random

        drop_rate = 0.0  # keep

        def set_drop_rate(value: float):
            global drop_rate
            drop_rate = value

        def decode(t):
            rows = []
            for row in t:
                rows.append(int(row.sum()))
            return rows

        rnn = torch.nn.GRU(4, 4)

        @torch.compile
        def step0(x):  # keep
            # keep
            draw = random.random()  # keep
            x = x * draw
            x = x; print(x.sum())
            # keep
            idx = torch.nonzero(x > 0).squeeze(-1)
            x = x.index_select(0, idx)

        # keep""")
    result = fix_source(code, "m.py", Settings(), unsafe=True)
    assert result.source.count("# keep") == code.count("# keep") and result.applied


def test_check_in_graph_refusals():
    # a computed message would be lost; the check's result is used; a keyword argument;
    # the value read by .item() is an unannotated parameter (maybe a Python number)
    cases = {
        "computed message": "torch._check_tensor_all(x.abs() < 9, lambda: f'bad {x}')\n",
        "result used": "ok = torch._check_tensor_all(x.abs() < 9)\n",
        "keyword": "torch._check_tensor_all(x.abs() < 9, message=lambda: 'bad')\n",
        "uncertain tensor": "torch._check(n.item())\n",
        "computed assert message": "assert (x > 0).all().item(), f'{x}'\n",
    }
    for why, body in cases.items():
        code = "import torch\n\n@torch.compile\ndef f(x, n):\n    " + body + "    return x\n"
        result = fix_source(code, "m.py", Settings(), unsafe=True)
        assert "_assert_async" not in result.source, why
        # the capture flag, the last resort, may still take the finding
        assert "DYN102" in [d.code for d in result.remaining] or \
            {a.fixer for a in result.applied if a.code == "DYN102"} == {"capture-flags"}, why


def test_check_in_graph_keeps_the_dtype_check_of_an_unproven_condition():
    out = fixed("""\
        import torch

        def check(cond):
            torch._check_tensor_all(cond)
    """)
    assert "torch._assert_async(cond._is_all_true())" in out


def test_refusals_and_applied_fixes_are_at_lines_of_the_original_text():
    """A fix that shortens the code above a refused finding does not move where the refusal is reported:
    every line is the one ``check`` reports in the file as the user wrote it."""
    from dynalint.analysis.program import Scope
    from dynalint.engine.pipeline import check_source

    code = textwrap.dedent("""\
        import torch


        def g(x):
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            return y


        def f(x):
            y = x + 1
            print("y", y)
            y.mul_(2)
            return y
    """)
    settings = Settings(scope=Scope.ALL)
    found = {d.code: d.line for d in check_source(code, "m.py", settings)}
    result = fix_source(code, "m.py", settings, unsafe=True)
    assert result.source.count("\n") < code.count("\n")  # the first fix moved the lines below it
    assert [(a.code, a.line) for a in result.applied] == [("DYN101", found["DYN101"])]
    refused = [r for r in result.refused if r.fixer == "defer-logging"]
    assert refused and all(r.line == found["DYN105"] for r in refused), result.refused
