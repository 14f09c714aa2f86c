"""An HTTPS server on 127.0.0.1 for client ID metadata documents, with a certificate authority
made for the test by `openssl` (Lomi trusts it only through LOMI_CIMD_TEST_CA): shared by
test_cimd.py and the desktop suite."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"openssl {' '.join(args)}:\n{done.stderr}"


def make_authority(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate it signed for 127.0.0.1 and localhost: (ca.pem,
    server.pem, server.key)."""
    folder.mkdir()
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Lomi e2e test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=folder)
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


class DocumentServer:
    """An HTTPS server on 127.0.0.1 serving client metadata documents by path."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.documents: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                status, headers, body = server.documents.get(self.path, (404, {}, b"not here"))
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def serve(self, path: str, document: dict | bytes, status: int = 200, headers: dict[str, str] | None = None) -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents[path] = (status, headers or {}, body)
        return self.url(path)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
