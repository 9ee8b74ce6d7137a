"""The metrics endpoint as Prometheus reaches it: an HTTPS GET with a service account's bearer
token, the service accounts the reviews of the fake API server know, and a free local port."""

from __future__ import annotations

import http.client
import socket
import ssl
from pathlib import Path

NS = "monitoring"


def service_account(name: str) -> dict:
    return {"username": name, "uid": "6f1c", "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]}


def scrape(port: int, token: str | None, ca: Path | None, path: str = "/metrics") -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()  # noqa: S323
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token is not None else {})
    response = conn.getresponse()
    body = response.read().decode()
    conn.close()
    return response.status, body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
