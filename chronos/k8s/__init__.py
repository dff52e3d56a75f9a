"""Adapters to Kubernetes (Flink Kubernetes Operator deployments)."""
