"""Serving a toolkit or an agent on the network: A2A inbound (and MCP inbound, mounted here).

See docs/serving.md. Everything here needs the ``serve`` extra (starlette, uvicorn, a2a-sdk).
"""
