"""The loose text key that matches one sentence across the sources' spellings: letters and digits only
(DailyDialog's "don ’ t", holistic_eval's "don't" and xDial's "do n't" are one key). It is the service's
`service.text.match_key`, so the service's training-item keys and training's dev hold-out match alike."""
from __future__ import annotations

from service.text import match_key

__all__ = ["match_key"]
