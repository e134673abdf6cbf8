"""The apply_patch grammar as pure functions: parsing and applying hunks in memory."""

from __future__ import annotations

import re

import pytest

from toolnexus.tools.builtins._patch import FileOp, Hunk, PatchError, apply_hunks, parse_patch


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


# --- parsing -------------------------------------------------------------------------------


def test_every_operation_is_parsed_in_order() -> None:
    ops = parse_patch(
        patch(
            "*** Add File: new.txt",
            "+hello",
            "+",
            "*** Update File: app.py",
            "*** Move to: main.py",
            "@@ def greet():",
            " context",
            "-old",
            "+new",
            "*** Delete File: gone.txt",
        )
    )

    assert ops == [
        FileOp(kind="add", path="new.txt", content="hello\n"),  # joined, no newline added
        FileOp(
            kind="update",
            path="app.py",
            move_to="main.py",
            hunks=(
                Hunk(anchors=("def greet():",), old=("context", "old"), new=("context", "new")),
            ),
        ),
        FileOp(kind="delete", path="gone.txt"),
    ]


def test_surrounding_blank_lines_and_crlf_are_tolerated() -> None:
    text = "\r\n\r\n*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\n\r\n"

    assert parse_patch(text) == [FileOp(kind="delete", path="a")]


def test_a_first_hunk_may_omit_the_marker() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "-x", "+y"))

    assert op.hunks == (Hunk(old=("x",), new=("y",)),)


def test_several_markers_in_a_row_narrow_one_hunk() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "@@ class A", "@@ def f", "-x", "+y"))

    assert op.hunks == (Hunk(anchors=("class A", "def f"), old=("x",), new=("y",)),)


def test_end_of_file_anchors_the_hunk() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "@@", "+tail", "*** End of File"))

    assert op.hunks == (Hunk(new=("tail",), at_end=True),)


def test_a_move_without_hunks_is_a_rename() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "*** Move to: b"))

    assert (op.move_to, op.hunks) == ("b", ())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("*** Add File: a\n+x\n*** End Patch", "missing '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "missing '*** End Patch'"),
        (patch(), "no file operations"),
        (patch("*** Add File: a", "no plus"), "every line must start with '+'"),
        (patch("*** Delete File: a", "+x"), "unexpected line"),
        (patch("*** Update File: a"), "no hunks"),
        (patch("*** Update File: a", "@@", "@@"), "a hunk has no lines"),
        (patch("*** Update File: a", "@@ ctx"), "a hunk has no lines"),
        (patch("*** Update File: a", "?x"), "must start with ' ', '-' or '+'"),
        (patch("*** Update File: a", "*** Bogus"), "unexpected line"),
        (patch("*** Update File: a", "*** End of File"), "outside a hunk"),
        (patch("*** Frobnicate File: a"), "unexpected line: *** Frobnicate File: a"),
        (patch("*** Add File:   "), "missing file path"),
        (patch("*** Update File: a", "*** Move to:  ", "-x"), "without a path"),
    ],
)
def test_malformed_patches_are_rejected(text: str, message: str) -> None:
    with pytest.raises(PatchError, match=re.escape(message)):
        parse_patch(text)


# --- applying ------------------------------------------------------------------------------


def hunk(*lines: str, anchors: tuple[str, ...] = (), at_end: bool = False) -> Hunk:
    old = tuple(line[1:] for line in lines if line[0] in " -")
    new = tuple(line[1:] for line in lines if line[0] in " +")
    return Hunk(anchors=anchors, old=old, new=new, at_end=at_end)


def test_a_hunk_replaces_its_lines() -> None:
    result = apply_hunks("a\nb\nc\n", [hunk(" a", "-b", "+B")], "f")

    assert result == "a\nB\nc\n"


def test_hunks_apply_in_order_after_each_other() -> None:
    text = "x\ny\nx\ny\n"

    result = apply_hunks(text, [hunk("-x", "+1"), hunk("-x", "+2")], "f")

    assert result == "1\ny\n2\ny\n"


def test_an_anchor_selects_the_occurrence_after_it() -> None:
    text = "def a():\n    pass\ndef b():\n    pass\n"

    result = apply_hunks(text, [hunk("-    pass", "+    return 1", anchors=("def b():",))], "f")

    assert result == "def a():\n    pass\ndef b():\n    return 1\n"


def test_trailing_whitespace_differences_still_match() -> None:
    result = apply_hunks("value = 1   \n", [hunk("-value = 1", "+value = 2")], "f")

    assert result == "value = 2\n"


def test_an_end_anchored_hunk_matches_the_last_occurrence() -> None:
    result = apply_hunks("end\nmid\nend\n", [hunk("-end", "+END", at_end=True)], "f")

    assert result == "end\nmid\nEND\n"


def test_a_pure_insertion_without_anchor_appends() -> None:
    result = apply_hunks("a\n", [hunk("+b")], "f")

    assert result == "a\nb\n"


def test_a_pure_insertion_after_an_anchor_goes_there() -> None:
    result = apply_hunks("a\nc\n", [hunk("+b", anchors=("a",))], "f")

    assert result == "a\nb\nc\n"


def test_crlf_line_endings_are_kept() -> None:
    result = apply_hunks("a\r\nb\r\n", [hunk("-b", "+c", "+d")], "f")

    assert result == "a\r\nc\r\nd\r\n"


def test_a_missing_final_newline_stays_missing() -> None:
    result = apply_hunks("a\nb", [hunk("-b", "+c")], "f")

    assert result == "a\nc"


def test_deleting_every_line_leaves_an_empty_file() -> None:
    assert apply_hunks("a\n", [hunk("-a")], "f") == ""


def test_an_empty_file_can_be_filled() -> None:
    assert apply_hunks("", [hunk("+a")], "f") == "a\n"


def test_a_hunk_that_does_not_match_is_an_error_showing_the_lines() -> None:
    with pytest.raises(
        PatchError,
        match=re.escape("hunk does not match file contents (f: hunk 1; expected lines:\nnope)"),
    ):
        apply_hunks("a\n", [hunk("-nope", "+x")], "f")


def test_a_hunk_before_the_previous_one_does_not_match() -> None:
    with pytest.raises(PatchError, match=re.escape("hunk does not match file contents (f: hunk 2")):
        apply_hunks("a\nb\n", [hunk("-b", "+B"), hunk("-a", "+A")], "f")


def test_a_missing_anchor_is_an_error() -> None:
    with pytest.raises(PatchError, match="context line not found: 'def zzz'"):
        apply_hunks("a\n", [hunk("-a", "+b", anchors=("def zzz",))], "f")
