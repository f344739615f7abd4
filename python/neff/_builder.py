"""``neff.Builder``: describe a model in Python, write it as a NEFF.

The builder fills the build spec's typed model, held by the Rust core
(``neff build`` reads the same model as JSON; ``neff schema build-spec``
documents every key, and the methods and arguments here have the same
names): each call's arguments are read as the model's types there, so an
error names the spec key at fault. Writing generates the manifests, runs the
loader's gates before anything is written, and packs the NEFF
deterministically and atomically.

Data (weights, instruction streams, ucode libraries, extra members) is a path
(streamed from the file when the NEFF is written) or any object with the
buffer protocol (numpy arrays, ``bytes``, ``bytearray``, ``memoryview``…),
read in place without a copy while the GIL is released; the object is held,
so it cannot be freed or resized meanwhile (do not write to it either).
numpy is optional and never imported here: an array is recognised when numpy
is already loaded.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

from neff import _native
from neff._errors import NeffError, _from_native
from neff._reader import Header, Report

__all__ = ["BuildOutcome", "Builder", "Subgraph"]

#: A path (``str`` or ``os.PathLike``), else an object with the buffer protocol.
Data = object
#: Data as the native model takes it: ``("path", path, None)`` or
#: ``("buffer", object, npy header or None)``.
_DataRef = Tuple[str, object, Optional[Tuple[str, List[int]]]]

#: Weight formats: ``.npy`` v1 or raw bytes.
WEIGHT_FORMATS = ("npy", "raw")


@dataclass(frozen=True)
class BuildOutcome:
    """What writing a NEFF produced, as ``neff build --json`` reports it, with
    the types :func:`neff.pack` and :func:`neff.open` use: the :class:`neff.Header`
    written, the loader's :class:`neff.Report` on it (every arch it targets),
    the tar stream's length and the member counts.

    >>> outcome = builder.write("m.neff")
    >>> outcome.accepted, outcome.header.uuid
    (True, UUID('...'))
    """

    header: Header
    report: Report
    tar_size: int
    files: int
    directories: int
    #: With a spec lifted from a NEFF (its ``source_hash``): whether the
    #: payload written is that NEFF's, byte for byte; else ``None``.
    payload_matches_source: Optional[bool] = None

    @property
    def accepted(self) -> bool:
        """Whether the loader accepts the NEFF written.

        >>> builder.write("m.neff").accepted
        True
        """
        return self.report.accepted

    @staticmethod
    def _from(d: Dict[str, Any]) -> BuildOutcome:
        return BuildOutcome(Header._written(d["header"], d["report"]), Report._from(d["report"]), d["tar_size"],
                            d["files"], d["directories"], d.get("payload_matches_source"))


def _error(key: str, message: str) -> NeffError:
    """A spec error at ``key``, made as the native errors are."""
    location = {"path": None, "member": None, "key": key, "offset": None}
    return _from_native("Spec", "error", f"{key}: {message}", location, None, None)


def _numpy_array(data: object) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(data, numpy.ndarray)


def _check_weight_dtype(array: Any, key: str) -> None:
    """Refuses an array whose dtype the runtime does not know: object arrays
    (their bytes are the process's pointers), structured, string, datetime
    and complex arrays, naming the dtype."""
    dtype = array.dtype
    if dtype.name == "bfloat16":  # ml_dtypes.bfloat16: written as the compilers do ('<V2')
        return
    kinds = {"O": "an object array (its bytes are Python object pointers)",
             "V": "a structured or void array", "U": "a unicode string array",
             "S": "a byte string array", "M": "a datetime array", "m": "a timedelta array",
             "c": "a complex array"}
    if dtype.kind in kinds or dtype.fields is not None:
        why = kinds.get(dtype.kind, "a structured array")
        raise _error(f"{key}.dtype", f"{dtype.str!r} ({dtype.name}) is {why}: the runtime "
                                      f"reads weights of numeric dtypes only")
    if not _native.dtype_known(dtype.name):
        raise _error(f"{key}.dtype", f"{dtype.str!r} ({dtype.name}) is not a dtype the runtime "
                                      f"knows (see `neff schema build-spec`)")


def _data(data: Data, key: str, npy: Optional[Tuple[str, List[int]]] = None) -> _DataRef:
    """Data as the native model takes it: a path (absolute), or a buffer
    (C-contiguous) with the ``.npy`` header to put before it."""
    if isinstance(data, (str, os.PathLike)):
        return ("path", os.path.abspath(os.fspath(data)), None)
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise _error(key, f"expected a path or an object with the buffer protocol, "
                          f"not {type(data).__name__}") from None
    with view:
        if not view.c_contiguous:
            raise _error(key, "the data is not C-contiguous (numpy.ascontiguousarray "
                              "gives a copy that is)")
    return ("buffer", data, npy)


def _weight_data(data: Data, key: str, format: Optional[str],
                 dtype: Optional[str] = None) -> Tuple[str, _DataRef]:
    """The weight's format and data: an array as ``.npy`` v1 by default, a
    path by its extension, other buffers raw. A bfloat16 array
    (``ml_dtypes.bfloat16``, or 16-bit integers given with ``dtype="bfloat16"``)
    gets the descr the compilers write, ``'<V2'``."""
    if format is not None and format not in WEIGHT_FORMATS:
        raise _error(f"{key}.format", f"{format!r} is not one of {WEIGHT_FORMATS}")
    if _numpy_array(data):
        array: Any = data
        if not array.flags.c_contiguous:
            raise _error(key, "the array is not C-contiguous (numpy.ascontiguousarray "
                              "gives a copy that is)")
        _check_weight_dtype(array, key)
        fmt = format or "npy"
        descr = str(array.dtype.str)
        if array.dtype.name == "bfloat16":
            array = array.view("<u2")  # ml_dtypes arrays have no buffer protocol
            descr = "<V2"
        elif dtype == "bfloat16" and descr in ("<u2", "<i2"):
            descr = "<V2"
        header = (descr, [int(d) for d in array.shape]) if fmt == "npy" else None
        return fmt, _data(array, f"{key}.{fmt}", header)
    if isinstance(data, (str, os.PathLike)):
        fmt = format or ("npy" if os.fspath(data).endswith(".npy") else "raw")
    else:
        fmt = format or "raw"
    return fmt, _data(data, f"{key}.{fmt}")


class Subgraph:
    """One subgraph (``sgNN/``): its variables, DMA queues and blocks, engine
    programs, ucode libraries and carveouts. Made by :meth:`Builder.subgraph`.

    Variables get dense var_ids as in the build spec: inputs, then outputs,
    then tmp_bufs, state_buffers, weights and vars, each in call order,
    except those that pin a ``var_id``.

    >>> with builder.subgraph("sg00") as sg:
    ...     sg.input("x", "float32", (4, 4))
    ...     sg.output("y", "float32", (4, 4))
    <neff.Subgraph 'sg00'>
    <neff.Subgraph 'sg00'>
    """

    def __init__(self, model: Any, index: int, name: str) -> None:
        self._model, self._index, self._name = model, index, name
        self._key = f"subgraphs[{index}]"
        self._lengths: Dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<neff.Subgraph {self._name!r}>"

    def __enter__(self) -> Subgraph:
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        return None

    @property
    def name(self) -> str:
        """The subgraph's folder and KELF graph name.

        >>> builder.subgraph("sg00").name
        'sg00'
        """
        return self._name

    def _var(self, kind: str, name: str, dtype: Optional[str], shape: Optional[Sequence[int]],
             size: Optional[int], var_id: Optional[int], extra: Optional[Mapping[str, Any]],
             **more: Any) -> Subgraph:
        self._model.var(self._index, kind, name=name, dtype=dtype, shape=shape, size=size,
                        var_id=var_id, extra=extra, **more)
        self._lengths[kind] = self._lengths.get(kind, 0) + 1
        return self

    def input(self, name: str, dtype: str, shape: Sequence[int], *, size: Optional[int] = None,
              var_id: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A model input (``type: "input"``).

        >>> sg.input("x", "float32", (4, 4))
        <neff.Subgraph 'sg00'>
        """
        return self._var("inputs", name, dtype, shape, size, var_id, extra)

    def output(self, name: str, dtype: str, shape: Sequence[int], *, size: Optional[int] = None,
               var_id: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A model output (``type: "output"``); a subgraph needs at least one (G20b).

        >>> sg.output("y", "float32", (4, 4))
        <neff.Subgraph 'sg00'>
        """
        return self._var("outputs", name, dtype, shape, size, var_id, extra)

    def tmp_buf(self, name: str, dtype: Optional[str] = None,
                shape: Optional[Sequence[int]] = None, *, size: Optional[int] = None,
                var_id: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A scratch buffer (``type: "tmp-buf"``): a size, or a dtype and shape.

        >>> sg.tmp_buf("scratch", size=128)
        <neff.Subgraph 'sg00'>
        """
        return self._var("tmp_bufs", name, dtype, shape, size, var_id, extra)

    buffer = tmp_buf

    def state_buffer(self, name: str, dtype: Optional[str] = None,
                     shape: Optional[Sequence[int]] = None, *, size: Optional[int] = None,
                     var_id: Optional[int] = None,
                     extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A state-buffer variable (``type: "state-buffer"``).

        >>> sg.state_buffer("SB", var_id=1)
        <neff.Subgraph 'sg00'>
        """
        return self._var("state_buffers", name, dtype, shape, size, var_id, extra)

    def var(self, name: str, type: str, dtype: Optional[str] = None,
            shape: Optional[Sequence[int]] = None, *, size: Optional[int] = None,
            var_id: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A variable of any other ``type`` (``virtual``, ``pointer``, ``list``…).

        >>> sg.var("p", "pointer")
        <neff.Subgraph 'sg00'>
        """
        return self._var("vars", name, dtype, shape, size, var_id, extra, type=type)

    def weight(self, name: str, data: Data, dtype: Optional[str] = None,
               shape: Optional[Sequence[int]] = None, *, format: Optional[str] = None,
               file_name: Optional[str] = None, size: Optional[int] = None,
               var_id: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """Weights (``type: "file"``): a numpy array (C-contiguous; written as
        ``.npy`` v1 with its dtype and shape unless ``format="raw"``), a path
        (``.npy`` by its extension, else raw) or any buffer (raw unless
        ``format="npy"``, when it must be a whole ``.npy`` file). A dtype and
        shape given must fit the data.

        >>> sg.weight("w", numpy.ones((4, 4), "float32"))
        <neff.Subgraph 'sg00'>
        >>> sg.weight("b", "bias.bin", "float32", (4,))
        <neff.Subgraph 'sg00'>
        """
        key = f"{self._key}.weights[{self._lengths.get('weights', 0)}]"
        fmt, blob = _weight_data(data, key, format, dtype)
        return self._var("weights", name, dtype, shape, size, var_id, extra,
                         file_name=file_name, data=blob, format=fmt)

    def dma_queue(self, name: str, owner: str, type: str, *, semaphore: Optional[int] = None,
                  semaphore_set: Optional[Sequence[int]] = None,
                  num_queues: Optional[int] = None, indirect_memcpy: Optional[bool] = None,
                  extra: Optional[Mapping[str, Any]] = None, **keys: Any) -> Subgraph:
        """A DMA queue owned by an engine; ``type`` is the queue type (``in``, ``out``, ``data``…).
        Any other keyword is a key of the queue as def.json writes it (``neff
        schema def-json``: ``dynamic_dma``, ``fabric_path``, ``pinned``…).

        >>> sg.dma_queue("q_in", "pool", "in", semaphore=10)
        <neff.Subgraph 'sg00'>
        >>> sg.dma_queue("qDyn", "pool", "dynamic", num_queues=16, fabric_path="main")
        <neff.Subgraph 'sg00'>
        """
        self._model.dma_queue(self._index, name, owner=owner, type=type, semaphore=semaphore,
                              semaphore_set=semaphore_set, num_queues=num_queues,
                              indirect_memcpy=indirect_memcpy, extra=extra, **keys)
        return self

    def dma(self, block: Mapping[str, Any]) -> Subgraph:
        """A top-level def.json DMA block (a manifest object, written as it is).

        >>> sg.dma({"id": 0, "queue": "q_in", "desc": []})
        <neff.Subgraph 'sg00'>
        """
        self._model.dma(self._index, dict(block))
        return self

    def engine(self, engine: str, instr: Optional[Data] = None, *,
               dma: Sequence[Mapping[str, Any]] = (), name: Optional[str] = None,
               extra: Optional[Mapping[str, Any]] = None, **keys: Any) -> Subgraph:
        """An engine's program (``pe``, ``act``, ``pool``, ``dve``, ``sp``): its
        instruction stream (``<eng>.bin``; bytes or a path), the engine
        manifest's DMA blocks, ``name`` and extra keys; any other keyword is a
        key of the engine manifest (``neff schema engine``: ``act_info``,
        ``act_semaphore``, ``activation_function_sets``, ``dve_tables``…).
        Replaces an earlier call for the engine; an engine never given has an
        empty program.

        >>> sg.engine("pe", instr=bytes(64))
        <neff.Subgraph 'sg00'>
        >>> sg.engine("act", act_info="act_info.json", activation_function_sets=["exp"])
        <neff.Subgraph 'sg00'>
        """
        key = f"{self._key}.engines.{engine}"
        instructions = None if instr is None else _data(instr, f"{key}.instructions")
        self._model.engine(self._index, engine, instructions, dma=[dict(b) for b in dma] or None,
                           name=name, extra=extra, **keys)
        return self

    def ucode_lib(self, library: str, data: Data, ulib_to_ucode_version: str, *,
                  functions: Sequence[Union[str, Mapping[str, Any]]] = (),
                  ulib_to_isa_version: Optional[str] = None, is_builtin: Optional[bool] = None,
                  cpu_id: Optional[int] = None, total_cpus: Optional[int] = None,
                  extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """A GPSIMD ucode library (member ``<sg>/<library>``); ``functions`` are
        names or ``{"name", "sub_opcode", "opcode"}`` objects. Sets feature bit
        ``custom_ops``.

        >>> sg.ucode_lib("lib.so", "lib.so", "1.21.1.0", functions=["f"])
        <neff.Subgraph 'sg00'>
        """
        key = f"{self._key}.ucode_libs[{self._lengths.get('ucode_libs', 0)}]"
        funcs = [{"name": f} if isinstance(f, str) else dict(f) for f in functions]
        self._model.ucode_lib(self._index, _data(data, f"{key}.data"), library=library,
                              ulib_to_ucode_version=ulib_to_ucode_version,
                              functions=funcs or None, ulib_to_isa_version=ulib_to_isa_version,
                              is_builtin=is_builtin, cpu_id=cpu_id, total_cpus=total_cpus,
                              extra=extra)
        self._lengths["ucode_libs"] = self._lengths.get("ucode_libs", 0) + 1
        return self

    def evtaccel(self) -> Subgraph:
        """Adds the EVTACCEL carveout CAYMAN requires.

        >>> sg.evtaccel()
        <neff.Subgraph 'sg00'>
        """
        self._model.evtaccel(self._index)
        return self

    def carveout(self, carveout: Mapping[str, Any]) -> Subgraph:
        """A ``runtime_statebuffer_reservation`` entry, as it is.

        >>> sg.carveout({"type": "evtaccel", "offset": 229368, "size": 8,
        ...              "base_partition": 0, "partitions": 128})
        <neff.Subgraph 'sg00'>
        """
        self._model.carveout(self._index, dict(carveout))
        return self

    def key(self, key: str, value: Any) -> Subgraph:
        """An extra def.json key, written as it is (``debug_info``, ``git_version``…).

        >>> sg.key("git_version", "")
        <neff.Subgraph 'sg00'>
        """
        self._model.key(self._index, key, value)
        return self


class Builder:
    """A model to write as a NEFF: subgraphs, extra members and packaging.

    The arguments are the build spec's top-level keys (``neff schema
    build-spec``): ``target`` (default ``"*"``), ``pkg_version`` (2: gzip +
    MD5, or 1), ``framing`` (``"gnu"``, ``"neuronx-cc"``, ``"neuronx-cc-2.16"``, ``"neuronx-cc-2.27"``),
    gzip ``level`` 1-9, ``uuid`` (default: from the content; or ``"random"``),
    ``features`` (feature-bit names), ``header`` (header fields set over the
    computed ones), the KELF descriptor's member, node name, version and
    extra keys, extra neff.json keys and a ``barrier_config``.

    Each argument is checked at the call that gives it (a dtype the runtime
    does not know, a path that cannot be read, a feature name), naming its key;
    ``unchecked=True`` (the spec's ``unchecked``) skips the builder's own
    checks, at the call and at the write, for negative fixtures.

    >>> b = neff.Builder(name="m", target="cayman")
    >>> with b.subgraph("sg00") as sg:
    ...     sg.input("x", "float32", (4,)).output("y", "float32", (4,))
    ...     sg.weight("w", numpy.zeros(4, "float32"))
    ...     sg.engine("pe", instr=bytes(64))
    <neff.Subgraph 'sg00'>
    <neff.Subgraph 'sg00'>
    <neff.Subgraph 'sg00'>
    >>> b.write("m.neff").report.accepted
    True
    """

    def __init__(self, name: Optional[str] = None, *, target: Optional[str] = None,
                 pkg_version: Optional[int] = None, framing: Optional[str] = None,
                 level: Optional[int] = None, uuid: Optional[object] = None,
                 features: Sequence[str] = (), header: Optional[Mapping[str, Any]] = None,
                 kelf_member: Optional[str] = None, kelf_node_name: Optional[str] = None,
                 kelf_version: Optional[str] = None,
                 kelf_extra: Optional[Mapping[str, Any]] = None,
                 neff_json_extra: Optional[Mapping[str, Any]] = None,
                 barrier_config: Optional[Mapping[str, Any]] = None,
                 unchecked: bool = False) -> None:
        self._model = _native.Model(
            name=name, target=target, pkg_version=pkg_version, framing=framing, level=level,
            uuid=None if uuid is None else str(uuid), features=list(features),
            header=header, kelf_member=kelf_member, kelf_node_name=kelf_node_name,
            kelf_version=kelf_version, kelf_extra=kelf_extra, neff_json_extra=neff_json_extra,
            unchecked=unchecked or None)
        if barrier_config is not None:
            self.barrier_config(barrier_config)
        #: A lifted model (the spec :func:`neff.lift` returns), else ``None``.
        self._lifted_doc: Optional[Dict[str, Any]] = None
        self._tree: Optional[str] = None
        self._subgraphs = 0
        #: A lifted model's refusal by the gates (their report), else ``None``.
        self.refusal: Optional[Dict[str, Any]] = None

    def __repr__(self) -> str:
        if self._lifted_doc is not None:
            return f"<neff.Builder: a lifted model of {len(self._lifted_doc.get('payload', ()))} members>"
        graphs = len(json.loads(self._model.spec()).get("subgraphs", ()))
        return f"<neff.Builder: {graphs} subgraph{'' if graphs == 1 else 's'}>"

    def subgraph(self, name: str, *, def_name: Optional[str] = None,
                 def_version: Optional[str] = None, evtaccel: bool = False,
                 replica_groups: Optional[Sequence[Any]] = None,
                 src_target_pairs: Optional[Sequence[Any]] = None,
                 num_streams: Optional[int] = None,
                 fp8_conversion_config: Optional[Mapping[str, Any]] = None,
                 extra: Optional[Mapping[str, Any]] = None) -> Subgraph:
        """Adds subgraph ``name`` (its folder and KELF graph name, e.g. ``sg00``),
        in KELF order; more than one sets the header's ``vnc_size``.

        >>> with b.subgraph("sg00", evtaccel=True) as sg:
        ...     sg.output("y", "float32", (4,))
        <neff.Subgraph 'sg00'>
        """
        index = self._model.subgraph(
            name=name, def_name=def_name, def_version=def_version, evtaccel=evtaccel,
            replica_groups=replica_groups, src_target_pairs=src_target_pairs,
            num_streams=num_streams, fp8_conversion_config=fp8_conversion_config, extra=extra)
        return Subgraph(self._model, index, name)

    def barrier_config(self, config: Mapping[str, Any]) -> Builder:
        """Attaches a barrier config as the member ``barrier_config.json``, in the
        firmware logger's JSON shape (``neff barrier`` writes it, ``neff inspect``
        decodes it; the runtime never reads it). Checked now: a malformed one, or
        host and device views that disagree, raise :class:`neff.NeffError`.

        >>> b.barrier_config({"execute_device_barrier": "0x0"})
        <neff.Builder: 1 subgraph>
        """
        self._model.barrier_config(config)
        return self

    def member(self, name: str, data: Data) -> Builder:
        """A member no manifest generates (``hlo_stats.json``, ``.asm`` listings…).

        >>> b.member("sg00/pe.asm", b"nop\\n")
        <neff.Builder: 1 subgraph>

        On a lifted model (:func:`neff.lift`) it adds or replaces the payload
        member ``name`` with these bytes (a path is read when written).
        """
        if self._lifted_doc is not None:
            return self._set_payload_member(name, data)
        self._model.member(name, _data(data, f"members.{name!r}"))
        return self

    def _set_payload_member(self, name: str, data: Optional[Data]) -> Builder:
        """A lifted model's member ``name`` set to ``data`` (``None`` removes it)."""
        doc = self._lifted_model()
        kept = [m for m in doc["payload"] if m.get("name") != name]
        if data is not None:
            if isinstance(data, (str, os.PathLike)):
                blob: Dict[str, Any] = {"path": os.path.abspath(os.fspath(data))}
            else:
                try:
                    raw = bytes(memoryview(data))  # type: ignore[arg-type]
                except TypeError:
                    raise _error(f"payload.{name!r}", f"expected a path or bytes, "
                                                      f"not {type(data).__name__}") from None
                import base64  # only here: it costs every `import neff` several ms

                blob = {"base64": base64.b64encode(raw).decode("ascii")}
            kept.append({"name": name, "data": blob})
        doc["payload"] = kept
        return self

    def raw_member(self, name: str, data: Optional[Data]) -> Builder:
        """Replaces (or adds) member ``name`` after generation; ``None`` leaves
        it out. For deliberately invalid NEFFs, with ``unchecked=True,
        keep_refused=True``. On a lifted model, sets or removes the payload
        member ``name``.

        >>> b.raw_member("sg00/def.json", None)
        <neff.Builder: 1 subgraph>
        """
        if self._lifted_doc is not None:
            return self._set_payload_member(name, data)
        self._model.raw_member(name, None if data is None
                               else _data(data, f"raw_members.{name!r}"))
        return self

    def _lifted_model(self) -> Dict[str, Any]:
        if self._lifted_doc is None:
            raise _error("payload", "not a lifted model (see neff.lift)")
        return self._lifted_doc

    @classmethod
    def _from_lift(cls, doc: Dict[str, Any], tree: str) -> Builder:
        builder = cls()
        builder._lifted_doc = doc
        builder._tree = tree
        return builder

    def replace_weight(self, var: str, data: Data, *, def_json: Optional[str] = None,
                       graph: Optional[str] = None, all_graphs: bool = False,
                       retype: bool = False) -> Builder:
        """Replaces a lifted model's weights (see :func:`neff.lift`): the ``file``
        var ``var`` gets ``data``, a numpy array, the bytes of a whole ``.npy``
        file, or the path of one. An array or bytes are written over the weights
        file in the lifted folder (once checked); a path is used where it is. The
        var's ``size``, where it has one, follows the data length.

        The var is looked for in every graph's def.json: a name in several is
        refused, listing them, unless ``def_json=`` (``"sg01/def.json"``) or
        ``graph=`` (``"sg01"``) picks one or ``all_graphs=True`` replaces every
        copy. A new dtype or shape is refused unless ``retype=True``.

        >>> b = neff.lift("model.neff", "lifted")
        >>> b.replace_weight("w", numpy.eye(4, dtype="float32"))
        <neff.Builder: a lifted model of 15 members>
        """
        tree = self._tree
        if tree is None:
            raise _error("weights", "replace_weight edits a lifted model (see neff.lift); "
                                    "a new model gives weights with Subgraph.weight")
        for target in self._weight_defs(var, def_json, graph, all_graphs):
            self._replace_one(tree, target, var, data, retype)
        return self

    def _weight_defs(self, var: str, def_json: Optional[str], graph: Optional[str],
                     all_graphs: bool) -> List[str]:
        """The def.json members whose ``file`` var ``var`` a replacement edits."""
        if def_json is not None:
            return [def_json]
        if graph is not None:
            for member in (self._lifted_doc or {}).get("payload", ()):
                for g in (member.get("kelf") or {}).get("graphs", ()):
                    if g.get("name") == graph and isinstance(g.get("definition"), str):
                        return [g["definition"]]
            return [f"{graph}/def.json"]
        named = [(m["name"], (m.get("def_json") or {}).get("var", {}).get(var))
                 for m in (self._lifted_doc or {}).get("payload", ())]
        found = [n for n, v in named if isinstance(v, dict) and v.get("type") == "file"]
        if not found:
            # A var of another type: its def.json says why it is not a weight.
            other = [n for n, v in named if isinstance(v, dict)]
            if other:
                return other[:1]
            raise _error(f"weights.{var}", f"no def.json of the model has a var {var!r}")
        if len(found) > 1 and not all_graphs:
            raise _error(f"weights.{var}", f"var {var!r} is in {', '.join(found)}: pick one with "
                                           f"def_json= or graph=, or replace every copy with all_graphs=True")
        return found

    def _replace_one(self, tree: str, def_json: str, var: str, data: Data, retype: bool) -> None:
        """Replaces ``var`` of ``def_json``: new bytes go to a temp file beside the
        weights member, checked, then renamed over it."""
        if isinstance(data, (str, os.PathLike)):
            path = os.path.abspath(os.fspath(data))
            text = _native.replace_weight(json.dumps(self._lifted_model()), def_json, var, path, retype)
            self._lifted_doc = json.loads(text)
            return
        member = self._weights_member(def_json, var)
        path = os.path.join(tree, *member.split("/"))
        folder, name = os.path.split(path)
        temp = os.path.join(folder, f".{name}.neff-tmp.{os.getpid()}.0")
        _write_npy(temp, data, f"weights.{var}")
        try:
            text = _native.replace_weight(json.dumps(self._lifted_model()), def_json, var, temp, retype)
            os.replace(temp, path)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
        doc = json.loads(text)
        for m in doc.get("payload", ()):
            if m.get("name") == member:
                m["data"] = path
        self._lifted_doc = doc

    def _weights_member(self, def_json: str, var: str) -> str:
        """The member the ``file`` var ``var`` of ``def_json`` names."""
        entry = self.payload(def_json).get("def_json", {}).get("var", {}).get(var)
        file_name = entry.get("file_name") if isinstance(entry, dict) else None
        if not isinstance(file_name, str):
            raise _error(f"weights.{var}", f"{def_json} has no file var {var!r} with a file_name")
        folder = def_json.rpartition("/")[0]
        return f"{folder}/{file_name}" if folder else file_name

    def payload(self, name: str) -> Dict[str, Any]:
        """A lifted model's member ``name`` (see :func:`neff.lift`), live: edit its
        typed manifest (``def_json``, ``engine``, ``kelf``, ``neff_json``,
        ``act_info``) or its ``data`` path in place, then :meth:`write`. An
        unedited manifest is written with its original bytes; an edited one in
        its original style, so only the edited values differ.

        >>> b = neff.lift("model.neff", "lifted")
        >>> b.payload("sg00/pe.json")["engine"]["name"] = "pe_program"
        """
        for member in (self._lifted_doc or {}).get("payload", ()):
            if member.get("name") == name:
                return member  # type: ignore[no-any-return]
        raise _error("payload", f"no member {name!r} (a lifted model has a payload; "
                                f"see neff.lift)")

    def spec(self) -> Dict[str, Any]:
        """The build spec so far (a copy); buffers appear as ``{"data": N}`` blobs.

        >>> b.spec()["subgraphs"][0]["name"]
        'sg00'
        """
        if self._lifted_doc is not None:
            return copy.deepcopy(self._lifted_doc)
        return json.loads(self._model.spec())  # type: ignore[no-any-return]

    def _build(self, path: Optional[str], unchecked: bool, keep_refused: bool,
               threads: Optional[int], paranoid_readback: bool = False,
               fsync: bool = True) -> Tuple[BuildOutcome, Optional[bytes]]:
        if self._lifted_doc is not None:
            text, data = _native.build(json.dumps(self._lifted_doc), path, unchecked, keep_refused,
                                       threads, paranoid_readback, fsync)
        else:
            text, data = self._model.build(path, unchecked, keep_refused, threads,
                                           paranoid_readback, fsync)
        return BuildOutcome._from(json.loads(text)), data

    def write(self, path: Union[str, os.PathLike[str]], *, unchecked: bool = False,
              keep_refused: bool = False, threads: Optional[int] = None,
              paranoid_readback: bool = False, fsync: bool = True) -> BuildOutcome:
        """Writes the NEFF at ``path`` atomically (a temporary file renamed into
        place). A model the loader's gates refuse raises :class:`neff.Rejected`
        (``gate``, ``status``, ``message``) and nothing is written, unless
        ``keep_refused=True``: then it is written and ``report`` says why it
        is refused. ``unchecked=True`` skips the builder's own checks before
        writing (a var with no data, sizes or dtypes the runtime does not
        know); the gates still judge the output. Other failures raise :class:`neff.NeffError` (``key``
        names the part of the spec). ``threads``: compression threads
        (default: the cores; the output is the same). ``paranoid_readback``:
        read the whole file back through the gates instead of checking it as
        it is written. ``fsync=False`` skips the
        fsync of the file and its folder (``neff build --no-fsync``): faster, but
        after a power cut soon after the file may be the old one, the new one or
        empty.

        >>> b.write("m.neff").files
        14
        """
        return self._build(os.fspath(path), unchecked, keep_refused, threads,
                           paranoid_readback, fsync)[0]

    def to_bytes(self, *, unchecked: bool = False, keep_refused: bool = False,
                 threads: Optional[int] = None) -> bytes:
        """The NEFF's bytes (the same as :meth:`write` writes), checked the same way.

        >>> b.to_bytes()[:4]
        b'\\x02\\x00\\x00\\x00'
        """
        data = self._build(None, unchecked, keep_refused, threads)[1]
        return data if data is not None else b""


def lift(source: Union[str, os.PathLike[str]], dir: Union[str, os.PathLike[str]], *,
         keep_refused: bool = False, prove_deflate: bool = False) -> Builder:
    """Unpacks the NEFF at ``source`` into the new or empty folder ``dir`` and
    returns a :class:`Builder` holding it as the typed model (the build spec
    ``neff unpack --spec`` writes). Unedited, :meth:`Builder.write` writes the
    same bytes; edit members with :meth:`Builder.payload`. A NEFF the
    container gates refuse raises :class:`neff.Rejected`, unless
    ``keep_refused=True`` and only its header is refused (unsupported feature
    bits, a payload hash that does not match): then it is lifted as a runtime
    without those checks reads it. :attr:`Builder.refusal` holds the gates'
    report of a lifted NEFF they refuse (``None`` when accepted); write such a
    model back with ``keep_refused=True``. The deflate stream is proven to
    be what a rebuild writes over its first 16 MiB (``prove_deflate=True``:
    all of it, as long as a pack); :attr:`BuildOutcome.payload_matches_source`
    then says whether a write gave the lifted NEFF's payload.

    >>> b = neff.lift("model.neff", "lifted")
    >>> b.write("same.neff").header.uuid == neff.open("model.neff").header.uuid
    True
    """
    text, refusal = _native.lift(os.fspath(source), os.fspath(dir), keep_refused, prove_deflate)
    builder = Builder._from_lift(json.loads(text), os.path.abspath(os.fspath(dir)))
    builder.refusal = None if refusal is None else json.loads(refusal)
    return builder


def _write_npy(path: str, data: Data, key: str) -> None:
    """Writes ``data`` (a numpy array, or a whole ``.npy`` file's bytes) at
    ``path`` through a temporary file beside it, renamed into place."""
    temp = f"{path}.neff-tmp"
    try:
        with open(temp, "wb") as out:
            if _numpy_array(data):
                numpy = sys.modules["numpy"]
                array: Any = data
                numpy.lib.format.write_array(out, numpy.ascontiguousarray(array),
                                             version=(1, 0), allow_pickle=False)
            else:
                try:
                    view = memoryview(data)  # type: ignore[arg-type]
                except TypeError:
                    raise _error(key, f"expected a numpy array, .npy bytes or a path, "
                                      f"not {type(data).__name__}") from None
                with view:
                    out.write(view)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
