"""``presets stats`` and ``presets events verify``: what the log says, and whether it is whole.

Reads the log a server of ``--state-dir`` writes (its rotated files
included); no server needs to run, and nothing here loads plugins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agent_presets.cli.options import (
    default_state_dir,
    emit_json,
    open_store_or_fail,
    state_dir_option,
    store_option,
    table,
)
from agent_presets.lib.model import PresetError
from agent_presets.server.events import rotated_paths, verify_log
from agent_presets.server.stats import stats_of_log


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _log_options(command: Any) -> Any:
    """``--state-dir``, ``--event-log`` and ``--store``: which log a reading command reads."""
    command = store_option("Read the event log of this store (as given to serve):")(command)
    command = click.option(
        "--event-log",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read this event log instead (as given to serve --event-log).",
    )(command)
    return state_dir_option("The state folder whose events.jsonl to read (as given to serve).")(
        command
    )


def _log_path(state_dir: Path | None, event_log: Path | None) -> Path:
    path = event_log or (state_dir or default_state_dir()) / "events.jsonl"
    if not rotated_paths(path):
        raise PresetError(
            f"no event log at {path}; run presets serve with this --state-dir "
            "(or pass --event-log FILE)"
        )
    return path


def _shared_store(store_url: str | None, event_log: Path | None) -> Any:
    """The shared store whose stream to read, or None to read a file."""
    if store_url is None or store_url == "embedded":
        return None
    if event_log is not None:
        raise click.UsageError("--event-log and --store name two logs; give one of them")
    return open_store_or_fail(store_url, None)


@click.command()
@_log_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stats(
    state_dir: Path | None, event_log: Path | None, store_url: str | None, as_json: bool
) -> None:
    """Calls by tool, refusals by gate, latency p50/p95 and the approval rate.

    Counted from the event log, rotated files included (docs/events.md); with
    --store redis://..., from the store's stream, every replica's lines.
    """
    store = _shared_store(store_url, event_log)
    if store is not None:
        from agent_presets.server.stats import compute
        from agent_presets.server.store.redislog import read_stream

        try:
            numbers = compute(read_stream(store))
            # The budgets' counters as every replica counted them (the log counts calls).
            numbers["counters"] = store.counts()
        finally:
            store.close()
    else:
        numbers = stats_of_log(_log_path(state_dir, event_log))
    if as_json:
        emit_json(numbers)
        return
    _print(numbers)


def _print(numbers: dict[str, Any]) -> None:
    latency = numbers["latency_ms"]
    rate = numbers["approval_rate"]
    decided = numbers["decisions"]
    table(
        "Summary",
        ["", ""],
        [
            ("events", numbers["events"]),
            ("calls", numbers["calls"]),
            ("refusals", numbers["refusals"]),
            ("latency p50", _ms(latency["p50"])),
            ("latency p95", _ms(latency["p95"])),
            (
                "approval rate",
                "-"
                if rate is None
                else f"{rate:.0%} ({decided.get('approved', 0)} of "
                f"{decided.get('approved', 0) + decided.get('denied', 0)} decided)",
            ),
        ],
    )
    failed = numbers["failed_by_tool"]
    if numbers["calls_by_tool"]:
        table(
            "Calls by tool",
            ["tool", "calls", "failed"],
            [(t, n, failed.get(t, 0)) for t, n in numbers["calls_by_tool"].items()],
        )
    if numbers["refusals_by_gate"]:
        table("Refusals by gate", ["gate", "refusals"], numbers["refusals_by_gate"].items())
    if numbers["calls_by_token"]:
        table("Calls by token", ["token", "calls"], numbers["calls_by_token"].items())
    if numbers.get("counters"):
        table("Budget counters (the store's)", ["counter", "calls"], numbers["counters"].items())


@click.group()
def events() -> None:
    """The event log itself: `presets events verify` checks it was not tampered with."""


@events.command()
@_log_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(
    state_dir: Path | None, event_log: Path | None, store_url: str | None, as_json: bool
) -> None:
    """Follow the log's hash chain, rotated files included: `ok N lines`, or the first break.

    Every line carries the hash of the line before it (docs/events.md), so a
    line removed, altered or moved is found where the chain breaks: exit 1
    with FILE:LINE and what most likely happened.

    \b
    Examples:
      presets events verify
      presets events verify --event-log /var/log/presets/events.jsonl --json
      presets events verify --store redis://127.0.0.1:6379/0
    """
    store = _shared_store(store_url, event_log)
    if store is not None:
        from agent_presets.server.store.redislog import verify_stream

        try:
            found = verify_stream(store)
        finally:
            store.close()
    else:
        found = verify_log(_log_path(state_dir, event_log))
    broken = found.broken
    if as_json:
        emit_json(
            {
                "ok": broken is None,
                "lines": found.lines,
                "unchained": found.unchained,
                "break": None
                if broken is None
                else {"file": str(broken.file), "line": broken.line, "problem": broken.problem},
            }
        )
    elif broken is None:
        note = f" ({found.unchained} older lines have no chain)" if found.unchained else ""
        click.echo(f"ok {found.lines} lines{note}")
    else:
        click.echo(f"{broken.file}:{broken.line}: the chain breaks here: {broken.problem}")
    if broken is not None:
        raise SystemExit(1)
