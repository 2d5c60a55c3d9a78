"""Offset resets: strategies, the preview read from the broker, execution exactly once with
verification, and undo. The approval workflow is the `changes` package's."""
