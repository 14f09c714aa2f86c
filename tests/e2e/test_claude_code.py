"""Claude Code adds Lomi the way a person does (`claude mcp add --transport http URL`) and its
health check (`claude mcp list`, which needs no account) says what the person must do next:
the URL alone needs authentication (Lomi answers its 2026-07-28 probe with the OAuth
challenge), and with a token from `lomi pairing create` it is connected; `lomi connect
claude-code` does the adding (and `--remove` the taking out) for the person."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import LOMI_BIN, Lomi

CLAUDE = os.environ.get("LOMI_CLAUDE", "")

if not CLAUDE and os.environ.get("CI") != "true":
    pytest.skip("needs Claude Code's CLI; scripts/test installs it (LOMI_CLAUDE)", allow_module_level=True)


def claude(home: Path, *args: str) -> str:
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [CLAUDE, *args],
        cwd=project,
        env={"HOME": str(home), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"claude {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_claude_code_needs_authentication_with_the_url_alone_and_connects_with_a_token(
    lomi: Lomi, workspaces, tmp_path: Path
) -> None:
    a, _ = workspaces
    home = tmp_path / "home"
    claude(home, "mcp", "add", "--transport", "http", "lomi", lomi.url)
    token = lomi.create_token(a["workspaceId"], name="claude-code")["token"]
    claude(home, "mcp", "add", "--transport", "http", "lomi-token", lomi.url, "--header", f"Authorization: Bearer {token}")
    listed = claude(home, "mcp", "list")
    lines = {line.split(":", 1)[0]: line for line in listed.splitlines() if line.startswith("lomi")}
    assert "Needs authentication" in lines["lomi"], listed
    assert "Connected" in lines["lomi-token"], listed
    # The health check started no pairing the person has to decide.
    assert [p["clientName"] for p in lomi.cli("pairing", "list")] == ["claude-code"]


def test_lomi_connect_adds_lomi_to_claude_code_and_remove_takes_it_out(lomi: Lomi, tmp_path: Path) -> None:
    """`lomi connect claude-code` adds the running Lomi's URL with Claude Code's own CLI (user
    scope), keeps a copy of the config it changed, and Claude Code's reader lists it; `--remove`
    takes it out and leaves Claude Code's other servers as they were."""
    home = tmp_path / "home"
    claude(home, "mcp", "add", "--scope", "user", "--transport", "http", "other", "http://127.0.0.1:9/mcp")

    def connect(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [LOMI_BIN, "--data-dir", str(lomi.data_dir), "connect", "claude-code", *args],
            env={**os.environ, "HOME": str(home), "LOMI_CLAUDE": CLAUDE},
            cwd=tmp_path, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        )
        lomi.transcript.add(f"$ lomi connect claude-code {' '.join(args)}", f"{done.returncode}\n{done.stdout}\n{done.stderr}")
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        return done

    added = connect()
    assert f"claude mcp add --scope user --transport http lomi {lomi.url}" in added.stdout, added.stdout
    assert (home / ".claude.json.before-lomi").is_file(), "a copy of the config as it was"
    assert "lomi" not in json.loads((home / ".claude.json.before-lomi").read_text()).get("mcpServers", {})
    listed = claude(home, "mcp", "list")
    lines = {line.split(":", 1)[0]: line for line in listed.splitlines()}
    assert lomi.url in lines["lomi"] and "Needs authentication" in lines["lomi"], listed
    assert "other" in lines, listed
    # Again: the entry is replaced, not doubled.
    connect()
    again = claude(home, "mcp", "list")
    assert len([line for line in again.splitlines() if line.startswith("lomi:")]) == 1, again

    removed = connect("--remove")
    assert "no longer lists lomi" in removed.stdout, removed.stdout
    listed = claude(home, "mcp", "list")
    assert not any(line.startswith("lomi:") for line in listed.splitlines()), listed
    assert any(line.startswith("other:") for line in listed.splitlines()), listed
    # Nothing to remove is said, not an error.
    assert "nothing to remove" in connect("--remove").stdout
