"""``recallwatch golden generate``: candidate questions written by a language model from sampled
chunks, for a person to review. Registered into the ``golden`` group.

Exit codes: 0 written, 1 not used, 2 usage or input error (nothing written; an endpoint that
fails or answers with no usable reply at all), 3 internal error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import ApiKeyEnv, LLMModel, LLMTimeout, Seed


def generate(
    corpus: Annotated[Path, typer.Argument(help="The corpus file (JSON Lines or Parquet) to "
                                           "sample chunks from.")],
    llm: Annotated[str, typer.Option(
        "--llm", help="Base URL of an OpenAI-compatible chat endpoint (POST "
        "URL/chat/completions), e.g. http://localhost:8000/v1.")],
    model: LLMModel,
    out: Annotated[Path, typer.Option(
        "--out", help="The golden set file to write (YAML) with the candidate questions.")],
    api_key_env: ApiKeyEnv = None,
    sample: Annotated[int, typer.Option(
        "--sample", min=1, help="How many chunks to draw from the corpus.")] = 20,
    per_chunk: Annotated[int, typer.Option(
        "--per-chunk", min=1, max=10, help="Questions to write per chunk.")] = 1,
    seed: Seed = 0,
    name: Annotated[str | None, typer.Option(
        "--name", help="The golden set's name (default: the output file's name).")] = None,
    timeout: LLMTimeout = 60.0,
) -> None:
    """Write candidate questions from sampled chunks with a language model (never the default:
    it runs only when asked, against the endpoint given).

    Each question expects the chunk it was written from, as a content anchor {doc_id, quote}
    (the chunk's first sentence; the chunk id when it has no doc_id) so it survives a
    re-chunking, and is marked `source: generated`: the gate counts such queries in a warning,
    and `recallwatch history groups --by source --golden FILE` reports them apart. A question
    longer than 1,000 characters is left out (the chunk is named). Review every one before the
    gate relies on it.
    """
    from recallwatch._files import check_output_file, write_atomic
    from recallwatch.errors import JudgeError
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.judgments.generate import generate_questions, golden_yaml, sample_chunks
    from recallwatch.judgments.llm_judge import ChatClient

    check_output_file(out, "--out", example="golden.yaml")  # before any request is paid for
    client = ChatClient(llm, model, api_key_env=api_key_env, max_tokens=200 * per_chunk,
                        timeout=timeout)
    picked = sample_chunks(read_corpus(corpus).chunks, sample, seed)
    made = generate_questions(client, picked, per_chunk)
    if not made.queries:
        raise JudgeError(f"no usable reply from model {model!r} at {llm} for any of the "
                         f"{len(picked)} chunks (a JSON object {{\"questions\": [...]}} was "
                         "asked for): " + "; ".join(["nothing written", *made.skipped()]))
    write_atomic(out, golden_yaml(made, name or out.stem, len(picked), seed))
    lines = [f"wrote {out}: {len(made.queries)} candidate questions from {len(picked)} sampled "
             f"chunks of {corpus}, each marked `source: generated`", *made.skipped(),
             f"tokens: {client.usage.line()}"]
    lines.append("review each question (keep, reword or delete it) before the gate relies on it")
    emit("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.command("generate")(generate)
