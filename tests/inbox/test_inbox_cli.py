"""``toolnexus inbox`` refusing what it cannot serve: each a usage error (exit 2) that names
the problem, before anything listens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inbox_support import USERS

from toolnexus.cli import main


@pytest.fixture
def users(tmp_path: Path) -> Path:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"users": USERS}))
    return path


def run(capsys: Any, *args: str) -> tuple[int, str]:
    code = main(["inbox", *args])
    return code, capsys.readouterr().err


def test_a_store_url_with_a_typo_is_a_usage_error(capsys: Any, users: Path) -> None:
    code, err = run(capsys, "--store", "sqlit:///x.db", "--users", str(users), "--port", "0")
    assert code == 2
    assert "sqlit" in err


def test_the_memory_store_is_refused(capsys: Any, users: Path) -> None:
    code, err = run(capsys, "--store", "memory", "--users", str(users), "--port", "0")
    assert (code, "durable store" in err) == (2, True)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read the users file"),
        ("{not json", "is not JSON"),
        ('{"users": []}', "at least one user"),
        ('{"users": [{"name": "ana"}]}', "exactly one of token or token_sha256"),
        ('{"users": [{"name": "ana", "token": "a b"}]}', "without whitespace"),
        (
            '{"users": [{"name": "a", "token": "token-one-0123456"}, '
            '{"name": "a", "token": "token-two-0123456"}]}',
            "share a name",
        ),
        ('{"users": [{"name": "ana", "token_sha256": "xyz"}]}', "64 hex digits"),
        ('{"users": [{"name": "ana", "token": "token-0123456789", "role": "x"}]}', "unknown keys"),
        (
            '{"users": [{"name": "ana", "token": "token-0123456789", "kinds": "approval"}]}',
            "list of kind names",
        ),
        ('{"users": [{"name": "ana", "token": "fifteen-chars-x"}]}', "at least 16"),
    ],
)
def test_a_bad_users_file_is_a_usage_error(
    capsys: Any, tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "users.json"
    if content is not None:
        path.write_text(content)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    code, err = run(capsys, "--store", db, "--users", str(path), "--port", "0")
    assert code == 2
    assert expected in err


def test_an_empty_secret_file_is_a_usage_error(capsys: Any, tmp_path: Path, users: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("  \n")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    code, err = run(capsys, "--store", db, "--users", str(users), "--secret-file", str(secret))
    assert (code, "is empty" in err) == (2, True)


def test_a_port_in_use_is_a_usage_error(capsys: Any, tmp_path: Path, users: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        db = f"sqlite:///{tmp_path / 'runs.db'}"
        code, err = run(capsys, "--store", db, "--users", str(users), "--port", str(port))
    assert (code, "cannot listen" in err) == (2, True)


def test_a_negative_sign_in_limit_is_a_usage_error(
    capsys: Any, tmp_path: Path, users: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ("--store", url, "--users", str(users), "--port", "0", "--max-failed-sign-ins", "-1")
    code, err = run(capsys, *args)
    assert code == 2
    assert "the sign-in limit must be an int >= 0, got -1" in err


def test_the_command_has_help(capsys: Any) -> None:
    assert main(["inbox", "--help"]) == 0
    assert "--users" in capsys.readouterr().out
