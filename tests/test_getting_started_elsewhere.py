"""docs/getting-started.md runs unchanged on a corpus that is not its example's: the docstrings
of twenty Python standard-library modules (:mod:`tests.stdlib_corpus`, read with ``inspect``
when the test runs), with sixteen questions written for them, some answered by any one of two or
three chunks.

Every command of the guide runs as written, in its order, in a folder outside the checkout with
relative paths. Where the guide has the reader bring their own files, the test brings these: the
chunks instead of `cp examples/first-hour/…`, the questions as golden.yaml, the judgments a
person would give (the expected chunks, and chunks with the same text, are relevant), and the
`noise_ceiling` section calibrate-noise printed, pasted into policy.yaml. The verdicts are this
corpus's own (four questions fail on recall); what is checked is that each command does what the
guide says it does, and that the gate's words fit a corpus of code documentation:

* `init --corpus` finds no problem and notes the duplicate docstrings (``sqlite3.Date.*`` repeats
  ``datetime.date.*``) and the expected chunks that have a twin;
* the gate counts an identical twin in the top K as found and says so, follows the groups of
  alternatives, names no chunking cause on signatures and doctests, and does not call a chunk
  mislabelled when the questions are grouped by topics of their own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.duplicates import duplicate_text
from recallwatch.formats.golden import load_golden
from recallwatch.formats.judging import read_queue
from tests.stdlib_corpus import write_corpus
from tests.test_getting_started import FILES, JUDGING_PAGE, STEPS, _run

STORE = "lancedb://.recallwatch/index?table=chunks"
GOLDEN = """\
name: python-stdlib
version: "1"
top_k: 10
queries:
  - {id: file_extension, text: "How do I get the extension of a file name?", domain: files,
     expected: [{any: [pathlib.PurePath.suffix, os.path.splitext]}]}
  - {id: parse_json, text: "How do I turn a JSON string into a Python object?", domain: data,
     expected: [json.loads]}
  - {id: write_json_file, text: "How do I write a Python object to a file as JSON?",
     domain: data, expected: [json.dump]}
  - {id: standard_deviation, text: "How do I compute the standard deviation of a list of numbers?",
     domain: numbers, expected: [{any: [statistics.stdev, statistics.pstdev]}]}
  - {id: time_code, text: "Which clock should I use to time a piece of code?", domain: time,
     expected: [{any: [time.perf_counter, time.monotonic]}]}
  - {id: copy_file, text: "How do I copy a file to another folder?", domain: files,
     expected: [{any: [shutil.copy, shutil.copy2, shutil.copyfile]}]}
  - {id: random_element, text: "How do I pick a random element from a list?", domain: numbers,
     expected: [random.choice]}
  - {id: shuffle_list, text: "How do I shuffle a list in place?", domain: numbers,
     expected: [random.shuffle]}
  - {id: split_regex, text: "How do I split a string on a regular expression?", domain: text,
     expected: [re.split]}
  - {id: count_items, text: "How do I count how many times each item appears?", domain: data,
     expected: [collections.Counter]}
  - {id: today, text: "How do I get today's date?", domain: time,
     expected: [{any: [datetime.date.today, datetime.datetime.now]}]}
  # K = 2 for this one: its answer ties with its twin, sqlite3.Date.fromtimestamp, which ranks
  # first of the two
  - {id: timestamp_to_date, text: "How do I convert a POSIX timestamp into a date?", top_k: 2,
     domain: time, expected: [datetime.date.fromtimestamp]}
  - {id: read_csv, text: "How do I read the rows of a CSV file?", domain: data,
     expected: [csv.reader]}
  - {id: wrap_text, text: "How do I wrap a long paragraph to a fixed line width?", domain: text,
     expected: [{any: [textwrap.wrap, textwrap.fill]}]}
  - {id: sha256, text: "How do I compute the SHA-256 hash of some bytes?", domain: data,
     expected: [hashlib.sha256]}
  - {id: join_paths, text: "How do I join two parts of a path together?", domain: files,
     expected: [{any: [os.path.join, pathlib.PurePath.joinpath]}]}
"""
# The guide's commands, in its order: the test follows exactly these.
GUIDE = [
    "cp examples/first-hour/chunks.jsonl chunks.jsonl",
    "recallwatch init",
    "recallwatch init --corpus chunks.jsonl",
    f"recallwatch ingest chunks.jsonl --store {STORE}",
    f"recallwatch gate golden.yaml --store {STORE} --policy policy.yaml",
    f"recallwatch label pool golden.yaml --store {STORE} --depth 10 --out pool.jsonl",
    JUDGING_PAGE,
    f"recallwatch gate golden.yaml --store {STORE} --policy policy.yaml "
    "--judgments judgments.jsonl",
    f"recallwatch ops calibrate-noise golden.yaml --store {STORE} --policy policy.yaml "
    "--judgments judgments.jsonl",
    f"recallwatch gate golden.yaml --store {STORE} --policy policy.yaml "
    "--judgments judgments.jsonl",
]


def _judge(folder: Path) -> None:
    """What a person judging the pool would save: a result answers a question when it is one of
    its expected chunks or has the same text as one."""
    golden = load_golden(folder / "golden.yaml")
    text = {c.id: duplicate_text(c) for c in read_corpus(folder / "chunks.jsonl")}
    answers = {q.id: {text[c] for c in q.all_expected} for q in golden.queries}
    records = [{"query_id": item.query_id, "id": item.id, "judge": "reader",
                "grade": int(text.get(item.id) in answers[item.query_id])}
               for item in read_queue(folder / "pool.jsonl")]
    (folder / "judgments.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _with_calibrated(policy: str, printed: str) -> str:
    """The guide's policy.yaml with its noise_ceiling section replaced by the one printed."""
    section = printed[printed.index("noise_ceiling:"):].strip()
    return re.sub(r"noise_ceiling:\n(  .*\n)+", section + "\n", policy)


def test_the_first_hour_on_python_docstrings(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert [s.key for s in STEPS] == GUIDE, "the guide's commands changed: update this test"
    home = tmp_path / "stdlib docs"  # not the checkout, and a space in its name
    home.mkdir()
    monkeypatch.chdir(home)
    events = sorted([(s.line, "step", s) for s in STEPS] + [(n, "file", (name, text))
                                                             for n, name, text in FILES],
                    key=lambda e: e[0])
    out: dict[str, list[tuple[int, str]]] = {}  # per command: exit code, output on one line
    printed = chunks = ""
    for _, kind, item in events:
        if kind == "file":
            name, text = item  # type: ignore[misc]
            text = GOLDEN if name == "golden.yaml" else _with_calibrated(text, printed)
            (home / name).write_text(text, encoding="utf-8")
            continue
        step = item
        if step.key == JUDGING_PAGE:  # type: ignore[attr-defined]
            _judge(home)
            continue
        if step.key.startswith("cp "):  # type: ignore[attr-defined]
            chunks = str(write_corpus(home / "chunks.jsonl"))  # our chunks, not the example's
            continue
        code, output = _run(step, home)  # type: ignore[arg-type]
        printed = output  # the last command's output, as the reader sees it
        assert "Traceback" not in output and "Internal error" not in output, output[-2000:]
        words = step.key.split()  # type: ignore[attr-defined]
        name = " ".join(words[:3 if words[1] == "ops" else 2])
        out.setdefault(name, []).append((code, " ".join(output.split())))

    (code, init), = out["recallwatch init"][:1]
    assert code == 0 and "wrote golden.yaml" in init
    code, check = out["recallwatch init"][1]
    assert code == 0 and "no problems found" in check
    assert f"corpus chunks.jsonl: {chunks} chunks in 20 documents" in check
    assert "have identical text" in check and "datetime.date = sqlite3.Date" in check
    assert ("expected chunk(s) of the golden set have an identical twin (today: "
            "datetime.date.today = sqlite3.Date.today; timestamp_to_date: "
            "datetime.date.fromtimestamp = sqlite3.Date.fromtimestamp)") in check
    (code, ingested), = out["recallwatch ingest"]
    assert code == 0 and f"accepted {chunks} (added {chunks}" in ingested
    assert "warning:" in ingested and "have identical text" in ingested

    first, judged, calibrated = out["recallwatch gate"]
    for code, gate in (first, judged, calibrated):
        assert code in (0, 1) and ("ACCEPT" if code == 0 else "STOP") in gate, gate[-3000:]
        # code documentation is not cut mid-sentence, and topics are not mislabelled domains
        assert "chunking:" not in gate and "labelling:" not in gate
        assert "they group the questions in their own way" in gate
    assert re.search(r"timestamp_to_date: datetime\.date\.fromtimestamp → "
                     r"sqlite3\.Date\.fromtimestamp at rank [12]\b", first[1]), first[1]
    assert "noise rule not measured" in first[1]
    assert "judged@K" in judged[1], judged[1]  # one question has its own K
    (code, ceilings), = out["recallwatch ops calibrate-noise"]
    assert code == 0 and "noise_ceiling: default:" in ceilings
    assert "noise rule not measured" not in calibrated[1]
