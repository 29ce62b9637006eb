"""Size limits (413 `too_large`): configuration, checked after the schema has accepted the shape."""
from __future__ import annotations

from typing import Any

from service.components.cache import EncodeCache
from service.config import Settings
from service.errors import TooLarge
from service.stats import METHODS, bootstrap_work_items


def _check_text(path: str, text: object, settings: Settings, over: dict[str, str]) -> None:
    if isinstance(text, str) and len(text) > settings.max_chars:  # anything else is the schema's to refuse
        over[path] = f"{len(text)} characters; the limit is {settings.max_chars}."


def check_items(items: list[dict[str, Any]], settings: Settings, check_reference: bool = True,
                *, skip_items: bool = False) -> dict[str, str]:
    """413 for a request over the limits. With `skip_items` (the request's `on_invalid: "skip"`) an
    item's own excess (its turns, its texts) does not fail the request: those are returned, keyed
    `items.<i>.<field>`, for the caller to leave the item out; the number of items still fails it."""
    over: dict[str, str] = {}
    if len(items) > settings.max_items:
        over["items"] = f"{len(items)} items; the limit is {settings.max_items}."
        refuse({**over, **_item_excess(items, settings, check_reference)})
    over = _item_excess(items, settings, check_reference)
    if skip_items:
        return over
    refuse(over)
    return {}


def _item_excess(items: list[dict[str, Any]], settings: Settings, check_reference: bool) -> dict[str, str]:
    over: dict[str, str] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        for key, most in (("context", settings.max_turns), ("turns", settings.max_dialogue_turns)):
            seq = item.get(key)
            if isinstance(seq, list) and len(seq) > most:
                over[f"items.{i}.{key}"] = f"{len(seq)} turns; the limit is {most}."
            if isinstance(seq, list):
                for j, utterance in enumerate(seq):
                    text = utterance.get("text") if isinstance(utterance, dict) else utterance
                    if isinstance(text, str):
                        _check_text(f"items.{i}.{key}.{j}", text, settings, over)
        for key in ("response", "reference") if check_reference else ("response",):
            if isinstance(item.get(key), str):
                _check_text(f"items.{i}.{key}", item[key], settings, over)
    return over


def check_rerank(body: dict[str, Any], settings: Settings, check_reference: bool = True,
                 *, skip_candidates: bool = False) -> dict[str, str]:
    """413 for a request over the limits; with `skip_candidates`, over-long candidates are returned
    (keyed `candidates.<j>`) for the caller to leave out, as `check_items` does for items. The
    context and the reference belong to every candidate, so their excess still fails the request."""
    over: dict[str, str] = {}
    if len(body["candidates"]) > settings.max_candidates:
        over["candidates"] = f"{len(body['candidates'])} candidates; the limit is {settings.max_candidates}."
    if len(body["context"]) > settings.max_turns:
        over["context"] = f"{len(body['context'])} turns; the limit is {settings.max_turns}."
    for j, text in enumerate(body["context"]):
        _check_text(f"context.{j}", text, settings, over)
    if check_reference:
        _check_text("reference", body.get("reference"), settings, over)
    candidates: dict[str, str] = {}
    for j, text in enumerate(body["candidates"]):
        _check_text(f"candidates.{j}", text, settings, candidates)
    if over or not skip_candidates:
        refuse({**over, **candidates})
    return candidates


def check_encoder_work(calls: list[Any], items: list[Any], settings: Settings, cache: EncodeCache,
                       path: str = "items") -> None:
    """The metered components' work on the request's distinct texts (each is encoded once per request,
    whatever the number of items and models reading it), against `max_encoder_tokens`. The texts are
    tokenised into `cache`, where the encoder finds them.

    Counts every text a call may read (a reference-free call's reference is not read; a model reading
    only the last turn is counted for the whole context), so it errs high."""
    texts: dict[Any, dict[str, None]] = {}
    for call in calls:
        for component in call.scorer.components.values():
            if component.work([], cache) is None:
                continue
            wanted = texts.setdefault(component, {})
            for item in items:
                wanted.update(dict.fromkeys(_texts_read(item, call.reads_reference)))
    over: dict[str, str] = {}
    for component, distinct in texts.items():
        work = component.work(list(distinct), cache)
        if work > settings.max_encoder_tokens:
            over[path] = (f"{work} word pieces in {len(distinct)} distinct texts for the {component.name} encoder; "
                          f"the limit is {settings.max_encoder_tokens} (send fewer or shorter texts).")
    refuse(over)


def _texts_read(item: Any, referenced: bool) -> list[str]:
    if hasattr(item, "turns"):
        return [turn.text for turn in item.turns]
    texts = [*item.context, item.response]
    if referenced and item.reference is not None:
        texts.append(item.reference)
    return texts


def check_correlate(body: dict[str, Any], settings: Settings) -> None:
    over: dict[str, str] = {}
    items, resamples, metrics = len(body["human"]), body["resamples"], len(body.get("scores") or {})
    systems = len(set(map(str, body["systems"]))) if body.get("systems") is not None else None
    work_items = bootstrap_work_items(items, systems, body.get("methods") or METHODS)
    if items > settings.max_correlate_items:
        over["human"] = f"{items} items; the limit is {settings.max_correlate_items}."
    if metrics > settings.max_metrics:
        # every pair of metrics is compared, per method and level: the work and the response grow
        # with the square (500 metrics of 10 items took a minute and answered 87 MB)
        over["scores"] = f"{metrics} metrics; the limit is {settings.max_metrics}."
    if resamples > settings.max_resamples:
        over["resamples"] = f"{resamples} resamples; the limit is {settings.max_resamples}."
    elif items * resamples > settings.max_bootstrap_work:
        # The resample matrix is items x resamples: memory and time grow with it.
        over["resamples"] = (f"{items} items x {resamples} resamples = {items * resamples}; the limit on "
                             f"their product is {settings.max_bootstrap_work} (send fewer resamples).")
    elif work_items * resamples * metrics > settings.max_bootstrap_metric_work:
        # Each resample recomputes every metric's correlations over all items, so the product bounds the
        # time one request may hold a worker (docs/api.md: limits).
        counted = (f"{items} items" if work_items == items else
                   f"({items} items + {work_items - items} for the system-level Kendall over "
                   f"{systems} systems)")
        over["resamples"] = (f"{counted} x {resamples} resamples x {metrics} metrics = "
                             f"{work_items * resamples * metrics}; the limit on their product is "
                             f"{settings.max_bootstrap_metric_work} (send fewer resamples or metrics).")
    refuse(over)


def check_human_eval(body: dict[str, Any], settings: Settings) -> None:
    over: dict[str, str] = {}
    systems = len({rating["system"] for rating in body["ratings"]})
    if len(body["ratings"]) > settings.max_ratings:
        over["ratings"] = f"{len(body['ratings'])} ratings; the limit is {settings.max_ratings}."
    elif systems > settings.max_systems:
        # every pair of systems gets a rank-sum test: the work grows with the square of the systems
        over["ratings"] = f"{systems} distinct systems; the limit is {settings.max_systems}."
    # Each rating's criteria are checked against those most ratings score and every criterion against
    # `reverse`: criteria x entries of work in a small body.
    criteria = len(body["ratings"][0].get("scores") or {}) if body["ratings"] else 0
    if criteria > settings.max_criteria:
        over["ratings.0.scores"] = f"{criteria} criteria; the limit is {settings.max_criteria}."
    for key in ("reverse", "qc_criteria"):
        if len(body.get(key) or ()) > settings.max_criteria:
            over[key] = f"{len(body[key])} entries; the limit is {settings.max_criteria}."
    refuse(over)


def refuse(over: dict[str, str]) -> None:
    """413 `too_large` naming each field over its limit; nothing when `over` is empty."""
    if over:
        raise TooLarge("The request is over the configured limits; see GET /models for them.", over)
