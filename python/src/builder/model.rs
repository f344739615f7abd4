//! `neff._native.Model`: the build spec's typed model ([`BuildSpec`]), held
//! in Rust and filled by `neff.Builder`. Each call reads its keyword
//! arguments as one of the model's types (the keys, their types and their
//! checks are the spec's; an error names the key, as `neff build` does), so
//! Python states no key of its own. Buffers are held where Python made them
//! and read in place when the NEFF is written.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use neff_schema::manifest::{Carveout, DmaBlock, DmaQueue, Engine};
use neff_writer::build_spec::{parse_at, Blob, BuildSpec};
use neff_writer::builder::{EngineProgram, Subgraph, UcodeLibSpec, VarSpec};
use neff_writer::{Data, Error, ErrorKind};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

use super::{buffer_data, build_spec};
use crate::errors::writer_error;

/// The `.npy` header (descr, shape) to put before an array's bytes.
type NpyHeader = (String, Vec<u64>);

/// Where a spec error points: the model, not a file.
const ORIGIN: &str = "<neff.Builder>";

/// A spec error at `key`.
fn spec_error(key: &str, message: String) -> PyErr {
    writer_error(&Error::new(ErrorKind::Spec, format!("{key}: {message}")).at_key(key))
}

/// A Python value as JSON (`None`, bools, integers, floats, strings, lists,
/// tuples and dicts with string keys; anything with `__index__`, such as a
/// numpy integer, as an integer).
fn json_of(value: &Bound<'_, PyAny>, key: &str) -> PyResult<Value> {
    json_at(value, key, 0)
}

/// Deepest nesting [`json_of`] follows: the loader's JSON depth (simdjson's
/// default). A deeper or self-containing value (`d["a"] = d`) is an error,
/// not a stack overflow.
const MAX_DEPTH: usize = 1024;

fn json_at(value: &Bound<'_, PyAny>, key: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(spec_error(
            key,
            format!("nested more than {MAX_DEPTH} deep (or it contains itself)"),
        ));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.extract::<String>()?));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut object = Map::new();
        for (k, v) in d.iter() {
            let k: String = k.extract().map_err(|_| {
                spec_error(key, format!("a key is {}, not a string", type_name(&k)))
            })?;
            let value = json_at(&v, &format!("{key}.{k}"), depth + 1)?;
            object.insert(k, value);
        }
        return Ok(Value::Object(object));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = value.extract()?;
        let values = items
            .iter()
            .enumerate()
            .map(|(i, item)| json_at(item, &format!("{key}[{i}]"), depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::Array(values));
    }
    if value.is_instance_of::<PyFloat>() {
        let f: f64 = value.extract()?;
        return serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| spec_error(key, format!("{f} is not a JSON number")));
    }
    if value.is_instance_of::<PyInt>() || value.hasattr("__index__")? {
        if let Ok(i) = value.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = value.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(spec_error(key, "the integer does not fit 64 bits".into()));
    }
    Err(spec_error(
        key,
        format!("{} is not a JSON value", type_name(value)),
    ))
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// Keyword arguments as a `T` of the spec at `key`; arguments that are
/// `None` are absent.
fn typed<T: serde::de::DeserializeOwned>(
    fields: Option<&Bound<'_, PyDict>>,
    key: &str,
) -> PyResult<T> {
    typed_with(fields, key, Map::new())
}

/// [`typed`], with `object`'s keys given besides the arguments.
fn typed_with<T: serde::de::DeserializeOwned>(
    fields: Option<&Bound<'_, PyDict>>,
    key: &str,
    mut object: Map<String, Value>,
) -> PyResult<T> {
    object.extend(kwargs_json(fields, key)?);
    from_json(Value::Object(object), key)
}

/// Keyword arguments as a JSON object, those that are `None` left out;
/// `key` prefixes each argument's name in errors.
pub(crate) fn kwargs_json(
    fields: Option<&Bound<'_, PyDict>>,
    key: &str,
) -> PyResult<Map<String, Value>> {
    let mut object = Map::new();
    for (k, v) in fields.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        let sub = if key.is_empty() {
            k.clone()
        } else {
            format!("{key}.{k}")
        };
        object.insert(k, json_of(&v, &sub)?);
    }
    Ok(object)
}

/// A model being described by `neff.Builder`: the spec (its blobs paths,
/// or `{"data": N}` for the held buffer N) and the buffers.
#[pyclass(module = "neff._native")]
pub struct Model {
    /// Behind a lock only because a pyclass must be `Sync`.
    spec: Mutex<BuildSpec>,
    buffers: Vec<(Py<PyAny>, Option<NpyHeader>)>,
}

impl Model {
    fn spec_mut(&mut self) -> &mut BuildSpec {
        self.spec.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn spec_ref(&self) -> MutexGuard<'_, BuildSpec> {
        self.spec.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn subgraph_mut(&mut self, index: usize) -> PyResult<&mut Subgraph> {
        self.spec_mut()
            .subgraphs
            .get_mut(index)
            .ok_or_else(|| PyTypeError::new_err(format!("no subgraph #{index}")))
    }

    /// `data` as a spec blob: a path as it is, a buffer held here.
    fn blob(&mut self, data: DataRef<'_>) -> Data {
        match data {
            DataRef::Path(path) => Data::Blob(Blob::Path(path)),
            DataRef::Buffer(obj, npy) => {
                self.buffers.push((obj.unbind(), npy));
                Data::Blob(Blob::Held(self.buffers.len() - 1))
            }
        }
    }
}

/// Data as Python hands it: `("path", str)` or `("buffer", obj, npy)`.
enum DataRef<'py> {
    Path(PathBuf),
    Buffer(Bound<'py, PyAny>, Option<NpyHeader>),
}

impl<'py> FromPyObject<'_, 'py> for DataRef<'py> {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let (kind, value, npy): (String, Bound<'py, PyAny>, Option<NpyHeader>) = obj.extract()?;
        match kind.as_str() {
            "path" => Ok(DataRef::Path(value.extract()?)),
            _ => Ok(DataRef::Buffer(value, npy)),
        }
    }
}

#[pymethods]
impl Model {
    /// A model with the spec's top-level keys (`name`, `target`, `framing`…).
    #[new]
    #[pyo3(signature = (**options))]
    fn new(options: Option<&Bound<'_, PyDict>>) -> PyResult<Model> {
        Ok(Model {
            spec: Mutex::new(typed(options, "")?),
            buffers: Vec::new(),
        })
    }

    /// Adds a subgraph (the spec's subgraph keys); returns its index.
    #[pyo3(signature = (**fields))]
    fn subgraph(&mut self, fields: Option<&Bound<'_, PyDict>>) -> PyResult<usize> {
        let index = self.spec_mut().subgraphs.len();
        let subgraph = typed(fields, &format!("subgraphs[{index}]"))?;
        self.spec_mut().subgraphs.push(subgraph);
        Ok(index)
    }

    /// Adds a variable to list `list` (`inputs`, `outputs`, `tmp_bufs`,
    /// `state_buffers`, `weights`, `vars`) of subgraph `sg`; `data` is a
    /// weight's data in `format` (`npy` or `raw`).
    #[pyo3(signature = (sg, list, data=None, format=None, **fields))]
    fn var(
        &mut self,
        sg: usize,
        list: &str,
        data: Option<DataRef<'_>>,
        format: Option<&str>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let checked = !self.spec_ref().unchecked;
        let index = self.spec_ref().subgraphs.get(sg).map_or(0, |s| match list {
            "inputs" => s.inputs.len(),
            "outputs" => s.outputs.len(),
            "tmp_bufs" => s.tmp_bufs.len(),
            "state_buffers" => s.state_buffers.len(),
            "weights" => s.weights.len(),
            _ => s.vars.len(),
        });
        let key = format!("subgraphs[{sg}].{list}[{index}]");
        if let Some(DataRef::Path(path)) = &data {
            // A path is read at write: a missing one is said now.
            if let Err(e) = std::fs::metadata(path) {
                let data_key = format!(
                    "{key}.{}",
                    if format == Some("raw") { "raw" } else { "npy" }
                );
                return Err(spec_error(
                    &data_key,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        }
        let data = data.map(|data| self.blob(data));
        let entries = match (list, self.subgraph_mut(sg)?) {
            ("inputs", s) => &mut s.inputs,
            ("outputs", s) => &mut s.outputs,
            ("tmp_bufs", s) => &mut s.tmp_bufs,
            ("state_buffers", s) => &mut s.state_buffers,
            ("weights", s) => &mut s.weights,
            ("vars", s) => &mut s.vars,
            (other, _) => return Err(PyTypeError::new_err(format!("no var list {other:?}"))),
        };
        let mut var: VarSpec = typed(fields, &key)?;
        if let (true, Some(neff_schema::manifest::Dtype::Other(name))) = (checked, &var.dtype) {
            let hint = neff_writer::builder::dtype_hint(name);
            return Err(spec_error(
                &format!("{key}.dtype"),
                format!("dtype {name:?} is not a dtype the runtime knows{hint} (Builder(unchecked=True) writes it anyway)"),
            ));
        }
        match format {
            Some("raw") => var.raw = data,
            _ => var.npy = data,
        }
        entries.push(var);
        Ok(())
    }

    /// Sets DMA queue `name` of subgraph `sg` (the def.json queue keys).
    #[pyo3(signature = (sg, name, **fields))]
    fn dma_queue(
        &mut self,
        sg: usize,
        name: String,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let queue: DmaQueue = typed(fields, &format!("subgraphs[{sg}].dma_queues.{name}"))?;
        self.subgraph_mut(sg)?.dma_queues.insert(name, queue);
        Ok(())
    }

    /// Adds a top-level def.json DMA block to subgraph `sg`.
    fn dma(&mut self, sg: usize, block: &Bound<'_, PyAny>) -> PyResult<()> {
        let subgraph = self.subgraph_mut(sg)?;
        let key = format!("subgraphs[{sg}].dma[{}]", subgraph.dma.len());
        let block: DmaBlock = from_json(json_of(block, &key)?, &key)?;
        self.subgraph_mut(sg)?.dma.push(block);
        Ok(())
    }

    /// Sets engine `engine`'s program in subgraph `sg`: its instruction
    /// stream and its manifest keys.
    #[pyo3(signature = (sg, engine, instructions=None, **fields))]
    fn engine(
        &mut self,
        sg: usize,
        engine: &str,
        instructions: Option<DataRef<'_>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let key = format!("subgraphs[{sg}].engines.{engine}");
        let which: Engine = from_json(Value::String(engine.into()), &key)?;
        let mut program: EngineProgram = typed(fields, &key)?;
        program.instructions = instructions.map(|data| self.blob(data));
        self.subgraph_mut(sg)?.engines.insert(which, program);
        Ok(())
    }

    /// Adds a ucode library to subgraph `sg`.
    #[pyo3(signature = (sg, data, **fields))]
    fn ucode_lib(
        &mut self,
        sg: usize,
        data: DataRef<'_>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let index = self.subgraph_mut(sg)?.ucode_libs.len();
        let key = format!("subgraphs[{sg}].ucode_libs[{index}]");
        let data =
            serde_json::to_value(self.blob(data)).map_err(|e| spec_error(&key, e.to_string()))?;
        let lib: UcodeLibSpec = typed_with(fields, &key, Map::from_iter([("data".into(), data)]))?;
        self.subgraph_mut(sg)?.ucode_libs.push(lib);
        Ok(())
    }

    /// Adds the EVTACCEL carveout to subgraph `sg`.
    fn evtaccel(&mut self, sg: usize) -> PyResult<()> {
        self.subgraph_mut(sg)?.evtaccel = true;
        Ok(())
    }

    /// Adds a `runtime_statebuffer_reservation` entry to subgraph `sg`.
    fn carveout(&mut self, sg: usize, carveout: &Bound<'_, PyAny>) -> PyResult<()> {
        let subgraph = self.subgraph_mut(sg)?;
        let key = format!("subgraphs[{sg}].carveouts[{}]", subgraph.carveouts.len());
        let carveout: Carveout = from_json(json_of(carveout, &key)?, &key)?;
        self.subgraph_mut(sg)?.carveouts.push(carveout);
        Ok(())
    }

    /// Sets an extra def.json key of subgraph `sg`.
    fn key(&mut self, sg: usize, key: String, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = json_of(value, &format!("subgraphs[{sg}].extra.{key}"))?;
        self.subgraph_mut(sg)?.extra.insert(key, value);
        Ok(())
    }

    /// Sets the barrier config (the firmware logger's JSON shape), checked
    /// now: where both views are given, they must agree.
    fn barrier_config(&mut self, config: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = "barrier_config";
        let parsed: neff_schema::barrier::json::BarrierConfigsJson =
            from_json(json_of(config, key)?, key)?;
        parsed
            .to_configs()
            .map_err(|e| spec_error(key, e.to_string()))?;
        self.spec_mut().barrier_config = Some(parsed);
        Ok(())
    }

    /// Adds member `name` (one no manifest generates).
    fn member(&mut self, name: String, data: DataRef<'_>) -> PyResult<()> {
        let data = self.blob(data);
        self.spec_mut().members.insert(name, data);
        Ok(())
    }

    /// Replaces (or adds, or with `None` leaves out) member `name` after
    /// generation.
    fn raw_member(&mut self, name: String, data: Option<DataRef<'_>>) -> PyResult<()> {
        let data = data.map(|d| self.blob(d));
        self.spec_mut().raw_members.insert(name, data);
        Ok(())
    }

    /// The spec so far as JSON (held buffers as `{"data": N}` blobs).
    fn spec(&self) -> PyResult<String> {
        serde_json::to_string(&*self.spec_ref()).map_err(|e| spec_error("spec", e.to_string()))
    }

    /// Writes the NEFF at `path` (atomically), or returns its bytes; the
    /// outcome as JSON. The model stays as it is (write it again after more
    /// calls).
    #[pyo3(signature = (path=None, unchecked=false, keep_refused=false, threads=None, paranoid_readback=false, fsync=true))]
    #[allow(clippy::too_many_arguments)]
    fn build<'py>(
        &self,
        py: Python<'py>,
        path: Option<PathBuf>,
        unchecked: bool,
        keep_refused: bool,
        threads: Option<usize>,
        paranoid_readback: bool,
        fsync: bool,
    ) -> PyResult<(String, Option<Bound<'py, PyBytes>>)> {
        // The spec holds blobs only, so its serde form is a copy of it.
        let mut spec: BuildSpec = serde_json::to_value(&*self.spec_ref())
            .and_then(serde_json::from_value)
            .map_err(|e| spec_error("spec", e.to_string()))?;
        spec.unchecked = unchecked;
        spec.keep_refused = keep_refused;
        let mut sources = Vec::with_capacity(self.buffers.len());
        for (obj, npy) in &self.buffers {
            sources.push(Some(buffer_data(obj.bind(py), npy.as_ref())?));
        }
        build_spec(py, spec, sources, path, threads, paranoid_readback, fsync)
    }
}

/// `value` as a `T` of the spec at `key`.
fn from_json<T: serde::de::DeserializeOwned>(value: Value, key: &str) -> PyResult<T> {
    let text = serde_json::to_vec(&value).map_err(|e| spec_error(key, e.to_string()))?;
    parse_at(Path::new(ORIGIN), key, &text).map_err(|e| writer_error(&e))
}
