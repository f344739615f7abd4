//! A reducer over the typed model (`neff shrink`), after wasm-tools'
//! `wasm-shrink`: a NEFF and a predicate ("still interesting"), and the
//! smallest NEFF the steps below reach that keeps the predicate true. Every
//! candidate is a NEFF this project's writer produced from the lifted model
//! (a valid container, the gates' verdict whatever it is), so the reducer
//! never spends checks on a payload that cannot be read.
//!
//! Steps, tried in a fixed order (a seed shuffles it), each kept only when
//! the predicate holds and the model got smaller (its members' bytes, a
//! typed manifest's as compact JSON, plus a tar header's 512 for each
//! member: the file itself moves in 10 KiB records): drop a member; zero a
//! member's bytes; halve them; drop a key of a typed manifest's object or an
//! element of its array (a graph of the KELF descriptor, a var of def.json,
//! a DMA block…). A pass that keeps nothing ends the reduction.

use std::path::{Path, PathBuf};

use neff_writer::build_spec::Blob;
use neff_writer::lift::{Content, Model};
use neff_writer::PackSettings;
use serde_json::Value;

use crate::fixtures::Error;

/// How a reduction runs.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// At most this many candidates are checked.
    pub max_steps: u64,
    /// Shuffles the order the steps are tried in (0: the fixed order).
    pub seed: u64,
    /// Once the model steps keep nothing, byte-level steps on the file:
    /// cut its end, zero a range (candidates no longer this tool's writer's).
    pub raw: bool,
}

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions {
            max_steps: 10_000,
            seed: 0,
            raw: false,
        }
    }
}

/// What a reduction reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shrunk {
    /// The input's size in bytes.
    pub from: u64,
    /// The smallest interesting NEFF's size.
    pub to: u64,
    /// Candidates checked.
    pub steps: u64,
    /// The steps kept, in order.
    pub kept: Vec<String>,
}

/// One reduction step.
#[derive(Debug, Clone)]
enum Step {
    Drop(String),
    Zero(String),
    Halve(String),
    /// Remove the value at this path of a typed member's JSON.
    Remove(String, Vec<PathPart>),
}

#[derive(Debug, Clone)]
enum PathPart {
    Key(String),
    Index(usize),
}

/// Reduces the NEFF at `input` (lifted into `scratch`) while `interesting`
/// holds for the candidate's path, writing each new smallest to `out` (and
/// calling `progress` with it). Fails when the input itself is not
/// interesting.
pub fn shrink(
    input: &Path,
    out: &Path,
    scratch: &Path,
    options: &ShrinkOptions,
    interesting: &mut dyn FnMut(&Path) -> bool,
    progress: &mut dyn FnMut(&Shrunk),
) -> Result<Shrunk, Error> {
    // Member blobs are absolute paths into `lifted`, kept until the end.
    let (mut model, lifted) =
        crate::real::lifted(input).map_err(|e| Error::Shrink(e.to_string()))?;
    let base = lifted.path().to_path_buf();
    let from = std::fs::metadata(input)?.len();
    let candidate = scratch.join("candidate.neff");
    write(&model, &base, &candidate)?.ok_or_else(|| {
        Error::Shrink(format!(
            "{}: its lifted model cannot be written",
            input.display()
        ))
    })?;
    let mut best = model_size(&model, &base);
    if !interesting(&candidate) {
        return Err(Error::Shrink(format!(
            "{}: not interesting to begin with (the predicate is false for its repack)",
            input.display()
        )));
    }
    keep(&candidate, out)?;
    let mut done = Shrunk {
        from,
        to: std::fs::metadata(out)?.len(),
        steps: 1,
        kept: Vec::new(),
    };
    let mut counter = 0u64;
    loop {
        let mut kept_any = false;
        let mut steps = steps_of(&model, &base);
        shuffle(&mut steps, options.seed, done.kept.len());
        let mut i = 0;
        while i < steps.len() {
            if done.steps >= options.max_steps {
                return Ok(done);
            }
            counter += 1;
            let Some(next) = apply(&model, &base, scratch, &steps[i], counter)? else {
                i += 1;
                continue;
            };
            let (old, new) = (
                member_size(&model, &base, step_member(&steps[i])),
                member_size(&next, &base, step_member(&steps[i])),
            );
            let size = (best.0 - old.0 + new.0, best.1 - old.1 + new.1);
            if size >= best {
                // A step's own data file goes with it (the kept ones stay).
                let _ = std::fs::remove_file(scratch.join(format!("data-{counter}")));
                i += 1;
                continue;
            }
            done.steps += 1;
            match write(&next, &base, &candidate)? {
                Some(file_size) if interesting(&candidate) => {
                    best = size;
                    model = next;
                    keep(&candidate, out)?;
                    done.to = file_size;
                    done.kept.push(describe(&steps[i]));
                    progress(&done);
                    kept_any = true;
                    // The model changed: its steps again, from where this pass is.
                    steps = steps_of(&model, &base);
                    shuffle(&mut steps, options.seed, done.kept.len());
                }
                _ => {
                    let _ = std::fs::remove_file(scratch.join(format!("data-{counter}")));
                    i += 1;
                }
            }
        }
        if !kept_any {
            if options.raw {
                shrink_bytes(out, &candidate, options, interesting, progress, &mut done)?;
            }
            return Ok(done);
        }
    }
}

/// The byte-level steps of `--raw` on the NEFF at `out`: cut the file to a
/// half, a quarter… shorter, or zero a range of it, each kept when the file
/// stays interesting; a step is smaller when the file is shorter or, as
/// long, holds fewer non-zero bytes.
fn shrink_bytes(
    out: &Path,
    candidate: &Path,
    options: &ShrinkOptions,
    interesting: &mut dyn FnMut(&Path) -> bool,
    progress: &mut dyn FnMut(&Shrunk),
    done: &mut Shrunk,
) -> Result<(), Error> {
    let mut best = std::fs::read(out)?;
    let score = |b: &[u8]| (b.len(), b.iter().filter(|&&x| x != 0).count());
    let mut chunk = best.len() / 2;
    while chunk > 0 {
        let mut at = 0;
        let mut kept = false;
        while at < best.len() && done.steps < options.max_steps {
            let end = (at + chunk).min(best.len());
            for cut in [true, false] {
                let mut next = best.clone();
                if cut {
                    next.drain(at..end);
                } else {
                    next[at..end].fill(0);
                }
                if score(&next) >= score(&best) {
                    continue;
                }
                done.steps += 1;
                std::fs::write(candidate, &next)?;
                if interesting(candidate) {
                    neff_writer::fs::write_atomic_with(out, &next, false)?;
                    done.to = next.len() as u64;
                    let what = if cut { "cut" } else { "zeroed" };
                    done.kept.push(format!("{what} bytes {at}..{end}"));
                    best = next;
                    progress(done);
                    kept = true;
                    break;
                }
            }
            at += chunk;
        }
        if !kept {
            chunk /= 2;
        }
    }
    Ok(())
}

/// Writes `model` at `path` as it is (a refused NEFF too); its size, or
/// `None` when the writer cannot write it.
fn write(model: &Model, base: &Path, path: &Path) -> Result<Option<u64>, Error> {
    let settings = PackSettings {
        keep_refused: true,
        no_fsync: true,
        threads: Some(1),
        ..PackSettings::default()
    };
    match model.write_to_path(base, path, &settings) {
        Ok(_) => Ok(Some(std::fs::metadata(path)?.len())),
        Err(_) => Ok(None),
    }
}

/// Copies the candidate at `candidate` to `out` through a temp file beside
/// it, renamed into place: `out` is always a whole NEFF.
fn keep(candidate: &Path, out: &Path) -> Result<(), Error> {
    neff_writer::fs::write_atomic_with(out, &std::fs::read(candidate)?, false)?;
    Ok(())
}

/// The size a reduction makes smaller, compared in order: each member's
/// bytes (a typed manifest's as compact JSON) and 512 for its tar header,
/// then how many of them are not zero (what a zeroing step lowers). A step
/// changes one member, so a candidate's size is the model's with that
/// member's replaced ([`member_size`]), never the whole model measured again.
fn model_size(model: &Model, base: &Path) -> (u64, u64) {
    model
        .payload
        .iter()
        .map(|m| content_size(m, base))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The size of member `name` of `model`, `(bytes, non-zero bytes)`; none
/// when it has no such member.
fn member_size(model: &Model, base: &Path, name: &str) -> (u64, u64) {
    model
        .payload
        .iter()
        .find(|m| m.name == name)
        .map_or((0, 0), |m| content_size(m, base))
}

/// One member's [`member_size`].
fn content_size(m: &neff_writer::lift::PayloadMember, base: &Path) -> (u64, u64) {
    let (len, nonzero) = match typed_value(&m.content) {
        Some(value) => {
            let len = serde_json::to_vec(&value).map_or(0, |v| v.len() as u64);
            (len, len)
        }
        None => match data_bytes(base, &m.content, None) {
            Some(bytes) => (
                bytes.len() as u64,
                bytes.iter().filter(|&&b| b != 0).count() as u64,
            ),
            None => (data_len(base, &m.content).unwrap_or(0), 0),
        },
    };
    (512 + len, nonzero)
}

/// The member a step changes.
fn step_member(step: &Step) -> &str {
    match step {
        Step::Drop(n) | Step::Zero(n) | Step::Halve(n) | Step::Remove(n, _) => n,
    }
}

/// Every step of `model`, in the fixed order: members (largest first), then
/// each typed manifest's keys and elements, outermost first.
fn steps_of(model: &Model, base: &Path) -> Vec<Step> {
    let mut members: Vec<(u64, &str)> = model
        .payload
        .iter()
        .map(|m| (data_len(base, &m.content).unwrap_or(0), m.name.as_str()))
        .collect();
    members.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut steps: Vec<Step> = members
        .iter()
        .map(|(_, n)| Step::Drop(n.to_string()))
        .collect();
    for (len, name) in &members {
        if *len > 0 {
            steps.push(Step::Zero(name.to_string()));
            steps.push(Step::Halve(name.to_string()));
        }
    }
    for m in &model.payload {
        if let Some(value) = typed_value(&m.content) {
            let mut paths = Vec::new();
            paths_of(&value, &mut Vec::new(), &mut paths);
            paths.sort_by_key(Vec::len);
            steps.extend(paths.into_iter().map(|p| Step::Remove(m.name.clone(), p)));
        }
    }
    steps
}

/// Every path to a key or element of `value`.
fn paths_of(value: &Value, at: &mut Vec<PathPart>, out: &mut Vec<Vec<PathPart>>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                at.push(PathPart::Key(k.clone()));
                out.push(at.clone());
                paths_of(v, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate().rev() {
                at.push(PathPart::Index(i));
                out.push(at.clone());
                paths_of(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// `model` with `step` applied, or `None` when it does not apply.
fn apply(
    model: &Model,
    base: &Path,
    scratch: &Path,
    step: &Step,
    n: u64,
) -> Result<Option<Model>, Error> {
    let mut next = model.clone();
    match step {
        Step::Drop(name) => {
            let before = next.payload.len();
            next.payload.retain(|m| &m.name != name);
            Ok((next.payload.len() < before).then_some(next))
        }
        Step::Zero(name) | Step::Halve(name) => {
            let Some(m) = next.payload.iter_mut().find(|m| &m.name == name) else {
                return Ok(None);
            };
            let Some(mut bytes) = data_bytes(base, &m.content, m.source.as_ref()) else {
                return Ok(None);
            };
            match step {
                Step::Zero(_) if bytes.iter().any(|&b| b != 0) => bytes.fill(0),
                Step::Halve(_) if bytes.len() > 1 => bytes.truncate(bytes.len() / 2),
                _ => return Ok(None),
            }
            let path = scratch.join(format!("data-{n}"));
            std::fs::write(&path, bytes)?;
            m.content = Content::Data(Blob::Path(path));
            m.source = None;
            Ok(Some(next))
        }
        Step::Remove(name, at) => {
            let Some(m) = next.payload.iter_mut().find(|m| &m.name == name) else {
                return Ok(None);
            };
            let Some(mut value) = typed_value(&m.content) else {
                return Ok(None);
            };
            if !remove(&mut value, at) {
                return Ok(None);
            }
            let Ok(content) = m.content.with_value(value) else {
                return Ok(None);
            };
            m.content = content;
            Ok(Some(next))
        }
    }
}

/// Removes the value at `at`; whether there was one.
fn remove(value: &mut Value, at: &[PathPart]) -> bool {
    let Some((last, parents)) = at.split_last() else {
        return false;
    };
    let mut node = value;
    for part in parents {
        let child = match (part, node) {
            (PathPart::Key(k), Value::Object(map)) => map.get_mut(k),
            (PathPart::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match child {
            Some(c) => node = c,
            None => return false,
        }
    }
    match (last, node) {
        (PathPart::Key(k), Value::Object(map)) => map.remove(k).is_some(),
        (PathPart::Index(i), Value::Array(items)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

/// A typed member's JSON.
fn typed_value(content: &Content) -> Option<Value> {
    crate::real::value_of(content)
}

/// A data member's bytes (a typed one's are its JSON's, not bytes).
fn data_bytes(base: &Path, content: &Content, _source: Option<&Blob>) -> Option<Vec<u8>> {
    let Content::Data(blob) = content else {
        return None;
    };
    match neff_writer::build_spec::blob_data(base, "", blob.clone()).ok()? {
        neff_writer::Data::Path(path) => std::fs::read(path).ok(),
        neff_writer::Data::Source(neff_writer::MemberSource::Bytes(bytes)) => Some(bytes),
        _ => None,
    }
}

/// A member's length, for ordering.
fn data_len(base: &Path, content: &Content) -> Option<u64> {
    let Content::Data(Blob::Path(path)) = content else {
        return None;
    };
    let path: PathBuf = if path.is_absolute() {
        path.clone()
    } else {
        base.join(path)
    };
    std::fs::metadata(path).ok().map(|m| m.len())
}

fn describe(step: &Step) -> String {
    match step {
        Step::Drop(n) => format!("dropped {n}"),
        Step::Zero(n) => format!("zeroed {n}"),
        Step::Halve(n) => format!("halved {n}"),
        Step::Remove(n, at) => {
            let path: Vec<String> = at
                .iter()
                .map(|p| match p {
                    PathPart::Key(k) => k.clone(),
                    PathPart::Index(i) => format!("[{i}]"),
                })
                .collect();
            format!("{n}: removed {}", path.join("."))
        }
    }
}

/// A seeded Fisher-Yates shuffle, another after each kept step (seed 0:
/// the order as it is).
fn shuffle(steps: &mut [Step], seed: u64, kept: usize) {
    if seed == 0 {
        return;
    }
    let mut state = (seed ^ kept as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..steps.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        steps.swap(i, (state % (i as u64 + 1)) as usize);
    }
}
