"""Which shell ``bash`` runs with (`_shell`): detection, the ``shell`` option, and the error
when there is none (COMPAT §5)."""

from __future__ import annotations

import os

import pytest

from toolnexus.errors import UsageError
from toolnexus.tools.builtins import (
    BashPolicy,
    BuiltinOptions,
    NoShellError,
    builtin_shell,
    create_builtin_tools,
    parse_builtin_options,
)
from toolnexus.tools.builtins._shell import detect_shell

NO_SHELL = (
    "no shell interpreter found (tried: bash, /bin/sh, sh); set builtins['shell'], or disable "
    "the bash builtin with builtins['tools']['bash'] = False"
)


def test_detection_gives_an_absolute_program_and_dash_c() -> None:
    shell = detect_shell()

    assert os.path.isabs(shell[0])
    assert shell[1:] == ("-c",)


def test_the_shell_option_is_kept_verbatim() -> None:
    assert parse_builtin_options({"shell": ["zsh", "-c"]}).shell == ("zsh", "-c")
    assert builtin_shell({"shell": ("zsh", "-c")}) == ["zsh", "-c"]


def test_no_shell_with_bash_enabled_fails_building_the_tools() -> None:
    with pytest.raises(NoShellError) as raised:
        create_builtin_tools(BuiltinOptions(shell=()))

    assert str(raised.value) == NO_SHELL
    assert isinstance(raised.value, RuntimeError)
    assert isinstance(raised.value, UsageError)


def test_no_shell_is_fine_when_bash_is_off_or_allowlisted() -> None:
    off = create_builtin_tools(BuiltinOptions(shell=(), bash=BashPolicy(enabled=False)))
    allowlisted = create_builtin_tools(BuiltinOptions(shell=(), bash=BashPolicy(allow=("git",))))

    assert "bash" not in [t.name for t in off]
    assert "bash" in [t.name for t in allowlisted]
