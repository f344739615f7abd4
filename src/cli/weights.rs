//! `neff weights`: a NEFF's weights to and from safetensors.

use std::path::PathBuf;

use clap::Args;
use neff::tools::weights;

use super::EXIT_OK;

/// Export a NEFF's weights to safetensors, or import them from it.
///
/// One tensor per `file` variable, keyed `<graph>/<var name>` (sg00/w), in
/// safetensors' own dtype where there is one (F32, F16, BF16, the integer
/// kinds, F8_E4M3, F8_E5M2) and its shape; a weight of any other dtype (a
/// packed `_x4` kind) is U8 bytes, its NEFF dtype in the metadata under
/// `neff.dtype.<key>`.
///
/// --import writes FILE with the weights the safetensors file holds (written
/// to a temp file beside OUT, checked by the loader's gates, renamed into
/// place): a tensor naming no weight is refused, and so is a new dtype or
/// shape unless --retype; def.json's sizes follow the data. A tensor equal to
/// its weight changes nothing: importing an export gives FILE byte for byte.
///
///   neff weights model.neff --export w.safetensors
///   neff weights model.neff --import w.safetensors -o edited.neff
#[derive(Args, Debug)]
pub struct WeightsArgs {
    /// The NEFF.
    file: PathBuf,
    /// Write its weights to this safetensors file (atomically).
    #[arg(
        long,
        value_name = "W.safetensors",
        conflicts_with = "import",
        required_unless_present = "import"
    )]
    export: Option<PathBuf>,
    /// Read its weights from this safetensors file; write the NEFF at --output.
    #[arg(long, value_name = "W.safetensors", requires = "output")]
    import: Option<PathBuf>,
    /// With --import: where to write the NEFF.
    #[arg(short, long, value_name = "OUT.neff")]
    output: Option<PathBuf>,
    /// With --import: allow a tensor of another dtype or shape than its weight.
    #[arg(long, requires = "import")]
    retype: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: WeightsArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    if let Some(out) = &args.export {
        let done = weights::export(&args.file, out, &scratch.path().join("tree"))?;
        if !args.quiet {
            eprintln!(
                "wrote {}: {} tensors, {} bytes of weights",
                out.display(),
                done.tensors,
                done.bytes
            );
        }
        return Ok(EXIT_OK);
    }
    let (Some(tensors), Some(out)) = (&args.import, &args.output) else {
        return Err("give --export W.safetensors, or --import W.safetensors -o OUT".into());
    };
    let done = weights::import(&args.file, tensors, out, scratch.path(), args.retype)?;
    if !args.quiet {
        let changed = match done.changed.is_empty() {
            true => "no weight changed".to_string(),
            false => format!("changed {}", done.changed.join(", ")),
        };
        eprintln!(
            "wrote {}: {changed}; {}",
            out.display(),
            done.outcome.report.summary()
        );
    }
    Ok(EXIT_OK)
}
