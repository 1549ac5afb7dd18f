"""The Ray embedding takes an ingestion's batches lazily, a window at a time, and the store is
still the single-process one byte for byte. Slow: the default window holds the whole of the
small corpus of tests/scale/test_ray_engine.py, whose Ray ingestion test is in the default suite."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from recallwatch.embedders import embedder_from_spec
from recallwatch.ops.ingest import ingest
from recallwatch.stores import open_store
from tests.scale.test_ray_engine import SPEC, contents, ingested_in_one_process


@pytest.mark.slow  # three Ray Data runs, each loading the model on its actors: ~30 s
def test_ray_ingest_in_windows_reads_lazily_and_gives_the_single_process_bytes(
        local_ray: ModuleType, tmp_path: Path) -> None:
    from recallwatch.scale.ray_engine import RayEmbedding

    corpus, local = ingested_in_one_process(tmp_path, 20, commit_every=10)
    embedder = embedder_from_spec(SPEC)

    pulled: list[int] = []  # batches read from the ingestion when each vector batch came back
    read = 0

    def counted(batches: Iterable[list[str]]) -> Iterator[list[str]]:
        nonlocal read
        for batch in batches:
            read += 1
            yield batch

    def watched(batches: Iterable[list[str]]) -> Iterator[np.ndarray]:
        for vectors in RayEmbedding(SPEC, workers=2, window=8)(counted(batches)):
            pulled.append(read)
            yield vectors

    uri = f"lancedb://{tmp_path / 'ray'}?table=chunks"
    store = open_store(uri, create=True)
    report = ingest(corpus, store, embedder, batch_size=4, commit_every=10, embedder_spec=SPEC,
                    embed_batches=watched)
    store.close()
    assert len(report.added) == 20
    # 6 batches (two groups of 10: 4 + 4 + 2 texts each), asked for a window at a time: up to
    # the batch that brings it to 8 texts (4 + 4, then 2 + 4 + 4, then 2)
    assert pulled == [2, 2, 5, 5, 5, 6]
    assert contents(local) == contents(uri)
