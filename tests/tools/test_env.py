"""``${NAME}`` expansion for configured header values."""

import pytest

from toolnexus._env import expand_env, expand_env_headers


def test_a_variable_is_replaced_by_its_value() -> None:
    assert expand_env("Bearer ${TOKEN}", {"TOKEN": "abc"}) == "Bearer abc"


def test_several_variables_are_replaced() -> None:
    assert expand_env("${A}:${B}:${A}", {"A": "1", "B": "2"}) == "1:2:1"


def test_an_unset_variable_expands_to_nothing() -> None:
    assert expand_env("x${NOPE}y", {}) == "xy"


@pytest.mark.parametrize("text", ["$TOKEN", "${}", "${1X}", "${A-B}", "plain", "${UNCLOSED"])
def test_text_that_is_not_a_reference_is_kept(text: str) -> None:
    assert expand_env(text, {"TOKEN": "t", "1X": "v", "A": "a"}) == text


def test_a_value_is_not_expanded_again() -> None:
    assert expand_env("${A}", {"A": "${B}", "B": "no"}) == "${B}"


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TNX_ENV_TEST", "from-env")

    assert expand_env("${TNX_ENV_TEST}") == "from-env"


def test_headers_are_expanded_into_a_new_dict() -> None:
    headers = {"Authorization": "Bearer ${T}", "Accept": "text/plain"}

    expanded = expand_env_headers(headers, {"T": "tok"})

    assert expanded == {"Authorization": "Bearer tok", "Accept": "text/plain"}
    assert headers["Authorization"] == "Bearer ${T}"


def test_no_headers_give_none_and_empty_headers_an_empty_dict() -> None:
    assert expand_env_headers(None) is None
    assert expand_env_headers({}) == {}
