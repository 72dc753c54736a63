"""The client's version: the one place it is written. ``pyproject.toml`` reads it (setuptools' dynamic
``attr``) and the ``User-Agent`` carries it; tests/clients/test_sdk_versions.py fails if any copy differs."""

__version__ = "0.1.0"
