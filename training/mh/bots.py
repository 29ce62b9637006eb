"""Bots `python -m training selfplay` can talk to: the pre-trained VHRED, scripted bots, or a chatbot over HTTP.

The HTTP contract: POST <url> {"history": ["...", "the utterance to answer"]} (oldest first) answered by
200 {"reply": "..."}. Only that URL is called (no redirects); one deadline covers the whole call, and any
failure is a BotError saying why."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Protocol

import torch
from training.encoders.hred.encoder import HREDTextEncoder
from training.autojudge.selftalk import self_talk

MAX_REPLY_BYTES = 1 << 20


class BotError(Exception):
    """A bot failed to reply; the message says why (timeout, status, malformed answer)."""


class Bot(Protocol):
    name: str

    def reply(self, history: list[str]) -> str:
        """The bot's next utterance after `history` (oldest first)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        raise BotError(f"{req.full_url} redirected ({code}) to {newurl}; redirects are not followed")


class HttpBot:
    """A chatbot behind the HTTP contract above."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"bot URL must be http(s)://host[:port]/path, got {url!r}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = url
        self.name = url
        self.timeout = float(timeout)
        self._opener = urllib.request.build_opener(_NoRedirect)

    def reply(self, history: list[str]) -> str:
        """POST the history; the whole exchange must finish within `timeout` seconds."""
        outcome: dict[str, object] = {}
        worker = threading.Thread(target=self._call, args=(list(history), outcome), daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():  # the daemon thread dies with its socket timeout; we do not wait for it
            raise BotError(self._timed_out())
        if "error" in outcome:
            raise BotError(str(outcome["error"]))
        return str(outcome["reply"])

    def _timed_out(self) -> str:
        return f"{self.url} did not answer within {self.timeout:g} s"

    def _call(self, history: list[str], outcome: dict[str, object]) -> None:
        body = json.dumps({"history": history}).encode("utf-8")
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read(MAX_REPLY_BYTES + 1)
            if len(raw) > MAX_REPLY_BYTES:
                raise BotError(f"{self.url} answered more than {MAX_REPLY_BYTES} bytes")
            try:
                answer = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise BotError(f"{self.url} answered something that is not JSON ({exc})") from None
            if not isinstance(answer, dict) or not isinstance(answer.get("reply"), str):
                raise BotError(f'{self.url} answered JSON without a string "reply"')
            outcome["reply"] = answer["reply"]
        except BotError as exc:
            outcome["error"] = str(exc)
        except urllib.error.HTTPError as exc:
            outcome["error"] = f"{self.url} answered HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError):
                outcome["error"] = self._timed_out()
            else:
                outcome["error"] = f"{self.url} could not be reached ({reason})"


class VhredBot:
    """The pre-trained VHRED of the training package (`python -m training pretrain`, runs/vhred).

    Driven through the pre-training package's generation code (`training.autojudge.selftalk.self_talk` on
    an `HREDTextEncoder`): the context is the last `max_turns - 1` utterances, z is drawn from the
    prior and tokens are sampled top-k, with a seed per call so that a run is reproducible.
    """

    def __init__(self, run: Path = Path("runs/vhred"), temperature: float = 1.0, top_k: int = 50,
                 seed: int = 0) -> None:
        run = Path(run)
        if not (run / "model.pt").is_file():
            raise FileNotFoundError(f"no VHRED checkpoint at {run / 'model.pt'}: run `python -m training pretrain` first")
        torch.set_num_threads(1)
        self.encoder = HREDTextEncoder.from_run(run)
        self.temperature = temperature
        self.top_k = top_k
        self.seed = seed
        self.calls = 0
        self.name = f"vhred ({run / 'model.pt'})"

    def reply(self, history: list[str]) -> str:
        self.calls += 1
        [[text]] = self_talk(self.encoder, [list(history)], 1, self.temperature, self.top_k,
                             seed=self.seed * 1_000_003 + self.calls)
        return text or "..."


class ScriptedBot:
    """A bot that does not converse, for measuring how M_H can be gamed (its card's limitations)."""

    SCRIPTS = {
        # laughter, a question word and the last turn echoed back as "coherence"
        "scripted:laugh-echo": lambda history: f"haha, why do you say '{history[-1] if history else ''}'? tell me more!",
        # one cheerful reply, whatever was said
        "scripted:repeat": lambda history: "i love it!",
    }

    def __init__(self, spec: str) -> None:
        self.script = self.SCRIPTS[spec]
        self.name = spec

    def reply(self, history: list[str]) -> str:
        return self.script(history)


def make_bot(spec: str, timeout: float = 10.0, vhred_run: Path = Path("runs/vhred"), seed: int = 0) -> Bot:
    """`vhred` for the pre-trained VHRED, `scripted:laugh-echo` or `scripted:repeat`, or an http(s)
    URL for the adapter."""
    if spec == "vhred":
        return VhredBot(vhred_run, seed=seed)
    if spec in ScriptedBot.SCRIPTS:
        return ScriptedBot(spec)
    if spec.startswith(("http://", "https://")):
        return HttpBot(spec, timeout)
    raise ValueError(f"--bot must be 'vhred', one of {', '.join(ScriptedBot.SCRIPTS)} or an http(s) URL, "
                     f"got {spec!r}")
