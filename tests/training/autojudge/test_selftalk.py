"""Self-talk's contexts: never a context VHRED read in training."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from training.autojudge.selftalk import unseen_contexts  # noqa: E402

TRAIN = [["Excuse me, could you tell me the way to the station?", "Sure, go straight and turn left.",
          "Thank you very much."]]


def test_a_context_read_in_training_is_left_out_even_respelled() -> None:
    test = [
        ["excuse me , could you tell me the way to the station ?", "sure , go straight and turn left ."],  # read
        ["Did you see the match last night?", "Yes, what a game that was!", "I could not believe it."],  # new
        ["Hi."],  # too short for a context of two turns
    ]
    kept, left_out = unseen_contexts(test, TRAIN, context_turns=2)
    assert kept == [test[1]] and left_out == 1


def test_turns_read_only_after_the_context_do_not_count() -> None:
    test = [["What a lovely morning it is today.", "It is, shall we walk?",
             "Excuse me, could you tell me the way to the station?", "Sure, go straight and turn left."]]
    kept, left_out = unseen_contexts(test, TRAIN, context_turns=2)
    assert kept == test and left_out == 0


def test_more_contexts_than_there_are_is_said(caplog: pytest.LogCaptureFixture) -> None:
    """More contexts asked for than there are: all of them, with a warning."""
    import logging
    import random

    from training.autojudge.selftalk import pick_contexts

    with caplog.at_level(logging.WARNING):
        assert pick_contexts(5, 3, random.Random(0), "test") == sorted(pick_contexts(5, 3, random.Random(0), "x"))
        assert not caplog.records
        assert pick_contexts(4, 100000, random.Random(0), "DailyDialog test") == [0, 1, 2, 3]
    assert "--contexts 100000: DailyDialog test has only 4 unseen contexts" in caplog.text


def test_no_context_to_continue_is_a_set_up_error() -> None:
    """No unseen context of that many turns: a set-up error, not an empty file and exit 0."""
    import random

    from training.core.cli import SetupError
    from training.autojudge.selftalk import pick_contexts

    with pytest.raises(SetupError, match="no unseen context"):
        pick_contexts(0, 100, random.Random(0), "DailyDialog test")


def test_each_generated_turn_is_conditioned_on_the_whole_conversation_so_far() -> None:
    """A fake VHRED: the contexts handed to the encoder grow by each generated turn; the inputs stay as given."""
    from types import SimpleNamespace

    import torch

    from training.autojudge.selftalk import self_talk

    seen: list[list[list[str]]] = []

    class Encoder:
        def __init__(self) -> None:
            self.calls = 0
            self.model = SimpleNamespace(config=SimpleNamespace(max_tokens=4), generate=self.generate)
            self.tokenizer = SimpleNamespace(decode=lambda seq: f" t{seq[0]} ")

        def encode_contexts(self, dialogues: list[list[str]]) -> torch.Tensor:
            seen.append([list(d) for d in dialogues])
            return torch.zeros(len(dialogues), 2)

        def generate(self, states, max_tokens, temperature, top_k, generator):
            self.calls += 1
            return [[self.calls * 10 + row] for row in range(len(states))]

    contexts = [["a"], ["b", "c"]]
    generated = self_talk(Encoder(), contexts, turns=3)
    assert generated == [["t10", "t20", "t30"], ["t11", "t21", "t31"]]
    assert seen == [[["a"], ["b", "c"]],
                    [["a", "t10"], ["b", "c", "t11"]],
                    [["a", "t10", "t20"], ["b", "c", "t11", "t21"]]]
    assert contexts == [["a"], ["b", "c"]]
