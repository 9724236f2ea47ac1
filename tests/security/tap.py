"""A wiretap in front of a fake: a TCP relay on 127.0.0.1 that optionally terminates TLS and
keeps every byte the client sent, so a test can prove a credential WAS sent (and so that
scanning lbhc's output for it means something) without the fakes recording headers."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import socket
import ssl
import threading
from pathlib import Path
from types import TracebackType
from typing import Self


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, valid for a day: (cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lbhc-test-tap")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tap-cert.pem", directory / "tap-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class Tap:
    """Relay 127.0.0.1:<port> to `upstream` (a plain-HTTP fake); `sent()` is everything
    clients sent, decrypted when `tls` is (cert, key)."""

    def __init__(self, upstream: str, tls: tuple[Path, Path] | None = None) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self._upstream = (host, int(port))
        self._context: ssl.SSLContext | None = None
        if tls is not None:
            self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._context.load_cert_chain(*tls)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._sent = bytearray()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="tap", daemon=True)

    @property
    def url(self) -> str:
        port = self._listener.getsockname()[1]
        return f"{'https' if self._context else 'http'}://127.0.0.1:{port}"

    def sent(self) -> bytes:
        with self._lock:
            return bytes(self._sent)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            if self._context is not None:
                client = self._context.wrap_socket(client, server_side=True)
            upstream = socket.create_connection(self._upstream, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets += [client, upstream]
        back = threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True)
        back.start()
        self._pump(client, upstream, True)
        back.join()

    def _pump(self, source: socket.socket, target: socket.socket, record: bool) -> None:
        try:
            while data := source.recv(65536):
                if record:
                    with self._lock:
                        self._sent += data
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):  # one side gone: end the other, as a proxy would
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(timeout=5)
