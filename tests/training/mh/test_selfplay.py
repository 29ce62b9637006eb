"""Self-play: the HTTP bot adapter against local fake bots (one never answers), the VHRED bot, the run."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE
from training.mh import selfplay
from training.mh.bots import BotError, HttpBot, make_bot

RELEASE = threading.Event()


class FakeBots(BaseHTTPRequestHandler):
    """/echo answers by the contract, /silent never answers, the rest misbehave in one way each."""

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/silent":
            RELEASE.wait(30)
            return
        if self.path == "/echo":
            self._send(200, {"reply": f"why do you say {body['history'][-1][:40]}?"})
        elif self.path == "/error":
            self._send(500, {"oops": True})
        elif self.path == "/garbage":
            self._send(200, b"<html>not json</html>")
        elif self.path == "/no-reply":
            self._send(200, {"answer": "wrong key"})
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()

    def _send(self, status: int, payload: object) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeBots)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    RELEASE.set()
    httpd.shutdown()
    httpd.server_close()


def test_http_bot_speaks_the_contract(server: str) -> None:
    bot = HttpBot(f"{server}/echo", timeout=5)
    assert bot.reply(["hello there", "how are you"]) == "why do you say how are you?"


def test_bot_that_never_answers_times_out(server: str) -> None:
    with pytest.raises(BotError, match="did not answer within 0.3 s"):
        HttpBot(f"{server}/silent", timeout=0.3).reply(["hello?"])


@pytest.mark.parametrize("path, message", [("/error", "HTTP 500"), ("/garbage", "not JSON"),
                                           ("/no-reply", 'string "reply"'), ("/redirect", "redirects are not")])
def test_misbehaving_bots_are_reported(server: str, path: str, message: str) -> None:
    with pytest.raises(BotError, match=message):
        HttpBot(f"{server}{path}", timeout=5).reply(["hi"])


def test_unreachable_bot_is_reported() -> None:
    with pytest.raises(BotError, match="could not be reached"):
        HttpBot("http://127.0.0.1:9/", timeout=2).reply(["hi"])  # port 9 (discard): nothing listens


@pytest.mark.parametrize("spec", ["ftp://example.org/bot", "file:///etc/passwd", "localhost:8000", "gpt"])
def test_only_http_urls_or_vhred(spec: str) -> None:
    with pytest.raises(ValueError):
        make_bot(spec)


@pytest.fixture(scope="module")
def tiny_vhred(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained VHRED run folder (tokenizer.json + model.pt) in pretrain's layout."""
    import torch

    from training.encoders.hred import tokenizer as bpe
    from training.encoders.hred.model import VHRED, VHREDConfig, save_checkpoint

    run = tmp_path_factory.mktemp("vhred")
    texts = ["hello how are you", "i am fine thanks", "what do you like to do", "i like to read books"] * 5
    tok = bpe.train_bpe(texts, vocab_size=80, max_tokens=12, min_frequency=1)
    bpe.save(tok, run / "tokenizer.json")
    torch.manual_seed(0)
    config = VHREDConfig(vocab_size=tok.get_vocab_size(), embedding=8, utterance=8, context=16, latent=4,
                         decoder=16, max_tokens=12, max_turns=4)
    save_checkpoint(VHRED(config), run / "model.pt")
    return run


def test_vhred_bot_generates_from_a_checkpoint(tiny_vhred: Path) -> None:
    bot = make_bot("vhred", vhred_run=tiny_vhred, seed=1)
    replies = selfplay.converse(bot, "hello how are you", 3)
    assert len(replies) == 3 and all(isinstance(r, str) and r for r in replies)
    with pytest.raises(FileNotFoundError):
        make_bot("vhred", vhred_run=tiny_vhred / "missing")


@pytest.fixture(scope="module")
def mh():
    store = ModelStore(MODEL_STORE, models=("mh",))
    store.load()
    assert store.get("mh") is not None, store.failures  # committed: a lost artifact fails here
    return store.get("mh")


def test_selfplay_scores_every_conversation(server: str, mh) -> None:
    bot = HttpBot(f"{server}/echo", timeout=5)
    result = selfplay.selfplay(bot, mh, ["hi, nice to meet you", "what a day!", "do you cook?"], 4, 3,
                               log=lambda _: None)
    summary = result["summary"]
    assert summary["conversations"] == 3 and summary["failed"] == 0
    assert all(len(c["replies"]) == 4 for c in result["conversations"])
    assert summary["ci95"][0] <= summary["mean"] <= summary["ci95"][1]


def test_selfplay_reports_a_bot_that_never_answers(server: str, mh) -> None:
    bot = HttpBot(f"{server}/silent", timeout=0.2)
    result = selfplay.selfplay(bot, mh, ["hi"] * 10, 3, 2, log=lambda _: None)
    summary = result["summary"]
    assert summary["conversations"] == 0 and summary["failed"] == 2  # stopped after --max-failures
    assert "did not answer" in summary["errors"][0]


@pytest.mark.data
def test_selfplay_command_fails_cleanly_on_a_silent_bot(server: str, mh, capsys) -> None:
    code = selfplay.main(["--bot", f"{server}/silent", "--conversations", "2", "--turns", "2", "--timeout", "0.2",
                          "--store", str(MODEL_STORE)])
    assert code == 1
    assert "no conversation completed" in capsys.readouterr().out


@pytest.mark.data
def test_selfplay_command_with_vhred_prints_the_score(tiny_vhred: Path, mh, tmp_path: Path, capsys) -> None:
    out = tmp_path / "selfplay.json"
    docs = tmp_path / "evaluation.md"
    docs.write_text("# E\n<!-- mh:begin -->\nx\n<!-- mh-selfplay:begin -->\n<!-- mh-selfplay:end -->\n<!-- mh:end -->\n")
    code = selfplay.main(["--bot", "vhred", "--vhred", str(tiny_vhred), "--conversations", "3", "--turns", "3",
                          "--store", str(MODEL_STORE), "--out", str(out), "--docs", str(docs)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "M_H self-play (-B/B) =" in printed and "over 3 conversations of 3 turns" in printed
    saved = json.loads(out.read_text())
    assert len(saved["conversations"]) == 3 and all(1.0 <= c["mh"] <= 5.0 for c in saved["conversations"])
    recorded = docs.read_text()
    assert f"| vhred ({tiny_vhred / 'model.pt'}) | {saved['summary']['mean']:.3f} |" in recorded
    assert "--bot vhred" in recorded and recorded.endswith("<!-- mh:end -->\n")


def test_bootstrap_interval_brackets_the_mean() -> None:
    low, high = selfplay.interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert low < 3.0 < high
    assert selfplay.interval([2.0, 2.0]) == (2.0, 2.0)


def test_the_scripted_bots_of_the_card_limitations_are_built_in():
    from training.mh.bots import make_bot

    echo = make_bot("scripted:laugh-echo")
    assert echo.reply(["hello there", "how are you"]) == "haha, why do you say 'how are you'? tell me more!"
    assert make_bot("scripted:repeat").reply(["anything"]) == "i love it!"
    with pytest.raises(ValueError, match="scripted:laugh-echo"):
        make_bot("scripted:nonsense")


def test_every_reply_answers_the_whole_conversation_so_far() -> None:
    """Section 4.3 of the paper: each reply is fed back, so the bot sees the opener and all its replies."""
    seen: list[list[str]] = []

    class Recording:
        def reply(self, history: list[str]) -> str:
            seen.append(list(history))
            return f"r{len(history)}"

    assert selfplay.converse(Recording(), "hello", 3) == ["r1", "r2", "r3"]
    assert seen == [["hello"], ["hello", "r1"], ["hello", "r1", "r2"]]
