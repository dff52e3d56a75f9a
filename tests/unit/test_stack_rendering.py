"""Config rendering of the stack's services: pure, so checked without starting anything."""

from pathlib import Path

from chronos.stack.flink_cluster import FlinkClusterSettings, render_config
from chronos.stack.kafka_broker import collector_flags, new_cluster_id, render_server_properties
from chronos.stack.ports import free_port_block, free_ports, port_in_use
from chronos.stack.service_account import service_account


def test_flink_config_is_loopback_only_and_keeps_the_wheels_jvm_flags(tmp_path: Path) -> None:
    base = {"env": {"java": {"opts": {"all": "--add-opens=java.base/java.lang=ALL-UNNAMED"}}},
            "jobmanager": {"bind-host": "localhost", "memory": {"process": {"size": "1600m"}}}}
    settings = FlinkClusterSettings(home=tmp_path, rest_port=18081, rpc_port=16123, prometheus_port_base=19249,
                                    account=service_account(), slots=3)
    config = render_config(base, settings)
    assert config["env"]["java"]["opts"]["all"].startswith("--add-opens")
    assert config["env"]["java"]["opts"]["all"].endswith(f" -Djava.io.tmpdir={tmp_path}/tmp"), "temp files stay inside"
    assert config["io"]["tmp"]["dirs"] == f"{tmp_path}/tmp"
    assert config["jobmanager"]["bind-host"] == "127.0.0.1"
    assert config["jobmanager"]["memory"]["process"]["size"] == "1g"
    assert config["rest"] == {"address": "127.0.0.1", "bind-address": "127.0.0.1", "port": 18081}
    assert config["taskmanager"]["numberOfTaskSlots"] == 3
    assert config["execution"]["checkpointing"]["dir"] == f"file://{tmp_path}/checkpoints"
    assert config["metrics"]["reporter"]["prom"]["port"] == "19249-19252"
    assert config["web"]["refresh-interval"] == "250 ms", "REST job state must not lag restarts by seconds"
    assert config["metrics"]["fetcher"]["update-interval"] == 2000
    assert base["jobmanager"]["bind-host"] == "localhost", "the base config must not be mutated"


def test_the_stacks_jvm_options_go_to_every_flink_jvm_beside_the_wheels(tmp_path: Path) -> None:
    base = {"env": {"java": {"opts": {"all": "--add-opens=java.base/java.lang=ALL-UNNAMED"}}}}
    settings = FlinkClusterSettings(home=tmp_path, rest_port=18081, rpc_port=16123, prometheus_port_base=19249,
                                    account=service_account(), jvm_opts="-XX:TieredStopAtLevel=1")
    opts = render_config(base, settings)["env"]["java"]["opts"]["all"]
    assert opts == f"--add-opens=java.base/java.lang=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Djava.io.tmpdir={tmp_path}/tmp"


def test_recovery_settings_merge_into_the_same_nesting_as_ours_and_win(tmp_path: Path) -> None:
    settings = FlinkClusterSettings(home=tmp_path, rest_port=18081, rpc_port=16123, prometheus_port_base=19249,
                                    account=service_account(), extra_conf=(("heartbeat.timeout", "5000 ms"),
                                                                           ("restart-strategy.fixed-delay.delay", "500 ms")))
    config = render_config({"heartbeat": {"interval": "10 s"}}, settings)
    assert config["heartbeat"] == {"interval": "10 s", "timeout": "5000 ms"}
    assert config["restart-strategy"] == {"type": "fixed-delay", "fixed-delay": {"attempts": 1000, "delay": "500 ms"}}
    assert not any("." in key for key in config), "no flat key beside a nested one"


def test_kafka_broker_is_a_single_kraft_node_fit_for_transactions(tmp_path: Path) -> None:
    props = dict(line.split("=", 1) for line in render_server_properties(9092, 9093, tmp_path, 2).splitlines())
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["offsets.topic.num.partitions"] == props["transaction.state.log.num.partitions"] == "4", \
        "not Kafka's 50 partitions per coordinator topic: there is one broker to spread them over"


def test_the_broker_runs_g1_unless_the_stacks_jvm_options_choose_a_collector() -> None:
    assert collector_flags("") == ["-XX:+UseG1GC"]
    assert collector_flags("-XX:TieredStopAtLevel=1") == ["-XX:+UseG1GC"]
    assert collector_flags("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC") == [], "the JVM refuses two collectors"
    assert collector_flags("-XX:+UseAdaptiveSizePolicyWithSystemGC") == ["-XX:+UseG1GC"], "a flag, not a collector"


def test_free_ports_are_distinct_and_free() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    assert not any(port_in_use(p) for p in ports)
    base = free_port_block(4)
    assert not any(port_in_use(p) for p in range(base, base + 4))


def test_cluster_ids_never_start_with_a_dash() -> None:
    """An id starting with '-' made the storage tool fail one stack start in 64."""
    draws = iter([b"\xf8" + bytes(15), b"\x00" * 16])  # the first encodes to '-A...'
    assert new_cluster_id(lambda: next(draws)) == "AAAAAAAAAAAAAAAAAAAAAA"
