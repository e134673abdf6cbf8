"""ACP agents: drive an Agent Client Protocol agent over stdio as a model or a tool source.

::

    from toolnexus import create_in_process_client
    from toolnexus.acp import ACPOptions, load_acp

    acp = load_acp(ACPOptions("gemini", ["--experimental-acp"], wait_for=approve))
    client = create_in_process_client(model="gemini-acp", generate=acp.agenerate)
    print((await client.run("Summarise README.md")).text)
    acp.close()

A ``session/request_permission`` from the agent becomes a `toolnexus.Request` of kind
``approval`` (see `ACPClient`); ``ACPOptions(permission="allow")`` auto-allows instead.

Errors::

    ToolnexusError
     └── ACPError (also a RuntimeError; ``.code`` is the JSON-RPC code, -1 at EOF)
          ├── ACPPermissionTimeoutError (the turn heard nothing for ``permission_timeout`` s)
          └── ACPSessionGone (also a ResumeError: an answer for an agent that is gone)
"""

from ._client import ACPClient, ACPOptions, load_acp
from ._wire import ACPError, ACPPermissionTimeoutError, ACPSessionGone

__all__ = [
    "ACPClient",
    "ACPError",
    "ACPOptions",
    "ACPPermissionTimeoutError",
    "ACPSessionGone",
    "load_acp",
]
