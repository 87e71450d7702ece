"""Models: the biLM backbone."""
