"""CITATION.cff: valid Citation File Format 1.2.0, naming the version pyproject.toml builds, which is the
one the commands print (service/version.py).

cffconvert 2.0.0 (the validator the format's authors publish) needs jsonschema<4 and this environment
holds jsonschema 4 (openapi-spec-validator's and kubernetes-validate's), so it is not a dependency here;
`cffconvert --validate` passes in a virtual environment of its own (docs/citing.md). This test checks
the same file with jsonschema against the CFF 1.2.0 rules the file uses: the required keys and the
forms of the optional ones it holds."""
from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest
import yaml
from setuptools.config.pyprojecttoml import read_configuration

from service.version import VERSION
from tests.conftest import REPO

PERSON_OR_ENTITY = {"type": "object", "minProperties": 1, "properties": {
    "name": {"type": "string", "minLength": 1}, "family-names": {"type": "string", "minLength": 1},
    "given-names": {"type": "string", "minLength": 1}, "orcid": {"type": "string", "pattern": r"^https://orcid\.org/"}}}
CFF_1_2_0 = {
    "type": "object",
    "required": ["cff-version", "message", "title", "authors"],
    "properties": {
        "cff-version": {"const": "1.2.0"},
        "message": {"type": "string", "minLength": 1},
        "title": {"type": "string", "minLength": 1},
        "type": {"enum": ["software", "dataset"]},
        "authors": {"type": "array", "minItems": 1, "items": PERSON_OR_ENTITY},
        "version": {"type": "string", "minLength": 1},
        "date-released": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "license": {"type": "string", "pattern": r"^[A-Za-z0-9.+-]+$"},
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "abstract": {"type": "string", "minLength": 1},
    },
}


def test_citation_file_is_cff_1_2_0_for_the_version_built() -> None:
    # CFF's dates are strings: the YAML is read with dates left as text, as cffconvert reads them.
    text = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    citation = yaml.load(text, Loader=yaml.BaseLoader)
    jsonschema.validate(citation, CFF_1_2_0)
    project = read_configuration(REPO / "pyproject.toml", expand=True)["project"]  # its dynamic fields read
    assert citation["version"] == project["version"] == VERSION and citation["license"] == project["license"]


def test_a_source_checkout_prints_the_version_a_build_gets() -> None:
    """No installed metadata is read: `python -m service.cli --version` in a checkout says what pip would build."""
    done = subprocess.run([sys.executable, "-m", "service.cli", "--version"], capture_output=True, text=True,
                          cwd=REPO, check=True)
    assert done.stdout == f"dialscore {read_configuration(REPO / 'pyproject.toml', expand=True)['project']['version']}\n"


def test_the_schema_check_can_fail() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"cff-version": "1.2.0", "message": "m", "title": "t", "authors": []}, CFF_1_2_0)


def test_the_images_the_manifests_and_the_build_comments_name_are_this_version() -> None:
    """docs/deploy.md builds and pushes the image tagged with the version; every overlay must pull that tag."""
    import re

    tags = {path.relative_to(REPO).as_posix(): re.findall(r"newTag: (\S+)", path.read_text(encoding="utf-8"))
            for path in (REPO / "k8s").rglob("kustomization.yaml")}
    tags = {path: found for path, found in tags.items() if found}
    assert tags and all(found == [VERSION] for found in tags.values()), tags
    for dockerfile in ("Dockerfile", "Dockerfile.gpu"):
        named = re.findall(r"dialscore(?:-gpu)?:(\d{4}\.\d+\.\d+)", (REPO / dockerfile).read_text(encoding="utf-8"))
        assert named == [VERSION], (dockerfile, named)
    assert set(re.findall(r"dialscore(?:-gpu)?:(\d{4}\.\d+\.\d+)", (REPO / "docs/deploy.md").read_text())) == {VERSION}
