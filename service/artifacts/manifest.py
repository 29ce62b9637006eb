"""The model-store manifest: one format read by the service and written by training.

Kept free of Flask and torch so that `training/` can import it to write manifests that the
service is guaranteed to read the same way.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.json_body import BadText, JsonTextError, NotAnObject, TooDeep, parse_object

FORMAT_VERSION = 1
KINDS = ("referenced", "unreferenced", "dialogue", "component")
REQUIRED_BY_KIND = {
    "referenced": ["context", "response", "reference"],
    "unreferenced": ["context", "response"],
    "dialogue": ["turns"],
    "component": [],
}
# Suffixes the service will open; everything else in a manifest is refused (nothing is unpickled).
ALLOWED_SUFFIXES = (".onnx", ".npy", ".json")


class ManifestError(Exception):
    """A manifest or one of its files is unusable; the message names the file and the reason.

    The message is for the operator (it may hold paths and hashes); `public` is what a client may
    be told (/models, /readyz, a 404), built only from plain names.
    """

    def __init__(self, message: str, public: str = "manifest invalid") -> None:
        super().__init__(message)
        self.public = public


# The licence of a model, or of data it was trained on, whose terms nobody stated (GET /models, docs/api.md).
UNSTATED_LICENSE = "LicenseRef-unstated"


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    kind: str
    scorer: str
    requires: list[str]
    score_range: tuple[float, float]
    files: dict[str, dict[str, Any]]
    folder: Path
    onnx: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokenizer: str | None = None
    uses: list[str] = field(default_factory=list)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    card: dict[str, Any] = field(default_factory=dict)
    # Files the manifest vouches for that a folder may lack (minilm-l6's 90 MB fp32 graph, built by
    # `make encoder-fp32` for GPU images): absent, they are left out of `files`; present, verified.
    optional: tuple[str, ...] = ()
    # A component built on the serving machine from installed packages, never committed (mpnet-base):
    # {"command": "make encoder-mpnet", "files": [optional files, at least one of which it serves]}.
    build: dict[str, Any] = field(default_factory=dict)
    # The keys of the judged items a learned model was fitted to (service/store/trained_items.py): {"file",
    # "sets", "split", "items", "keys", "key"}; empty for a model fitted to none.
    trained_items: dict[str, Any] = field(default_factory=dict)

    @property
    def built(self) -> bool:
        """False where the manifest names a `build` and none of its files is in the folder: the
        component (and every model on it) is then left out of service, not failed (ModelStore)."""
        return not self.build or any(name in self.files for name in self.build["files"])

    def path(self, filename: str) -> Path:
        if filename not in self.files:
            raise ManifestError(f"{self.name}: {filename} is not listed in manifest.json", "manifest invalid: files")
        return self.folder / filename

    @property
    def license(self) -> str:
        """The card's SPDX expression (or LicenseRef-) of the terms of what the model was trained on and built
        from; UNSTATED_LICENSE where the card states none."""
        return self.card.get("license") or UNSTATED_LICENSE

    @property
    def commercial_use(self) -> bool:
        """Whether those terms allow commercial use: only where the card says so; terms not stated grant nothing."""
        return self.card.get("commercial_use") is True and "license" in self.card

    @property
    def sha256(self) -> str:
        """One hash for the whole artifact: the manifest's own bytes (which hold every file's hash)."""
        return sha256_file(self.folder / "manifest.json")


def encoder_drift(manifest: Manifest, encoder: Manifest) -> dict[str, str | None]:
    """Files of `encoder` whose sha256 is not the one `manifest` recorded when it was trained or
    fitted on them (its config.encoder_files: {file name: sha256}), mapped to the store's hash (None
    where the file is gone); empty when it records none or all match. A model decides what a change
    means: mh logs it, the hred-encoder heads are not served on another encoder (service/scorers/heads.py)."""
    fitted = manifest.config.get("encoder_files") or {}
    if not isinstance(fitted, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in fitted.items()):
        raise ManifestError(f"{manifest.name}: config.encoder_files must map file names to sha256 strings",
                            "manifest invalid: encoder_files")
    served = {name: entry.get("sha256") for name, entry in encoder.files.items()}
    return {name: served.get(name) for name, digest in sorted(fitted.items()) if served.get(name) != digest}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> Manifest:
    """Parse and check a manifest's structure (not the file hashes: see verify_files). Checked step by
    step, not by a schema: each failure carries two messages, the operator's and the public one that
    /readyz and GET /models may show (ManifestError.public), and the first one ends the read."""
    folder = Path(folder)
    path = folder / "manifest.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ManifestError(f"{folder.name}: manifest.json is missing", "manifest missing") from exc
    except OSError as exc:  # unreadable (permissions, a volume's I/O error): this model is out, not the store
        raise ManifestError(f"{folder.name}: manifest.json cannot be read ({exc})", "manifest unreadable") from exc
    raw = _parse(folder, data)
    if raw.get("format_version") != FORMAT_VERSION:
        raise ManifestError(
            f"{folder.name}: format_version {raw.get('format_version')!r} is not {FORMAT_VERSION}",
            "manifest invalid: format_version")
    for key in ("name", "version", "kind", "files"):
        if key not in raw:
            raise ManifestError(f"{folder.name}: manifest.json lacks {key!r}", f"manifest invalid: {key}")
    if raw["name"] != folder.name:
        raise ManifestError(f"{folder.name}: manifest names {raw['name']!r}, folder is {folder.name!r}",
                            "manifest invalid: name")
    if raw["kind"] not in KINDS:
        raise ManifestError(f"{folder.name}: kind {raw['kind']!r} is not one of {KINDS}", "manifest invalid: kind")
    if not isinstance(raw["files"], dict):
        raise ManifestError(f"{folder.name}: files must be an object of file name to entry", "manifest invalid: files")
    for filename, entry in raw["files"].items():
        if "/" in filename or "\\" in filename or filename.startswith("."):
            raise ManifestError(f"{folder.name}: file name {filename!r} must be a plain name", "manifest invalid: files")
        if not filename.endswith(ALLOWED_SUFFIXES):
            raise ManifestError(f"{folder.name}: {filename} is not an allowed artifact type", "manifest invalid: files")
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise ManifestError(f"{folder.name}: {filename} has no sha256", "manifest invalid: files")
        if not isinstance(entry.get("optional", False), bool):
            raise ManifestError(f"{folder.name}: {filename}'s optional must be true or false", "manifest invalid: files")
    try:
        return _build(folder, raw)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        # A field of the wrong shape (`"score_range": [1]`, `"uses": 3`) must not raise out of the
        # loading thread, which would leave every model of the pod "still loading".
        raise ManifestError(f"{folder.name}: manifest.json has a field of the wrong type or shape "
                            f"({type(exc).__name__}: {exc})", "manifest invalid: a field's type") from exc


MAX_DEPTH = 32  # our manifests need 6


def _parse(folder: Path, data: bytes) -> dict[str, Any]:
    """The manifest's object, read as request bodies are (service/json_body.py: UTF-8, a BOM dropped, each
    key once, so a repeated key cannot pick which value counts). A card nested deep enough to load but
    not to serialise made /models a 500; a lone surrogate would break it the same way."""
    try:
        return parse_object(data, max_depth=MAX_DEPTH)
    except NotAnObject:
        raise ManifestError(f"{folder.name}: manifest.json must hold an object",
                            "manifest invalid: not an object") from None
    except (TooDeep, BadText) as exc:
        where = f" at {exc.path}" if exc.path else ""
        raise ManifestError(f"{folder.name}: manifest.json{where}: {exc}", "manifest invalid: nesting"
                            if isinstance(exc, TooDeep) else "manifest invalid: text") from None
    except JsonTextError as exc:  # NotUtf8, NotJson, RepeatedKey
        raise ManifestError(f"{folder.name}: manifest.json is not valid JSON ({exc})",
                            "manifest invalid: not JSON") from None


def _build(folder: Path, raw: dict[str, Any]) -> Manifest:
    optional = tuple(name for name, entry in raw["files"].items() if entry.get("optional"))
    absent = {name for name in optional if not (folder / name).is_file()}
    score_range = raw.get("score_range") or [0.0, 1.0]
    if len(score_range) != 2:
        raise ValueError(f"score_range must be [low, high], not {score_range!r}")
    for key, kind in (("uses", list), ("requires", list), ("options", dict), ("config", dict), ("card", dict),
                      ("onnx", dict), ("trained_items", dict)):
        if key in raw and not isinstance(raw[key], kind):
            raise TypeError(f"{key} must be a JSON {'array' if kind is list else 'object'}")
    for key in ("uses", "requires"):  # names: `uses` entries are looked up as store folders
        if not all(isinstance(entry, str) for entry in raw.get(key, [])):
            raise TypeError(f"{key} must hold names (strings)")
    _check_requires(folder, raw)
    _check_terms(raw.get("card", {}))
    build = _check_build(folder, raw, optional)
    return Manifest(
        name=raw["name"],
        version=str(raw["version"]),
        kind=raw["kind"],
        scorer=raw.get("scorer", raw["name"]),
        requires=list(raw.get("requires", REQUIRED_BY_KIND[raw["kind"]])),
        score_range=(float(score_range[0]), float(score_range[1])),
        files={name: entry for name, entry in raw["files"].items() if name not in absent},
        folder=folder,
        onnx={name: entry for name, entry in dict(raw.get("onnx", {})).items() if name not in absent},
        tokenizer=raw.get("tokenizer"),
        uses=list(raw.get("uses", [])),
        options=dict(raw.get("options", {})),
        config=dict(raw.get("config", {})),
        card=dict(raw.get("card", {})),
        optional=optional,
        build=build,
        trained_items=dict(raw.get("trained_items", {})),
    )


def _check_terms(card: dict[str, Any]) -> None:
    """The card's terms, where stated, as GET /models lists them: a non-empty string and a boolean."""
    if "license" in card and not (isinstance(card["license"], str) and card["license"].strip()):
        raise TypeError("card.license must be a non-empty string (an SPDX expression or a LicenseRef-)")
    if "commercial_use" in card and not isinstance(card["commercial_use"], bool):
        raise TypeError("card.commercial_use must be true or false")


def _check_build(folder: Path, raw: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    """The `build` entry, checked: a command to name and files the manifest lists as optional."""
    build = raw.get("build")
    if build is None:
        return {}
    if (not isinstance(build, dict) or not isinstance(build.get("command"), str) or not build.get("files")
            or not isinstance(build["files"], list) or not set(build["files"]) <= set(optional)):
        raise ManifestError(f"{folder.name}: build must be {{\"command\": ..., \"files\": [optional files]}}",
                            "manifest invalid: build")
    return {"command": build["command"], "files": list(build["files"])}


def _check_requires(folder: Path, raw: dict[str, Any]) -> None:
    """ManifestError when `requires` names other fields than the kind's: GET /models lists `requires`
    while the scorers go by the kind (Scorer.reads_reference), so the two must not disagree."""
    wanted = REQUIRED_BY_KIND[raw["kind"]]
    if "requires" in raw and sorted(raw["requires"]) != sorted(wanted):  # each field once, as /models lists it
        raise ManifestError(f"{folder.name}: requires {raw['requires']!r} contradicts kind {raw['kind']!r}, "
                            f"which reads {wanted!r}", "manifest invalid: requires")


def verify_files(manifest: Manifest) -> None:
    """Check that every listed file exists and has the recorded hash; raise naming the first bad one."""
    for filename, entry in manifest.files.items():
        path = manifest.folder / filename
        if not path.is_file():
            raise ManifestError(f"{manifest.name}: {filename} is missing", f"file missing: {filename}")
        actual = sha256_file(path)
        if actual != entry["sha256"]:
            raise ManifestError(
                f"{manifest.name}: {filename} has sha256 {actual[:12]}..., manifest says "
                f"{entry['sha256'][:12]}... (altered or corrupt)", f"hash mismatch in {filename}")


def onnx_signature(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Input and output names, types and shapes of an ONNX graph, as recorded in manifests."""
    import onnxruntime as ort  # local: manifest writing in training should not need a session otherwise

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def describe(nodes: list[Any]) -> list[dict[str, Any]]:
        return [{"name": n.name, "type": n.type, "shape": list(n.shape)} for n in nodes]

    return {"inputs": describe(session.get_inputs()), "outputs": describe(session.get_outputs())}


def write_manifest(
    folder: Path,
    *,
    name: str,
    version: str,
    kind: str,
    scorer: str | None = None,
    score_range: tuple[float, float] = (0.0, 1.0),
    requires: list[str] | None = None,
    tokenizer: str | None = None,
    uses: list[str] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
    card: dict[str, Any] | None = None,
    optional: tuple[str, ...] = (),
    build: dict[str, Any] | None = None,
    trained_items: dict[str, Any] | None = None,
) -> Manifest:
    """Hash every artifact in `folder` and write its manifest.json; returns the manifest read back.

    Every file in the folder with an allowed suffix is listed, so nothing can ship unhashed. A file
    named in `optional` is marked so (the service serves without it); when it is not in the folder,
    its entry is kept from the manifest already there, so rewriting a card where the file was never
    built leaves the manifest as it was.
    """
    folder = Path(folder)
    if kind not in KINDS:
        raise ManifestError(f"kind {kind!r} is not one of {KINDS}", "manifest invalid: kind")
    old_path = folder / "manifest.json"
    old = json.loads(old_path.read_text(encoding="utf-8")) if optional and old_path.is_file() else {}
    files: dict[str, dict[str, Any]] = {}
    onnx: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.iterdir()):
        if path.name == "manifest.json" or not path.is_file() or not path.name.endswith(ALLOWED_SUFFIXES):
            continue
        files[path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
        if path.suffix == ".onnx":
            onnx[path.name] = onnx_signature(path)
    for filename in optional:
        if filename not in files:
            if filename not in old.get("files", {}):
                raise ManifestError(f"{folder.name}: optional {filename} is neither in the folder nor in its "
                                    "manifest: build it once to record its hash", "manifest invalid: files")
            files[filename] = old["files"][filename]
            if filename in old.get("onnx", {}):
                onnx[filename] = old["onnx"][filename]
        files[filename] = {**files[filename], "optional": True}
    files = dict(sorted(files.items()))
    onnx = dict(sorted(onnx.items()))
    manifest = {
        "format_version": FORMAT_VERSION,
        "name": name,
        "version": version,
        "kind": kind,
        "scorer": scorer or name,
        "requires": requires if requires is not None else REQUIRED_BY_KIND[kind],
        "score_range": [float(score_range[0]), float(score_range[1])],
        "files": files,
        "onnx": onnx,
        "tokenizer": tokenizer,
        "uses": uses or [],
        "options": options or {},
        "config": config or {},
        "card": card or {},
    }
    if build:
        manifest["build"] = build
    if trained_items:
        manifest["trained_items"] = trained_items
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return read_manifest(folder)


def update_card(folder: Path, **changes: Any) -> Manifest:
    """Rewrite a manifest with some card fields changed, everything else as it was (files re-hashed):
    the one way training steps that measure a model after export add their figures to its card."""
    manifest = read_manifest(folder)
    return write_manifest(folder, name=manifest.name, version=manifest.version, kind=manifest.kind,
                          scorer=manifest.scorer, score_range=manifest.score_range, requires=manifest.requires,
                          tokenizer=manifest.tokenizer, uses=manifest.uses, options=manifest.options,
                          config=manifest.config, card={**manifest.card, **changes}, optional=manifest.optional,
                          build=manifest.build or None, trained_items=manifest.trained_items or None)
