"""No credential leaves the host it was given for: every HTTP client of recallwatch (the search
service retriever, the LLM judge, ``golden generate --llm``, ``online judge``, the answers'
generator and judge behind a chat endpoint, the OpenAI-compatible embedder, the monitor's
webhook) against a real local server that answers with a redirect to another host: a second
server on another port, or ``localhost`` for ``127.0.0.1``. Nothing reaches the other host, the
error names where the redirect pointed, and the key is in no message. A retriever asked to
(``redirects: same-host``) follows a redirect on its own host, and the gate's report says so."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recallwatch._http import Call, get_json
from recallwatch.answers.chat import parse_chat_spec
from recallwatch.embedders.openai_http import OpenAIHTTPEmbedder
from recallwatch.errors import (
    EmbedderError,
    JudgeError,
    RecallwatchError,
    RetrieverError,
    UsageError,
)
from recallwatch.judgments.llm_judge import LLMJudge
from recallwatch.ops.webhook import post_webhook
from recallwatch.retrievers import open_retriever
from tests.clirun import cli
from tests.http_hosts import Answer, Host, Seen, json_answer, redirect, serving

KEY = "sk-redirect-never-follows-4711"
HITS = {"hits": [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.5}]}
CORPUS = Path(__file__).resolve().parents[1] / "examples" / "first-hour" / "chunks.jsonl"


def answer_anything(seen: Seen, host: Host) -> Answer:
    """What the other host would answer: hits, a chat completion and embeddings at once."""
    return json_answer({**HITS, "choices": [{"message": {"content": "3"}}],
                        "data": [{"index": 0, "embedding": [0.1, 0.2, 0.3, 0.4]}]})


@pytest.fixture
def other() -> Iterator[Host]:
    """The other host: it must never receive anything."""
    with serving(answer_anything) as host:
        yield host


def redirecting(status: int, to: Callable[[Seen, Host], str]) -> Callable[[Seen, Host], Answer]:
    return lambda seen, host: redirect(status, to(seen, host))


@pytest.fixture(params=["another port", "localhost"])
def origin(request: pytest.FixtureRequest, other: Host) -> Iterator[tuple[Host, str]]:
    """A server redirecting every request (302) to the same path on another host; and that
    host's URL."""
    if request.param == "another port":
        with serving(redirecting(302, lambda s, h: other.url + s.path)) as host:
            yield host, other.url
    else:
        with serving(redirecting(302, lambda s, h: f"http://localhost:{h.port}{s.path}")) as host:
            yield host, f"http://localhost:{host.port}"


def _retriever(url: str, options: dict[str, Any]) -> None:
    open_retriever(f"{url}/search", name="api", options={"retries": 0, **options}).search(
        ["q"], 3)


# client -> (what sends the key, given the origin's URL; the error it raises)
CLIENTS: dict[str, tuple[Callable[[str], object], type[RecallwatchError]]] = {
    "retriever, api_key_env": (
        lambda url: _retriever(url, {"api_key_env": "RW_REDIRECT_KEY"}), RetrieverError),
    "retriever, X-Api-Key": (
        lambda url: _retriever(url, {"api_key_env": "RW_REDIRECT_KEY",
                                     "api_key_header": "X-Api-Key"}), RetrieverError),
    "retriever, user:password@": (
        lambda url: _retriever(url.replace("://", f"://svc:{KEY}@"), {}), RetrieverError),
    "retriever, GET": (
        lambda url: _retriever(url, {"api_key_env": "RW_REDIRECT_KEY", "method": "GET",
                                     "params": {"q": "{query}"}}), RetrieverError),
    "LLM judge": (lambda url: LLMJudge(f"{url}/v1", "m", api_key_env="RW_REDIRECT_KEY",
                                       max_retries=0).grade("q", "passage"), JudgeError),
    "answers' generator and judge (--generator, --answer-judge)": (
        lambda url: parse_chat_spec(f"{url}/v1?model=m&api_key_env=RW_REDIRECT_KEY",
                                    "--generator").client(max_tokens=16).complete("s", "q"),
        JudgeError),
    "embedder": (lambda url: OpenAIHTTPEmbedder(f"{url}/v1", "m", api_key_env="RW_REDIRECT_KEY",
                                                dimension=4, max_retries=0).embed_queries(["q"]),
                 EmbedderError),
    "webhook": (lambda url: post_webhook(url.replace("://", f"://hook:{KEY}@")
                                         + f"/hook?token={KEY}", {"alarm": True}), UsageError),
}


def _key_left(seen: Seen) -> bool:
    return any(KEY in v or base64.b64encode(f"hook:{KEY}".encode()).decode() in v
               or base64.b64encode(f"svc:{KEY}".encode()).decode() in v
               for v in seen.headers.values()) or KEY in seen.path


@pytest.mark.parametrize("client", CLIENTS)
def test_no_client_follows_a_redirect_to_another_host(
        client: str, origin: tuple[Host, str], other: Host,
        monkeypatch: pytest.MonkeyPatch) -> None:
    host, elsewhere = origin
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    send, error = CLIENTS[client]
    with pytest.raises(error) as err:
        send(host.url)
    message = str(err.value)
    assert "answered HTTP 302 for " in message and f": a redirect to {elsewhere}/" in message
    assert ", not followed (recallwatch follows a redirect only when asked); " in message
    assert KEY not in message
    assert other.seen == []  # nothing at all reached the other host
    assert [s.host for s in host.seen] == [f"127.0.0.1:{host.port}"]  # one request, no more
    assert _key_left(host.seen[0])  # the key went to the host it was given for, and no further


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_same_host_never_follows_to_another_host(status: int, origin: tuple[Host, str],
                                                 other: Host,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    host, elsewhere = origin
    host_route = redirecting(status, lambda s, h: f"{elsewhere}{s.path}")
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    with serving(host_route) as source, pytest.raises(RetrieverError) as err:
        _retriever(source.url, {"api_key_env": "RW_REDIRECT_KEY", "redirects": "same-host"})
    assert str(err.value) == (
        f"{source.url}/search answered HTTP {status} for query 'q' (retriever 'api'): a redirect "
        f"to {elsewhere}/search, away from {source.url}, never followed: what is sent to a "
        "host, credentials included, goes to that host alone; if you trust that URL, give it "
        "as the retriever's spec")
    assert other.seen == [] and [s.host for s in host.seen if "localhost" in s.host] == []
    assert len(source.seen) == 1


def _service(seen: Seen, host: Host) -> Answer:
    """/old moves to /search (308, method kept), /get to /search?… (303, becomes a GET)."""
    if seen.path.startswith("/old"):
        return redirect(308, "/search")
    if seen.path.startswith("/moved"):
        return redirect(303, f"{host.url}/search?from=moved")
    if seen.path.startswith("/loop"):
        return redirect(307, "/loop")
    if seen.headers.get("Authorization") != f"Bearer {KEY}":
        return json_answer({"error": {"message": "no key"}}, 401)
    return json_answer(HITS)


@pytest.fixture
def service() -> Iterator[Host]:
    with serving(_service) as host:
        yield host


def test_a_redirect_on_the_same_host_is_followed_when_asked_and_said(
        service: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    options = {"api_key_env": "RW_REDIRECT_KEY", "redirects": "same-host", "retries": 0}
    r = open_retriever(f"{service.url}/old", name="api", options=options)
    assert r.search(["q1", "q2"], 2) == [[("a", 0.9), ("b", 0.5)]] * 2
    assert sorted((s.method, s.path, s.json().get("query")) for s in service.seen) == [
        ("POST", "/old", "q1"), ("POST", "/old", "q2"), ("POST", "/search", "q1"),
        ("POST", "/search", "q2")]  # 308 keeps the method and the body
    assert r.notes() == [f"retriever 'api': {service.url}/old answered HTTP 308, a redirect to "
                         f"{service.url}/search: followed (redirects: same-host)"]
    r = open_retriever(f"{service.url}/moved", name="api", options=options)
    assert r.search(["q"], 2) == [[("a", 0.9), ("b", 0.5)]]
    assert (service.seen[-1].method, service.seen[-1].body) == ("GET", b"")  # 303: a GET
    with pytest.raises(RetrieverError, match=r"with more than 5 redirects in a row; use the URL "
                       "they end at$"):
        open_retriever(f"{service.url}/loop", name="api", options=options).search(["q"], 2)


def test_without_asking_a_same_host_redirect_is_refused(service: Host) -> None:
    with pytest.raises(RetrieverError) as err:
        open_retriever(f"{service.url}/old", name="api").search(["q"], 2)
    assert str(err.value) == (
        f"{service.url}/old answered HTTP 308 for query 'q' (retriever 'api'): a redirect to "
        f"{service.url}/search, not followed (recallwatch follows a redirect only when asked); "
        "if you trust that URL, give it as the retriever's spec (or set redirects: same-host, "
        "which follows the redirects that stay on the service's host)")
    assert [s.path for s in service.seen] == ["/old"]


def test_same_host_means_scheme_host_and_port_or_an_upgrade_to_https() -> None:
    import httpx

    from recallwatch._http import _same_host

    def same(a: str, b: str) -> bool:
        return _same_host(httpx.URL(a), httpx.URL(b))

    assert same("http://h/a", "http://h:80/b") and same("http://h/a", "https://h/b")
    assert same("https://h:8443/a", "https://h:8443/b")
    assert not same("https://h/a", "http://h/b")  # a key never goes down to plain http
    assert not same("http://h:8080/a", "https://h/b") and not same("http://h/a", "http://h2/a")
    assert not same("http://127.0.0.1/a", "http://localhost/a")


# -- the gate says which URL answered ------------------------------------------------------------


def _gate(tmp_path: Path, retriever: str) -> tuple[int, str, str, Path]:
    golden = tmp_path / "golden.yaml"
    golden.write_text(json.dumps({"name": "g", "version": "1", "top_k": 2, "queries": [
        {"id": "q1", "text": "first question", "expected": ["a"]},
        {"id": "q2", "text": "second question", "expected": ["b"]}]}), encoding="utf-8")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(f"retrievers:\n  api:\n{retriever}depth: 2\n", encoding="utf-8")
    code, out, err = cli("gate", str(golden), "--pipeline", str(pipeline), "--no-history",
                         "--format", "json")
    return code, out, err, pipeline


def test_the_gate_reports_a_followed_redirect(service: Host, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    code, out, err, _ = _gate(tmp_path, f"    spec: {service.url}/old\n    api_key_env: "
                              "RW_REDIRECT_KEY\n    redirects: same-host\n")
    assert code == 0, err
    result = json.loads(out)
    assert f"retriever 'api': {service.url}/old answered HTTP 308, a redirect to " \
        f"{service.url}/search: followed (redirects: same-host)" in result["warnings"]
    assert result["config"]["pipeline"]["retrievers"]["api"]["redirects"] == "same-host"
    assert KEY not in out + err


def test_the_gate_refuses_a_redirect_to_another_host(other: Host, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    with serving(redirecting(302, lambda s, h: f"{other.url}/search")) as host:
        code, out, err, pipeline = _gate(tmp_path, f"    spec: {host.url}/search\n    "
                                         "api_key_env: RW_REDIRECT_KEY\n    retries: 0\n")
    assert code == 2 and out == ""
    assert err.startswith(f"Error: pipeline {pipeline}: {host.url}/search answered HTTP 302 for "
                          "query '")
    assert f"a redirect to {other.url}/search, not followed" in err and err.count("\n") == 1
    assert other.seen == [] and KEY not in err


# -- the commands that call a language model -----------------------------------------------------


def test_golden_generate_and_online_judge_refuse_a_redirect(
        origin: tuple[Host, str], other: Host, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    host, elsewhere = origin
    monkeypatch.setenv("RW_REDIRECT_KEY", KEY)
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", f"{host.url}/v1", "--model",
                       "m", "--out", str(tmp_path / "g.yaml"), "--sample", "1",
                       "--api-key-env", "RW_REDIRECT_KEY")
    assert code == 2 and not (tmp_path / "g.yaml").exists()
    assert err == (f"Error: {host.url}/v1/chat/completions answered HTTP 302 for model 'm': a "
                   f"redirect to {elsewhere}/v1/chat/completions, not followed (recallwatch "
                   "follows a redirect only when asked); give the URL it points to as the "
                   "endpoint's base URL\n")
    qrels, pairs = tmp_path / "h.qrels", tmp_path / "pairs.jsonl"
    qrels.write_text("q1 0 d1 2\n", encoding="utf-8")
    pairs.write_text(json.dumps({"query_id": "q1", "query": "q", "id": "d1", "text": "t"})
                     + "\n", encoding="utf-8")
    code, _, err = cli("online", "judge", str(pairs), "--qrels", str(qrels), "--base-url",
                       f"{host.url}/v1", "--model", "m", "--api-key-env", "RW_REDIRECT_KEY")
    assert code == 2 and "a redirect to" in err and "not followed" in err
    assert other.seen == [] and KEY not in err
    assert all(s.host == f"127.0.0.1:{host.port}" for s in host.seen)


# -- HTTP Basic: user:password@ or password_env ---------------------------------------------------


def _basic(seen: Seen, host: Host) -> Answer:
    expected = "Basic " + base64.b64encode(f"svc user:{KEY}".encode()).decode()
    if seen.headers.get("Authorization") != expected:
        return json_answer({"error": {"message": "who are you?"}}, 401)
    return json_answer(HITS)


def test_a_user_and_password_in_the_url_are_sent_as_basic_auth_and_never_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving(_basic) as host:
        url = host.url.replace("://", f"://svc%20user:{KEY}@") + "/search"
        code, out, err, _ = _gate(tmp_path, f"    spec: {url}\n")
        assert code == 0, err
        assert KEY not in out + err
        assert json.loads(out)["config"]["pipeline"]["retrievers"]["api"]["url"] == \
            host.url.replace("://", "://svc%20user:***@") + "/search"
        monkeypatch.setenv("RW_SEARCH_PASSWORD", KEY)
        code, out, err, _ = _gate(tmp_path, f"    spec: {host.url.replace('://', '://svc%20user@')}"
                                  "/search\n    password_env: RW_SEARCH_PASSWORD\n")
        assert code == 0, err
        assert KEY not in out + err
        assert json.loads(out)["config"]["pipeline"]["retrievers"]["api"]["password_env"] == \
            "RW_SEARCH_PASSWORD"
        # a wrong password is the service's own answer, the password still not shown
        with pytest.raises(RetrieverError) as wrong:
            _retriever(host.url.replace("://", f"://svc%20user:{KEY}x@"), {})
        assert str(wrong.value) == (f"{host.url.replace('://', '://svc%20user:***@')}/search "
                                    "answered HTTP 401 for query 'q' (retriever 'api'): who are "
                                    "you?")
    assert all(s.path == "/search" and KEY not in s.path for s in host.seen)


@pytest.mark.parametrize(("spec", "options", "message"), [
    ("http://svc:pa#ss@127.0.0.1:9/search", {},
     "retriever 'api': spec: the password in 'http://svc:***@127.0.0.1:9/search' holds a "
     "character that ends the user-and-password part early: percent-encode every character of "
     "the user name and password other than letters, digits and - . _ ~ (for example # as %23, "
     "/ as %2F, ? as %3F, @ as %40, : as %3A, % as %25, a space as %20), or keep the password "
     "out of the URL: password_env: VAR beside spec: names an environment variable holding it"),
    ("http://127.0.0.1:9/search", {"password_env": "X"},
     "retriever 'api': password_env gives the password of the user named in the URL: write "
     "spec: http://USER@HOST/… (the user name alone, no password in the URL)"),
    ("http://svc:pw@127.0.0.1:9/search", {"api_key_env": "X"},
     "retriever 'api': a user name in the URL (HTTP Basic) and api_key_env both set the "
     "Authorization header; keep one"),
    ("http://127.0.0.1:99999/search", {},
     "retriever 'api': spec must be an http:// or https:// URL with a host name, found "
     "'http://127.0.0.1:99999/search' (Port out of range 0-65535)"),
    ("http://127.0.0.1:9/search", {"redirects": "any"},
     "retriever 'api': redirects must be refuse or same-host, found 'any'"),
    ("http://127.0.0.1:9/search", {"timeout": float("nan")},
     "retriever 'api': timeout must be a number from 0.001 to 3600, found nan"),
    ("http://127.0.0.1:9/search", {"retries": 2.5},
     "retriever 'api': retries must be a whole number from 0 to 100, found 2.5"),
])
def test_settings_that_cannot_work_are_refused_when_opened(spec: str, options: dict[str, Any],
                                                           message: str) -> None:
    with pytest.raises(UsageError) as err:
        open_retriever(spec, name="api", options=options)
    assert str(err.value) == message


def test_get_json_keeps_the_query_the_url_has(service: Host) -> None:
    answer = get_json(f"{service.url}/search?x=1", {"q": "a b"},
                      headers={"Authorization": f"Bearer {KEY}"},
                      call=Call(RetrieverError, "a search", max_retries=0))
    assert answer == HITS and service.seen[0].path == "/search?x=1&q=a+b"
