// @a2a-js/sdk 1.3.0's own client against an agent that follows the echo-agent contract
// (shared/contracts/a2a-echo-agent.md): every method, streaming, resubscribe, cancel,
// input required, returnImmediately, and the errors of the capabilities the card does not
// declare. Prints one JSON report; the Rust test checks every value.
//
//     node client.mjs http://127.0.0.1:PORT

import { randomUUID } from "node:crypto";
import * as sdk from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";

const base = process.argv[2];
const factory = new ClientFactory();
const client = await factory.createFromUrl(base);

const message = (text, task) => {
  const m = { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }] };
  if (task) {
    m.taskId = task.id;
    m.contextId = task.contextId;
  }
  return m;
};
const send = (text, task, configuration) =>
  sdk.SendMessageRequest.fromJSON({ message: message(text, task), configuration });
const texts = (parts) => (parts ?? []).filter((p) => p.text !== undefined).map((p) => p.text);
const taskJson = (task) => sdk.Task.toJSON(task);
const errorOf = (e) => ({ type: e?.constructor?.name ?? String(e) });

async function collect(stream) {
  const events = [];
  for await (const event of stream) {
    const json = sdk.StreamResponse.toJSON(event);
    if (json.task) events.push(["task", json.task.status.state]);
    else if (json.statusUpdate) events.push(["status", json.statusUpdate.status.state, ...texts(json.statusUpdate.status.message?.parts)]);
    else if (json.artifactUpdate) events.push(["artifact", ...texts(json.artifactUpdate.artifact.parts)]);
    else if (json.message) events.push(["message", ...texts(json.message.parts)]);
  }
  return events;
}

const report = {};
const card = client.agentCard;
report.card = {
  name: card.name,
  streaming: card.capabilities?.streaming ?? false,
  skills: card.skills.map((s) => s.id),
  bindings: card.supportedInterfaces.map((i) => i.protocolBinding),
};

// SendMessage, answered at the end of the task.
let task = taskJson(await client.sendMessage(send("echo hello")));
report.echo = { state: task.status.state, artifact: texts(task.artifacts[0].parts), history: task.history.map((m) => m.parts[0].text) };
const echoed = task;

// SendStreamingMessage: the task, each step, the artifact, the end.
report.slow = await collect(client.sendMessageStream(send("slow 3")));

// Input required, then the answer in the same task.
const asked = taskJson(await client.sendMessage(send("ask")));
const answered = taskJson(await client.sendMessage(send("blue", asked)));
report.ask = {
  first: asked.status.state, question: texts(asked.status.message.parts),
  then: answered.status.state, artifact: texts(answered.artifacts[0].parts), same_task: answered.id === asked.id,
};

// returnImmediately, then GetTask until it is done.
const started = taskJson(await client.sendMessage(send("slow 2", undefined, { returnImmediately: true })));
let got = started;
for (let i = 0; i < 100 && got.status.state !== "TASK_STATE_COMPLETED"; i++) {
  await new Promise((r) => setTimeout(r, 50));
  got = taskJson(await client.getTask(sdk.GetTaskRequest.fromJSON({ id: started.id })));
}
report.immediate = { first: started.status.state, later: got.status.state, artifact: texts(got.artifacts[0].parts) };

// wait: subscribed to from two streams, canceled; both streams end.
const waiting = taskJson(await client.sendMessage(send("wait", undefined, { returnImmediately: true })));
await new Promise((r) => setTimeout(r, 200));
const subscribe = () => collect(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: waiting.id })));
const subscribed = subscribe();
const again = subscribe();
await new Promise((r) => setTimeout(r, 300));
const canceled = taskJson(await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: waiting.id })));
report.wait = { canceled: canceled.status.state, subscribed: await subscribed, again: await again };
try {
  await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: waiting.id }));
  report.cancel_again = "no error";
} catch (e) {
  report.cancel_again = errorOf(e);
}

// Resubscribe to a running task: the task first, then the rest of its events.
const running = taskJson(await client.sendMessage(send("slow 3", undefined, { returnImmediately: true })));
report.resubscribe = await collect(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: running.id })));

const listed = sdk.ListTasksResponse.toJSON(await client.listTasks(sdk.ListTasksRequest.fromJSON({ contextId: asked.contextId })));
report.list = { count: listed.tasks.length, ids: listed.tasks.map((t) => t.id === asked.id) };

try {
  await client.getTask(sdk.GetTaskRequest.fromJSON({ id: "no-such-task" }));
  report.not_found = "no error";
} catch (e) {
  report.not_found = errorOf(e);
}

// The capabilities the card does not declare: the SDK's client refuses the push methods
// itself, and answers the public card for the extended one; the transport, asked
// directly, gets the agent's errors.
const errors = {};
const versioned = { serviceParameters: { "A2A-Version": "1.0" } };
const calls = {
  delete_push: () => client.deleteTaskPushNotificationConfig(
    sdk.DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: echoed.id, id: "x" })),
  create_push_transport: () => client.transport.createTaskPushNotificationConfig(
    sdk.TaskPushNotificationConfig.fromJSON({ taskId: echoed.id, url: "http://127.0.0.1:9/hook" }), versioned),
  extended_card_transport: () => client.transport.getExtendedAgentCard(sdk.GetExtendedAgentCardRequest.fromJSON({}), versioned),
  unversioned_transport: () => client.transport.getTask(sdk.GetTaskRequest.fromJSON({ id: echoed.id })),
};
for (const [name, call] of Object.entries(calls)) {
  try {
    await call();
    errors[name] = "no error";
  } catch (e) {
    errors[name] = errorOf(e);
  }
}
report.errors = errors;
console.log(JSON.stringify(report));
