"""A request id given by its first characters, wherever an id is taken (``answer``, ``answer
--wait``, ``cancel``, ``show``), as real subprocesses over SQLite and Postgres: a beginning one
id has is that id, an id the store holds is itself even when it begins others, a beginning
several ids share is refused naming them (exit 2, nothing recorded), and one no id has is the
unknown-request error (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from requests_support import cli, halt_named

from toolnexus.stores.url import resolve_store

IDS = ("pnd-1a2517af3c2-1-5c1e0001", "pnd-1a2517af3c2-2-9d0b0002", "req-1", "req-10", "req-11")


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    found = (
        f"sqlite:///{tmp_path / 'runs.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    await halt_named(found, *({"rid": rid, "prompt": f"Allow {rid}?"} for rid in IDS))
    return found


async def record_of(url: str, rid: str) -> Any:
    store: Any = resolve_store(url)
    async with store:
        return await store.answer_record(rid)


async def test_answer_and_cancel_take_a_unique_beginning_of_an_id(url: str) -> None:
    code, out, err = await cli("answer", "pnd-1a2517af3c2-2", "--store", url, "--approve")
    assert (code, out.strip()) == (0, f"{IDS[1]}: approved; a worker resumes the run"), err
    code, out, err = await cli("cancel", "pnd-1a2517af3c2-1", "--store", url, "--as", "ops")
    assert (code, out.strip()) == (0, f"{IDS[0]}: cancelled"), err
    assert (await record_of(url, IDS[1])).status == "answered"
    assert (await record_of(url, IDS[0])).answered_by == "ops"


async def test_an_id_the_store_holds_is_itself_even_when_it_begins_others(url: str) -> None:
    code, out, err = await cli("answer", "req-1", "--store", url, "--decline", "--json")
    assert code == 0, err
    assert json.loads(out)["request_id"] == "req-1"
    assert await record_of(url, "req-10") is None  # still pending
    assert await record_of(url, "req-11") is None


async def test_a_beginning_several_ids_share_is_refused_naming_them(url: str) -> None:
    code, _, err = await cli("answer", "req-", "--store", url, "--approve")
    assert code == 2
    assert err.strip() == (
        'toolnexus: "req-" begins more than one request id: req-1, req-10, req-11; '
        "type more of the id"
    )
    code, _, err = await cli("cancel", "pnd-1a2517", "--store", url)
    assert code == 2
    assert f"{IDS[0]}, {IDS[1]}" in err
    for rid in IDS:
        assert await record_of(url, rid) is None  # nothing was recorded
    code, out, _ = await cli("pending", "--store", url, "--json")
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == list(IDS)


async def test_a_beginning_no_id_has_is_the_unknown_request_error(url: str) -> None:
    code, _, err = await cli("answer", "pnd-2", "--store", url, "--approve")
    assert (code, err.strip()) == (3, 'toolnexus: no halted run waits on request "pnd-2"')
    code, _, err = await cli("cancel", "zzz", "--store", url)
    assert (code, err.strip()) == (3, 'toolnexus: no halted run waits on request "zzz"')


async def test_answer_wait_follows_the_request_the_beginning_named(url: str) -> None:
    code, out, err = await cli(
        "answer", "pnd-1a2517af3c2-1", "--store", url, "--approve", "--wait", "--timeout", "0.2"
    )
    assert code == 7, err  # no worker runs here: the run stays queued
    assert out == ""
    assert f"{IDS[0]}: approved\n" in err
    assert f"{IDS[0]}: still queued, waiting for a worker after 0.2s" in err
