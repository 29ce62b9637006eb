"""The client's version, read by the build (pyproject.toml) without importing the package."""
__version__ = "2026.11.1"
