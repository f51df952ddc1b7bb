"""``presets requests|approve|deny --store redis://...``: decide requests in the shared store.

With replicas there is no one server to ask: the requests wait in the store
(``agent_presets.server.store.redisrequests``), so these commands read and
decide them there, with no server's control socket. A decided call's replica
hears the decision on the store's bus and runs the call once; an approved
override is written to the principal that asked (the server-wide overrides
when the request names none) and announced on the bus (topic ``principal``),
so every replica applies it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import click

from agent_presets.cli.options import open_store_or_fail
from agent_presets.principal import LOCAL


@contextlib.contextmanager
def shared_requests(store_url: str) -> Iterator[Any]:
    """The store's requests, writing their events to the store's log; closed after."""
    from agent_presets.server.store.redisrequests import SharedRequestStore

    store = open_store_or_fail(store_url, None)
    log = store.event_log()
    try:
        yield SharedRequestStore(store, emit=log.write)
    finally:
        log.close()
        store.close()


def pending(store_url: str) -> list[dict[str, Any]]:
    with shared_requests(store_url) as requests:
        return [r.to_json() for r in requests.pending()]


def approve(request_id: str, digest: str | None, yes: bool, store_url: str) -> dict[str, Any]:
    """Approve ``request_id`` in the store; the result ``presets approve`` prints."""
    with shared_requests(store_url) as requests:
        request = requests.get(request_id)
        if digest is not None:
            requests.check_digest(request, digest)
        result: dict[str, Any] = {"id": request.id, "kind": request.kind}
        if request.kind == "call":
            result.update(tool=request.tool, digest=request.digest)
        else:
            _confirm_risky(request.preset, yes)
            result["change"] = _apply_override(requests, request)
        requests.decide(request.id, "approved", by="cli")
    return result


def deny(request_id: str, store_url: str) -> None:
    with shared_requests(store_url) as requests:
        requests.decide(request_id, "denied", by="cli")


def _confirm_risky(preset: str | None, yes: bool) -> None:
    """A risky preset is turned on only with ``--yes`` or a person's yes on a terminal."""
    if yes or preset is None:
        return
    from agent_presets.cli.options import installed_presets

    found = installed_presets().registry.get(preset)
    if found is None or not found.dangerous:
        return
    if not sys.stdin.isatty():
        from agent_presets.cli.control import NeedsConfirmation

        raise NeedsConfirmation(
            f"preset {preset!r} has risk {found.risk!r}: turning it on needs confirmation; "
            "run this on a terminal to be asked, or pass --yes"
        )
    click.confirm(
        f"Preset {preset!r} has risk {found.risk!r}: its tools can change or delete things "
        "outside the agent's control. Turn it on?",
        abort=True,
        err=True,
    )


def _apply_override(requests: Any, request: Any) -> dict[str, Any]:
    """Set the override the request asks for on its principal, and tell every replica."""
    from agent_presets.server.events import Change
    from agent_presets.server.store import SERVER, PrincipalState

    store = requests.store
    # local's overrides are the server's own.
    principal = SERVER if request.principal in (None, LOCAL) else request.principal
    kept = store.load_principal(principal) or PrincipalState()
    previous: Any = kept.overrides.get(request.preset, "auto")
    overrides = {**kept.overrides, request.preset: request.state}
    store.save_principal(principal, PrincipalState(context=kept.context, overrides=overrides))
    store.publish("principal", {"name": principal})
    if previous != request.state:
        requests._write(
            Change(preset=request.preset, state=request.state, previous=previous, by="approval")
        )
    return {
        "preset": request.preset,
        "state": request.state,
        "previous": previous,
        "changed": previous != request.state,
        "principal": principal,
    }
