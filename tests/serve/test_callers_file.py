"""A callers file that cannot be served stops the start with a UsageError naming what is wrong
— before anything listens — and a good one names each caller by its token's sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from a2a_support import Serve

from toolnexus.errors import UsageError
from toolnexus.serve.callers import load_callers

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def write(tmp_path: Path, content: Any) -> str:
    path = tmp_path / "callers.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_a_callers_file_names_each_caller_by_its_tokens_digest(tmp_path: Path) -> None:
    entries = [{"name": "alice", "token": ALICE}, {"name": "bob", "token_sha256": sha(BOB)}]
    assert load_callers(write(tmp_path, {"callers": entries})) == {
        sha(ALICE): "alice",
        sha(BOB): "bob",
    }
    assert load_callers({"alice": ALICE}) == {sha(ALICE): "alice"}
    assert load_callers(Path(write(tmp_path, {"callers": entries[:1]}))) == {sha(ALICE): "alice"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"callers\.json' is not JSON"),
        ({"users": [{"name": "alice", "token": ALICE}]}, r'must hold \{"callers": \[\.\.\.\]\}'),
        ({"callers": []}, "no callers"),
        ({"callers": ["alice"]}, "caller #1 must be an object"),
        ({"callers": [{"name": "alice"}]}, "caller #1: .*exactly one of token or token_sha256"),
        ({"callers": [{"token": ALICE}]}, "caller #1: .*name"),
        (
            {"callers": [{"name": "alice", "token": ALICE, "token_sha256": sha(ALICE)}]},
            "exactly one of token or token_sha256",
        ),
        ({"callers": [{"name": "alice", "token_sha256": "abc"}]}, "64 hex digits"),
        ({"callers": [{"name": "alice", "token": "short-token"}]}, "caller #1.*16"),
        ({"callers": [{"name": "alice", "token": ALICE, "kinds": ["x"]}]}, "unknown keys"),
        (
            {"callers": [{"name": "alice", "token": ALICE}, {"name": "alice", "token": BOB}]},
            "two callers are named 'alice'",
        ),
        (
            {
                "callers": [
                    {"name": "alice", "token": ALICE},
                    {"name": "bob", "token_sha256": sha(ALICE).upper()},
                ]
            },
            "callers 'alice' and 'bob' share a token",
        ),
    ],
)
def test_a_malformed_callers_file_is_a_usage_error_naming_the_problem(
    tmp_path: Path, content: Any, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        load_callers(write(tmp_path, content))


def test_callers_that_are_no_file_or_mapping_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the callers file"):
        load_callers(str(tmp_path / "missing.json"))
    with pytest.raises(UsageError, match=r"a callers file path, a \{name: token\} mapping"):
        load_callers(42)
    with pytest.raises(UsageError, match=r"caller #1.*16"):
        load_callers({"alice": "s3cret"})


async def test_a_bad_callers_file_stops_the_start(serve_refunds: Serve, tmp_path: Path) -> None:
    bad = write(tmp_path, {"callers": [{"name": "alice", "token": "short"}]})
    with pytest.raises(UsageError, match=r"caller #1.*16"):
        await serve_refunds(callers=bad)
    with pytest.raises(UsageError, match=r"token= .* or callers= .*not both"):
        await serve_refunds(callers={"alice": ALICE}, token=BOB)
