"""The official MCP Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`, mcp
2.3.0) driving an OAuth-protected MCP server at URL over its Streamable HTTP transport: the
first request's 401 starts the SDK's flow (protected-resource metadata from the challenge,
the authorization server's metadata, dynamic registration, the code flow with PKCE and the
`resource` parameter); the user's part is headless (the authorization URL is fetched and its
redirect read, without following it to the redirect URI). Then it lists the tools and calls
`whoami`, whose text it reports. Prints one JSON line with what it saw; raises on the first
broken expectation.

    python3 oauth_client.py URL --ca PEM [--mode legacy|2026]

--ca PEM trusts the certificates in that file (and only those), for the MCP server and the
authorization server alike. --mode as in http_client.py: legacy speaks 2025-11-25, 2026 lets
the SDK probe `server/discover` and must end up on 2026-07-28.
"""
import argparse
import json
import ssl
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_types import Implementation

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """The SDK's `TokenStorage`, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main(url: str, ca: str, mode: str) -> None:
    verify = ssl.create_default_context(cafile=ca)
    redirected: dict[str, str] = {}
    log: list[dict] = []

    async def redirect_handler(authorization_url: str) -> None:
        # The user's part, headless: the authorization server approves at once and
        # redirects to the redirect URI, which is read here, not fetched.
        async with httpx2.AsyncClient(verify=verify, follow_redirects=False) as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code in (302, 303, 307), (answer.status_code, answer.text)
        location = answer.headers["location"]
        assert location.startswith(REDIRECT), location
        query = parse_qs(urlparse(location).query)
        redirected.update({k: v[0] for k, v in query.items()})
        redirected["authorization_url"] = authorization_url

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=redirected["code"], state=redirected.get("state"), iss=redirected.get("iss")
        )

    async def record(response: httpx2.Response) -> None:
        request = response.request
        log.append({"http": request.method, "path": request.url.path, "status": response.status_code,
                    "authorization": "authorization" in request.headers})

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="python-sdk-oauth-interop",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider, verify=verify, timeout=httpx2.Timeout(30.0),
                              event_hooks={"response": [record]})
    transport = streamable_http_client(url, http_client=http)
    client = Client(transport, mode="legacy" if mode == "legacy" else "auto",
                    client_info=Implementation(name="python-sdk-oauth-interop", version="0.1.0"))
    with anyio.fail_after(60):
        async with http, client:
            want = "2025-11-25" if mode == "legacy" else "2026-07-28"
            assert client.protocol_version == want, (client.protocol_version, want)
            tools = await client.list_tools()
            names = sorted(t.name for t in tools.tools)
            answer = await client.call_tool("whoami", {})
            assert not answer.is_error, answer
            whoami = answer.content[0].text
            protocol = client.protocol_version

    authorization = parse_qs(urlparse(redirected["authorization_url"]).query)
    mcp = [e for e in log if e["path"] == urlparse(url).path]
    print(json.dumps({
        "ok": True,
        "protocol": protocol,
        "tools": names,
        "whoami": whoami,
        "client_id": storage.client.client_id if storage.client else None,
        "scope": storage.tokens.scope if storage.tokens else None,
        "resource": authorization.get("resource", [None])[0],
        "iss": redirected.get("iss"),
        # The MCP requests: the first refused (401) without a token, every later one with it.
        "first": mcp[0] if mcp else None,
        "later_with_token": all(e["authorization"] for e in mcp[1:]),
        "later_refused": [e for e in mcp[1:] if e["status"] in (401, 403)],
    }))


options = argparse.ArgumentParser()
options.add_argument("url")
options.add_argument("--ca", required=True, help="a PEM file of the certificates to trust")
options.add_argument("--mode", choices=["legacy", "2026"], default="legacy")
args = options.parse_args()
anyio.run(main, args.url, args.ca, args.mode)
