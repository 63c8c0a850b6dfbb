// The echo-agent contract (shared/contracts/a2a-echo-agent.md) on @a2a-js/sdk 1.3.0's own
// server: its DefaultRequestHandler, in-memory task store, and its express handlers for
// the card and JSON-RPC, on 127.0.0.1:$PORT. For sansrpc-a2a's client to drive.
//
//     PORT=0 node server.mjs      # prints "listening on http://127.0.0.1:<port>"

import { randomUUID } from "node:crypto";
import express from "express";
import * as sdk from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The time between `slow`'s steps: the contract's 100 ms unless STEP_MS says (loadgen: 0).
const STEP_MS = Number(process.env.STEP_MS ?? 100);
const canceled = new Set();

class Echo {
  async execute(context, bus) {
    const ids = { taskId: context.taskId, contextId: context.contextId };
    const user = sdk.Message.toJSON(context.userMessage);
    const text = (user.parts.find((p) => p.text !== undefined)?.text ?? "").trim();
    const task = context.task ?? sdk.Task.fromJSON({
      id: ids.taskId, contextId: ids.contextId, status: { state: "TASK_STATE_SUBMITTED" }, history: [user],
    });
    bus.publish(AgentEvent.task(task));
    const say = (t) => ({ messageId: randomUUID(), role: "ROLE_AGENT", parts: [{ text: t }], ...ids });
    const status = (state, message) => bus.publish(AgentEvent.statusUpdate(sdk.TaskStatusUpdateEvent.fromJSON({
      ...ids, status: { state, message, timestamp: new Date().toISOString() },
    })));
    const artifact = (t) => bus.publish(AgentEvent.artifactUpdate(sdk.TaskArtifactUpdateEvent.fromJSON({
      ...ids, artifact: { artifactId: randomUUID(), parts: [{ text: t }] },
    })));
    const [word, ...rest] = text.split(/\s+/);
    const arg = text.slice(word.length).trim();
    if (sdk.Task.toJSON(task).status.state === "TASK_STATE_INPUT_REQUIRED") {
      artifact(text);
      status("TASK_STATE_COMPLETED");
    } else if (word === "echo") {
      artifact(arg);
      status("TASK_STATE_COMPLETED");
    } else if (word === "slow" && /^\d+$/.test(arg)) {
      for (let i = 1; i <= Number(arg); i++) {
        await sleep(STEP_MS);
        status("TASK_STATE_WORKING", say(`step ${i}`));
      }
      artifact("done");
      status("TASK_STATE_COMPLETED");
    } else if (text === "ask") {
      status("TASK_STATE_INPUT_REQUIRED", say("what?"));
    } else if (text === "wait" && rest.length === 0) {
      status("TASK_STATE_WORKING");
      while (!canceled.has(ids.taskId)) await sleep(20);
    } else {
      status("TASK_STATE_REJECTED", say(`unknown command ${JSON.stringify(text.slice(0, 64))}`));
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    canceled.add(taskId);
    bus.publish(AgentEvent.statusUpdate(sdk.TaskStatusUpdateEvent.fromJSON({
      taskId, contextId: "", status: { state: "TASK_STATE_CANCELED", timestamp: new Date().toISOString() },
    })));
    bus.finished();
  }
}

const app = express();
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const port = server.address().port;
  const card = sdk.AgentCard.fromJSON({
    name: "echo-agent",
    description: "The echo-agent contract on @a2a-js/sdk's server.",
    version: "1.3.0",
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: true },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "echo, slow, ask, wait", tags: ["echo"] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Echo());
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`listening on http://127.0.0.1:${port}`);
});
