"""The echo-agent contract (shared/contracts/a2a-echo-agent.md) on a2a-sdk 1.3.0's own
server: its DefaultRequestHandlerV2, in-memory task store, JSON-RPC and agent card routes
on Starlette, served by uvicorn on 127.0.0.1:$PORT. For sansrpc-a2a's client to drive.

    PORT=0 python3 server.py      # prints "listening on http://127.0.0.1:<port>"

STEP_MS sets the time between `slow`'s steps (default 100, the contract's; loadgen sets 0).
"""

import asyncio
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)


STEP = int(os.environ.get("STEP_MS", "100")) / 1000


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await queue.enqueue_event(task)
        updater = TaskUpdater(queue, task.id, task.context_id)
        say = lambda t: new_text_message(t, context_id=task.context_id, task_id=task.id, role=Role.ROLE_AGENT)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(text)])
            await updater.complete()
            return
        word, _, rest = text.partition(" ")
        rest = rest.strip()
        if word == "echo":
            await updater.add_artifact([new_text_part(rest)])
            await updater.complete()
        elif word == "slow" and rest.isdigit():
            for i in range(1, int(rest) + 1):
                await asyncio.sleep(STEP)
                await updater.update_status(TaskState.TASK_STATE_WORKING, say(f"step {i}"))
            await updater.add_artifact([new_text_part("done")])
            await updater.complete()
        elif text == "ask":
            await updater.requires_input(say("what?"))
        elif text == "wait":
            await updater.start_work()
            await asyncio.Event().wait()
        else:
            await updater.reject(say(f"unknown command {text[:64]!r}"))

    async def cancel(self, context: RequestContext, queue: EventQueue) -> None:
        task = context.current_task
        await TaskUpdater(queue, task.id, task.context_id).cancel()


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(os.environ.get("PORT", "0"))))
    sock.listen(128)
    port = sock.getsockname()[1]
    card = AgentCard(
        name="echo-agent",
        description="The echo-agent contract on a2a-sdk's server.",
        version="1.3.0",
        supported_interfaces=[
            AgentInterface(url=f"http://127.0.0.1:{port}/a2a", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echo, slow, ask, wait", tags=["echo"])],
    )
    handler = DefaultRequestHandlerV2(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/a2a")
    app = Starlette(routes=routes)
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
