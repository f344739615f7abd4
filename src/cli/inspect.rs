//! `neff inspect`: the header, the member table and the model.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use neff::loader::{EntryFate, Limits, RuntimeProfile};
use neff::loader::{ModelSummary, WeightSummary};
use neff::schema::hex;
use neff::tools::{
    ntff_neff_uuid, InspectReport, MemoryCategories, MemoryReport, SharedMemoryReport,
};

use super::input;
use super::units::human_bytes;
use super::{print_json, EXIT_OK, EXIT_REJECTED};

/// Show every header field, the member table and the model the manifests describe.
///
/// The hash is shown in hex, the UUID in canonical form and feature bits as a mask with
/// their names. The payload part gives the whole tar stream's length and where its
/// end-of-archive marker starts, the gzip member's length and the bytes after it inside
/// data_size (whether all zero). The model part lists the target and version, the
/// model's inputs and outputs (name, dtype, shape, bytes, from neff.json joined with the
/// def.json variables of the same name), each graph's inputs and outputs (name, var_id,
/// size, dtype, shape), weights, DMA queues, engines with instruction sizes, ucode
/// libraries and carveouts, the members `neff build` refers to by convention
/// (`<sg>/ucode_lib.json`, `barrier_config.json`) with what refers to them, members no
/// manifest references, and references to missing members, as far as the manifests
/// could be read. The gates run too (as `neff verify`
/// runs them, on every arch); the exit status is 1 when they refuse the file. When only
/// the hash check (G9) refuses, the model is still read and shown, marked as read past
/// the refusal; the verdict stays the refusal.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The NEFF to inspect (`-` reads it from stdin), or a file that carries
    /// one (`wrapped_neff.hlo`, `model.neuron`). With --memory, several: the
    /// memory of the NEFFs loaded together on one NeuronCore.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// When FILE carries several NEFFs (an HLO module from a compile cache,
    /// a torch-neuron(x) TorchScript zip), read NEFF number N (from 0). A
    /// carrier's NEFF is found by parsing it; where it lay is said on stderr.
    #[arg(long, value_name = "N")]
    index: Option<usize>,
    /// Print one JSON object on stdout (with --memory: the `memory-report`
    /// document, see `neff schema memory-report`).
    #[arg(long)]
    json: bool,
    /// Print nothing when the NEFF is accepted; a refusal is one line on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Print only the weights table (neuron-packager's `info --show-weights`):
    /// every def.json `file` variable of every graph with its var_id, member,
    /// variable size, stored bytes, and dtype and shape where def.json or the
    /// member's .npy header gives them. The --json report holds them under model.graphs[].weights.
    #[arg(long, conflicts_with_all = ["json", "memory", "ntff"])]
    show_weights: bool,
    /// Print only the device (HBM) memory per NeuronCore, in the runtime's
    /// categories, from the manifests. model_code: engine instruction bytes
    /// (the runtime adds 96 MB of microcode per physical core, not counted);
    /// constants: each weight's `size`, else its data bytes after the .npy
    /// header; shared_scratchpad: max(backing_variable_off + size) over the
    /// `virtual` variables (the runtime's rule); scratchpad: the sizes of the
    /// virtual variables crossing a 512 MiB scratchpad page (allocated
    /// privately); dma_rings_io / dma_rings_spill: 16 B per hardware
    /// descriptor (INFERRED; no per-queue overhead counted) moving an input
    /// or output / anything else, a JSON descriptor standing for
    /// max(prod(from_sizes[1..]), prod(to_sizes[1..])) of them; total: their
    /// sum; io_tensors (the application's, not in total). One row per graph:
    /// each graph runs on one physical core, and with vnc_size N the logical
    /// core's figure is the sum of its N graphs. Sources:
    /// https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/explore/device-memory.html
    /// and neuron-monitor's memory_used → usage_breakdown
    /// (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-sys-tools/neuron-monitor-user-guide.html).
    /// A refused NEFF exits 1 (its figures cover what the manifests gave
    /// before the refusal; none when its container is unreadable).
    ///
    /// With several files, the NEFFs loaded together on one NeuronCore: each
    /// NEFF's total, then all of them, whose shared scratchpad is the largest of
    /// theirs rounded up to whole 512 MiB pages (they share it); what is
    /// estimated rather than known is listed (`neff schema shared-memory-report`):
    ///
    ///   neff inspect --memory encoder.neff decoder.neff
    #[arg(long)]
    memory: bool,
    /// With --memory: exact byte counts instead of binary units (KiB, MiB, GiB).
    #[arg(long, requires = "memory")]
    bytes: bool,
    /// Tell whether a runtime profile (.ntff) was recorded for this NEFF: the
    /// profile holds its NEFF's header UUID (16 raw bytes after the NEFF's
    /// file name, at offset 141 for `file.neff`). Exit 0 when it belongs, 1
    /// when the UUIDs differ (a UUID mismatch is a documented cause of failed
    /// profile processing, Neuron Explorer's ERROR_PROCESS_INCOMPLETE:
    /// https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-explorer/troubleshooting.html),
    /// 2 when the profile is unreadable.
    #[arg(long, value_name = "FILE.ntff", conflicts_with_all = ["json", "memory"])]
    ntff: Option<PathBuf>,
}

pub fn run(args: InspectArgs) -> Result<u8, Box<dyn std::error::Error>> {
    if args.files.len() > 1 {
        if !args.memory {
            return Err("several files are inspected together only with --memory".into());
        }
        return memory_together(&args);
    }
    let file = &args.files[0];
    let report = inspected(file, &args)?;
    let code = if report.verdict.accepted {
        EXIT_OK
    } else {
        EXIT_REJECTED
    };
    if let Some(ntff) = &args.ntff {
        return check_ntff(ntff, &report);
    }
    match (&report.model, args.memory, args.show_weights, args.json) {
        // With --json and no model, the inspect report carries the verdict.
        (None, true, _, false) | (None, _, true, _) => {
            eprintln!(
                "neff: {}: no model to show: {}",
                report.file,
                report.verdict.summary()
            );
        }
        (Some(m), true, _, json) => {
            let memory = MemoryReport::new(&report.file, m);
            if json {
                print_json(&memory)?;
            } else {
                print_memory(&memory, args.bytes);
            }
        }
        (Some(m), _, true, _) => print_weights(m),
        (_, _, _, true) => print_json(&report)?,
        _ if args.quiet => super::quiet_verdict(file, &report.verdict),
        _ => print_human(&report),
    }
    // The text views end with the refusal, as the full view does.
    if code != EXIT_OK && !args.json && (args.memory || args.show_weights) && report.model.is_some()
    {
        println!("verdict: {}", report.verdict.summary());
    }
    Ok(code)
}

/// `--ntff`: whether the profile's NEFF UUID is this NEFF's.
fn check_ntff(ntff: &Path, r: &InspectReport) -> Result<u8, Box<dyn std::error::Error>> {
    let Some(header) = &r.header else {
        return Err(format!("{}: no NEFF header to compare the profile with", r.file).into());
    };
    let mut start = Vec::new();
    neff::writer::fs::open_regular(ntff, "NTFF profile")?
        .take(4096)
        .read_to_end(&mut start)
        .map_err(|e| format!("{}: {e}", ntff.display()))?;
    let (uuid, _) = ntff_neff_uuid(&start).map_err(|e| format!("{}: {e}", ntff.display()))?;
    if uuid == header.uuid {
        println!(
            "ntff: {} belongs to this NEFF (uuid {uuid})",
            ntff.display()
        );
        return Ok(EXIT_OK);
    }
    println!(
        "ntff: {} does NOT belong to this NEFF (profile uuid {uuid}, NEFF uuid {}): a UUID mismatch is a documented cause of failed profile processing (Neuron Explorer ERROR_PROCESS_INCOMPLETE)",
        ntff.display(),
        header.uuid
    );
    Ok(EXIT_REJECTED)
}

/// `--show-weights`: one row per weight of every graph.
fn print_weights(m: &ModelSummary) {
    let weights: Vec<(&str, &WeightSummary)> = m
        .graphs
        .iter()
        .flat_map(|g| g.weights.iter().map(move |w| (g.name.as_str(), w)))
        .collect();
    let total = weights
        .iter()
        .filter_map(|(_, w)| w.bytes())
        .fold(0u64, u64::saturating_add);
    println!("weights: {} ({total} bytes)", weights.len());
    println!(
        "  {:<6} {:>7} {:>12} {:>12}  {:<10} {:<16} name  member",
        "graph", "var_id", "size", "stored", "dtype", "shape"
    );
    let opt = |v: Option<u64>| v.map_or("?".into(), |s| s.to_string());
    for (graph, w) in weights {
        println!(
            "  {graph:<6} {:>7} {:>12} {:>12}  {:<10} {:<16} {}  {}",
            w.var_id,
            opt(w.bytes()),
            opt(w.member_size),
            w.dtype.as_deref().unwrap_or("-"),
            w.shape.as_ref().map_or("-".into(), |s| format!("{s:?}")),
            w.name,
            w.member
        );
    }
}

/// The inspect report of `file` (or of the NEFF it carries), under the
/// default profile.
fn inspected(file: &Path, args: &InspectArgs) -> Result<InspectReport, Box<dyn std::error::Error>> {
    let input = input::resolve(file, args.index, args.quiet)?;
    let name = input.name.clone();
    let verdict = input::verify(
        &input.path,
        &name,
        &RuntimeProfile::default(),
        &Limits::default(),
    )
    .map_err(|e| e.at_path(&name))?;
    let mut report = InspectReport::new(&name, &verdict);
    report.carried = input.carried.clone();
    Ok(report)
}

/// `--memory A B …`: each NEFF's memory, then all of them loaded together.
fn memory_together(args: &InspectArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let mut reports = Vec::new();
    let mut code = EXIT_OK;
    for file in &args.files {
        let report = inspected(file, args)?;
        let name = report.file.clone();
        if !report.verdict.accepted {
            code = EXIT_REJECTED;
            eprintln!("neff: {name}: {}", report.verdict.summary());
        }
        match &report.model {
            Some(model) => reports.push(MemoryReport::new(&name, model)),
            None => return Err(format!("{name}: no model to add up").into()),
        }
    }
    let shared = SharedMemoryReport::new(reports);
    if args.json {
        print_json(&shared)?;
        return Ok(code);
    }
    let rows: Vec<(String, &MemoryCategories)> = shared
        .neffs
        .iter()
        .map(|n| (n.file.clone(), &n.total))
        .chain([("together".to_string(), &shared.together)])
        .collect();
    print_table(
        "device memory of NEFFs loaded together on one NeuronCore",
        "neff",
        &rows,
        args.bytes,
    );
    println!("estimated, not known:");
    for note in &shared.estimated {
        println!("  - {note}");
    }
    Ok(code)
}

/// `--memory`: one row per graph (physical core), then the NEFF's total; in
/// binary units, or exact byte counts with `exact`.
fn print_memory(r: &MemoryReport, exact: bool) {
    let rows: Vec<(String, &MemoryCategories)> = r
        .cores
        .iter()
        .map(|c| {
            let mark = if c.partial.is_some() { "*" } else { "" };
            (format!("{}{mark}", c.graph), &c.memory)
        })
        .chain([("total".to_string(), &r.total)])
        .collect();
    print_table("device memory per NeuronCore", "core", &rows, exact);
    for core in r.cores.iter().filter(|c| c.partial.is_some()) {
        let why = core.partial.as_deref().unwrap_or_default();
        println!("  * {}: {why}", core.graph);
    }
}

/// The memory table: a row per `(name, figures)`, its first column headed
/// `first`.
fn print_table(title: &str, first: &str, named: &[(String, &MemoryCategories)], exact: bool) {
    let headers: [&str; 9] = [
        first,
        "model_code",
        "constants",
        "shared_scratchpad",
        "scratchpad",
        "dma_rings_io",
        "dma_rings_spill",
        "total",
        "io_tensors",
    ];
    let shown = |n: u64| if exact { n.to_string() } else { human_bytes(n) };
    let rows: Vec<[String; 9]> = named
        .iter()
        .map(|(name, m)| {
            let [code, constants, shared, private, io, spill] = m.categories();
            [
                name.clone(),
                shown(code),
                shown(constants),
                shown(shared),
                shown(private),
                shown(io),
                shown(spill),
                shown(m.total),
                shown(m.io_tensors),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut text = format!("  {:<w$}", cells[0], w = widths[0]);
        for (i, cell) in cells.iter().enumerate().skip(1) {
            text.push_str(&format!(" {:>w$}", cell, w = widths[i]));
        }
        text
    };
    let unit = if exact {
        "bytes"
    } else {
        "binary units; --bytes for exact counts"
    };
    println!("{title} ({unit}; see --help for each rule):");
    println!("{}", line(&headers));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        println!("{}", line(&cells));
    }
}

fn print_human(r: &InspectReport) {
    println!("file: {}", r.file);
    if let Some(carried) = &r.carried {
        println!("carried: {carried}");
    }
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
        println!("  hash:                {}", hex::encode(h.hash.0));
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
        let tar = match (r.tar_size, r.tar_end_offset) {
            (Some(size), Some(end)) => {
                format!("tar stream {size} bytes (end-of-archive marker at {end})")
            }
            (None, Some(end)) => format!("tar stream read to its end-of-archive marker at {end}"),
            _ => "tar stream not read to its end".to_string(),
        };
        println!("payload: {how}, {tar}");
        if let Some(size) = r.gzip_member_size {
            let members = r.gzip_members.unwrap_or(1);
            let what = if members == 1 {
                "1 member".to_string()
            } else {
                format!("{members} members")
            };
            println!("  gzip:                {size} bytes ({what})");
        }
        if let Some(p) = r.payload_padding {
            let zero = if p.bytes == 0 {
                ""
            } else if p.all_zero {
                ", all zero"
            } else {
                ", NOT all zero"
            };
            println!(
                "  after the gzip data: {} bytes inside data_size{zero}",
                p.bytes
            );
        }
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
        if let Some(past) = &r.model_read_past {
            println!(
                "model (read for display past the {} refusal; the runtime stops there):",
                past.gate
            );
            if let Some(then) = &past.then {
                println!("  the manifest tiers then stop at {then}");
            }
        } else {
            println!("model:");
        }
        print_model(m);
    }
    match &r.barrier_config {
        Some(Ok(b)) => println!(
            "barrier config ({member}): execute_device_barrier {} (the logger's JSON: `neff cat {} {member}` prints it, `neff barrier encode` turns it into the 296 bytes)",
            if b.execute_device_barrier.0 { "0x1" } else { "0x0" },
            r.file,
            member = neff::loader::BARRIER_CONFIG_MEMBER,
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

fn print_model(m: &ModelSummary) {
    if let Some(kelf) = &m.kelf {
        println!(
            "  kelf:    {kelf} (version {})",
            m.version.as_deref().unwrap_or("?")
        );
    }
    if let Some(target) = &m.target {
        println!("  target:  {target:?}");
    }
    for (label, side) in [("inputs", &m.inputs), ("outputs", &m.outputs)] {
        if side.is_empty() {
            continue;
        }
        println!("  {label}:");
        for t in side {
            println!("    {}", io_line(t));
        }
    }
    for g in &m.graphs {
        println!("  graph {} ({}, {} vars):", g.name, g.definition, g.vars);
        if let Some(partial) = &g.partial {
            println!("    partial: {partial}");
        }
        for (label, vars) in [("input ", &g.inputs), ("output", &g.outputs)] {
            for v in vars {
                println!(
                    "    {label} {} var_id {} size {}{}",
                    v.name,
                    v.var_id,
                    v.size.map_or("?".into(), |s| s.to_string()),
                    dtype_shape(v.dtype.as_deref(), v.shape.as_deref())
                );
            }
        }
        if !g.weights.is_empty() {
            let total: u64 = g.weights.iter().filter_map(|w| w.member_size).sum();
            println!("    weights: {} ({total} bytes stored)", g.weights.len());
            for w in &g.weights {
                println!(
                    "    weight {} var_id {} {} size {} stored {} bytes{}",
                    w.name,
                    w.var_id,
                    w.member,
                    w.bytes().map_or("?".into(), |s| s.to_string()),
                    w.member_size.map_or("?".into(), |s| s.to_string()),
                    dtype_shape(w.dtype.as_deref(), w.shape.as_deref())
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
    for b in &m.builder_members {
        println!(
            "  builder member: {} (referenced by {})",
            b.member, b.referenced_by
        );
    }
    for r in &m.missing_references {
        println!("  missing: {} ({} in {})", r.member, r.key, r.from);
    }
}

/// One model input or output: name, dtype, shape, bytes, then where it comes from.
fn io_line(t: &neff::loader::ModelIo) -> String {
    let mut line = format!(
        "{} {} {} {} bytes",
        t.name,
        t.dtype.as_deref().unwrap_or("?"),
        t.shape.as_ref().map_or("?".into(), |s| format!("{s:?}")),
        t.size.map_or("?".into(), |s| s.to_string())
    );
    if let Some(id) = t.entry_id {
        line.push_str(&format!(" (entry {id}"));
        if t.entries > 1 {
            line.push_str(&format!(", {} entries", t.entries));
        }
        if let Some(sig) = &t.signature {
            line.push_str(&format!(", signature {sig:?}"));
        }
        line.push(')');
    }
    if !t.vars.is_empty() {
        let vars: Vec<String> = t
            .vars
            .iter()
            .map(|v| {
                let size = v.size.map_or(String::new(), |s| format!(" {s} bytes"));
                format!("{} var_id {}{size}", v.graph, v.var_id)
            })
            .collect();
        line.push_str(&format!(" [{}]", vars.join("; ")));
    }
    line
}

fn dtype_shape(dtype: Option<&str>, shape: Option<&[u64]>) -> String {
    let mut s = String::new();
    if let Some(d) = dtype {
        s.push_str(&format!(" dtype {d}"));
    }
    if let Some(sh) = shape {
        s.push_str(&format!(" shape {sh:?}"));
    }
    s
}

fn zeros_or_hex(bytes: &[u8]) -> String {
    if bytes.iter().all(|&b| b == 0) {
        "zeros".to_string()
    } else {
        hex::encode(bytes)
    }
}
