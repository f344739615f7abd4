"""The compile caches NEFFs live in, as ``neff cache`` reads them: :func:`scan`
lists the entries (``neff cache ls``), :func:`verify` checks them under a runtime
profile (``neff cache verify``). Each entry is the JSON object ``neff cache ls
--json`` prints for it (``neff schema cache-listing``): ``path``, ``compiler``,
``module``, ``flags``, ``state``, ``size``, and for a NEFF ``neff``, ``target``,
``graphs``, ``features``, ``uuid`` and ``refusal``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Union

from neff import _native

__all__ = ["scan", "verify"]

PathLike = Union[str, "os.PathLike[str]"]


def scan(root: PathLike, *, stale_after: int = 3600, threads: Optional[int] = None) -> Iterator[Dict[str, Any]]:
    """Yields the entries of the cache at ``root``, as ``neff cache ls`` lists them.

    >>> [(e["path"], e["state"]) for e in neff.cache.scan("cache/")]
    [('x.neff', 'ok')]
    """
    yield from _entries(root, "all", stale_after, threads, {})


def verify(root: PathLike, instance_arch: str = "all", *, stale_after: int = 3600,
           threads: Optional[int] = None, **profile: Any) -> List[Dict[str, Any]]:
    """The entries of the cache at ``root``, each NEFF checked on ``instance_arch``
    under the profile the keywords give (as :func:`neff.verify` takes them); a
    refused one is in state ``refused`` with its ``refusal``.

    >>> [e["state"] for e in neff.cache.verify("cache/", "cayman")]
    ['ok']
    """
    return list(_entries(root, instance_arch, stale_after, threads, profile))


def _entries(root: PathLike, instance_arch: str, stale_after: int, threads: Optional[int],
             profile: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    listing = json.loads(_native.cache_scan(os.fspath(root), instance_arch, stale_after, threads, **profile))
    entries: List[Dict[str, Any]] = listing["entries"]
    yield from entries
