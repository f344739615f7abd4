"""neff: open, inspect, verify, diff, build and pack AWS Neuron NEFF files.

The work is done by the Rust core (the native module ``neff._native``); this
package is its typed Python surface.

>>> import neff
>>> n = neff.open("model.neff")
>>> n.header.uuid, [g.name for g in n.graphs], n.verify().accepted
"""

from __future__ import annotations

from neff._builder import BuildOutcome, Builder, Subgraph, lift
from neff._errors import MemberNotFound, NeffError, NeffIOError, NeffValueError, Rejected
from neff._native import RUNTIME_VERSION, __version__
from neff._reader import (
    DiffReport, DmaQueue, Engine, Graph, Header, Member, Memory, MemoryFigures, Neff, PackOutcome,
    Report, Source, Tensor, UnpackSummary, Weight, diff, open, pack, read_members, unpack, verify,
    verify_many,
)

__all__ = [
    "RUNTIME_VERSION", "__version__",
    "BuildOutcome", "Builder", "Subgraph",
    "MemberNotFound", "NeffError", "NeffIOError", "NeffValueError", "Rejected",
    "DiffReport", "DmaQueue", "Engine", "Graph", "Header", "Member", "Memory", "MemoryFigures", "Neff",
    "PackOutcome", "Report", "Source", "Tensor", "UnpackSummary", "Weight",
    "diff", "lift", "open", "pack", "read_members", "unpack", "verify", "verify_many",
]
