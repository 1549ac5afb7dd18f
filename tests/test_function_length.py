"""No function over 80 lines in the gate, ingest and monitor paths: a long function reads as a
chain of named steps instead (issue 36).

A function's length is its body's, from its first statement after the docstring to its last
line: the signature is left out (a command's options are declarations, one or more lines each,
which the typed groups they map to already keep apart), and so is the docstring (what it says
is no step). Nested functions and methods are measured on their own, and count in their
enclosing function's lines too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOST = 80
# The gate, ingest and monitor paths.
CHECKED = ("recallwatch/acceptance", "recallwatch/ops/ingest.py", "recallwatch/ops/monitor.py",
           "recallwatch/cli/ops/monitor.py", "recallwatch/cli/gate.py")


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's last line."""
    body = node.body
    first = body[0]
    if (len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        first = body[1]
    return (node.end_lineno or node.lineno) - first.lineno + 1


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {body_lines(node)} lines"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and body_lines(node) > MOST]


def checked_files() -> list[Path]:
    out: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_no_function_in_the_gate_ingest_and_monitor_paths_is_over_80_lines() -> None:
    files = checked_files()
    assert len(files) > len(CHECKED)  # the paths exist (a rename would empty the check)
    found = [line for path in files for line in long_functions(path)]
    assert found == [], (f"over {MOST} lines (split them into named steps):\n"
                         + "\n".join(found))


def test_the_measure_leaves_out_the_signature_and_the_docstring(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('def f(\n    a: int,\n) -> None:\n    """Doc.\n\n    More."""\n'
                   "    x = a\n    if x:\n        pass\n\n\ndef g() -> str:\n"
                   '    """Only a docstring."""\n', encoding="utf-8")
    tree = ast.parse(src.read_text(encoding="utf-8"))
    f, g = (n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert body_lines(f) == 3 and body_lines(g) == 1
