"""Adapters to Apache Flink: the REST client, job submission, and the distribution in the wheel."""
