"""What ``recallwatch init`` writes and checks: a golden-set template and a policy template (in
English or Spanish), and a check of a corpus file (every bad record, located, not just the first)
and of a golden set's chunk ids against it.

:func:`write_starter` writes the two templates into a folder, each replaced whole. It never
writes through a symbolic link: with ``force`` a link is replaced by the template (the file it
points to is left as it is); without, a link to an existing file is kept like any existing file,
and a link to nothing is refused, as is a folder where a template goes. Every target is decided
before anything is written.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from recallwatch._files import cannot_write, write_atomic
from recallwatch.errors import InputError
from recallwatch.formats.corpus import GOLD_LABELS, read_corpus
from recallwatch.formats.duplicates import Duplicates, find_duplicates
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.records import Chunk

__all__ = ["GOLDEN_FILE", "LANGUAGES", "POLICY_FILE", "CorpusCheck", "Language", "StarterFile",
           "check_corpus", "expected_twins", "golden_template", "policy_template",
           "write_starter"]

GOLDEN_FILE = "golden.yaml"
POLICY_FILE = "policy.yaml"

Language = Literal["en", "es"]
LANGUAGES: tuple[str, ...] = get_args(Language)

_GOLDEN = {
    "en": '''\
# Golden set: the questions your search must answer, each with the chunks that answer it.
# Written by `recallwatch init`. Replace the two example queries with your own (eight or more
# give a first verdict; a few dozen per domain make it steady).
name: my-knowledge-base   # any name: runs of the same name and version are compared
version: "1"              # change it when you change the queries or their expected chunks
top_k: 10                 # K: how many results of each search are checked
queries:
  - id: q1                # a short id, unique in the file
    text: "How many days of paid leave do I get when I move house?"  # as a user would type it
    # expected: the ids (the corpus's `id` field) of the chunks the answer needs. Each one
    # listed is REQUIRED: two chunks that each answer on their own go in a group,
    # {any: [CHUNK_A, CHUNK_B]}, found when either is in the top K.
    expected: [CHUNK_ID_1]
    domain: hr            # optional: a group of queries, reported and calibrated apart
  - id: q2
    text: "What is the monthly fee for a new freelancer?"
    expected: [CHUNK_ID_2, CHUNK_ID_3]
    # gold: optional, the expected chunks that are Gold, curated syntheses that must never be
    # missed (a chunk labelled CURATED_SYNTHESIS in the corpus is Gold too)
    gold: [CHUNK_ID_3]
    domain: finance
    tags: [numeric]       # optional: numeric and table queries get their own failure pattern
    # An expected entry may also be {doc_id: DOC, quote: "a sentence of the answer"}: it finds
    # the chunk again after the document is cut into chunks differently.
''',
    "es": '''\
# Conjunto dorado (golden set): las preguntas que la búsqueda debe responder, cada una con los
# fragmentos (chunks) que la responden. Escrito por `recallwatch init`. Sustituya las dos
# preguntas de ejemplo por las suyas (ocho o más dan un primer veredicto).
name: mi-base-de-conocimiento  # cualquier nombre: se comparan ejecuciones de igual nombre
                               # y versión
version: "1"              # cámbiela al cambiar las preguntas o sus fragmentos esperados
top_k: 10                 # K: cuántos resultados de cada búsqueda se comprueban
queries:
  - id: q1                # un identificador corto, único en el fichero
    text: "¿Cuántos días de permiso tengo por mudanza?"  # como la escribiría un usuario
    # expected: los id (el campo `id` del corpus) de los fragmentos que la respuesta necesita.
    # Cada uno es OBLIGATORIO: dos fragmentos que responden cada uno por sí solo van en un
    # grupo, {any: [FRAGMENTO_A, FRAGMENTO_B]}, que basta con que uno esté en el top K.
    expected: [ID_FRAGMENTO_1]
    domain: rrhh          # opcional: un grupo de preguntas, informado y calibrado aparte
  - id: q2
    text: "¿Cuánto paga de cuota un autónomo que empieza?"
    expected: [ID_FRAGMENTO_2, ID_FRAGMENTO_3]
    # gold: opcional, los fragmentos esperados que son Gold, síntesis curadas que nunca deben
    # faltar (un fragmento con la etiqueta SINTESIS_CURADA en el corpus también es Gold)
    gold: [ID_FRAGMENTO_3]
    domain: finanzas
    tags: [numeric]       # opcional: las preguntas numéricas o de tabla tienen su propio patrón
    # Una entrada de expected también puede ser {doc_id: DOC, quote: "una frase de la
    # respuesta"}: encuentra el fragmento aunque el documento se trocee de otra manera.
''',
}

_POLICY = {
    "en": '''\
# Acceptance policy: the gate's rules, here with their default values. Written by
# `recallwatch init`; every value is recorded with each run.
recall_floor: 0.90          # per query: recall (expected chunks found in the top K / listed)
                            # below this scores 0; 0.95 scores 50, 1.00 scores 100
min_mean_quality: 95        # ACCEPT needs the mean of those scores to reach this (0-100)
gold_failures_allowed: 0    # failing queries that expect a Gold chunk (curated synthesis)
other_failures_allowed: 0.05  # other failing queries tolerated, as a share of the queries,
                            # each only with a waiver below
# Noise ceiling: the share of a query's top K allowed to score below the worst-scoring chunk
# it expects (such results are taken as irrelevant). Calibrate it per domain on a healthy run:
# `recallwatch ops calibrate-noise` prints the section to paste here.
noise_ceiling:
  default: 0.30
  per_domain: {}
# unjudged: a result neither expected nor judged is unknown, and a query that lists too few
# expected chunks is not judged on noise; irrelevant: every unlisted result counts as noise.
noise_unlisted: unjudged
# A chunk with the same text as an expected chunk (a copy under another id) answers the query:
# found in the top K, it counts as the expected chunk, and the report says so. false: it does not.
twins_count_as_found: true
# Waivers: written diagnoses that excuse a failing query (not one that expects a Gold chunk),
# {query_id: "why it fails and what is being done"}.
waivers: {}
''',
    "es": '''\
# Política de aceptación: las reglas de la puerta (gate), aquí con sus valores por defecto.
# Escrita por `recallwatch init`; cada valor se registra con cada ejecución.
recall_floor: 0.90          # por pregunta: un recall (esperados hallados en el top K / listados)
                            # por debajo de esto puntúa 0; 0.95 puntúa 50, 1.00 puntúa 100
min_mean_quality: 95        # ACCEPT exige que la media de esas puntuaciones llegue a esto (0-100)
gold_failures_allowed: 0    # preguntas fallidas que esperan un fragmento Gold (síntesis curada)
other_failures_allowed: 0.05  # otras preguntas fallidas toleradas, como fracción del total,
                            # cada una solo con una dispensa (waiver) escrita abajo
# Techo de ruido: la fracción del top K de una pregunta que puede puntuar por debajo del peor
# fragmento que espera (esos resultados se toman por irrelevantes). Calíbrelo por dominio con
# una ejecución sana: `recallwatch ops calibrate-noise` imprime la sección que va aquí.
noise_ceiling:
  default: 0.30
  per_domain: {}
# unjudged: un resultado ni esperado ni juzgado es desconocido, y una pregunta con muy pocos
# fragmentos esperados no se juzga por ruido; irrelevant: todo resultado no listado es ruido.
noise_unlisted: unjudged
# Un fragmento con el mismo texto que uno esperado (una copia con otro id) responde igual: si
# está en el top K cuenta como el esperado, y el informe lo dice. false: no cuenta.
twins_count_as_found: true
# Dispensas: diagnósticos escritos que excusan una pregunta fallida (no una que espere un
# fragmento Gold), {id_de_pregunta: "por qué falla y qué se está haciendo"}.
waivers: {}
''',
}


def golden_template(language: Language) -> str:
    return _GOLDEN[language]


def policy_template(language: Language) -> str:
    return _POLICY[language]


@dataclass(frozen=True)
class StarterFile:
    """One template :func:`write_starter` handled."""

    path: Path
    written: bool  # False: an existing file was kept
    replaced_link: str | None = None  # the target of the symbolic link the template replaced


def write_starter(directory: str | os.PathLike[str], language: Language, *,
                  force: bool = False) -> list[StarterFile]:
    """Write ``golden.yaml`` and ``policy.yaml`` templates into ``directory`` (created when
    missing); existing files are kept unless ``force``. A path that cannot take them is an
    InputError naming it, raised before anything is written."""
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise InputError(source=folder, expected="a folder to write golden.yaml and policy.yaml "
                         "into", found="<a file>", hint="give init a folder, or nothing for the "
                         "current one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(folder, exc, "the folder") from None
    texts = {folder / GOLDEN_FILE: golden_template(language),
             folder / POLICY_FILE: policy_template(language)}
    plan = [_decide(path, force) for path in texts]
    for item in plan:
        if item.written:
            write_atomic(item.path, texts[item.path])
    return plan


def _decide(path: Path, force: bool) -> StarterFile:
    """Whether ``path`` gets its template, or why it cannot."""
    if path.is_symlink():
        target = os.readlink(path)
        if force:
            return StarterFile(path, True, target)
        if not path.exists():
            raise InputError(source=path, expected="a file or nothing",
                             found=f"<a symbolic link to {target}, which does not exist>",
                             hint="init does not write through a link: remove it, or run init "
                             "with --force to replace the link by the template")
    if path.is_dir():
        raise InputError(source=path, expected="a file or nothing", found="<a directory>",
                         hint="move the folder away, or run init in another folder")
    return StarterFile(path, force or not path.exists())


@dataclass(frozen=True)
class CorpusCheck:
    """What a corpus file holds and what is wrong with it, each problem located."""

    source: str
    chunks: int
    documents: int
    domains: dict[str, int]
    gold: int  # chunks labelled as Gold (either language's label)
    problems: tuple[str, ...]  # one located line each: the record's file:line, field, fix
    notes: tuple[str, ...] = field(default=())  # not errors, but worth knowing before a gate
    duplicates: Duplicates | None = None  # chunks with identical or nearly identical text

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        domains = ", ".join(f"{d} {n}" for d, n in sorted(self.domains.items())) or "none"
        out = [f"corpus {self.source}: {self.chunks} chunks in {self.documents} documents; "
               f"domains: {domains}; {self.gold} Gold chunk{'' if self.gold == 1 else 's'} "
               "(label CURATED_SYNTHESIS or SINTESIS_CURADA)"]
        out += [f"  note: {n}" for n in self.notes]
        out += [f"  problem: {p}" for p in self.problems]
        if not self.problems:
            out.append("  no problems found" + (f" ({len(self.notes)} note"
                                                f"{'' if len(self.notes) == 1 else 's'} above)"
                                                if self.notes else ""))
        return out


def check_corpus(path: str | Path, golden: str | Path | None = None,
                 today: dt.date | None = None) -> CorpusCheck:
    """Every bad record of the corpus file (not only the first), and, with ``golden``, every
    expected chunk id the corpus does not hold; notes on what is not an error but matters to a
    gate (chunks without a document, expired chunks, duplicate chunks, expected chunks with an
    identical twin). A file that cannot be read at all raises."""
    corpus = read_corpus(path, on_error="collect")
    problems = [r.reason for r in corpus.rejected]
    chunks = corpus.chunks
    duplicates = find_duplicates(chunks)
    notes = [*_metadata_notes(chunks, today or dt.datetime.now(dt.UTC).date()),
             *duplicates.lines()]
    if golden is not None:
        try:
            gold_set = load_golden(golden)
        except InputError as exc:
            problems.append(str(exc))
        else:
            problems += _unknown_ids(gold_set, chunks, path, golden)
            notes += _expected_twins(gold_set, duplicates)
    return CorpusCheck(
        str(path), len(chunks), len({c.doc_id for c in chunks if c.doc_id}),
        dict(Counter(c.domain for c in chunks if c.domain)),
        sum(c.label in GOLD_LABELS for c in chunks), tuple(problems), tuple(notes), duplicates)


def _metadata_notes(chunks: list[Chunk], day: dt.date) -> list[str]:
    notes = []
    no_doc = [c.id for c in chunks if not c.doc_id]
    if no_doc:
        notes.append(f"{len(no_doc)} chunk(s) without doc_id (first: {no_doc[0]}): the diagnosis "
                     "compares a failing chunk with the other chunks of its document")
    expired = [c for c in chunks if c.valid_to is not None and c.valid_to < day]
    if expired:
        notes.append(f"{len(expired)} chunk(s) whose validity ended before {day.isoformat()} "
                     f"(first: {expired[0].id}, valid_to {expired[0].valid_to}): a query that "
                     "expects one is diagnosed as a labelling problem")
    return notes


def _unknown_ids(gold_set: GoldenSet, chunks: list[Chunk], path: str | Path,
                 golden: str | Path) -> list[str]:
    ids = {c.id for c in chunks}
    return [str(InputError(source=golden, record=q.id, field="expected",
                           expected=f"a chunk id of {path}", found=cid,
                           hint="copy the id from the corpus's `id` field"))
            for q in gold_set.queries for cid in dict.fromkeys((*q.all_expected, *q.gold))
            if cid not in ids]


def expected_twins(gold_set: GoldenSet, duplicates: Duplicates
                   ) -> list[tuple[str, str, tuple[str, ...]]]:
    """(query id, expected chunk id, its identical twins) for every expected chunk that has
    some, in the golden set's order."""
    twins = duplicates.twins()
    return [(q.id, cid, twins[cid]) for q in gold_set.queries for cid in q.all_expected
            if cid in twins]


def _expected_twins(gold_set: GoldenSet, duplicates: Duplicates) -> list[str]:
    found = expected_twins(gold_set, duplicates)
    if not found:
        return []
    shown = "; ".join(f"{qid}: {cid} = {', '.join(t)}" for qid, cid, t in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return [f"{len(found)} expected chunk(s) of the golden set have an identical twin ({shown}"
            f"{more}): the gate counts the twin as found when it reaches the top K instead"]
