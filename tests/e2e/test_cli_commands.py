"""The presets command line, as a user and a CI pipeline drive it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_presets.cli import main

GOOD = textwrap.dedent("""\
    presets:
      - name: my-tools
        group: mine
        default_state: auto
        risk: normal
        contexts: [{surface: canvas, activity: drawing}]
        tool_ids: [mine.do-thing]
        system_prompt: Use my tools.
      - name: my-shell
        default_state: off
        risk: shell
        contexts: [{surface: any}]
        tool_ids: [mine.run]
""")

BAD = textwrap.dedent("""\
    presets:
      - name: ok-one
        default_state: auto
        risk: normal
        contexts: [{surface: any}]
        tool_ids: [mine.a]
      - name: risky
        default_state: auto
        risk: destructive
        contexts: [{surface: any}]
        tool_ids: [mine.b]
""")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- validate


def test_validate_installed_plugins_is_clean(runner: CliRunner) -> None:
    code, out, err = invoke(runner, "validate")
    assert code == 0, out + err
    assert out == ""
    assert err.startswith("ok: ") and "0 problem(s)" in err


def test_validate_good_file_exits_zero(runner: CliRunner, tmp_path: Path) -> None:
    code, _, err = invoke(runner, "validate", str(write(tmp_path, "good.yaml", GOOD)))
    assert code == 0
    assert "2 valid preset(s)" in err


def test_validate_reports_dangerous_auto_at_its_line(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", BAD)
    code, out, _ = invoke(runner, "validate", str(path))
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1
    location, message = lines[0].split(": ", 1)
    assert location.endswith("bad.yaml:8:20")
    assert "preset 'risky' has risk 'destructive' and must use default_state: off" in message


def test_validate_folder_finds_yaml_files_and_cross_file_duplicates(
    runner: CliRunner, tmp_path: Path
) -> None:
    write(tmp_path, "a.yaml", GOOD)
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "b.yml", GOOD)
    code, out, _ = invoke(runner, "validate", str(tmp_path))
    assert code == 1
    assert "preset 'my-tools' is defined twice" in out
    assert "preset 'my-shell' is defined twice" in out


def test_validate_json_format(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(
        runner, "validate", "--format", "json", str(write(tmp_path, "bad.yaml", BAD))
    )
    assert code == 1
    data = json.loads(out)
    assert data["valid"] is False
    assert data["presets"] == 1
    [problem] = data["problems"]
    assert (problem["line"], problem["column"]) == (8, 20)
    assert "default_state: off" in problem["message"]


def test_validate_github_format_emits_annotations(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(
        runner, "validate", "--format", "github", str(write(tmp_path, "bad.yaml", BAD))
    )
    assert code == 1
    assert out.startswith("::error file=")
    assert ",line=8,col=20::" in out


def test_validate_yaml_syntax_error(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(
        runner, "validate", str(write(tmp_path, "broken.yaml", "presets:\n  - name: [x\n"))
    )
    assert code == 1
    assert "YAML syntax error" in out
    assert "broken.yaml:" in out


def test_validate_missing_path_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    code, _, err = invoke(runner, "validate", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "does not exist" in err


def test_validate_unknown_format_is_a_usage_error(runner: CliRunner) -> None:
    code, _, err = invoke(runner, "validate", "--format", "xml")
    assert code == 2
    assert "'xml' is not one of" in err


def test_validate_does_not_import_mcp(tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    code = (
        "import sys\n"
        "from agent_presets.cli import main\n"
        f"try:\n    main(['validate', {str(path)!r}])\n"
        "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "assert 'mcp' not in sys.modules, 'validate imported mcp'\n"
        "main(['validate'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    check = (
        "import sys\nfrom agent_presets.cli import main\n"
        "try:\n    main(['validate'])\nexcept SystemExit:\n    pass\n"
        "print('mcp' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


# ---------------------------------------------------------------- listings


def test_list_json_has_every_builtin_preset(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "list", "--json")
    assert code == 0
    names = {p["name"] for p in json.loads(out)}
    assert {
        "drawing-shape-tools",
        "graph-node-tools",
        "scene-object-tools",
        "general-shell-tools",
        "units-inspect-tools",
    } <= names
    shell = next(p for p in json.loads(out) if p["name"] == "general-shell-tools")
    assert shell["default_state"] == "off" and shell["plugin"] == "general"


def test_list_table_and_group_filter(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "list", "--group", "drawing")
    assert code == 0
    assert "drawing-shape-tools" in out
    assert "scene-object-tools" not in out


def test_show_preset(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "show", "drawing-shape-tools", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["plugin"] == "drawing"
    assert "space_drawing_insert_shape" in [t["mcp_name"] for t in data["tools"]]
    code, out, _ = invoke(runner, "show", "drawing-shape-tools")
    assert code == 0 and "space_drawing_insert_shape" in out


def test_show_unknown_preset_suggests_a_name(runner: CliRunner) -> None:
    code, _, err = invoke(runner, "show", "drawing-shape-tool")
    assert code == 1
    assert err.strip() == (
        "Error: no preset named 'drawing-shape-tool'; did you mean 'drawing-shape-tools'?"
    )


def test_tools_lists_every_adapter_with_its_presets(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "tools", "--json")
    assert code == 0
    tools = {t["mcp_name"]: t for t in json.loads(out)}
    assert tools["space_app_run_bash"]["presets"] == ["general-shell-tools"]
    assert tools["space_app_run_bash"]["risk"] == ["shell"]
    assert tools["space_drawing_inspect"]["read_only"] is True
    # Each tool names its plugin as `presets plugins` does, not the package it came from.
    code, listed, _ = invoke(runner, "plugins", "--all", "--json")
    plugin_names = {p["name"] for p in json.loads(listed)["plugins"]}
    by_plugin = {t["plugin"] for t in tools.values()}
    assert by_plugin == {"drawing", "graph", "scene", "general", "units"} <= plugin_names
    code, out, _ = invoke(runner, "tools")
    assert code == 0 and "space_app_run_bash" in out
    # Piped: one line per tool for grep, without a tail of padding.
    assert all(line == line.rstrip() for line in out.splitlines())


def test_plugins_hides_builtins_unless_all(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "plugins", "--json")
    assert code == 0
    assert json.loads(out)["plugins"] == []
    code, out, _ = invoke(runner, "plugins", "--all", "--json")
    rows = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert set(rows) >= {"drawing", "graph", "scene", "general", "units"}
    assert rows["drawing"]["distribution"] == "agent-presets-drawing"
    assert rows["drawing"]["presets"] == 7
    assert "presets_tool_adapters" in rows["drawing"]["hooks"]
    code, out, _ = invoke(runner, "plugins", "--all")
    assert code == 0 and "agent-presets-drawing" in out


def test_plugins_respects_presets_load_plugins(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "drawing,graph")
    code, out, _ = invoke(runner, "plugins", "--all", "--json")
    assert code == 0
    assert {p["name"] for p in json.loads(out)["plugins"]} == {"drawing", "graph"}


def test_schema_prints_and_writes(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(runner, "schema")
    assert code == 0
    repo_schema = Path(__file__).parents[2] / "schemas" / "preset.schema.json"
    assert json.loads(out) == json.loads(repo_schema.read_text())
    target = tmp_path / "out" / "preset.schema.json"
    target.parent.mkdir()
    code, _, err = invoke(runner, "schema", "--output", str(target))
    assert code == 0 and "wrote" in err
    assert json.loads(target.read_text()) == json.loads(out)


# ---------------------------------------------------------------- resolve / explain


def test_resolve_drawing_context(runner: CliRunner) -> None:
    code, out, _ = invoke(
        runner, "resolve", "--surface", "canvas", "--activity", "drawing", "--json"
    )
    assert code == 0
    data = json.loads(out)
    active = {a["name"]: a["reason"] for a in data["active_presets"]}
    assert active["drawing-shape-tools"] == "context"
    assert "scene-object-tools" not in active
    assert "space_drawing_insert_shape" in data["mcp_tools"]
    assert "space_scene_add_cuboid" not in data["mcp_tools"]
    assert data["context"]["canvas_visible"] is True
    assert [f["preset"] for f in data["prompt_fragments"]] == [
        a["name"]
        for a in data["active_presets"]
        if any(f["preset"] == a["name"] for f in data["prompt_fragments"])
    ]


def test_resolve_overrides_and_facts(runner: CliRunner) -> None:
    code, out, _ = invoke(
        runner,
        "resolve",
        "--surface",
        "scene",
        "--on",
        "general-shell-tools",
        "--off",
        "scene-object-tools",
        "--set",
        "world_id=home",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    active = {a["name"]: a["reason"] for a in data["active_presets"]}
    assert active["general-shell-tools"] == "override"
    assert "scene-object-tools" not in active
    assert data["context"]["world_id"] == "home"
    assert data["overrides"] == {"general-shell-tools": "on", "scene-object-tools": "off"}


def test_resolve_table_output(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "resolve", "--surface", "scene")
    assert code == 0
    assert "scene-object-tools" in out and "space_scene_add_cuboid" in out


def test_resolve_rejects_unknown_preset_and_bad_flags(runner: CliRunner) -> None:
    code, _, err = invoke(runner, "resolve", "--on", "no-such-preset")
    assert code == 1
    assert err.strip().startswith("Error: no preset named 'no-such-preset'")
    code, _, err = invoke(runner, "resolve", "--set", "world_id")
    assert code == 2 and "is not KEY=VALUE" in err
    code, _, err = invoke(
        runner, "resolve", "--on", "scene-object-tools", "--off", "scene-object-tools"
    )
    assert code == 2 and "both --on and --off" in err


def test_explain_inactive_context_tool(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "explain", "space_drawing_insert_shape", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["active"] is False
    [verdict] = data["presets"]
    assert verdict["preset"] == "drawing-shape-tools"
    assert "switch to the canvas surface" in verdict["enable"]
    assert "set the activity to drawing" in verdict["enable"]


def test_explain_off_tool_names_the_override(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "explain", "app.run-bash")
    assert code == 0
    assert "general-shell-tools" in out
    assert "general-shell-tools=on" in out


def test_explain_active_tool_with_context_flags(runner: CliRunner) -> None:
    code, out, _ = invoke(
        runner,
        "explain",
        "space_drawing_undo",
        "--surface",
        "canvas",
        "--activity",
        "drawing",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["active"] is True
    assert data["presets"][0]["reason"].startswith("the current context matches")


def test_explain_unknown_tool_exits_one(runner: CliRunner) -> None:
    code, _, err = invoke(runner, "explain", "space_nope")
    assert code == 1
    assert "no installed plugin provides a tool named 'space_nope'" in err


# ---------------------------------------------------------------- opencode


def test_opencode_prints_local_mcp_config(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "opencode")
    assert code == 0
    config = json.loads(out)
    server = config["mcp"]["presets"]
    assert server["type"] == "local"
    assert server["command"][-3:] == ["-m", "agent_presets", "serve"] or server["command"][1:4] == [
        "-m",
        "agent_presets",
        "serve",
    ]


def test_opencode_write_makes_isolated_config(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(
        runner, "opencode", "--write", str(tmp_path / "oc"), "--state-dir", str(tmp_path / "state")
    )
    assert code == 0
    key, _, value = out.strip().partition("=")
    assert key == "OPENCODE_CONFIG"
    config = json.loads(Path(value).read_text())
    command = config["mcp"]["presets"]["command"]
    assert "--state-dir" in command
    # The written command really starts a server that answers --help.
    proc = subprocess.run(
        [*command[:-1], "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "--transport" in proc.stdout


def test_opencode_asks_before_every_risky_tool_by_the_name_opencode_gives_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    code, out, _ = invoke(runner, "opencode", "--write", str(tmp_path / "oc"))
    assert code == 0
    config = json.loads(Path(out.strip().partition("=")[2]).read_text())
    assert list(config["mcp"]) == ["presets"]
    rules = config["permission"]
    assert set(rules.values()) == {"ask"}
    # opencode prefixes the server key: presets_space_..., never space_space_...
    assert all(name.startswith("presets_space_") for name in rules), rules
    for risky in (
        "space_app_write_file",  # filesystem-write
        "space_app_run_bash",  # shell
        "space_drawing_delete_layer",  # destructive
        "space_app_delete_world",
    ):
        assert f"presets_{risky}" in rules
    for safe in (
        "space_app_read_file",  # filesystem-read
        "space_app_list_files",
        "space_app_set_theme",  # normal
        "space_drawing_insert_shape",
        "space_presets_request",  # the server's own tool
    ):
        assert f"presets_{safe}" not in rules


def test_opencode_rules_follow_the_server_key_and_refuse_one_opencode_would_rewrite(
    runner: CliRunner,
) -> None:
    code, out, _ = invoke(runner, "opencode", "--name", "my-space")
    assert code == 0
    config = json.loads(out)
    assert "my-space_space_app_write_file" in config["permission"]
    code, _, err = invoke(runner, "opencode", "--name", "my space")
    assert code == 2 and "letters, digits" in err


def test_a_read_only_tool_of_a_risky_preset_has_no_effective_risk() -> None:
    from agent_presets.lib.model import effective_risk

    assert effective_risk("shell", {"readOnlyHint": True}) is None
    assert effective_risk("shell", {"readOnlyHint": False}) == "shell"
    assert effective_risk("destructive", None) == "destructive"


# ---------------------------------------------------------------- the real executable


def run_presets(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_presets", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", BAD)
    for args in (
        ["show", "nope"],
        ["resolve", "--on", "nope"],
        ["explain", "nope"],
        ["validate", str(bad)],
        ["resolve", "--surface", ""],
    ):
        proc = run_presets(*args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout, args


def test_usage_errors_exit_two() -> None:
    proc = run_presets("resolve", "--bogus")
    assert proc.returncode == 2
    assert "No such option '--bogus'" in proc.stderr


def test_a_mistyped_command_suggests_the_commands_it_is_close_to() -> None:
    proc = run_presets("lis")
    assert proc.returncode == 2
    assert "No such command 'lis'. (Did you mean one of: 'list', 'plugins'?)" in proc.stderr


def test_every_command_loads_on_first_use_under_its_own_name() -> None:
    import click

    from agent_presets.cli import COMMANDS

    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name


def test_help_teaches_every_command() -> None:
    proc = run_presets("--help")
    assert proc.returncode == 0
    for command in (
        "validate",
        "list",
        "show",
        "tools",
        "plugins",
        "schema",
        "resolve",
        "explain",
        "opencode",
        "serve",
    ):
        assert command in proc.stdout
    assert "PRESETS_LOAD_PLUGINS" in proc.stdout


def test_strict_mode_makes_a_missing_plugin_fatal() -> None:
    proc = run_presets("list", env={"PRESETS_LOAD_PLUGINS": "drawing,ghost", "PRESETS_STRICT": "1"})
    assert proc.returncode == 1
    assert "'ghost'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_presets("list", env={"PRESETS_LOAD_PLUGINS": "drawing,ghost"})
    assert proc.returncode == 0
    assert "warning: PRESETS_LOAD_PLUGINS names 'ghost'" in proc.stderr


def test_serve_refuses_a_namespace_that_is_not_snake_case(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "agent_presets", "serve", "--namespace", "My-App",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "'--namespace'" in result.stderr
    assert not (tmp_path / "state").exists()


def test_serve_refuses_an_activity_no_plugin_declares_with_a_did_you_mean(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "agent_presets", "serve", "--activity", "drawng",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "did you mean 'drawing'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_reports_each_problem_of_a_broken_preset_file_once(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "broken.yaml").write_text("presets:\n  - name: x\n    prompt: 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "agent_presets", "serve", "--plugins-dir", str(plugins),
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    problems = [line for line in result.stderr.splitlines() if "broken.yaml" in line]
    assert any("unknown field 'prompt'" in line for line in problems)
    assert len(problems) == len(set(problems)) == 5  # four missing fields, one unknown
    assert "presets serve:" in result.stderr  # it served the rest
