"""HTML to Markdown and to text, for ``webfetch``."""

from __future__ import annotations

import pytest

from toolnexus.tools.builtins._html import html_to_markdown, html_to_text


def test_headings_paragraphs_and_inline_marks_become_markdown() -> None:
    html = "<h2>Sub</h2><p>An <em>emphasised</em>, <strong>strong</strong> <code>x()</code>.</p>"

    assert html_to_markdown(html) == "## Sub\n\nAn *emphasised*, **strong** `x()`."


def test_links_and_images_become_markdown() -> None:
    html = '<p><a href="https://x.test/a">the docs</a> <img src="/i.png" alt="logo"></p>'

    assert html_to_markdown(html) == "[the docs](https://x.test/a) ![logo](/i.png)"


def test_javascript_links_keep_only_their_text() -> None:
    assert html_to_markdown('<a href="javascript:evil()">click</a>') == "click"


def test_nested_and_ordered_lists_are_indented_and_numbered() -> None:
    html = "<ol><li>first<ul><li>inner</li></ul></li><li>second</li></ol>"

    assert html_to_markdown(html) == "1. first\n  - inner\n2. second"


def test_pre_blocks_are_fenced_and_keep_their_whitespace() -> None:
    html = "<p>code:</p><pre>def f():\n    return  1\n</pre>"

    assert html_to_markdown(html) == "code:\n\n```\ndef f():\n    return  1\n```"


def test_block_quotes_are_prefixed() -> None:
    assert html_to_markdown("<blockquote><p>a</p><p>b</p></blockquote>") == "> a\n>\n> b"


def test_table_cells_are_joined() -> None:
    html = "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"

    assert html_to_text(html) == "k | v\na | 1"


def test_scripts_styles_and_head_are_dropped() -> None:
    html = "<html><head><title>t</title></head><body><script>x()</script><style>.a{}</style>ok"

    assert html_to_text(html) == "ok"


def test_whitespace_collapses_and_entities_decode() -> None:
    assert html_to_text("<p>  a \n\n  b&amp;c&nbsp;d  </p>") == "a b&c\xa0d"


def test_br_and_hr_break_lines() -> None:
    assert html_to_markdown("a<br>b<hr>c") == "a\nb\n\n---\n\nc"


@pytest.mark.parametrize(
    "html",
    ["<b><i>unclosed", "</p></div>stray ends", "<a href=x>open link", "<<>>", "<!-- c", "<p"],
)
def test_broken_markup_renders_without_raising(html: str) -> None:
    assert isinstance(html_to_markdown(html), str)
    assert isinstance(html_to_text(html), str)


def test_unclosed_inline_markup_is_closed_at_the_end() -> None:
    assert html_to_markdown("<b>bold <i>both") == "**bold *both***"
