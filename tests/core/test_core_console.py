"""The console app in process: its door (token, header), its actions through the
Controller, call requests, and runtime views reached generically."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_presets.server.console.app import TOKEN_HEADER, Console
from agent_presets.server.control import Controller

pytestmark = pytest.mark.anyio

TOKEN = "t0ken"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def stack(make_stack: Callable[..., Any], make_preset: Callable[..., Any]) -> Any:
    return make_stack(
        [
            make_preset("theme-tools", contexts=({"surface": "canvas"},), group="general"),
            make_preset("shell-tools", default_state="off", risk="shell"),
        ]
    )


class Drawing:
    def console_view(self) -> dict[str, Any]:
        return {"kind": "svg", "svg": "<svg xmlns='http://www.w3.org/2000/svg'/>"}


class Broken:
    def console_view(self) -> dict[str, Any]:
        raise RuntimeError("a plugin bug")


class Host:
    """The two methods of the host's public API the console uses."""

    runtimes = {"drawing": Drawing(), "broken": Broken(), "plain": object()}

    def runtime_names(self) -> list[str]:
        return sorted(self.runtimes)

    def runtime(self, name: str) -> Any:
        return self.runtimes[name]


@pytest.fixture
def console(stack: Any) -> Console:
    return Console(Controller(stack.manager), app=Host(), token=TOKEN)


async def call(
    console: Console,
    method: str,
    path: str,
    *,
    query: str = "",
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """One request through the ASGI app; the status and the JSON answer (or the text).

    ``body`` is sent as JSON, or as it is when it is bytes.
    """
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [
            (k.lower().encode(), v.encode())
            for k, v in {"Host": "127.0.0.1:2", **(headers or {})}.items()
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    sent = False
    out: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    await console.asgi()(scope, receive, send)
    status = next(m["status"] for m in out if m["type"] == "http.response.start")
    text = b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text.decode()


async def test_console_answers_401_without_its_token(console: Console) -> None:
    assert (await call(console, "GET", "/"))[0] == 401
    assert (await call(console, "GET", "/api/state", query="token=nope"))[0] == 401
    # A wrong path or method without the token tells nothing either.
    assert (await call(console, "GET", "/nope"))[0] == 401
    assert (await call(console, "OPTIONS", "/api/override"))[0] == 401
    assert (await call(console, "GET", "/nope", query=f"token={TOKEN}"))[0] == 404
    status, page = await call(console, "GET", "/", query=f"token={TOKEN}")
    assert status == 200
    assert "<dialog" in page and "console.js" not in page  # script inlined, nothing fetched


async def test_console_answers_a_foreign_host_or_origin_with_no_data(
    console: Console, stack: Any
) -> None:
    # A page that rebinds its own name to the console's address sends that name.
    own = f"token={TOKEN}"
    for host in ("attacker.example:2", "attacker.example", "127.0.0.1.attacker.example:2"):
        status, answer = await call(console, "GET", "/api/state", query=own, headers={"Host": host})
        assert status == 421 and set(answer) == {"error"}
    status, _ = await call(
        console, "GET", "/api/state", query=own, headers={"Origin": "http://evil.example:2"}
    )
    assert status == 403
    body = {"preset": "theme-tools", "state": "on"}
    head = {TOKEN_HEADER: TOKEN, "Host": "evil.example:2"}
    assert (await call(console, "POST", "/api/override", headers=head, body=body))[0] == 421
    assert stack.manager.get_overrides().get("theme-tools") is None
    for host in ("localhost:2", "[::1]:2", "LOCALHOST:2"):
        assert (await call(console, "GET", "/api/state", query=own, headers={"Host": host}))[
            0
        ] == 200
    ours = {"Origin": "http://127.0.0.1:2"}
    assert (await call(console, "GET", "/api/state", query=own, headers=ours))[0] == 200


async def test_console_on_a_non_loopback_address_takes_any_host_with_its_token(
    stack: Any,
) -> None:
    # As the MCP endpoint with a token: remote clients use names the server cannot know.
    console = Console(Controller(stack.manager), token=TOKEN, host="0.0.0.0")
    head = {"Host": "workstation.lan:2"}
    assert (await call(console, "GET", "/api/state", query=f"token={TOKEN}", headers=head))[
        0
    ] == 200
    assert (await call(console, "GET", "/api/state", headers=head))[0] == 401


def test_the_host_names_a_server_answers_follow_its_address_and_token() -> None:
    from agent_presets.server.console import allowed_hosts

    assert allowed_hosts("127.0.0.1", token=True) == ("127.0.0.1", "localhost", "[::1]")
    assert allowed_hosts("::1", token=False) == ("127.0.0.1", "localhost", "[::1]")
    assert allowed_hosts("127.0.0.2", token=False) == (
        "127.0.0.1",
        "localhost",
        "[::1]",
        "127.0.0.2",
    )
    assert allowed_hosts("192.0.2.7", token=False) == (
        "192.0.2.7",
        "127.0.0.1",
        "localhost",
        "[::1]",
    )
    assert allowed_hosts("192.0.2.7", token=True) is None


async def test_console_changes_need_the_header_and_go_through_the_controller(
    console: Console, stack: Any
) -> None:
    body = {"preset": "theme-tools", "state": "on"}
    status, _ = await call(console, "POST", "/api/override", query=f"token={TOKEN}", body=body)
    assert status == 401
    assert stack.manager.get_overrides().get("theme-tools") is None
    status, answer = await call(
        console, "POST", "/api/override", headers={TOKEN_HEADER: TOKEN}, body=body
    )
    assert (status, answer["state"], answer["active"]) == (200, "on", True)


async def test_console_a_risky_preset_asks_for_confirmation(console: Console, stack: Any) -> None:
    head = {TOKEN_HEADER: TOKEN}
    body: dict[str, Any] = {"preset": "shell-tools", "state": "on"}
    status, answer = await call(console, "POST", "/api/override", headers=head, body=body)
    assert (status, answer["confirm"], answer["risk"]) == (409, True, "shell")
    assert stack.manager.get_overrides().get("shell-tools") is None
    body["confirmed"] = True
    status, answer = await call(console, "POST", "/api/override", headers=head, body=body)
    assert (status, answer["active"]) == (200, True)


async def test_console_shows_and_decides_call_requests(console: Console) -> None:
    request, _ = console.controller.requests.file(
        "call", preset="shell-tools", tool="space_app_run_bash", reason="list files"
    )
    status, state = await call(console, "GET", "/api/state", query=f"token={TOKEN}")
    assert status == 200
    [shown] = state["pending"]
    assert (shown["id"], shown["kind"], shown["tool"]) == (request.id, "call", "space_app_run_bash")
    status, _ = await call(
        console, "POST", "/api/approve", headers={TOKEN_HEADER: TOKEN}, body={"id": request.id}
    )
    assert status == 200
    assert request.outcome.result(timeout=5) == "approved"
    status, answer = await call(
        console, "POST", "/api/deny", headers={TOKEN_HEADER: TOKEN}, body={"id": request.id}
    )
    assert status == 400 and "no pending request" in answer["error"]


async def test_console_views_come_from_runtimes_that_offer_one(console: Console) -> None:
    views = {v["runtime"]: v for v in console.views()}
    assert set(views) == {"drawing", "broken"}  # "plain" offers no view
    assert views["drawing"]["kind"] == "svg" and views["drawing"]["svg"].startswith("<svg")
    assert views["broken"] == {
        "runtime": "broken",
        "kind": "error",
        "error": "RuntimeError",
    }


def test_console_bumps_its_version_when_the_manager_or_requests_change(
    console: Console,
) -> None:
    before = console.version
    console.controller.set_override("theme-tools", "on", by="console")
    console.controller.requests.file("override", preset="shell-tools", state="on", reason="x")
    assert console.version >= before + 2
    console.close()
    after = console.version
    console.controller.set_override("theme-tools", "off", by="console")
    assert console.version == after


def test_console_reads_stats_and_events_from_the_log_again_only_when_it_grew(
    stack: Any, tmp_path: Any
) -> None:
    from agent_presets.server.events import Call, EventLog

    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.write(Call(tool="space_a", ok=True, latency_ms=2.0))
    console = Console(Controller(stack.manager), event_log=path, token=TOKEN)
    first = console.log_snapshot()
    assert first["stats"]["calls_by_tool"] == {"space_a": 1}
    assert console.log_snapshot() is first  # nothing moved: the same reading
    log.write(Call(tool="space_b", ok=False, latency_ms=4.0))
    log.close()
    again = console.log_snapshot()
    assert again["stats"]["calls"] == 2
    assert [e["tool"] for e in again["events"]] == ["space_a", "space_b"]


async def test_console_refuses_a_token_with_other_characters_without_failing(
    console: Console,
) -> None:
    status, _ = await call(console, "GET", "/api/state", headers={TOKEN_HEADER: "t\u00f6ken"})
    assert status == 401


async def test_console_views_are_well_formed_whatever_a_runtime_writes(stack: Any) -> None:
    # A plugin that writes an agent's name into its SVG as it is, controls and all.
    import xml.etree.ElementTree as ET

    class Careless:
        def console_view(self) -> dict[str, Any]:
            text = "a\x01b\x1b[31m\x00\ud800\uffff\x85z"
            return {"kind": "svg", "svg": f"<svg xmlns='http://www.w3.org/2000/svg'>{text}</svg>"}

    class One(Host):
        runtimes = {"careless": Careless()}

    (view,) = Console(Controller(stack.manager), app=One(), token=TOKEN).views()
    assert ET.fromstring(view["svg"]).text == "a\ufffdb\ufffd[31m" + "\ufffd" * 4 + "z"


ATTACK = (
    "x\x1b[999D\x1b[2K r1 override general-theme-tools on \x1b]0;owned\x07 "
    "[link=https://evil.example/]docs[/link]\nr9  call  forged-line"
)


async def test_console_shows_agent_words_as_text_and_calls_in_full(console: Console) -> None:
    store = console.controller.requests
    store.file("override", preset="shell-tools", state="on", reason=ATTACK)
    padded = "echo tidy-up-temp-files" + " " * 30 + "; echo HIDDEN-PART-RAN > hidden.txt"
    call_request, _ = store.file(
        "call",
        preset="shell-tools",
        tool="space_app_run_bash",
        reason="r",
        arguments={"command": padded},
    )
    status, state = await call(console, "GET", "/api/state", query=f"token={TOKEN}")
    assert status == 200
    override, waiting = (r["shown"] for r in state["pending"])
    assert "\x1b" not in json.dumps(override, ensure_ascii=False)
    assert override["reason"].startswith("x\\x1b[999D\\x1b[2K r1 override")
    assert "[link=https://evil.example/]docs[/link]\\nr9" in override["reason"]
    assert waiting["arguments"] == [["command", f"'{padded}'"]]  # in full, never clipped
    assert waiting["digest"] == call_request.digest
    # The page puts agent words in as text only, from the escaped "shown" form.
    _, page = await call(console, "GET", "/", query=f"token={TOKEN}")
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page
    assert "const s = r.shown;" in page and "body.digest = r.digest" in page


async def test_console_approves_a_call_only_with_the_digest_it_showed(console: Console) -> None:
    store = console.controller.requests
    first, _ = store.file("call", tool="space_app_run_bash", reason="r", arguments={"c": "1"})
    second, _ = store.file("call", tool="space_app_run_bash", reason="r", arguments={"c": "2"})
    head = {TOKEN_HEADER: TOKEN}
    crossed = {"id": second.id, "digest": first.digest}
    status, answer = await call(console, "POST", "/api/approve", headers=head, body=crossed)
    assert status == 400 and "is not the call you checked" in answer["error"]
    assert not second.outcome.done() and not first.outcome.done()
    body = {"id": first.id, "digest": first.digest}
    status, _ = await call(console, "POST", "/api/approve", headers=head, body=body)
    assert status == 200 and first.outcome.result(timeout=5) == "approved"
    assert not second.outcome.done() and [r.id for r in store.pending()] == [second.id]
