"""The A2A 1.0 JSON shapes as a2a-sdk 1.3.0 writes and reads them, for sansrpc-a2a's tests.

`python3 shapes.py emit` prints, as one JSON object, a sample of every A2A message built
with the SDK's own types (`a2a.types.a2a_pb2`) and written with `json_format.MessageToDict`
(what the SDK puts on the wire), and the JSON-RPC error object of every A2A error as the
SDK's server writes it (`build_error_response`).

`python3 shapes.py check FILE` reads such an object from sansrpc-a2a: for each sample,
`json_format.ParseDict` reads it strictly (an unknown member or a wrong type is a failure),
says whether it equals the SDK's own sample of the same name (when there is one), and
writes it back; for each error object, the SDK's client (`JsonRpcTransport`) says which
exception it raises and with what metadata.
"""

import json
import sys

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from a2a.types import a2a_pb2 as pb
from a2a.utils import errors
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.client.transports.jsonrpc import JsonRpcTransport


def struct(d):
    s = struct_pb2.Struct()
    s.update(d)
    return s


def value(v):
    return json_format.ParseDict(v, struct_pb2.Value())


def ts(seconds, nanos):
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def parts():
    return [
        pb.Part(text="hello \u2713 \"quoted\"", metadata=struct({"k": [1, "x", None, True]}),
                filename="a.txt", media_type="text/plain"),
        pb.Part(raw=bytes(range(256)), filename="all.bin", media_type="application/octet-stream"),
        pb.Part(url="https://example.com/f.png", media_type="image/png"),
        pb.Part(data=value({"rows": [[1, "a"], [2.5, None]], "ok": False})),
        pb.Part(data=value(None)),
        pb.Part(data=value("just a string")),
    ]


def user_message():
    return pb.Message(
        message_id="m-1", context_id="ctx-1", task_id="task-1", role=pb.ROLE_USER,
        parts=parts(), metadata=struct({"trace": "abc", "n": 3}),
        extensions=["https://example.com/ext/a"], reference_task_ids=["task-0", "task-00"],
    )


def agent_message():
    return pb.Message(message_id="m-2", context_id="ctx-1", task_id="task-1",
                      role=pb.ROLE_AGENT, parts=[pb.Part(text="what?")])


def artifact():
    return pb.Artifact(artifact_id="art-1", name="report", description="the report",
                       parts=parts()[:3], metadata=struct({"pages": 2}),
                       extensions=["https://example.com/ext/b"])


def status():
    return pb.TaskStatus(state=pb.TASK_STATE_INPUT_REQUIRED, message=agent_message(),
                         timestamp=ts(1710497700, 123456789))


def task():
    return pb.Task(id="task-1", context_id="ctx-1", status=status(),
                   artifacts=[artifact(), pb.Artifact(artifact_id="art-2", parts=[pb.Part(text="x")])],
                   history=[user_message(), agent_message()], metadata=struct({"owner": "me"}))


def status_update():
    return pb.TaskStatusUpdateEvent(
        task_id="task-1", context_id="ctx-1",
        status=pb.TaskStatus(state=pb.TASK_STATE_WORKING, timestamp=ts(1710497700, 5000000)),
        metadata=struct({"step": 1}))


def artifact_update():
    return pb.TaskArtifactUpdateEvent(task_id="task-1", context_id="ctx-1", artifact=artifact(),
                                      append=True, last_chunk=True, metadata=struct({"chunk": 3}))


def push_config():
    return pb.TaskPushNotificationConfig(
        tenant="t1", id="cfg-1", task_id="task-1", url="https://client.example.com/hook",
        token="tok", authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="secret"))


def flows(kind):
    if kind == "authorization_code":
        return pb.OAuthFlows(authorization_code=pb.AuthorizationCodeOAuthFlow(
            authorization_url="https://auth/a", token_url="https://auth/t", refresh_url="https://auth/r",
            scopes={"read": "Read", "write": "Write"}, pkce_required=True))
    if kind == "client_credentials":
        return pb.OAuthFlows(client_credentials=pb.ClientCredentialsOAuthFlow(
            token_url="https://auth/t", refresh_url="https://auth/r", scopes={"read": "Read"}))
    if kind == "implicit":
        return pb.OAuthFlows(implicit=pb.ImplicitOAuthFlow(
            authorization_url="https://auth/a", refresh_url="https://auth/r", scopes={"a": "A"}))
    if kind == "password":
        return pb.OAuthFlows(password=pb.PasswordOAuthFlow(
            token_url="https://auth/t", refresh_url="https://auth/r", scopes={"a": "A"}))
    return pb.OAuthFlows(device_code=pb.DeviceCodeOAuthFlow(
        device_authorization_url="https://auth/d", token_url="https://auth/t",
        refresh_url="https://auth/r", scopes={"a": "A"}))


def requirement():
    return pb.SecurityRequirement(schemes={"oauth": pb.StringList(list=["read", "write"]),
                                           "mtls": pb.StringList()})


def card():
    schemes = {
        "key": pb.SecurityScheme(api_key_security_scheme=pb.APIKeySecurityScheme(
            description="an API key", location="header", name="X-API-Key")),
        "bearer": pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
            description="a JWT", scheme="Bearer", bearer_format="JWT")),
        "oauth": pb.SecurityScheme(oauth2_security_scheme=pb.OAuth2SecurityScheme(
            description="OAuth", flows=flows("authorization_code"),
            oauth2_metadata_url="https://auth/.well-known/oauth-authorization-server")),
        "oidc": pb.SecurityScheme(open_id_connect_security_scheme=pb.OpenIdConnectSecurityScheme(
            description="OIDC", open_id_connect_url="https://auth/.well-known/openid-configuration")),
        "mtls": pb.SecurityScheme(mtls_security_scheme=pb.MutualTlsSecurityScheme(description="certs")),
    }
    for kind in ["client_credentials", "implicit", "password", "device_code"]:
        schemes["oauth-" + kind] = pb.SecurityScheme(
            oauth2_security_scheme=pb.OAuth2SecurityScheme(flows=flows(kind)))
    return pb.AgentCard(
        name="echo-agent", description="Echoes.",
        supported_interfaces=[
            pb.AgentInterface(url="http://127.0.0.1:3000/a2a", protocol_binding="JSONRPC",
                              protocol_version="1.0"),
            pb.AgentInterface(url="grpc.example.com:443", protocol_binding="GRPC", tenant="t1",
                              protocol_version="1.0"),
        ],
        provider=pb.AgentProvider(url="https://example.com", organization="Example"),
        version="1.2.3", documentation_url="https://example.com/docs",
        capabilities=pb.AgentCapabilities(
            streaming=True, push_notifications=False, extended_agent_card=True,
            extensions=[pb.AgentExtension(uri="https://example.com/ext/a", description="ext",
                                          required=True, params=struct({"level": 2}))]),
        security_schemes=schemes,
        security_requirements=[requirement(), pb.SecurityRequirement(
            schemes={"bearer": pb.StringList()})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="echo", name="Echo", description="Echoes text.",
                              tags=["echo", "test"], examples=["echo hi"],
                              input_modes=["text/plain"], output_modes=["text/plain"],
                              security_requirements=[requirement()])],
        signatures=[pb.AgentCardSignature(protected="eyJhbGciOiJFUzI1NiJ9", signature="c2ln",
                                          header=struct({"kid": "key-1"}))],
        icon_url="https://example.com/icon.png",
    )


def minimal_card():
    return pb.AgentCard(name="m", description="d", version="1",
                        supported_interfaces=[pb.AgentInterface(
                            url="http://h/a2a", protocol_binding="JSONRPC", protocol_version="1.0")],
                        capabilities=pb.AgentCapabilities(),
                        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                        skills=[pb.AgentSkill(id="s", name="S", description="D", tags=["t"])])


def samples():
    """(name, proto type name, message) for every type, every field set somewhere."""
    send = pb.SendMessageRequest(
        tenant="t1", message=user_message(),
        configuration=pb.SendMessageConfiguration(
            accepted_output_modes=["text/plain"], task_push_notification_config=push_config(),
            history_length=0, return_immediately=True),
        metadata=struct({"client": "test"}))
    out = [
        ("message", "Message", user_message()),
        ("agent-message", "Message", agent_message()),
        ("artifact", "Artifact", artifact()),
        ("status", "TaskStatus", status()),
        ("task", "Task", task()),
        ("status-update", "TaskStatusUpdateEvent", status_update()),
        ("artifact-update", "TaskArtifactUpdateEvent", artifact_update()),
        ("stream-task", "StreamResponse", pb.StreamResponse(task=task())),
        ("stream-message", "StreamResponse", pb.StreamResponse(message=agent_message())),
        ("stream-status", "StreamResponse", pb.StreamResponse(status_update=status_update())),
        ("stream-artifact", "StreamResponse", pb.StreamResponse(artifact_update=artifact_update())),
        ("send-response-task", "SendMessageResponse", pb.SendMessageResponse(task=task())),
        ("send-response-message", "SendMessageResponse", pb.SendMessageResponse(message=agent_message())),
        ("card", "AgentCard", card()),
        ("minimal-card", "AgentCard", minimal_card()),
        ("send", "SendMessageRequest", send),
        ("send-minimal", "SendMessageRequest", pb.SendMessageRequest(message=pb.Message(
            message_id="m", role=pb.ROLE_USER, parts=[pb.Part(text="echo hi")]))),
        ("get-task", "GetTaskRequest", pb.GetTaskRequest(tenant="t1", id="task-1", history_length=5)),
        ("list-tasks", "ListTasksRequest", pb.ListTasksRequest(
            tenant="t1", context_id="ctx-1", status=pb.TASK_STATE_WORKING, page_size=10,
            page_token="cursor", history_length=0, status_timestamp_after=ts(1710497700, 0),
            include_artifacts=False)),
        ("list-tasks-empty", "ListTasksRequest", pb.ListTasksRequest()),
        ("list-tasks-response", "ListTasksResponse", pb.ListTasksResponse(
            tasks=[task()], next_page_token="next", page_size=1, total_size=7)),
        ("list-tasks-last-page", "ListTasksResponse", pb.ListTasksResponse(
            tasks=[], next_page_token="", page_size=50, total_size=0)),
        ("cancel", "CancelTaskRequest", pb.CancelTaskRequest(tenant="t1", id="task-1",
                                                            metadata=struct({"why": "done"}))),
        ("subscribe", "SubscribeToTaskRequest", pb.SubscribeToTaskRequest(tenant="t1", id="task-1")),
        ("push-config", "TaskPushNotificationConfig", push_config()),
        ("get-push-config", "GetTaskPushNotificationConfigRequest",
         pb.GetTaskPushNotificationConfigRequest(tenant="t1", task_id="task-1", id="cfg-1")),
        ("delete-push-config", "DeleteTaskPushNotificationConfigRequest",
         pb.DeleteTaskPushNotificationConfigRequest(tenant="t1", task_id="task-1", id="cfg-1")),
        ("list-push-configs", "ListTaskPushNotificationConfigsRequest",
         pb.ListTaskPushNotificationConfigsRequest(tenant="t1", task_id="task-1", page_size=5,
                                                   page_token="p")),
        ("list-push-configs-response", "ListTaskPushNotificationConfigsResponse",
         pb.ListTaskPushNotificationConfigsResponse(configs=[push_config()], next_page_token="n")),
        ("extended-card-request", "GetExtendedAgentCardRequest",
         pb.GetExtendedAgentCardRequest(tenant="t1")),
        ("security-requirement", "SecurityRequirement", requirement()),
    ]
    return out


ERRORS = [
    errors.TaskNotFoundError, errors.TaskNotCancelableError,
    errors.PushNotificationNotSupportedError, errors.UnsupportedOperationError,
    errors.ContentTypeNotSupportedError, errors.InvalidAgentResponseError,
    errors.ExtendedAgentCardNotConfiguredError, errors.ExtensionSupportRequiredError,
    errors.VersionNotSupportedError, errors.InvalidParamsError, errors.InvalidRequestError,
    errors.MethodNotFoundError, errors.InternalError,
]


LAST_PAGE = pb.ListTasksResponse(tasks=[], next_page_token="", page_size=50, total_size=0)


def emit():
    out = {"samples": [], "errors": []}
    for name, type_name, message in samples():
        out["samples"].append({"name": name, "type": type_name,
                               "json": json_format.MessageToDict(message)})
    # The SDK's server writes ListTasks' result with every field (nextPageToken "" included).
    out["samples"].append({"name": "list-tasks-server-form", "type": "ListTasksResponse",
                           "json": json_format.MessageToDict(
                               LAST_PAGE, always_print_fields_with_no_presence=True)})
    for cls in ERRORS:
        error = build_error_response(1, cls(message="why", data={"taskId": "t-1"}))["error"]
        out["errors"].append({"class": cls.__name__, "error": error})
    json.dump(out, sys.stdout, ensure_ascii=False)


def check(path):
    with open(path, encoding="utf-8") as f:
        given = json.load(f)
    own = {name: message for name, _, message in samples()}
    own["list-tasks-server-form"] = LAST_PAGE
    out = {"samples": [], "errors": []}
    for sample in given["samples"]:
        result = {"name": sample["name"]}
        try:
            message = json_format.ParseDict(sample["json"], getattr(pb, sample["type"])())
            result["json"] = json_format.MessageToDict(message)
            if sample["name"] in own:
                result["equal"] = message == own[sample["name"]]
            result["ok"] = True
        except Exception as e:  # the failure is the result
            result["ok"] = False
            result["error"] = f"{type(e).__name__}: {e}"
        out["samples"].append(result)
    for entry in given["errors"]:
        raised = JsonRpcTransport._create_jsonrpc_error(None, entry["error"])
        out["errors"].append({"kind": entry["kind"], "class": type(raised).__name__,
                              "message": getattr(raised, "message", str(raised)),
                              "data": getattr(raised, "data", None)})
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    if sys.argv[1] == "emit":
        emit()
    else:
        check(sys.argv[2])
