"""The SAML 2.0 identity provider the SSO tests sign in at: pysaml2's IdP (``saml2.server.Server``: it parses
the AuthnRequest, builds the signed Response and its HTTP-POST binding; Debian's xmlsec1 signs), on
loopback, as a process of its own. Only the pages around it are here: a sign-in form that takes any
address, and the metadata document.

    python tests/idp/saml_idp.py   with RB_IDP_PORT, RB_IDP_WORKDIR (its key and certificate go there),
                                   RB_IDP_SP_METADATA_URL (the service provider's metadata, read at the
                                   first sign-in), RB_IDP_GROUPS (JSON {address: [group, ...]}) and
                                   RB_IDP_GROUP_ATTRIBUTE (the attribute the groups are sent in)
"""

from __future__ import annotations

import datetime
import html
import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.authn_context import PASSWORD
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAME_FORMAT_URI, NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256

PORT = int(os.environ["RB_IDP_PORT"])
BASE = f"http://127.0.0.1:{PORT}"
WORKDIR = Path(os.environ["RB_IDP_WORKDIR"])
GROUPS: dict[str, list[str]] = json.loads(os.environ.get("RB_IDP_GROUPS") or "{}")
GROUP_ATTRIBUTE = os.environ.get("RB_IDP_GROUP_ATTRIBUTE") or "groups"


def _key_and_certificate() -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ReasoningBank test IdP")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = WORKDIR / "idp.key", WORKDIR / "idp.crt"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


KEY, CERT = _key_and_certificate()


def _config(sp_metadata: Path | None) -> IdPConfig:
    config = IdPConfig()
    config.load(
        {
            "entityid": f"{BASE}/idp/metadata",
            "service": {
                "idp": {
                    "name": "ReasoningBank test IdP",
                    "endpoints": {"single_sign_on_service": [(f"{BASE}/idp/sso", BINDING_HTTP_REDIRECT)]},
                    "policy": {
                        "default": {
                            "lifetime": {"minutes": 15},
                            "attribute_restrictions": None,
                            "name_form": NAME_FORMAT_URI,
                        }
                    },
                    "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                    "sign_response": True,
                    "sign_assertion": True,
                }
            },
            "key_file": str(KEY),
            "cert_file": str(CERT),
            "xmlsec_binary": shutil.which("xmlsec1"),
            "metadata": {"local": [str(sp_metadata)]} if sp_metadata else {},
        }
    )
    return config


_server: Server | None = None


def _idp() -> Server:
    """The IdP, once the service provider's metadata can be read (it exists once SAML is configured)."""
    global _server
    if _server is None:
        path = WORKDIR / "sp.xml"
        with urllib.request.urlopen(os.environ["RB_IDP_SP_METADATA_URL"], timeout=10) as response:
            path.write_bytes(response.read())
        _server = Server(config=_config(path))
    return _server


def _page(start_response: Any, body: str, status: str = "200 OK") -> list[bytes]:
    start_response(status, [("Content-Type", "text/html; charset=utf-8")])
    return [body.encode()]


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    path = environ["PATH_INFO"]
    if path == "/idp/metadata":
        start_response("200 OK", [("Content-Type", "application/samlmetadata+xml")])
        return [create_metadata_string(None, config=_config(None))]
    if path == "/idp/sso" and environ["REQUEST_METHOD"] == "GET":
        query = parse_qs(environ.get("QUERY_STRING", ""))
        request, relay = query["SAMLRequest"][0], query.get("RelayState", [""])[0]
        _idp().parse_authn_request(request, BINDING_HTTP_REDIRECT)  # refuses an unknown SP or a bad request
        return _page(
            start_response,
            f"""<!DOCTYPE html><title>Test IdP sign-in</title>
<h1>Test IdP</h1><form method="post" action="/idp/sso">
<input type="hidden" name="SAMLRequest" value="{html.escape(request)}">
<input type="hidden" name="RelayState" value="{html.escape(relay)}">
<label>Address <input name="login" type="email" required></label>
<button type="submit">Sign in</button></form>""",
        )
    if path == "/idp/sso" and environ["REQUEST_METHOD"] == "POST":
        length = int(environ.get("CONTENT_LENGTH") or 0)
        form = parse_qs(environ["wsgi.input"].read(length).decode())
        email = form["login"][0]
        server = _idp()
        request = server.parse_authn_request(form["SAMLRequest"][0], BINDING_HTTP_REDIRECT)
        args = server.response_args(request.message, [BINDING_HTTP_POST])
        identity = {"mail": [email], "givenName": [email.split("@")[0]], GROUP_ATTRIBUTE: GROUPS.get(email, [])}
        response = server.create_authn_response(
            identity,
            userid=email,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=email),
            authn={"class_ref": PASSWORD, "authn_auth": BASE},
            sign_response=True,
            sign_assertion=True,
            sign_alg=SIG_RSA_SHA256,
            digest_alg=DIGEST_SHA256,
            **args,
        )
        (WORKDIR / "last-response.xml").write_text(str(response))  # for a failing test's reader
        binding = server.apply_binding(
            BINDING_HTTP_POST, str(response), args["destination"], form.get("RelayState", [""])[0], response=True
        )
        return _page(start_response, binding["data"])
    return _page(start_response, "not found", "404 Not Found")


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    httpd = make_server("127.0.0.1", PORT, app, handler_class=_Quiet)
    print(f"saml idp ready at {BASE}", flush=True)
    httpd.serve_forever()
