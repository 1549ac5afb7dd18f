"""``recallwatch init``: a golden-set template and a policy template to start from, a check of the
corpus file, and the next commands to run."""

from __future__ import annotations

import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit

DEFAULT_STORE = "lancedb://.recallwatch/index?table=chunks"


class LanguageChoice(str, Enum):
    en = "en"
    es = "es"


def init(
    directory: Annotated[Path, typer.Argument(
        help="Where to write golden.yaml and policy.yaml (default: here).")] = Path("."),
    language: Annotated[LanguageChoice, typer.Option(
        "--language", "-l", help="Language of the templates' comments and examples: en "
        "(English) or es (Spanish).")] = LanguageChoice.en,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="Your chunks (JSON Lines or Parquet): every record is checked and each "
        "problem reported with its line; the golden set's chunk ids are checked against it.")]
        = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite golden.yaml and policy.yaml when they exist (a symbolic "
        "link there is replaced by the file, never written through).")] = False,
) -> None:
    """Start a golden set: write a golden-set template (golden.yaml: the questions and the chunks
    that answer each) and a policy template (policy.yaml: the gate's rules, explained), check
    your corpus file, and print the next command to run.

    Existing files are kept (run it again after editing them to check the golden set's ids
    against the corpus). Exit codes: 0 done, 1 not used, 2 usage or input error (a problem in
    the corpus or the golden set: each is listed), 3 internal error."""
    from recallwatch.formats.starter import (
        GOLDEN_FILE,
        POLICY_FILE,
        Language,
        check_corpus,
        write_starter,
    )

    lang: Language = "es" if language is LanguageChoice.es else "en"
    what = {GOLDEN_FILE: "golden-set template: replace its two example queries with your "
                         "questions and the ids of the chunks that answer them",
            POLICY_FILE: "policy template: the gate's default rules, each explained"}
    lines = []
    for done in write_starter(directory, lang, force=force):
        if not done.written:
            lines.append(f"kept {done.path} (it exists; --force overwrites it)")
            continue
        link = ("" if done.replaced_link is None else f"; it replaces the symbolic link to "
                f"{done.replaced_link}; the file it pointed to is unchanged")
        lines.append(f"wrote {done.path} ({what[done.path.name]}{link})")
    golden = directory / GOLDEN_FILE
    ok = True
    if corpus is not None:
        check = check_corpus(corpus, golden)
        lines += check.lines()
        ok = check.ok
    store = DEFAULT_STORE
    corpus_arg = shlex.quote(str(corpus)) if corpus is not None else "CHUNKS.jsonl"
    lines += ["next:",
              f"  recallwatch ingest {corpus_arg} --store {shlex.quote(store)}",
              f"  recallwatch gate {shlex.quote(str(golden))} --store {shlex.quote(store)} "
              f"--policy {shlex.quote(str(directory / POLICY_FILE))}",
              "(docs/getting-started.md walks through each step)"]
    emit("\n".join(lines))
    if not ok:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
