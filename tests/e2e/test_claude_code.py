"""Claude Code adds Lomi the way a person does (`claude mcp add --transport http URL`) and its
health check (`claude mcp list`, which needs no account) says what the person must do next:
the URL alone needs authentication (Lomi answers its 2026-07-28 probe with the OAuth
challenge), and with a token from `lomi pairing create` it is connected."""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import Lomi

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
