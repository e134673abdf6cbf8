"""When a client needs no API key: a transport the host injected, or a model on loopback.

Anywhere else a missing key still fails at construction (fail fast). Without a key nothing
carries one: no ``Authorization`` header (OpenAI), no ``x-api-key`` (Anthropic).
"""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import UrllibTransport, UsageError, create_client
from toolnexus.llm.dialects import is_loopback_url
from toolnexus.testing import ScriptedModel, text

KEY_VARS = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
REMOTE = "https://models.example.com/v1"


@pytest.fixture
def no_key_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


class Gateway:
    """A host's own wire (a blocking ``post``): every call goes to the model behind it,
    whatever URL the client names, with the headers the client built."""

    def __init__(self, model: ScriptedModel) -> None:
        self.inner = UrllibTransport()
        self.target = model.openai_base_url + "/chat/completions"
        self.seen: list[tuple[str, dict[str, str]]] = []

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self.seen.append((url, dict(headers)))
        return self.inner.post(self.target, headers, payload, timeout)


def credential_headers(headers: dict[str, str]) -> set[str]:
    return {name.lower() for name in headers} & {"authorization", "x-api-key"}


@pytest.mark.usefixtures("no_key_anywhere")
async def test_create_client_on_an_injected_transport_needs_no_key() -> None:
    async with ScriptedModel() as model:
        model.add(text("through the gateway"))
        gateway = Gateway(model)
        async with create_client(base_url=REMOTE, model="m", http_transport=gateway) as client:
            result = await client.run("hi")
    assert result.text == "through the gateway"
    assert gateway.seen[0][0] == REMOTE + "/chat/completions"
    assert credential_headers(gateway.seen[0][1]) == set()
    assert "authorization" not in model.requests[0].headers


@pytest.mark.usefixtures("no_key_anywhere")
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_loopback_base_url_without_a_key_sends_no_credential_header(
    host: str, style: str
) -> None:
    async with ScriptedModel() as model:
        model.add(text("local"))
        base = model.openai_base_url if style == "openai" else model.anthropic_base_url
        base = base.replace("127.0.0.1", host)
        async with create_client(base_url=base, style=style, model="m") as client:
            result = await client.run("hi")
    assert result.text == "local"
    assert credential_headers(model.requests[0].headers) == set()


@pytest.mark.usefixtures("no_key_anywhere")
async def test_a_key_from_the_environment_is_still_sent_to_a_loopback_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0001")
    async with ScriptedModel() as model:
        model.add(text("ok"))
        async with create_client(base_url=model.openai_base_url, model="m") as client:
            await client.run("hi")
    assert model.requests[0].headers["authorization"] == "Bearer sk-from-env-0001"


@pytest.mark.usefixtures("no_key_anywhere")
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_network_base_url_without_a_key_still_fails_at_construction(style: str) -> None:
    with pytest.raises(UsageError, match="no API key: pass api_key="):
        create_client(base_url=REMOTE, style=style, model="m")


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.9.0.1", True),
        ("http://[::1]:9000/v1", True),
        ("https://localhost/v1", True),
        ("http://api.localhost:3000", True),
        ("http://localhost.example.com", False),
        ("http://10.0.0.1/v1", False),
        ("https://api.openai.com/v1", False),
        ("ftp://127.0.0.1", False),
        (None, False),
    ],
)
def test_what_counts_as_a_loopback_base_url(url: str | None, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback
