"""``toolnexus show``: one request in each of its states, as a real subprocess over SQLite and
Postgres — what it asks, the call, who answered and how (an edit beside the model's call),
where the run stands (the holder and lease of a claim, an operator's hold) and what it ended
with; ``--json`` carries the same as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from requests_support import cli, halt_named, into_states

from toolnexus.stores.checks import call_digest
from toolnexus.stores.requests import holder_name

HOLDER = holder_name()
"""Who holds the claims this test takes (this process)."""
WIDE = {"COLUMNS": "200"}
"""Wide enough that no value wraps (the narrow terminal has tests/cli/test_cli_narrow.py)."""


@pytest.fixture(params=["sqlite", "postgres"])
async def states(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = (
        f"sqlite:///{tmp_path / 'runs.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    await into_states(url)
    return url


def fields(out: str) -> dict[str, list[str]]:
    """``show``'s labelled lines: label → its values (a label may repeat: ``digest``)."""
    lines = out.splitlines()
    found: dict[str, list[str]] = {"id": [lines[0]]}
    for line in lines[1:]:
        label, _, value = line.partition("  ")
        found.setdefault(label.strip(), []).append(value.strip())
    return found


async def show(url: str, rid: str) -> dict[str, list[str]]:
    code, out, err = await cli("show", rid, "--store", url, env=WIDE)
    assert code == 0, err
    return fields(out)


async def show_json(url: str, rid: str) -> dict[str, object]:
    code, out, err = await cli("show", rid, "--store", url, "--json")
    assert code == 0, err
    return json.loads(out)


async def test_a_pending_request_shows_what_it_asks_and_its_call(states: str) -> None:
    shown = await show(states, "st-pending")
    assert shown["id"] == ["st-pending"]
    assert shown["state"] == ["pending: waiting for a human to answer"]
    assert (shown["kind"], shown["prompt"], shown["tool"]) == (
        ["approval"],
        ["Allow pending?"],
        ["named"],
    )
    arguments = {"rid": "st-pending", "prompt": "Allow pending?", "amount": 400}
    assert json.loads(shown["arguments"][0]) == arguments
    assert shown["digest"] == [call_digest("named", json.dumps(arguments))]
    assert "answered" not in shown
    assert shown["asked"][0].endswith("Z)")


async def test_a_request_past_its_deadline_says_so(states: str) -> None:
    shown = await show(states, "st-late")
    assert shown["state"] == [
        "pending, past its deadline: it settles as expired when answered or resumed"
    ]
    assert shown["expires"] == ["2000-01-01T00:00:00Z"]
    assert (await show_json(states, "st-late"))["expired"] is True


async def test_an_answered_request_is_queued_for_a_worker(states: str) -> None:
    shown = await show(states, "st-queued")
    assert shown["state"] == ["answered: queued, waiting for a worker to resume the run"]
    assert shown["answered"][0].startswith("approved by ana, ")
    assert "held by" not in shown


async def test_a_claimed_request_names_its_holder_and_the_lease_left(states: str) -> None:
    shown = await show(states, "st-held")
    assert shown["state"] == ["claimed: a worker is resuming the run"]
    assert shown["held by"] == [HOLDER]
    assert shown["lease"][0].startswith("4m ")  # of a 300 s lease, a few seconds gone
    assert shown["lease"][0].endswith("s left")
    data = await show_json(states, "st-held")
    record = data["record"]
    assert isinstance(record, dict)
    assert (record["status"], record["holder"], record["lease_forever"]) == (
        "claimed",
        HOLDER,
        False,
    )
    assert 200 < record["lease_left"] <= 300
    assert record["lease_until"] > record["answered_at"]


async def test_a_flagged_request_says_what_went_wrong_and_that_an_operator_must_act(
    states: str,
) -> None:
    shown = await show(states, "st-flagged")
    assert shown["state"] == ["claimed: held for an operator (cancel it, or fix what it reports)"]
    assert shown["problem"] == ["the approved call changed"]
    assert shown["lease"] == ["no end: an operator acts"]
    assert shown["held by"] == [HOLDER]
    record = (await show_json(states, "st-flagged"))["record"]
    assert isinstance(record, dict)
    assert (record["problem"], record["lease_until"], record["lease_forever"]) == (
        "the approved call changed",
        None,
        True,
    )


async def test_an_edit_shows_the_models_call_and_the_edited_one_with_both_digests(
    states: str,
) -> None:
    shown = await show(states, "st-edited")
    assert shown["state"] == ["done"]
    model = {"rid": "st-edited", "prompt": "Allow edited?", "amount": 400}
    edited = {"rid": "st-edited", "prompt": "Allow edited?", "amount": 40}
    assert shown["arguments"][0].endswith(" (the model's)")
    assert json.loads(shown["arguments"][0].removesuffix(" (the model's)")) == model
    assert json.loads(shown["edited to"][0]) == edited
    assert shown["digest"] == [
        call_digest("named", json.dumps(model)),
        call_digest("named", json.dumps(edited)),
    ]
    assert shown["answered"][0].startswith("approved with edits by bob, ")
    assert (shown["outcome"], shown["reply"]) == (["done"], ["Ran 40."])
    data = await show_json(states, "st-edited")
    record = data["record"]
    assert isinstance(record, dict)
    assert record["decision"] == "approved with edits"
    assert record["original"]["digest"] == shown["digest"][0]
    assert record["digest"] == shown["digest"][1]
    assert record["outcome"] == {"status": "done", "text": "Ran 40."}
    # the checkpoint went when the run settled; the store kept what it asked (stores/asked.py)
    assert json.loads(str(data["arguments"])) == model


async def test_a_decline_and_a_cancel_keep_who_and_why(states: str) -> None:
    declined = await show(states, "st-declined")
    assert declined["answered"][0].startswith("declined by ana, ")
    assert declined["reason"] == ["not today"]
    # kept after the run settled (stores/asked.py), as the model wrote them
    assert json.loads(declined["arguments"][0])["rid"] == "st-declined"
    cancelled = await show(states, "st-cancelled")
    assert cancelled["state"] == ["cancelled: the run was ended"]
    assert cancelled["cancelled"][0].startswith("cancelled by ops, ")
    assert cancelled["reason"] == ["duplicate"]


async def test_show_takes_a_unique_beginning_of_an_id_and_refuses_an_ambiguous_one(
    states: str,
) -> None:
    assert (await show(states, "st-fl"))["id"] == ["st-flagged"]
    code, _, err = await cli("show", "st-", "--store", states)
    assert code == 2
    assert 'toolnexus: "st-" begins more than one request id: st-cancelled, st-declined' in err
    code, _, err = await cli("show", "nope", "--store", states)
    assert (code, err.strip()) == (3, 'toolnexus: no request "nope" in the store')


async def test_what_the_model_wrote_is_shown_visibly_and_exactly_in_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    hostile = "Refund \x1b[2J\x1b]52;c;cm0K\x07 \u202e0005?\nsecond"
    await halt_named(url, {"rid": "evil", "prompt": hostile})
    code, out, _ = await cli("show", "evil", "--store", url)
    assert code == 0
    assert "Refund ␛[2J␛]52;c;cm0K␇ ⟨U+202E⟩0005?␊second" in out
    assert "\x1b" not in out
    assert "\u202e" not in out
    data = await show_json(url, "evil")
    request = data["request"]
    assert isinstance(request, dict)
    assert request["prompt"] == hostile
    assert json.loads(str(data["arguments"]))["prompt"] == hostile
