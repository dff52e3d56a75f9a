"""chronos.chaos: fault injection at chosen moments and recovery measurement."""
