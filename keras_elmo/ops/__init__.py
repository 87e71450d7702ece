"""Ops: differentiable functions below the layers (the LSTM time loop)."""
