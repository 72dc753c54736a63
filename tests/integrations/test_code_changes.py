"""What a commit changed, as the git hook and the plugin report it (reasoningbank_hooks/code_changes.py,
docs/code-memory.md#staleness): git's output parsed, the symbols of Python (ast) and of brace and
indentation languages (the heuristic), the innermost symbols a hunk touches, and one commit of a real
repository read end to end."""

from __future__ import annotations

from pathlib import Path

from tests.git_repo import REMOTE, Repo, code_changes

FileChange, Hunk, Symbol = code_changes.FileChange, code_changes.Hunk, code_changes.Symbol
braced_symbols, indented_symbols = code_changes.braced_symbols, code_changes.indented_symbols
name_status_parse, hunks_parse = code_changes.name_status_parse, code_changes.hunks_parse
python_symbols, symbols_of, touched_symbols = (
    code_changes.python_symbols,
    code_changes.symbols_of,
    code_changes.touched_symbols,
)

PYTHON = '''\
import os


class Parser:
    """Reads things."""

    def parse(self, text):
        return text.strip()

    @staticmethod
    def helper(value):
        def inner():
            return value
        return inner


async def fetch(url):
    return url
'''


def names(symbols: list[Symbol] | None) -> list[tuple[str, int, int]]:
    assert symbols is not None
    return [(s.name, s.start, s.end) for s in symbols]


def test_python_symbols_are_dotted_and_a_decorated_function_starts_at_its_decorator() -> None:
    assert names(python_symbols(PYTHON)) == [
        ("Parser", 4, 14),
        ("Parser.parse", 7, 8),
        ("Parser.helper", 10, 14),
        ("Parser.helper.inner", 12, 13),
        ("fetch", 17, 18),
    ]


def test_python_that_does_not_parse_is_read_by_its_indentation_instead() -> None:
    broken = "class A:\n    def run(self):\n        return (\n\ndef after():\n    pass\n"
    assert python_symbols(broken) is None
    assert [s.name for s in symbols_of("a.py", broken) or []] == ["A", "A.run", "after"]


def test_brace_languages_give_their_functions_classes_and_go_methods_with_a_receiver() -> None:
    go = (
        'package main\n\nfunc (p *Parser) Parse(s string) int {\n\tif s == "}" {\n\t\treturn 1\n\t}\n\treturn 0\n}\n'
        "\nfunc main() {\n}\n"
    )
    assert names(braced_symbols(go)) == [("Parser.Parse", 3, 8), ("main", 10, 11)]
    ts = (
        "export class Cart {\n  total(items: Item[]): number {\n    return items.length; // }\n  }\n}\n"
        "export const sum = (a: number, b: number) => {\n  return a + b;\n};\n"
        "function helper(x) {\n  if (x) {\n    return x;\n  }\n}\n"
    )
    assert names(braced_symbols(ts)) == [("Cart", 1, 5), ("Cart.total", 2, 4), ("sum", 6, 8), ("helper", 9, 13)]
    rust = "impl Stack {\n    pub fn push(&mut self, x: i32) {\n        self.v.push(x);\n    }\n}\nfn main() {}\n"
    assert names(braced_symbols(rust)) == [("Stack", 1, 5), ("Stack.push", 2, 4), ("main", 6, 6)]


def test_a_declaration_without_a_body_and_a_control_statement_are_no_symbols() -> None:
    java = (
        "interface Shape {\n  double area();\n}\n"
        "class Sq {\n  double area() {\n    if (x) {\n      return 1;\n    }\n    return 2;\n  }\n}\n"
    )
    assert names(braced_symbols(java)) == [("Shape", 1, 3), ("Sq", 4, 11), ("Sq.area", 5, 10)]


def test_ruby_blocks_end_with_their_end() -> None:
    ruby = "class Cart\n  def total\n    1\n  end\n\n  def size\n    2\n  end\nend\n"
    assert names(indented_symbols(ruby)) == [("Cart", 1, 9), ("Cart.total", 2, 4), ("Cart.size", 6, 8)]


def test_an_unknown_language_has_no_symbols_rather_than_none_touched() -> None:
    assert symbols_of("README.md", "# def f():\n") is None
    assert symbols_of("Makefile", "all:\n") is None


def test_git_name_status_gives_each_files_status_and_a_renames_old_path() -> None:
    output = "M\0src/a.py\0R087\0old/b.py\0new/b.py\0D\0gone.py\0A\0new file.py\0T\0link\0"
    changes = name_status_parse(output)
    assert [(c.status, c.path, c.old_path) for c in changes] == [
        ("modified", "src/a.py", ""),
        ("renamed", "new/b.py", "old/b.py"),
        ("deleted", "gone.py", ""),
        ("added", "new file.py", ""),
        ("modified", "link", ""),
    ]


def test_hunks_are_read_per_file_with_gits_default_count_of_one() -> None:
    diff = (
        "diff --git a/a.py b/a.py\nindex 1..2 100644\n--- a/a.py\n+++ b/a.py\n@@ -3 +3 @@ def f():\n-x\n+y\n"
        "@@ -10,0 +11,2 @@\n+z\n+w\ndiff --git a/bin b/bin\nBinary files differ\n"
        "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -5,3 +4,0 @@\n-a\n-b\n-c\n"
    )
    assert hunks_parse(diff) == [[Hunk(3, 1, 3, 1), Hunk(10, 0, 11, 2)], [], [Hunk(5, 3, 4, 0)]]


def test_the_innermost_symbol_is_named_for_removed_lines_in_the_old_file_and_added_ones_in_the_new() -> None:
    old = python_symbols(PYTHON)
    new_source = PYTHON.replace(
        "        return text.strip()\n", "        return text.strip()\n\n\ndef added():\n    pass\n"
    )
    new = python_symbols(new_source)
    # line 8 replaced: parse; a line of the nested function: inner only (the service counts it for helper)
    assert touched_symbols(old, old, [Hunk(8, 1, 8, 1)]) == ["Parser.parse"]
    assert touched_symbols(old, old, [Hunk(13, 1, 13, 1)]) == ["Parser.helper.inner"]
    # an import changed: no symbol; lines inserted in the new file: the symbol they land in
    assert touched_symbols(old, old, [Hunk(1, 1, 1, 1)]) == []
    assert touched_symbols(old, new, [Hunk(8, 0, 9, 5)]) == ["added"]
    assert touched_symbols(None, None, [Hunk(1, 1, 1, 1)]) is None


def test_a_file_reports_old_side_hunks_and_too_many_hunks_become_one_span() -> None:
    change = FileChange("modified", "a.py", hunks=[Hunk(i * 10, 1, i * 10, 1) for i in range(1, 600)], symbols=["f"])
    body = change.as_report()
    assert body["hunks"] == [{"start": 10, "lines": 5981}] and body["symbols"] == ["f"]
    assert FileChange("deleted", "b.py", hunks=[Hunk(1, 9, 0, 0)]).as_report() == {"status": "deleted", "path": "b.py"}
    renamed = FileChange("renamed", "new.py", old_path="old.py", hunks=[Hunk(2, 0, 3, 1)], symbols=None).as_report()
    assert renamed == {"status": "renamed", "path": "new.py", "old_path": "old.py", "hunks": [{"start": 2, "lines": 0}]}


def test_one_commit_of_a_real_repository_is_read_with_its_statuses_hunks_and_symbols(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("app/parser.py", PYTHON)
    repo.write("app/old.py", "def legacy():\n    return 1\n")
    repo.write("web/cart.js", "function total(items) {\n  return items.length;\n}\n")
    repo.write("notes.txt", "hello\n")
    first = repo.commit("first", at=0)
    repo.write("app/parser.py", PYTHON.replace("text.strip()", "text.strip().lower()"))
    repo.git("mv", "web/cart.js", "web/basket.js")
    repo.git("rm", "-q", "app/old.py")
    repo.write("notes.txt", "hello again\n")
    second = repo.commit("second", at=60)

    body = repo.report(second)

    assert body["repository"] == REMOTE and body["commit"] == second and body["committed_at"] == "2026-09-21T14:14:20Z"
    assert {f["path"]: f for f in body["files"]} == {
        "app/old.py": {"status": "deleted", "path": "app/old.py"},
        "app/parser.py": {"status": "modified", "path": "app/parser.py", "hunks": [{"start": 8, "lines": 1}],
                          "symbols": ["Parser.parse"]},
        "notes.txt": {"status": "modified", "path": "notes.txt", "hunks": [{"start": 1, "lines": 1}]},
        "web/basket.js": {"status": "renamed", "path": "web/basket.js", "old_path": "web/cart.js", "hunks": [],
                          "symbols": []},
    }  # fmt: skip
    root = repo.report(first)  # a root commit: every file added
    assert sorted((f["status"], f["path"]) for f in root["files"]) == [
        ("added", "app/old.py"), ("added", "app/parser.py"), ("added", "notes.txt"), ("added", "web/cart.js"),
    ]  # fmt: skip
