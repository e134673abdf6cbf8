"""The glob syntax shared by ``glob`` and ``grep``'s ``include``."""

from __future__ import annotations

import pytest

from toolnexus.tools.builtins._globs import GlobMatcher


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/deep/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**", "src/x/y/a.py", True),
        ("**/test_*.py", "tests/test_a.py", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[a-c]x", "bx", True),
        ("*.{js,ts}", "app.ts", True),
        ("*.{js,{c,m}ts}", "app.mts", True),
        ("*.{js,ts}", "app.jsx", False),
        ("./src/*.py", "src/a.py", True),
        ("a+b(c).txt", "a+b(c).txt", True),
        ("[unclosed", "[unclosed", True),
        ("{unclosed", "{unclosed", True),
        ("/etc/*", "etc/passwd", False),
    ],
)
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert GlobMatcher.compile(pattern).matches(path) is expected
