"""The local stack: a real Kafka broker and a real Flink session cluster, as child processes on
127.0.0.1, described by one state file in one stack directory."""
