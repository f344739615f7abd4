//! Fuzz seed corpora: valid NEFFs from [`crate::generate`], and invalid ones
//! made by mutations that keep the payload hash valid, so they reach the JSON
//! parsers and the manifest gates rather than dying at the MD5 gate. Every
//! seed carries the loader's verdict on it: a mutation the loader still
//! accepts is redrawn (a few times, then kept as an accepted seed).
//! Everything is a function of the seed: the same seed gives the same files.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::mpsc::sync_channel;

use arbitrary::Unstructured;
use serde_json::Value;

use neff_writer::build_spec::BuildSpec;
use neff_writer::builder::Build;
use neff_writer::HeaderPatch;

use crate::generate::{generate, GenConfig};
use crate::seed::adversarial;
pub use crate::seed::{Mix, Seed, SeedVerdict};

/// Mutations drawn for one invalid seed before an accepted one is kept.
const MUTATION_TRIES: usize = 8;

/// Bytes of fuzzer input each seed's spec is drawn from.
const ENTROPY: usize = 8192;

/// Seed `index` of the corpus for `seed`; `invalid_ratio` (0.0–1.0) of them
/// are mutated. `None` when the generator could not draw a spec from the
/// entropy (rare; the caller moves on).
pub fn seed_file(seed: u64, index: u64, invalid_ratio: f64, config: &GenConfig) -> Option<Seed> {
    let mut spool = tempfile::tempfile().ok()?;
    seed_in(&mut spool, seed, index, invalid_ratio, config)
}

/// [`seed_file`], each NEFF written into `spool` (emptied first).
fn seed_in(
    spool: &mut File,
    seed: u64,
    index: u64,
    invalid_ratio: f64,
    config: &GenConfig,
) -> Option<Seed> {
    let mut mix = Mix(seed ^ index.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let entropy = mix.bytes(ENTROPY);
    let generated = generate(&mut Unstructured::new(&entropy), config).ok()?;
    let invalid = (mix.next_u64() % 1_000_000) as f64 / 1_000_000.0 < invalid_ratio;
    let base = std::env::temp_dir();
    // The builder's own pass over the gates would run them twice: the write's
    // check runs every gate on every targeted arch, and refuses (skips) the
    // draw unless it is accepted.
    let builder = generated.spec.into_builder(&base).ok()?.unchecked(true);
    let build = builder.build().ok()?;
    if !invalid {
        let (bytes, verdict) = write(build, spool)?;
        return Some(Seed {
            verdict,
            bytes,
            mutation: None,
        });
    }
    let mut seed = None;
    for _ in 0..MUTATION_TRIES {
        let (bytes, verdict, mutation) = mutate(&generated.json, &build, &mut mix, spool)?;
        let refused = !verdict.accepted;
        seed = Some(Seed {
            bytes,
            verdict,
            mutation: Some(mutation),
        });
        if refused {
            break;
        }
    }
    seed
}

/// Draws a corpus may try before it gives up: each unusable draw is skipped.
pub fn draw_limit(count: u64) -> u64 {
    count.saturating_mul(4).saturating_add(64)
}

/// The corpus of `count` files for `seed`: the usable draws from draw 0 (at
/// most [`draw_limit`] tried), each handed to `sink` with its draw index, in
/// draw order. They are generated and checked on `threads` threads (0: the
/// available cores), draw `i` on thread `i % threads`; since each draw is a
/// function of `(seed, i)` alone, what `sink` sees does not depend on the
/// thread count. Each thread runs at most a few draws ahead of `sink`, and
/// writes its NEFFs into one anonymous temp file. Returns how many files
/// `sink` took; stops at `sink`'s first error, or when no temp file can be
/// made.
pub fn seeds<E: From<io::Error>>(
    seed: u64,
    count: u64,
    invalid_ratio: f64,
    config: &GenConfig,
    threads: usize,
    sink: impl FnMut(u64, Seed) -> Result<(), E>,
) -> Result<u64, E> {
    let draw = |spool: &mut File, i| seed_in(spool, seed, i, invalid_ratio, config);
    drive(count, threads, draw, sink)
}

/// The corpus of `count` seeds one structure-aware change away from
/// `sources` (real NEFFs, [`crate::real`]), packed at gzip `level` (else
/// each source's own), drawn and handed to `sink` as [`seeds`] does: the
/// same files whatever the thread count.
pub fn seeds_from<E: From<io::Error>>(
    sources: &[crate::real::Source],
    seed: u64,
    count: u64,
    level: Option<u32>,
    threads: usize,
    sink: impl FnMut(u64, Seed) -> Result<(), E>,
) -> Result<u64, E> {
    let draw = |spool: &mut File, i| crate::real::seed_from(sources, seed, i, level, spool);
    let costliest = sources.iter().map(check_memory).max().unwrap_or(0);
    drive(count, threads_within_memory(threads, costliest), draw, sink)
}

/// The memory one check of a seed drawn from `source` holds besides what
/// the sources hold: 8 MiB of its own, some 8 bytes per byte of the largest
/// manifest (the loader's tree of it, the packer's copies; measured 130 MiB
/// for a 15 MiB `neff.json` of two million objects) and 1 KiB per member
/// (the model's copy, the packer's and the check's tables; measured
/// 170 MiB for 150,000 empty members).
fn check_memory(source: &crate::real::Source) -> u64 {
    (8 << 20)
        + source.largest_manifest().saturating_mul(8)
        + (source.model.payload.len() as u64).saturating_mul(1 << 10)
}

/// Memory all the checks of `seeds_from` may hold at once.
const CHECKS_MEMORY: u64 = 224 << 20;

/// `threads` (0: the available cores), fewer when that many checks of
/// `per_check` bytes each ([`check_memory`]) would together pass
/// [`CHECKS_MEMORY`]. The files do not depend on the count.
fn threads_within_memory(threads: usize, per_check: u64) -> usize {
    let threads = thread_count(threads);
    threads.min((CHECKS_MEMORY / per_check.max(1)).max(1) as usize)
}

/// `threads`, or the available cores for 0.
fn thread_count(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Runs `draw(spool, i)` for draws 0, 1, … on `threads` threads (0: the
/// available cores), draw `i` on thread `i % threads`, and hands the usable
/// ones to `sink` in draw order until it has `count` (at most
/// [`draw_limit`] draws are tried).
fn drive<E: From<io::Error>>(
    count: u64,
    threads: usize,
    draw: impl Fn(&mut File, u64) -> Option<Seed> + Sync,
    mut sink: impl FnMut(u64, Seed) -> Result<(), E>,
) -> Result<u64, E> {
    let threads = thread_count(threads);
    let limit = draw_limit(count);
    let spools = (0..threads)
        .map(|_| tempfile::tempfile())
        .collect::<io::Result<Vec<File>>>()?;
    let draw = &draw;
    std::thread::scope(|scope| {
        let receivers: Vec<_> = (0..threads as u64)
            .zip(spools)
            .map(|(first, mut spool)| {
                let (tx, rx) = sync_channel(2);
                scope.spawn(move || {
                    for i in (first..limit).step_by(threads) {
                        if tx.send(draw(&mut spool, i)).is_err() {
                            return;
                        }
                    }
                });
                rx
            })
            .collect();
        let mut taken = 0;
        for i in 0..limit {
            if taken == count {
                break;
            }
            let Ok(drawn) = receivers[(i % threads as u64) as usize].recv() else {
                break;
            };
            if let Some(file) = drawn {
                sink(i, file)?;
                taken += 1;
            }
        }
        Ok(taken)
    })
}

/// The NEFF's bytes and the verdict of the packager's check (every gate on
/// every targeted arch, as [`SeedVerdict::of`] would give), written through
/// `spool`. One compression thread: the seeds themselves run in parallel.
fn write(build: Build, spool: &mut File) -> Option<(Vec<u8>, SeedVerdict)> {
    let (packager, mut options) = build.into_packager().ok()?;
    options.threads = 1;
    let outcome = packager.write_file(spool, &options).ok()?;
    let mut bytes = Vec::new();
    spool.seek(SeekFrom::Start(0)).ok()?;
    spool.read_to_end(&mut bytes).ok()?;
    Some((bytes, SeedVerdict::from_report(&outcome.report)))
}

/// Rebuilds `spec` with one manifest member or header field changed, through
/// the builder's unchecked path (the hash is computed over the new payload).
fn mutate(
    spec: &Value,
    build: &Build,
    mix: &mut Mix,
    spool: &mut File,
) -> Option<(Vec<u8>, SeedVerdict, String)> {
    let mut spec: BuildSpec = serde_json::from_value(spec.clone()).ok()?;
    spec.unchecked = true;
    spec.keep_refused = true;
    let builder = spec.into_builder(&std::env::temp_dir()).ok()?;
    let manifests: Vec<String> = build
        .member_names()
        .filter(|n| n.ends_with(".json"))
        .map(str::to_string)
        .collect();
    if mix.below(4) == 0 || manifests.is_empty() {
        let mut patch = HeaderPatch::default();
        let what = match mix.below(4) {
            0 => {
                patch.neff_version_major = Some(mix.below(5) as u64);
                "header neff_version_major"
            }
            1 => {
                patch.feature_bits = Some(1 << mix.below(64));
                "header feature_bits"
            }
            2 => {
                patch.vnc_size = Some(mix.below(5) as u32);
                "header vnc_size"
            }
            _ => {
                patch.header_size = Some(mix.next_u64() % 0x2000);
                "header header_size"
            }
        };
        return finish(builder.header(patch), what.to_string(), spool);
    }
    let name = manifests[mix.below(manifests.len())].clone();
    let text = build.bytes(&name)?;
    let mutated = match serde_json::from_slice::<Value>(text) {
        Ok(mut value) if mix.below(5) != 0 => {
            for _ in 0..1 + mix.below(3) {
                mutate_value(&mut value, mix);
            }
            serde_json::to_vec(&value).ok()?
        }
        _ => {
            // Byte-level damage: truncation or a flipped byte.
            let mut raw = text.to_vec();
            if raw.is_empty() || mix.below(2) == 0 {
                raw.truncate(mix.below(raw.len() + 1));
            } else {
                let i = mix.below(raw.len());
                raw[i] ^= 1 << mix.below(8);
            }
            raw
        }
    };
    finish(
        builder.raw_member(name.clone(), mutated),
        format!("member {name}"),
        spool,
    )
}

fn finish(
    builder: neff_writer::NeffBuilder,
    what: String,
    spool: &mut File,
) -> Option<(Vec<u8>, SeedVerdict, String)> {
    let (bytes, verdict) = write(builder.build().ok()?, spool)?;
    Some((bytes, verdict, what))
}

/// Replaces a random node of `value` with an adversarial value.
fn mutate_value(value: &mut Value, mix: &mut Mix) {
    let descend = mix.below(3) != 0;
    match value {
        Value::Object(map) if descend && !map.is_empty() => {
            let key = map.keys().nth(mix.below(map.len())).cloned();
            if let Some(child) = key.and_then(|k| map.get_mut(&k)) {
                mutate_value(child, mix);
            }
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let i = mix.below(items.len());
            mutate_value(&mut items[i], mix);
        }
        Value::Object(map) if mix.below(3) == 0 && !map.is_empty() => {
            let key = map.keys().nth(mix.below(map.len())).cloned();
            if let Some(k) = key {
                map.remove(&k);
            }
        }
        _ => *value = adversarial(mix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_deterministic_and_valid_ones_load() {
        let config = GenConfig::default();
        let mut valid = 0;
        let mut invalid = 0;
        for i in 0..40 {
            let a = seed_file(42, i, 0.5, &config);
            let b = seed_file(42, i, 0.5, &config);
            let (Some(a), Some(b)) = (a, b) else { continue };
            assert_eq!(a.bytes, b.bytes, "seed 42 file {i}");
            let verdict = neff_loader::Loader::new(&neff_loader::RuntimeProfile::default())
                .verify(Some(std::io::Cursor::new(&a.bytes)))
                .unwrap();
            assert_eq!(verdict.accepted, a.verdict.accepted, "file {i}");
            assert_eq!(verdict.report().gate_id(), a.verdict.gate, "file {i}");
            if a.mutation.is_none() {
                valid += 1;
                assert!(verdict.accepted, "file {i}: {:?}", verdict.report());
            } else {
                invalid += 1;
                // Mutations keep the hash valid: the MD5/SHA gate never refuses.
                assert_ne!(verdict.report().gate_id(), Some("G9"), "file {i}");
            }
        }
        assert!(
            valid > 10 && invalid > 10,
            "{valid} valid, {invalid} invalid"
        );
        assert_ne!(
            seed_file(1, 0, 0.0, &config).map(|s| s.bytes),
            seed_file(2, 0, 0.0, &config).map(|s| s.bytes)
        );
    }
}
