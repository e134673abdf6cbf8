"""The "Running an untrusted model" configuration of docs/tools.md, built exactly as written
there and driven through a real run whose (scripted) model tries to get out (issue 10, item 6).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from net_support import HitCounter

from toolnexus import Client, create_toolkit
from toolnexus.testing import ScriptedModel, call, text, tool_calls

if shutil.which("bwrap") is None:  # pragma: no cover - depends on the machine
    if os.environ.get("CI"):
        raise RuntimeError("CI must have bubblewrap (scripts/test.sh installs it)")
    pytest.skip("bubblewrap (bwrap) is not installed", allow_module_level=True)


ClientFor = Callable[..., Client]


def untrusted_builtins(workspace: str) -> dict[str, object]:
    """The recommended configuration, as docs/tools.md prints it."""
    return {
        "workspace": workspace,  # e.g. "/srv/job-42": the only place files can change
        "bash": {"sandbox": True},  # bubblewrap: no network, host read-only, limits
        "private_network": False,  # webfetch cannot reach loopback or the LAN
        "max_output_bytes": 20_000,  # what any one tool call can return
    }


async def test_the_recommended_configuration_holds_against_a_model_trying_to_get_out(
    scripted: ScriptedModel,
    client_for: ClientFor,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = tmp_path / "job-42"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (tmp_path / "secret.txt").write_text("host secret\n")
    outside = tmp_path / "ESCAPED"
    monkeypatch.setenv("TOOLNEXUS_TEST_API_KEY", "sk-live-do-not-leak")
    fetch = "python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' {url}"
    toolkit = await create_toolkit(builtins=untrusted_builtins(str(ws)))

    async with HitCounter() as server:
        attempts = [
            call("write", {"path": "notes.txt", "content": "work\n"}, id="ok-write"),
            call("bash", {"command": "cat notes.txt && echo done > made.txt"}, id="ok-bash"),
            call("read", {"path": "../secret.txt"}, id="read-out"),
            call("read", {"path": str(tmp_path / "secret.txt")}, id="read-abs"),
            call("write", {"path": ".git/config", "content": "[alias]\n\tx = !id\n"}, id="git"),
            call("bash", {"command": f"touch {outside}; cat {tmp_path}/secret.txt"}, id="bash-out"),
            call("bash", {"command": fetch.format(url=server.url)}, id="bash-net"),
            call("webfetch", {"url": server.url}, id="webfetch"),
            call("bash", {"command": "env"}, id="env"),
            call("bash", {"command": "yes | head -c 100000"}, id="flood"),
        ]
        scripted.add(tool_calls(*attempts), text("gave up"))
        async with client_for(scripted, "openai") as client:
            result = await client.run("get out", toolkit)
        hits = server.hits
    await toolkit.close()

    by_id = {r.id: r for r in result.tool_calls}
    assert result.status == "done"
    assert not by_id["ok-write"].is_error
    assert by_id["ok-bash"].output == "work\n"
    assert (ws / "made.txt").read_text() == "done\n"
    for refused in ("read-out", "read-abs"):
        assert "outside the workspace" in by_id[refused].output
    assert "inside .git" in by_id["git"].output
    assert (ws / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not outside.exists()
    assert "host secret" not in by_id["bash-out"].output
    assert by_id["bash-net"].is_error
    assert by_id["webfetch"].is_error
    assert hits == 0
    assert "sk-live-do-not-leak" not in by_id["env"].output
    assert by_id["flood"].output.endswith("[truncated: output exceeded 20000 bytes]")
