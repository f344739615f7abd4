"""The loader's verdict: :class:`Report`, :func:`verify` and :func:`verify_many`.

Kept apart from the rest of the reading side, and light to import (no
``typing``, ``uuid`` or other dataclasses at run time): a script that only
verifies pays for what it uses, and ``verify_many`` builds each report on the
thread that also waits for the checking threads.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field

from neff import _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, Iterable, List, Mapping, Optional, Tuple, Union

    PathLike = Union[str, "os.PathLike[str]"]
    Source = Union[PathLike, bytes, BinaryIO]

__all__ = ["Report", "verify", "verify_many"]


@dataclass(frozen=True)
class Report:
    """The loader's verdict (the ``neff verify --json`` document).

    >>> r = neff.verify("m.neff")
    >>> r.accepted, r.gate, r.status_name, r.targeted_arches
    (True, None, 'NRT_SUCCESS', ('cayman',))
    """

    accepted: bool
    gate: Optional[str]
    """The refusing gate (``"G1"`` .. ``"G31"``), ``None`` when accepted."""
    status: int
    status_name: str
    message: Optional[str]
    """The runtime's log line for the refusal."""
    detail: Optional[str]
    warnings: Tuple[str, ...]
    instance_arch: str
    file: Optional[str] = None
    hash_layout: Optional[str] = None
    digest: Optional[str] = None
    target: Optional[str] = None
    targeted_arches: Tuple[str, ...] = ()
    """The arches the NEFF targets (with ``instance_arch="all"``)."""
    per_arch: Dict[str, Report] = field(default_factory=dict)
    """Each arch's report (with ``instance_arch="all"``)."""
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @staticmethod
    def _from(d: Mapping[str, Any]) -> Report:
        # `verify_many` builds one per file and arch on the thread that also feeds
        # the checking threads, so the fields go straight into the instance's
        # `__dict__` (what the frozen dataclass's `__init__` does one
        # `object.__setattr__` at a time, at twice the cost).
        get = d.get
        per_arch = get("per_arch")
        report: Report = _new_object(Report)
        report.__dict__.update(
            accepted=d["accepted"], gate=d["gate"], status=d["status"], status_name=d["status_name"],
            message=d["message"], detail=d["detail"], warnings=tuple(d["warnings"]),
            instance_arch=d["instance_arch"], file=get("file"), hash_layout=get("hash_layout"),
            digest=get("digest"), target=get("target"),
            targeted_arches=tuple(get("targeted_arches") or ()),
            per_arch={k: Report._from(v) for k, v in per_arch.items()} if per_arch else {},
            raw=dict(d),
        )
        return report


_new_object = object.__new__




def _source(source: Source) -> Union[str, bytes]:
    """A path as ``str``, bytes as they are; a binary file object: the path of the file on
    disk it is open on, else its bytes (read from where it is)."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    fileno = getattr(source, "fileno", None)
    if isinstance(name, str) and fileno is not None:
        # A file on disk is read by its path, streamed, not copied into memory.
        try:
            if os.path.samestat(os.fstat(fileno()), os.stat(name)):
                return name
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
    read = getattr(source, "read", None)
    if read is None:
        raise TypeError(f"expected a path, bytes or a binary file object, not {type(source).__name__}")
    data = read()
    if not isinstance(data, bytes):
        raise TypeError(f"the file object gave {type(data).__name__}, not bytes: open it in binary mode ('rb')")
    return data




def verify(source: Source, instance_arch: str = "all", **profile: Any) -> Report:
    """Checks a NEFF as ``neff verify`` does; returns the :class:`Report`, never raises on a refusal.

    >>> neff.verify("model.neff", allow_legacy_neff=True).accepted
    True
    """
    return Report._from(json.loads(_native.verify(_source(source), instance_arch, **profile)))




def verify_many(
    paths: Union[PathLike, Iterable[PathLike]], threads: Optional[int] = None, instance_arch: str = "all",
    **profile: Any,
) -> List[Report]:
    """:func:`verify` on each path, in parallel Rust threads (GIL released); in input order.

    ``paths`` is one path or several (``str`` or ``os.PathLike``); a folder
    stands for every ``*.neff`` under it, sorted by path, as ``neff verify
    DIR`` reads it. Paths that name no NEFF at all raise :class:`neff.NeffIOError`.

    >>> [r.accepted for r in neff.verify_many(["a.neff", "b.neff"], threads=4)]
    [True, True]
    >>> [r.file for r in neff.verify_many("cache/")]
    ['cache/x.neff']
    """
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    # Each report is built here while the native threads check the files after it.
    return _native.verify_many([os.fspath(p) for p in given], instance_arch,
                               lambda doc: Report._from(json.loads(doc)), threads, **profile)


