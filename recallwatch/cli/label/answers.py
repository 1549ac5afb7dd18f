"""``recallwatch label answers``: label answers by hand in a local browser page — faithful,
relevant, correct — into the labelled answers file ``gate --answer-labels`` reads.

Exit codes: 0 done; 2 usage or input error (a bad answers or labels file, a chunk id the store
or the corpus lacks, a port in use). Registered into the ``label`` group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from recallwatch.cli._options import GoldenOption, LabellerName, Port, StoreURIOrNone


def answers(
    file: Annotated[Path, typer.Argument(help="The answers to label: JSON Lines of {id, "
                                         "question, answer, contexts: [the passages' texts], "
                                         "reference?, facts?}; with --golden, the gate's "
                                         "answers file ({query_id, answer, contexts}).")],
    golden: GoldenOption = None,
    store: StoreURIOrNone = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="With --golden: read the chunks the answers name from this corpus "
        "file (JSONL or Parquet) instead of --store.")] = None,
    judge: LabellerName = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="The labelled answers file to save labels in (default: FILE's name with "
        ".JUDGE.labels.jsonl); an existing one is resumed, its answers skipped.")] = None,
    port: Port = 8765,
) -> None:
    """Label answers in the browser: faithful, relevant, correct, with the keys y and n.

    Each answer is shown with its question, its contexts and, when there is one, the reference
    answer (or the facts) it is checked against. Is everything it says in its contexts
    (faithful)? Does it address the question (relevant)? Does it state the right answer
    (correct: asked only when a reference or facts say what is right)? The labels are saved in
    the format `gate --answer-labels` reads, each answer's at once, whole, with your name and
    the time: stop the server at any moment and serve the file again to resume.

    With --golden, FILE is the gate's answers file: the questions, references and facts (the
    content anchors' quotes) come from the golden set, and the chunk ids of `contexts` are read
    from --store or --corpus. An answer without `contexts` is refused (its labels are about the
    passages it was given). Serves 127.0.0.1 only, protected by a token in the address it
    prints.
    """
    from recallwatch.cli.label.judge import need_web, page_session, serve_page

    need_web()
    name, target, token = page_session(file, judge, out, "labels")
    web_app = _answers_app(file, target, name, token, golden, store, corpus)
    serve_page(web_app, token, port, page="answers page", again="the answers",
               doing=f"labelling the answers of {file} as {name}, saving to {target}")


def _answers_app(file: Path, target: Path, name: str, token: str, golden: Path | None,
                 store: str | None, corpus: Path | None) -> Any:
    """The answers page, its chunks read from the store (closed once they are read) or the
    corpus."""
    from recallwatch.answers.gate import chunk_reader
    from recallwatch.cli._common import open_store
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.web.answer_labels import create_answers_app

    if store is not None and corpus is not None:
        raise UsageError("give one of --store URI or --corpus FILE, not both")
    golden_set = None if golden is None else load_golden(golden)
    opened = None if store is None else open_store(store)
    try:
        return create_answers_app(file, target, judge=name, token=token, golden=golden_set,
                                  chunks=chunk_reader(opened, corpus))
    finally:
        if opened is not None:
            opened.close()


def register(app: typer.Typer) -> None:
    app.command("answers")(answers)
