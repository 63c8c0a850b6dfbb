"""a2a-sdk 1.3.0's client with push notifications, against an agent that declares them
(the example agent with A2A_PUSH=1): a webhook receiver this script runs, the config sent
with the message and managed with the config methods; prints one JSON report.

    python3 push.py http://127.0.0.1:PORT
"""

import asyncio
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

received = []


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        received.append({"token": self.headers.get("X-A2A-Notification-Token"), "body": json.loads(body)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


async def main(base):
    hook = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{hook.server_address[1]}/hook"
    report = {}
    async with httpx.AsyncClient(timeout=30) as http:
        config = TaskPushNotificationConfig(url=url, token="tok-py")
        client = await create_client(base, ClientConfig(streaming=False, httpx_client=http, push_notification_config=config))
        message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="slow 2")])
        [event] = [e async for e in client.send_message(SendMessageRequest(message=message))]
        task = event.task
        for _ in range(100):
            if len(received) >= 5:
                break
            await asyncio.sleep(0.05)
        report["received"] = [
            [r["token"], next(iter(r["body"]))] for r in received
        ]
        report["last_state"] = received[-1]["body"]["statusUpdate"]["status"]["state"] if received else None
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        report["listed"] = [[c.url == url, c.token] for c in listed.configs]
        config_id = listed.configs[0].id
        got = await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id=config_id))
        report["got"] = got.token
        made = await client.create_task_push_notification_config(TaskPushNotificationConfig(task_id=task.id, url=url + "2", id="second"))
        report["made"] = made.id
        await client.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=config_id))
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        report["after_delete"] = [c.id for c in listed.configs]
        await client.close()
    hook.shutdown()
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
