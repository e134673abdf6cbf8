"""A real a2a-sdk server for the outbound tests: an AgentExecutor ("painter") that asks back.

    python a2a_peer.py <task dir>      # serves on 127.0.0.1:0, prints "URL <url>"

- a message containing ``ask`` → the task turns ``input-required`` ("Which color?");
  the follow-up on that task completes it with ``painted <answer text>``;
- ``auth`` → ``auth-required``; ``fail`` → ``failed``; ``slow`` → working until cancelled
  (`Work` records which tasks are at it, for the tests that cancel them);
- anything else completes at once with ``echo: <text>``.

Tasks are kept by the SDK's request handler in a `FileTaskStore` (one JSON file per task), so
a restarted peer still knows the task it asked about.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToJson, Parse
from starlette.applications import Starlette


class FileTaskStore(TaskStore):
    """The SDK's TaskStore seam over one JSON file per task."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    async def save(self, task: pb.Task, context: ServerCallContext) -> None:
        (self.folder / f"{task.id}.json").write_text(MessageToJson(task))

    async def get(self, task_id: str, context: ServerCallContext) -> pb.Task | None:
        path = self.folder / f"{task_id}.json"
        return Parse(path.read_text(), pb.Task()) if path.exists() else None

    async def list(
        self, params: pb.ListTasksRequest, context: ServerCallContext
    ) -> pb.ListTasksResponse:
        tasks = [Parse(p.read_text(), pb.Task()) for p in sorted(self.folder.glob("*.json"))]
        return pb.ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        (self.folder / f"{task_id}.json").unlink(missing_ok=True)


class Work:
    """The slow tasks the painter is working on: ``started`` is set when one begins, ``stopped``
    when one stops working (its execution was cancelled)."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()

    async def forever(self, task_id: str) -> None:
        self.running.add(task_id)
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.running.discard(task_id)
            self.stopped.set()


class Painter(AgentExecutor):
    def __init__(self, work: Work | None = None) -> None:
        self.work = work or Work()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        follow_up = task is not None and task.status.state in (
            pb.TASK_STATE_INPUT_REQUIRED,
            pb.TASK_STATE_AUTH_REQUIRED,
        )
        if task is None:
            task = pb.Task(
                id=context.task_id,
                context_id=context.context_id,
                status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message else [],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if follow_up:
            await updater.start_work()
            await updater.add_artifact([pb.Part(text=f"painted {text}")])
            await updater.complete()
        elif "ask" in text:
            await updater.requires_input(updater.new_agent_message([pb.Part(text="Which color?")]))
        elif "auth" in text:
            await updater.requires_auth(updater.new_agent_message([pb.Part(text="Log in first")]))
        elif "fail" in text:
            await updater.failed(updater.new_agent_message([pb.Part(text="no paint left")]))
        elif "slow" in text:
            await updater.start_work()
            await self.work.forever(task.id)
        else:
            await updater.add_artifact([pb.Part(text=f"echo: {text}")])
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def card(url: str, *, streaming: bool) -> pb.AgentCard:
    return pb.AgentCard(
        name="painter",
        description="paints things",
        version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb.AgentCapabilities(streaming=streaming),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[
            pb.AgentSkill(id="paint", name="paint", description="Paint something", tags=["art"])
        ],
    )


def app(
    url: str, store: Any = None, *, streaming: bool = False, work: Work | None = None
) -> Starlette:
    agent_card = card(url, streaming=streaming)
    handler = DefaultRequestHandler(
        agent_executor=Painter(work),
        task_store=store or InMemoryTaskStore(),
        agent_card=agent_card,
    )
    routes = create_agent_card_routes(agent_card) + create_jsonrpc_routes(
        handler, "/", enable_v0_3_compat=True
    )
    return Starlette(routes=routes)


async def main(folder: Path, port: int = 0, streaming: bool = False) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server = uvicorn.Server(
        uvicorn.Config(
            app(url, FileTaskStore(folder), streaming=streaming),
            log_level="warning",
            lifespan="off",
        )
    )
    print(f"URL {url}", flush=True)
    await server.serve(sockets=[sock])


if __name__ == "__main__":
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    asyncio.run(main(Path(sys.argv[1]), port, "stream" in sys.argv[3:]))
