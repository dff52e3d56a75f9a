"""chronos.optimizer: models, forecasts, baselines and the pure evaluate/decide core."""
