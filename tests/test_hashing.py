"""One content hash for everything hashed (recallwatch._hashing): digests pinned, because
histories and benchmark results record them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from recallwatch._hashing import canonical_hash
from recallwatch.bench.sweep import load_sweep, run_sweep
from recallwatch.formats.golden import GoldenSet


def test_digests_recorded_by_earlier_versions_are_unchanged() -> None:
    # ASCII configuration: the digest both earlier functions gave.
    assert canonical_hash({"name": "tiny", "k": 10, "engines": [{"engine": "faiss-flat"}]}) == (
        "9c9199011b3d0fa04470f2f0d27db5b39fa3414f26e434ac5423c51cebe6ca9a")
    # A golden set with non-ASCII text: the dataset hash already in gate histories.
    g = GoldenSet.from_dict({"name": "kb", "version": "1", "queries": [
        {"id": "q1", "text": "¿Cuántos días de vacaciones?", "expected": ["a"]}]})
    assert g.hash == "02859d9893cde96ca313b4f5c741a703f0cbfe572b3b0777ec3a7f27b71e77e1"


def test_non_ascii_text_is_hashed_as_utf8_not_as_escapes() -> None:
    value = {"name": "búsqueda ñ", "k": 10}
    expected = hashlib.sha256('{"k":10,"name":"búsqueda ñ"}'.encode()).hexdigest()
    assert canonical_hash(value) == expected == (
        "b7f0b95f77121d13d1fa92788c70a0d6a55d82811b5370c57ab49ffad34eca21")


def test_a_benchmark_configuration_is_hashed_like_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("name: búsqueda ñ\ndataset:\n  synthetic: {n: 200, dim: 8, queries: 5}\n"
                    "k: 5\nengines:\n  - engine: faiss-flat\n", encoding="utf-8")
    config = load_sweep(path)
    assert run_sweep(config).config_hash == canonical_hash(config.raw)
