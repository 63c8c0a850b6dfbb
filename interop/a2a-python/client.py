"""a2a-sdk 1.3.0's own client against an agent that follows the echo-agent contract
(shared/contracts/a2a-echo-agent.md): every method, streaming, resubscribe, cancel,
input required, returnImmediately, and the errors of the capabilities the card does not
declare. Prints one JSON report; the Rust test checks every value.

    python3 client.py http://127.0.0.1:PORT
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)


def message(text, task=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task is not None:
        m.task_id = task.id
        m.context_id = task.context_id
    return m


def state(s):
    return TaskState.Name(s)


def texts(parts):
    return [p.text for p in parts if p.HasField("text")]


def error_of(e):
    code = getattr(e, "code", None)
    return {"type": type(e).__name__, "code": code}


async def collect(stream):
    events = []
    async for event in stream:
        kind = event.WhichOneof("payload")
        if kind == "task":
            events.append(["task", state(event.task.status.state)])
        elif kind == "status_update":
            su = event.status_update
            events.append(["status", state(su.status.state)] + texts(su.status.message.parts))
        elif kind == "artifact_update":
            events.append(["artifact"] + texts(event.artifact_update.artifact.parts))
        elif kind == "message":
            events.append(["message"] + texts(event.message.parts))
    return events


async def main(base):
    report = {}
    async with httpx.AsyncClient(timeout=30) as http:
        blocking = await create_client(base, ClientConfig(streaming=False, httpx_client=http))
        streaming = await create_client(base, ClientConfig(streaming=True, httpx_client=http))
        card = blocking._card
        report["card"] = {
            "name": card.name,
            "streaming": card.capabilities.streaming,
            "skills": [s.id for s in card.skills],
            "bindings": [i.protocol_binding for i in card.supported_interfaces],
        }

        # SendMessage, answered at the end of the task.
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("echo hello")))]
        task = event.task
        report["echo"] = {"state": state(task.status.state), "artifact": texts(task.artifacts[0].parts),
                          "history": [m.parts[0].text for m in task.history]}

        # SendStreamingMessage: the task, each step, the artifact, the end.
        report["slow"] = await collect(streaming.send_message(SendMessageRequest(message=message("slow 3"))))

        # Input required, then the answer in the same task.
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("ask")))]
        asked = event.task
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("blue", asked)))]
        report["ask"] = {"first": state(asked.status.state), "question": texts(asked.status.message.parts),
                         "then": state(event.task.status.state), "artifact": texts(event.task.artifacts[0].parts),
                         "same_task": event.task.id == asked.id}

        # returnImmediately, then GetTask until it is done.
        config = SendMessageConfiguration(return_immediately=True)
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("slow 2"), configuration=config))]
        first = state(event.task.status.state)
        for _ in range(100):
            got = await blocking.get_task(GetTaskRequest(id=event.task.id))
            if got.status.state == TaskState.TASK_STATE_COMPLETED:
                break
            await asyncio.sleep(0.05)
        report["immediate"] = {"first": first, "later": state(got.status.state), "artifact": texts(got.artifacts[0].parts)}

        # wait: streamed, subscribed to from a second stream, canceled; both streams end.
        config = SendMessageConfiguration(return_immediately=True)
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("wait"), configuration=config))]
        waiting = event.task
        await asyncio.sleep(0.2)
        subscribed = asyncio.ensure_future(collect(streaming.subscribe(SubscribeToTaskRequest(id=waiting.id))))
        again = asyncio.ensure_future(collect(streaming.subscribe(SubscribeToTaskRequest(id=waiting.id))))
        await asyncio.sleep(0.3)
        canceled = await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
        report["wait"] = {"canceled": state(canceled.status.state),
                          "subscribed": await subscribed, "again": await again}
        try:
            await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
            report["cancel_again"] = "no error"
        except Exception as e:
            report["cancel_again"] = error_of(e)

        # Resubscribe to a running task: the task first, then the rest of its events.
        config = SendMessageConfiguration(return_immediately=True)
        [event] = [e async for e in blocking.send_message(SendMessageRequest(message=message("slow 3"), configuration=config))]
        report["resubscribe"] = await collect(streaming.subscribe(SubscribeToTaskRequest(id=event.task.id)))

        listed = await blocking.list_tasks(ListTasksRequest(context_id=asked.context_id))
        report["list"] = {"count": len(listed.tasks), "ids": [t.id == asked.id for t in listed.tasks]}

        try:
            await blocking.get_task(GetTaskRequest(id="no-such-task"))
            report["not_found"] = "no error"
        except Exception as e:
            report["not_found"] = error_of(e)

        errors = {}
        calls = {
            "create_push": lambda: blocking.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1:9/hook")),
            "get_push": lambda: blocking.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="x")),
            "extended_card": lambda: blocking.get_extended_agent_card(GetExtendedAgentCardRequest()),
        }
        for name, call in calls.items():
            try:
                answer = await call()
                # The SDK's client answers GetExtendedAgentCard with the public card when
                # the card declares no extended one, without asking the agent.
                errors[name] = {"answered": getattr(answer, "name", None)}
            except Exception as e:
                errors[name] = error_of(e)
        report["errors"] = errors
        await blocking.close()
        await streaming.close()
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
