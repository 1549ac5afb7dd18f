"""docs/python.md works as written: its ```python blocks run in order in a copy of
examples/notebook/; each of the four recipes (evaluate, fuse, compare, gate) ends in a DataFrame
and is no longer than the same task written with ranx; what the page says a block prints, it
prints."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python.md"
RECIPES = ("Evaluate", "Fuse", "Compare", "Gate")

# The same tasks with ranx (its documented calls), a DataFrame out where ranx has one.
RANX = {
    "Evaluate": """\
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file("qrels.txt", kind="trec")
run = Run.from_file("bm25.run", kind="trec")
evaluate(qrels, run, ["ndcg@10", "recall@10"])
""",
    "Fuse": """\
from ranx import Run, fuse
bm25 = Run.from_file("bm25.run", kind="trec")
dense = Run.from_file("dense.run", kind="trec")
fused = fuse(runs=[bm25, dense], method="rrf")
fused.to_dataframe()
""",
    "Compare": """\
from ranx import Qrels, Run, compare, fuse
qrels = Qrels.from_file("qrels.txt", kind="trec")
bm25 = Run.from_file("bm25.run", kind="trec")
dense = Run.from_file("dense.run", kind="trec")
runs = [bm25, dense, fuse(runs=[bm25, dense], method="rrf")]
compare(qrels, runs=runs, metrics=["ndcg@10", "recall@10"]).to_dataframe()
""",
}
# ranx has no gate: the gate recipe is held to the length of the evaluate one.
RANX["Gate"] = RANX["Evaluate"]


@dataclass(frozen=True)
class Block:
    line: int
    section: str
    code: str
    prints: str | None  # what the text after the block says it prints


def blocks(markdown: str) -> list[Block]:
    lines = markdown.splitlines()
    out, section, i = [], "", 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        if lines[i].strip() == "```python":
            end = lines.index("```", i + 1)
            out.append(Block(i + 2, section, "\n".join(lines[i + 1:end]) + "\n",
                             _prints(lines[end + 1:])))
            i = end
        i += 1
    return out


def _prints(after: list[str]) -> str | None:
    """The text of "prints `…`." in the paragraph right after a block, if it opens with it."""
    paragraph = []
    for line in after[1:] if after and not after[0].strip() else after:
        if not line.strip():
            break
        paragraph.append(line.strip())
    said = re.match(r"prints `(.+?)`\.", " ".join(paragraph))
    return said.group(1) if said else None


BLOCKS = blocks(PAGE.read_text(encoding="utf-8"))


def lines_of(code: str) -> int:
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def run_block(block: Block, namespace: dict[str, Any]) -> tuple[Any, str]:
    """Run a block; returns the value of its last line when that is an expression, and what it
    printed."""
    tree = ast.parse(block.code, f"docs/python.md:{block.line}")
    last = tree.body[-1] if isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(tree.body[:-1] if last else tree.body, type_ignores=[])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(body, f"docs/python.md:{block.line}", "exec"), namespace)
        value = (eval(compile(ast.Expression(last.value), f"docs/python.md:{block.line}",
                              "eval"), namespace) if last else None)
    return value, printed.getvalue()


def test_the_page_has_its_four_recipes() -> None:
    assert [b.section for b in BLOCKS][:4] == list(RECIPES)
    assert any(b.prints for b in BLOCKS)


def test_every_block_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    shutil.copytree(ROOT / "examples" / "notebook", tmp_path / "notebook")
    monkeypatch.chdir(tmp_path / "notebook")
    namespace: dict[str, Any] = {}
    for block in BLOCKS:
        value, printed = run_block(block, namespace)
        where = f"docs/python.md:{block.line}"
        if block.section in RECIPES and block is next(b for b in BLOCKS
                                                      if b.section == block.section):
            assert isinstance(value, pd.DataFrame) and len(value), where
        if block.prints is not None:
            assert " ".join(printed.split()) == block.prints, where
    # the gate recipe recorded its run
    assert (tmp_path / "notebook" / "runs.db").is_file()


@pytest.mark.parametrize("section", RECIPES)
def test_each_recipe_is_no_longer_than_ranxs(section: str) -> None:
    recipe = next(b for b in BLOCKS if b.section == section)
    assert lines_of(recipe.code) <= lines_of(RANX[section]), (
        f"docs/python.md:{recipe.line}: {lines_of(recipe.code)} lines; ranx takes "
        f"{lines_of(RANX[section])}")
