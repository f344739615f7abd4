# Type stubs of the native module neff._native.
__version__: str
RUNTIME_VERSION: str

# --- builder (python/src/builder.rs) ---
from typing import List, Optional, Sequence, Tuple

def build(
    spec: str,
    data: Sequence[Tuple[object, Optional[Tuple[str, List[int]]]]],
    path: Optional[str] = None,
    threads: Optional[int] = None,
) -> Tuple[str, Optional[bytes]]: ...
def dtype_known(name: str) -> bool: ...
