"""``toolnexus runs`` (what is answered but not finished: queued, or held — by whom, for how
long) and ``toolnexus history`` (what was answered, with the inbox's filters), as real
subprocesses over SQLite and Postgres."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from requests_support import cli, into_states

from toolnexus.stores.requests import holder_name

WIDE = {"COLUMNS": "250"}


@pytest.fixture(params=["sqlite", "postgres"])
async def states(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = (
        f"sqlite:///{tmp_path / 'runs.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    await into_states(url)
    return url


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


async def test_runs_lists_the_queued_and_the_held_with_holder_and_lease(states: str) -> None:
    code, out, err = await cli("runs", "--store", states, "--json")
    assert code == 0, err
    queued, held, flagged = lines(out)
    assert (queued["request_id"], queued["status"], queued["holder"], queued["lease_left"]) == (
        "st-queued",
        "answered",
        None,
        None,
    )
    assert queued["answered_by"] == "ana"
    assert (held["request_id"], held["status"], held["holder"]) == (
        "st-held",
        "claimed",
        holder_name(),
    )
    left = held["lease_left"]
    assert isinstance(left, float)
    assert 200 < left <= 300
    assert (flagged["request_id"], flagged["problem"], flagged["lease_forever"]) == (
        "st-flagged",
        "the approved call changed",
        True,
    )
    code, out, _ = await cli("runs", "--store", states, env=WIDE)
    assert code == 0
    table = out.splitlines()
    row = {rid: next(t for t in table if rid in t) for rid in ("st-queued", "st-held")}
    assert "queued for a worker" in row["st-queued"]
    assert "resuming" in row["st-held"]
    assert holder_name() in row["st-held"]
    assert "s left" in row["st-held"]
    assert "st-flagged (claimed) needs an operator: the approved call changed" in out


async def test_runs_says_when_nothing_is_in_flight(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    (tmp_path / "runs.db").touch()
    code, out, _ = await cli("runs", "--store", url)
    assert (code, out.strip()) == (
        0,
        "no runs in flight (nothing answered waits for a worker or is resumed)",
    )


async def test_the_history_is_newest_first_and_filters_as_the_inbox_does(states: str) -> None:
    async def ids(*flags: str) -> list[object]:
        code, out, err = await cli("history", "--store", states, "--json", *flags)
        assert code == 0, err
        return [h["request_id"] for h in lines(out)]

    everything = ["st-flagged", "st-cancelled", "st-declined", "st-edited", "st-held", "st-queued"]
    assert await ids() == everything
    assert await ids("--by", "ana") == ["st-declined", "st-held", "st-queued"]
    assert await ids("--status", "done") == ["st-declined", "st-edited"]
    assert await ids("--status", "cancelled", "--kind", "approval") == ["st-cancelled"]
    assert await ids("--tool", "named", "--limit", "2") == everything[:2]
    assert await ids("--tool", "other") == []
    assert await ids("--search", "EDITED") == ["st-edited"]
    assert await ids("--since", "1h") == everything
    assert await ids("--since", "0s") == []  # answered strictly later than now: none


async def test_the_history_json_carries_the_decision_the_reason_and_the_edit(
    states: str,
) -> None:
    code, out, _ = await cli("history", "--store", states, "--json", "--status", "done")
    assert code == 0
    declined, edited = lines(out)
    assert (declined["decision"], declined["reason"], declined["answered_by"]) == (
        "declined",
        "not today",
        "ana",
    )
    assert edited["decision"] == "approved with edits"
    assert edited["answer"] == {
        "id": "st-edited",
        "ok": True,
        "data": {"arguments": {"rid": "st-edited", "prompt": "Allow edited?", "amount": 40}},
    }
    original = edited["original"]
    assert isinstance(original, dict)
    assert json.loads(original["arguments"])["amount"] == 400
    code, out, _ = await cli("history", "--store", states, env=WIDE)
    assert code == 0
    assert "approved with edits" in next(t for t in out.splitlines() if "st-edited" in t)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--status", "finished"], "status must be one of"),
        (["--since", "yesterday"], "--since takes an age such as 30d, 12h or 15m"),
    ],
)
async def test_a_bad_history_filter_is_a_usage_error(
    tmp_path: Path, flags: list[str], says: str
) -> None:
    (tmp_path / "runs.db").touch()
    code, _, err = await cli("history", "--store", f"sqlite:///{tmp_path / 'runs.db'}", *flags)
    assert code == 2
    assert says in err
