//! `neff inspect`: the header, the member table and the model.

use std::path::PathBuf;

use clap::Args;
use neff::loader::inspect::InspectReport;
use neff::loader::{verify_file, EntryFate, RuntimeProfile};
use neff::schema::hex;

use super::{print_json, EXIT_OK, EXIT_REJECTED};

/// Show every header field, the member table and the model the manifests describe.
///
/// The hash is shown in hex, the UUID in canonical form and feature bits as a mask with
/// their names. The model part lists the target and version, each graph's inputs and
/// outputs (name, var_id, size, dtype, shape), DMA queues, engines with instruction
/// sizes, ucode libraries and carveouts, members no manifest references, and references
/// to missing members. The gates run too (as `neff verify` runs them, on every arch);
/// the exit status is 1 when they refuse the file.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The NEFF to inspect.
    file: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: InspectArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let verdict = verify_file(&args.file, &RuntimeProfile::default())?;
    let report = InspectReport::new(&args.file.display().to_string(), &verdict);
    let code = if report.verdict.accepted {
        EXIT_OK
    } else {
        EXIT_REJECTED
    };
    if args.json {
        print_json(&report)?;
    } else {
        print_human(&report);
    }
    Ok(code)
}

fn print_human(r: &InspectReport) {
    println!("file: {}", r.file);
    if let Some(size) = r.file_size {
        println!("file_size: {size}");
    }
    if let Some(h) = &r.header {
        println!("header:");
        println!("  pkg_version:         {}", h.pkg_version);
        println!("  header_size:         {:#x}", h.header_size);
        println!("  data_size:           {}", h.data_size);
        println!(
            "  neff_version:        {}.{}",
            h.neff_version_major, h.neff_version_minor
        );
        println!("  build_version:       {:?}", h.build_version);
        println!("  unused_0:            {}", h.unused_0);
        println!("  hash:                {}", hex::encode(&h.hash.0));
        if let Some(layout) = r.verdict.hash_layout {
            println!("  hash_layout:         {} (matched)", layout.name());
        }
        println!("  uuid:                {}", h.uuid);
        println!("  name:                {:?}", h.name);
        println!("  requested_tpb_count: {}", h.requested_tpb_count);
        println!("  tpb_per_node:        {}", zeros_or_hex(&h.tpb_per_node.0));
        println!(
            "  feature_bits:        {:#x} [{}]",
            h.feature_bits,
            r.feature_names.join(", ")
        );
        println!("  vnc_size:            {}", h.vnc_size);
        println!("  pad:                 {}", zeros_or_hex(&h.pad.0));
    }
    if let Some(compression) = r.compression {
        let how = match compression {
            neff::loader::Compression::Gzip => "gzip",
            neff::loader::Compression::None => "raw tar",
        };
        println!(
            "payload: {how}, tar stream {} bytes up to its end marker",
            r.tar_size.unwrap_or(0)
        );
    }
    if !r.members.is_empty() {
        println!("members ({}):", r.members.len());
        println!("  {:>12}  {:<9}  {:<9}  name", "size", "type", "stored");
        for e in &r.members {
            let fate = match e.fate {
                EntryFate::Stored => "yes",
                EntryFate::Directory | EntryFate::Wavegraph => "skipped",
                EntryFate::Replaced => "replaced",
            };
            println!(
                "  {:>12}  {:<9}  {:<9}  {}",
                e.size,
                e.kind.name(),
                fate,
                e.name
            );
        }
    }
    if let Some(m) = &r.model {
        print_model(m);
    }
    match &r.barrier_config {
        Some(Ok(b)) => println!(
            "barrier config ({}): execute_device_barrier {} (decode it with `neff barrier encode`; see --json)",
            neff::loader::inspect::BARRIER_CONFIG_MEMBER,
            if b.execute_device_barrier.0 { "0x1" } else { "0x0" }
        ),
        Some(Err(e)) => println!("barrier config: does not decode: {e}"),
        None => {}
    }
    for w in &r.verdict.warnings {
        println!("warning: {w}");
    }
    println!("verdict: {}", r.verdict.summary());
    if let Some(detail) = &r.verdict.detail {
        println!("  detail: {detail}");
    }
}

fn print_model(m: &neff::loader::ModelSummary) {
    println!("model:");
    if let Some(kelf) = &m.kelf {
        println!(
            "  kelf:    {kelf} (version {})",
            m.version.as_deref().unwrap_or("?")
        );
    }
    if let Some(target) = &m.target {
        println!("  target:  {target:?}");
    }
    for g in &m.graphs {
        println!("  graph {} ({}, {} vars):", g.name, g.definition, g.vars);
        for (label, vars) in [("input ", &g.inputs), ("output", &g.outputs)] {
            for v in vars {
                println!(
                    "    {label} {} var_id {} size {} dtype {} shape {}",
                    v.name,
                    v.var_id,
                    v.size.map_or("?".into(), |s| s.to_string()),
                    v.dtype.as_deref().unwrap_or("?"),
                    v.shape.as_ref().map_or("?".into(), |s| format!("{s:?}"))
                );
            }
        }
        for q in &g.queues {
            println!(
                "    queue  {} type {} owner {} semaphores {}",
                q.name, q.kind, q.owner, q.semaphores
            );
        }
        for e in &g.engines {
            match (&e.instr, e.instr_size) {
                (Some(instr), Some(size)) => println!(
                    "    engine {:<4} {instr} {size} bytes, {} dma blocks",
                    e.engine, e.dma_blocks
                ),
                _ => println!("    engine {:<4} (none)", e.engine),
            }
        }
        for l in &g.ucode_libs {
            println!(
                "    ucode  {} version {} cpu_id {} total_cpus {} functions [{}]",
                l.library,
                l.version.as_deref().unwrap_or("?"),
                l.cpu_id,
                l.total_cpus,
                l.functions.join(", ")
            );
        }
        for c in &g.carveouts {
            println!(
                "    carveout {} offset {:#x} size {} partitions {}..{}",
                c.kind,
                c.offset,
                c.size,
                c.base_partition,
                c.base_partition + c.partitions
            );
        }
    }
    if !m.unreferenced_members.is_empty() {
        println!(
            "  unreferenced members: {}",
            m.unreferenced_members.join(", ")
        );
    }
    for r in &m.missing_references {
        println!("  missing: {} ({} in {})", r.member, r.key, r.from);
    }
}

fn zeros_or_hex(bytes: &[u8]) -> String {
    if bytes.iter().all(|&b| b == 0) {
        "zeros".to_string()
    } else {
        hex::encode(bytes)
    }
}
