"""The site checks on every served route, over real uvicorn: a ``Host`` that is not a name the
app is served under (DNS rebinding) gets 421, a browser ``Origin`` that is not the app's own
gets 403, and a JSON-RPC or MCP body not declared JSON gets 415 — on A2A, ``/mcp``, the card
and the inbox's JSON API — and nothing runs; the names and origins a host allows pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a_support import Serve, ledger_lines, ref_message, rpc
from browser_support import served
from inbox_support import TOKENS, USERS, halted
from serve_support import serving

from toolnexus import Tool, ToolResult
from toolnexus.inbox import inbox_app
from toolnexus.serve.mcp import mcp_app
from toolnexus.stores.memory_runs import InMemoryStore
from toolnexus.testing import ScriptedModel

JSON = {"content-type": "application/json"}
MCP = {**JSON, "accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "guard-test", "version": "1"},
    },
}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": ref_message("Refund 42")}
CARD = "/.well-known/agent-card.json"


def port_of(url: str) -> str:
    return url.rsplit(":", 1)[1]


async def each_route(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> list[int]:
    """The status of a message/send, an MCP initialize and the card, with ``headers``."""
    sent = await http.post(url + "/", json=SEND, headers=headers)
    mcp = await http.post(url + "/mcp", json=INITIALIZE, headers={**MCP, **headers})
    card = await http.get(url + CARD, headers=headers)
    return [sent.status_code, mcp.status_code, card.status_code]


async def test_a_rebinding_host_is_refused_on_a2a_mcp_and_the_card_and_nothing_runs(
    serve_refunds: Serve, model: ScriptedModel, ledger: Path
) -> None:
    served_app = await serve_refunds(mcp={"name": "refunds"})
    rebound = {"host": f"evil.example:{port_of(served_app.url)}"}
    async with httpx.AsyncClient() as http:
        assert await each_route(http, served_app.url, rebound) == [421, 421, 421]
        refused = await http.post(served_app.url + "/", json=SEND, headers=rebound)
        assert refused.json()["error"]["code"] == -32600
        assert "'evil.example:" in refused.json()["error"]["message"]
        listed = await rpc(http, served_app.url, "tasks/list", {})
    assert listed["result"]["tasks"] == []
    assert model.requests == []
    assert ledger_lines(ledger) == []


@pytest.mark.parametrize(
    "host",
    [
        "localhost:{port}",
        "127.0.0.1:{port}",
        "[::1]:{port}",
        "agents.example",
        "a.corp.example",
        "public.example",
    ],
)
async def test_loopback_names_the_public_urls_and_the_allowed_hosts_are_served(
    serve_refunds: Serve, host: str
) -> None:
    served_app = await serve_refunds(
        mcp={"name": "refunds"},
        allowed_hosts=["agents.example", "*.corp.example"],
        url="https://public.example/refunds",
    )
    named = {"host": host.format(port=port_of(served_app.url))}
    async with httpx.AsyncClient() as http:
        assert await each_route(http, served_app.url, named) == [200, 200, 200]
        bare = await http.get(served_app.url + CARD, headers={"host": "corp.example"})
        assert bare.status_code == 421  # "*.corp.example" is its subdomains only


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
async def test_a_body_not_declared_json_is_refused_with_415_and_nothing_runs(
    serve_refunds: Serve, model: ScriptedModel, content_type: str | None
) -> None:
    import json

    served_app = await serve_refunds(mcp={"name": "refunds"})
    typed = {"content-type": content_type} if content_type else {}
    async with httpx.AsyncClient() as http:
        for path, body, accept in (
            ("/", SEND, {}),
            ("/mcp", INITIALIZE, {"accept": MCP["accept"]}),
        ):
            r = await http.post(
                served_app.url + path,
                content=json.dumps(body).encode(),
                headers={**typed, **accept},
            )
            assert r.status_code == 415, path
            assert r.json()["error"]["message"].startswith("Unsupported Media Type"), path
        listed = await rpc(http, served_app.url, "tasks/list", {})
    assert listed["result"]["tasks"] == []
    assert model.requests == []


async def test_a_json_content_type_with_parameters_is_taken(serve_refunds: Serve) -> None:
    import json

    served_app = await serve_refunds()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}
    async with httpx.AsyncClient() as http:
        for content_type in ("application/json; charset=utf-8", "Application/JSON"):
            r = await http.post(
                served_app.url + "/",
                content=json.dumps(body).encode(),
                headers={"content-type": content_type},
            )
            assert r.json()["result"]["tasks"] == [], content_type


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost:{port}", "http://127.0.0.1:1"]
)
async def test_a_foreign_origin_is_refused_with_403_and_nothing_runs(
    serve_refunds: Serve, model: ScriptedModel, origin: str
) -> None:
    served_app = await serve_refunds(mcp={"name": "refunds"})
    foreign = {"origin": origin.format(port=port_of(served_app.url))}
    async with httpx.AsyncClient() as http:
        assert await each_route(http, served_app.url, foreign) == [403, 403, 403]
        refused = await http.post(served_app.url + "/", json=SEND, headers=foreign)
        assert refused.json()["error"]["message"].startswith("Forbidden: a page from")
    assert model.requests == []


@pytest.mark.parametrize(
    "origin",
    [None, "{own}", "https://public.example", "https://ui.example", "http://localhost:5173"],
)
async def test_no_origin_the_apps_own_and_the_allowed_origins_pass(
    serve_refunds: Serve, origin: str | None
) -> None:
    served_app = await serve_refunds(
        mcp={"name": "refunds"},
        allowed_origins=["https://ui.example", "http://localhost:*"],
        url="https://public.example/refunds",
    )
    headers = {} if origin is None else {"origin": origin.format(own=served_app.url)}
    async with httpx.AsyncClient() as http:
        assert await each_route(http, served_app.url, headers) == [200, 200, 200]


def _add() -> Tool:
    async def add(args: dict[str, Any], ctx: Any = None) -> ToolResult:
        return ToolResult(str(args["a"] + args["b"]))

    schema = {"type": "object", "properties": {"a": {}, "b": {}}}
    return Tool("add", "Add two numbers.", schema, "native", add)


async def test_the_mcp_app_run_alone_is_guarded_the_same_way() -> None:
    app = mcp_app([_add()], allowed_hosts=["tools.example"])
    async with serving(app) as url, httpx.AsyncClient() as http:
        port = port_of(url)
        ok = await http.post(url + "/mcp", json=INITIALIZE, headers=MCP)
        named = await http.post(
            url + "/mcp", json=INITIALIZE, headers={**MCP, "host": "tools.example"}
        )
        rebound = await http.post(
            url + "/mcp", json=INITIALIZE, headers={**MCP, "host": f"evil.example:{port}"}
        )
        foreign = await http.post(
            url + "/mcp", json=INITIALIZE, headers={**MCP, "origin": "http://evil.example"}
        )
        plain = await http.post(
            url + "/mcp",
            content=b"{}",
            headers={"content-type": "text/plain", "accept": MCP["accept"]},
        )
        missing = await http.post(url + "/other", content=b"")
    assert [ok.status_code, named.status_code] == [200, 200]
    assert [rebound.status_code, foreign.status_code, plain.status_code] == [421, 403, 415]
    assert missing.status_code == 404  # a route that does not exist stays a 404


async def test_the_inbox_refuses_a_foreign_host_and_origin_and_a_json_api_body_not_json() -> None:
    store = InMemoryStore()
    await store.save_halt(halted("r-1"))
    app = inbox_app(store, users=USERS, allowed_hosts=["inbox.example"])
    bearer = {"authorization": f"Bearer {TOKENS['ana']}"}
    answer = "/api/requests/r-1/answer"
    try:
        async with served(app) as url, httpx.AsyncClient(base_url=url) as http:
            port = port_of(url)
            assert (await http.get("/login")).status_code == 200
            assert (await http.get("/login", headers={"host": "inbox.example"})).status_code == 200
            rebound = await http.get("/login", headers={"host": f"evil.example:{port}"})
            assert rebound.status_code == 421
            plain = await http.post(
                answer, content=b'{"ok": true}', headers={**bearer, "content-type": "text/plain"}
            )
            assert plain.status_code == 415
            foreign = await http.post(
                answer, json={"ok": True}, headers={**bearer, "origin": "http://evil.example"}
            )
            assert foreign.status_code == 403
            assert await store.answer_record("r-1") is None
            done = await http.post(answer, json={"ok": True}, headers=bearer)
            assert done.status_code == 200
        record = await store.answer_record("r-1")
        assert record is not None
        assert record.answered_by == "ana"
    finally:
        await app.aclose()


async def test_an_inbox_mounted_in_a_served_app_answers_to_the_served_apps_hosts(
    serve_refunds: Serve,
) -> None:
    served_app = await serve_refunds(
        inbox={"users": USERS}, allowed_hosts=["agents.example"], token="served-token-0123456789"
    )
    async with httpx.AsyncClient() as http:
        named = await http.get(served_app.url + "/inbox/login", headers={"host": "agents.example"})
        rebound = await http.get(served_app.url + "/inbox/login", headers={"host": "evil.example"})
    assert (named.status_code, rebound.status_code) == (200, 421)
