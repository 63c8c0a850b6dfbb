// The A2A 1.0 JSON shapes as @a2a-js/sdk 1.3.0 writes and reads them, for sansrpc-a2a's
// tests.
//
// `node shapes.mjs emit` prints, as one JSON object, a sample of every A2A message in the
// shape the SDK writes (each read with the SDK's `fromJSON` and written with its `toJSON`,
// as its server and client do), and the JSON-RPC error object of every A2A error as its
// server writes it (`toJsonRpcError`).
//
// `node shapes.mjs check FILE` reads such an object from sansrpc-a2a: each sample is read
// with the SDK's `fromJSON` and written back with `toJSON` (a member the SDK does not know
// is dropped on the way, so a misnamed one shows); each error object goes through the SDK
// client's `fromJsonRpcErrorResponse`, which says which error it raises.

import { readFileSync } from "node:fs";
import * as sdk from "@a2a-js/sdk";
import * as errors from "@a2a-js/sdk/errors";

const parts = [
  { text: 'hello \u2713 "quoted"', metadata: { k: [1, "x", null, true] }, filename: "a.txt", mediaType: "text/plain" },
  { raw: Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString("base64"), filename: "all.bin", mediaType: "application/octet-stream" },
  { url: "https://example.com/f.png", mediaType: "image/png" },
  { data: { rows: [[1, "a"], [2.5, null]], ok: false } },
  { data: "just a string" },
];

const userMessage = {
  messageId: "m-1", contextId: "ctx-1", taskId: "task-1", role: "ROLE_USER", parts,
  metadata: { trace: "abc", n: 3 }, extensions: ["https://example.com/ext/a"],
  referenceTaskIds: ["task-0", "task-00"],
};
const agentMessage = {
  messageId: "m-2", contextId: "ctx-1", taskId: "task-1", role: "ROLE_AGENT", parts: [{ text: "what?" }],
};
const artifact = {
  artifactId: "art-1", name: "report", description: "the report", parts: parts.slice(0, 3),
  metadata: { pages: 2 }, extensions: ["https://example.com/ext/b"],
};
const status = { state: "TASK_STATE_INPUT_REQUIRED", message: agentMessage, timestamp: "2024-03-15T10:15:00.123Z" };
const task = {
  id: "task-1", contextId: "ctx-1", status,
  artifacts: [artifact, { artifactId: "art-2", parts: [{ text: "x" }] }],
  history: [userMessage, agentMessage], metadata: { owner: "me" },
};
const statusUpdate = {
  taskId: "task-1", contextId: "ctx-1",
  status: { state: "TASK_STATE_WORKING", timestamp: "2024-03-15T10:15:00.005Z" }, metadata: { step: 1 },
};
const artifactUpdate = {
  taskId: "task-1", contextId: "ctx-1", artifact, append: true, lastChunk: true, metadata: { chunk: 3 },
};
const pushConfig = {
  tenant: "t1", id: "cfg-1", taskId: "task-1", url: "https://client.example.com/hook", token: "tok",
  authentication: { scheme: "Bearer", credentials: "secret" },
};
const requirement = { schemes: { oauth: { list: ["read", "write"] }, mtls: {} } };
const card = {
  name: "echo-agent", description: "Echoes.",
  supportedInterfaces: [
    { url: "http://127.0.0.1:3000/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: "grpc.example.com:443", protocolBinding: "GRPC", tenant: "t1", protocolVersion: "1.0" },
  ],
  provider: { url: "https://example.com", organization: "Example" },
  version: "1.2.3", documentationUrl: "https://example.com/docs",
  capabilities: {
    streaming: true, pushNotifications: false, extendedAgentCard: true,
    extensions: [{ uri: "https://example.com/ext/a", description: "ext", required: true, params: { level: 2 } }],
  },
  securitySchemes: {
    key: { apiKeySecurityScheme: { description: "an API key", location: "header", name: "X-API-Key" } },
    bearer: { httpAuthSecurityScheme: { description: "a JWT", scheme: "Bearer", bearerFormat: "JWT" } },
    oauth: { oauth2SecurityScheme: { description: "OAuth", oauth2MetadataUrl: "https://auth/m", flows: {
      authorizationCode: { authorizationUrl: "https://auth/a", tokenUrl: "https://auth/t", refreshUrl: "https://auth/r",
                           scopes: { read: "Read", write: "Write" }, pkceRequired: true } } } },
    cc: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: "https://auth/t", refreshUrl: "https://auth/r", scopes: { read: "Read" } } } } },
    implicit: { oauth2SecurityScheme: { flows: { implicit: { authorizationUrl: "https://auth/a", refreshUrl: "https://auth/r", scopes: { a: "A" } } } } },
    password: { oauth2SecurityScheme: { flows: { password: { tokenUrl: "https://auth/t", refreshUrl: "https://auth/r", scopes: { a: "A" } } } } },
    device: { oauth2SecurityScheme: { flows: { deviceCode: { deviceAuthorizationUrl: "https://auth/d", tokenUrl: "https://auth/t",
                                                             refreshUrl: "https://auth/r", scopes: { a: "A" } } } } },
    oidc: { openIdConnectSecurityScheme: { description: "OIDC", openIdConnectUrl: "https://auth/.well-known/openid-configuration" } },
    mtls: { mtlsSecurityScheme: { description: "certs" } },
  },
  securityRequirements: [requirement, { schemes: { bearer: {} } }],
  defaultInputModes: ["text/plain", "application/json"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "Echo", description: "Echoes text.", tags: ["echo", "test"], examples: ["echo hi"],
             inputModes: ["text/plain"], outputModes: ["text/plain"], securityRequirements: [requirement] }],
  signatures: [{ protected: "eyJhbGciOiJFUzI1NiJ9", signature: "c2ln", header: { kid: "key-1" } }],
  iconUrl: "https://example.com/icon.png",
};

const samples = [
  ["message", "Message", userMessage],
  ["agent-message", "Message", agentMessage],
  ["artifact", "Artifact", artifact],
  ["status", "TaskStatus", status],
  ["task", "Task", task],
  ["status-update", "TaskStatusUpdateEvent", statusUpdate],
  ["artifact-update", "TaskArtifactUpdateEvent", artifactUpdate],
  ["stream-task", "StreamResponse", { task }],
  ["stream-message", "StreamResponse", { message: agentMessage }],
  ["stream-status", "StreamResponse", { statusUpdate }],
  ["stream-artifact", "StreamResponse", { artifactUpdate }],
  ["send-response-task", "SendMessageResponse", { task }],
  ["send-response-message", "SendMessageResponse", { message: agentMessage }],
  ["card", "AgentCard", card],
  ["send", "SendMessageRequest", {
    tenant: "t1", message: userMessage, metadata: { client: "test" },
    configuration: { acceptedOutputModes: ["text/plain"], taskPushNotificationConfig: pushConfig,
                     historyLength: 0, returnImmediately: true },
  }],
  ["get-task", "GetTaskRequest", { tenant: "t1", id: "task-1", historyLength: 5 }],
  ["list-tasks", "ListTasksRequest", {
    tenant: "t1", contextId: "ctx-1", status: "TASK_STATE_WORKING", pageSize: 10, pageToken: "cursor",
    historyLength: 0, statusTimestampAfter: "2024-03-15T10:15:00.000Z", includeArtifacts: false,
  }],
  ["list-tasks-response", "ListTasksResponse", { tasks: [task], nextPageToken: "next", pageSize: 1, totalSize: 7 }],
  ["cancel", "CancelTaskRequest", { tenant: "t1", id: "task-1", metadata: { why: "done" } }],
  ["subscribe", "SubscribeToTaskRequest", { tenant: "t1", id: "task-1" }],
  ["push-config", "TaskPushNotificationConfig", pushConfig],
  ["get-push-config", "GetTaskPushNotificationConfigRequest", { tenant: "t1", taskId: "task-1", id: "cfg-1" }],
  ["delete-push-config", "DeleteTaskPushNotificationConfigRequest", { tenant: "t1", taskId: "task-1", id: "cfg-1" }],
  ["list-push-configs", "ListTaskPushNotificationConfigsRequest", { tenant: "t1", taskId: "task-1", pageSize: 5, pageToken: "p" }],
  ["list-push-configs-response", "ListTaskPushNotificationConfigsResponse", { configs: [pushConfig], nextPageToken: "n" }],
  ["extended-card-request", "GetExtendedAgentCardRequest", { tenant: "t1" }],
  ["security-requirement", "SecurityRequirement", requirement],
];

const ERRORS = [
  "TaskNotFoundError", "TaskNotCancelableError", "PushNotificationNotSupportedError",
  "UnsupportedOperationError", "ContentTypeNotSupportedError", "InvalidAgentResponseError",
  "ExtendedAgentCardNotConfiguredError", "ExtensionSupportRequiredError", "VersionNotSupportedError",
  "RequestMalformedError",
];

/** What the SDK makes of `json` as a `type`: read, then written. */
function through(type, json) {
  const codec = sdk[type];
  return codec.toJSON(codec.fromJSON(json));
}

function emit() {
  const out = { samples: [], errors: [] };
  for (const [name, type, json] of samples) {
    out.samples.push({ name, type, json: through(type, json) });
  }
  for (const name of ERRORS) {
    const error = new errors[name]({ message: "why", metadata: { taskId: "t-1" } });
    out.errors.push({ class: name, error: errors.toJsonRpcError(error) });
  }
  process.stdout.write(JSON.stringify(out));
}

function check(path) {
  const given = JSON.parse(readFileSync(path, "utf8"));
  const out = { samples: [], errors: [] };
  for (const sample of given.samples) {
    try {
      out.samples.push({ name: sample.name, ok: true, json: through(sample.type, sample.json) });
    } catch (e) {
      out.samples.push({ name: sample.name, ok: false, error: String(e) });
    }
  }
  for (const entry of given.errors) {
    const raised = errors.fromJsonRpcErrorResponse({ jsonrpc: "2.0", id: 1, error: entry.error });
    out.errors.push({ kind: entry.kind, class: raised.name, message: raised.message, data: raised.data ?? null });
  }
  process.stdout.write(JSON.stringify(out));
}

if (process.argv[2] === "emit") {
  emit();
} else {
  check(process.argv[3]);
}
