"""The JSON a poll writes (documents, the index, the window's samples, a part's result): compact
UTF-8 bytes made by orjson, a tenth of the time `json.dumps` took. At 50,000 groups encoding was
about 2.5 s of every poll, most of it in the one process that publishes a split poll.

Read back with `json.loads` as before (orjson decodes no faster: building the objects is the
cost; on the window's samples, 66 ms against json's 61 for 12,500 groups). Two differences from
`json.dumps(..., allow_nan=False)`: text is UTF-8 rather than escaped ASCII, and a NaN or
infinite float is written as null, unknown, rather than refused."""

from __future__ import annotations

import orjson


def dumps(value) -> bytes:
    # non-string keys (ints) as strings, as json.dumps writes them
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
