"""Text to character ids: the ELMo character vocabulary and its ops."""
