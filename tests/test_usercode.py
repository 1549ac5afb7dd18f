"""The guard around the user's code (recallwatch/_usercode.py): prints go to standard error,
``sys.exit`` and other BaseExceptions become located input errors, exceptions are named, Ctrl-C
stays an interruption, and a call that does not return is given up after the timeout.

No assertion depends on how fast the machine is: a call that must time out waits on an event
that is set only after the assertion."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from recallwatch._usercode import UserCode, check_timeout
from recallwatch.errors import EmbedderError, InputError, RetrieverError, StoreError

WHAT = "retriever 'mine' (python:my_search:search)"


def guard(timeout: float | None = None) -> UserCode:
    return UserCode(WHAT, "its results", timeout, "Raise it in the pipeline file.")


@pytest.fixture(params=[None, 30.0], ids=["calling thread", "worker thread"])
def timeout(request: pytest.FixtureRequest) -> float | None:
    return request.param  # type: ignore[no-any-return]


def test_a_value_comes_back(timeout: float | None) -> None:
    assert guard(timeout).call(lambda q, k: [(q, float(k))], "x", 3, during="on query 'x'") \
        == [("x", 3.0)]


def test_what_the_code_prints_goes_to_stderr(timeout: float | None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def noisy() -> int:
        print("debug line")
        sys.stdout.write("more\n")
        return 1

    assert guard(timeout).call(noisy, during="on query 'x'") == 1
    print("the report")
    out, err = capsys.readouterr()
    assert (out, err) == ("the report\n", "debug line\nmore\n")


@pytest.mark.parametrize(("code", "shown"), [(0, "sys.exit(0)"), (5, "sys.exit(5)"),
                                             (None, "sys.exit()"), ("bye", "sys.exit('bye')")])
def test_sys_exit_is_an_input_error(timeout: float | None, code: object, shown: str) -> None:
    def leave() -> None:
        sys.exit(code)  # type: ignore[arg-type]

    with pytest.raises(InputError) as err:
        guard(timeout).call(leave, during="on query 'q3'")
    assert str(err.value) == (f"{WHAT} called {shown} on query 'q3': it must return its "
                              "results, never end the program (the exit code is recallwatch's "
                              "to set)")


class Odd(BaseException):
    pass


def test_another_base_exception_is_an_input_error(timeout: float | None) -> None:
    def odd() -> None:
        raise Odd("not an Exception")

    with pytest.raises(InputError) as err:
        guard(timeout).call(odd, during="on query 'q3'")
    assert str(err.value) == (f"{WHAT} raised Odd: not an Exception on query 'q3': it must "
                              "return its results, or raise an Exception to report a failure")


def test_an_exception_is_named_in_the_guards_error_class(timeout: float | None) -> None:
    def broken() -> None:
        raise KeyError("index offline")

    with pytest.raises(RetrieverError) as err:
        guard(timeout).call(broken, during="on query 'q3'")
    assert str(err.value) == f"{WHAT} raised KeyError on query 'q3': 'index offline'"
    embedder = UserCode("callable:m.f", "its vectors", timeout, error=EmbedderError)
    with pytest.raises(EmbedderError, match=r"^callable:m\.f raised KeyError on 2 texts"):
        embedder.call(broken, during="on 2 texts")


def test_a_recallwatch_error_and_ctrl_c_pass_unchanged(timeout: float | None) -> None:
    def store_down() -> None:
        raise StoreError("store lancedb://kb has no table 'chunks'")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(StoreError, match=r"^store lancedb://kb has no table 'chunks'$"):
        guard(timeout).call(store_down, during="on query 'q3'")
    with pytest.raises(KeyboardInterrupt):
        guard(timeout).call(interrupted, during="on query 'q3'")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event the stuck call waits on: set after the test, so the thread ends."""
    event = threading.Event()
    yield event
    event.set()


def test_a_call_that_does_not_return_is_given_up_after_the_timeout(
        release: threading.Event) -> None:
    g = guard(0.01)
    with pytest.raises(RetrieverError) as err:
        g.call(release.wait, during="on query 'q3'")
    assert str(err.value) == (f"{WHAT} did not return on query 'q3' within 0.01 s, its "
                              "timeout; it was left running and nothing more was asked of it. "
                              "Raise it in the pipeline file.")
    # the stuck thread is left behind; the next call runs on a new one
    assert g.call(lambda: "answered", during="on query 'q4'") == "answered"


def test_the_import_and_every_call_share_one_thread(timeout: float | None) -> None:
    g = guard(timeout)
    threads = {g.call(threading.get_ident, during="while importing") for _ in range(3)}
    assert len(threads) == 1
    worker = threads.pop()
    assert (worker == threading.get_ident()) == (timeout is None)


def test_close_lets_the_worker_thread_end() -> None:
    g = guard(30.0)
    thread = g.call(threading.current_thread, during="on query 'x'")
    assert thread.daemon  # never keeps the process alive
    g.close()
    thread.join(30)
    assert not thread.is_alive()


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 1e300, "10s", True, None])
def test_a_timeout_that_is_not_one_is_a_located_error(value: object) -> None:
    with pytest.raises(InputError) as err:
        check_timeout(value, field="retrievers.mine.timeout", source="p.yaml", line=3)
    assert str(err.value) == ("p.yaml:3: field 'retrievers.mine.timeout': expected a number of "
                              f"seconds from 0.001 to 86400 (a day), found {value!r}")
