"""Where the server may listen, and the security headers every response carries.

Dev/single-host mode: while no active API token exists, the API accepts unauthenticated requests
(principal "local", admin rights), but only when the server listens on a loopback address and the
request comes from loopback. `appliance serve` refuses a non-loopback address until a token
exists (`check_bind_allowed`), before anything listens.
"""

from __future__ import annotations

import ipaddress

from starlette.datastructures import MutableHeaders

from appliance.config import Settings
from appliance.errors import ApplianceError

# Pages (the UI, its static files): scripts and styles from the appliance only, nothing inline,
# never framed. API responses get the same policy; browsers ignore it for JSON.
STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI sets inline style attributes; its scripts are still served from the appliance only.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class BindRefused(ApplianceError):
    """Listening beyond loopback without any API token would expose an open API."""

    exit_code = 1


def is_loopback_host(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`; any other name or address (including '' and 0.0.0.0) is not."""
    if not host:
        return False
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a host name: it could resolve anywhere, so it counts as exposed
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def check_bind_allowed(settings: Settings, host: str, active_tokens: int | None = None) -> None:
    """Raise BindRefused when `host` is not loopback and no active API token exists."""
    if is_loopback_host(host):
        return
    if active_tokens is None:
        from appliance.server.auth import TokenStore

        with TokenStore(settings.tokens_path) as store:
            active_tokens = store.count_active()
    if active_tokens == 0:
        raise BindRefused(
            f"refusing to listen on {host}: no API token exists, so anyone on the network could use the API. "
            "Create one first (appliance token create --role admin), or listen on 127.0.0.1 "
            "(single-host mode: unauthenticated requests are accepted from loopback only)."
        )


def apply_security_headers(path: str, headers: MutableHeaders) -> None:
    """Add the headers every response carries; a route that set its own CSP (the docs) keeps it."""
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "no-referrer"
    headers["X-Frame-Options"] = "DENY"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    if "content-security-policy" not in headers:
        headers["Content-Security-Policy"] = STRICT_CSP
    if path.startswith("/v1/") or path == "/v1":
        # Answers and audit-relevant data must not linger in browser or proxy caches.
        headers["Cache-Control"] = "no-store"
    elif "cache-control" not in headers:
        headers["Cache-Control"] = "no-cache"
    if "server" in headers:
        del headers["server"]
