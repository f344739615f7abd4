"""Writes files that carry NEFFs, with Python's own zipfile and pickle and a
hand-encoded protobuf (an independent writer of each format):

usage: carriers.py KIND OUT NEFF [NEFF ...]
  KIND: hlo          an xla.HloModuleProto, one AwsNeuronNeff custom call per NEFF
        zip-stored   a TorchScript-like zip, the NEFFs pickled in model/data.pkl (stored)
        zip-deflated the same with the member deflated
"""

import pickle
import sys
import zipfile


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def hlo(neffs):
    instructions = [field(1, b"p0") + field(2, b"parameter")]
    for i, neff in enumerate(neffs):
        instructions.append(
            field(1, b"cc.%d" % i)
            + field(2, b"custom-call")
            + varint(35 << 3 | 0) + varint(7 + i)  # id = 35 (varint), skipped
            + field(28, b"AwsNeuronNeff")
            + field(43, neff)
        )
    computation = field(1, b"main") + b"".join(field(2, x) for x in instructions)
    return field(1, b"wrapped") + field(3, computation) + varint(6 << 3) + varint(1)


kind, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
neffs = [open(p, "rb").read() for p in paths]
if kind == "hlo":
    with open(out, "wb") as f:
        f.write(hlo(neffs))
else:
    method = zipfile.ZIP_STORED if kind == "zip-stored" else zipfile.ZIP_DEFLATED
    # As torch-neuron(x) pickles a NEFF: BINUNICODE ('X', 4-byte length)
    # holding the raw bytes; then the same NEFFs as bytes objects in a
    # protocol-4 pickle of Python's own, which must not be counted twice.
    data = b"\x80\x02(" + b"".join(b"X" + len(n).to_bytes(4, "little") + n for n in neffs) + b"t."
    assert pickle.loads(pickle.dumps(neffs, protocol=4)) == neffs
    with zipfile.ZipFile(out, "w", compression=method) as z:
        z.writestr("model/version", b"3\n")
        z.writestr("model/data.pkl", data)
        z.writestr("model/constants.pkl", pickle.dumps(("x" * 10, 12345), protocol=4))
        # Protocol 2 pickles bytes as latin-1 text: not the NEFF's bytes.
        z.writestr("model/extra.pkl", pickle.dumps(neffs[:1], protocol=2))
