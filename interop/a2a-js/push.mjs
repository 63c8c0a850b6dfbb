// @a2a-js/sdk 1.3.0's client with push notifications, against an agent that declares them
// (the example agent with A2A_PUSH=1): a webhook receiver this script runs, the config sent
// with the message and managed with the config methods; prints one JSON report.
//
//     node push.mjs http://127.0.0.1:PORT

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import * as sdk from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";

const received = [];
const hook = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    received.push([req.headers["x-a2a-notification-token"], Object.keys(JSON.parse(body))[0], JSON.parse(body)]);
    res.writeHead(200).end();
  });
});
await new Promise((r) => hook.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${hook.address().port}/hook`;

const client = await new ClientFactory().createFromUrl(process.argv[2]);
const request = sdk.SendMessageRequest.fromJSON({
  message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: "slow 2" }] },
  configuration: { taskPushNotificationConfig: { url, token: "tok-js" } },
});
const task = sdk.Task.toJSON(await client.sendMessage(request));
for (let i = 0; i < 100 && received.length < 5; i++) await new Promise((r) => setTimeout(r, 50));
const report = {
  received: received.map(([token, kind]) => [token, kind]),
  last_state: received.at(-1)?.[2]?.statusUpdate?.status?.state ?? null,
};
const list = async () => sdk.ListTaskPushNotificationConfigsResponse.toJSON(
  await client.listTaskPushNotificationConfig(sdk.ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id })));
const listed = await list();
report.listed = listed.configs.map((c) => [c.url === url, c.token]);
const id = listed.configs[0].id;
const got = sdk.TaskPushNotificationConfig.toJSON(await client.getTaskPushNotificationConfig(
  sdk.GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id })));
report.got = got.token;
const made = sdk.TaskPushNotificationConfig.toJSON(await client.createTaskPushNotificationConfig(
  sdk.TaskPushNotificationConfig.fromJSON({ taskId: task.id, url: `${url}2`, id: "second" })));
report.made = made.id;
await client.deleteTaskPushNotificationConfig(sdk.DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id }));
report.after_delete = ((await list()).configs ?? []).map((c) => c.id);
hook.close();
console.log(JSON.stringify(report));
