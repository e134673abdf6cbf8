"""A serving process for the A2A restart tests.

    python a2a_serve_proc.py client|agent <model base url> <store url> <ledger>

Serves the refund toolkit (``client``) or a one-agent tree using it (``agent``) over A2A on
127.0.0.1:0, prints ``URL <url>`` and serves until it is killed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))

from a2a_support import refund_tool

from toolnexus import create_client, create_toolkit
from toolnexus.agents import agent
from toolnexus.serve import serve_agent


async def main(mode: str, base_url: str, store: str, ledger: Path) -> None:
    tool = refund_tool(ledger)
    lease = float(os.environ.get("A2A_TEST_LEASE_S", "300"))
    timing = {"lease_s": lease, "recover_every": min(30.0, lease / 5)}
    if mode == "agent":
        clerk = agent("clerk", does="refunds orders", uses={"tools": [tool]})
        llm = {"base_url": base_url, "model": "m", "api_key": "k"}
        served = await serve_agent(clerk, "127.0.0.1:0", llm=llm, store=store, **timing)
    else:
        tk = await create_toolkit(extra_tools=[tool], builtins=False)
        client = create_client(base_url=base_url, model="m", api_key="k", store=store)
        served = await tk.serve("127.0.0.1:0", client=client, a2a={"name": "refunds"}, **timing)
    print(f"URL {served.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])))
