"""Shared pieces several models use (a GloVe table, a sentence encoder), loaded once per worker."""
from __future__ import annotations

from typing import Any

from service.artifacts.manifest import Manifest
from service.artifacts.runtime import providers_of
from service.components.cache import EncodeCache


class Component:
    """A store folder of kind `component`; models name it in their manifest's `uses`."""

    def __init__(self, manifest: Manifest, runtime: Any) -> None:
        self.manifest = manifest
        self.runtime = runtime
        self._load()

    @property
    def name(self) -> str:
        return self.manifest.name

    def _load(self) -> None:
        """Open arrays and sessions from self.manifest."""

    def sessions(self) -> list[Any]:
        return []

    def describe(self) -> dict[str, Any]:
        """What `/models` says of it: scores depend on which artifact runs where (docs/gpu.md)."""
        return {"name": self.name, "version": self.manifest.version, "providers": providers_of(self.sessions()),
                **self.served_files()}

    def served_files(self) -> dict[str, Any]:
        """Subclasses with a choice of artifact say which one they loaded."""
        return {}

    def work(self, texts: list[str], cache: EncodeCache | None = None) -> int | None:
        """The units of work encoding these distinct texts costs, for the per-request limit
        (service/api/limits.py check_encoder_work); None where the component is cheap enough not to meter."""
        return None

