"""``presets stats`` and the console's numbers: counted once, from the event log."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agent_presets.cli import main
from agent_presets.server.events import Call, Decision, EventLog, Refusal, Request
from agent_presets.server.stats import compute, percentile, stats_of_log


def _write(path: Path, *, max_bytes: int = 10 * 1024 * 1024) -> None:
    log = EventLog(path, max_bytes=max_bytes, backups=50)
    for i in range(20):
        log.write(Call(tool="space_draw_rect", ok=i != 0, latency_ms=float(i + 1)))
    log.write(Call(tool="space_graph_add_node", ok=True, latency_ms=100.0))
    log.write(Refusal(tool="space_app_run_bash", gate="preset"))
    log.write(Refusal(tool="*", gate="budget", count=9))
    log.write(Request(id="r1", asks="override", preset="general-shell-tools", state="on"))
    log.write(Decision(id="r1", asks="override", outcome="approved", by="console"))
    log.write(Decision(id="r2", asks="call", outcome="denied", by="cli", tool="x"))
    log.write(Decision(id="r3", asks="call", outcome="approved", by="cli", tool="x"))
    log.write(Decision(id="r4", asks="override", outcome="expired", by="timeout"))
    log.close()


def test_stats_count_calls_refusals_latency_and_approvals(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path)
    numbers = stats_of_log(path)
    assert numbers["calls"] == 21
    assert numbers["calls_by_tool"] == {"space_draw_rect": 20, "space_graph_add_node": 1}
    assert numbers["failed_by_tool"] == {"space_draw_rect": 1}
    # A budget summary line stands for its count.
    assert numbers["refusals_by_gate"] == {"budget": 9, "preset": 1}
    assert numbers["latency_ms"] == {"p50": 11.0, "p95": 20.0}
    # Expired requests were never decided by anyone: 2 approved of 3 decided.
    assert numbers["approval_rate"] == 2 / 3


def test_stats_read_rotated_files_too(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, max_bytes=1024)
    assert len(list(tmp_path.iterdir())) > 2
    assert stats_of_log(path)["calls"] == 21


def test_stats_of_an_empty_log_have_no_rates() -> None:
    numbers = compute([])
    assert numbers["calls"] == 0
    assert numbers["latency_ms"] == {"p50": None, "p95": None}
    assert numbers["approval_rate"] is None


def test_stats_skip_kinds_they_do_not_know() -> None:
    numbers = compute([{"v": 1, "kind": "future", "tool": "x"}, {"v": 1, "kind": "call"}])
    assert numbers["events"] == 2
    assert numbers["calls"] == 1


def test_percentile_is_a_latency_some_call_had() -> None:
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([], 0.5) is None


def test_stats_command_prints_json_and_a_table(tmp_path: Path) -> None:
    _write(tmp_path / "events.jsonl")
    runner = CliRunner()
    result = runner.invoke(main, ["stats", "--state-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["calls_by_tool"]["space_draw_rect"] == 20
    result = runner.invoke(main, ["stats", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "space_draw_rect" in result.output
    assert "67% (2 of 3 decided)" in result.output
    assert "budget" in result.output


def test_stats_command_says_where_no_log_is(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["stats", "--state-dir", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert "no event log at" in result.output
    assert "presets serve" in result.output


def test_stats_count_each_tokens_calls_for_the_operator(tmp_path: Path) -> None:
    # The status resource shows a token only its own calls; all of them are the operator's.
    log = EventLog(tmp_path / "events.jsonl")
    for token in ("laptop", "ci", "laptop", None):
        log.write(Call(tool="space_draw_rect", ok=True, latency_ms=1.0, token=token))
    log.close()
    assert stats_of_log(tmp_path / "events.jsonl")["calls_by_token"] == {"laptop": 2, "ci": 1}
    result = CliRunner().invoke(main, ["stats", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Calls by token" in result.output and "laptop" in result.output
