"""`python -m training dev-items --out FILE.jsonl`: the exact items `evaluate` scores, one JSON line each.

Neither the split (a hash of each context) nor the recovered references can be read off the data files;
the output holds the sets' text under their licences, so write it outside the repository."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from training.core.cli import check_output_file, output_file
from training.data.judgements import DEFAULT_DATA_DIR, SETS, SPLITS, load_set
from training.data.references import is_reference_reply, recover


def rows(set_name: str, split: str, data_dir: Path) -> list[dict]:
    """The items of one set and split as `evaluate` scores them (references recovered where it does)."""
    items, recovery = recover(load_set(set_name, split, data_dir), data_dir)
    return [{"set": i.set, "item_id": i.item_id, "context": i.context, "response": i.response,
             "references": i.references, "recovered": recovery is not None and bool(i.references),
             "reply_is_reference": is_reference_reply(i), "score": i.score, "system": i.system,
             "conversation": i.conversation} for i in items]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training dev-items", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=output_file, required=True, help="JSON lines file to write")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    # A symlinked --out is written where it points (the link stays a link; os.replace on the link itself
    # would put a plain file in its place): that folder is checked now, not after the sets load.
    target = Path(os.path.realpath(args.out))
    if args.out.is_symlink():
        check_output_file(parser, "--out", target)
    # Every set is read before the file is opened: a set that fails to load leaves the last file as it was.
    found = []
    for set_name in args.sets:
        items = rows(set_name, args.split, args.data_dir)
        found.extend(items)
        print(f"{set_name}: {len(items)} items", flush=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in found)
    if args.out.exists() and not args.out.is_file():  # /dev/stdout, a pipe: written as it is
        args.out.write_text(text, encoding="utf-8")
    else:  # a whole file or the old one, never a cut one
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    print(f"wrote {len(found)} items to {args.out}")
    return 0
