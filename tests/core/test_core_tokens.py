"""The token file, the server's view of it, per-token policy, and the bearer middleware."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_presets.server.policy import Allowed, GateError, Profile, ToolPolicy
from agent_presets.server.tokens import (
    TokenError,
    TokenStore,
    TokenTable,
    digest,
    parse_duration,
)


def test_create_keeps_only_the_hash_in_a_private_file(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, record = store.create("ci", allow=["general-theme-tools"], max_calls=3)
    assert len(token) == 43  # 32 random bytes, urlsafe base64
    raw = store.path.read_text()
    assert token not in raw
    assert json.loads(raw)["tokens"][0]["sha256"] == digest(token) == record.sha256
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert [r.name for r in store.list()] == ["ci"]
    assert "sha256" not in store.list()[0].public()


def test_an_existing_name_is_an_error_unless_replaced(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    first, _ = store.create("ci")
    with pytest.raises(TokenError, match="--replace"):
        store.create("ci")
    second, _ = store.create("ci", replace=True)
    table = TokenTable(tmp_path)
    assert table.verify(first).reason == "unknown"
    verdict = table.verify(second).record
    assert verdict is not None and verdict.name == "ci"


def test_bad_names_and_durations_are_refused() -> None:
    with pytest.raises(TokenError, match="token name"):
        TokenStore("/nonexistent").create("no spaces")
    assert parse_duration("90m") == 5400
    assert parse_duration("12h") == 43200
    assert parse_duration("30d") == 30 * 86400
    for bad in ("0m", "5", "1w", "h"):
        with pytest.raises(TokenError, match="90m, 12h or 30d"):
            parse_duration(bad)


def test_revoke_unknown_name_suggests_the_closest(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.create("deploy")
    with pytest.raises(TokenError, match="did you mean 'deploy'"):
        store.revoke("deplo")


def test_concurrent_writers_lose_no_token(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    names = [f"t{i}" for i in range(12)]
    threads = [threading.Thread(target=store.create, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.name for r in store.list()] == sorted(names)


def test_writers_do_not_need_the_state_lock_a_server_holds(tmp_path: Path) -> None:
    from agent_presets.host import acquire_state_lock

    with acquire_state_lock(tmp_path):
        store = TokenStore(tmp_path)
        store.create("while-serving")
        store.revoke("while-serving")


def test_table_sees_a_revocation_and_an_expiry_on_the_next_check(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, _ = store.create("ci", expires_in=60)
    table = TokenTable(tmp_path)
    assert table.verify(token).record is not None
    assert table.verify(None).reason == "missing"
    assert table.verify("").reason == "missing"
    assert table.verify(token + "x").reason == "unknown"
    store.revoke("ci")
    assert table.verify(token).reason == "unknown"
    token, record = store.create("ci")
    assert table.get("ci") == record
    data = json.loads(store.path.read_text())
    data["tokens"][0]["expires"] = time.time() - 1
    tmp = store.path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, store.path)
    assert table.verify(token).reason == "expired"


def test_a_broken_token_file_refuses_everything(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, _ = store.create("ci")
    table = TokenTable(tmp_path)
    store.path.write_text("{not json")
    assert table.verify(token).reason == "unknown"
    with pytest.raises(TokenError, match="not valid JSON"):
        store.list()


# ------------------------------------------------------------------ policy


def _policy(**kwargs: Any) -> ToolPolicy:
    profiles = {
        "narrow": Profile("narrow", Allowed(frozenset({"a", "b"}), ("a", "b")), None, 2),
        "small": Profile("small", None, 1, None),
    }
    return ToolPolicy(profiles=profiles.get, **kwargs)


def test_a_profile_narrows_what_a_token_may_see_and_call() -> None:
    policy = _policy()
    assert policy.allows("c") and not policy.allows("c", "narrow")
    assert policy.allows("a", "narrow") and policy.allows("c", "small")
    assert not policy.allows("a", "revoked")
    with pytest.raises(GateError, match="not allowed for the token 'narrow'") as caught:
        policy.admit("c", "narrow")
    assert caught.value.layer == "allow-list"
    with pytest.raises(GateError, match="no longer valid") as caught:
        policy.admit("a", "revoked")
    assert caught.value.layer == "token"


def test_a_profile_never_widens_the_servers_allow_list() -> None:
    policy = _policy(allow=Allowed(frozenset({"a"}), ("a",)))
    assert not policy.allows("b", "narrow")
    with pytest.raises(GateError, match="this server"):
        policy.admit("b", "narrow")


def test_each_token_counts_its_own_budgets() -> None:
    policy = _policy(max_calls=10)
    policy.admit("a", "narrow")
    policy.admit("a", "narrow")
    with pytest.raises(GateError, match="budget of 2 calls") as caught:
        policy.admit("a", "narrow")
    assert caught.value.layer == "budget"
    policy.admit("b", "narrow")
    policy.admit("a", "small")
    with pytest.raises(GateError, match="token 'small'"):
        policy.admit("b", "small")
    policy.admit("a")  # no token: only the server's budget
    assert policy.calls == 5
    # Each token's status shows its own calls, and nothing of the other token.
    assert policy.status("narrow")["calls"] == 3 and policy.status("small")["calls"] == 1
    assert "narrow" not in json.dumps(policy.status("small"))
    assert policy.status()["calls"] == 5 and "tokens" not in policy.status()


def test_refusals_of_a_spent_token_budget_are_counted_per_token(tmp_path: Path) -> None:
    from agent_presets.server.events import read_events

    policy = _policy(event_log=tmp_path / "events.jsonl")
    policy.admit("a", "small")
    for _ in range(5):
        try:
            policy.admit("b", "small")
        except GateError as exc:
            policy.record("b", ok=False, seconds=0.0, layer=exc.layer, token="small")
    policy.close()
    lines = [e for e in read_events(tmp_path / "events.jsonl") if e["kind"] == "refusal"]
    assert [(e["tool"], e["count"], e["token"]) for e in lines] == [
        ("b", 1, "small"),
        ("*", 4, "small"),
    ]


# ------------------------------------------------------------------ middleware


def _scope(token: str | None) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}


def _call(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    anyio.run(app, scope, receive, send)
    return sent


def test_middleware_answers_401_with_the_challenge_and_passes_the_token_name(
    tmp_path: Path,
) -> None:
    from agent_presets.server.mcp.auth import SCOPE_KEY, TokenAuth, current_token

    store = TokenStore(tmp_path)
    token, _ = store.create("ci")
    seen: list[tuple[Any, Any]] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope[SCOPE_KEY], current_token.get()))
        # The SDK binds sessions to this principal: the token's name, not its secret.
        user = scope["user"]
        assert user.username == "ci" and token not in repr(vars(user.access_token))
        await send({"type": "http.response.start", "status": 200, "headers": []})

    app = TokenAuth(inner, TokenTable(tmp_path))
    for presented, reason in ((None, "missing"), ("nope", "unknown")):
        start, body = _call(app, _scope(presented))
        assert start["status"] == 401
        assert (b"www-authenticate", b'Bearer realm="agent-presets"') in start["headers"]
        assert json.loads(body["body"])["reason"] == reason
    assert seen == []
    (start,) = _call(app, _scope(token))
    assert start["status"] == 200 and seen == [("ci", "ci")]
    assert current_token.get() is None


def test_the_servers_own_principal_local_cannot_be_a_token_name(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_presets.cli import main

    with pytest.raises(TokenError, match="server's own principal"):
        TokenStore(tmp_path).create("local")
    result = CliRunner().invoke(main, ["tokens", "create", "local", "--state-dir", str(tmp_path)])
    assert result.exit_code == 2 and "server's own principal" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "tokens.json").exists()


def test_a_token_named_local_written_before_the_rule_is_refused(tmp_path: Path) -> None:
    from agent_presets.server.mcp.auth import TokenAuth

    store = TokenStore(tmp_path)
    token, _ = store.create("ci")
    data = json.loads(store.path.read_text())
    data["tokens"][0]["name"] = "local"  # as an older `tokens create local` wrote it
    store.path.write_text(json.dumps(data))

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a token named local reached the app")

    start, body = _call(TokenAuth(inner, TokenTable(tmp_path)), _scope(token))
    assert start["status"] == 401
    refused = json.loads(body["body"])
    assert refused["reason"] == "reserved" and "another name" in refused["error_description"]
