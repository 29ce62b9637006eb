"""What a reply is written in (service/components/language.py): the script test, the identifier's threshold, and
no false alarm on real English chat turns."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.components.language import foreign_script, read
from service.config import Settings

CONFIDENCE = Settings().not_english_confidence


@pytest.mark.parametrize(("text", "script"), [("прекрасно!", "Cyrillic"), ("我觉得很好", "Han"), ("ok 好的好的", "Han"),
                                              ("Καλημέρα", "Greek"), ("great!", None), ("café 好", None)])
def test_the_script_most_letters_are_in(text, script):
    assert foreign_script(text) == script


@pytest.mark.parametrize(("text", "code"), [
    ("прекрасно!", "not_english"), ("我周末去爬山了。", "not_english"), ("Je ne sais pas ce que tu veux dire.", "not_english"),
    ("😀😀", "no_words"), ("?!...", "no_words"), ("", "empty"), (" \u200b\n", "empty"),
    ("ok.", "english"), ("Sure.", "english"), ("no way!", "english"), ("lol", "english"), ("Uh-huh.", "english"),
    ("Hello ! How do I get more amenities ?", "english"), ("I'll have the steak, medium rare.", "english"),
])
def test_each_reading(text, code):
    assert read(text, CONFIDENCE).code == code


def test_no_dailydialog_turn_is_taken_for_another_language(data_dir: Path):
    """Real English chat turns, short ones included, draw no `not_english` at the default confidence."""
    path = data_dir / "corpora" / "dailydialog" / "validation" / "dialogues_validation.txt"
    turns = [t.strip() for line in path.read_text(encoding="utf-8").splitlines()[:400]
             for t in line.split("__eou__") if t.strip()]
    assert len(turns) > 2500
    assert [t for t in turns if read(t, CONFIDENCE).code == "not_english"] == []


def test_the_identifier_loads_without_a_temporary_folder(monkeypatch, tmp_path):
    """py3langid's own loader writes its 65 MB decompressed model to a temporary file, which a pod's 64 MiB
    /tmp cannot hold (tests/server/test_readonly_root.py); this loader needs none, and gives its answers."""
    import tempfile

    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from service.components.language import _load_in_memory

    expected = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True).classify("прекрасно, спасибо!")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(OSError):
        LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    assert _load_in_memory().classify("прекрасно, спасибо!") == expected
