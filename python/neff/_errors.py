"""The exceptions of ``neff``: one hierarchy, rooted at :class:`NeffError`.

- :class:`NeffError`: anything the Rust core reports, with ``kind`` and where
  (``path``, ``member``, ``key``, ``offset``);
- :class:`NeffIOError` (also an :class:`OSError`, with ``errno`` and
  ``filename``): a file could not be read or written;
- :class:`NeffValueError` (also a :class:`ValueError`): a bad argument;
- :class:`MemberNotFound` (also a :class:`KeyError`): no such member;
- :class:`Rejected`: the loader's gates refuse a NEFF that had to be accepted
  (raised by :func:`neff.pack` and ``Builder.write``, never by verify).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

__all__ = ["MemberNotFound", "NeffError", "NeffIOError", "NeffValueError", "Rejected"]


class NeffError(Exception):
    """An error of the Rust core.

    >>> try:
    ...     neff.open(b"not a NEFF")
    ... except neff.NeffError as e:
    ...     print(e.kind, e.offset)
    Unreadable None
    """

    kind: str
    """What went wrong, as the Rust ``ErrorKind`` (``"Read"``, ``"Tar(BadChecksum)"``, ...)."""
    message: str
    """The message, without the location prefix."""
    path: Optional[str]
    """The file the error is about."""
    member: Optional[str]
    """The archive member the error is about."""
    key: Optional[str]
    """The JSON key path or field the error is about."""
    offset: Optional[int]
    """The byte offset the error is at (the message says in what)."""
    report: Optional[Dict[str, Any]]
    """The loader's report, when a refusal caused the error."""

    def __init__(self, message: str, kind: str = "Error", **where: Any) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.path = where.get("path")
        self.member = where.get("member")
        self.key = where.get("key")
        self.offset = where.get("offset")
        self.report = None

    def __str__(self) -> str:
        where = [f"{self.path}"] if self.path else []
        where += [f"member {self.member}"] if self.member else []
        where += [f"key {self.key}"] if self.key else []
        where += [f"offset {self.offset}"] if self.offset is not None else []
        return ": ".join([", ".join(where), self.message] if where else [self.message])


class NeffIOError(NeffError, OSError):
    """A file could not be read or written: an :class:`OSError` with ``filename``.

    >>> try:
    ...     neff.open("missing.neff")
    ... except FileNotFoundError as e:
    ...     print(e.filename)
    missing.neff
    """

    def __init__(self, message: str, kind: str = "Read", errno: Optional[int] = None, **where: Any) -> None:
        OSError.__init__(self, errno, message, where.get("path"))
        NeffError.__init__(self, message, kind, **where)
        self.errno = errno
        self.strerror = message
        self.filename = where.get("path")

    def __str__(self) -> str:
        return NeffError.__str__(self)


class NeffValueError(NeffError, ValueError):
    """A bad argument: an unknown profile knob or option, a value out of range.

    >>> try:
    ...     neff.verify("m.neff", hash_layout="sideways")
    ... except ValueError as e:
    ...     print(e)
    profile: unknown variant `sideways`, expected one of `any`, `standard`, `word-reversed`
    """


class MemberNotFound(NeffError, KeyError):
    """No member of that name; the message lists the members.

    >>> try:
    ...     neff.open("m.neff").read("nope")
    ... except KeyError as e:
    ...     print(e.member)
    nope
    """

    def __str__(self) -> str:
        return NeffError.__str__(self)


class Rejected(NeffError):
    """The loader's gates refuse a NEFF that had to be accepted.

    >>> try:
    ...     neff.pack("empty_dir", "out.neff")
    ... except neff.Rejected as e:
    ...     print(e.gate, e.status_name, e.detail)
    G13 NRT_INVALID the NEFF has neither a neff.json nor a kelp.json member
    """

    gate: Optional[str]
    """The gate that refused (``"G1"`` .. ``"G31"``)."""
    status: Optional[int]
    """The runtime's NRT status code."""
    status_name: Optional[str]
    """The status's name (``"NRT_INVALID"``, ...)."""
    detail: Optional[str]
    """Where and why, beyond the runtime's log line."""

    def __init__(self, message: str, kind: str = "Refused", report: Optional[Dict[str, Any]] = None, **where: Any) -> None:
        super().__init__(message, kind, **where)
        report = report or {}
        self.report = report
        self.gate = report.get("gate")
        self.status = report.get("status")
        self.status_name = report.get("status_name")
        self.detail = report.get("detail")


def _from_native(
    kind: str, cls: str, message: str, where: Dict[str, Any], errno: Optional[int], report: Optional[str]
) -> NeffError:
    """The exception for an error of the Rust core (called by ``neff._native``, which
    chose ``cls``: ``rejected``, ``io``, ``value`` or ``error``)."""
    if report is not None:  # a refusal by the gates, whatever carried it
        return Rejected(message, kind, json.loads(report), **where)
    if cls == "io":
        return _io_error(errno)(message, kind, errno, **where)
    if cls == "value":
        return NeffValueError(message, kind, **where)
    return NeffError(message, kind, **where)


def _io_error(errno: Optional[int]) -> type[NeffIOError]:
    """The :class:`NeffIOError` subclass matching ``errno``'s builtin OSError subclass."""
    builtin = type(OSError(errno, "")) if errno is not None else OSError
    if builtin is OSError:
        return NeffIOError
    return _IO_CLASSES.setdefault(builtin, type(builtin.__name__, (NeffIOError, builtin), {"__doc__": NeffIOError.__doc__}))


_IO_CLASSES: Dict[type, type[NeffIOError]] = {}
