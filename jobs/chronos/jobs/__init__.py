"""chronos.jobs: the demo workload (job, event model, load generator, latency observer)."""
