"""A single-node Apache Kafka broker in KRaft mode, run from the Maven jars as a child process."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from chronos.connection_security import PLAINTEXT, KafkaSecurity
from chronos.errors import KafkaUnavailable, ToolMissing
from chronos.stack.processes import ProcessRecord, running, spawn
from chronos.stack.service_account import ServiceAccount
from chronos.stack.stack_credentials import BROKER_USER, CLIENT_USER, SCRAM_MECHANISM, StackCredentials
from chronos.stack.state import KAFKA_MAIN

FORMAT_TIMEOUT_S = 120.0  # the storage tool is one JVM start; never wait forever on it
SCRAM_ITERATIONS = 8192
DIRECTORY_PROVIDER = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
# Kafka lets a configuration use only the config providers this system property names (CVE-2024-31141).
ALLOW_PROVIDERS = f"-Dorg.apache.kafka.automatic.config.providers={DIRECTORY_PROVIDER}"

# Rolled at 10 MB, five kept: a broker logs ~50 MB a day at INFO, and a stack may run for weeks.
_LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=RollingFile
appender.file.name=file
appender.file.fileName={log}
appender.file.filePattern={log}.%i
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
appender.file.policies.type=Policies
appender.file.policies.size.type=SizeBasedTriggeringPolicy
appender.file.policies.size.size=10MB
appender.file.strategy.type=DefaultRolloverStrategy
appender.file.strategy.max=5
"""


def render_server_properties(port: int, controller_port: int, data_dir: Path, partitions: int,
                             credentials: StackCredentials | None = None) -> str:
    """Broker + controller on loopback; replication factors of 1 because there is one node, and
    transaction-log settings that let Flink's exactly-once sink work on it. With `credentials`, secured."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": str(partitions),
        "offsets.topic.replication.factor": "1",
        # Kafka's 50 partitions per internal topic are for spreading coordinators over many brokers; on one they
        # only cost the first consumer group (or transactional producer) the creation of 50 logs, and the broker
        # their upkeep.
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "transaction.max.timeout.ms": "900000",
    }
    if credentials is not None:
        props |= secured_listeners(port, controller_port, credentials)
    return "".join(f"{key}={value}\n" for key, value in props.items())


def secured_listeners(port: int, controller_port: int, credentials: StackCredentials) -> dict[str, str]:
    """Clients only over TLS with a SCRAM login (the broker's own inter-broker connections too); the controller's
    listener over TLS with a client certificate signed by the stack's CA (KRaft's controller cannot check SCRAM: its
    users live in the metadata it serves). Every secret through Kafka's DirectoryConfigProvider
    (`${dir:<folder>:<file>}`), read by the broker from the credentials folder: none is in this file."""
    folder = credentials.folder

    def secret(name: str) -> str:
        return f"${{dir:{folder}:{name}}}"

    return {
        "listeners": f"SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{port}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SSL",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
        f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{BROKER_USER}" '
            f'password="{secret("broker-password")}";',
        "listener.name.controller.ssl.client.auth": "required",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(credentials.broker_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(credentials.ca),
        "config.providers": "dir",
        "config.providers.dir.class": DIRECTORY_PROVIDER,
    }


def scram_credential(user: str, password: str, iterations: int = SCRAM_ITERATIONS,
                     salt: bytes | None = None) -> str:
    """The storage tool's `--add-scram` entry for `user`, salted and hashed here (RFC 5802's SaltedPassword): the
    password itself is never on a command line."""
    salt = salt if salt is not None else os.urandom(32)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    return (f"{SCRAM_MECHANISM}=[name={user},iterations={iterations},salt=\"{base64.b64encode(salt).decode()}\","
            f"saltedpassword=\"{base64.b64encode(salted).decode()}\"]")


def new_cluster_id(draw: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> str:
    """A KRaft cluster id as Kafka makes them: URL-safe base64 of 16 random bytes, redrawn when it
    starts with '-' (the storage tool would read such an id as an option; 1 draw in 64)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(draw()).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ToolMissing("Java is not installed; install a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    return java


COLLECTORS = frozenset(f"-XX:+Use{name}GC" for name in ("G1", "Serial", "Parallel", "Z", "Shenandoah", "Epsilon"))


def collector_flags(jvm_opts: str) -> list[str]:
    """G1 (Kafka's own choice) unless the stack's JVM options pick a collector: the JVM refuses two."""
    return [] if COLLECTORS & set(jvm_opts.split()) else ["-XX:+UseG1GC"]


def start_broker(lib_dir: Path, home: Path, port: int, controller_port: int, account: ServiceAccount,
                 partitions: int = 2, jvm_opts: str = "", credentials: StackCredentials | None = None) -> ProcessRecord:
    """Write the config, format storage on first start (with the SCRAM users of a secured broker), start the broker
    as `account`; return its record."""
    java = _java()
    data_dir = home / "data"
    tree = account.tree(home.parent)  # the services directory: written without following a link in it
    tree.directory(home)
    config = tree.write(home / "server.properties",
                        render_server_properties(port, controller_port, data_dir, partitions, credentials))
    log4j = tree.write(home / "log4j2.properties", _LOG4J2.format(log=home / "server.log"))
    classpath = f"{lib_dir}/*"
    log_opt = f"-Dlog4j2.configurationFile={log4j}"
    secured = [] if credentials is None else [ALLOW_PROVIDERS]
    if not tree.exists(data_dir / "meta.properties"):
        cluster_id = new_cluster_id()
        users = [] if credentials is None else [
            a for user, secret in ((BROKER_USER, "broker-password"), (CLIENT_USER, "kafka-password"))
            for a in ("--add-scram", scram_credential(user, credentials.read(secret)))]
        try:
            done = subprocess.run(
                [java, "-cp", classpath, log_opt, *secured, "kafka.tools.StorageTool", "format",
                 "-t", cluster_id, "-c", str(config), *users],
                capture_output=True, text=True, env=account.env(), timeout=FORMAT_TIMEOUT_S, **account.popen_kwargs(),
            )
        except subprocess.TimeoutExpired as exc:
            raise KafkaUnavailable(f"formatting Kafka storage took over {FORMAT_TIMEOUT_S:.0f} s") from exc
        if done.returncode != 0:
            raise KafkaUnavailable(f"formatting Kafka storage failed: {done.stderr.strip()[-300:]}")
    return spawn(
        [java, "-Xms256m", "-Xmx512m", *collector_flags(jvm_opts), *jvm_opts.split(), *secured, "-cp", classpath, log_opt,
         KAFKA_MAIN, str(config)],
        tree.append(home / "stdout.log"),
        role="this stack's Kafka broker",
        argv_marks=(KAFKA_MAIN, str(config)),
        env=account.env(),
        cwd=home,
        run_as=account.run_as(),
    )


def wait_ready(bootstrap: str, process: ProcessRecord | None, timeout_s: float = 60.0,
               security: KafkaSecurity = PLAINTEXT) -> None:
    """Ready means the broker answers a metadata request (as a client with `security`), not that its port is open.
    `process` None: a broker this stack did not start."""
    from chronos.jobs.topics import broker_answers

    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if process is not None and not running(process):
            raise KafkaUnavailable(f"the Kafka broker (pid {process.pid}) exited during start; see its log")
        problem = broker_answers(bootstrap, security)
        if problem is None:
            return
        last = problem
        time.sleep(0.5)
    raise KafkaUnavailable(f"the Kafka broker at {bootstrap} did not become ready: {last}")
