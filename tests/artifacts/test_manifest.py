import json

import numpy as np
import pytest

from service.artifacts.manifest import ManifestError, read_manifest, verify_files, write_manifest
from tests.conftest import MODEL_STORE


def _folder(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    np.save(folder / "weights.npy", np.arange(6, dtype=np.float32).reshape(2, 3), allow_pickle=False)
    (folder / "vocab.json").write_text('["a", "b"]')
    return folder


def test_round_trip_lists_and_hashes_every_artifact(tmp_path):
    folder = _folder(tmp_path)
    manifest = write_manifest(folder, name="toy", version="1.2.3", kind="unreferenced", score_range=(1, 5),
                              card={"licence": "MIT"})
    assert set(manifest.files) == {"weights.npy", "vocab.json"}
    assert manifest.requires == ["context", "response"]
    assert manifest.score_range == (1.0, 5.0)
    verify_files(manifest)  # untouched: passes


def test_one_changed_byte_is_named(tmp_path):
    folder = _folder(tmp_path)
    manifest = write_manifest(folder, name="toy", version="1", kind="unreferenced")
    data = bytearray((folder / "weights.npy").read_bytes())
    data[-1] ^= 1
    (folder / "weights.npy").write_bytes(bytes(data))
    with pytest.raises(ManifestError, match="weights.npy.*altered"):
        verify_files(manifest)


def test_missing_file_is_named(tmp_path):
    folder = _folder(tmp_path)
    manifest = write_manifest(folder, name="toy", version="1", kind="unreferenced")
    (folder / "vocab.json").unlink()
    with pytest.raises(ManifestError, match="vocab.json is missing"):
        verify_files(manifest)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(format_version=99), "format_version"),
    (lambda m: m.update(kind="magic"), "kind"),
    (lambda m: m.update(name="other"), "folder"),
    (lambda m: m["files"].update({"model.pkl": {"sha256": "0" * 64}}), "not an allowed artifact"),
    (lambda m: m["files"].update({"../escape.json": {"sha256": "0" * 64}}), "plain name"),
    (lambda m: m.pop("version"), "lacks 'version'"),
    # HTTP went by the kind and bulk by `requires`: the same item was scored by one and refused by the other
    (lambda m: m.update(requires=["context", "response", "reference"]), "contradicts kind 'unreferenced'"),
    (lambda m: m.update(kind="referenced"), "contradicts kind 'referenced'"),
    (lambda m: m.update(requires=["turns"]), "contradicts"),
    (lambda m: m.update(requires=["context", "response", "response"]), "contradicts"),  # /models listed it twice
    (lambda m: m.update(card={"license": ""}), "card.license"),  # GET /models lists it: a string, not blank
    (lambda m: m.update(card={"license": "MIT", "commercial_use": "yes"}), "card.commercial_use"),
])
def test_bad_manifests_are_refused(tmp_path, change, message):
    folder = _folder(tmp_path)
    write_manifest(folder, name="toy", version="1", kind="unreferenced")
    raw = json.loads((folder / "manifest.json").read_text())
    change(raw)
    (folder / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match=message):
        read_manifest(folder)


def test_terms_not_stated_grant_no_commercial_use(tmp_path):
    folder = _folder(tmp_path)
    unstated = write_manifest(folder, name="toy", version="1", kind="unreferenced", card={"commercial_use": True})
    assert (unstated.license, unstated.commercial_use) == ("LicenseRef-unstated", False)
    stated = write_manifest(folder, name="toy", version="1", kind="unreferenced",
                            card={"license": "MIT", "commercial_use": True, "license_reason": "Ours."})
    assert (stated.license, stated.commercial_use) == ("MIT", True)


def test_every_committed_card_states_its_terms_as_spdx():
    """Each committed model and component states its terms: an SPDX expression (license-expression parses it;
    only LicenseRef- keys may be unknown to it), whether they allow commercial use, and why. Terms that hold a
    non-commercial, copyleft or unstated part never claim commercial use."""
    from license_expression import get_spdx_licensing

    licensing = get_spdx_licensing()
    for path in sorted(MODEL_STORE.glob("*/manifest.json")):
        card = read_manifest(path.parent).card
        assert isinstance(card.get("commercial_use"), bool) and card.get("license_reason"), path
        parsed = licensing.parse(card["license"])
        unknown = licensing.unknown_license_keys(parsed)
        assert all(key.startswith("LicenseRef-") for key in unknown), (path, unknown)
        keys = licensing.license_keys(parsed)
        if card["commercial_use"]:
            assert not [k for k in keys if "-NC" in k or k.startswith(("GPL", "LicenseRef-"))], (path, keys)


def test_not_json_is_refused(tmp_path):
    folder = _folder(tmp_path)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        read_manifest(folder)


def test_an_optional_file_is_vouched_for_but_may_be_absent(tmp_path):
    # minilm-l6's fp32 graph: hashed when built, listed in the committed manifest, absent in a clone.
    np.save(tmp_path / "weights.npy", np.ones(3))
    np.save(tmp_path / "big.npy", np.arange(5))
    write_manifest(tmp_path, name=tmp_path.name, version="1", kind="component", optional=("big.npy",))
    written = (tmp_path / "manifest.json").read_text()
    assert json.loads(written)["files"]["big.npy"]["optional"] is True
    built = read_manifest(tmp_path)
    assert "big.npy" in built.files and built.optional == ("big.npy",)
    verify_files(built)

    (tmp_path / "big.npy").unlink()
    absent = read_manifest(tmp_path)
    assert set(absent.files) == {"weights.npy"}
    verify_files(absent)
    # Rewriting the manifest where the file was never built keeps its entry: nothing changes.
    write_manifest(tmp_path, name=tmp_path.name, version="1", kind="component", optional=("big.npy",))
    assert (tmp_path / "manifest.json").read_text() == written

    np.save(tmp_path / "big.npy", np.arange(6))  # built again, differently: refused, not served
    with pytest.raises(ManifestError, match="big.npy has sha256"):
        verify_files(read_manifest(tmp_path))


def test_an_optional_file_never_built_cannot_be_vouched_for(tmp_path):
    np.save(tmp_path / "weights.npy", np.ones(3))
    with pytest.raises(ManifestError, match="optional big.npy is neither in the folder nor in its manifest"):
        write_manifest(tmp_path, name=tmp_path.name, version="1", kind="component", optional=("big.npy",))


def test_every_committed_manifest_loads_and_its_requires_agree_with_its_kind():
    from service.config import REPO_ROOT
    from service.artifacts.manifest import REQUIRED_BY_KIND

    folders = sorted(p.parent for p in (REPO_ROOT / "model_store").glob("*/manifest.json"))
    assert len(folders) >= 17
    for folder in folders:
        manifest = read_manifest(folder)
        assert sorted(manifest.requires) == sorted(REQUIRED_BY_KIND[manifest.kind]), folder.name


def test_a_manifest_is_read_as_a_request_body(tmp_path):
    """json_body's reader: a repeated key is refused (plain json.loads let the last one win) and a
    byte order mark is dropped."""
    folder = _folder(tmp_path)
    write_manifest(folder, name="toy", version="1", kind="unreferenced")
    text = (folder / "manifest.json").read_text()
    (folder / "manifest.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_manifest(folder).name == "toy"
    (folder / "manifest.json").write_text(text.replace('"version": "1",', '"version": "1", "version": "2",'))
    with pytest.raises(ManifestError, match="'version' appears twice"):
        read_manifest(folder)
