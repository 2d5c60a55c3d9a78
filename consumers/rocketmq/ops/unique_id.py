"""Client message ids (UNIQ_KEY) in the layout Java's MessageClientIDSetter uses:
client IP (4 bytes) + pid (2) + a per-process random (4) + ms since the start of the
month (4) + counter (2), as 32 upper-case hex characters. Consoles and tools that parse
the id (to show its time, say) then read ours too."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import random
import struct

_PREFIX = bytes([127, 0, 0, 1]) + struct.pack(">H", os.getpid() & 0xFFFF) + struct.pack(">I", random.getrandbits(32))
_COUNTER = itertools.count(random.getrandbits(15))


def new_unique_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    since_month = int((now - month_start).total_seconds() * 1000) & 0xFFFFFFFF
    counter = next(_COUNTER) & 0xFFFF
    return (_PREFIX + struct.pack(">IH", since_month, counter)).hex().upper()
