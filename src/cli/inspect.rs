//! `neff inspect`: the header and the member table.

use std::path::PathBuf;

use clap::Args;
use neff::loader::{load_file, EntryFate, RuntimeProfile};

use super::{print_json, EXIT_OK, EXIT_REJECTED};

/// Show every header field and the member table.
///
/// The hash is shown in hex, the UUID in canonical form and feature bits as a mask.
/// The container gates run too (hash verification included) and their verdict is
/// shown; the exit status is 1 when they refuse the file.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The NEFF to inspect.
    file: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: InspectArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let loaded = load_file(&args.file, &RuntimeProfile::default())?;
    let code = if loaded.report.accepted {
        EXIT_OK
    } else {
        EXIT_REJECTED
    };
    let container = loaded.container.as_ref();
    if args.json {
        print_json(&serde_json::json!({
            "file": args.file.display().to_string(),
            "file_size": container.map(|c| c.file_size),
            "header": container.map(|c| c.header.fields()),
            "compression": container.and_then(|c| c.compression),
            "tar_size": container.map(|c| c.tar_size),
            "members": container.map(|c| &c.entries),
            "verdict": loaded.report,
        }))?;
        return Ok(code);
    }
    println!("file: {}", args.file.display());
    let Some(c) = container else {
        println!("verdict: {}", loaded.report.summary());
        return Ok(code);
    };
    let h = c.header.fields();
    println!("file_size: {}", c.file_size);
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
    println!(
        "  hash:                {}",
        neff::schema::hex::encode(&h.hash.0)
    );
    println!("  uuid:                {}", h.uuid);
    println!("  name:                {:?}", h.name);
    println!("  requested_tpb_count: {}", h.requested_tpb_count);
    println!("  tpb_per_node:        {}", zeros_or_hex(&h.tpb_per_node.0));
    println!("  feature_bits:        {:#x}", h.feature_bits);
    println!("  vnc_size:            {}", h.vnc_size);
    println!("  pad:                 {}", zeros_or_hex(&h.pad.0));
    if let Some(compression) = c.compression {
        let how = match compression {
            neff::loader::Compression::Gzip => "gzip",
            neff::loader::Compression::None => "raw tar",
        };
        println!(
            "payload: {how}, tar stream {} bytes up to its end marker",
            c.tar_size
        );
    }
    println!("members ({}):", c.entries.len());
    println!("  {:>12}  {:<9}  {:<9}  name", "size", "type", "stored");
    for e in &c.entries {
        let fate = match e.fate {
            EntryFate::Stored => "yes",
            EntryFate::Directory => "skipped",
            EntryFate::Wavegraph => "skipped",
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
    for w in &loaded.report.warnings {
        println!("warning: {w}");
    }
    println!("verdict: {}", loaded.report.summary());
    Ok(code)
}

fn zeros_or_hex(bytes: &[u8]) -> String {
    if bytes.iter().all(|&b| b == 0) {
        "zeros".to_string()
    } else {
        neff::schema::hex::encode(bytes)
    }
}
