"""An OAuth 2.1 authorization server and a protected resource built from the official MCP
Python SDK's own `mcp.server.auth` (mcp 2.3.0, pinned in requirements.txt), for
sansrpc-oauth's end-to-end test (oauth/tests/python_as.rs):

- the SDK's authorization-server routes (`create_auth_routes`): metadata at
  /.well-known/oauth-authorization-server, /authorize, /token (authorization code with PKCE,
  refresh; client_secret_basic, client_secret_post), /register (dynamic registration) and
  /revoke, over an in-memory implementation of the SDK's `OAuthAuthorizationServerProvider`
  that approves every authorization at once (redirects with the code, `state` and the RFC 9207
  `iss`);
- the SDK's protected-resource metadata (`create_protected_resource_routes`) for /mcp, and
  /mcp itself behind the SDK's `BearerAuthBackend` (tokens must be issued for this resource,
  RFC 8707) and `RequireAuthMiddleware` (scope `mcp:read`; a 401 names the metadata URL):
  it answers what the token was issued for;
- /stats: how many registrations, authorizations, code exchanges and refreshes were made.

With --jwt-secret the access tokens are JWTs (HS256, PyJWT) naming the issuer (`iss`), the
client (`sub`, `client_id`), the resource they were asked for (`aud`, RFC 8707), the scope
and the expiry: what a resource server elsewhere (the sansrpc MCP server of
mcp/tests/mcp_oauth.rs) checks with the shared secret, without asking this server.

    python3 oauth_server.py PORT --tls CERT KEY [--access-ttl SECONDS] [--jwt-secret SECRET]

PORT 0 picks a free port; the server prints `listening on PORT` once it accepts connections.
"""
import argparse
import secrets
import socket
import sys
import time

import anyio
import jwt
import uvicorn
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route, request_response

from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import (
    build_resource_metadata_url,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

options = argparse.ArgumentParser()
options.add_argument("port", type=int)
options.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), required=True)
options.add_argument("--access-ttl", type=int, default=3600)
options.add_argument("--jwt-secret", help="issue access tokens as HS256 JWTs signed with this secret")
args = options.parse_args()

# URLs without a trailing slash on an empty path: the issuer is compared as a string.
URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, codes and tokens in dictionaries; every authorization approved at once."""

    def __init__(self, issuer: str, access_ttl: int) -> None:
        self.issuer = issuer
        self.access_ttl = access_ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"registrations": 0, "authorizations": 0, "code_exchanges": 0, "refreshes": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.stats["authorizations"] += 1
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.issuer)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str):
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        expires_at = int(time.time()) + self.access_ttl
        if args.jwt_secret:
            claims = {
                "iss": self.issuer,
                "sub": client_id,
                "client_id": client_id,
                "scope": " ".join(scopes),
                "iat": int(time.time()),
                "exp": expires_at,
                "jti": secrets.token_urlsafe(16),
            }
            if resource:
                claims["aud"] = resource
            access = jwt.encode(claims, args.jwt_secret, algorithm="HS256")
        else:
            access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires_at,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.access_ttl,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.stats["code_exchanges"] += 1
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.stats["refreshes"] += 1
        del self.refresh[refresh_token.token]  # rotated
        return self._issue(client.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        # Only the token named (the test revokes an access token and expects the refresh
        # token to still work).
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    issuer = URL.validate_python(f"https://127.0.0.1:{port}")
    resource = URL.validate_python(f"https://127.0.0.1:{port}/mcp")
    provider = Provider(str(issuer), args.access_ttl)

    async def whoami(request):
        token = request.user.access_token
        return JSONResponse(
            {"client_id": token.client_id, "scopes": token.scopes, "resource": token.resource}
        )

    async def stats(request):
        return JSONResponse(provider.stats)

    routes = create_auth_routes(
        provider,
        issuer_url=issuer,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp:read", "mcp:write", "offline_access"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    routes += create_protected_resource_routes(
        resource_url=resource,
        authorization_servers=[issuer],
        scopes_supported=["mcp:read"],
        resource_name="sansrpc-oauth end-to-end",
    )
    protected = RequireAuthMiddleware(
        request_response(whoami), ["mcp:read"], build_resource_metadata_url(resource)
    )
    routes.append(Route("/mcp", endpoint=protected, methods=["GET", "POST"]))
    routes.append(Route("/stats", endpoint=stats, methods=["GET"]))
    verifier = ProviderTokenVerifier(provider)
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                AuthenticationMiddleware,
                backend=BearerAuthBackend(verifier, resource_server_url=resource),
            )
        ],
    )

    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", ssl_certfile=args.tls[0], ssl_keyfile=args.tls[1]
    )
    uv = uvicorn.Server(config)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uv.serve, [sock])
            while not uv.started:
                await anyio.sleep(0.01)
            print(f"listening on {port}", flush=True)

    anyio.run(serve)


if __name__ == "__main__":
    main()
    sys.exit(0)
