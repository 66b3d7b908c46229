"""A real OpenID Connect provider for the tests: oidc-provider (npm) under node.

``tests/oidc/provider.mjs`` configures it (dynamic registration, PKCE, resource
indicators, introspection, the built-in login and consent pages); this module starts it
on loopback and signs people in through those pages with ``requests``, as a browser
would, to get real tokens. Without node the tests are skipped (``require_tool``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import secrets
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from tests.support.processes import free_port
from tests.support.tools import npm_installed, require_tool

HERE = Path(__file__).resolve().parents[1] / "oidc"
FORM = re.compile(r'<form[^>]*action="([^"]+)"', re.IGNORECASE)
HIDDEN = re.compile(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"')


def install() -> str:
    """``npm install`` the provider's pinned packages once; the node binary to run it."""
    node = require_tool("node", "runs the test OpenID provider (oidc-provider)")
    npm_installed(HERE, "oidc-provider", "installs the test OpenID provider")
    return node


@dataclass
class Tokens:
    """What the token endpoint answered."""

    access_token: str
    id_token: str | None
    raw: dict[str, Any]


@dataclass
class OidcProvider:
    """A running oidc-provider; ``issuer`` is its URL (``http://127.0.0.1:PORT``)."""

    process: subprocess.Popen[str]
    issuer: str
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls, resources: dict[str, dict[str, str]], clients: list[dict[str, Any]]
    ) -> OidcProvider:
        node = install()
        port = free_port()
        process = subprocess.Popen(
            [node, str(HERE / "provider.mjs")],
            cwd=HERE,
            env={
                **os.environ,
                "PORT": str(port),
                "RESOURCES": json.dumps(resources),
                "CLIENTS": json.dumps(clients),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdout is not None
        running = cls(process, f"http://127.0.0.1:{port}")
        for line in process.stdout:
            running.lines.append(line)
            if '"listening"' in line:
                break
        else:
            raise AssertionError("the provider did not start:\n" + "".join(running.lines))
        stream = process.stdout
        threading.Thread(target=lambda: running.lines.extend(stream), daemon=True).start()
        return running

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def discovery(self) -> dict[str, Any]:
        response = requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10)
        response.raise_for_status()
        document: dict[str, Any] = response.json()
        return document

    def register(self, name: str, redirect_uri: str) -> str:
        """Register a public client dynamically (RFC 7591), as MCP clients do."""
        response = requests.post(
            self.discovery()["registration_endpoint"],
            json={
                "client_name": name,
                "redirect_uris": [redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
            timeout=10,
        )
        assert response.status_code == 201, response.text
        return str(response.json()["client_id"])

    def sign_in(
        self,
        login: str,
        client_id: str,
        redirect_uri: str,
        resource: str,
        client_secret: str | None = None,
    ) -> Tokens:
        """The authorization-code flow with PKCE, through the provider's login and consent
        pages, for ``resource`` (RFC 8707); the tokens it issues."""
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )
        document = self.discovery()
        browser = requests.Session()
        response = browser.get(
            document["authorization_endpoint"],
            params={
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "response_type": "code",
                "scope": "openid",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": secrets.token_hex(8),
                "resource": resource,
            },
            allow_redirects=False,
            timeout=10,
        )
        code = None
        for _ in range(10):
            location = response.headers.get("Location")
            if location is None:  # a page: log in, or consent
                fields = {"login": login, "password": "any"}
                fields.update({k: html.unescape(v) for k, v in HIDDEN.findall(response.text)})
                action = FORM.search(response.text)
                assert action, response.text[:2000]
                response = browser.post(
                    urljoin(response.url, html.unescape(action.group(1))),
                    data=fields,
                    allow_redirects=False,
                    timeout=10,
                )
                continue
            target = urljoin(response.url, location)
            if target.startswith(redirect_uri):
                query = parse_qs(urlsplit(target).query)
                assert "code" in query, target
                code = query["code"][0]
                break
            response = browser.get(target, allow_redirects=False, timeout=10)
        assert code is not None, "the provider never redirected back with a code"
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": resource,
        }
        auth = None
        if client_secret is None:
            form["client_id"] = client_id
        else:
            auth = (client_id, client_secret)
        answer = requests.post(document["token_endpoint"], data=form, auth=auth, timeout=10)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        return Tokens(body["access_token"], body.get("id_token"), body)

    def revoke(self, token: str, client_id: str, client_secret: str) -> None:
        response = requests.post(
            self.discovery()["revocation_endpoint"],
            data={"token": token},
            auth=(client_id, client_secret),
            timeout=10,
        )
        assert response.status_code == 200, response.text
