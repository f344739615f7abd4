# Type stubs of the native module neff._native.
__version__: str
RUNTIME_VERSION: str

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

# --- reader (python/src/reader.rs, python/src/files.rs) ---

def inspect(source: Union[str, bytes]) -> Tuple[str, Optional[str]]: ...
def verify(source: Union[str, bytes], args: List[str]) -> str: ...
def verify_many(paths: List[str], args: List[str], threads: Optional[int] = None) -> List[str]: ...
def read_member(source: Union[str, bytes], name: str) -> Optional[bytes]: ...
def diff(a: str, b: str, ignore: List[str], programs: bool = False) -> str: ...
def pack(dir: str, out: str, options: Dict[str, Any]) -> str: ...
def unpack(
    path: str, dir: str, header_out: Optional[str] = None, force: bool = False, no_verify_hash: bool = False,
    fsync: bool = True,
) -> str: ...

# --- builder (python/src/builder.rs) ---

def build(
    spec: str,
    data: Sequence[Tuple[object, Optional[Tuple[str, List[int]]]]],
    path: Optional[str] = None,
    threads: Optional[int] = None,
    paranoid_readback: bool = False,
    fsync: bool = True,
) -> Tuple[str, Optional[bytes]]: ...
def dtype_known(name: str) -> bool: ...
