"""`golden sample`: real queries read from logs (the example knowledge base's questions, the
Cranfield queries), near-duplicates merged, drawn by frequency or uniformly, per domain."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import InputError
from recallwatch.formats import cranfield
from recallwatch.formats.golden import load_golden
from recallwatch.judgments.sample import (
    LoggedQuery,
    draw,
    merge_near_duplicates,
    normalise,
    read_query_log,
    trigram_jaccard,
)
from tests.clirun import cli
from tests.judgments.query_logs import write_interaction_log, write_query_list

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
GOLDEN = load_golden(KB / "golden.yaml")
KB_QUERIES = [(q.text, q.domain) for q in GOLDEN.queries]


@pytest.fixture(scope="module")
def kb_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str | None,
                                                                             str]]]:
    path = tmp_path_factory.mktemp("logs") / "kb.jsonl"
    return path, write_interaction_log(path, KB_QUERIES, total=3000, seed=1)


def test_normalised_text_ignores_case_accents_punctuation_and_word_order() -> None:
    assert normalise("¿Cómo se calcula el IRPF?") == normalise("como  SE calcula el irpf")
    assert normalise("IRPF autónomos") == normalise("autonomos irpf")
    assert normalise("¿Cómo se calcula el IRPF?") != normalise("¿Cómo se paga el IRPF?")


def test_distinct_real_questions_are_never_merged() -> None:
    # The 78 questions of the example knowledge base are 78 different questions.
    merged = merge_near_duplicates(Counter({(t, d): 1 for t, d in KB_QUERIES}))
    assert len(merged) == len(KB_QUERIES)
    closest = max(trigram_jaccard(a, b) for (a, _), (b, _) in
                  itertools.combinations(KB_QUERIES, 2))
    assert closest < 0.8  # the default similarity has room above the closest distinct pair


def test_cranfield_queries_are_not_merged_even_the_closest_pair(cranfield_dir: Path) -> None:
    texts = [q.text for q in cranfield.read_queries(cranfield_dir / "cran.qry")]
    merged = merge_near_duplicates(Counter({(t, None): 1 for t in texts}))
    assert len(merged) == len(set(texts))
    # "direct problem" vs "indirect problem" of transonic nozzle flow: different questions
    direct = next(t for t in texts if "the direct problem of transonic flow" in t)
    indirect = next(t for t in texts if "the indirect problem of transonic flow" in t)
    assert 0.7 < trigram_jaccard(direct, indirect) < 0.8


def test_the_ways_users_type_a_question_merge_back_into_it(kb_log: tuple[Path, list]) -> None:
    path, rows = kb_log
    log = read_query_log(path)
    assert log.kind == "interaction log" and log.asked == 3000 and len(log.sha256) == 64
    assert len(log.counts) > 2 * len(KB_QUERIES)  # many wordings were really logged
    merged = merge_near_duplicates(log.counts)
    asked = Counter(original for _, _, original in rows)
    # one query per real question that was asked, counted with all its wordings
    assert len(merged) == len(asked)
    for original, n in asked.items():
        # the merged query that holds every wording of this question
        forms = {f for f, _, o in rows if o == original}
        [q] = [q for q in merged if forms & {t for t, _ in q.variants}]
        assert {t for t, _ in q.variants} == forms and q.count == n
        assert q.domain == dict(KB_QUERIES)[original]


def test_similarity_one_merges_equal_normalised_texts_only(kb_log: tuple[Path, list]) -> None:
    log = read_query_log(kb_log[0])
    exact = merge_near_duplicates(log.counts, similarity=1.0)
    near = merge_near_duplicates(log.counts)
    # the dropped-letter typos stay apart without near-duplicate merging
    assert len(near) < len(exact) <= len(log.counts)


def _queries(n: int) -> list[LoggedQuery]:
    return [LoggedQuery(f"question {i}", 1000 // (i + 1), ["a", "b", "c"][i % 3], ())
            for i in range(n)]


def test_a_draw_is_fixed_by_its_seed() -> None:
    qs = _queries(60)
    assert draw(qs, 10, seed=3) == draw(list(reversed(qs)), 10, seed=3)
    assert draw(qs, 10, seed=3) != draw(qs, 10, seed=4)
    assert len({q.text for q in draw(qs, 10, seed=3)}) == 10
    assert {q.text for q in draw(qs, 500, seed=3)} == {q.text for q in qs}


def test_frequency_weighting_draws_in_proportion_to_askings() -> None:
    qs = _queries(20)
    total = sum(q.count for q in qs)
    firsts = Counter(draw(qs, 1, seed=s)[0].text for s in range(2000))
    top = qs[0]
    share = top.count / total  # about 0.28
    assert abs(firsts[top.text] / 2000 - share) < 0.04
    uniform = Counter(draw(qs, 1, seed=s, weighting="uniform")[0].text for s in range(2000))
    assert abs(uniform[top.text] / 2000 - 1 / 20) < 0.02


def test_stratified_draw_shares_the_sample_among_domains(kb_log: tuple[Path, list]) -> None:
    merged = merge_near_duplicates(read_query_log(kb_log[0]).counts)
    picked = draw(merged, 20, seed=7, stratify="domain")
    per = Counter(q.domain for q in picked)
    assert sum(per.values()) == 20 and set(per) == {q.domain for q in merged}
    mass = Counter()
    for q in merged:
        mass[q.domain] += q.count
    total = sum(mass.values())
    for d, n in per.items():  # largest remainder: within one of the proportional share
        assert abs(n - 20 * mass[d] / total) <= 1.0 + 1e-9 or n == 1


def test_stratify_without_domains_is_an_input_error() -> None:
    qs = [LoggedQuery(f"q {i}", 1, None, ()) for i in range(5)]
    with pytest.raises(InputError, match="domain"):
        draw(qs, 2, stratify="domain")


def test_cli_sample_writes_a_golden_set_to_label(kb_log: tuple[Path, list],
                                                 tmp_path: Path) -> None:
    out = tmp_path / "sampled.yaml"
    code, stdout, err = cli("golden", "sample", str(kb_log[0]), "--n", "20", "--stratify",
                            "domain", "--seed", "7", "--out", str(out))
    assert code == 0, err
    assert "3000 askings" in stdout and f"-> {len(KB_QUERIES)} queries" in stdout
    sampled = load_golden(out, unlabelled=True)
    assert len(sampled.queries) == 20 and all(q.expected == () for q in sampled.queries)
    assert all(q.frequency and q.domain for q in sampled.queries)
    originals = {normalise(t) for t, _ in KB_QUERIES}
    assert all(normalise(q.text) in originals for q in sampled.queries)  # real queries only
    assert "# also asked as" in out.read_text(encoding="utf-8")
    # the same command gives the same file
    again = tmp_path / "again.yaml"
    cli("golden", "sample", str(kb_log[0]), "--n", "20", "--stratify", "domain", "--seed", "7",
        "--out", str(again))
    assert again.read_text(encoding="utf-8").replace("again", "sampled") == \
        out.read_text(encoding="utf-8")
    # the gate refuses it until it is labelled: one located line, exit 2
    code, _, err = cli("gate", str(out), "--results", str(out), "--no-history")
    assert code == 2 and err.count("\n") == 1
    assert f"{out}:" in err and "expected" in err and "not labelled yet" in err


def test_plain_jsonl_and_txt_query_lists(cranfield_dir: Path, tmp_path: Path) -> None:
    texts = [q.text for q in cranfield.read_queries(cranfield_dir / "cran.qry")]
    rows = write_query_list(tmp_path / "cran.jsonl", [(t, None) for t in texts], total=2000,
                            seed=2)
    log = read_query_log(tmp_path / "cran.jsonl")
    assert log.kind == "query list" and log.asked == 2000
    assert len(merge_near_duplicates(log.counts)) == len({o for _, _, o in rows})
    (tmp_path / "cran.txt").write_text("\n".join(f for f, _, _ in rows) + "\n", encoding="utf-8")
    assert read_query_log(tmp_path / "cran.txt").counts.total() == 2000
    (tmp_path / "counted.jsonl").write_text(
        json.dumps({"query": texts[0], "count": 5}) + "\n" + json.dumps({"text": texts[1]})
        + "\n", encoding="utf-8")
    assert sorted(read_query_log(tmp_path / "counted.jsonl").counts.values()) == [1, 5]
    out = tmp_path / "s.yaml"
    assert cli("golden", "sample", str(tmp_path / "cran.jsonl"), "--n", "30", "--out",
               str(out), "--weighting", "uniform")[0] == 0
    ids = {q.id for q in load_golden(out, unlabelled=True).queries}
    other = tmp_path / "s2.yaml"
    cli("golden", "sample", str(tmp_path / "cran.jsonl"), "--n", "225", "--out", str(other))
    assert ids <= {q.id for q in load_golden(other, unlabelled=True).queries}  # stable ids


def test_bad_logs_are_one_located_line(tmp_path: Path) -> None:
    ids_only = tmp_path / "ids.jsonl"
    ids_only.write_text(json.dumps({"query_id": "q1", "shown": [], "clicks": []}) + "\n",
                        encoding="utf-8")
    bad_count = tmp_path / "bad.jsonl"
    bad_count.write_text('{"query": "a"}\n{"query": "b", "count": 0}\n', encoding="utf-8")
    for path, needle in ((ids_only, "query_id"), (bad_count, ":2: field 'count'")):
        code, _, err = cli("golden", "sample", str(path), "--out", str(tmp_path / "o.yaml"))
        assert code == 2 and needle in err and err.count("\n") == 1, err
        assert not (tmp_path / "o.yaml").exists()


def test_the_log_format_gains_an_optional_domain() -> None:
    from recallwatch.online.log import parse_line

    imp = parse_line(json.dumps({"query": "x", "domain": "rrhh", "shown": [], "clicks": []}))
    assert imp.domain == "rrhh"
    with pytest.raises(InputError, match="domain"):
        parse_line(json.dumps({"query": "x", "domain": 3, "shown": [], "clicks": []}))


def test_weights_are_not_numpy_sensitive() -> None:
    # counts as plain ints in the output, whatever numpy does internally
    picked = draw(_queries(5), 5, seed=0)
    assert all(type(q.count) is int for q in picked) and np.all([q.count > 0 for q in picked])
