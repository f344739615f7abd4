//! `neff barrier`: the collectives firmware's `neff_barrier_configs_t`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use neff::schema::barrier::json::{from_json, to_json};
use neff::schema::barrier::tables::{self, BarrierType, Fabric};
use neff::schema::barrier::{BarrierConfigs, BARRIER_CONFIGS_LEN};
use neff::schema::hex;
use neff::writer::barrier::{compose, ComposeInputs};
use neff::writer::fs::SMALL_MAX;

use super::{parse_mask, print_json, write_binary, FsyncArgs, EXIT_OK};

/// Decode, encode, compose and explain barrier configs (`neff_barrier_configs_t`, 296 bytes).
///
/// The runtime builds this struct at load time and sends it to the collectives
/// firmware; no NEFF member carries it. The JSON form is the firmware logger's:
/// addresses as {"addr": {"soc_addr": "0x…"}}, execute_device_barrier as "0x0"/"0x1",
/// both the host and the device view of the overlaid first 16 bytes, the steps under
/// device_barrier.barrier_step_config, and total_desc_n (which the logger skips).
#[derive(Args, Debug)]
pub struct BarrierArgs {
    #[command(subcommand)]
    command: BarrierCommand,
    /// Print nothing on success (decode and tables then only check their input).
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum BarrierCommand {
    /// Decode a 296-byte config to readable text, or to the logger's JSON.
    Decode {
        /// The binary config.
        file: PathBuf,
        /// Print the logger-shaped JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Encode logger-shaped JSON (as `decode --json` prints it) to 296 bytes.
    #[command(after_help = super::OUTPUT_POLICY)]
    Encode {
        /// The JSON config.
        file: PathBuf,
        /// The binary output (written atomically); `-` writes to stdout.
        #[arg(short, long, value_name = "FILE.bin")]
        output: PathBuf,
        #[command(flatten)]
        fsync: FsyncArgs,
    },
    /// Compose a config from explicit inputs, following the runtime's tables.
    #[command(after_help = super::OUTPUT_POLICY)]
    Compose(ComposeArgs),
    /// Print the step sizes and the 4-step algorithm tables of both fabrics.
    Tables {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Inputs of `neff barrier compose`; `--spec` takes them all as JSON
/// (see `neff schema barrier-compose`) and the flags then add to or override it.
#[derive(Args, Debug)]
struct ComposeArgs {
    /// Inputs as JSON; flags given too override it.
    #[arg(long, value_name = "FILE.json")]
    spec: Option<PathBuf>,
    /// The binary output (written atomically); `-` writes to stdout.
    #[arg(short, long, value_name = "FILE.bin")]
    output: PathBuf,
    #[command(flatten)]
    fsync: FsyncArgs,
    /// Also print the result as the logger's JSON (on stdout, so not with `-o -`).
    #[arg(long)]
    json: bool,
    /// Fabric family: default ({1,4,4,1}) or switch-v1 ({1,2,2,1}).
    #[arg(long, value_enum)]
    fabric: Option<FabricArg>,
    /// Host collectives mode (leader-done semaphore id 6 instead of 2).
    #[arg(long)]
    host_cc: bool,
    /// Run the on-device 4-step barrier (sets execute_device_barrier).
    #[arg(long)]
    device_barrier: bool,
    /// A leader SP's semaphore base address; give 1 to 4, in leader order.
    #[arg(long = "leader-base", value_name = "ADDR", value_parser = parse_mask)]
    leader_bases: Vec<u64>,
    /// Address distance between semaphore ids (default 4).
    #[arg(long, value_name = "N", value_parser = parse_mask)]
    sema_stride: Option<u64>,
    /// A DMA sync semaphore address; up to 4.
    #[arg(long = "dma-sync-sema", value_name = "ADDR", value_parser = parse_mask)]
    dma_sync_semas: Vec<u64>,
    /// dma_sync_sema_value.
    #[arg(long, value_name = "N")]
    dma_sync_value: Option<u32>,
    /// dma_engines_bitmap.
    #[arg(long, value_name = "MASK", value_parser = parse_mask)]
    dma_engines: Option<u64>,
    /// queue_id.
    #[arg(long, value_name = "N")]
    queue_id: Option<u8>,
    /// Descriptor ring base (split into tdrbp_low/high).
    #[arg(long, value_name = "ADDR", value_parser = parse_mask)]
    tdrbp: Option<u64>,
    /// desc_count.
    #[arg(long, value_name = "N")]
    desc_count: Option<u32>,
    /// total_desc_n.
    #[arg(long, value_name = "N")]
    total_desc_n: Option<u32>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FabricArg {
    Default,
    SwitchV1,
}

pub fn run(args: BarrierArgs) -> Result<u8, Box<dyn std::error::Error>> {
    let quiet = args.quiet;
    match args.command {
        BarrierCommand::Decode { file, json } => {
            let configs = read_bin(&file)?;
            if quiet {
                // Only the input is checked.
            } else if json {
                println!("{}", to_json(&configs));
            } else {
                print_text(&configs);
            }
        }
        BarrierCommand::Encode {
            file,
            output,
            fsync,
        } => {
            let text = neff::writer::fs::read_small_file(&file, SMALL_MAX, "barrier input")?;
            let configs = from_json(&text).map_err(|e| e.at_path(&file))?;
            write_binary(&output, configs.as_bytes(), fsync)?;
            if !quiet {
                eprintln!("wrote {} ({BARRIER_CONFIGS_LEN} bytes)", output.display());
            }
        }
        BarrierCommand::Compose(c) => compose_cmd(c, quiet)?,
        BarrierCommand::Tables { .. } if quiet => {}
        BarrierCommand::Tables { json } => tables_cmd(json)?,
    }
    Ok(EXIT_OK)
}

fn read_bin(file: &Path) -> Result<BarrierConfigs, Box<dyn std::error::Error>> {
    let bytes = neff::writer::fs::read_small_file(file, SMALL_MAX, "barrier input")?;
    Ok(BarrierConfigs::from_slice(&bytes).map_err(|e| {
        neff::schema::Error::new(neff::schema::ErrorKind::BarrierBytes, e.to_string()).at_path(file)
    })?)
}

fn compose_cmd(c: ComposeArgs, quiet: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut inputs = match &c.spec {
        Some(path) => {
            let text = neff::writer::fs::read_small_file(path, SMALL_MAX, "barrier inputs")?;
            serde_json::from_slice::<ComposeInputs>(&text)
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => ComposeInputs::default(),
    };
    if let Some(f) = c.fabric {
        inputs.fabric = match f {
            FabricArg::Default => Fabric::Default,
            FabricArg::SwitchV1 => Fabric::SwitchV1,
        };
    }
    inputs.host_cc |= c.host_cc;
    inputs.execute_device_barrier |= c.device_barrier;
    if !c.leader_bases.is_empty() {
        inputs.leader_sema_bases = c.leader_bases;
    }
    if !c.dma_sync_semas.is_empty() {
        inputs.dma_sync_semas = c.dma_sync_semas;
    }
    inputs.sema_stride = c.sema_stride.unwrap_or(inputs.sema_stride);
    inputs.dma_sync_sema_value = c.dma_sync_value.unwrap_or(inputs.dma_sync_sema_value);
    if let Some(v) = c.dma_engines {
        inputs.dma_engines_bitmap =
            u16::try_from(v).map_err(|_| format!("--dma-engines {v:#x} does not fit 16 bits"))?;
    }
    inputs.queue_id = c.queue_id.unwrap_or(inputs.queue_id);
    inputs.tdrbp = c.tdrbp.unwrap_or(inputs.tdrbp);
    inputs.desc_count = c.desc_count.unwrap_or(inputs.desc_count);
    inputs.total_desc_n = c.total_desc_n.unwrap_or(inputs.total_desc_n);
    if c.json && c.output.as_os_str() == "-" {
        return Err("--json and -o - both write to stdout: give -o FILE".into());
    }
    let composed = compose(&inputs)?;
    write_binary(&c.output, composed.configs.as_bytes(), c.fsync)?;
    if quiet {
        return Ok(());
    }
    if c.json {
        println!("{}", to_json(&composed.configs));
    } else {
        eprintln!(
            "wrote {}: {} leaders, {:?} fabric, leader-done semaphore id {}, device barrier {}",
            c.output.display(),
            inputs.leader_sema_bases.len(),
            inputs.fabric,
            composed.leader_done_sema_id,
            if inputs.execute_device_barrier {
                "on"
            } else {
                "off"
            }
        );
        for p in &composed.plan {
            let types: Vec<&str> = p.types.iter().map(|t| t.name()).collect();
            eprintln!(
                "  step {}: {} {} (sema id {}, target {})",
                p.step,
                p.operation.name(),
                types.join(" "),
                p.sema_id,
                p.target
            );
        }
    }
    Ok(())
}

fn print_text(c: &BarrierConfigs) {
    let h = c.host_barrier();
    let d = c.device_barrier();
    println!(
        "execute_device_barrier: {}",
        u8::from(c.execute_device_barrier())
    );
    if c.reserved_bits() != 0 || c.reserved_tail() != [0; 3] {
        println!(
            "reserved: bits {:#x}, tail {}",
            c.reserved_bits(),
            hex::encode(c.reserved_tail())
        );
    }
    println!("host view:");
    println!("  barrier_start        {:#018x}", h.barrier_start);
    println!("  barrier_done         {:#018x}", h.barrier_done);
    println!("device view:");
    for (i, s) in d.steps.iter().enumerate() {
        println!("  step {i}: m2s_val {} s2m_val {}", s.m2s_val, s.s2m_val);
        for l in 0..s.barrier_sema.len() {
            println!(
                "    leader {l}: barrier_sema {:#018x} target {}",
                s.barrier_sema[l], s.target_sema_val[l]
            );
        }
    }
    for (i, a) in d.dma_sync_sema.iter().enumerate() {
        println!("  dma_sync_sema[{i}]     {a:#018x}");
    }
    println!(
        "  dma_apb_bcast        m2s {:#018x} s2m {:#018x} mask {:#x}",
        d.dma_apb_bcast.m2s_tail_ptr, d.dma_apb_bcast.s2m_tail_ptr, d.dma_apb_bcast.mask
    );
    println!("  start_network_proxy  {:#018x}", d.start_network_proxy);
    println!("  dma_sync_sema_value  {}", d.dma_sync_sema_value);
    println!(
        "  tdrbp                {:#018x} (low {:#x}, high {:#x})",
        d.tdrbp(),
        d.tdrbp_low,
        d.tdrbp_high
    );
    println!("  desc_count           {}", d.desc_count);
    println!("  total_desc_n         {}", d.total_desc_n);
    println!("  dma_engines_bitmap   {:#06x}", d.dma_engines_bitmap);
    println!("  queue_id             {}", d.queue_id);
    if d.reserved != 0 {
        println!("  __reserved           {:#x}", d.reserved);
    }
}

fn tables_cmd(json: bool) -> Result<(), Box<dyn std::error::Error>> {
    let fabrics = [
        (
            "default",
            Fabric::Default,
            "barrier_step_sizes",
            "barrier_algorithm_steps",
        ),
        (
            "switch-v1",
            Fabric::SwitchV1,
            "barrier_step_sizes_for_switch_family",
            "barrier_algorithm_steps_for_switch_family",
        ),
    ];
    if json {
        let mut out = serde_json::Map::new();
        for (name, fabric, sizes, steps) in fabrics {
            let rows: Vec<serde_json::Value> = fabric
                .steps()
                .iter()
                .map(|row| serde_json::json!(row.iter().map(|(t, op)| serde_json::json!({"type": *t as u32, "type_name": t.name(), "op": *op as u32, "op_name": op.name()})).collect::<Vec<_>>()))
                .collect();
            out.insert(
                name.to_string(),
                serde_json::json!({
                    "step_sizes_symbol": sizes,
                    "step_sizes": fabric.step_sizes(),
                    "steps_symbol": steps,
                    "steps": rows,
                    "image": hex::encode(tables::table_image(fabric.steps())),
                }),
            );
        }
        return print_json(&out);
    }
    for (name, fabric, sizes, steps) in fabrics {
        println!("{name}: {sizes} = {:?}", fabric.step_sizes());
        println!("  {steps}:");
        for (s, row) in fabric.steps().iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, (t, op))| {
                    let mark = if i < fabric.step_sizes()[s] as usize {
                        ""
                    } else {
                        " (pad)"
                    };
                    format!("({},{}){mark}", *t as u32, *op as u32)
                })
                .collect();
            println!("    step {s}: {}", cells.join(" "));
        }
        println!(
            "  image: {}",
            hex::encode(tables::table_image(fabric.steps()))
        );
    }
    println!(
        "barrier_type_t: {}",
        BarrierType::ALL
            .iter()
            .map(|t| format!("{}={}", t.name(), *t as u32))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("barrier_operation_t: BARRIER_ENTRY=0 BARRIER_EXIT=1 BARRIER_OP_TYPE_MAX=2");
    Ok(())
}
