from training.unref.card import portable_command


def test_a_card_names_cache_folders_not_this_machines_paths() -> None:
    argv = ["python", "-m", "training", "train-unref", "--model", "unref-minilm",
            "--cache", "minilm-l6=/work/scratch/minilm-cache/", "--model-dir", "/keep/this"]
    assert portable_command(argv) == ("python -m training train-unref --model unref-minilm "
                                      "--cache minilm-l6=$CACHE/minilm-cache --model-dir /keep/this")
