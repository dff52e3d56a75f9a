"""chronos: keeps a Flink job's checkpoint interval right for its QoS targets as the load changes."""

__version__ = "0.1.0"
