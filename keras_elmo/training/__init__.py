"""Training: losses, strategies, the distributed loop, checkpoints."""
