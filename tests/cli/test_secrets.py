"""A password typed into a PostgreSQL URI, whatever its characters, never appears in anything a
command prints or writes: not when the URI is valid (the server cannot be reached), not when a
reserved character (# / ? @ [ …) breaks it; the error then says to percent-encode."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from recallwatch._redact import ENCODE_HINT
from tests.cli.test_history import _golden, _results
from tests.clirun import cli

# Port 1 on loopback: nothing listens, a connection fails at once.
_HOST = "127.0.0.1:1"


def _passwords() -> list[object]:
    """Every printable character in the first three; random ones after (most of them slow)."""
    rng = random.Random(23)
    printable = string.printable[:95]  # letters, digits, punctuation and the space
    chosen: list[object] = [f"Zq9#pw/x?y@z:{printable[62:]}1", f"Zq9{printable[62:][::-1]}2",
                            "Zq9 a%41b%zz c[d]e3"]
    for i in range(30):
        password = "".join(rng.choice(printable) for _ in range(rng.randint(8, 24)))
        chosen.append(password if i < 3 else pytest.param(password, marks=pytest.mark.slow))
    return chosen


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("secrets")
    probes = d / "probes.txt"
    probes.write_text("one question\nanother question\n", encoding="utf-8")
    corpus = d / "corpus.jsonl"
    corpus.write_text('{"id": "c1", "text": "a chunk"}\n', encoding="utf-8")
    return {"dir": d, "golden": _golden(d), "results": _results(d, "ok", set()),
            "probes": probes, "corpus": corpus, "db": d / "h.db"}


def _commands(uri: str, f: dict[str, Path]) -> list[list[str]]:
    store = f"{uri}?table=chunks"
    return [
        ["gate", str(f["golden"]), "--store", store, "--no-history"],
        ["gate", str(f["golden"]), "--results", str(f["results"]), "--policy",
         str(f["dir"] / "policy.yaml"), "--history", uri],
        ["history", "list", "--history", uri],
        ["history", "copy", str(f["db"]), uri],
        ["ops", "monitor", "--store", store, "--probes", str(f["probes"]), "--no-history"],
        ["ingest", str(f["corpus"]), "--store", store, "--no-history"],
        ["history", "groups", "latest", "--by", "domain", "--history", uri],
    ]


@pytest.mark.parametrize("password", _passwords())
def test_a_typed_password_never_appears(password: str, files: dict[str, Path]) -> None:
    uri = f"postgresql://rw:{password}@{_HOST}/kb"
    for args in _commands(uri, files):
        code, out, err = cli(*args)
        assert code == 2, (args, out, err)
        assert password not in out + err, args
        assert "Internal error" not in err and "Traceback" not in err, err
        assert err.startswith("Error: ") and err.count("\n") == 1, err
    for path in files["dir"].rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("char", "#/?[")
def test_a_password_that_breaks_the_uri_is_refused_with_the_fix(char: str,
                                                                files: dict[str, Path]) -> None:
    code, _, err = cli("history", "list", "--history",
                       f"postgresql://rw:Zq9{char}secret@{_HOST}/kb")
    assert code == 2
    assert "secret" not in err and ENCODE_HINT in err
