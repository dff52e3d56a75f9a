"""`chronos report`: the dashboards' views drawn as PNGs, from Prometheus or from the tuner's journal."""
