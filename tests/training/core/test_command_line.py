"""A generated page's command names no folder of the machine that wrote it."""
from training.core.command_line import REPO, command_line, with_environment


def test_paths_become_relative_or_a_variable_and_the_rest_is_quoted():
    argv = ["--vectors", "/somewhere/else/minilm-cache", str(REPO / "model_store"), "--out", "docs/x.md", "a b"]
    assert command_line("python -m training degenerate", argv) == (
        "python -m training degenerate --vectors $DIR/minilm-cache model_store --out docs/x.md 'a b'")


def test_the_settings_a_figure_depends_on_go_before_the_command():
    environ = {"DIALSCORE_PROVIDERS": "CPUExecutionProvider", "HOME": "/root"}
    named = ("DIALSCORE_PROVIDERS", "DIALSCORE_ENCODER_PRECISION")
    assert with_environment("python -m training evaluate", named, environ) == (
        "DIALSCORE_PROVIDERS=CPUExecutionProvider python -m training evaluate")
    assert with_environment("python -m training evaluate", named, {}) == "python -m training evaluate"
