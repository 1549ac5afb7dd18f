"""pytest plugin (entry point ``pytest11``): fixtures that run an acceptance gate in a test."""

from __future__ import annotations
