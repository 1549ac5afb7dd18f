"""Words a user can read without the book the method comes from.

The README, the changelog, the docs (docs/cli-reference.md is generated from the CLI and checked
with it), the example knowledge base, the strings and templates of the package outside
recallwatch/cli/, and what the gate prints on the example's STOP run (terminal, Markdown, JUnit,
HTML) carry no reference to a chapter, the product spec's sections or the source texts: a user has
read none of them. The README's "Acknowledgements" section is the one place that names the
source. The terms of art (Gold, waiver, noise ceiling) are explained where the README first uses
them, and a diagnosis names its cause instead of a bare step number.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import lxml.html
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KB = ROOT / "examples" / "kb"
ACKNOWLEDGEMENTS = "Acknowledgements"

# A reference to the book or to the spec a user never sees: "chapter 17", "the chapter's",
# "capítulo", "cap. 10", "SPEC §2", "§6", "seeds/", "the seed chapter", "the book", and the book's
# numbering of its figures, tables and listings ("figure 18.7", "listing 18.12").
BOOK = re.compile(
    r"\bchapters?\b|\bcap[ií]tulos?\b|\bcaps?\.\s*\d|\bSPEC\s*§|§\s*\d|\bseeds/"
    r"|\bseed\s+(?:chapters?|texts?|files?)\b|\bthe\s+book\b"
    r"|\b(?:figures?|fig\.?|listings?|tables?)\s+1[78]\.\d",
    re.IGNORECASE,
)
# A diagnosis shown by its step number alone: "2. description: …".
BARE_STEP = re.compile(r"(?:^|\s|>)\d\.\s+(?:chunking|description|labelling|embedding|noise):",
                       re.MULTILINE)


def book_references(text: str) -> list[str]:
    """Each reference found, with a little context."""
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
            for m in BOOK.finditer(text)]


def sections(markdown: str) -> dict[str, str]:
    """The text under each ``## `` heading ("" for what comes before the first)."""
    parts = re.split(r"^## +(.+)$", markdown, flags=re.MULTILINE)
    out = {"": parts[0]}
    for title, body in zip(parts[1::2], parts[2::2]):
        out[title.strip()] = out.get(title.strip(), "") + body
    return out


def text_files(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            try:
                path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            found.append(path)
    return found


def test_the_pattern_finds_what_it_must_and_only_that() -> None:
    for text in ("(chapters 10–12)", "chapter 17's story", "the chapter's order", "capítulo 17",
                 "Capítulos 6-9", "(cap. 10)", "SPEC §2", "see §6", "the SPEC §6 keys",
                 "/work/shared/seeds/000.txt", "the seed chapter", "as the book says",
                 "figure 18.7", "listing 18.12", "table 18.1", "Fig 18.1: metrics"):
        assert BOOK.search(text), text
    for text in ("seed 0", "`--seed N`", "seeded templates", "a random seed", "seed: 18",
                 "--embedder SPEC", "the table of travel profiles", "table 1", "libros registro",
                 "capped recall", "fig18_1_metrics.png", "table18_1_quantization.md"):
        assert not BOOK.search(text), text


def test_the_readme_names_the_source_once_in_its_acknowledgements() -> None:
    parts = sections(README.read_text(encoding="utf-8"))
    assert ACKNOWLEDGEMENTS in parts, "README.md: no Acknowledgements section"
    assert "Capítulo 17" in parts[ACKNOWLEDGEMENTS] and "Capítulo 18" in parts[ACKNOWLEDGEMENTS]
    outside = {title: book_references(text) for title, text in parts.items()
               if title != ACKNOWLEDGEMENTS}
    assert not {t: r for t, r in outside.items() if r}, outside


@pytest.mark.parametrize(
    "path",
    [ROOT / "CHANGELOG.md"]
    + [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli-reference.md"]
    + text_files(ROOT / "examples"),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_changelog_docs_and_example_have_no_book_references(path: Path) -> None:
    found = book_references(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: {found}"


def _explained(text: str, term: str, explanation: str, window: int = 200) -> bool:
    """``explanation`` follows the first use of ``term`` within ``window`` characters."""
    first = re.search(term, text)
    if first is None:
        return False
    nearby = " ".join(text[first.start():first.end() + window].split())
    return re.search(explanation, nearby, re.IGNORECASE) is not None


@pytest.mark.parametrize(("term", "explanation"), [
    (r"\bGold\b", r"curated synthesis.*never be missed"),
    (r"\bwaiver\b", r"written diagnosis .*excuses a failing query"),
    (r"\bnoise ceiling\b", r"share of the top-K allowed to score below"),
])
def test_the_readme_explains_each_term_where_it_first_uses_it(term: str,
                                                               explanation: str) -> None:
    text = README.read_text(encoding="utf-8").replace("**", "")
    assert _explained(text, term, explanation), \
        f"README.md: the first {term!r} is not followed by what it means ({explanation!r})"


def _string_constants(path: Path) -> list[tuple[int, str]]:
    """String literals of a module, docstrings left out (they are for the code's readers)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def _package_files() -> list[Path]:
    package = ROOT / "recallwatch"
    cli = package / "cli"  # its help and messages are checked by the CLI's own tests
    return [p for p in sorted(package.rglob("*"))
            if p.suffix in (".py", ".html", ".js", ".css") and cli not in p.parents]


@pytest.mark.parametrize("path", _package_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_package_strings_and_templates_have_no_book_references(path: Path) -> None:
    if path.suffix == ".py":
        found = [f"line {line}: {ref}" for line, value in _string_constants(path)
                 for ref in book_references(value)]
    else:
        found = book_references(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: {found}"


# -- what the gate shows on the example's STOP run -------------------------------------------------

@pytest.fixture(scope="module")
def stop_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Version 1 of the example knowledge base, gated with its policy (a STOP), in every format a
    user reads: the terminal report, Markdown, and the report set's JUnit and HTML."""
    runner = CliRunner(env={"COLUMNS": "200"})
    tmp = tmp_path_factory.mktemp("plain words")
    store = f"lancedb://{tmp / 'kb'}?table=chunks"
    ingest = runner.invoke(app, ["ingest", str(KB / "corpus_v1.jsonl"), "--store", store,
                                 "--no-progress"])
    assert ingest.exit_code == 0, ingest.stderr
    gate = ["gate", str(KB / "golden.yaml"), "--store", store, "--policy",
            str(KB / "policy.yaml"), "--no-history", "--run-date", "2025-06-01"]
    table = runner.invoke(app, [*gate, "--report", str(tmp / "report")])
    markdown = runner.invoke(app, [*gate, "--format", "markdown"])
    assert table.exit_code == markdown.exit_code == 1, table.stderr + markdown.stderr
    html = lxml.html.parse(str(tmp / "report" / "report.html")).getroot()
    return {
        "terminal": table.stdout + table.stderr,
        "markdown": markdown.stdout + markdown.stderr,
        "junit": (tmp / "report" / "junit.xml").read_text(encoding="utf-8"),
        "html": html.text_content(),
    }


@pytest.mark.parametrize("shown", ["terminal", "markdown", "junit", "html"])
def test_the_gate_speaks_plainly_on_the_example(stop_run: dict[str, str], shown: str) -> None:
    text = stop_run[shown]
    assert "STOP" in text
    assert not book_references(text), book_references(text)
    # the failing tables' diagnosis names its cause and says what to do
    flat = " ".join(text.replace("\\", "").split())  # Markdown escapes: silver\_finanzas
    named = "missing description — " if shown == "html" else "missing description: "
    assert named + "silver_finanzas_123" in flat
    assert "fix: write a description" in flat
    assert not BARE_STEP.search(text), BARE_STEP.search(text)
    if shown != "junit":  # the JUnit file has no place for a legend: each cause is named
        assert "checked for four causes in order" in text
