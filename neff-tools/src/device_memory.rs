//! The device (HBM) memory a NEFF needs per NeuronCore, in the runtime's
//! categories, computed from the manifests (`neff inspect --memory`).
//!
//! Sources: the Neuron runtime's device-memory page
//! (<https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/explore/device-memory.html>:
//! the categories, the per-NEFF `dml_log_dev_neff_mem` log lines, the
//! scratchpad rule) and neuron-monitor's `memory_used` →
//! `neuron_runtime_used_bytes` → `usage_breakdown.neuroncore_memory_usage`
//! (`constants`, `model_code`, `model_shared_scratchpad`, `runtime_memory`,
//! `tensors`;
//! <https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-sys-tools/neuron-monitor-user-guide.html>).
//!
//! | category | rule | status |
//! |---|---|---|
//! | `model_code` | the bytes of the five engines' instruction members | published category; what it holds INFERRED (the runtime also adds 96 MB of microcode per physical core, not counted) |
//! | `constants` | the weights: each `file` variable's `size`, else its member's data bytes (after the `.npy` header) | published category |
//! | `shared_scratchpad` | `max(backing_variable_off + size)` over the `virtual` variables | published rule |
//! | `scratchpad` | the sizes of the `virtual` variables that cross a 512 MiB scratchpad page (`off % page + size > page`), allocated privately | published rule (default page size) |
//! | `dma_rings_io` | 16 B × the hardware descriptors that read or write an input or output | INFERRED (16 B per descriptor; no per-queue overhead is published, none counted) |
//! | `dma_rings_spill` | 16 B × the other hardware descriptors | INFERRED, likewise |
//! | `total` | the sum of the categories above | — |
//! | `io_tensors` | the graph's input and output variables (the application allocates them; not in `total`) | published category (`tensors`) |
//!
//! Hardware descriptors per JSON descriptor: `max(prod(from_sizes[1..]),
//! prod(to_sizes[1..]))`, at least 1 (matches neuron-cc 1.15's
//! `#block_num_descs` on all its blocks). DMA on DGE (`dynamic`) queues is
//! described by no block, so it needs no ring, as the page says.
//!
//! Per core: each graph (`sgNN`) runs on one physical NeuronCore; a NEFF
//! with `vnc_size` N (a logical core of N physical cores, LNC=N) has N
//! graphs, one per physical core, and the logical core's figure is the sum
//! of its graphs (INFERRED from the graph count matching `vnc_size`).
//!
//! NEFFs loaded together on one NeuronCore ([`SharedMemoryReport`]): each
//! keeps its own code, constants, private scratchpad and rings, and they
//! share one scratchpad, as large as the largest of theirs (published rule),
//! allocated in whole scratchpad pages.

use serde::Serialize;

use neff_loader::{GraphSummary, ModelSummary, WeightSummary};

/// Bytes of one DMA descriptor in a ring (INFERRED).
pub const DMA_DESCRIPTOR_BYTES: u64 = 16;

/// The page the shared scratchpad is allocated in: the runtime's default
/// `NEURON_SCRATCHPAD_PAGE_SIZE`, 512 MiB.
pub const SCRATCHPAD_PAGE: u64 = 512 << 20;

/// What a [`SharedMemoryReport`] estimates rather than knows.
const ESTIMATED: [&str; 4] = [
    "dma_rings_io, dma_rings_spill: 16 B per hardware descriptor (inferred); no per-queue overhead is published, none counted",
    "shared_scratchpad: rounded up to whole pages of the runtime's default NEURON_SCRATCHPAD_PAGE_SIZE (512 MiB); another page size changes it",
    "model_code: the 96 MB of microcode the runtime adds per physical core is not counted",
    "a NEFF of several graphs (a logical core of several physical ones) counts its graphs together, as its own total does",
];

/// What `neff inspect --memory A B …` reports: NEFFs loaded together on one
/// (logical) NeuronCore, each on its own and all together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedMemoryReport {
    /// Each NEFF's own report, in the order given.
    pub neffs: Vec<MemoryReport>,
    /// All of them loaded together: each category summed over the NEFFs'
    /// totals, except `shared_scratchpad`, which they share: the largest
    /// NEFF's, rounded up to whole `scratchpad_page`s. `total` sums the
    /// categories; `io_tensors` (not in `total`) is summed too.
    pub together: MemoryCategories,
    /// The page the shared scratchpad is rounded up to.
    pub scratchpad_page: u64,
    /// What these figures estimate rather than know.
    pub estimated: Vec<String>,
}

impl SharedMemoryReport {
    /// The figures of `neffs` loaded together.
    pub fn new(neffs: Vec<MemoryReport>) -> SharedMemoryReport {
        let mut together = neffs
            .iter()
            .fold(MemoryCategories::default(), |sum, n| sum.plus(&n.total));
        let largest = neffs
            .iter()
            .map(|n| n.total.shared_scratchpad)
            .max()
            .unwrap_or(0);
        together.shared_scratchpad = largest
            .div_ceil(SCRATCHPAD_PAGE)
            .saturating_mul(SCRATCHPAD_PAGE);
        together.total = together
            .categories()
            .into_iter()
            .fold(0, u64::saturating_add);
        SharedMemoryReport {
            neffs,
            together,
            scratchpad_page: SCRATCHPAD_PAGE,
            estimated: ESTIMATED.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The memory report: one row per physical core (graph) and the NEFF's total.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemoryReport {
    /// The file inspected.
    pub file: String,
    /// One row per graph, each on its own physical NeuronCore, in KELF order.
    pub cores: Vec<CoreMemory>,
    /// The sums over the cores: what the NEFF needs on its logical core.
    pub total: MemoryCategories,
}

/// One graph's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CoreMemory {
    /// The graph's name in the KELF descriptor.
    pub graph: String,
    /// Set when the graph was not read whole as the runtime reads it (up
    /// to a refusal, or past one for display only): its figures are partial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Its figures.
    #[serde(flatten)]
    pub memory: MemoryCategories,
}

/// Bytes per category (see the module's table for each rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemoryCategories {
    /// Engine instruction bytes.
    pub model_code: u64,
    /// Weight bytes.
    pub constants: u64,
    /// The shared scratchpad's high-water mark.
    pub shared_scratchpad: u64,
    /// Private scratchpad (variables crossing a scratchpad page).
    pub scratchpad: u64,
    /// DMA rings of descriptors that move inputs or outputs.
    pub dma_rings_io: u64,
    /// DMA rings of the other descriptors.
    pub dma_rings_spill: u64,
    /// The sum of the categories above.
    pub total: u64,
    /// Input and output tensors (allocated by the application, not in `total`).
    pub io_tensors: u64,
}

impl MemoryReport {
    /// Computes the report from the model the manifests describe.
    pub fn new(file: &str, model: &ModelSummary) -> MemoryReport {
        let cores: Vec<CoreMemory> = model.graphs.iter().map(CoreMemory::new).collect();
        let total = cores
            .iter()
            .fold(MemoryCategories::default(), |sum, c| sum.plus(&c.memory));
        MemoryReport {
            file: file.to_string(),
            cores,
            total,
        }
    }
}

impl CoreMemory {
    fn new(g: &GraphSummary) -> CoreMemory {
        let sum = |items: &mut dyn Iterator<Item = u64>| items.fold(0u64, u64::saturating_add);
        let mut m = MemoryCategories {
            model_code: sum(&mut g.engines.iter().filter_map(|e| e.instr_size)),
            constants: sum(&mut g.weights.iter().filter_map(WeightSummary::bytes)),
            shared_scratchpad: g.scratchpad.high_water,
            scratchpad: g.scratchpad.outside_page,
            dma_rings_io: g.dma.io_descriptors.saturating_mul(DMA_DESCRIPTOR_BYTES),
            dma_rings_spill: g.dma.spill_descriptors.saturating_mul(DMA_DESCRIPTOR_BYTES),
            total: 0,
            io_tensors: sum(&mut g.inputs.iter().chain(&g.outputs).filter_map(|v| v.size)),
        };
        m.total = m.categories().into_iter().fold(0, u64::saturating_add);
        CoreMemory {
            graph: g.name.clone(),
            partial: g.partial.clone(),
            memory: m,
        }
    }
}

impl MemoryCategories {
    /// The categories `total` sums, in table order.
    pub fn categories(&self) -> [u64; 6] {
        [
            self.model_code,
            self.constants,
            self.shared_scratchpad,
            self.scratchpad,
            self.dma_rings_io,
            self.dma_rings_spill,
        ]
    }

    fn plus(&self, o: &MemoryCategories) -> MemoryCategories {
        let add = u64::saturating_add;
        MemoryCategories {
            model_code: add(self.model_code, o.model_code),
            constants: add(self.constants, o.constants),
            shared_scratchpad: add(self.shared_scratchpad, o.shared_scratchpad),
            scratchpad: add(self.scratchpad, o.scratchpad),
            dma_rings_io: add(self.dma_rings_io, o.dma_rings_io),
            dma_rings_spill: add(self.dma_rings_spill, o.dma_rings_spill),
            total: add(self.total, o.total),
            io_tensors: add(self.io_tensors, o.io_tensors),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff_loader::{DmaSummary, EngineSummary, ScratchpadSummary};

    #[test]
    fn categories_follow_the_rules_and_total_sums_them() {
        let mut scratchpad = ScratchpadSummary::default();
        scratchpad.add(0, 100);
        scratchpad.add(SCRATCHPAD_PAGE - 10, 20);
        let g = GraphSummary {
            name: "sg00".into(),
            engines: vec![EngineSummary {
                engine: "pe".into(),
                json: None,
                instr: Some("sg00/pe.bin".into()),
                instr_size: Some(64),
                dma_blocks: 0,
            }],
            scratchpad,
            dma: DmaSummary {
                io_descriptors: 3,
                spill_descriptors: 1,
            },
            ..GraphSummary::default()
        };
        let model = ModelSummary {
            graphs: vec![g.clone(), g],
            ..ModelSummary::default()
        };
        let r = MemoryReport::new("x.neff", &model);
        let core = r.cores[0].memory;
        assert_eq!(core.shared_scratchpad, SCRATCHPAD_PAGE + 10);
        assert_eq!(core.scratchpad, 20);
        assert_eq!((core.dma_rings_io, core.dma_rings_spill), (48, 16));
        assert_eq!(core.total, 64 + SCRATCHPAD_PAGE + 10 + 20 + 48 + 16);
        assert_eq!(r.total.total, 2 * core.total);
        // Loaded together: one shared scratchpad, the largest (this NEFF's two
        // graphs' 2 pages + 20 bytes), in whole pages.
        let mut small = r.clone();
        small.total.shared_scratchpad = 10;
        let shared = SharedMemoryReport::new(vec![r.clone(), small]);
        assert_eq!(shared.together.shared_scratchpad, 3 * SCRATCHPAD_PAGE);
        assert_eq!(shared.together.model_code, 4 * 64);
        let categories = shared.together.categories();
        assert_eq!(shared.together.total, categories.iter().sum::<u64>());
    }
}
