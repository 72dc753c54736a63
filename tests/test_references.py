"""Every reference in the repository leads to something a person who cloned it can read.

The files read are the repository's own (``tests/repo_files.py``: what git tracks or would track),
Django's migrations included, as text; a file that is not UTF-8 text (an image) is skipped. Two checks.

**(a) No citation of a document that does not ship.** The project was specified in documents kept
outside the repository — numbered specifications ("seeds"), a design document, an issue tracker — and a
reference to one of them is a dead end for a reader. The reason is written where it is needed, or the
``docs/`` page that explains it is named. What counts as such a citation (``CITATIONS``), case aside:

* a specification by number: the word seed (or seeds), then optional spaces, ``_`` or ``-``, then three
  digits starting with 0 — also inside a name, such as a test function's;
* a specification by name: seed with a possessive (apostrophe-s; the plural's apostrophe after "the"),
  or followed by ``-format``, ``template`` or ``example``; the word seed or seeds as a part of a test
  function's name (``test_…_seed_…``: a test is named for the behaviour it checks, and the repository's
  tests have no random seed in their names);
* a specification's number alone, 000 to 004: followed by apostrophe-s, or right after an opening
  parenthesis and followed by ``:``, ``,`` or ``)``;
* an issue: issue (or issues), spaces (or ``_`` in a name), an optional ``#``, digits; and "the
  issue's", which names none. One form is allowed, because a full URL names its own target: the same
  line also holds an ``http(s)://`` URL whose path ends in ``/issues/<the same number>`` or
  ``/pull/<the same number>`` (another project's tracker, cited with the link that opens it). A data
  value such as the labelled set's ``issue-17`` source tag (a hyphen, no space) is not matched;
* the design document: its name as one upper-case word; and a section sign, unless it follows a public
  standard's name and number (``RFC 6750`` then the sign is a reference anyone can follow);
* the folder those documents sit in beside the repository: ``../shared``, or a path through ``shared/``
  to the design, the seeds or the evaluation's README. A data file a user provides may be named by
  where it is looked for (``bench/README.md``: the LoCoMo file): it is data, not a document to read.

Not citations, and not matched: a random seed (``--seed``, ``seed=``, "seed the random generator", "a
fixed seed", "flaky test seeds"), "design" in lower case, figures such as ``2,000)``.

**(b) Every reference to a page of the repository resolves.**

* a ``docs/<page>.md`` path (optionally ``#anchor``) anywhere — code, comments, templates, Markdown — names
  a file that exists, from the repository's root;
* a relative link of a Markdown file (``[text](target)`` or a ``[label]: target`` definition, outside
  code blocks and code spans) names a file or folder that exists, relative to that Markdown file; a link
  to another site (``https:``, ``mailto:``…) is not followed;
* an anchor, in either form, names a heading of the target Markdown file by GitHub's slug: the heading's
  text as rendered (code spans' and links' text kept, markup dropped), lower case, every character that
  is not a letter, digit, ``_``, ``-`` or space removed, spaces turned into hyphens; a repeated heading
  gets ``-1``, ``-2``… (an explicit ``<a id=…>`` or ``<a name=…>`` counts too).

Each failure names the file and line. This module is not read for (a): its examples must show the
forms it refuses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.repo_files import REPO, repo_files

SELF = Path(__file__).resolve()

# --- (a) citations of documents that do not ship -----------------------------------------------------

CITATIONS: dict[str, re.Pattern[str]] = {
    "a specification by number": re.compile(r"(?<![a-z])seeds?[\s_-]*0\d\d", re.I),
    "a specification by name": re.compile(
        r"(?<![a-z])seed(?:'s\b|[-_ ]format\b|[_ ]template\b|[_ ]example\b)|\bthe seeds'"
        r"|\btest(?:_[a-z0-9]+)*?_seeds?(?:_|\b)",  # a test's name that names the seed
        re.I,
    ),
    "a specification's number": re.compile(r"(?<![\w.,:/-])00[0-4]'s\b|\(00[0-4][:,)]"),
    "an issue": re.compile(r"(?<![a-z])issues?[\s_]+#?(\d+)|\bthe issue's", re.I),
    "the design document": re.compile(r"\bD[E]SIGN\b"),  # its name in upper case
    "a design section": re.compile(r"(?<!\bRFC \d{4} )(?<!\bRFC \d{3} )\u00a7"),
    "the specification folder": re.compile(r"\.\./shared\b|\bshared/(?:D[E]SIGN|seeds?)\b|\bshared/eval/README"),
}
# an issue cited together with the URL that opens it: https://github.com/<owner>/<repo>/issues/<n>
LINKED_ISSUE = re.compile(r"https?://\S+/(?:issues|pull)/(\d+)\b")


def citations(line: str) -> Iterator[str]:
    """What in ``line`` cites a document that is not in the repository: ``kind: 'the text'``."""
    linked = set(LINKED_ISSUE.findall(line))
    taken: list[range] = []  # a numbered specification with a possessive is one citation, not two
    for kind, pattern in CITATIONS.items():
        for match in pattern.finditer(line):
            if kind == "an issue" and match.group(1) in linked:
                continue
            if any(match.start() in span or span.start in range(*match.span()) for span in taken):
                continue
            taken.append(range(*match.span()))
            yield f"{kind}: {match.group(0)!r}"


def text_files() -> list[Path]:
    """The repository's files that are text, migrations included (their comments are read too)."""
    found = []
    for path in repo_files(skipped_dirs=frozenset({"__pycache__"})):
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        found.append(path)
    return found


def lines_of(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)


def where(path: Path, number: int) -> str:
    return f"{path.relative_to(REPO)}:{number}"


# --- (b) references to the repository's own pages -------------------------------------------------------

DOCS_PATH = re.compile(r"(?<![\w/.-])(docs/[\w./-]*?\.md)(?:#([\w-]+))?")
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
LINK_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
OTHER_SITE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, …
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+).+?\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:id|name)=\"([^\"]+)\"", re.I)


def _markup_dropped(text: str) -> str:
    text = re.sub(r"<[^>]+>|\*\*|\*|~~", "", text)
    # underscores emphasise only at a word's edge: "memory_ask" keeps its underscore, "_the_" loses them
    return re.sub(r"(?<!\w)(__?)(?=\S)(.+?)(?<=\S)\1(?!\w)", r"\2", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    # a code span's text is kept as written; outside code spans, HTML tags and emphasis markers go
    parts = re.split(r"(`+[^`]*`+)", text)
    text = "".join(part.strip("`") if part.startswith("`") else _markup_dropped(part) for part in parts)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def markdown_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of a Markdown file outside fenced code blocks."""
    fenced = False
    for number, line in lines_of(path):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in markdown_lines(path):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(target: Path, anchor: str | None) -> str | None:
    """Why ``target#anchor`` does not resolve, or None."""
    target = target.resolve()
    if not target.exists():
        return "no such file"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"no heading with the anchor #{anchor} in {target.relative_to(REPO)}"
    return None


def markdown_links(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in markdown_lines(path):
        definition = LINK_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
            continue
        for match in INLINE_LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, match.group(1)


# --- the rules, pinned on examples ------------------------------------------------------------------------


# The examples of citations name their words through placeholders, so that this file, like every other,
# holds no citation a reader would try to follow.
WORDS = {
    "s": "seed",
    "S": "Seed",
    "i": "issue",
    "I": "Issue",
    "D": "DES" + "IGN",
    "sect": "\u00a7",
    "shared": "../shared",
}


def spelled(example: str) -> str:
    return example.format(**WORDS)


@pytest.mark.parametrize(
    "line",
    [
        spelled(example)
        for example in (
            "({s} 001)",
            "{S} 003's promotion ladder",
            "{s}s 000, 002, 004",
            "def test_the_defaults_are_{s}_003s_criteria():",
            "with_{s}_000s_project_id",
            "strict where the {s}'s SQL is strict",
            "any drift from the {s}s' wording",
            "{s}-format replies",
            "def test_{s}_example_reply_is_parsed(self) -> None:",
            "def test_recency_boost_follows_the_{s}_formula_inside_the_year():",
            "def test_other_criteria_come_from_the_settings_not_the_{s}(settings):",
            "What the {s} template shows",
            "(002's MemoryEdge, 004's links)",
            "(003: after 20 new memories)",
            "Supersession first (002, conservative)",
            "{i} 14 item 6a",
            "({i} #3)",
            "{I} 13's targets",
            "def test_the_eight_pairs_of_{i}_17_are_in(items):",
            "the {i}'s eight opposite pairs",
            "{i}s 11 and 17",
            "One contract per operation ({D} {sect}3)",
            "see {D}.md",
            "{s} 004 {sect}9 gherkin",
            "protocol: {shared}/eval/README.md",
            "the {i} 7 fix, see https://github.com/example/project/issues/8",
        )
    ],
)
def test_a_citation_of_a_document_outside_the_repository_is_found(line: str) -> None:
    assert list(citations(line)), line


@pytest.mark.parametrize(
    "line",
    [
        "Seed the random generator in the test setup so failures reproduce.",
        'p.add_argument("--seed", type=int, default=0)',
        "rng = np.random.default_rng(seed + 1)",
        "generated from a fixed seed so that the file holds no literal credential",
        '"--seed", "20261111",  # the same cases every run',
        "title='Pin flaky test seeds'",
        "def test_search_finds_the_seeded_memories(seeded):",
        "bearer token was sent (RFC 6750 §3.1)",
        "chunks of 2,000) and 1,000)",
        "a timestamp 2023-05-08 14:30:00 (local)",
        spelled("their tracker: claude-mem {i} #412, https://github.com/thedotmack/claude-mem/issues/412"),
        '{"source": "issue-17"}',
        "a design choice",
        "(docs/search.md#ranking)",
    ],
)
def test_ordinary_text_is_not_a_citation(line: str) -> None:
    assert not list(citations(line)), list(citations(line))


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Asking the bank: `memory_ask`", "asking-the-bank-memory_ask"),
        ("`run.sh` supervises what it starts", "runsh-supervises-what-it-starts"),
        ("Recipe 1: a tool (MCP + REST)", "recipe-1-a-tool-mcp--rest"),
        ("401s: RFC 6750 challenges", "401s-rfc-6750-challenges"),
        ("No free connection: `database_unavailable`", "no-free-connection-database_unavailable"),
        ("The [format](export-import.md), **version 1**", "the-format-version-1"),
        ("`__init__.py` and _the_ rest", "__init__py-and-the-rest"),
    ],
)
def test_a_heading_s_anchor_is_github_s_slug(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Limits\n\n```\n## not a heading\n```\n\n## Limits\n", encoding="utf-8")
    assert anchors(page) == {"title", "limits", "limits-1"}


def test_links_in_code_are_not_followed(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See [search](search.md#ranking) and `[x](gone.md)`.\n```\n[y](gone.md)\n```\n[ref]: ../bench/README.md\n",
        encoding="utf-8",
    )
    assert list(markdown_links(page)) == [(1, "search.md#ranking"), (5, "../bench/README.md")]


# --- the repository -----------------------------------------------------------------------------------------


def test_the_listing_reads_code_tests_bench_docs_templates_and_migrations() -> None:
    found = {str(path.relative_to(REPO)) for path in text_files()}
    assert {
        "README.md",
        "pyproject.toml",
        "docs/README.md",
        "bench/README.md",
        "tests/conftest.py",
        "scripts/run.sh",
        "memories/migrations/0001_initial.py",
    } <= found
    assert any(name.startswith("templates/") for name in found)
    assert not any(name.endswith(".png") for name in found)


def test_no_file_cites_a_document_that_is_not_in_the_repository() -> None:
    found = [
        f"{where(path, number)}: {citation}  |  {line.strip()[:120]}"
        for path in text_files()
        if path != SELF
        for number, line in lines_of(path)
        for citation in citations(line)
    ]
    assert not found, (
        f"{len(found)} citations of documents that do not ship; cite a docs/ page or state the reason:\n"
        + "\n".join(found)
    )


def test_every_docs_path_names_a_page_and_heading_that_exist() -> None:
    found = []
    for path in text_files():
        for number, line in lines_of(path):
            for match in DOCS_PATH.finditer(line):
                problem = broken(REPO / match.group(1), match.group(2))
                if problem:
                    found.append(f"{where(path, number)}: {match.group(0)}: {problem}")
    assert not found, "references to docs/ that do not resolve:\n" + "\n".join(found)


def test_every_relative_markdown_link_resolves() -> None:
    found = []
    for path in text_files():
        if path.suffix != ".md":
            continue
        for number, target in markdown_links(path):
            if OTHER_SITE.match(target):
                continue
            name, _, anchor = target.partition("#")
            problem = broken(path.parent / name if name else path, anchor or None)
            if problem:
                found.append(f"{where(path, number)}: {target}: {problem}")
    assert not found, "Markdown links that do not resolve:\n" + "\n".join(found)


def test_the_bench_fingerprints_files_that_exist() -> None:
    """bench/_util.py records a hash of the product files its figures depend on and skips a missing one
    without a word, so a moved file would quietly leave the fingerprint."""
    from bench._util import CODE_FILES

    missing = [name for name in CODE_FILES if not (REPO / name).is_file()]
    assert not missing, f"bench/_util.py CODE_FILES names files that do not exist: {missing}"
