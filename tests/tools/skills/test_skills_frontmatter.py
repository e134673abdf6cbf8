"""SKILL.md frontmatter: a real YAML parse, scalars coerced and trimmed, never a crash."""

from __future__ import annotations

import subprocess
import sys

from toolnexus.tools.skills.frontmatter import parse_frontmatter


def test_a_plain_header_gives_its_fields_and_the_body_after_the_fence() -> None:
    fm = parse_frontmatter("---\nname: demo\ndescription: Does things\n---\n# Title\nText\n")

    assert fm.fields == {"name": "demo", "description": "Does things"}
    assert fm.body == "# Title\nText\n"
    assert not fm.malformed


def test_a_folded_scalar_joins_its_lines_with_spaces() -> None:
    fm = parse_frontmatter("---\nname: x\ndescription: >\n  one\n  two\n---\n")

    assert fm.fields["description"] == "one two"


def test_a_literal_scalar_keeps_its_newlines_and_loses_the_trailing_one() -> None:
    fm = parse_frontmatter("---\nname: x\ndescription: |\n  one\n  two\n\n---\n")

    assert fm.fields["description"] == "one\ntwo"


def test_keep_chomping_is_parsed_and_the_result_trimmed() -> None:
    fm = parse_frontmatter("---\nname: x\ndescription: |+\n  kept\n\n\n---\n")

    assert fm.fields["description"] == "kept"


def test_quoted_scalars_are_unquoted_and_escapes_applied() -> None:
    fm = parse_frontmatter("---\nname: 'it''s'\ndescription: \"tab\\there: yes\"\n---\n")

    assert fm.fields == {"name": "it's", "description": "tab\there: yes"}


def test_values_are_trimmed() -> None:
    fm = parse_frontmatter('---\nname: "  padded  "\n---\n')

    assert fm.fields["name"] == "padded"


def test_numbers_become_their_text() -> None:
    fm = parse_frontmatter("---\nname: 42\ndescription: 1.5\n---\n")

    assert fm.fields == {"name": "42", "description": "1.5"}


def test_booleans_become_python_spelled_text_as_in_the_package() -> None:
    fm = parse_frontmatter("---\nname: true\ndescription: no\n---\n")

    assert fm.fields == {"name": "True", "description": "False"}


def test_a_date_becomes_its_iso_text() -> None:
    fm = parse_frontmatter("---\nname: 2024-05-06\n---\n")

    assert fm.fields["name"] == "2024-05-06"


def test_lists_mappings_and_nulls_count_as_absent() -> None:
    fm = parse_frontmatter("---\nname: [a, b]\ndescription: {k: v}\nlicense:\n---\n")

    assert fm.fields == {}
    assert not fm.malformed


def test_text_without_a_header_is_all_body() -> None:
    fm = parse_frontmatter("# Just markdown\n---\nname: no\n---\n")

    assert fm.fields == {}
    assert fm.body == "# Just markdown\n---\nname: no\n---\n"
    assert not fm.malformed


def test_an_empty_header_is_well_formed_and_has_no_fields() -> None:
    fm = parse_frontmatter("---\n---\nbody")

    assert (fm.fields, fm.body, fm.malformed) == ({}, "body", False)


def test_broken_yaml_with_no_rescuable_name_is_malformed_not_a_crash() -> None:
    fm = parse_frontmatter("---\nname: [unclosed\ndescription: x\n---\nbody\n")

    assert fm.malformed
    assert fm.yaml_error.startswith("while parsing a flow sequence")
    assert "\n" not in fm.yaml_error
    assert fm.fields == {"description": "x"}  # rescued line by line; no name, so malformed
    assert fm.body == "body\n"


def test_a_header_that_is_not_a_mapping_has_no_fields_and_is_not_malformed() -> None:
    fm = parse_frontmatter("---\n- name\n- other\n---\nbody\n")

    assert (fm.fields, fm.malformed) == ({}, False)


def test_an_opening_fence_that_never_closes_makes_the_whole_text_the_body() -> None:
    fm = parse_frontmatter("---\nname: x\nno closing fence\n")

    assert (fm.fields, fm.malformed) == ({}, False)
    assert fm.body == "---\nname: x\nno closing fence\n"


def test_control_characters_refused_by_yaml_are_rescued_line_by_line() -> None:
    fm = parse_frontmatter("---\nname: a\x00b\x07\n---\n")

    assert fm.yaml_error
    assert fm.fields == {"name": "a\x00b\x07"}  # discovery then refuses the name


def test_crlf_line_ends_are_read() -> None:
    fm = parse_frontmatter("---\r\nname: demo\r\n---\r\nbody\r\n")

    assert fm.fields == {"name": "demo"}
    assert fm.body == "body\r\n"


def test_a_byte_order_mark_before_the_fence_is_ignored() -> None:
    fm = parse_frontmatter("\ufeff---\nname: demo\n---\n")

    assert fm.fields == {"name": "demo"}


def test_any_later_line_starting_with_three_dashes_closes_the_header() -> None:
    fm = parse_frontmatter("---\nname: demo\n----\nbody\n")

    assert (fm.fields, fm.body) == ({"name": "demo"}, "body\n")


def test_the_opening_fence_must_be_exactly_three_dashes() -> None:
    fm = parse_frontmatter("----\nname: demo\n---\nbody\n")

    assert fm.fields == {}


def test_yaml_aliases_are_resolved() -> None:
    fm = parse_frontmatter("---\nname: &n shared\ndescription: *n\n---\n")

    assert fm.fields == {"name": "shared", "description": "shared"}


def test_importing_toolnexus_does_not_import_yaml() -> None:
    code = "import sys, toolnexus, toolnexus.tools.skills; print('yaml' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert out.stdout.strip() == "False"
