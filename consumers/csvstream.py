"""CSV for streamed downloads: one formatted line at a time, never the whole file in memory."""

from __future__ import annotations

import csv


class _Line:
    def write(self, value: str) -> str:
        return value


def csv_writer():
    """A csv writer whose writerow returns the formatted line (for StreamingHttpResponse)."""
    return csv.writer(_Line())
