"""User text with control characters (an ESC sequence that would clear the screen, a carriage
return that would rewrite the line) is shown escaped by every command, in its output and in its
errors; a JSON output stays valid JSON that reads back the same text."""

from __future__ import annotations

import json
from pathlib import Path

from recallwatch._terminal import ShownStream, shown
from tests.clirun import cli

CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
C1 = "\x9b2J"  # the same with the one-character CSI


def _files(tmp_path: Path) -> dict[str, Path]:
    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_text(f"q{CLEAR}1 0 d{C1}1 1\nq2 0 d2 1\n", encoding="utf-8")
    run.write_text(f"q{CLEAR}1 Q0 d{C1}1 1 2.0 t\nq2 Q0 d3 1 1.0 t\n", encoding="utf-8")
    return {"qrels": qrels, "run": run}


def test_output_shows_control_characters_escaped(tmp_path: Path) -> None:
    f = _files(tmp_path)
    for fmt in ("table", "tsv"):
        code, out, err = cli("eval", str(f["qrels"]), str(f["run"]), "-m", "RR",
                             "--per-query", "--format", fmt)
        assert code == 0, err
        assert "\x1b" not in out + err and "\x9b" not in out + err
        assert "q\\x1b[2J\\x1b[H1" in out


def test_json_output_stays_json_with_the_same_text(tmp_path: Path) -> None:
    f = _files(tmp_path)
    code, out, _ = cli("eval", str(f["qrels"]), str(f["run"]), "-m", "RR", "--per-query",
                       "--format", "json")
    assert code == 0 and "\x1b" not in out and "\x9b" not in out
    assert f"q{CLEAR}1" in json.loads(out)["per_query"]


def test_errors_show_control_characters_escaped(tmp_path: Path) -> None:
    name = tmp_path / f"golden{CLEAR}.yaml"
    code, out, err = cli("gate", str(name), "--results", str(tmp_path / f"r{C1}.jsonl"))
    assert code == 2 and out == ""
    assert "\x1b" not in err and "\x9b" not in err and "golden\\x1b[2J\\x1b[H.yaml" in err
    bad = tmp_path / "bad.qrels"
    bad.write_text(f"q1 0 d1 x{CLEAR}\r\n", encoding="utf-8")
    code, _, err = cli("eval", str(bad), str(_files(tmp_path)["run"]), "-m", "RR")
    assert code == 2 and "\x1b" not in err and "\r" not in err


class _Terminal:
    """A stream that says it is a terminal."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_only_colour_and_style_pass() -> None:
    term = _Terminal()
    stream = ShownStream(term)  # type: ignore[arg-type]
    stream.write(f"\x1b[1;31mSTOP\x1b[0m {CLEAR}\tok\n")
    assert term.text == "\x1b[1;31mSTOP\x1b[0m \\x1b[2J\\x1b[H\tok\n"
    assert shown("\x1b[1mbold\x1b[0m") == "\\x1b[1mbold\\x1b[0m"  # not a terminal: all shown
    assert shown("a\x7fb\x85c") == "a\\u007fb\\u0085c"
