"""Every MCP method `presets serve` answers, on stdio and HTTP, in both protocol eras.

The method list is the server's own: the spec's client methods it has a
handler for (and ``initialize``, which the SDK's runner answers). Each has a
case for the legacy (handshake) era and one for the modern (2026-07-28) era,
which may be "not in this era": then the server must answer ``-32601``. A
method the server starts to answer without a case for both eras fails
``test_every_served_method_has_a_case_in_both_eras``, so no method is tested
in one era only.

A client per transport and era runs every case, and the test reports every
failing method at once (``resources/list`` answering ``-32603`` was the first
failing case when this matrix was written: its result lacked the 2026-07-28
cache hints).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import methods as spec
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets.server.mcp import build_server
from agent_presets_general import SpaceHost

from .conftest import HttpServer

pytestmark = pytest.mark.anyio

Era = str  # "legacy" or "modern"
Case = Callable[[Client], Awaitable[None]]
ABSENT = "absent"
"""A method the era does not have: the server answers -32601 (Method not found)."""

THEME = "space_app_set_theme"
PROMPT_URI = "presets://active/prompt"


def cached(result: Any) -> None:
    """A 2026-07-28 cacheable result carries its cache hints; a legacy one has none to carry."""
    assert result.ttl_ms is not None and result.ttl_ms >= 0, result
    assert result.cache_scope in ("public", "private"), result


def modern(client: Client) -> bool:
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


async def tools_list(client: Client) -> None:
    result = await client.list_tools()
    assert THEME in {t.name for t in result.tools}
    if modern(client):
        cached(result)


async def tools_call(client: Client) -> None:
    result = await client.call_tool(THEME, {"theme": "dark"})
    assert not result.is_error, result


async def prompts_list(client: Client) -> None:
    result = await client.list_prompts()
    assert "active-presets" in {p.name for p in result.prompts}
    if modern(client):
        cached(result)


async def prompts_get(client: Client) -> None:
    result = await client.get_prompt("active-presets")
    assert isinstance(result, types.GetPromptResult), result
    assert result.messages


async def complete(client: Client) -> None:
    # The units plugin's review prompt completes its unit argument from the units folder
    # (empty on a fresh host): an answer of the completion shape, in either era.
    result = await client.complete(
        types.PromptReference(name="space_units_review"), {"name": "unit", "value": ""}
    )
    assert isinstance(result.completion.values, list), result


async def resources_list(client: Client) -> None:
    result = await client.list_resources()
    assert PROMPT_URI in {str(r.uri) for r in result.resources}
    if modern(client):
        cached(result)


async def templates_list(client: Client) -> None:
    result = await client.list_resource_templates()
    assert isinstance(result.resource_templates, list)
    if modern(client):
        cached(result)


async def resources_read(client: Client) -> None:
    result = await client.read_resource(PROMPT_URI)
    assert isinstance(result, types.ReadResourceResult), result
    assert result.contents and result.contents[0].uri == PROMPT_URI
    if modern(client):
        cached(result)
    await resources_read_unknown(client)


async def resources_read_unknown(client: Client) -> None:
    with pytest.raises(MCPError) as refused:
        await client.read_resource("presets://no/such/resource")
    assert refused.value.error.code == types.INVALID_PARAMS
    assert refused.value.error.data == {"uri": "presets://no/such/resource"}  # SEP-2164


async def ping(client: Client) -> None:
    await client.session.send_request(types.PingRequest(), types.EmptyResult)


async def set_level(client: Client) -> None:
    await client.session.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level="info")), types.EmptyResult
    )


def _subscription(method: str) -> Case:
    async def case(client: Client) -> None:
        params = types.SubscribeRequestParams(uri="presets://active/status")
        request: Any = (
            types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=params.uri))
            if method == "resources/unsubscribe"
            else types.SubscribeRequest(params=params)
        )
        await client.session.send_request(request, types.EmptyResult)

    return case


async def discover(client: Client) -> None:
    result = await client.session.send_request(types.DiscoverRequest(), types.DiscoverResult)
    tools = result.capabilities.tools
    assert tools is not None and tools.list_changed, result.capabilities
    cached(result)


async def initialize_refused(client: Client) -> None:
    # A modern connection never runs the handshake: over HTTP initialize is a removed
    # method (-32601, what the conformance suite checks); on stdio's dual-era loop it
    # names the versions the connection serves (-32022). A request first: on stdio the
    # first request decides the era, and a pinned client sends none before this one.
    await client.list_tools()
    request = types.InitializeRequest(
        params=types.InitializeRequestParams(
            protocol_version="2025-11-25",
            capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="matrix", version="1"),
        )
    )
    with pytest.raises(MCPError) as refused:
        await client.session.send_request(request, types.InitializeResult)
    assert refused.value.error.code in (types.METHOD_NOT_FOUND, types.UNSUPPORTED_PROTOCOL_VERSION)


async def initialized(client: Client) -> None:
    # The client's own handshake ran; what it agreed is the legacy era.
    assert client.protocol_version not in MODERN_PROTOCOL_VERSIONS
    assert client.server_capabilities.tools is not None


async def listen(client: Client) -> None:
    async with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
        assert sub.honored.tools_list_changed
        # A change made inside a request (test_e2e_listen has those made outside one).
        await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
        await client.call_tool("space_app_switch_surface", {"surface": "scene"})
        with anyio.fail_after(20):
            async for event in sub:
                # Served stable (this era's default), its own switch changes the prompts it
                # is served, never its tool list (test_e2e_delivery.py).
                assert "tools" not in type(event).__name__.lower(), event
                if "prompts" in type(event).__name__.lower():
                    return


CASES: dict[str, dict[Era, Case | str]] = {
    "initialize": {"legacy": initialized, "modern": initialize_refused},
    "ping": {"legacy": ping, "modern": ABSENT},
    "server/discover": {"legacy": ABSENT, "modern": discover},
    "tools/list": {"legacy": tools_list, "modern": tools_list},
    "tools/call": {"legacy": tools_call, "modern": tools_call},
    "prompts/list": {"legacy": prompts_list, "modern": prompts_list},
    "prompts/get": {"legacy": prompts_get, "modern": prompts_get},
    "completion/complete": {"legacy": complete, "modern": complete},
    "resources/list": {"legacy": resources_list, "modern": resources_list},
    "resources/templates/list": {"legacy": templates_list, "modern": templates_list},
    "resources/read": {"legacy": resources_read, "modern": resources_read},
    "resources/subscribe": {"legacy": _subscription("resources/subscribe"), "modern": ABSENT},
    "resources/unsubscribe": {"legacy": _subscription("resources/unsubscribe"), "modern": ABSENT},
    "logging/setLevel": {"legacy": set_level, "modern": ABSENT},
    "subscriptions/listen": {"legacy": ABSENT, "modern": listen},
}

# Each absent method, as the typed request the SDK's client would send for it.
ABSENT_REQUESTS: dict[str, Callable[[], Any]] = {
    "ping": types.PingRequest,
    "server/discover": types.DiscoverRequest,
    "logging/setLevel": lambda: types.SetLevelRequest(
        params=types.SetLevelRequestParams(level="info")
    ),
    "resources/subscribe": lambda: types.SubscribeRequest(
        params=types.SubscribeRequestParams(uri=PROMPT_URI)
    ),
    "resources/unsubscribe": lambda: types.UnsubscribeRequest(
        params=types.UnsubscribeRequestParams(uri=PROMPT_URI)
    ),
    "subscriptions/listen": lambda: types.SubscriptionsListenRequest(
        params=types.SubscriptionsListenRequestParams(
            notifications=types.SubscriptionFilter(tools_list_changed=True)
        )
    ),
}


def absent(method: str) -> Case:
    async def case(client: Client) -> None:
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(ABSENT_REQUESTS[method](), types.EmptyResult)
        assert refused.value.error.code == types.METHOD_NOT_FOUND, refused.value

    return case


def served_methods(tmp_path: Path) -> set[str]:
    """The spec's client methods the server has a handler for, and ``initialize``."""
    presets = SpaceHost(tmp_path / "state").start()
    server = build_server(presets)
    try:
        handled = {m for m in spec.SPEC_CLIENT_METHODS if server.get_request_handler(m)}
    finally:
        server.close()
        presets.sync.stop()
    return handled | {"initialize"}


@pytest.mark.anyio
async def test_every_served_method_has_a_case_in_both_eras(tmp_path: Path) -> None:
    served = served_methods(tmp_path)
    assert served == set(CASES), (
        f"methods served without a matrix case: {sorted(served - set(CASES))}; "
        f"cases for methods no longer served: {sorted(set(CASES) - served)}"
    )
    one_era = sorted(m for m, eras in CASES.items() if set(eras) != {"legacy", "modern"})
    assert one_era == [], f"methods with a case for one era only: {one_era}"
    missing = {
        m for m, eras in CASES.items() if ABSENT in eras.values() and m not in ABSENT_REQUESTS
    }
    assert missing == set(), f"absent methods without a request to send: {sorted(missing)}"


async def run_matrix(target: Any, era: Era) -> None:
    mode = "legacy" if era == "legacy" else "2026-07-28"
    failures: list[str] = []
    async with Client(target, mode=mode) as client:
        assert modern(client) == (era == "modern"), client.protocol_version
        for method, eras in CASES.items():
            case = eras[era]
            run = absent(method) if case == ABSENT else case
            assert callable(run)
            try:
                with anyio.fail_after(60):
                    await run(client)
            except Exception as exc:  # collect every failing method, not only the first
                failures.append(f"{method} ({era}): {type(exc).__name__}: {exc}")
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_every_method_over_stdio(stdio_server_params: Any, era: Era) -> None:
    await run_matrix(stdio_server_params(), era)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_every_method_over_http(http_server: HttpServer, era: Era) -> None:
    await run_matrix(http_server.url, era)
