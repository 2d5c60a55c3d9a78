"""Publish a synthetic poll through the production path (see devstack/synthetic.py)."""

from devstack.synthetic import group, publish

__all__ = ["group", "publish"]
