"""Set-up errors and their exit status: 2 when a retry cannot help, 1 when it may."""
from __future__ import annotations

import errno


class BulkError(Exception):
    """A problem with the run's set-up, found before any line is scored (unknown model, unreadable
    input, foreign or busy output): exit 2, which fails the whole Job, since a retry cannot help."""


class TransientSetUpError(Exception):
    """An I/O error during set-up that a retry may not meet (EIO, ESTALE, ETIMEDOUT: a network
    volume that blinked, a server that restarted): exit 1, which the Job retries, rather than 2,
    which would fail every shard of it for a moment's outage."""


TRANSIENT_ERRNOS = frozenset({errno.EIO, errno.ESTALE, errno.ETIMEDOUT, errno.EINTR, errno.ENETDOWN,
                              errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNRESET, errno.ECONNABORTED})


def set_up_error(message: str, exc: OSError) -> Exception:
    """The exception for an OSError met during set-up: transient (exit 1) or not (exit 2)."""
    text = f"{message}: {exc.strerror or exc}"
    return TransientSetUpError(text) if exc.errno in TRANSIENT_ERRNOS else BulkError(text)
