"""What the live view tells the rest of the console, without knowing who listens.

`poll_published` is sent after every poll's documents are stored (alerts listen), with:
cluster, meta (ClusterMeta), documents (group -> GroupDocument; None when the poll failed and
nothing was read), window (group -> the health samples judged, newest last) and polled_at.
Sent robustly: a receiver's error is logged and never fails the poll.
"""

from __future__ import annotations

import logging

from django.dispatch import Signal

log = logging.getLogger(__name__)

poll_published = Signal()


def announce(**published) -> None:
    for receiver, result in poll_published.send_robust(sender=None, **published):
        if isinstance(result, Exception):
            log.error("%s failed on the poll of %s", receiver, published["cluster"], exc_info=result)
