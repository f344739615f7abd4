//! The library API in one page: build a model with `NeffBuilder`, write it
//! atomically (every gate runs on every targeted arch before the rename), then
//! load it back and print what the loader says.
//!
//! `cargo run --example build_model -- [OUT.neff]` (default: a temp file).

use neff::loader::{verify_file, RuntimeProfile};
use neff::schema::manifest::{DmaQueue, Dtype, Engine, QueueType};
use neff::schema::Target;
use neff::tools::InspectReport;
use neff::writer::builder::{Tensor, Weight};
use neff::writer::NeffBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("model.neff"));

    // 64 bytes of f32 weights, as a raw .bin member (a path would be streamed).
    let weights: Vec<u8> = (0..16u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let outcome = NeffBuilder::new()
        .name("example")
        .target(Target::Any)
        .subgraph("sg00", |sg| {
            sg.input("x", Tensor::new(Dtype::Float32, [4, 4]))
                .output("y", Tensor::new(Dtype::Float32, [4, 4]))
                .weight("w", Weight::raw(weights))
                .dma_queue(
                    "q_in",
                    DmaQueue::new(Engine::Pool, QueueType::In).semaphore(10),
                )
                .instructions(Engine::Pe, vec![0u8; 64])
        })
        .write_to_path(&out)?;
    println!("wrote {} (uuid {})", out.display(), outcome.header.uuid);

    let verdict = verify_file(&out, &RuntimeProfile::default())?;
    let report = InspectReport::new(&out.display().to_string(), &verdict);
    println!("{}", report.verdict.summary());
    if let Some(model) = &report.model {
        for g in &model.graphs {
            let io: Vec<String> = g
                .inputs
                .iter()
                .chain(&g.outputs)
                .map(|v| format!("{}#{}", v.name, v.var_id))
                .collect();
            println!("graph {}: {} vars, io {}", g.name, g.vars, io.join(" "));
        }
    }
    assert!(verdict.accepted);
    Ok(())
}
