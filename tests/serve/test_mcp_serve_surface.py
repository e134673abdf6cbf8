"""The serving names: lazily loaded from ``toolnexus.serve``, re-exported at ``toolnexus.mcp_serve``
(the reference package's path), and the building blocks on their own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolnexus import UsageError, define_tool


@define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


def test_importing_toolnexus_serve_loads_neither_the_sdk_nor_starlette():
    code = (
        "import sys, toolnexus.serve as s; "
        "print(sorted(m for m in ('mcp', 'starlette', 'uvicorn') if m in sys.modules)); "
        "s.mcp_app; print('mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_the_reference_module_path_has_the_same_objects():
    import toolnexus.mcp_serve as ref
    import toolnexus.serve as ours

    for name in ("MCPServeConfig", "build_mcp_server", "exposed_mcp_tools", "mcp_app"):
        assert getattr(ref, name) is getattr(ours, name)
    assert (ref.DEFAULT_NAME, ref.DEFAULT_VERSION, ref.INVALID_PARAMS) == (
        "toolnexus",
        "0.1.0",
        -32602,
    )
    with pytest.raises(AttributeError):
        ours.nope  # noqa: B018


def test_build_mcp_server_gives_the_sdk_low_level_server():
    from mcp.server.lowlevel.server import Server

    from toolnexus.serve import build_mcp_server

    server = build_mcp_server([add], {"name": "calc", "version": "2.0.0"})
    assert isinstance(server, Server)
    assert (server.name, server.version) == ("calc", "2.0.0")
    assert build_mcp_server([add]).name == "toolnexus"


def test_the_config_dict_keeps_defaults_for_none_values():
    from toolnexus.serve import MCPServeConfig

    cfg = MCPServeConfig.of({"name": None, "version": None, "tools": None})
    assert cfg == MCPServeConfig()
    assert MCPServeConfig.of({"tools": ("add",)}).tools == ["add"]
    with pytest.raises(UsageError):
        MCPServeConfig.of({"stateless": True, "extra": 1})


def test_bad_app_options_are_usage_errors():
    from toolnexus.serve import mcp_app

    for bad in ({"nmae": "x"}, {"name": 3}, {"tools": "add"}, {"tools": [1]}, "calc"):
        with pytest.raises(UsageError):
            mcp_app([add], bad)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UsageError):
        mcp_app([add], store="redis://nowhere")
    with pytest.raises(UsageError):
        mcp_app([add], store=object())  # pyright: ignore[reportArgumentType]
