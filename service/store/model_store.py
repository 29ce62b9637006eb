"""The model store: reads model_store/*/manifest.json, verifies every file, builds scorers.

A model whose manifest or files are bad, or whose components are, is not served; the store
keeps the reason so that /readyz can name it and the log says which file and why. Loading
happens once per worker (after gunicorn's fork), optionally in a background thread so that
liveness answers while models load.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.artifacts import batch_bounds
from service.artifacts.manifest import Manifest, ManifestError, read_manifest, verify_files
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.components import language
from service.components.base import Component
from service.errors import NotReady, UnknownModel
from service.scorers.base import Scorer
from service.store import trained_items
from service.store.readiness import mark_ready
from service.store.trained_items import TrainedItems
from service.store.registry import component_class, scorer_class

if TYPE_CHECKING:
    from flask import Flask

log = logging.getLogger(__name__)
# Seconds a 503 asks a client to wait (`Retry-After`) while the models load, which takes seconds; a
# model that failed to load gets no Retry-After, since waiting will not load it.
LOADING_RETRY_AFTER_S = 1
STORE_KEY = "model_store"  # the failures' key for the store as a whole (not a model's name)


class ModelStore:
    def __init__(self, root: Path, runtime: Runtime | None = None, models: tuple[str, ...] = ()) -> None:
        self.root = Path(root)
        self.runtime = runtime or Runtime()
        self.wanted = tuple(models)
        self.scorers: dict[str, Scorer] = {}
        self.trained: dict[str, TrainedItems] = {}  # a learned model's training keys, where it ships them
        self.components: dict[str, Component] = {}
        self.failures: dict[str, str] = {}  # the operator's reason (paths, hashes): logged
        self.public_failures: dict[str, str] = {}  # what clients are told (ManifestError.public)
        self.failed_components: set[str] = set()  # failures that are not models: components, the store itself
        # Models left out because a component they use is not built on this machine (a manifest's
        # `build`, e.g. mpnet-base): not failures, so the pod stays ready; /models says why.
        self.not_built: dict[str, str] = {}
        self.loaded = False
        self.load_seconds: float | None = None
        self._lock = threading.Lock()

    # --- state read by the probes ------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.loaded and not self.failures and bool(self.scorers)

    def get(self, name: str) -> Scorer | None:
        """The served model of that name, or None (not served, or not yet loaded)."""
        return self.scorers.get(name)

    def served(self, name: str) -> Scorer:
        """The served model of that name; NotReady (503) while loading or for a model that failed to
        load, UnknownModel (404) for a name this server does not serve. `loaded` is read first: the
        store fills its scorers before it says it has loaded, so a name missing then is missing for good."""
        if not self.loaded:
            raise NotReady("Models are still loading; retry shortly.", {"loading": True}, LOADING_RETRY_AFTER_S)
        scorer = self.scorers.get(name)
        if scorer is not None:
            return scorer
        if STORE_KEY in self.failures:  # nothing was read: every model is out, whatever its name
            raise NotReady("The model store failed to load on this server; the service log has the reason.",
                           {"model": name, "reason": self.public_failures[STORE_KEY]})
        if name in self.not_built:  # permanent on this server, unlike a failure: 404 with the reason
            raise UnknownModel(f"Model {name!r} is not served on this server: it {self.not_built[name]}.",
                               {"model": name, "not_built": self.not_built[name]})
        if name in self.public_failures and name not in self.failed_components:
            # 503, not 404: the name is right and the fault is the server's (API.md: `not_ready`); a load
            # balancer retries a 503 on another pod, where the model may have loaded
            raise NotReady(f"Model {name!r} failed to load on this server and is not served; the service log "
                           "has the reason.", {"model": name, "reason": self.public_failures[name]})
        raise UnknownModel(f"No model named {name!r}; GET /models lists the served ones.",
                           {"model": name, "served": sorted(self.scorers)})

    # --- loading -------------------------------------------------------------------------------
    def load(self) -> bool:
        """Load every configured model; returns readiness. Safe to call once per process."""
        with self._lock:
            started = time.perf_counter()
            manifests = self._read_manifests()
            names = [n for n, m in manifests.items() if m.kind != "component" and (not self.wanted or n in self.wanted)]
            needed = {c for n in names for c in manifests[n].uses}  # only what the served models use
            unbuilt = {m.name: m.build["command"] for m in manifests.values()
                       if m.kind == "component" and m.name in needed and not m.built}
            for manifest in (m for m in manifests.values() if m.kind == "component" and m.name in needed):
                if manifest.name not in unbuilt:
                    self._load_component(manifest)
            for name in self.wanted:
                if name in manifests and manifests[name].kind == "component":
                    self._fail(name, f"{name} is a component that models share, not a model: DIALSCORE_MODELS "
                               "names models", "a component, not a model", level=logging.WARNING, component=True)
                if name not in manifests and name not in self.failures:
                    # a configured name with no folder: whoever asked for it reports it as an error
                    # (bulk's set-up error, /readyz); the store warns
                    self._fail(name, f"{name}: no folder {self.root / name} with a manifest.json",
                               "model folder missing", level=logging.WARNING)
            for name in names:
                missing = [c for c in manifests[name].uses if c in unbuilt]
                if missing:
                    self._leave_out(name, missing, unbuilt)
                else:
                    self._load_model(manifests[name])
            if not self.scorers and not self.failures:  # an empty store (or DIALSCORE_MODELS= on one) is not ready
                self._fail(STORE_KEY, f"model store {self.root} holds no model to serve", "no model to serve")
            if self.scorers and not self.failures:
                mark_ready()  # before `loaded`: a /readyz that sees this store loaded finds the marker
            self.loaded = True
            self.load_seconds = time.perf_counter() - started
            log.info("model store %s: %d models served, %d failed in %.1fs", self.root, len(self.scorers),
                     len(self.failures), self.load_seconds)
            return self.ready

    def _read_manifests(self) -> dict[str, Manifest]:
        """The manifests the configured models need: with DIALSCORE_MODELS, those models' and their
        components' only, so a broken model left out of the list cannot hold the pod unready; without
        it, every folder's. A folder without manifest.json that holds no files, or a volume's
        lost+found, is skipped with a warning; one holding files is a model whose manifest is missing."""
        manifests: dict[str, Manifest] = {}
        try:
            if not self.root.is_dir():
                self._fail(STORE_KEY, f"model store folder {self.root} does not exist", "model store folder missing")
                return manifests
            folders = sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        except OSError as exc:
            self._fail(STORE_KEY, f"model store folder {self.root} cannot be read ({exc})", "model store unreadable")
            return manifests
        pending = list(self.wanted or folders)
        while pending:
            name = pending.pop(0)
            if name in manifests or name in self.failures or name not in folders:
                continue  # a wanted name with no folder is reported by load()
            folder = self.root / name
            if name == STORE_KEY:  # the failures' own key for the store: a model cannot have that name
                self._fail(f"{STORE_KEY}/", f"{folder}: a model folder cannot be named {STORE_KEY}",
                           "folder name reserved", level=logging.WARNING, component=True)
                continue
            if not self.wanted and not os.path.lexists(folder / "manifest.json") and _not_a_model(folder):
                log.warning("%s is empty or lost+found: not a model, skipped", folder)
                continue
            try:
                manifests[name] = read_manifest(folder)
            except ManifestError as exc:
                self._fail(name, str(exc), exc.public)
                continue
            pending.extend(c for c in manifests[name].uses if c not in manifests)  # names: read_manifest checks
        return manifests

    def _load_component(self, manifest: Manifest) -> None:
        try:
            verify_files(manifest)
            self.components[manifest.name] = component_class(manifest.scorer)(manifest, self.runtime)
        except Exception as exc:  # noqa: BLE001 - any failure takes the component out, with its reason
            self._fail(manifest.name, _reason(exc), _public(exc), component=True, exc=exc)

    def _load_model(self, manifest: Manifest) -> None:
        name = manifest.name
        try:
            verify_files(manifest)
            missing = [c for c in manifest.uses if c not in self.components]
            if missing:
                why = "; ".join(self.failures.get(c, f"{c}: not in the store") for c in missing)
                raise ManifestError(f"{name}: needs component(s) {', '.join(missing)} which did not load ({why})",
                                    f"component not loaded: {', '.join(missing)}" if all(map(_PLAIN.fullmatch, missing))
                                    else "failed to load; see the service log")
            components = {c: self.components[c] for c in manifest.uses}
            scorer = scorer_class(manifest.scorer)(manifest, components, self.runtime)
            scorer.warm_up()
            keys = trained_items.of_manifest(manifest)
            if keys is not None:
                self.trained[name] = keys
            self.scorers[name] = scorer
            log.info("loaded %s %s (%s) on %s", name, manifest.version, manifest.kind, scorer.providers())
        except Exception as exc:  # noqa: BLE001
            self._fail(name, _reason(exc), _public(exc), exc=exc)

    def _leave_out(self, name: str, components: list[str], unbuilt: dict[str, str]) -> None:
        """A model on a component not built here: left out of service, or a failure where DIALSCORE_MODELS
        names it (the operator asked for it; the pod must not report ready without it)."""
        why = "needs " + "; ".join(f"{c}, which is not built on this server ({unbuilt[c]})" for c in components)
        if name in self.wanted:
            self._fail(name, f"{name}: {why}", f"component not built: {', '.join(components)}")
        else:
            self.not_built[name] = why
            log.info("model %s is left out: %s", name, why)

    def _fail(self, name: str, reason: str, public: str, component: bool = False, level: int = logging.ERROR,
              exc: Exception | None = None) -> None:
        """Record a failure and log it; `exc`, unless a ManifestError (a bad store, said in full by its
        message), is logged with its traceback, which a failure from a bug needs to be traced."""
        self.failures[name] = reason
        self.public_failures[name] = public
        if component or name == STORE_KEY:
            self.failed_components.add(name)
        log.log(level, "%s %s is not served: %s (clients are told: %s)", "component" if component else "model",
                name, reason, public, exc_info=None if exc is None or isinstance(exc, ManifestError) else exc)

    def fail_whole(self, exc: Exception) -> None:
        """The load itself raised: the store serves nothing, says why, and is done loading (never "still
        loading" for ever)."""
        self._fail(STORE_KEY, _reason(exc), _public(exc))
        self.loaded = True

    def reference_free(self) -> list[str]:
        """The served models that read no reference (kind `unreferenced`), by name."""
        return sorted(name for name, scorer in self.scorers.items() if scorer.kind == "unreferenced")

    def with_reference_free_part(self) -> list[str]:
        """The served referenced models that score their reference-free part alone on request
        (`options.reference_free`), by name."""
        return sorted(name for name, scorer in self.scorers.items() if scorer.has_reference_free_part)

    # --- description for /models ---------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        models = []
        for name in sorted(self.scorers):
            scorer = self.scorers[name]
            m = scorer.manifest
            components = [self.components[c].describe() for c in m.uses if c in self.components]
            bit_exact = scorer.bit_exact_across_batches()
            models.append({
                "name": name,
                "version": m.version,
                "kind": m.kind,
                "requires": list(m.requires),
                "score_range": [m.score_range[0], m.score_range[1]],
                "sha256": m.sha256,
                "license": m.license,
                "commercial_use": m.commercial_use,
                "providers": scorer.providers(),
                "bit_exact_across_batches": bit_exact,
                "batch_bound": batch_bounds.bound(name, bit_exact, components),
                "options": scorer.option_spec,
                "uses": list(m.uses),
                "components": components,
                "card": m.card,
                "trained_items": ({"keys": int(self.trained[name].hashes.size),
                                   **{key: m.trained_items[key] for key in ("unit", "split", "sets", "pairs")
                                      if key in m.trained_items}} if name in self.trained else None),
            })
        return models


def _not_a_model(folder: Path) -> bool:
    """A folder to pass over without a manifest: a volume's lost+found, or an empty one. A folder
    holding anything (a model whose manifest went missing) is a failed model, not nothing."""
    try:
        return folder.name == "lost+found" or not any(folder.iterdir())
    except OSError:
        return folder.name == "lost+found"


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, ManifestError) else f"{type(exc).__name__}: {exc}"


_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")  # a name a client may see (manifest `uses` entries are not checked)


def _public(exc: Exception) -> str:
    """A load failure as clients see it: ManifestError's public reason, else only the exception's type
    (an ONNX Runtime message holds the model's path)."""
    return exc.public if isinstance(exc, ManifestError) else f"load error ({type(exc).__name__}); see the service log"


def init_store(app: Flask, background: bool) -> ModelStore:
    """Attach a ModelStore to the app (flaskr-style init_app) and load it, in a thread if `background`."""
    settings = app.config["SETTINGS"]
    runtime = Runtime(RuntimeSettings.from_settings(settings))
    store = ModelStore(settings.model_store, runtime, settings.models)
    app.extensions["dialscore.store"] = store

    def load() -> None:
        language.preload()  # the `not_english` warnings' identifier, before the first request needs it
        try:
            store.load()
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the worker "still loading" for ever
            log.exception("loading the model store failed")
            store.fail_whole(exc)

    if background:
        threading.Thread(target=load, name="model-store-load", daemon=True).start()
    else:
        load()
    return store
