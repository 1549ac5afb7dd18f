"""Re-chunk a corpus file another way, renaming every chunk (as a real re-chunking does).

    python examples/kb/rechunk.py IN.jsonl [MORE.jsonl …] OUT.jsonl \
        --mode merge|window|sentences|shift|overlap|halves|cap

Later input files replace the chunks of earlier ones with the same id, as ingesting them in turn
does (``corpus_v1.jsonl fix_v2.jsonl`` is the knowledge base of version 2).

Chunks are grouped by ``doc_id`` in file order, then:

* ``merge``: every two consecutive chunks of a document become one (``DOC/m1``, ``DOC/m2``…);
* ``window``: every two consecutive chunks, sliding by one, so neighbours overlap by a whole
  chunk (``DOC/w1``…);
* ``sentences``: every prose chunk is cut at its sentence ends (``DOC/s1``…); a table stays whole,
  as any sensible chunker keeps a table with its header;
* ``shift``: the prose of a document is cut into sentences and packed again into chunks of about
  the document's mean chunk size (in characters), the first one half that size, so every cut
  moves to the middle of an old chunk (``DOC/x1``…); a table stays whole, as one chunk;
* ``overlap``: every chunk preceded by the last sentence of the prose chunk before it in its
  document, as a chunker with an overlap of one sentence does (``DOC/o1``…);
* ``halves``: every prose chunk of two sentences or more cut in two at the sentence end nearest
  its middle (``DOC/h1``…); a table stays whole;
* ``cap``: the same, only for the prose chunks longer than ``--cap`` characters (700), as a
  chunker whose largest chunk size is lowered does; every chunk is renamed (``DOC/c1``…).

A new chunk keeps the metadata (domain, label, facets, validity, kind, description) of the first
chunk it comes from; ``text`` and ``content`` are the joined texts and contents. The golden
set's chunk ids mean nothing in the output; content anchors still do (docs/ground-truth.md).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recallwatch.formats.sentences import split_sentences  # the product's one sentence splitter

MODES = ("merge", "window", "sentences", "shift", "overlap", "halves", "cap")


def _documents(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        docs.setdefault(str(r.get("doc_id") or r["id"]), []).append(r)
    return docs


def _join(parts: list[dict[str, Any]], new_id: str) -> dict[str, Any]:
    out = {k: v for k, v in parts[0].items() if k not in ("id", "text", "content")}
    out = {"id": new_id, "text": "\n\n".join(p["text"] for p in parts),
           "content": "\n\n".join(p.get("content") or p["text"] for p in parts), **out}
    return out


def _sentences(record: dict[str, Any], doc: str, start: int) -> Iterator[dict[str, Any]]:
    if record.get("kind") == "table" or record.get("description"):
        yield {**record, "id": f"{doc}/s{start}"}
        return
    for n, piece in enumerate(split_sentences(record["text"]), start):
        yield {**{k: v for k, v in record.items() if k != "content"}, "id": f"{doc}/s{n}",
               "text": piece, "content": piece}


def _shifted(chunks: list[dict[str, Any]], doc: str) -> list[dict[str, Any]]:
    size = sum(len(c["text"]) for c in chunks) / len(chunks)
    out: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], str]] = []  # (the chunk it comes from, sentence)

    def flush() -> None:
        if pending:
            text = " ".join(s for _, s in pending)
            meta = {k: v for k, v in pending[0][0].items() if k not in ("id", "text", "content")}
            out.append({"id": f"{doc}/x{len(out) + 1}", "text": text, "content": text, **meta})
            pending.clear()

    for c in chunks:
        if c.get("kind") == "table" or c.get("description"):
            flush()
            out.append({**c, "id": f"{doc}/x{len(out) + 1}"})
            continue
        for sentence in split_sentences(c.get("content") or c["text"]):
            pending.append((c, sentence))
            target = size / 2 if not out else size  # the first cut falls mid-chunk
            if sum(len(s) + 1 for _, s in pending) >= target:
                flush()
    flush()
    return out


def _overlapped(chunks: list[dict[str, Any]], doc: str) -> list[dict[str, Any]]:
    out = []
    for n, c in enumerate(chunks):
        before = chunks[n - 1] if n else None
        extra = ""
        if before is not None and not (before.get("kind") == "table" or before.get("description")):
            extra = split_sentences(before.get("content") or before["text"])[-1]
        text = f"{extra} {c['text']}".strip()
        content = f"{extra} {c.get('content') or c['text']}".strip()
        out.append({**c, "id": f"{doc}/o{n + 1}", "text": text, "content": content})
    return out


def _halved(chunks: list[dict[str, Any]], doc: str, longer_than: int = 0,
            name: str = "h") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in chunks:
        sentences = split_sentences(c.get("content") or c["text"])
        if (c.get("kind") == "table" or c.get("description") or len(sentences) < 2
                or len(c["text"]) <= longer_than):
            out.append({**c, "id": f"{doc}/{name}{len(out) + 1}"})
            continue
        half = sum(len(s) for s in sentences) / 2
        sizes = [sum(len(s) for s in sentences[:i]) for i in range(1, len(sentences))]
        cut = 1 + min(range(len(sizes)), key=lambda i: abs(sizes[i] - half))
        for part in (sentences[:cut], sentences[cut:]):
            text = " ".join(part)
            out.append({**c, "id": f"{doc}/{name}{len(out) + 1}", "text": text,
                        "content": text})
    return out


def rechunk(records: list[dict[str, Any]], mode: str, cap: int = 700) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc, chunks in _documents(records).items():
        if mode == "merge":
            pairs = range(0, len(chunks), 2)
            out += [_join(chunks[i:i + 2], f"{doc}/m{i // 2 + 1}") for i in pairs]
        elif mode == "window":
            starts = range(max(len(chunks) - 1, 1))
            out += [_join(chunks[i:i + 2], f"{doc}/w{i + 1}") for i in starts]
        elif mode == "sentences":
            for r in chunks:
                out += list(_sentences(r, doc, sum(o["id"].startswith(f"{doc}/") for o in out) + 1))
        elif mode == "shift":
            out += _shifted(chunks, doc)
        elif mode == "overlap":
            out += _overlapped(chunks, doc)
        elif mode == "halves":
            out += _halved(chunks, doc)
        elif mode == "cap":
            out += _halved(chunks, doc, longer_than=cap, name="c")
        else:
            raise ValueError(f"unknown mode {mode!r}: {', '.join(MODES)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="+", help="input corpus files, then the output")
    parser.add_argument("--mode", choices=MODES, default="merge")
    parser.add_argument("--cap", type=int, default=700, help="cap: the largest chunk kept whole")
    args = parser.parse_args()
    *sources, target = args.files
    if not sources:
        parser.error("give at least one input file and the output file")
    by_id: dict[str, dict[str, Any]] = {}
    for source in sources:
        for line in source.read_text("utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                by_id[record["id"]] = record
    records = list(by_id.values())
    chunks = rechunk(records, args.mode, args.cap)
    target.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks),
                           "utf-8")
    print(f"{len(records)} chunks → {len(chunks)} chunks ({args.mode})")


if __name__ == "__main__":
    main()
