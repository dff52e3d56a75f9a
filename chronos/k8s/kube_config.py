"""One way to reach the cluster: in-cluster credentials when chronos runs as a pod (the Helm chart's service
account), the user's kubeconfig otherwise, as kubectl finds it (`KUBECONFIG`, else ~/.kube/config).

The kubernetes library does the part it knows best (contexts, tokens, client certificates, exec plugins, a pod's
rotated token), but it is not handed a path to open: a kubeconfig is read through chronos's one file reader (a FIFO
or /dev/zero given as one would block or fill memory in the library's plain `open`), parsed by the bounded YAML loader
(no aliases, no nesting past 64 levels), checked against the shape chronos reads, and every file it names (a CA, a
client certificate, a key, a token file) passes the same reader before the library opens it.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chronos.errors import IN_FORCE, InvalidInput, field_error
from chronos.input_files import read_bytes, read_mapping
from chronos.model import check_url

KUBECONFIG_ENV = "KUBECONFIG"
_FILE_KEYS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


class _Named(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = Field(min_length=1, max_length=253)


class _Cluster(_Named):
    cluster: dict[str, str | bool | None]


class _User(_Named):
    user: dict[str, Any] | None = None


class _Context(_Named):
    context: dict[str, str | None]


class _KubeConfig(BaseModel):
    """What chronos reads of a kubeconfig; kubectl's other fields are left to the library."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    clusters: list[_Cluster] = Field(default_factory=list, max_length=1000)
    users: list[_User] | None = Field(default_factory=list, max_length=1000)
    contexts: list[_Context] = Field(default_factory=list, max_length=1000)
    current_context: str | None = Field(None, alias="current-context", max_length=253)


@dataclass(frozen=True)
class KubeConnection:
    """Where the API server is and how chronos proves who it is there."""

    server: str
    tls: ssl.SSLContext | bool
    authorization: Callable[[], dict[str, str]]  # asked before every exchange: a pod's token is rotated


def kubeconfig_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    environ = os.environ if environ is None else environ
    listed = [Path(p).expanduser() for p in environ.get(KUBECONFIG_ENV, "").split(os.pathsep) if p]
    return listed or [Path("~/.kube/config").expanduser()]


def read_kubeconfig(paths: list[Path]) -> dict[str, Any]:
    """The kubeconfig files merged as kubectl merges them (the first file to name a cluster, user or context, or to
    set current-context, wins), each read through the one reader; file paths inside made absolute against the file
    that names them, each checked by the same reader."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {"clusters": set(), "users": set(), "contexts": set()}
    found = [p for p in paths if p.exists() or p.is_symlink()]
    if not found:
        raise InvalidInput(f"no Kubernetes credentials: not in a pod, and no kubeconfig at "
                           f"{', '.join(str(p) for p in paths[:3])} ({KUBECONFIG_ENV}, else ~/.kube/config)")
    for path in found:
        data = read_mapping(path, "kubeconfig", "clusters, users and contexts")
        try:
            parsed = _KubeConfig.model_validate(data)
        except ValidationError as exc:
            raise InvalidInput(f"kubeconfig {path} is not one chronos reads: {field_error(exc.errors())}") from None
        for key, entries in (("clusters", parsed.clusters), ("users", parsed.users or []),
                             ("contexts", parsed.contexts)):
            for entry in entries:
                if entry.name not in seen[key]:
                    seen[key].add(entry.name)
                    merged[key].append(_absolute(entry.model_dump(by_alias=True), path.parent))
        if parsed.current_context and "current-context" not in merged:
            merged["current-context"] = parsed.current_context
    return merged


def _absolute(entry: dict[str, Any], base: Path) -> dict[str, Any]:
    for part, keys in _FILE_KEYS.items():
        section = entry.get(part)
        if not isinstance(section, dict):
            continue
        for key in keys:
            value = section.get(key)
            if isinstance(value, str) and value:
                path = Path(value).expanduser()
                path = path if path.is_absolute() else base / path
                read_bytes(path, f"kubeconfig {part}'s {key}")  # the library opens it: a FIFO would block it
                section[key] = str(path)
    return entry


def _tls(configuration: Any) -> ssl.SSLContext | bool:
    if not configuration.host.startswith("https://"):
        return True
    if not configuration.verify_ssl:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or type(exc).__name__
        raise InvalidInput(f"cannot use the kubeconfig's TLS files: {reason}") from None
    return context


def _authorization(configuration: Any) -> Callable[[], dict[str, str]]:
    def headers() -> dict[str, str]:
        token = configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            IN_FORCE.remember(token, token.split(" ", 1)[-1])
            return {"Authorization": token}
        if configuration.username or configuration.password:
            basic = configuration.get_basic_auth_token()
            IN_FORCE.remember(basic, basic.split(" ", 1)[-1], configuration.password or "")
            return {"Authorization": basic}
        return {}
    return headers


def load_connection(environ: Mapping[str, str] | None = None) -> KubeConnection:
    """The API server of the pod chronos runs in, else of the kubeconfig's current context; one line when neither
    can be used."""
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except config.ConfigException:
        merged = read_kubeconfig(kubeconfig_paths(environ))
        try:
            config.load_kube_config_from_dict(merged, client_configuration=configuration,  # type: ignore[no-untyped-call]
                                              persist_config=False)
        except (config.ConfigException, ValueError, KeyError, TypeError, OSError) as exc:
            detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise InvalidInput(f"no Kubernetes credentials: not in a pod, and the kubeconfig cannot be used ({detail})"
                               ) from None
    server = check_url(str(configuration.host or ""), "the Kubernetes API server's URL").rstrip("/")
    headers = _authorization(configuration)
    headers()  # read now: a secret is in force (never said) before any reply can echo it
    return KubeConnection(server, _tls(configuration), headers)
