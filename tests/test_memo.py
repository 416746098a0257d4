"""The memo the analysis computes its per-key results with: computed once, and a fallback for a key asked
for again while it is being computed."""
from __future__ import annotations

from dynalint.analysis.memo import Memo


def test_a_result_is_computed_once():
    memo: Memo[str, int] = Memo()
    runs = []

    def compute() -> int:
        runs.append(1)
        return 7

    assert memo.get("k", compute, lambda: -1) == 7
    assert memo.get("k", compute, lambda: -1) == 7
    assert runs == [1]


def test_a_recursive_request_gets_the_fallback_of_the_outer_one():
    memo: Memo[int, list[int]] = Memo()
    seen: list[list[int]] = []

    def build(partial: list[int]) -> list[int]:
        partial.append(1)
        seen.append(memo.get(0, lambda: build([]), lambda: [99]))  # re-entered: the outer one's partial result
        partial.append(2)
        return partial

    outer: list[int] = []
    assert memo.get(0, lambda: build(outer), lambda: outer) == [1, 2]
    assert seen == [[1, 2]] and seen[0] is outer


def test_a_limit_gives_the_fallback_and_remembers_nothing():
    memo: Memo[str, int] = Memo()
    assert memo.get("k", lambda: 1, lambda: 0, start=False) == 0
    assert memo.get("k", lambda: 1, lambda: 0) == 1


def test_without_remembering_only_the_guard_is_kept():
    memo: Memo[str, int] = Memo(remember=False)
    counter = iter(range(10))
    assert memo.get("k", lambda: next(counter), lambda: -1) == 0
    assert memo.get("k", lambda: next(counter), lambda: -1) == 1
    assert memo.get("k", lambda: memo.get("k", lambda: 5, lambda: -1), lambda: -2) == -2


def test_a_failed_computation_leaves_the_key_free():
    memo: Memo[str, int] = Memo()

    def fail() -> int:
        raise ValueError

    try:
        memo.get("k", fail, lambda: -1)
    except ValueError:
        pass
    assert memo.get("k", lambda: 3, lambda: -1) == 3
