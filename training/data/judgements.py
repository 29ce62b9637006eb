"""Turn-level human judgements in ../shared/data/judgements, one loader for every set, scores on 1-5.

An item's train/dev partition is a seeded hash of its *split key* (its normalised last context turn, or
its dialogue for ConTurE), so every reply to one context, in every set that shares it, lands in one split;
"train" also leaves out items that repeat dev text by the looser match key (training/data/holdout.py)."""
from __future__ import annotations

import csv
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from service.text import words
from training.data.corpora import DEFAULT_DATA_DIR, TOPICALCHAT_FILES
from training.data.holdout import DevHoldout

SPLIT_SEED = "dialscore-judgements-v1"
DEV_FRACTION = 0.3
SPLITS = ("train", "dev", "all")
SCORE_RANGE = (1.0, 5.0)

csv.field_size_limit(1 << 30)




@dataclass(frozen=True)
class JudgedItem:
    """One rated reply. `score` is on 1-5 whatever the set's own scale."""

    set: str
    item_id: str
    context: list[str]  # oldest first
    response: str
    references: list[str]  # may be empty
    score: float
    system: str | None
    conversation: str | None


@dataclass(frozen=True)
class SetInfo:
    name: str
    description: str
    licence: str
    has_references: bool
    has_systems: bool
    reader: Callable[[Path], list[JudgedItem]]
    for_training: bool = True  # False: measured only; no training step fits or chooses anything by it
    # False: its text comes from no corpus a training stream reads, so its dev text is not searched
    # for in them (`dev_holdout`).
    held_out: bool = True
    # The set whose items this one holds again (the same replies to the same turns, another copy): a
    # mean over sets counts the two once (`counted_once`); tests/training/data/test_judgements.py
    # finds every pair of sets sharing most of their items and checks it is declared here.
    alias_of: str | None = None


# --- helpers ---------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """The form used for split keys and text matching: `service.text.words` joined by spaces."""
    return " ".join(words(text))


def split_of(key: str) -> str:
    """'train' or 'dev' for a split key; deterministic across machines and Python versions."""
    digest = hashlib.sha256(f"{SPLIT_SEED}\x00{key}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return "dev" if fraction < DEV_FRACTION else "train"


def rescale(value: float, lo: float, hi: float) -> float:
    """Map [lo, hi] linearly onto 1-5."""
    return SCORE_RANGE[0] + (float(value) - lo) * (SCORE_RANGE[1] - SCORE_RANGE[0]) / (hi - lo)


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def query_key(context: list[str]) -> str:
    """The split key of a context: "q:" and its last turn, normalised. Every stream that must keep to the
    train/dev partition (the corpora, negative sampling, the degenerate check) asks this function, so a
    change of key form cannot leak dev contexts into training; a change re-draws every partition."""
    return "q:" + normalise(context[-1] if context else "")


# Split key of each item: kept beside the items (not a JudgedItem field, which is fixed).
_KEYS: dict[tuple[str, str], str] = {}


def _item(set_name: str, item_id: str, context: list[str], response: str, references: list[str],
          score: float, system: str | None, conversation: str | None, key: str) -> JudgedItem:
    _KEYS[(set_name, item_id)] = key
    return JudgedItem(set_name, item_id, [_clean(t) for t in context], _clean(response),
                      [_clean(r) for r in references if _clean(r)], score, system, conversation)


# --- readers ---------------------------------------------------------------------------------
def _read_dstc7(data_dir: Path) -> list[JudgedItem]:
    """Per-judge ratings averaged per (instance, system); score = mean of relevance and informativeness.

    The per-judge file spells one system both TeamCE and TeamEC (the published per-system means
    for TeamCE are the mean over both), so they are merged. The human response is one of the
    gold references upstream; it is removed from every item's references so that the Human
    system is not scored against itself.
    """
    folder = data_dir / "judgements" / "dstc7_task2_human_eval"

    def rows(name: str, **kw) -> list[list[str]]:
        with open(folder / name, encoding="utf-8-sig", newline="") as handle:
            return list(csv.reader(handle, delimiter="\t", **kw))[1:]

    contexts = {r[0]: r[2] for r in rows("dstc7-task2-context.tsv", quoting=csv.QUOTE_NONE)}
    gold = {r[0]: [x for x in r[1:] if x.strip()] for r in rows("dstc7-task2-gold_responses.tsv",
                                                                   quoting=csv.QUOTE_NONE)}
    responses = {(r[1], r[0]): r[2] for r in rows("dstc7-task2-system_responses.tsv", quoting=csv.QUOTE_NONE)}
    ratings: dict[tuple[str, str], list[float]] = defaultdict(list)
    for judge, instance, system, relevance, informativeness in rows("dstc7-task2-human-eval-per-judge.tsv"):
        system = "TeamCE" if system == "TeamEC" else system
        ratings[(instance, system)].append((float(relevance) + float(informativeness)) / 2)
    items = []
    for (instance, system), values in sorted(ratings.items()):
        if (instance, system) not in responses or instance not in contexts:
            continue
        human = normalise(responses.get((instance, "Human"), ""))
        references = [g for g in gold.get(instance, []) if normalise(g) != human]
        context = [contexts[instance]]
        items.append(_item("dstc7", f"{instance}:{system}", context, responses[(instance, system)],
                           references, rescale(sum(values) / len(values), 1, 5), system, instance,
                           query_key(context)))
    return items


def _read_gupta_multiref(data_dir: Path) -> list[JudgedItem]:
    """100 DailyDialog test contexts x 5 systems, averaged 1-5, four references (the original one last)."""
    path = data_dir / "judgements" / "dailydialog_gupta_multiref" / "mturk_rating_processed_output.csv"
    items = []
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            context = [t for t in row["context"].split("||||") if t.strip()]
            references = [r for r in row["all_references"].split("\t") if r.strip()]
            items.append(_item("dailydialog_gupta_multiref", f"{row['context_id']}:{row['model']}", context,
                               row["response"], references, rescale(float(row["human_average_rating"]), 1, 5),
                               row["model"], row["context_id"], query_key(context)))
    return items


def _read_predictive_engagement(data_dir: Path) -> list[JudgedItem]:
    """Ghazarian et al.'s DailyDialog query/reply pairs, 3 ratings (1-5) each, averaged.

    `system` is "human" when the reply is the DailyDialog ground truth for that query
    (from DD_queries_groundtruth_replies.csv), else "generated".
    """
    folder = data_dir / "judgements" / "predictive_engagement" / "data"
    truth: set[tuple[str, str]] = set()
    with open(folder / "DD_queries_groundtruth_replies.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            truth.add((normalise(row["query"]), normalise(row["reply"])))
    ratings: dict[tuple[str, str], list[float]] = defaultdict(list)
    with open(folder / "Eng_Scores_queries_gen_gtruth_replies.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            ratings[(_clean(row["query"]), _clean(row["response"]))].append(float(row["human_score"]))
    items = []
    for index, ((query, response), values) in enumerate(ratings.items()):
        system = "human" if (normalise(query), normalise(response)) in truth else "generated"
        key = query_key([query])
        items.append(_item("predictive_engagement", f"pe{index}", [query], response, [],
                           rescale(sum(values) / len(values), 1, 5), system, key[2:], key))
    return items


def _read_holistic(data_dir: Path) -> list[JudgedItem]:
    """Context coherence of 200 DailyDialog query/reply pairs; 10 raters (1-5) averaged; no header row."""
    path = data_dir / "judgements" / "holistic_eval" / "context_data_release.csv"
    items = []
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle):
            values = [float(v) for v in row[3:] if v.strip()]
            key = query_key([row[1]])
            items.append(_item("holistic_eval", f"h{row[0]}", [row[1]], row[2], [],
                               rescale(sum(values) / len(values), 1, 5), None, key[2:], key))
    return items


@lru_cache(maxsize=4)
def _conture_dialogues(data_dir: Path) -> list[dict]:
    with open(data_dir / "judgements" / "conture" / "data.json", encoding="utf-8") as handle:
        return json.load(handle)


def _strip_speaker(text: str, prefix: str) -> str:
    text = _clean(text)
    return text[len(prefix):].strip() if text.startswith(prefix) else text


def _read_conture(data_dir: Path) -> list[JudgedItem]:
    """ConTurE human-bot dialogues; each bot turn rated 0-2 ("overall impression"); context = whole history.

    Empty turns (the bot said nothing) are left out of both the items and the history.
    """
    items = []
    for dialogue in _conture_dialogues(data_dir):
        history: list[str] = []
        conversation = f"conture{dialogue['dialog_id']}"
        for index, turn in enumerate(dialogue["turns"]):
            user = _strip_speaker(turn["user"], "User:")
            bot = _strip_speaker(turn["chatbot"], "Chatbot:")
            if user:
                history.append(user)
            if not bot or not history:  # a few bot turns are empty upstream: nothing to score
                continue
            items.append(_item("conture", f"{conversation}:{index}", list(history), bot, [],
                               rescale(turn["overall impression"], 0, 2), None, conversation, conversation))
            history.append(bot)
    return items


CONVAI2_TURN_FILES = ("data_intermediate.json", "data_volunteers.json")


def _read_convai2_turns(data_dir: Path) -> list[JudgedItem]:
    """ConvAI2 human-bot chats: the human partner's like (1) or dislike (0) of a bot turn, where given.

    The only turn-level ratings here of bot turns in live chats rated by the person chatting, the
    kind AutoJudge rates; sparse and self-selected (a partner rated the turns they chose), so a
    development set, never a training one (SetInfo.for_training). Context = the whole history before
    the turn; a bot turn with no history is left out. System = round/bot, split key = conversation.
    """
    items = []
    for filename in CONVAI2_TURN_FILES:
        round_name = filename.removeprefix("data_").removesuffix(".json")
        path = data_dir / "judgements" / "convai2_human_bot" / filename
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)
        for n, record in enumerate(records):
            bots = [p["user_id"] for p in (record["participant1_id"], record["participant2_id"])
                    if p.get("class") == "Bot"]
            if len(bots) != 1:
                continue
            turns = [(index, turn.get("text", ""), _bot_like(turn)) for index, turn in enumerate(record["dialog"])]
            items += _rated_turns("convai2_turn", f"convai2:{round_name}/{n}", turns, f"{round_name}/{bots[0]}")
    return items


def _bot_like(turn: dict) -> float | None:
    """A ConvAI2 turn's like (1) or dislike (0) on 1-5, for bot turns the partner rated; else None."""
    like = turn.get("evaluation_score")
    return rescale(like, 0, 1) if turn.get("sender_class") == "Bot" and like is not None else None


def _rated_turns(set_name: str, conversation: str, turns: list[tuple[int, str, float | None]],
                 system: str | None = None) -> list[JudgedItem]:
    """One item per rated turn of a conversation ((index, text, score on 1-5 or None) in order),
    with every non-empty turn before it as context; a turn with no history is no item."""
    items = []
    history: list[str] = []
    for index, text, score in turns:
        text = _clean(text)
        if not text:
            continue
        if score is not None and history:
            items.append(_item(set_name, f"{conversation}:{index}", list(history), text, [], score, system,
                               conversation, conversation))
        history.append(text)
    return items


TOPICALCHAT_RATINGS = {"Poor": 1.0, "Not Good": 2.0, "Passable": 3.0, "Good": 4.0, "Excellent": 5.0}  # already 1-5


def _read_topicalchat_turns(data_dir: Path) -> list[JudgedItem]:
    """Topical-Chat human-human conversations (the two valid splits in ../shared/data): each turn's
    five-level rating (Poor to Excellent) by the conversation partner.

    People's turns, not systems', on knowledge-grounded chat, a domain no training stream reads; nearly
    every turn is rated Good or Excellent, so the signal is thin: a development set, never a training one
    (SetInfo.for_training), and not in the dev hold-out (SetInfo.held_out). Context = the whole history
    before the turn; the first turn (no history) and unrated turns are left out. Split key = conversation.
    """
    items = []
    for filename in TOPICALCHAT_FILES:
        with open(data_dir / "corpora" / "topicalchat" / filename, encoding="utf-8") as handle:
            conversations = json.load(handle)
        for conversation_id, record in conversations.items():
            turns = [(index, turn.get("message", ""), TOPICALCHAT_RATINGS.get(turn.get("turn_rating", "")))
                     for index, turn in enumerate(record["content"])]
            items += _rated_turns("topicalchat_turn", f"topicalchat:{conversation_id}", turns)
    return items


def _conture_lookup(data_dir: Path) -> dict[tuple[str, str], str]:
    """(normalised user turn, normalised bot reply) -> ConTurE dialogue id, for xdial's copy."""
    lookup: dict[tuple[str, str], str] = {}
    for dialogue in _conture_dialogues(data_dir):
        for turn in dialogue["turns"]:
            pair = (normalise(_strip_speaker(turn["user"], "User:")),
                    normalise(_strip_speaker(turn["chatbot"], "Chatbot:")))
            lookup.setdefault(pair, f"conture{dialogue['dialog_id']}")
    return lookup


def _xdial_reader(subset: str, scale: tuple[float, float]) -> Callable[[Path], list[JudgedItem]]:
    set_name = "xdial_" + subset.replace("-", "_")

    def read(data_dir: Path) -> list[JudgedItem]:
        path = data_dir / "judgements" / "xdial_eval" / "turn" / f"{subset}.csv"
        lookup = _conture_lookup(data_dir) if subset == "conture-turn" else {}
        items = []
        with open(path, encoding="utf-8", newline="") as handle:
            for index, row in enumerate(csv.DictReader(handle)):
                context = [t for t in row["english_ctx"].split("\n") if t.strip()]
                response = row["english_res"]
                key = query_key(context)
                conversation = key[2:]
                if lookup:
                    found = lookup.get((normalise(context[-1]), normalise(response)))
                    if found:
                        key = conversation = found
                items.append(_item(set_name, f"{subset}:{index}", context, response, [],
                                   rescale(float(row["ratings"]), *scale), None, conversation, key))
        return items

    return read


_DD = "DailyDialog: CC BY-NC-SA 4.0"
SETS: dict[str, SetInfo] = {
    info.name: info
    for info in [
        SetInfo("dstc7", "DSTC7 task 2: 1,000 Reddit contexts x 10 systems, per-judge relevance and "
                "informativeness averaged", "O-UDA v1.0", True, True, _read_dstc7),
        SetInfo("dailydialog_gupta_multiref", "Gupta et al. 2019: 100 DailyDialog test contexts x 5 "
                "systems, 4 references each", f"not stated; {_DD}", True, True, _read_gupta_multiref),
        SetInfo("predictive_engagement", "Ghazarian et al.: 600 DailyDialog query/reply pairs "
                "(ground truth and generated), 3 ratings each", f"MIT (repo); {_DD}", False, True,
                _read_predictive_engagement),
        SetInfo("holistic_eval", "Pang et al. 2020: 200 DailyDialog query/reply pairs, context "
                "coherence, 10 raters", f"not stated; {_DD}", False, False, _read_holistic),
        SetInfo("xdial_dailydialog_zhao", "xDial-Eval (English): Zhao et al. 2020 DailyDialog, 900 "
                "replies to 100 contexts", f"GPL-3.0; {_DD}", False, False,
                _xdial_reader("dailydialog-zhao", (1, 5))),
        SetInfo("xdial_persona_zhao", "xDial-Eval (English): Zhao et al. 2020 PersonaChat, 900 replies "
                "to 149 contexts", "GPL-3.0", False, False, _xdial_reader("persona-zhao", (1, 5))),
        SetInfo("xdial_dailydialog_gupta", "xDial-Eval (English): the Gupta et al. DailyDialog items "
                "without references or systems", f"GPL-3.0; {_DD}", False, False,
                _xdial_reader("dailydialog-gupta", (1, 5)), alias_of="dailydialog_gupta_multiref"),
        SetInfo("xdial_conture_turn", "xDial-Eval (English): ConTurE turn ratings 0-2 with a "
                "three-turn context", "GPL-3.0; ConTurE CC BY 4.0", False, False,
                _xdial_reader("conture-turn", (0, 2)), alias_of="conture"),
        SetInfo("conture", "ConTurE: 119 human-bot dialogues, every bot turn rated 0-2, full history "
                "as context", "CC BY 4.0", False, False, _read_conture),
        SetInfo("convai2_turn", "ConvAI2 human-bot PersonaChat chats: the partner's like (1) or dislike (0) "
                "of a bot turn, where given; 10 bots", "not stated", False, True, _read_convai2_turns,
                for_training=False),
        SetInfo("topicalchat_turn", "Topical-Chat (valid splits): human-human chats about an article, every "
                "turn rated Poor to Excellent by the partner", "CDLA-Sharing-1.0", False, False,
                _read_topicalchat_turns, for_training=False, held_out=False),
    ]
}


# The sets training reads (its train partitions) and chooses settings by (their dev partitions).
TRAINING_SETS: tuple[str, ...] = tuple(name for name, info in SETS.items() if info.for_training)
# Judged sets whose terms leave what is trained on them free for commercial use: DSTC7's judgements
# (O-UDA v1.0: no restriction on Results, trained models included) and ConTurE (CC BY 4.0: attribution).
# The others are DailyDialog text (CC BY-NC-SA 4.0), xDial-Eval copies (GPL-3.0) or state no terms.
COMMERCIAL_SETS: tuple[str, ...] = ("dstc7", "conture")
# The sets whose dev text no training stream may hold (`dev_holdout`).
HELD_OUT_SETS: tuple[str, ...] = tuple(name for name, info in SETS.items() if info.held_out)
# Set -> the set whose items it holds again (SetInfo.alias_of).
ALIASES: dict[str, str] = {name: info.alias_of for name, info in SETS.items() if info.alias_of}


def counted_once(sets: Iterable[str]) -> list[str]:
    """The sets a mean over `sets` counts, in order: each distinct set of items once. An alias is left
    out where the set it copies is among `sets`, and stands for it where that set is not."""
    names = list(dict.fromkeys(sets))
    return [name for name in names if ALIASES.get(name) not in names]


@lru_cache(maxsize=32)
def _load_all(name: str, data_dir: Path) -> tuple[JudgedItem, ...]:
    return tuple(SETS[name].reader(data_dir))


def split_key(item: JudgedItem) -> str:
    """The key whose hash decides the item's split (see the module docstring)."""
    if (item.set, item.item_id) not in _KEYS:
        _load_all(item.set, DEFAULT_DATA_DIR)
    return _KEYS[(item.set, item.item_id)]


@lru_cache(maxsize=4)
def dev_holdout(data_dir: Path = DEFAULT_DATA_DIR) -> DevHoldout:
    """The dev text of every set (measured-only ones included, unless `held_out` is False) that no
    training stream may hold."""
    dev = []
    for name in HELD_OUT_SETS:
        for item in _load_all(name, Path(data_dir)):
            key = _KEYS[(item.set, item.item_id)]
            if split_of(key) == "dev":
                dev.append((item.context, item.response, key.startswith("q:")))
    return DevHoldout.of(dev)


def held_out(item: JudgedItem, holdout: DevHoldout) -> bool:
    """Whether a train-partition item repeats dev text: a dev query under another spelling (the
    split key keeps "don ' t" and "don ’ t" apart), or a dev context or (query, reply) pair
    anywhere in its context and reply (a later turn of a dev dialogue; ConTurE's repeated turns)."""
    by_query = _KEYS[(item.set, item.item_id)].startswith("q:")
    return (by_query and holdout.holds_query(item.context)) or holdout.touches([*item.context, item.response])


def load_set(name: str, split: str = "all", data_dir: Path = DEFAULT_DATA_DIR) -> list[JudgedItem]:
    """Items of one set (see SETS) and split ("train", "dev" or "all"), in a fixed order.

    "train" leaves out the few items that repeat dev text by the loose key (`held_out`), so that
    no model fits a rating of a dev query or dev reply; "all" is every item."""
    if name not in SETS:
        raise KeyError(f"unknown judgement set {name!r}; known: {', '.join(SETS)}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    items = list(_load_all(name, Path(data_dir)))
    if split == "all":
        return items
    chosen = [item for item in items if split_of(_KEYS[(item.set, item.item_id)]) == split]
    if split == "train":
        holdout = dev_holdout(Path(data_dir))
        chosen = [item for item in chosen if not held_out(item, holdout)]
    return chosen
