"""The audit: answered, declined, cancelled and expired requests with who, when, the decision,
the reason and the digest; filtered by person; exported as JSON lines and CSV."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from inbox_support import halted, make_app, visitor

from toolnexus.stores.checks import call_digest
from toolnexus.suspension import Answer, format_timestamp


async def answered_four_ways(store: Any) -> None:
    past = format_timestamp(datetime.now(UTC) - timedelta(minutes=1))
    await store.save_halt(halted("ok-1", prompt='=HYPERLINK("http://x")'))
    await store.save_halt(halted("no-1"))
    await store.save_halt(halted("cx-1"))
    await store.save_halt(halted("ex-1", expires=past))
    await store.post_answer("ok-1", Answer("ok-1", True), answered_by="ana")
    await store.post_answer(
        "no-1",
        Answer("no-1", False, data={"note": "too big"}, reason="declined"),
        answered_by="bob",
    )
    await store.cancel("cx-1", reason="wrong ticket", answered_by="ana")
    await store.expire("ex-1")


async def test_the_history_page_lists_each_decision_with_who_and_why(store: Any) -> None:
    await answered_four_ways(store)
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/history")
        by_bob = await v.get("/history", params={"by": "bob"})
        cancelled = await v.get("/history", params={"status": "cancelled"})
    text = page.text
    for rid in ("ok-1", "no-1", "cx-1", "ex-1"):
        assert f'data-request-id="{rid}"' in text
    assert '<td class="decision">declined</td><td class="reason">too big</td>' in text
    assert '<td class="decision">cancelled</td><td class="reason">wrong ticket</td>' in text
    assert '<td class="decision">expired</td>' in text
    assert 'data-request-id="no-1"' in by_bob.text
    assert 'data-request-id="ok-1"' not in by_bob.text
    assert 'data-request-id="cx-1" data-status="cancelled"' in cancelled.text
    assert 'data-request-id="ok-1"' not in cancelled.text
    await app.aclose()


async def test_the_exports_hold_the_same_rows_and_the_digest_that_was_approved(store: Any) -> None:
    await answered_four_ways(store)
    app = make_app(store)
    async with visitor(app) as v:
        jsonl = await v.get("/history.jsonl")
        exported = await v.get("/history.csv")
        only_ana = await v.get("/history.csv", params={"by": "ana"})
    rows = [json.loads(line) for line in jsonl.text.splitlines()]
    assert jsonl.headers["content-type"].startswith("application/x-ndjson")
    assert {r["request_id"]: r["decision"] for r in rows} == {
        "ok-1": "approved",
        "no-1": "declined",
        "cx-1": "cancelled",
        "ex-1": "expired",
    }
    ok = next(r for r in rows if r["request_id"] == "ok-1")
    assert ok["digest"] == call_digest("deploy", halted().outstanding[0].arguments)
    assert (ok["answered_by"], ok["status"]) == ("ana", "answered")
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert [r["request_id"] for r in table] == [r["request_id"] for r in rows]
    assert "attachment" in exported.headers["content-disposition"]
    formula = next(r for r in table if r["request_id"] == "ok-1")["prompt"]
    assert formula.startswith("'=")  # not run as a formula by a spreadsheet
    assert {r["answered_by"] for r in csv.DictReader(io.StringIO(only_ana.text))} == {"ana"}
    await app.aclose()
