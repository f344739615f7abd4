"""neff: open, inspect, verify, diff, build and pack AWS Neuron NEFF files.

The work is done by the Rust core (the native module ``neff._native``); this
package is its typed Python surface.

>>> import neff
>>> n = neff.open("model.neff")
>>> n.header.uuid, [g.name for g in n.graphs], n.verify().accepted
(UUID('...'), ['sg00'], True)
"""

from __future__ import annotations

from neff._errors import MemberNotFound, NeffError, NeffIOError, NeffValueError, Rejected
from neff._native import RUNTIME_VERSION, __version__
from neff._report import Report, verify, verify_many

TYPE_CHECKING = False
if TYPE_CHECKING:
    from neff import cache
    from neff._builder import BuildOutcome, Builder, Subgraph, lift
    from neff._reader import (
        DiffReport, DmaQueue, Engine, Graph, Header, Member, Memory, MemoryFigures, Neff, PackOutcome,
        Source, Tensor, UnpackSummary, Weight, diff, export_weights, import_weights, open, pack,
        read_members, shrink, unpack,
    )

__all__ = [
    "RUNTIME_VERSION", "__version__",
    "BuildOutcome", "Builder", "Subgraph", "cache",
    "MemberNotFound", "NeffError", "NeffIOError", "NeffValueError", "Rejected",
    "DiffReport", "DmaQueue", "Engine", "Graph", "Header", "Member", "Memory", "MemoryFigures", "Neff",
    "PackOutcome", "Report", "Source", "Tensor", "UnpackSummary", "Weight",
    "diff", "export_weights", "import_weights", "lift", "open", "pack", "read_members", "shrink",
    "unpack", "verify", "verify_many",
]

# The rest of the API is imported on first use (PEP 562): `import neff` followed by
# `neff.verify_many` loads no more than that needs.
_LAZY = {
    **dict.fromkeys(("BuildOutcome", "Builder", "Subgraph", "lift"), "neff._builder"),
    **dict.fromkeys(
        ("DiffReport", "DmaQueue", "Engine", "Graph", "Header", "Member", "Memory", "MemoryFigures", "Neff",
         "PackOutcome", "Source", "Tensor", "UnpackSummary", "Weight", "diff", "export_weights",
         "import_weights", "open", "pack", "read_members", "shrink", "unpack"),
        "neff._reader",
    ),
}


def __getattr__(name: str) -> object:
    if name == "cache":  # the submodule, imported on first use too
        import importlib

        return importlib.import_module("neff.cache")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'neff' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
