"""Tests compare computed floats with a tolerance (docs/contributing.md#portable-tests): another CPU (another
OpenBLAS kernel, no AVX-512, another libm variant) rounds differently in the last bits, and a test
that only passes with this machine's rounding is a red test command elsewhere.

Whether a float was computed cannot be read from the source, so this scan is narrow on purpose and
flags only forms that are computed results in practice:

* ``round(x, n) == ...`` (or ``!=``): a tolerance that flips at a half-way point; write
  ``x == pytest.approx(y, abs=...)``;
* a float literal with three or more decimals in ``==`` / ``!=`` (``score == 0.673``): inputs and
  settings are round numbers (``0.85``, ``0.5``), figures with many decimals are results;
* ``.tolist() == ...``: a whole array compared bit for bit; use ``numpy.testing.assert_allclose``.

It does not flag ``x == 0.85`` (a stored input read back, a constant, a clamp to a bound, or an exact
ratio such as 3/4, all of which are bit-exact on any IEEE-754 machine): too many of those are
legitimate for a scan to tell them from computed ones. The sources are read with ``ast``.
"""

from __future__ import annotations

import ast

from tests.repo_files import REPO, is_python, repo_files

MIN_DECIMALS = 3


def _decimals(value: float) -> int:
    text = repr(value)
    if "e" in text or "inf" in text or "nan" in text:
        return 99
    return len(text.partition(".")[2].rstrip("0"))


def _exact_float_problem(side: ast.expr) -> str | None:
    if isinstance(side, ast.Constant) and isinstance(side.value, float) and _decimals(side.value) >= MIN_DECIMALS:
        return f"the float {side.value!r} compared exactly"
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Name) and side.func.id == "round":
        return "round(...) compared exactly"
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.func.attr == "tolist":
        return ".tolist() compared exactly"
    return None


def exact_float_comparisons(source: str, name: str) -> list[str]:
    """``file:line: problem`` for every flagged comparison in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            problem = next(filter(None, map(_exact_float_problem, (node.left, *node.comparators))), None)
            if problem:
                found.append(f"{name}:{node.lineno}: {problem}: {ast.unparse(node)[:100]}")
    return found


def test_no_test_compares_a_computed_float_bit_for_bit() -> None:
    found = [
        problem
        for path in repo_files()
        if is_python(path) and path.relative_to(REPO).parts[0] in ("tests", "bench")
        for problem in exact_float_comparisons(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert found == [], "use pytest.approx / numpy.testing.assert_allclose:\n" + "\n".join(found)


def test_the_scan_flags_the_forms_it_names_and_leaves_inputs_alone() -> None:
    flagged = exact_float_comparisons(
        "assert round(day1.score, 2) == 0.57\n"
        "assert fresh.score == 0.673\n"
        "assert vector.tolist() == expected\n"
        "assert 0.0001 != value\n",
        "example.py",
    )
    assert [line.split(": ")[1] for line in flagged] == [
        "round(...) compared exactly",
        "the float 0.673 compared exactly",
        ".tolist() compared exactly",
        "the float 0.0001 compared exactly",
    ]
    assert (
        exact_float_comparisons(
            "assert options['similarity_threshold'] == 0.85\n"
            "assert result.bonus == 0.0\n"
            "assert score == pytest.approx(0.673, abs=5e-4)\n"
            "assert value >= 0.12345\n",
            "example.py",
        )
        == []
    )
