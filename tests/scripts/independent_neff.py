"""Writes a NEFF around a folder's files with Python's own tar, gzip and
hashlib, in settings no preset of `neff` uses: the independent writer that
shows a packager this project has never seen needs no new code.

usage: independent_neff.py TREE OUT VARIANT   (VARIANT: gnu, pax, ustar or rle,
the last deflated by zlib with its Z_RLE strategy, which no engine of neff writes)
"""

import gzip
import hashlib
import io
import os
import struct
import sys
import tarfile
import uuid
import zlib

tree, out, variant = sys.argv[1], sys.argv[2], sys.argv[3]

paths = []
for root, dirs, files in os.walk(tree):
    dirs.sort()
    rel = os.path.relpath(root, tree)
    if rel != ".":
        paths.append(rel)
    paths.extend(os.path.normpath(os.path.join(rel, f)) for f in sorted(files))
# An order no sorting gives: the longest names first.
paths.sort(key=lambda p: (-len(p), p))

fmt = {"gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT, "ustar": tarfile.USTAR_FORMAT,
       "rle": tarfile.GNU_FORMAT}[variant]
tar_bytes = io.BytesIO()
with tarfile.open(fileobj=tar_bytes, mode="w", format=fmt) as tar:
    for i, rel in enumerate(paths):
        full = os.path.join(tree, rel)
        info = tar.gettarinfo(full, arcname=rel)
        info.mode = (0o750 if info.isdir() else 0o640) if i % 3 else 0o600
        # 3e9 does not fit 7 octal digits: base-256 (GNU) or a pax record;
        # ustar holds octal only.
        info.uid = (3_000_000_000 if variant != "ustar" else 2_000_000) if i % 2 else 501
        if variant == "ustar" and info.isfile() and i % 2:
            info.type = tarfile.AREGTYPE  # the old NUL type flag
        info.gid = 20 + i % 2
        info.uname = "builder" if i % 2 else "ci"
        info.gname = "staff"
        info.mtime = 1_700_000_000 + i
        if info.isdir():
            tar.addfile(info)
        else:
            with open(full, "rb") as data:
                tar.addfile(info, data)
level = {"gnu": 5, "pax": 9, "ustar": 2, "rle": 6}[variant]
payload = io.BytesIO()
with gzip.GzipFile(
    filename="model.tar" if variant == "gnu" else "",
    mode="wb",
    compresslevel=level,
    fileobj=payload,
    mtime=1_700_000_123,
) as gz:
    gz.write(tar_bytes.getvalue())
payload = payload.getvalue()
if variant == "rle":
    rle = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_RLE)
    deflated = rle.compress(tar_bytes.getvalue()) + rle.flush()
    payload = payload[:10] + deflated + payload[-8:]
if variant == "pax":
    payload += b"\0" * (-len(payload) % 512)

header = bytearray(1024)
struct.pack_into("<QQQQQ", header, 0, 2, 1024, len(payload), 2, 0)
header[0x28 : 0x28 + 12] = b"python-3.x%t"
struct.pack_into("<I", header, 0xA8, 1)
header[0xAC : 0xAC + 16] = hashlib.md5(payload).digest()
header[0xCC : 0xCC + 16] = uuid.uuid4().bytes
header[0xDC : 0xDC + 8] = b"py-model"
struct.pack_into("<I", header, 0x1DC, 1)
struct.pack_into("<I", header, 0x228, 1)
with open(out, "wb") as f:
    f.write(bytes(header) + payload)
