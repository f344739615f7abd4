//! Edit a real NEFF through the typed model: lift it, change one typed
//! value, write it back. Only that value's line of `sg00/def.json` changes
//! (plus the header's size, hash and a new content-derived UUID).
//!
//! `cargo run --example edit_real_neff -- IN.neff OUT.neff`

use std::path::Path;

use neff::loader::RuntimeProfile;
use neff::tools::{extract, ExtractLimits};
use neff::writer::lift::Model;
use neff::writer::{recover_framing, DeflateProof, PackSettings};

/// Lifts `input` (unpacked into a temporary folder), renames its first
/// subgraph's def.json `name` to `new_name`, and writes `output`.
pub fn edit(input: &Path, output: &Path, new_name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let tree = tempfile::tempdir()?;
    let tree = tree.path().join("tree");
    // The members, unpacked as the runtime reads them (every gate applied) ...
    extract(
        input,
        &tree,
        &RuntimeProfile::default(),
        false,
        &ExtractLimits::default(),
    )?;
    // ... the header and framing that rebuild them byte for byte ...
    let recovered = recover_framing(input, DeflateProof::DEFAULT)?;
    // ... and the typed model over both.
    let (mut model, notes) = Model::from_tree(&tree, recovered.file, None)?;
    for note in &notes.0 {
        eprintln!("note: {note}");
    }
    let def = model
        .def_json_mut("sg00/def.json")
        .ok_or("sg00/def.json is not a typed def.json")?;
    def.name = Some(new_name.to_string());
    let outcome = model.write_to_path(Path::new(""), output, &PackSettings::default())?;
    for note in &outcome.notes {
        eprintln!("{note}");
    }
    println!("{}: {}", output.display(), outcome.report.summary());
    Ok(())
}

#[allow(dead_code)] // The test suite includes this file for `edit` alone.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        return Err("usage: edit_real_neff IN.neff OUT.neff".into());
    };
    edit(Path::new(input), Path::new(output), "edited")
}
