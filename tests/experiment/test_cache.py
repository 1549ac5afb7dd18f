"""The experiment cache is checked before it is trusted: a chunks file with lines removed, a
garbled or outdated record, deleted index files — each is built again, the output says so, and
the numbers are those of a clean run; what cannot be rebuilt is refused, naming the cache to
delete."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import UsageError
from recallwatch.experiment import load_plan
from recallwatch.experiment.build import build_corpus
from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan


def _run(plan: Path, out: Path) -> tuple[dict[str, Any], str]:
    code, stdout, stderr = cli("experiment", str(plan), "--out-dir", str(out))
    assert code == 0, stderr
    return json.loads((out / "results.json").read_text(encoding="utf-8")), stdout


def _numbers(results: dict[str, Any]) -> list[Any]:
    return [(v["name"], v["metrics"], v["per_query"]) for v in results["variants"]]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A BM25 plan (as written, and re-chunked) run once: the plan, its output, its results."""
    folder = tmp_path_factory.mktemp("cache")
    small_kb(folder)
    plan = write_plan(folder, "{name: written, retrieval: bm25}",
                      ["{name: sentences, chunking: {method: sentences, size: 200}}"])
    results, _ = _run(plan, folder / "out")
    return plan, folder / "out", results


def _copy(bm25: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(bm25[1], out)
    return out


def _entry(out: Path, results: dict[str, Any], variant: str) -> Path:
    (build,) = [v["build"] for v in results["variants"] if v["name"] == variant]
    (folder,) = (out / "cache").glob(f"corpus-{build['corpus_key']}*")
    return folder


def test_a_clean_rerun_reads_every_build_from_the_cache(
        bm25: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    plan, _, first = bm25
    again, stdout = _run(plan, _copy(bm25, tmp_path))
    assert again["cache"]["built"] == {"corpus": [], "index": []}
    assert "corpus builds: 0 built, 2 from the cache" in stdout
    assert again["warnings"] == first["warnings"]
    assert _numbers(again) == _numbers(first)


def test_chunks_with_lines_removed_are_built_again_and_the_output_says_so(
        bm25: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    plan, _, first = bm25
    out = _copy(bm25, tmp_path)
    chunks = _entry(out, first, "written") / "chunks.jsonl"
    lines = chunks.read_text(encoding="utf-8").splitlines(keepends=True)
    chunks.write_text("".join(lines[3:]), encoding="utf-8")
    again, stdout = _run(plan, out)
    assert again["cache"]["built"]["corpus"] == ["written"]
    assert "corpus builds: 1 built, 1 from the cache" in stdout
    note = (f"the cached chunks of written ({chunks.parent}) did not match what was built: "
            f"chunks.jsonl changed since it was built (")
    assert note in stdout and "; built again" in stdout
    assert any(w.startswith(note) for w in again["warnings"])
    assert _numbers(again) == _numbers(first)  # the numbers of the chunks as they were built
    assert chunks.read_text(encoding="utf-8").splitlines(keepends=True) == lines


@pytest.mark.parametrize(("record", "why"), [
    ("{garbled", "its record done.json cannot be read (Expecting property name enclosed in "
                 "double quotes: line 1 column 2 (char 1))"),
    ("[1, 2]", "its record done.json is not a JSON object"),
    ('{"key": "x", "chunks": 59}', "its record done.json was written by an earlier "
                                   "recallwatch, without the content hashes it is checked "
                                   "against now"),
    (None, "its record done.json cannot be read ([Errno 21] Is a directory: "),
])
def test_a_damaged_record_is_built_again(bm25: tuple[Path, Path, dict[str, Any]],
                                         tmp_path: Path, record: str | None, why: str) -> None:
    plan, _, first = bm25
    out = _copy(bm25, tmp_path)
    entry = _entry(out, first, "sentences")
    done = entry / "done.json"
    done.unlink()
    if record is None:
        done.mkdir()
    else:
        done.write_text(record, encoding="utf-8")
    again, stdout = _run(plan, out)
    assert again["cache"]["built"]["corpus"] == ["sentences"]
    assert f"the cached chunks of sentences ({entry}) did not match what was built: {why}" \
        in " ".join(stdout.split())
    assert _numbers(again) == _numbers(first)
    assert json.loads(done.read_text(encoding="utf-8"))["chunks"] > 0


def test_a_record_of_other_chunks_is_built_again(
        bm25: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    plan, _, first = bm25
    out = _copy(bm25, tmp_path)
    entry = _entry(out, first, "written")
    record = json.loads((entry / "done.json").read_text(encoding="utf-8"))
    (entry / "done.json").write_text(json.dumps({**record, "chunks": 3}), encoding="utf-8")
    (entry / "chunks.jsonl").unlink()
    again, stdout = _run(plan, out)
    assert f"({entry}) did not match what was built: chunks.jsonl is missing; built again" \
        in stdout
    assert _numbers(again) == _numbers(first)


def test_a_cache_entry_that_cannot_be_rebuilt_says_to_delete_the_cache(
        bm25: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    plan = load_plan(bm25[0])
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache should be", encoding="utf-8")
    with pytest.raises(UsageError) as err:
        build_corpus(plan, plan.base, cache)
    assert str(err.value).startswith(f"cannot rebuild the cache entry {cache}/corpus-")
    assert str(err.value).endswith(f"(delete {cache} and run the experiment again)")


def test_deleted_index_files_are_built_again(tmp_path: Path) -> None:
    """A dense variant: its LanceDB files are checked (each one's SHA-256, then the table's rows
    and version), so a deleted data file is a rebuild, not LanceDB's raw 'Not found'."""
    small_kb(tmp_path)
    plan = write_plan(tmp_path, "{name: dense}", [])
    first, _ = _run(plan, tmp_path / "out")
    (index,) = (tmp_path / "out" / "cache").glob("index-*")
    data = sorted((index / "db").rglob("data/*.lance"))
    assert data
    for f in data:
        f.unlink()
    again, stdout = _run(plan, tmp_path / "out")
    flat = " ".join(stdout.split())
    assert (f"the cached index of dense ({index}) did not match what was built: "
            f"{len(data)} file(s) missing (") in flat
    assert again["cache"]["built"] == {"corpus": [], "index": ["dense"]}
    assert _numbers(again) == _numbers(first)
    # the table LanceDB reads is checked too: a record that promises other rows is a rebuild
    record = json.loads((index / "done.json").read_text(encoding="utf-8"))
    (index / "done.json").write_text(json.dumps({**record, "rows": 7}), encoding="utf-8")
    _, stdout = _run(plan, tmp_path / "out")
    assert (f"its table holds {first['variants'][0]['build']['chunks']} rows at version "
            f"{record['version']}, and 7 rows at version {record['version']} were recorded; "
            "built again") in " ".join(stdout.split())
