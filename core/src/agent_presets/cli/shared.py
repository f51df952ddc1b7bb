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
from agent_presets.lib.principal import LOCAL


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
        from agent_presets.cli.options import NeedsConfirmation

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
    key, previous, changed = _keep_override(
        requests.store, requests._write, request.principal, request.preset, request.state,
        by="approval",
    )  # fmt: skip
    return {
        "preset": request.preset,
        "state": request.state,
        "previous": previous,
        "changed": changed,
        "principal": key,
    }


def _keep_override(
    store: Any,
    write: Any,
    principal: str | None,
    preset: str,
    state: str,
    *,
    by: str,
    confirm: Any = None,
) -> tuple[str, Any, bool]:
    """Keep ``principal``'s override of ``preset`` in the store (``local``'s and None's are
    the server-wide ones), tell every replica, log the change; the key, the state it
    replaced and whether it changed. ``confirm(previous)`` runs before anything is kept."""
    from agent_presets.server.events import Change
    from agent_presets.server.store import SERVER, PrincipalState

    key = SERVER if principal in (None, LOCAL) else str(principal)
    kept = store.load_principal(key) or PrincipalState()
    previous: Any = kept.overrides.get(preset, "auto")
    if confirm is not None:
        confirm(previous)
    overrides = {k: v for k, v in kept.overrides.items() if k != preset}
    if state != "auto":
        overrides[preset] = state
    changed = previous != state
    if changed:
        empty = kept.context is None and not overrides
        store.save_principal(key, None if empty else PrincipalState(kept.context, overrides))
        store.publish("principal", {"name": key})
        write(
            Change(
                preset=preset,
                state=state,  # type: ignore[arg-type]
                previous=previous,
                by=by,
                principal=None if key == SERVER else key,
            )
        )
    return key, previous, changed


# ------------------------------------------------------ overrides and context in the store


def set_override(
    store_url: str, preset: str, state: str, principal: str | None, yes: bool
) -> dict[str, Any]:
    """``presets on|off|auto PRESET --store URL``: the override kept in the store, for every
    replica (the server-wide one without ``--principal``, else the principal's own)."""
    from agent_presets.cli.options import installed_presets
    from agent_presets.lib.model import PresetValidationError, UnknownPresetError
    from agent_presets.server.principals import check_principal

    registry = installed_presets().registry
    if registry.get(preset) is None:
        raise UnknownPresetError(registry.unknown_message(preset))
    if state not in ("on", "off", "auto"):
        raise PresetValidationError(f"state {state!r} is not one of: on, off, auto")
    if principal is not None:
        check_principal(principal)
    store = open_store_or_fail(store_url, None)
    log = store.event_log()

    def confirm(previous: str) -> None:
        if state == "on" and previous != "on":
            _confirm_risky(preset, yes)

    try:
        _key, previous, changed = _keep_override(
            store, log.write, principal, preset, state, by="cli", confirm=confirm
        )
    finally:
        log.close()
        store.close()
    return {"preset": preset, "state": state, "previous": previous, "changed": changed}


def set_context(store_url: str, changes: dict[str, Any], principal: str | None) -> dict[str, Any]:
    """``presets context set KEY=VALUE --principal NAME --store URL``: a principal's own
    context, kept in the store and served the same by every replica."""
    from agent_presets.cli.options import installed_presets
    from agent_presets.lib.model import PresetValidationError
    from agent_presets.server.events import ContextChange
    from agent_presets.server.principals import check_principal
    from agent_presets.server.store import PrincipalState

    if principal is None or principal == LOCAL:
        raise PresetValidationError(
            "with --store, give --principal NAME: the host's own context is each replica's "
            "(change it on one server with --state-dir, or through its host)"
        )
    check_principal(principal)
    from agent_presets.cli.options import installed_plugins

    # A principal that follows its replica's host starts from the host's default context.
    plugin_set = installed_plugins()
    defaults = plugin_set.host_defaults()
    context = {} if defaults is None else dict(defaults.context)
    manager = installed_presets(context=context, plugins=plugin_set).manager
    manager.vocabulary.check_change(changes)
    store = open_store_or_fail(store_url, None)
    log = store.event_log()
    try:
        kept = store.load_principal(principal) or PrincipalState()
        previous = dict(kept.context) if kept.context is not None else manager.get_context()
        now = manager.check_context({**previous, **changes})
        store.save_principal(principal, PrincipalState(now, dict(kept.overrides)))
        store.publish("principal", {"name": principal})
        changed = sorted(k for k in {*previous, *now} if previous.get(k) != now.get(k))
        if changed:
            log.write(
                ContextChange(
                    fields={k: now.get(k) for k in changed}, by="cli", principal=principal
                )
            )
    finally:
        log.close()
        store.close()
    return {"context": now, "previous": previous, "changed": changed}


def status(store_url: str, principal: str | None) -> dict[str, Any]:
    """``presets status --store URL``: the principals the store keeps and their own state.

    What a principal that follows its replica's host is served depends on
    that replica; the store holds only what principals set themselves and
    the server-wide overrides.
    """
    from agent_presets.server.principals import check_principal
    from agent_presets.server.store import SERVER

    if principal is not None:
        check_principal(principal)
    store = open_store_or_fail(store_url, None)
    try:
        server = store.load_principal(SERVER)
        result: dict[str, Any] = {
            "store": store.url,
            "principals": sorted({LOCAL, *store.principal_names()}),
            "overrides": dict(server.overrides) if server is not None else {},
        }
        if principal is not None:
            own = store.load_principal(principal)
            result["principal"] = principal
            result["own"] = own.to_json() if own is not None else None
    finally:
        store.close()
    return result
