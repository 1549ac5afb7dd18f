"""libyaml reads YAML files for speed; the Python loader stays the authority. On every file the
project ships and on tricky documents, both give the same data (line numbers included), and a
document one refuses the other refuses too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recallwatch.formats import structured
from recallwatch.formats.structured import MAX_NESTING, _LineLoader, _load_yaml

pytestmark = pytest.mark.skipif(structured._FastLineLoader is None,
                                reason="PyYAML built without libyaml")

ROOT = Path(__file__).resolve().parents[2]

TRICKY = [
    "a: 1\nb: [1, 2, {c: d}]\n",
    "q:\n  - id: x\n    text: >\n      folded\n      text\n  - id: y\n    text: |\n      kept\n",
    "a: &anchor 1\nb: 2\n",  # an anchor no alias uses
    "a: &x {b: 1}\nc: *x\n",  # an alias: refused
    "base: &b {k: 1}\nother:\n  <<: *b\n  j: 2\n",  # a merge key (an alias)
    "a: 1\na: 2\n",  # a duplicate key
    "a:\n  b: 1\n  b: 2\n",
    "when: 2026-12-01\nat: 2026-12-01T05:00:00Z\nbad: 2026-13-45\n",
    "yes: no\nnull_value: ~\nfloat: 1e3\nhex: 0x1F\noct: 0o17\nbig: 123456789012345678901234\n",
    "one\x85two: 3\nnext: 4\n",  # NEL, a line break for YAML 1.1
    "a: 1\u2028b: 2\nc: 3\n",
    "a: 1\r\nb:\r\n  - x\r\n  - y\r\n",
    "s: \"\\ud800\"\n",  # an unpaired surrogate escape
    "s: \"\\U0001F600 ok\"\n",
    "--- \na: 1\n--- \nb: 2\n",  # two documents
    "%YAML 1.1\n---\na: 1\n...\n",
    "a: [1, 2\n",  # a syntax error
    "a: b: c\n",
    "\ta: 1\n",
    "a: 'it''s'\nb: \"tab\\tnewline\\n\"\n",
    "__line__: 3\n",  # the reserved key
    "? [1, 2]\n: complex key\n",
    "k: v\x07\n",  # a control character
    "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n",
    "[" * MAX_NESTING + "]" * MAX_NESTING + "\n",
    "",
    "# only a comment\n",
]


def _python(text: str) -> tuple[str, object]:
    try:
        return "ok", yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        return "refused", str(exc)


def _fast(text: str) -> tuple[str, object]:
    try:
        return "ok", _load_yaml(text)
    except yaml.YAMLError as exc:
        return "refused", str(exc)


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_documents_read_or_refused_alike(text: str) -> None:
    assert _fast(text) == _python(text)


def test_every_yaml_file_the_project_ships_reads_alike() -> None:
    files = [p for pattern in ("examples/**/*.yaml", "tests/**/*.yaml", "docs/**/*.yaml")
             for p in sorted(ROOT.glob(pattern))]
    assert len(files) >= 3  # the example golden sets and policy
    for path in files:
        text = path.read_bytes().decode("utf-8-sig")
        assert _fast(text) == _python(text), path


def test_the_fast_path_is_taken_for_a_plain_golden_set() -> None:
    text = (ROOT / "examples" / "kb" / "golden.yaml").read_text("utf-8")
    assert structured._nothing_to_refuse(text)
    assert yaml.load(text, Loader=structured._FastLineLoader) == _python(text)[1]
