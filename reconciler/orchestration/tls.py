"""The metrics server's TLS: a certificate from a directory (cert-manager's or a Secret's ``tls.crt``
and ``tls.key``), read again when the files change, or else a self-signed one made at start, as
controller-runtime's secure metrics server does when it is given no certificate.

Why self-signed by default: Prometheus (and kubebuilder's ServiceMonitor) scrape with
``insecureSkipVerify`` unless given a CA, and what the TLS protects is the bearer token each scrape
sends, which a plain-HTTP listener would expose on the Pod network.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from memcached_gitops.foundation.clocks import monotonic_seconds

CERT_NAME, KEY_NAME = "tls.crt", "tls.key"
#: How often (seconds) a certificate directory is looked at for a renewed certificate.
RELOAD_CHECK = 10.0


def self_signed(hosts: tuple[str, ...], days: int = 365) -> tuple[bytes, bytes]:
    """A self-signed ECDSA P-256 serving certificate for ``hosts`` (names or IP addresses), and its key, as PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    # Backdated an hour, as client-go's certutil does (util/cert/cert.go GenerateSelfSignedCertKeyWithFixtures:
    # "valid an hour earlier to avoid flakes due to clock skew"): a scraper whose clock is behind ours accepts it.
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A TLS 1.2+ server context holding the pair, which ssl reads from files only: the pair goes
    through an anonymous in-memory file where there is one (Linux), else a private temporary
    directory removed at once, so no key is left on disk (the root filesystem is read-only anyway)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])  # no HTTP/2 (kubebuilder's --enable-http2=false)
    if hasattr(os, "memfd_create"):
        fds = [os.memfd_create(n) for n in ("cert", "key")]
        try:
            for fd, data in zip(fds, (cert_pem, key_pem), strict=True):
                os.write(fd, data)
            context.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
        finally:
            for fd in fds:
                os.close(fd)
        return context
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / n for n in (CERT_NAME, KEY_NAME)]
        for path, data in zip(paths, (cert_pem, key_pem), strict=True):
            path.write_bytes(data)
            path.chmod(0o600)
        context.load_cert_chain(str(paths[0]), str(paths[1]))
    return context


class ServingCertificate:
    """The current server context: from ``cert_dir`` (read again when its files change, so a renewed
    certificate is served without a restart), or a self-signed pair made once."""

    def __init__(self, cert_dir: str | None, hosts: tuple[str, ...] = (), clock: Callable[[], float] | None = None) -> None:
        self.cert_dir = Path(cert_dir) if cert_dir else None
        self.clock = clock or monotonic_seconds
        self.lock = threading.Lock()
        self.stamp: tuple[float, float] | None = None
        self.checked = self.clock()
        if self.cert_dir is None:
            # controller-runtime's names (server.go @86a0d40e L311-326: "localhost" and 127.0.0.1)
            self.current = server_context(*self_signed(hosts or ("localhost", "127.0.0.1")))
        else:
            self.current = self._load()

    def _files(self) -> tuple[Path, Path]:
        assert self.cert_dir is not None
        return self.cert_dir / CERT_NAME, self.cert_dir / KEY_NAME

    def _load(self) -> ssl.SSLContext:
        cert, key = self._files()
        stamp = (cert.stat().st_mtime, key.stat().st_mtime)
        context = server_context(cert.read_bytes(), key.read_bytes())
        self.stamp = stamp  # only once the pair loaded: a half-written rotation is tried again
        return context

    def context(self) -> ssl.SSLContext:
        """The context to wrap a new connection with; looks for renewed files at most every RELOAD_CHECK s."""
        if self.cert_dir is None:
            return self.current
        with self.lock:
            now = self.clock()
            if now - self.checked >= RELOAD_CHECK:
                self.checked = now
                try:
                    cert, key = self._files()
                    if (cert.stat().st_mtime, key.stat().st_mtime) != self.stamp:
                        self.current = self._load()
                except (OSError, ssl.SSLError):  # half-written during a rotation: keep serving the old pair
                    pass
            return self.current
