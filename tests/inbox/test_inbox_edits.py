"""An edit shown as a diff against the model's arguments, with the values — on the request's
page, in the history and in both exports — and a finished request that keeps its arguments,
edits and conversation context on its page after its run drops the checkpoint.

Real runs halt through a client against the scripted model into every store (memory, SQLite,
Postgres); the worker finishes them in this process.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from typing import Any

from inbox_support import halted, make_app, visitor

from toolnexus import Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.suspension import Answer
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order": {"type": "string"},
        "amount": {"type": "integer"},
        "note": {"type": "string"},
    },
    "required": ["order", "amount"],
}
ASKED = {"order": "A-7", "amount": 300}
EDITED = {"order": "A-7", "amount": 45, "note": "partial"}


def refund_tool(ran: list[dict[str, Any]]) -> Tool:
    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is None or ctx.answer is None:
            return pending(kind="approval", prompt=f"Refund {args['amount']} on {args['order']}?")
        ran.append(args)
        return ToolResult(f"refunded {args['amount']}")

    return Tool("refund", "Refund an order.", SCHEMA, "native", refund)


def brain(request: RecordedRequest) -> Reply:
    done = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if done:
        return text(f"Done: {done[-1]['content']}")
    return tool_calls(call("refund", ASKED))


def cells(page: str, selector_id: str) -> list[tuple[str, str, str, str]]:
    """The rows of the diff table ``#edit-diff``: (path, change, before, after)."""
    table = page.split(f'id="{selector_id}"', 1)[1].split("</table>", 1)[0]
    found = re.findall(
        r'<tr data-path="([^"]*)" data-change="([^"]*)"><th scope="row">[^<]*</th>'
        r'<td class="before">(.*?)</td><td class="after">(.*?)</td></tr>',
        table,
    )
    return [(p, c, re.sub("<[^>]+>", "", b), re.sub("<[^>]+>", "", a)) for p, c, b, a in found]


EXPECTED_DIFF = [
    ("amount", "changed", "300", "45"),
    ("note", "added", "–", "&quot;partial&quot;"),
]


async def test_an_edit_is_a_diff_with_values_on_the_page_in_the_history_and_both_exports(
    store: Any,
) -> None:
    ran: list[dict[str, Any]] = []
    async with ScriptedModel(default=brain) as model:
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k", store=store)
        async with client:
            halted_run = await client.run("refund A-7 please", [refund_tool(ran)])
            assert halted_run.pending is not None
            rid = halted_run.pending.id
            app = make_app(store)
            async with visitor(app) as v:
                done = await v.answer(rid, action="approve_edited", arguments=json.dumps(EDITED))
                assert done.status_code == 303
                answered = (await v.get(f"/requests/{rid}")).text
                assert await client.worker([refund_tool(ran)]).drain() == 1
                finished = (await v.get(f"/requests/{rid}")).text
                history = (await v.get("/history")).text
                jsonl = (await v.get("/history.jsonl")).text
                exported = (await v.get("/history.csv")).text
            await app.aclose()
    assert ran == [EDITED]
    assert cells(answered, "edit-diff") == EXPECTED_DIFF
    # Finished: the checkpoint is gone, the call, the edit and the context stay.
    assert 'data-status="done"' in finished
    assert cells(finished, "edit-diff") == EXPECTED_DIFF
    arguments = finished.split('<pre id="arguments">', 1)[1].split("</pre>", 1)[0]
    assert json.loads(arguments.replace("&quot;", '"')) == ASKED
    assert "refund A-7 please" in finished.split('id="context"', 1)[1]
    assert "Done: refunded 45" in finished  # the run's final text
    row = history.split(f'data-request-id="{rid}"', 1)[1].split("</tr>", 1)[0]
    assert '<li data-path="amount" data-change="changed">amount: 300 → 45</li>' in row
    assert "note: added &quot;partial&quot;" in row
    [line] = [json.loads(x) for x in jsonl.splitlines()]
    assert line["decision"] == "approved with edits"
    assert json.loads(line["original_arguments"]) == ASKED
    assert json.loads(line["arguments"]) == EDITED
    assert line["edits"] == [
        {"path": ["amount"], "change": "changed", "before": 300, "after": 45},
        {"path": ["note"], "change": "added", "after": "partial"},
    ]
    [table_row] = list(csv.DictReader(io.StringIO(exported)))
    assert table_row["edits"] == 'amount: 300 → 45\nnote: added "partial"'
    assert json.loads(table_row["arguments"]) == EDITED


async def test_a_finished_approval_without_edits_keeps_its_arguments_and_context(
    store: Any,
) -> None:
    await store.save_halt(halted("p-1", user_text="please deploy the release"))
    await store.post_answer("p-1", Answer("p-1", True), answered_by="ana")
    claim = await store.take("p-1")
    assert claim is not None
    await store.complete("p-1", claim, outcome={"status": "done", "text": "deployed"})
    assert await store.load_halt("p-1") is None
    app = make_app(store)
    async with visitor(app) as v:
        page = (await v.get("/requests/p-1")).text
        exported = [json.loads(x) for x in (await v.get("/history.jsonl")).text.splitlines()]
    await app.aclose()
    assert '<pre id="arguments">{\n  &quot;env&quot;: &quot;prod&quot;' in page
    assert "please deploy the release" in page
    assert "Let me do that." in page  # the model's turn that made the call
    assert 'id="edit-diff"' not in page
    assert (exported[0]["arguments"], exported[0]["edits"]) == (
        '{"env": "prod", "replicas": 2}',
        [],
    )


async def test_a_cancelled_request_keeps_its_call_on_its_page(store: Any) -> None:
    await store.save_halt(halted("c-1", user_text="refund everything"))
    await store.cancel("c-1", reason="duplicate", answered_by="ana")
    app = make_app(store)
    async with visitor(app) as v:
        page = (await v.get("/requests/c-1")).text
    await app.aclose()
    assert 'data-status="cancelled"' in page
    assert "&quot;replicas&quot;: 2" in page
    assert "refund everything" in page


async def test_an_edits_hidden_characters_are_shown_marked_on_the_page_and_in_the_history(
    store: Any,
) -> None:
    await store.save_halt(halted("h-1"))
    edited = {"env": "prod\u202e", "replicas": 2, "x\x1b[2J": 1}
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer("h-1", action="approve_edited", arguments=json.dumps(edited))
        assert done.status_code == 303
        page = (await v.get("/requests/h-1")).text
        history = (await v.get("/history")).text
    await app.aclose()
    rlo = '<span class="invisible" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'
    for shown in (page, history):
        assert [c for c in shown if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n"] == []
    diff = page.split('id="edit-diff"', 1)[1].split("</table>", 1)[0]
    assert f"&quot;prod{rlo}&quot;" in diff
    assert '<th scope="row">[&quot;x\\u001b[2J&quot;]</th>' in diff  # a key: quoted as JSON
    edits = history.split('class="edits"', 1)[1].split("</td>", 1)[0]
    assert f"env: &quot;prod&quot; → &quot;prod{rlo}&quot;" in edits
