"""STAND-IN for the reader's ``neff._errors`` (same class names, attributes and
``_from_native`` protocol): take the reader's file at merge."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional


class NeffError(Exception):
    """A neff failure: ``kind`` and where (``path``, ``member``, ``key``, ``offset``)."""

    def __init__(self, message: str, kind: str = "", path: Optional[str] = None,
                 member: Optional[str] = None, key: Optional[str] = None,
                 offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.kind, self.path, self.member, self.key, self.offset = kind, path, member, key, offset


class NeffIOError(NeffError, OSError):
    """An I/O failure (``filename`` is the path)."""

    @property
    def filename(self) -> Optional[str]:
        return self.path


class Rejected(NeffError):
    """The loader refuses the NEFF: ``gate``, ``status``, ``status_name``, ``message``, ``detail``, ``report``."""

    def __init__(self, message: str, report: Dict[str, Any], **where: Any) -> None:
        super().__init__(message, **where)
        self.report = report
        self.gate: Optional[str] = report.get("gate")
        self.status: Optional[int] = report.get("status")
        self.status_name: Optional[str] = report.get("status_name")
        self.message: Optional[str] = report.get("message")
        self.detail: Optional[str] = report.get("detail")


def _from_native(kind: str, message: str, location: Dict[str, Any],
                 errno: Optional[int], report: Optional[str]) -> NeffError:
    if report is not None:
        return Rejected(message, json.loads(report), kind=kind, **location)
    if kind == "Io" or kind.startswith("ReadBack(Read"):
        return NeffIOError(message, kind=kind, **location)
    return NeffError(message, kind=kind, **location)
