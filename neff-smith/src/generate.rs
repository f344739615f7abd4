//! Structure-aware generation of **valid** build specs, in the style of
//! wasm-smith: [`ArbitrarySpec`] turns fuzzer bytes into a model that passes
//! every loader gate on every arch it targets, within the limits of a
//! [`GenConfig`]. Specs are produced as JSON (so a failing case can be saved
//! and replayed with `neff build`) and parsed into a [`BuildSpec`]; every blob
//! is inline.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{json, Value};

use neff_schema::manifest::Engine;
use neff_writer::base64;
use neff_writer::build_spec::BuildSpec;
use neff_writer::builder::npy::encode_v1;

/// Knobs bounding what is generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Most subgraphs (at least 1).
    pub max_subgraphs: usize,
    /// Most inputs, outputs, tmp buffers and weights each, per subgraph.
    pub max_vars: usize,
    /// Most DMA queues per subgraph.
    pub max_queues: usize,
    /// Most ucode libraries per subgraph (0 turns them off).
    pub max_ucode_libs: usize,
    /// Whether EVTACCEL carveouts may appear.
    pub carveouts: bool,
    /// Targets to choose from (`"*"`, `"sunda"`, `"cayman"`, `"mariana"`).
    pub targets: Vec<&'static str>,
    /// Packaging versions to choose from.
    pub pkg_versions: Vec<u64>,
    /// Largest blob (weights, instructions, libraries), in bytes.
    pub max_blob: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_subgraphs: 2,
            max_vars: 3,
            max_queues: 3,
            max_ucode_libs: 2,
            carveouts: true,
            targets: vec!["*", "sunda", "cayman", "mariana"],
            pkg_versions: vec![1, 2],
            max_blob: 512,
        }
    }
}

/// A valid build spec drawn from fuzzer bytes with the default [`GenConfig`].
#[derive(Debug)]
pub struct ArbitrarySpec {
    /// The spec as JSON (what `neff build` would read).
    pub json: Value,
    /// The parsed spec.
    pub spec: BuildSpec,
}

impl<'a> Arbitrary<'a> for ArbitrarySpec {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        generate(u, &GenConfig::default())
    }
}

/// Generates a valid spec under `config`.
pub fn generate(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<ArbitrarySpec> {
    let json = spec_json(u, config)?;
    let spec: BuildSpec =
        serde_json::from_value(json.clone()).map_err(|_| arbitrary::Error::IncorrectFormat)?;
    Ok(ArbitrarySpec { json, spec })
}

const DTYPES: [(&str, &str, u64); 6] = [
    ("float32", "<f4", 4),
    ("bfloat16", "<u2", 2),
    ("float16", "<f2", 2),
    ("int32", "<i4", 4),
    ("uint8", "|u1", 1),
    ("int8", "|i1", 1),
];
/// The engines' manifest names.
const ENGINES: [&str; 5] = Engine::ALL_NAMES;

fn pick<'v, T>(u: &mut Unstructured<'_>, items: &'v [T]) -> Result<&'v T> {
    u.choose(items)
}

fn bytes(u: &mut Unstructured<'_>, max: usize) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=max)?;
    let mut out = vec![0u8; len];
    u.fill_buffer(&mut out)?;
    Ok(out)
}

fn b64(data: &[u8]) -> Value {
    json!({ "base64": base64::encode(data) })
}

fn shape(u: &mut Unstructured<'_>) -> Result<Vec<u64>> {
    let dims = u.int_in_range(1..=3)?;
    (0..dims).map(|_| u.int_in_range(1..=16u64)).collect()
}

fn tensor(u: &mut Unstructured<'_>, name: String) -> Result<Value> {
    let (dtype, _, _) = pick(u, &DTYPES)?;
    Ok(json!({ "name": name, "dtype": dtype, "shape": shape(u)? }))
}

fn spec_json(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<Value> {
    let target = *pick(u, &config.targets)?;
    let n = u.int_in_range(1..=config.max_subgraphs.max(1))?;
    let subgraphs: Vec<Value> = (0..n)
        .map(|i| subgraph(u, config, i))
        .collect::<Result<_>>()?;
    let mut spec = json!({
        "name": format!("gen-{}", u.int_in_range(0..=9999u32)?),
        "target": target,
        "subgraphs": subgraphs,
        "pkg_version": *pick(u, &config.pkg_versions)?,
        "level": u.int_in_range(1..=9u32)?,
    });
    if u.ratio(1, 3)? {
        spec["members"] = json!({ "hlo_stats.json": { "text": "{\"mac_count\": 0}" } });
    }
    Ok(spec)
}

fn subgraph(u: &mut Unstructured<'_>, config: &GenConfig, index: usize) -> Result<Value> {
    let sg = format!("sg{index:02}");
    let count =
        |u: &mut Unstructured<'_>, min: usize| u.int_in_range(min..=config.max_vars.max(min));
    let inputs: Vec<Value> = (0..count(u, 0)?)
        .map(|i| tensor(u, format!("{sg}_in{i}")))
        .collect::<Result<_>>()?;
    let outputs: Vec<Value> = (0..count(u, 1)?)
        .map(|i| tensor(u, format!("{sg}_out{i}")))
        .collect::<Result<_>>()?;
    let tmp_bufs: Vec<Value> = (0..count(u, 0)?)
        .map(|i| tensor(u, format!("{sg}_tmp{i}")))
        .collect::<Result<_>>()?;
    let mut weights = Vec::new();
    for i in 0..count(u, 0)? {
        let (dtype, descr, width) = *pick(u, &DTYPES)?;
        let dims = shape(u)?;
        let len = dims.iter().product::<u64>() * width;
        let mut data = vec![0u8; len as usize];
        u.fill_buffer(&mut data)?;
        let name = format!("w{i}");
        weights.push(if u.arbitrary()? {
            json!({ "name": name, "npy": b64(&encode_v1(descr, &dims, &data)) })
        } else {
            json!({ "name": name, "raw": b64(&data), "dtype": dtype, "shape": dims })
        });
    }
    let mut queues = serde_json::Map::new();
    for q in 0..u.int_in_range(0..=config.max_queues)? {
        let kind = *pick(u, &["in", "out", "data"])?;
        let mut queue = json!({ "owner": *pick(u, &ENGINES)?, "type": kind });
        if u.arbitrary()? {
            queue["semaphore"] = json!(u.int_in_range(0..=31u64)?);
        } else {
            let n = u.int_in_range(1..=4usize)?;
            queue["semaphore_set"] = json!((0..n).map(|s| s as u64 + 8).collect::<Vec<_>>());
        }
        if kind == "data" && u.arbitrary()? {
            queue["num_queues"] = json!(u.int_in_range(1..=4u64)?);
        }
        queues.insert(format!("q{q}"), queue);
    }
    let mut engines = serde_json::Map::new();
    for engine in ENGINES {
        if u.ratio(1, 3)? {
            continue;
        }
        let slots = u.int_in_range(0..=config.max_blob / 64)?;
        let mut instr = vec![0u8; slots * 64];
        u.fill_buffer(&mut instr)?;
        let mut e = json!({ "instructions": b64(&instr) });
        if u.ratio(1, 3)? {
            e["dma"] = json!([dma_block(u, &queues)?]);
        }
        engines.insert(engine.to_string(), e);
    }
    let mut sgv = json!({
        "name": sg,
        "inputs": inputs,
        "outputs": outputs,
        "tmp_bufs": tmp_bufs,
        "weights": weights,
        "dma_queues": queues,
        "engines": engines,
    });
    if u.ratio(1, 4)? {
        sgv["dma"] = json!([dma_block(
            u,
            &sgv["dma_queues"].as_object().cloned().unwrap_or_default()
        )?]);
    }
    if config.max_ucode_libs > 0 && u.ratio(1, 3)? {
        sgv["ucode_libs"] = json!(ucode_libs(u, config)?);
    }
    if config.carveouts && u.arbitrary()? {
        sgv["evtaccel"] = json!(true);
    }
    if u.ratio(1, 4)? {
        sgv["replica_groups"] = json!([[0, 1]]);
        sgv["src_target_pairs"] = json!([[0, 1], [1, 0]]);
    }
    Ok(sgv)
}

fn dma_block(u: &mut Unstructured<'_>, queues: &serde_json::Map<String, Value>) -> Result<Value> {
    let names: Vec<&String> = queues.keys().collect();
    let mut block = json!({ "id": u.int_in_range(0..=3u64)?, "desc": [] });
    if !names.is_empty() {
        block["queue"] = json!(*pick(u, &names)?);
    }
    let mut descs = Vec::new();
    for _ in 0..u.int_in_range(1..=2usize)? {
        let dims = u.int_in_range(1..=3usize)?;
        let sizes: Vec<u64> = (0..dims)
            .map(|_| u.int_in_range(1..=64u64))
            .collect::<Result<_>>()?;
        let steps: Vec<i64> = (0..dims)
            .map(|_| u.int_in_range(-8..=64i64))
            .collect::<Result<_>>()?;
        let op = *pick(u, &["copy", "transpose", "add", "max"])?;
        let mut d = json!({ "from": "a", "to": "b", "from_sizes": sizes, "from_steps": steps, "to_sizes": sizes, "to_steps": steps });
        if op != "copy" {
            d["op"] = json!(op);
        }
        if op == "add" || op == "max" {
            d["_dtype"] = json!("float32");
        }
        descs.push(d);
    }
    block["desc"] = json!(descs);
    Ok(block)
}

fn ucode_libs(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<Vec<Value>> {
    let mut libs = Vec::new();
    let mut functions_left = 28usize;
    for l in 0..u.int_in_range(1..=config.max_ucode_libs)? {
        let n = u.int_in_range(1..=functions_left.min(6))?;
        functions_left -= n;
        let functions: Vec<Value> = (0..n)
            .map(|f| json!({ "name": format!("lib{l}_fn{f}") }))
            .collect();
        let data = bytes(u, config.max_blob)?;
        libs.push(json!({
            "library": format!("libgen{l}.so"),
            "data": b64(&data),
            "ulib_to_ucode_version": format!("1.{}.{}.0", u.int_in_range(0..=30u32)?, u.int_in_range(0..=9u32)?),
            "total_cpus": *pick(u, &[0u64, 1, 8])?,
            "functions": functions,
        }));
        if functions_left == 0 {
            break;
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    #[test]
    fn generated_specs_build_and_pass_every_gate() {
        let dir = tempfile::tempdir().unwrap();
        let mut built = 0;
        for seed in 0..150 {
            let data = seeded(seed, 8192);
            let mut u = Unstructured::new(&data);
            let Ok(g) = generate(&mut u, &GenConfig::default()) else {
                continue;
            };
            let builder = g.spec.into_builder(dir.path()).unwrap();
            let mut out = Vec::new();
            if let Err(e) = builder.write_to(&mut out) {
                panic!(
                    "seed {seed}: {e}\n{}",
                    serde_json::to_string_pretty(&g.json).unwrap()
                );
            }
            built += 1;
        }
        assert!(built >= 140, "only {built} of 150 seeds gave a spec");
    }

    #[test]
    fn the_same_bytes_give_the_same_spec() {
        let data = seeded(7, 4096);
        let a = generate(&mut Unstructured::new(&data), &GenConfig::default()).unwrap();
        let b = generate(&mut Unstructured::new(&data), &GenConfig::default()).unwrap();
        assert_eq!(a.json, b.json);
    }
}
