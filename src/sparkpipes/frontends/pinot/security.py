"""The Kafka client's security keys and the schema registry's client settings of a Pinot
``streamConfigs`` (seed 002's SSL and SASL examples), as the Kafka and registry clients here
take them: the JAAS string's user and password are taken out as secrets and never handed to
the client; TLS material must be PEM (or PKCS#12 for the Kafka keystore); a Java keystore is
an error saying how to convert it. Values are strings, as in Pinot.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sparkpipes.config.core import Secret
from sparkpipes.errors import ConfigError

#: Kafka client keys a streamConfigs may give at its top level (seed 002's SSL / SASL
#: examples) and what each becomes in the client
CLIENT_KEYS = {
    "security.protocol": "security.protocol",
    "sasl.mechanism": "sasl.mechanism",
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.keystore.location": "ssl.keystore.location",
    "ssl.ca.location": "ssl.ca.location",
    "ssl.certificate.location": "ssl.certificate.location",
    "ssl.key.location": "ssl.key.location",
    "ssl.endpoint.identification.algorithm": "ssl.endpoint.identification.algorithm",
}
#: secrets among them, and the client key each becomes
CLIENT_SECRETS = {
    "ssl.keystore.password": "ssl.keystore.password",
    "ssl.key.password": "ssl.key.password",
}
#: accepted, not used by the Kafka client (Java keystore formats, JVM TLS protocol)
CLIENT_IGNORED = tuple(
    [
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.keystore.type",
        "ssl.protocol",
        "ssl.enabled.protocols",
    ]
)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")


def registry_options(
    given: Mapping[str, str], prefix: str, where: str
) -> tuple[dict[str, str], dict[str, Secret]]:
    """The registry client's options (``schema.registry.``-prefixed keys of
    ``formats.avro.registry_client``) from Pinot's decoder props."""
    opts: dict[str, str] = {}
    secrets: dict[str, Secret] = {}
    pr = prefix + "schema.registry."
    for kind in ("truststore", "keystore"):
        t = given.get(f"{pr}ssl.{kind}.type")
        if t and t.upper() != "PEM":
            raise ConfigError(
                f"{where}: {pr}ssl.{kind}.type {t} is a Java keystore format; the registry "
                "client here reads PEM files: give a PEM file and type PEM"
            )
    trust = given.get(pr + "ssl.truststore.location")
    if trust:
        opts["schema.registry.ssl.ca.location"] = pem(trust, pr + "ssl.truststore.location", where)
    keystore = given.get(pr + "ssl.keystore.location")
    if keystore:
        path = pem(keystore, pr + "ssl.keystore.location", where, need_key=True)
        opts["schema.registry.ssl.certificate.location"] = path
        opts["schema.registry.ssl.key.location"] = path
    source = given.get(prefix + "basic.auth.credentials.source") or given.get(
        pr + "basic.auth.credentials.source"
    )
    info = given.get(pr + "basic.auth.user.info")
    if source and source.upper() != "USER_INFO":
        raise ConfigError(
            f"{where}: basic.auth.credentials.source {source} is not supported; use USER_INFO "
            f"with {pr}basic.auth.user.info"
        )
    if info:
        if ":" not in info:
            raise ConfigError(f"{where}: {pr}basic.auth.user.info must be 'user:password'")
        secrets["schema.registry.basic.auth.user.info"] = Secret(info)
    return opts, secrets


def pem(path: str, key: str, where: str, *, need_key: bool = False) -> str:
    """``path`` if it is a PEM file (with a private key: ``need_key``). One message for
    a file missing, unreadable, not PEM or without a key: it tells nothing of the file
    (the REST API asks FILE READ for a path; still, an answer is no file oracle)."""
    unusable = ConfigError(
        f"{where}: {key} '{path}' cannot be used: it must be a readable PEM file"
        f"{' with the private key' if need_key else ''} (a Java keystore cannot be read "
        "here; convert it with keytool -exportcert -rfc / openssl pkcs12)"
    )
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except (OSError, ValueError):
        raise unusable from None
    if b"-----BEGIN" not in head or (need_key and b"PRIVATE KEY-----" not in head):
        raise unusable
    return path


def security(
    given: Mapping[str, str],
    where: str,
    client: dict[str, str],
    secrets: dict[str, Secret],
    notes: list[str],
) -> None:
    proto = given.get("security.protocol")
    if proto is not None and proto.upper() not in SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where}: security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
            f"got '{proto}'"
        )
    for k, target in CLIENT_KEYS.items():
        if k in given:
            client[target] = given[k].upper() if k == "security.protocol" else given[k]
    for k, target in CLIENT_SECRETS.items():
        if k in given:
            secrets[target] = Secret(given[k])
    trust = given.get("ssl.truststore.location")
    if trust:
        pem(trust, "ssl.truststore.location", where)
    keystore = given.get("ssl.keystore.location")
    if keystore and keystore.lower().endswith(".jks"):
        raise ConfigError(
            f"{where}: ssl.keystore.location '{keystore}' is a Java keystore; the Kafka "
            "client reads PKCS#12 (.p12) keystores or PEM files (ssl.certificate.location, "
            "ssl.key.location)"
        )
    ignored = [k for k in CLIENT_IGNORED if k in given]
    if ignored:
        notes.append(f"{', '.join(ignored)}: not used by the Kafka client (PEM and PKCS#12 files)")
    sasl = proto is not None and proto.upper().startswith("SASL")
    mech = given.get("sasl.mechanism")
    if mech is not None and mech.upper() not in SASL_MECHANISMS:
        raise ConfigError(
            f"{where}: sasl.mechanism must be one of {', '.join(SASL_MECHANISMS)}, got '{mech}'"
        )
    if mech is not None:
        client["sasl.mechanism"] = mech.upper()
    jaas = given.get("sasl.jaas.config")
    if jaas is not None:
        user, password = parse_jaas(jaas, where)
        secrets["sasl.username"], secrets["sasl.password"] = Secret(user), Secret(password)
    if sasl and jaas is None:
        raise ConfigError(
            f"{where}: security.protocol {proto} needs sasl.jaas.config with the user name "
            "and password"
        )
    if sasl and mech is None:
        client["sasl.mechanism"] = "PLAIN"  # Kafka's default


def parse_jaas(text: str, where: str) -> tuple[str, str]:
    """``<LoginModule> required username="u" password="p";`` → (user, password). The
    string is never echoed: it holds the password."""
    head = text.strip().split(None, 2)
    if len(head) < 2 or head[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError(
            f"{where}: sasl.jaas.config must look like '<LoginModule> required "
            'username="…" password="…";\''
        )
    module = head[0].rsplit(".", 1)[-1]
    if module not in ("PlainLoginModule", "ScramLoginModule"):
        raise ConfigError(
            f"{where}: sasl.jaas.config login module {module} is not supported (PLAIN and "
            "SCRAM: PlainLoginModule, ScramLoginModule)"
        )
    values = {}
    for m in _JAAS.finditer(head[2] if len(head) > 2 else ""):
        values[m.group(1)] = next(g for g in m.groups()[1:] if g is not None)
    missing = [k for k in ("username", "password") if not values.get(k)]
    if missing:
        raise ConfigError(f"{where}: sasl.jaas.config has no {missing[0]}")
    return values["username"], values["password"]
