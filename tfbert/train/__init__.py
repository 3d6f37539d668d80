"""Training: optimizers and schedules, distribution strategies, callbacks."""
