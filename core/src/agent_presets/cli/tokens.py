"""``presets tokens create|list|revoke``: bearer tokens for ``serve --auth tokens``.

The token file is not the running server's state: these commands work while
a server runs on the same state directory (``agent_presets.server.tokens`` says how
writers and the server share it), and a running server honours a change on
its next request.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from agent_presets.cli.options import (
    default_state_dir,
    emit_json,
    installed_presets,
    open_store_or_fail,
    state_dir_option,
    store_option,
    table,
)
from agent_presets.lib.model import PresetValidationError

_STATE_DIR = state_dir_option("The server's state folder.")
_STORE = store_option("The token table of this store (as given to serve):")


@contextlib.contextmanager
def _token_store(state_dir: Path | None, store_url: str | None) -> Iterator[Any]:
    """The token table ``--store`` names: the state folder's file, or the shared store's."""
    from agent_presets.server.tokens import TokenStore

    if store_url is None or store_url == "embedded":
        yield TokenStore(state_dir or default_state_dir())
        return
    store = open_store_or_fail(store_url, state_dir)
    try:
        yield store.token_store()
    finally:
        store.close()


@click.group()
def tokens() -> None:
    """Bearer tokens for `presets serve --transport http --auth tokens`.

    \b
    Examples:
      presets tokens create ci --allow my-tools --max-calls 500 --expires 12h
      presets tokens list
      presets tokens revoke ci
    """


@tokens.command()
@click.argument("name")
@click.option(
    "--allow",
    "allow",
    metavar="NAME",
    multiple=True,
    help="Presets and tools (MCP names or ids) the token may use. Repeatable; unknown names "
    "are an error. [default: all the server exposes]",
)
@click.option("--max-calls", type=click.IntRange(min=1), help="Tool calls per server run.")
@click.option(
    "--max-calls-per-tool", type=click.IntRange(min=1), help="Calls of one tool per server run."
)
@click.option("--expires", metavar="DURATION", help="Lifetime such as 90m, 12h or 30d.")
@click.option(
    "--delivery",
    type=click.Choice(["auto", "stable", "live"]),
    default="auto",
    show_default=True,
    help="How this token's clients are served their tools, whatever the server's --delivery "
    "says (auto: the server's). See docs/clients.md.",
)
@click.option("--replace", is_flag=True, help="Replace an existing token of this name.")
@_STATE_DIR
@_STORE
def create(
    name: str,
    allow: tuple[str, ...],
    max_calls: int | None,
    max_calls_per_tool: int | None,
    expires: str | None,
    delivery: str,
    replace: bool,
    state_dir: Path | None,
    store_url: str | None,
) -> None:
    """Create a token and print it, alone, on stdout (it is shown only this once).

    The state folder keeps only the token's SHA-256.
    """
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.tokens import TokenError, check_name, parse_duration

    try:
        check_name(name)
        lifetime = parse_duration(expires) if expires is not None else None
    except TokenError as exc:
        raise click.BadParameter(str(exc)) from None
    if allow:
        try:
            ToolPolicy.allow_list(installed_presets(), allow)
        except PresetValidationError as exc:
            raise click.BadParameter(exc.message, param_hint="'--allow'") from None
    with _token_store(state_dir, store_url) as store:
        token, record = store.create(
            name,
            allow=allow or None,
            max_calls=max_calls,
            max_calls_per_tool=max_calls_per_tool,
            expires_in=lifetime,
            replace=replace,
            delivery=delivery,
        )
    click.echo(token)
    until = f", expires {_when(record.expires)}" if record.expires is not None else ""
    click.echo(
        f"created token {name!r}{until}; stored its SHA-256 in {store.where}. "
        "Keep the token: it cannot be shown again.",
        err=True,
    )


@tokens.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_STATE_DIR
@_STORE
def list_tokens(as_json: bool, state_dir: Path | None, store_url: str | None) -> None:
    """List the tokens: name, allow-list, budgets, created, expires (never the secret)."""
    with _token_store(state_dir, store_url) as store:
        records = store.list()
    if as_json:
        emit_json([r.public() for r in records])
        return
    now = time.time()
    table(
        None,
        ["name", "allow", "max calls", "per tool", "created", "expires"],
        (
            (
                r.name,
                ", ".join(r.allow) if r.allow is not None else "(all)",
                r.max_calls,
                r.max_calls_per_tool,
                _when(r.created),
                (_when(r.expires) + (" (expired)" if r.expired(now) else ""))
                if r.expires is not None
                else "never",
            )
            for r in records
        ),
    )


@tokens.command()
@click.argument("name")
@_STATE_DIR
@_STORE
def revoke(name: str, state_dir: Path | None, store_url: str | None) -> None:
    """Revoke a token; a running server refuses it from its next request on."""
    with _token_store(state_dir, store_url) as store:
        store.revoke(name)
    click.echo(f"revoked token {name!r}", err=True)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")
