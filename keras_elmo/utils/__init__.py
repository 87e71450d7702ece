"""Small utilities shared by the package."""
