"""The command-line process starts light and leaves at once, with the same output and exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command_line", [True, False])
def test_lance_imports_without_pandas_only_in_the_command(command_line: bool) -> None:
    pytest.importorskip("pandas")
    code = (
        "import sys\n"
        "from recallwatch import _process\n"
        + ("_process.mark_command_line()\n" if command_line else "")
        + "with _process.without_pandas():\n"
        "    import lance\n"
        "print('pandas' in sys.modules)\n"
        # pandas is still there for whoever asks pyarrow for it
        "import pyarrow as pa\n"
        "print(type(pa.table({'a': [1, 2]}).to_pandas()).__name__)\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(not command_line), "DataFrame"]


def test_leave_runs_the_exit_handlers_and_keeps_the_output_and_code() -> None:
    r = _run(
        "import atexit, sys\n"
        "from recallwatch._process import leave\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "sys.stdout.write('buffered')\n"
        "leave(3)\n"
    )
    assert (r.returncode, r.stdout) == (3, "bufferedhandler ran\n")


@pytest.mark.parametrize(("code", "status", "stderr"), [
    ("None", 0, ""), ("0", 0, ""), ("'a message'", 1, "a message\n")])
def test_leave_takes_what_sys_exit_takes(code: str, status: int, stderr: str) -> None:
    r = _run(f"from recallwatch._process import leave\nleave({code})\n")
    assert (r.returncode, r.stderr) == (status, stderr)


def test_the_console_script_exits_with_the_command_s_code() -> None:
    r = _run("from recallwatch.cli import main\nimport sys\n"
             "sys.argv = ['recallwatch', 'gate', 'no-such-golden.yaml', '--results', 'x.jsonl']\n"
             "main()\n")
    assert r.returncode == 2 and r.stderr.startswith("Error: ") and r.stdout == ""


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """`recallwatch ... | head`: the reader closes the pipe; no internal error, the SIGPIPE
    status."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from recallwatch.cli import main\n"
         "sys.argv = ['recallwatch', 'history', '--help']\nmain()\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes: its first write finds no reader
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert err == b""


def test_python_dash_m_runs_the_command() -> None:
    r = subprocess.run([sys.executable, "-m", "recallwatch", "--version"], capture_output=True,
                       text=True, timeout=120)
    from recallwatch import __version__

    assert (r.returncode, r.stdout.strip()) == (0, __version__)
    r = subprocess.run([sys.executable, "-m", "recallwatch", "gate", "no-such.yaml",
                        "--results", "x.jsonl"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("Error: ")


@pytest.mark.parametrize(("given", "used"), [
    (None, "jemalloc" if sys.platform.startswith("linux") else "system"),
    ("mimalloc", "mimalloc")])
def test_the_command_chooses_arrow_s_allocator_unless_told(
        given: str | None, used: str) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    code = ("from recallwatch import _process\n"
            "_process.mark_command_line()\n"
            "import pyarrow as pa\n"
            "print(pa.default_memory_pool().backend_name)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [used]
