"""Walks NEFF payloads with the real libarchive, as the Neuron runtime does.

The runtime opens `data[0..data_size)` with libarchive's tar format and gzip
filter, then for each header: stops at EOF, fails on anything but OK (a
warning too), skips directories, and reads exactly `size` bytes of every
other entry. This prints, for each input, what that walk sees: every entry
(name as hex, libarchive's file type, size, SHA-256 and length of the data
read) and how the walk ended.

Usage: LIBARCHIVE=/path/libarchive.so.13 python libarchive_walk.py LIST.json
LIST.json is a JSON list of paths: `*.neff` files (the payload is read from
the header's data_size) or raw payload files. Output: a JSON list on stdout.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import struct
import sys
from typing import Any, Dict, List

AE_IFDIR = 0o040000
ARCHIVE_OK, ARCHIVE_EOF = 0, 1


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(os.environ["LIBARCHIVE"])
    lib.archive_read_new.restype = ctypes.c_void_p
    lib.archive_version_string.restype = ctypes.c_char_p
    lib.archive_error_string.restype = ctypes.c_char_p
    lib.archive_error_string.argtypes = [ctypes.c_void_p]
    for name in ("archive_read_support_filter_gzip", "archive_read_support_format_tar",
                 "archive_read_free", "archive_read_close"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.archive_read_open_memory.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.archive_read_next_header.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.archive_read_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.archive_read_data.restype = ctypes.c_ssize_t
    lib.archive_entry_pathname.restype = ctypes.c_char_p
    lib.archive_entry_pathname.argtypes = [ctypes.c_void_p]
    lib.archive_entry_size.restype = ctypes.c_int64
    lib.archive_entry_size.argtypes = [ctypes.c_void_p]
    lib.archive_entry_filetype.restype = ctypes.c_uint
    lib.archive_entry_filetype.argtypes = [ctypes.c_void_p]
    return lib


def payload_of(path: str) -> bytes:
    data = open(path, "rb").read()
    if path.endswith(".neff") and len(data) >= 1024:
        (data_size,) = struct.unpack_from("<Q", data, 0x10)
        return data[1024:1024 + data_size]
    return data


def error(lib: ctypes.CDLL, a: int) -> str:
    text = lib.archive_error_string(a)
    return "(null)" if text is None else text.decode("utf-8", "replace")


def walk(lib: ctypes.CDLL, payload: bytes) -> Dict[str, Any]:
    a = lib.archive_read_new()
    lib.archive_read_support_filter_gzip(a)
    lib.archive_read_support_format_tar(a)
    buf = ctypes.create_string_buffer(payload, len(payload))
    entries: List[Dict[str, Any]] = []
    out: Dict[str, Any] = {"entries": entries}
    try:
        r = lib.archive_read_open_memory(a, buf, len(payload))
        if r != ARCHIVE_OK:
            out["end"] = {"stage": "open", "code": r, "error": error(lib, a)}
            return out
        entry = ctypes.c_void_p()
        chunk = ctypes.create_string_buffer(1 << 16)
        while True:
            r = lib.archive_read_next_header(a, ctypes.byref(entry))
            if r == ARCHIVE_EOF:
                out["end"] = {"stage": "eof"}
                return out
            if r != ARCHIVE_OK:
                out["end"] = {"stage": "header", "code": r, "error": error(lib, a)}
                return out
            name = lib.archive_entry_pathname(entry) or b""
            kind = lib.archive_entry_filetype(entry)
            size = lib.archive_entry_size(entry)
            record: Dict[str, Any] = {"name": name.hex(), "dir": kind == AE_IFDIR, "size": size}
            entries.append(record)
            if kind == AE_IFDIR or size < 0:
                continue
            digest, got = hashlib.sha256(), 0
            while got < size:
                n = lib.archive_read_data(a, chunk, min(len(chunk), size - got))
                if n <= 0:
                    break
                digest.update(chunk.raw[:n])
                got += n
            record["read"] = got
            record["sha256"] = digest.hexdigest()
            if got < size:
                out["end"] = {"stage": "data", "code": n, "error": error(lib, a)}
                return out
    finally:
        lib.archive_read_free(a)


def main() -> None:
    lib = load()
    paths = json.load(open(sys.argv[1]))
    results = [dict(path=p, **walk(lib, payload_of(p))) for p in paths]
    version = lib.archive_version_string().decode()
    json.dump({"libarchive": version, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
