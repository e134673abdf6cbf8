"""`toolnexus._edit_diff`: what an edit changed in a call's arguments, key by key, with values."""

from __future__ import annotations

from toolnexus._edit_diff import MISSING, Change, change_text, changes, changes_of, path_text


def test_a_changed_value_is_listed_with_both_values() -> None:
    found = changes({"order": "A-1", "amount": 300}, {"order": "A-1", "amount": 45})
    assert found == [Change(path=("amount",), before=300, after=45)]
    assert change_text(found[0]) == "amount: 300 → 45"


def test_added_and_removed_keys_say_so_in_the_models_key_order_then_the_new_ones() -> None:
    found = changes({"b": 1, "a": 2}, {"a": 2, "c": [1], "z": None})
    assert [(c.path, c.kind) for c in found] == [
        (("b",), "removed"),
        (("c",), "added"),
        (("z",), "added"),
    ]
    assert [change_text(c) for c in found] == ["b: removed 1", "c: added [1]", "z: added null"]
    assert found[0].after is MISSING


def test_nested_objects_are_compared_key_by_key_and_lists_as_whole_values() -> None:
    found = changes(
        {"to": {"city": "Oslo", "zip": "1"}, "ids": [1, 2]},
        {"to": {"city": "Bergen", "zip": "1"}, "ids": [2, 1]},
    )
    assert [change_text(c) for c in found] == [
        'to.city: "Oslo" → "Bergen"',
        "ids: [1, 2] → [2, 1]",
    ]


def test_values_are_equal_only_as_the_same_json() -> None:
    found = changes({"n": 1, "flag": 1}, {"n": 1.0, "flag": True})
    assert [change_text(c) for c in found] == ["n: 1 → 1.0", "flag: 1 → true"]
    assert changes({"a": {"b": [1]}}, {"a": {"b": [1]}}) == []


def test_keys_that_are_not_plain_names_are_quoted_in_the_path() -> None:
    assert path_text(("a.b", "c")) == '["a.b"].c'
    assert path_text(()) == "(arguments)"


def test_the_models_arguments_that_are_not_json_are_one_change_of_the_whole() -> None:
    [found] = changes_of("{not json", {"a": 1})
    assert found.path == ()
    assert change_text(found) == '(arguments): "{not json" → {"a": 1}'
    assert found.to_dict() == {
        "path": [],
        "change": "changed",
        "before": "{not json",
        "after": {"a": 1},
    }
