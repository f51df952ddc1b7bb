"""``presets on|off|auto NAME``, ``status``, ``requests``, ``approve ID``, ``deny ID``,
``context set KEY=VALUE...``.

They act on the running server of ``--state-dir`` through its control socket
(``agent_presets.server.control``); nothing here loads plugins or imports ``mcp``, so
each command answers in the time Python takes to start. Overrides live only
as long as that server: with no server running, there is nothing to change.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from agent_presets.cli.options import (
    NeedsConfirmation,
    default_state_dir,
    emit_json,
    state_dir_option,
    store_option,
    table,
)
from agent_presets.lib.safetext import shown
from agent_presets.server.control import ControlError, NoServerError, control_request
from agent_presets.server.requests import MIN_DIGEST, shown_request

F = TypeVar("F", bound=Callable[..., Any])


_STATE_DIR = state_dir_option("The state folder of the server to act on (as given to serve).")
_STORE = store_option("Act on the requests in this store, not one server's (as given to serve):")


def _shared(store_url: str | None) -> bool:
    """Whether ``--store`` names a shared store (its requests are decided there, docs/store.md)."""
    return store_url is not None and store_url != "embedded"


def yes_option(func: F) -> F:
    return click.option(
        "--yes",
        "-y",
        is_flag=True,
        help="Turn on a risky preset (filesystem-write, destructive, shell) without asking; "
        "needed when not on a terminal.",
    )(func)


def principal_option(what: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option(
            "--principal",
            metavar="NAME",
            help=f"{what} of one principal (a token's name, or local) instead of the server's.",
        )(func)

    return decorate


def _with_principal(message: dict[str, Any], principal: str | None) -> dict[str, Any]:
    return message if principal is None else {**message, "principal": principal}


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def _confirmed(state_dir: Path, message: dict[str, Any], yes: bool) -> Any:
    """Send ``message``; if the server wants confirmation, ask on a terminal (or need --yes)."""
    if yes:
        return control_request(state_dir, {**message, "confirmed": True})
    try:
        return control_request(state_dir, message)
    except ControlError as exc:
        if exc.code != "confirm":
            raise
        preset, risk = exc.detail.get("preset"), exc.detail.get("risk")
        if not sys.stdin.isatty():
            raise NeedsConfirmation(
                f"preset {preset!r} has risk {risk!r}: turning it on needs confirmation; "
                "run this on a terminal to be asked, or pass --yes"
            ) from None
    click.confirm(
        f"Preset {preset!r} has risk {risk!r}: its tools can change or delete things "
        "outside the agent's control. Turn it on?",
        abort=True,
        err=True,
    )
    return control_request(state_dir, {**message, "confirmed": True})


def _set(
    name: str,
    state: str,
    state_dir: Path | None,
    principal: str | None,
    store_url: str | None,
    yes: bool = False,
) -> None:
    if _shared(store_url):
        from agent_presets.cli import shared

        result = shared.set_override(str(store_url), name, state, principal, yes)
        whose = "server-wide" if principal is None else f"for {shown(principal)}"
        was = f" (was {result['previous']})" if result["changed"] else " already"
        click.echo(f"{name}: {state} {whose}{was}; every replica applies it")
        return
    where = state_dir or default_state_dir()
    message = _with_principal({"op": "set", "preset": name, "state": state, "by": "cli"}, principal)
    result = _confirmed(where, message, yes)
    whose = "" if principal is None else f" for {shown(principal)}"
    if not result["changed"]:
        click.echo(
            f"{name}: {state} already{whose} ({'active' if result['active'] else 'inactive'})"
        )
        return
    click.echo(
        f"{name}: {state}{whose} (was {result['previous']}); "
        f"{'active' if result['active'] else 'inactive'} now"
    )


_OVERRIDE_OF = principal_option("Set the override")
_OVERRIDE_STORE = store_option("Keep the override in this store, for every replica:")


@click.command("on")
@click.argument("name")
@_STATE_DIR
@_OVERRIDE_OF
@_OVERRIDE_STORE
@yes_option
def turn_on(
    name: str, state_dir: Path | None, principal: str | None, store_url: str | None, yes: bool
) -> None:
    """Force preset NAME on in the running server.

    Without --principal the override is the server's, for every principal;
    with it, that principal's own, which wins over the server's. Every
    connected client that is served the change hears of the new tools at
    once. A risky preset (filesystem-write, destructive, shell) asks for
    confirmation first.
    """
    _set(name, "on", state_dir, principal, store_url, yes)


@click.command("off")
@click.argument("name")
@_STATE_DIR
@_OVERRIDE_OF
@_OVERRIDE_STORE
def turn_off(
    name: str, state_dir: Path | None, principal: str | None, store_url: str | None
) -> None:
    """Force preset NAME off in the running server (--principal: for one principal)."""
    _set(name, "off", state_dir, principal, store_url)


@click.command("auto")
@click.argument("name")
@_STATE_DIR
@_OVERRIDE_OF
@_OVERRIDE_STORE
def turn_auto(
    name: str, state_dir: Path | None, principal: str | None, store_url: str | None
) -> None:
    """Drop NAME's override: the context decides again whether it is active.

    With --principal, drop that principal's own override: the server's applies again.
    """
    _set(name, "auto", state_dir, principal, store_url)


@click.command()
@_STATE_DIR
@principal_option("Show the context and presets")
@store_option("Show the principals and overrides kept in this store:")
@json_option
def status(
    state_dir: Path | None, principal: str | None, store_url: str | None, as_json: bool
) -> None:
    """Show the running server's context, every preset's state and why, and its principals.

    \b
    --json prints {"server": PID or null, "principal": NAME, "principals": [...],
                   "context": {...},
                   "presets": [{name, group, state, active, reason, risk}, ...]}.
    """
    if _shared(store_url):
        from agent_presets.cli import shared

        kept = shared.status(str(store_url), principal)
        if as_json:
            emit_json(kept)
            return
        click.echo(f"store {kept['store']}")
        click.echo(f"principals: {', '.join(shown(p) for p in kept['principals'])}")
        server_wide = " ".join(f"{k}={v}" for k, v in kept["overrides"].items()) or "none"
        click.echo(f"server-wide overrides: {server_wide}")
        if principal is not None:
            own = kept["own"]
            click.echo(f"{shown(principal)}: {json.dumps(own) if own else 'follows the server'}")
        return
    where = state_dir or default_state_dir()
    try:
        result = control_request(where, _with_principal({"op": "status"}, principal))
    except NoServerError as exc:
        if as_json:
            emit_json({"server": None, "context": None, "presets": []})
        else:
            click.echo(str(exc))
        return
    if as_json:
        emit_json(result)
        return
    context = " ".join(f"{k}={v}" for k, v in result["context"].items())
    click.echo(f"server PID {result['server']}, state dir {where}")
    principals = result.get("principals") or []
    click.echo(f"principals: {', '.join(shown(p) for p in principals)}")
    if principal is not None:
        click.echo(f"principal: {shown(principal)}")
    click.echo(f"context: {context}")
    table(
        None,
        ["preset", "group", "state", "active", "why", "risk"],
        (
            [
                p["name"],
                p["group"],
                p["state"],
                "yes" if p["active"] else "no",
                p["reason"],
                p["risk"],
            ]
            for p in result["presets"]
        ),
    )
    if result.get("requests"):
        click.echo(f"{result['requests']} requests wait: `presets requests` lists them")


@click.command()
@_STATE_DIR
@click.option(
    "--full", is_flag=True, help="Show every argument of each waiting call in full, and its digest."
)
@principal_option("List the requests")
@json_option
@_STORE
def requests(
    state_dir: Path | None,
    full: bool,
    principal: str | None,
    as_json: bool,
    store_url: str | None,
) -> None:
    """List what the agent asked for that waits for you (approve or deny each by ID).

    \b
    The listing clips long arguments and says so; --full shows each call as it
    will run, with the digest that `presets approve ID --digest D` checks.
    --json prints every request with its full arguments and digest.
    """
    if _shared(store_url):
        from agent_presets.cli import shared

        result = shared.pending(str(store_url))
        if principal is not None:
            result = [r for r in result if r.get("principal") == principal]
    else:
        where = state_dir or default_state_dir()
        result = control_request(where, _with_principal({"op": "requests"}, principal))
    if as_json:
        # ASCII only: a terminal never receives an agent's raw control character.
        click.echo(json.dumps(result, indent=2, ensure_ascii=True))
        return
    if not result:
        click.echo("no pending requests")
        return
    if full:
        for r in result:
            _show_full(shown_request(r))
        return
    clipped: list[str] = []
    rows = []
    for r in map(shown_request, result):
        if r["clipped"]:
            clipped.append(r["id"])
        digest = r.get("digest")
        rows.append(
            [
                r["id"],
                r["kind"],
                r["preset"],
                r["asks"],
                f"sha256:{digest[:MIN_DIGEST]}" if digest else "",
                r["expires"],
                r["summary"],
            ]
        )
    table(None, ["id", "kind", "preset", "asks", "digest", "expires", "reason"], rows)
    if clipped:
        click.echo(
            f"clipped: the arguments of {', '.join(clipped)} are longer than shown; "
            "`presets requests --full` shows every argument in full"
        )


def _show_full(r: dict[str, Any]) -> None:
    """One request, each argument on a line of its own, every character shown."""
    preset = f" (preset {r['preset']})" if r["preset"] else ""
    click.echo(f"{r['id']}  {r['kind']}: {r['what']}{preset}, expires {r['expires']}")
    if r["kind"] != "call":
        click.echo(f"  reason: {r['reason']}")
        return
    click.echo(f"  digest: sha256:{r['digest']}")
    if not r["arguments"]:
        click.echo("  no arguments")
    for name, value in r["arguments"]:
        click.echo(f"  {name} = {value}")
    click.echo(f"  approve exactly this call: presets approve {r['id']} --digest {r['digest']}")


@click.command()
@click.argument("request_id", metavar="ID")
@click.option(
    "--digest",
    metavar="HEX",
    help="Approve only if ID is the call with this digest (as `presets requests` shows it, "
    f"at least {MIN_DIGEST} hex digits); else nothing is approved.",
)
@_STATE_DIR
@yes_option
@_STORE
def approve(
    request_id: str, digest: str | None, state_dir: Path | None, yes: bool, store_url: str | None
) -> None:
    """Approve the pending request ID (`presets requests` lists them).

    An approved call runs once, as `presets requests --full` shows it, and
    only if every gate still lets it (its preset on, its token valid, budgets
    left). --digest binds the approval to the call you read.
    """
    if _shared(store_url):
        from agent_presets.cli import shared

        result = shared.approve(request_id, digest, yes, str(store_url))
    else:
        message: dict[str, Any] = {"op": "approve", "id": request_id, "by": "cli"}
        if digest is not None:
            message["digest"] = digest
        result = _confirmed(state_dir or default_state_dir(), message, yes)
    change = result.get("change")
    rid = shown(request_id)
    if change is not None and "principal" in change:  # decided in the store: every replica
        click.echo(
            f"approved {rid}: {change['preset']} {change['state']} for "
            f"{shown(change['principal'])}, on every replica"
        )
    elif change is not None:
        click.echo(
            f"approved {rid}: {change['preset']} {change['state']}, "
            f"{'active' if change['active'] else 'inactive'} now"
        )
    elif result.get("digest"):
        click.echo(
            f"approved {rid}: {shown(str(result.get('tool')))} runs once, the call with "
            f"digest sha256:{result['digest']}"
        )
    else:
        click.echo(f"approved {rid}")


@click.command()
@click.argument("request_id", metavar="ID")
@_STATE_DIR
@_STORE
def deny(request_id: str, state_dir: Path | None, store_url: str | None) -> None:
    """Deny the pending request ID: nothing changes, and the agent is not told why."""
    if _shared(store_url):
        from agent_presets.cli import shared

        shared.deny(request_id, str(store_url))
    else:
        message = {"op": "deny", "id": request_id, "by": "cli"}
        control_request(state_dir or default_state_dir(), message)
    click.echo(f"denied {shown(request_id)}")


@click.group("context")
def context() -> None:
    """Change the running server's context, as the host app would."""


@context.command("set")
@click.argument("assignments", metavar="KEY=VALUE...", nargs=-1, required=True)
@_STATE_DIR
@principal_option("Set the context")
@store_option("Keep the principal's context in this store, for every replica:")
@json_option
def context_set(
    assignments: tuple[str, ...],
    state_dir: Path | None,
    principal: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Set context fields of the running server, e.g. mode=review.

    Without --principal it is the host's context, which every principal
    without a context of its own follows; with it, that principal's own
    (from then on it no longer follows the host's).

    Each KEY must be a declared context field and each VALUE one it allows
    (true/false for a boolean, null for none); a bad one is refused with the
    declared values and nothing changes. (When no plugin declares a field,
    any field is taken.) Every connected client hears of the
    new tools at once. The change is logged as the host's (a `context` event),
    not as an agent's call.
    """
    from agent_presets.cli.options import parse_value

    changes: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"{assignment!r} is not KEY=VALUE (e.g. mode=review)", param_hint="KEY=VALUE"
            )
        changes[key.strip()] = parse_value(value)
    where = state_dir or default_state_dir()
    if _shared(store_url):
        from agent_presets.cli import shared

        result = shared.set_context(str(store_url), changes, principal)
    else:
        message = _with_principal({"op": "context", "set": changes, "by": "cli"}, principal)
        result = control_request(where, message)
    if as_json:
        emit_json(result)
        return
    now = " ".join(f"{k}={_shown(v)}" for k, v in result["context"].items())
    if result["changed"]:
        click.echo(f"context: {now} (changed: {', '.join(result['changed'])})")
    else:
        click.echo(f"context: {now} (unchanged)")


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


COMMANDS = (turn_on, turn_off, turn_auto, status, requests, approve, deny, context)
