"""Throwaway PKI for the TLS tests, made with the openssl CLI at test time:
a CA, a server certificate for 127.0.0.1/localhost signed by it, a client
certificate, a second unrelated CA, and PEM keystores in Kafka's layout."""
import os
import subprocess


def _ossl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def _key(name, cwd):
    _ossl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
          "-out", name, cwd=cwd)


def _ca(name, cn, cwd):
    _key(name + ".key", cwd)
    _ossl("req", "-x509", "-new", "-key", name + ".key", "-out", name + ".pem",
          "-days", "2", "-subj", "/CN=" + cn, cwd=cwd)


def _signed(name, cn, ca, ext, cwd, subj=None):
    _key(name + ".key", cwd)
    _ossl("req", "-new", "-key", name + ".key", "-out", name + ".csr",
          "-subj", subj or "/CN=" + cn, cwd=cwd)
    with open(os.path.join(cwd, name + ".ext"), "w") as f:
        f.write(ext)
    _ossl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
          "-CAkey", ca + ".key", "-CAcreateserial", "-out", name + ".pem",
          "-days", "2", "-extfile", name + ".ext", cwd=cwd)


class Pki:
    """Files under dir: ca.pem, other-ca.pem, server.pem/.key, keystore.pem
    (chain + key), keystore-enc.pem (key encrypted with key_password),
    client.pem/.key."""

    key_password = "keystore-secret-pw"

    def __init__(self, dir):
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        _ca("ca", "runnel test CA", dir)
        _ca("other-ca", "some other CA", dir)
        _signed("server", "localhost", "ca",
                "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\n", dir)
        _signed("client", "test-client", "ca",
                "extendedKeyUsage=clientAuth\n", dir)
        _ossl("pkcs8", "-topk8", "-in", "server.key", "-out", "server-enc.key",
              "-v2", "aes-256-cbc", "-passout", "pass:" + self.key_password,
              cwd=dir)
        self.ca = self.path("ca.pem")
        self.other_ca = self.path("other-ca.pem")
        self.server_cert = self.path("server.pem")
        self.server_key = self.path("server.key")
        self.client_cert = self.path("client.pem")
        self.client_key = self.path("client.key")
        self.keystore = self._cat("keystore.pem", "server.pem", "server.key")
        self.keystore_enc = self._cat("keystore-enc.pem", "server.pem",
                                      "server-enc.key")

    def client(self, name, subject):
        """A client certificate signed by ca.pem for an openssl -subj
        ("/C=US/O=Runnel/CN=Alice": its RFC 2253 DN reads
        "CN=Alice,O=Runnel,C=US"); (cert path, key path)."""
        _signed(name, None, "ca", "extendedKeyUsage=clientAuth\n", self.dir,
                subj=subject)
        return self.path(name + ".pem"), self.path(name + ".key")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _cat(self, out, *parts):
        with open(self.path(out), "w") as f:
            for p in parts:
                with open(self.path(p)) as g:
                    f.write(g.read())
        return self.path(out)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()
