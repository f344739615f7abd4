"""neff: open, inspect, verify, diff, build and pack AWS Neuron NEFF files.

The work is done by the Rust core (the native module ``neff._native``); this
package is its typed Python surface.
"""

from __future__ import annotations

from neff._builder import BuildOutcome, Builder, Subgraph
from neff._errors import NeffError, NeffIOError, Rejected
from neff._native import RUNTIME_VERSION, __version__

__all__ = [
    "RUNTIME_VERSION",
    "BuildOutcome",
    "Builder",
    "NeffError",
    "NeffIOError",
    "Rejected",
    "Subgraph",
    "__version__",
]
