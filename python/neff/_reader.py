"""The reading side of ``neff``: :func:`open` and :class:`Neff`, :func:`verify`,
:func:`verify_many`, :func:`diff`, :func:`pack` and :func:`unpack`.

The Rust core (``neff._native``) does the work with the GIL released and hands
back the documents the CLI prints with ``--json``; this module turns them into
typed, read-only objects. Every object keeps that document in ``.raw``.
"""

from __future__ import annotations

import builtins
import dataclasses
import io
import json
import os
import re
import uuid as _uuid
import warnings
from dataclasses import dataclass, field
from collections.abc import Mapping as _MappingABC
from typing import (
    Any, BinaryIO, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union,
)

from neff import _native
from neff._errors import MemberNotFound, NeffError, NeffValueError
from neff._report import Report, _source, verify, verify_many

__all__ = [
    "DiffReport", "DmaQueue", "Engine", "Graph", "Header", "Member", "Memory", "MemoryFigures",
    "Neff", "PackOutcome", "Report", "Tensor", "UnpackSummary", "Weight",
    "diff", "export_weights", "import_weights", "open", "pack", "read_members", "shrink", "unpack",
    "verify", "verify_many",
]

PathLike = Union[str, "os.PathLike[str]"]
"""A path: ``str`` or any :class:`os.PathLike`."""
Source = Union[PathLike, bytes, BinaryIO]
"""A NEFF: a path (read on demand), its bytes, or a binary file object (a file on disk is
read by its path; any other is read whole)."""
Features = Union[int, str, Iterable[Union[int, str]]]
"""Feature bits: an int, a name (``"vnc"``, ``"neff_feature_vnc"``) or several."""

T = TypeVar("T")


_FIELD_NAMES: Dict[type, FrozenSet[str]] = {}


def _build(cls: Type[T], d: Mapping[str, Any], **override: Any) -> T:
    """A ``cls`` dataclass from the fields of ``d`` it has (and ``raw`` = ``d``)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        _FIELD_NAMES[cls] = names
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names}
    values.update(override)
    if "raw" in names:
        values["raw"] = dict(d)
    return cls(**values)


def _shape(v: Optional[Sequence[int]]) -> Optional[Tuple[int, ...]]:
    return None if v is None else tuple(v)


@dataclass(frozen=True)
class Header:
    """The 1024-byte header, every field typed.

    >>> h = neff.open("m.neff").header
    >>> h.uuid, h.feature_names, h.data_size
    (UUID('...'), (), ...)
    """

    pkg_version: int
    header_size: int
    data_size: int
    neff_version_major: int
    neff_version_minor: int
    build_version: str
    unused_0: int
    hash: str
    """The whole 32-byte ``hash`` field as hex (64 digits): MD5 in the first 16 bytes (pkg 2)
    or SHA-256 (pkg 1), in the layout the producer wrote (:attr:`hash_layout`)."""
    uuid: _uuid.UUID
    name: str
    requested_tpb_count: int
    tpb_per_node: str
    """Hex, trailing zero bytes trimmed."""
    feature_bits: int
    vnc_size: int
    pad: str
    """Hex, trailing zero bytes trimmed."""
    feature_names: Tuple[str, ...] = ()
    """The names of the set feature bits."""
    hash_layout: Optional[str] = None
    """The layout the payload digest matched in (``standard``, ``word-reversed``), if checked."""
    digest: Optional[str] = None
    """The payload's digest in the standard layout (``hashlib.md5(payload).hexdigest()`` for
    pkg 2, SHA-256 for pkg 1), when it was computed."""

    @staticmethod
    def _from(d: Mapping[str, Any], feature_names: Optional[Sequence[str]] = None,
              hash_layout: Optional[str] = None, digest: Optional[str] = None) -> Header:
        names = _native.feature_names(int(d["feature_bits"])) if feature_names is None else feature_names
        return _build(Header, d, uuid=_uuid.UUID(d["uuid"]), feature_names=tuple(names),
                      hash_layout=hash_layout, digest=digest)

    @staticmethod
    def _written(d: Mapping[str, Any], report: Mapping[str, Any]) -> Header:
        """The header of a NEFF just written, with what its check computed."""
        return Header._from(d, None, report.get("hash_layout"), report.get("digest"))


@dataclass(frozen=True)
class Member:
    """One tar entry of the payload.

    >>> [(m.name, m.size) for m in neff.open("m.neff").members() if m.kind == "file"][-2:]
    [('sg00/sp.json', 63), ('sg00/w.npy', 192)]
    """

    name: str
    size: int
    kind: str
    """``file``, ``directory``, ``symlink``, ..."""
    key: str
    """The key the runtime stores it under (``./`` stripped)."""
    header_offset: int
    fate: str
    """What the loader did with it (``stored``, ``skipped``, ...)."""


@dataclass(frozen=True)
class Tensor:
    """An input or output: ``name``, ``dtype``, ``shape``, ``size`` (bytes).

    >>> [(t.name, t.dtype, t.shape) for t in neff.open("m.neff").graphs[0].inputs]
    [('x', 'float32', (4, 4))]
    """

    name: str
    dtype: Optional[str]
    shape: Optional[Tuple[int, ...]]
    size: int
    var_id: Optional[int] = None


@dataclass(frozen=True)
class Weight:
    """A weight (constant) of a graph and the member holding it.

    >>> [(w.name, w.member, w.size) for w in neff.open("m.neff").graphs[0].weights]
    [('w', 'sg00/w.npy', 64)]
    """

    name: str
    var_id: Optional[int]
    member: Optional[str]
    dtype: Optional[str]
    shape: Optional[Tuple[int, ...]]
    size: Optional[int]


@dataclass(frozen=True)
class DmaQueue:
    """A DMA queue of a graph.

    >>> [q.name for q in neff.open("m.neff").graphs[0].queues]
    ['q_in']
    """

    name: str
    owner: Optional[str]
    type: Optional[str]
    semaphores: Optional[int]


@dataclass(frozen=True)
class Engine:
    """An engine's program in a graph.

    >>> [(e.engine, e.instr_size) for e in neff.open("m.neff").graphs[0].engines]
    [('pe', 64), ('act', 0), ('pool', 0), ('dve', 0), ('sp', 0)]
    """

    engine: str
    json: Optional[str]
    instr: Optional[str]
    instr_size: Optional[int]
    dma_blocks: Optional[int]


@dataclass(frozen=True)
class Graph:
    """One graph (subgraph, NeuronCore program) as its def.json describes it.

    >>> g = neff.open("m.neff").graphs[0]
    >>> g.name, len(g.inputs), len(g.weights), [e.engine for e in g.engines]
    ('sg00', 1, 1, ['pe', 'act', 'pool', 'dve', 'sp'])
    """

    name: str
    definition: Optional[str]
    inputs: Tuple[Tensor, ...]
    outputs: Tuple[Tensor, ...]
    weights: Tuple[Weight, ...]
    queues: Tuple[DmaQueue, ...]
    engines: Tuple[Engine, ...]
    #: Set when the graph was not read whole as the runtime reads it: read up
    #: to a gate's refusal in it, or past an earlier graph's refusal for display
    #: only (the text says which).
    partial: Optional[str] = None
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @staticmethod
    def _from(d: Mapping[str, Any], typed: Mapping[Tuple[str, int], Mapping[str, Any]]) -> Graph:
        """``typed``: the model's inputs and outputs by (graph, var_id), for the dtype and shape
        def.json does not carry."""

        def each(cls: Type[T], key: str) -> Tuple[T, ...]:
            return tuple(_build(cls, x) for x in d.get(key) or ())

        def tensors(key: str) -> Tuple[Tensor, ...]:
            def typed_tensor(x: Mapping[str, Any]) -> Tensor:
                io = typed.get((d["name"], x.get("var_id", -1)), {})
                return _build(Tensor, x, dtype=x.get("dtype") or io.get("dtype"),
                              shape=_shape(x.get("shape") or io.get("shape")))
            return tuple(typed_tensor(x) for x in d.get(key) or ())

        return _build(
            Graph, d, inputs=tensors("inputs"), outputs=tensors("outputs"),
            weights=each(Weight, "weights"), queues=each(DmaQueue, "queues"), engines=each(Engine, "engines"),
        )


@dataclass(frozen=True)
class MemoryFigures:
    """Device (HBM) memory of one NeuronCore or the total, in bytes (``neff inspect --memory``).

    >>> neff.open("m.neff").memory().total.total
    128
    """

    model_code: int
    constants: int
    shared_scratchpad: int
    scratchpad: int
    dma_rings_io: int
    dma_rings_spill: int
    total: int
    io_tensors: int
    graph: Optional[str] = None
    #: Set when the graph was not read whole as the runtime reads it (see ``Graph.partial``).
    partial: Optional[str] = None


@dataclass(frozen=True)
class Memory:
    """The ``neff inspect --memory --json`` report: one row per graph and the total.

    >>> m = neff.open("m.neff").memory()
    >>> [(c.graph, c.total) for c in m.cores], m.total.total
    ([('sg00', 128)], 128)
    """

    cores: Tuple[MemoryFigures, ...]
    total: MemoryFigures
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class DiffReport:
    """What differs between two NEFFs (the ``neff diff --json`` document).

    >>> d = neff.diff("a.neff", "b.neff", ignore=("uuid", "name"))
    >>> d.equal, d.header, d.members
    (True, (), {'added': [], 'removed': [], 'changed': []})
    """

    equal: bool
    ignored: Tuple[str, ...]
    header: Tuple[Dict[str, Any], ...]
    members: Dict[str, Any]
    manifests: Tuple[Dict[str, Any], ...]
    programs: Optional[Tuple[Dict[str, Any], ...]] = None
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class PackOutcome:
    """What :func:`pack` wrote.

    >>> out = neff.pack("tree/", "m.neff")
    >>> out.header.uuid, out.tar_size, out.files, out.report.accepted
    (UUID('...'), ..., 15, True)
    """

    file: str
    header: Header
    tar_size: int
    files: int
    directories: int
    report: Report
    #: With a header file recorded from a NEFF (its ``source_hash``): whether
    #: the payload written is that NEFF's, byte for byte; else ``None``.
    payload_matches_source: Optional[bool] = None


@dataclass(frozen=True)
class UnpackSummary:
    """What :func:`unpack` wrote.

    >>> s = neff.unpack("m.neff", "out/", header_out="m.header.json")
    >>> s.files, s.bytes, s.byte_identical_repack
    (15, ..., True)
    """

    files: int
    directories: int
    bytes: int
    replaced: int
    header_out: Optional[str] = None
    recorded_header: Optional[str] = None
    """The header and framing recorded in the tree (``DIR/.neff-unpack.header.json``),
    which :func:`pack` of that tree keeps; ``None`` with ``record_header=False``."""
    byte_identical_repack: Optional[bool] = None
    not_reproduced: Tuple[str, ...] = ()
    #: With ``header_out``, for a gzip payload whose deflate engine was found:
    #: ``{"compared": bytes, "stream": bytes}``, how much of the stored
    #: deflate stream was re-deflated and compared (all with ``prove_deflate``).
    deflate_proof: Optional[Dict[str, int]] = None


PROFILE_KNOBS = (
    "allow_legacy_neff", "verify_hash", "hash_layout", "supported_features", "ucode_abi",
    "evtaccel_offset", "check_var_ids", "virtual_core_size", "lenient_kelf_node", "accept_array_sections",
)
"""The keyword arguments of the verify functions: the fields of the runtime
profile (``neff schema verify-report``'s ``profile``), read as that struct by
the Rust core; ``supported_features`` is an int, feature names, or a list of both."""


def _features(value: Features) -> str:
    """Feature bits as ``parse_features`` reads them."""
    if isinstance(value, (int, str)):
        return str(value)
    return ",".join(str(v) for v in value)


class Neff:
    """A NEFF opened with :func:`open`: its header, members, graphs and verdict,
    and a read-only mapping of the runtime's member map (key → bytes).

    One streaming pass at open reads the header, the member table and the
    manifests; member data is read only when asked for, streaming from the
    file again (or from the bytes given): :meth:`read_many`, :meth:`items` and
    :meth:`iter_members` read any number of members in one pass. A NEFF the
    gates refuse opens (see :attr:`report`) unless its header or payload
    cannot be read at all: then :class:`neff.NeffError` (kind ``Unreadable``,
    with ``.report``). Use it as a context manager, or :meth:`close` it.

    >>> with neff.open("m.neff") as n:
    ...     n.header.name, len(n), "neff.json" in n, n["neff.json"][:1]
    ('m', 15, True, b'{')
    """

    def __init__(self, source: Source) -> None:
        self._source = _source(source)
        self._closed = False
        self._identity = _identity(self._source)
        # A path stays open until close(): where the OS names an open file
        # (/proc/self/fd on Linux), members are read through it, so a file
        # replaced at the path since (a cache's rename) is still the one read.
        self._file: Optional[BinaryIO] = None
        self._fd_path: Optional[str] = None
        if isinstance(self._source, str):
            try:
                self._file = builtins.open(self._source, "rb")
            except OSError:
                pass  # the native reader reports it, naming the path
            else:
                fd_path = f"/proc/self/fd/{self._file.fileno()}"
                if os.path.exists(fd_path) and _identity(fd_path) == self._identity:
                    self._fd_path = fd_path
        inspect, memory, verified = _native.inspect(self._source)
        self._check_identity("while it was opened")
        self._inspect: Dict[str, Any] = json.loads(inspect)
        self._memory: Optional[Dict[str, Any]] = json.loads(memory) if memory is not None else None
        verdict = self._inspect["verdict"]
        if self._inspect.get("tar_size") is None or not self._inspect.get("header"):
            raise _unreadable(self._inspect["file"], verdict)
        self.header: Header = Header._from(
            self._inspect["header"], self._inspect.get("feature_names"), verdict.get("hash_layout"),
            verdict.get("digest"),
        )
        """The header."""
        model = self._inspect.get("model") or {}
        typed = {(v["graph"], v["var_id"]): t for t in model.get("inputs", []) + model.get("outputs", [])
                 for v in t.get("vars", ())}
        self.graphs: Tuple[Graph, ...] = tuple(Graph._from(g, typed) for g in model.get("graphs", ()))
        """Each graph's inputs, outputs, weights, DMA queues and engines."""
        self.report: Report = Report._from(json.loads(verified))
        """The verdict under the default profile on every arch (as :func:`neff.verify` gives it)."""
        self._stored: Dict[str, Member] = {m.key: m for m in self.members() if m.fate == "stored"}

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"Neff({self._inspect['file']!r}, graphs={[g.name for g in self.graphs]!r}{state})"

    def __enter__(self) -> Neff:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # As zipfile does: a one-liner (`neff.open(p).header`) closes its file
        # when collected, without a ResourceWarning.
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def close(self) -> None:
        """Closes the file: later member reads raise ``ValueError`` (the header,
        graphs and report stay). Closing twice is allowed.

        >>> n = neff.open("m.neff"); n.close(); n.closed
        True
        """
        self._closed = True
        if self._file is not None:
            self._file.close()
            self._file = None
            self._fd_path = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("I/O operation on a closed NEFF")

    def _members_source(self) -> Union[str, bytes]:
        """Where member data is read: the open file, else the path (or bytes)."""
        return self._fd_path or self._source

    def _check_identity(self, when: str) -> None:
        """Refuses to go on when the file read is no longer the one opened:
        rewritten in place, or (where the path is read again) replaced by a
        rename, as compile caches and ``neff pack`` do. Its members would not
        match this header and graphs."""
        current = _identity(self._fd_path) if self._fd_path else _identity(self._source)
        if self._identity is None or current == self._identity:
            return
        assert isinstance(self._source, str)
        raise NeffError(f"{self._source} was replaced or changed {when}: its members may not "
                        f"match this header; open it again", "Replaced", path=self._source)

    def members(self) -> List[Member]:
        """Every tar entry: name, size, kind, key and what the loader did with it.

        >>> [m.name for m in neff.open("m.neff").members()]
        ['info.json', 'kelf-0.json', 'neff.json', 'sg00/', 'sg00/act.bin', ..., 'sg00/w.npy']
        """
        return [_build(Member, m, kind=m["type"]) for m in self._inspect.get("members", ())]

    def names(self) -> List[str]:
        """The keys of the runtime's member map, in archive order (directories,
        replaced duplicates and ``wavegraph-bin.json`` entries are not in it).

        >>> neff.open("m.neff").names()[:2]
        ['info.json', 'kelf-0.json']
        """
        return list(self._stored)

    keys = names

    def __len__(self) -> int:
        return len(self._stored)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._stored))

    def __contains__(self, name: object) -> bool:
        return name in self._stored

    def __getitem__(self, name: str) -> bytes:
        """The data of member ``name``; :class:`neff.MemberNotFound` (a ``KeyError``) if there is none."""
        return self.read_many([name])[name]

    def get(self, name: str, default: Optional[bytes] = None) -> Optional[bytes]:
        """The data of member ``name``, else ``default``."""
        return self[name] if name in self._stored else default

    def _missing(self, name: str) -> MemberNotFound:
        names = ", ".join(self._stored)
        return MemberNotFound(f"no member {name!r}; the members are: {names}", "NotFound", member=name)

    def iter_members(self, names: Optional[Iterable[str]] = None) -> Iterator[Tuple[str, bytes]]:
        """``(name, bytes)`` of the members ``names`` (default: all), in archive
        order, in one streaming pass: about two members are held at a time.

        >>> for name, data in neff.open("m.neff").iter_members():
        ...     print(name, len(data))
        info.json ...
        ...
        sg00/w.npy 192
        """
        self._check_open()
        wanted = list(self._stored) if names is None else list(dict.fromkeys(names))
        for name in wanted:
            if name not in self._stored:
                raise self._missing(name)
        self._check_identity("since it was opened")
        offsets = [self._stored[n].header_offset for n in wanted]
        for name, data in _native.Members(self._members_source(), offsets):
            self._check_identity("while it was read")
            yield name, data

    def read_many(self, names: Iterable[str]) -> Dict[str, bytes]:
        """The data of several members, read in one pass.

        >>> neff.open("m.neff").read_many(["neff.json", "kelf-0.json"]).keys()
        dict_keys(['kelf-0.json', 'neff.json'])
        """
        return dict(self.iter_members(names))

    def items(self) -> Iterator[Tuple[str, bytes]]:
        """Every member and its data, in one pass (see :meth:`iter_members`)."""
        return self.iter_members()

    def values(self) -> Iterator[bytes]:
        """Every member's data, in one pass."""
        return (data for _, data in self.iter_members())

    def extract(self, dir: PathLike, force: bool = False, fsync: bool = True) -> UnpackSummary:
        """Writes every member into the new or empty folder ``dir``, as
        :func:`neff.unpack` (``neff unpack``) does, in one pass.

        >>> neff.open("m.neff").extract("out/").files
        15
        """
        self._check_open()
        if isinstance(self._source, str):
            self._check_identity("since it was opened")
            return unpack(self._source, dir, force=force, fsync=fsync)
        import tempfile  # only here: it costs every `import neff` several ms

        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "source.neff")
            with builtins.open(path, "wb") as f:
                f.write(self._source)
            return unpack(path, dir, force=force, fsync=fsync)

    def _weight_index(self) -> Dict[str, Weight]:
        """Every weight with a member, by name (``graph/name`` where two graphs share a name)."""
        counts: Dict[str, int] = {}
        for g in self.graphs:
            for w in g.weights:
                counts[w.name] = counts.get(w.name, 0) + 1
        return {(w.name if counts[w.name] == 1 else f"{g.name}/{w.name}"): w
                for g in self.graphs for w in g.weights if w.member is not None}

    def weights(self, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """Weights as numpy arrays, by var name (``graph/name`` where two graphs
        share a name), read in one pass: dtype and shape from the ``.npy``
        header, or from def.json for raw weights. bfloat16 (``.npy`` descr
        ``'<V2'``, or def.json ``bfloat16``) comes back as ``ml_dtypes.bfloat16``
        when ``ml_dtypes`` is installed (``pip install neff[bf16]``), else as
        ``uint16`` bit patterns with a :class:`UserWarning` saying so. The arrays
        are read-only views of the member bytes. Needs numpy.

        >>> w = neff.open("m.neff").weights()
        >>> {k: (a.dtype, a.shape) for k, a in w.items()}
        {'w': (dtype('float32'), (4, 4))}
        """
        index = self._weight_index()
        wanted = list(index) if names is None else list(names)
        for name in wanted:
            if name not in index:
                raise MemberNotFound(f"no weight {name!r}; the weights are: {', '.join(index)}",
                                     "NotFound", member=name)
        by_member = {index[n].member: n for n in wanted}
        data = self.read_many(m for m in by_member if m is not None)
        return {n: _weight_array(index[n], data[str(index[n].member)]) for n in wanted}

    def weight(self, name: str) -> Any:
        """One weight as a numpy array (see :meth:`weights`).

        >>> neff.open("m.neff").weight("w").shape
        (4, 4)
        """
        return self.weights([name])[name]

    def read(self, name: str) -> bytes:
        """The data of member ``name`` (by its key, ``./`` stripped), streamed from the payload.

        Raises :class:`neff.MemberNotFound` (a ``KeyError``) listing the members.

        >>> neff.open("m.neff").read("neff.json")[:1]
        b'{'
        """
        self._check_open()
        self._check_identity("since it was opened")
        data = _native.read_member(self._members_source(), name)
        self._check_identity("while it was read")
        if data is None:
            raise self._missing(name)
        return data

    def memory(self) -> Memory:
        """Device memory per NeuronCore (``neff inspect --memory``); needs a readable model.

        >>> neff.open("m.neff").memory().total.total
        128
        """
        if self._memory is None:
            raise MemberNotFound(f"no model to size: {self.report.message}", "NoModel")
        cores = tuple(_build(MemoryFigures, c) for c in self._memory["cores"])
        return Memory(cores, _build(MemoryFigures, self._memory["total"]), self._memory)

    def inspect(self) -> Dict[str, Any]:
        """The ``neff inspect --json`` document.

        >>> neff.open("m.neff").inspect()["header"]["uuid"]
        '...'
        """
        copy: Dict[str, Any] = json.loads(json.dumps(self._inspect))  # the caller may change it
        return copy

    def verify(self, instance_arch: str = "all", **profile: Any) -> Report:
        """Runs the loader's gates (``neff verify``) on ``instance_arch`` (``"all"``:
        every arch the NEFF targets) under the runtime profile the keyword
        arguments set (:data:`PROFILE_KNOBS`: the profile's fields, as
        ``neff verify --json`` prints them under ``profile``).

        >>> neff.open("m.neff").verify(instance_arch="cayman", verify_hash=False).accepted
        True
        """
        return Report._from(json.loads(_native.verify(self._source, instance_arch, **profile)))


_MappingABC.register(Neff)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError("weights as arrays need numpy (pip install numpy)") from None
    return numpy


def _bfloat16(numpy: Any, what: str) -> Any:
    """``ml_dtypes.bfloat16`` if installed, else ``uint16`` with a warning."""
    try:
        import ml_dtypes  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        warnings.warn(f"{what} is bfloat16: returned as uint16 bit patterns "
                      f"(install ml_dtypes for numpy bfloat16: pip install neff[bf16])", stacklevel=4)
        return numpy.dtype("<u2")
    return numpy.dtype(ml_dtypes.bfloat16)


def _weight_array(weight: Weight, data: bytes) -> Any:
    """A weight member's bytes as an array: the ``.npy`` header's dtype and
    shape, else def.json's."""
    numpy = _numpy()
    what = f"weight {weight.name!r} ({weight.member})"
    if data[:6] == b"\x93NUMPY":
        fmt = numpy.lib.format
        stream = io.BytesIO(data)
        version = fmt.read_magic(stream)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        try:
            shape, fortran, dtype = read_header(stream)
        except ValueError:
            # A descr numpy cannot read as is ('<V2' is read; anything else is refused).
            raise NeffValueError(f"{what}: the .npy header cannot be read by numpy", "BadData",
                                 member=weight.member) from None
        offset = stream.tell()
        if dtype.kind == "V" and dtype.itemsize == 2 and dtype.fields is None:
            dtype = _bfloat16(numpy, what)
    else:
        offset, fortran = 0, False
        name = weight.dtype or ""
        shape = weight.shape
        if shape is None:
            raise NeffValueError(f"{what}: a raw weight with no shape in def.json", "BadData",
                                 member=weight.member)
        if name == "bfloat16":
            dtype = _bfloat16(numpy, what)
        else:
            try:
                dtype = numpy.dtype(name)
            except TypeError:
                raise NeffValueError(f"{what}: dtype {name!r} has no numpy equivalent", "BadData",
                                     member=weight.member) from None
    count = 1
    for d in shape:
        count *= int(d)
    if len(data) - offset != count * dtype.itemsize:
        raise NeffValueError(f"{what}: {len(data) - offset} data bytes, but {dtype} {tuple(shape)} "
                             f"needs {count * dtype.itemsize}", "BadData", member=weight.member)
    array = numpy.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return array.reshape(shape, order="F" if fortran else "C")


def _identity(source: Union[str, bytes]) -> Optional[Tuple[int, int, int, int]]:
    """What identifies the file at a path: device, inode, size and
    modification time (``None`` for bytes, or a path that cannot be read)."""
    if not isinstance(source, str):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _unreadable(file: str, verdict: Dict[str, Any]) -> NeffError:
    """The error of a NEFF whose header or payload cannot be read (so has no members):
    the refusal's gate and log line, ``offset`` the header field it names (``(+0x010)``)."""
    detail = verdict.get("detail") or ""
    field_at = re.search(r"\(\+0x([0-9a-f]+)\)", detail)
    error = NeffError(
        f"not a readable NEFF: {verdict.get('gate')}: {verdict.get('message')} ({detail})", "Unreadable",
        path=None if file == "<bytes>" else file, offset=int(field_at.group(1), 16) if field_at else None,
    )
    error.report = verdict
    return error


def open(source: Source) -> Neff:  # noqa: A001 - the API's name
    """Opens a NEFF (a path, its bytes, or a binary file object) lazily.

    >>> n = neff.open("model.neff")
    >>> n.header.name, n.graphs[0].inputs
    ('m', (Tensor(name='x', dtype='float32', shape=(4, 4), size=64, var_id=0),))
    """
    return Neff(source)


def read_members(source: Source, names: Iterable[str]) -> Dict[str, bytes]:
    """The data of the members ``names`` (keys, as :meth:`Neff.names` lists them) in
    one pass over the payload, which is also the loader's container check (inflate,
    tar walk, payload hash): each as the runtime keeps it (the last entry of its key).
    Cheaper than :func:`open` followed by :meth:`Neff.read_many` (two passes) when
    only the members are wanted. A name not in the runtime's member map raises
    :class:`neff.MemberNotFound`; a NEFF the container gates refuse (a payload that
    cannot be read, a hash that does not match), :class:`neff.NeffError` naming the
    gate (:func:`open` reads the members of a refused NEFF).

    >>> neff.read_members("m.neff", ["neff.json", "sg00/def.json"]).keys()
    dict_keys(['neff.json', 'sg00/def.json'])
    """
    wanted = list(dict.fromkeys(names))
    found = dict(_native.read_members(_source(source), wanted))
    for name in wanted:
        if name not in found:
            raise MemberNotFound(f"no member {name!r} in the runtime's member map", "NotFound", member=name)
    return found


def diff(a: PathLike, b: PathLike, ignore: Iterable[str] = (), programs: bool = False) -> DiffReport:
    """Compares two NEFFs as ``neff diff`` does (``ignore``: header fields, ``mtime``, ``framing``).

    >>> neff.diff("a.neff", "b.neff", ignore=("uuid", "name", "mtime", "framing")).equal
    True
    """
    return _build(DiffReport, json.loads(_native.diff(os.fspath(a), os.fspath(b), list(ignore), programs)))


def pack(
    dir: PathLike,
    out: PathLike,
    *,
    pkg_version: Optional[int] = None,
    level: Optional[int] = None,
    framing: Optional[str] = None,
    uuid: Union[str, _uuid.UUID, None] = None,
    name: Optional[str] = None,
    feature_bits: Optional[Features] = None,
    major: Optional[int] = None,
    minor: Optional[int] = None,
    build_version: Optional[str] = None,
    vnc_size: Optional[int] = None,
    requested_tpb_count: Optional[int] = None,
    threads: Optional[int] = None,
    header: Optional[PathLike] = None,
    recorded_header: bool = True,
    keep_refused: bool = False,
    paranoid_readback: bool = False,
    fsync: bool = True,
) -> PackOutcome:
    """Packs a folder into a NEFF as ``neff pack`` does (atomically, checked by the gates).

    The options are ``neff pack``'s flags: ``pkg_version`` (2: gzip + MD5, 1: raw
    tar + SHA-256), ``level`` (1-9), ``framing`` (``gnu``, ``neuronx-cc``,
    ``neuronx-cc-2.16``, ``neuronx-cc-2.27``), ``uuid`` (a UUID or ``"random"``; default derived from
    the content), header fields, ``threads``, ``header`` (a ``neff unpack
    --header-out`` file, for a byte-identical repack; without it, the header and
    framing :func:`unpack` recorded in ``dir`` are kept unless
    ``recorded_header=False``), ``keep_refused`` (keep
    an output the gates refuse, for negative fixtures),
    ``paranoid_readback`` (read the whole output back through the gates instead
    of checking it as it is written) and
    ``fsync`` (``False``: ``--no-fsync``, no fsync of the file and its folder;
    faster, but after a power cut soon after the file may be the old one, the
    new one or empty).

    Raises :class:`neff.Rejected` when the gates refuse it, unless ``keep_refused``.

    >>> neff.pack("tree/", "m.neff", framing="neuronx-cc", name="m").report.accepted
    True
    """
    options = {
        "pkg_version": pkg_version, "level": level, "framing": framing,
        "uuid": None if uuid is None else str(uuid), "name": name,
        "feature_bits": None if feature_bits is None else _features(feature_bits),
        "major": major, "minor": minor, "build_version": build_version, "vnc_size": vnc_size,
        "requested_tpb_count": requested_tpb_count, "threads": threads,
        "keep_refused": keep_refused, "paranoid_readback": paranoid_readback,
        "no_fsync": not fsync,
    }
    header_file = None if header is None else os.fspath(header)
    d = json.loads(_native.pack(os.fspath(dir), os.fspath(out), json.dumps(options), header_file,
                                not recorded_header))
    return _build(PackOutcome, d, header=Header._written(d["header"], d["report"]), report=Report._from(d["report"]))


def unpack(
    path: PathLike, dir: PathLike, header_out: Optional[PathLike] = None, force: bool = False,
    no_verify_hash: bool = False, fsync: bool = True, prove_deflate: bool = False, record_header: bool = True,
) -> UnpackSummary:
    """Unpacks every member into ``dir`` as ``neff unpack`` does; ``header_out`` writes the repack header.

    ``byte_identical_repack`` rests on the deflate stream proven over its first
    16 MiB (``deflate_proof``); ``prove_deflate=True`` proves all of it
    (``neff unpack --prove-deflate``), which costs as long as a pack.

    ``dir`` (and ``header_out``) are synced once at the end unless ``fsync=False``
    (``neff unpack --no-fsync``).

    The NEFF's header and framing are recorded in ``dir/.neff-unpack.header.json``
    (never packed), so that :func:`pack` of ``dir`` rebuilds it;
    ``record_header=False`` records nothing and removes an older record.

    >>> neff.unpack("m.neff", "out/", header_out="m.header.json").files
    15
    """
    h = None if header_out is None else os.fspath(header_out)
    return _build(UnpackSummary, json.loads(_native.unpack(os.fspath(path), os.fspath(dir), h, force, no_verify_hash,
                                                           fsync, prove_deflate, record_header)))


def export_weights(source: PathLike, out: PathLike) -> int:
    """Writes the weights of the NEFF ``source`` to the safetensors file ``out`` as
    ``neff weights --export`` does: one tensor per weight, keyed ``<graph>/<var name>``
    (the keys of :meth:`Neff.weights` prefixed by their graph). Returns how many.

    >>> neff.export_weights("m.neff", "w.safetensors")
    1
    """
    return _native.export_weights(os.fspath(source), os.fspath(out))


def import_weights(source: PathLike, tensors: PathLike, out: PathLike, *, retype: bool = False) -> PackOutcome:
    """Writes the NEFF ``source`` with its weights read from the safetensors file
    ``tensors`` at ``out``, as ``neff weights --import`` does: a tensor naming no
    weight, or of another dtype or shape (unless ``retype=True``), raises
    :class:`neff.NeffError`; an unchanged export gives ``source`` byte for byte.

    >>> neff.export_weights("m.neff", "w.safetensors")
    1
    >>> neff.import_weights("m.neff", "w.safetensors", "same.neff").report.accepted
    True
    """
    d = json.loads(_native.import_weights(os.fspath(source), os.fspath(tensors), os.fspath(out), retype))
    return _build(PackOutcome, d, header=Header._written(d["header"], d["report"]), report=Report._from(d["report"]))


def shrink(source: PathLike, out: PathLike, predicate: Callable[[str], bool], *, max_steps: int = 10_000,
           seed: int = 0) -> int:
    """Reduces the NEFF ``source`` to the smallest one for which ``predicate`` (called
    with a candidate's path) stays true, as ``neff shrink`` does, writing it at ``out``;
    returns its size. Every candidate is a NEFF this package's writer produced.

    >>> refused_on_sunda = lambda p: neff.verify(p, "sunda").gate == "G17"
    >>> neff.shrink("m.neff", "small.neff", refused_on_sunda) < os.path.getsize("m.neff")
    True
    """
    _, to, _ = _native.shrink(os.fspath(source), os.fspath(out), predicate, max_steps, seed)
    return to
