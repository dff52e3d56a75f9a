"""What chronos exports for Prometheus and Grafana."""
