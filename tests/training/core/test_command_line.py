"""A generated page's command names no folder of the machine that wrote it."""
from training.core.command_line import REPO, command_line


def test_paths_become_relative_or_a_variable_and_the_rest_is_quoted():
    argv = ["--vectors", "/somewhere/else/minilm-cache", str(REPO / "model_store"), "--out", "docs/x.md", "a b"]
    assert command_line("python -m training degenerate", argv) == (
        "python -m training degenerate --vectors $DIR/minilm-cache model_store --out docs/x.md 'a b'")
