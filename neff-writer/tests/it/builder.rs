//! The model builder: generated manifests, var_id assignment, feature bits,
//! ucode libraries in both forms, weights, the checked rules and the
//! unchecked path.

use std::io::Read;

use neff_loader::{load_file, verify_file, RuntimeProfile};
use neff_schema::features;
use neff_schema::manifest::{
    Carveout, DefJson, DmaBlock, DmaDesc, DmaQueue, Dtype, Engine, EngineJson, KelfDescriptor,
    NeffJson, QueueType, UcodeLib, UcodeLibJson,
};
use neff_schema::Target;
use neff_writer::builder::npy::encode_v1;
use neff_writer::builder::{EngineProgram, Tensor, Weight};
use neff_writer::{Error, HeaderPatch, MemberSource, NeffBuilder};

/// A loader refusal as `"<gate> <message>"`; any other error as its text.
fn refusal(e: Error) -> String {
    match e.report() {
        Some(report) => format!(
            "{} {}",
            report.gate_id().unwrap_or_default(),
            report.message.as_deref().unwrap_or_default()
        ),
        None => e.to_string(),
    }
}

fn f32s(shape: &[u64]) -> Tensor {
    Tensor::new(Dtype::Float32, shape.to_vec())
}

/// A small valid model with every kind of variable.
fn model() -> NeffBuilder {
    NeffBuilder::new().name("m").subgraph("sg00", |sg| {
        sg.tmp_buf("scratch", Tensor::bytes(64))
            .output("y", f32s(&[4]))
            .state_buffer("SB", Tensor::default())
            .input("a", f32s(&[2, 2]))
            .input("b", Tensor::new(Dtype::Int32, [3]))
            .output("z", Tensor::new(Dtype::Bfloat16, [8]))
    })
}

fn ids(def: &DefJson) -> Vec<(String, u64)> {
    def.vars_by_id()
        .into_iter()
        .map(|(name, v)| (name.to_string(), v.var_id))
        .collect()
}

#[test]
fn var_ids_are_dense_inputs_then_outputs_then_the_rest() {
    let build = model().build().unwrap();
    let def: DefJson = build.manifest("sg00/def.json").unwrap();
    assert_eq!(
        ids(&def),
        [
            ("a", 0),
            ("b", 1),
            ("y", 2),
            ("z", 3),
            ("scratch", 4),
            ("SB", 5)
        ]
        .map(|(n, i)| (n.to_string(), i))
    );
    assert_eq!(def.var["a"].size, Some(16));
    assert_eq!(def.var["b"].size, Some(12));
    assert_eq!(def.var["z"].size, Some(16));
    assert_eq!(def.var["scratch"].size, Some(64));
    assert_eq!(def.var["SB"].size, None);
    assert_eq!(def.var["a"].dtype, Some(Dtype::Float32));
    assert_eq!(def.var["a"].shape, Some(vec![2, 2]));
    assert_eq!(def.name.as_deref(), Some("sg00"));
    assert_eq!(def.runtime_statebuffer_reservation, Some(vec![]));
    for engine in Engine::ALL {
        assert_eq!(def.engine(engine), Some(format!("{engine}.json").as_str()));
    }
}

#[test]
fn pinned_var_ids_keep_their_place_and_the_rest_fill_in() {
    // The runtime fixture's numbering: input 0, SB 1, output 2, tmp 3 and 4.
    let build = NeffBuilder::new()
        .subgraph("sg00", |sg| {
            sg.state_buffer("SB", Tensor::default().var_id(1))
                .input("input", f32s(&[32]))
                .output("output", f32s(&[32]).var_id(2))
                .tmp_buf("gradient_in", Tensor::bytes(128))
                .tmp_buf("gradient_out", Tensor::bytes(128))
        })
        .build()
        .unwrap();
    let def: DefJson = build.manifest("sg00/def.json").unwrap();
    assert_eq!(
        ids(&def),
        [
            ("input", 0),
            ("SB", 1),
            ("output", 2),
            ("gradient_in", 3),
            ("gradient_out", 4)
        ]
        .map(|(n, i)| (n.to_string(), i))
    );

    let gap = NeffBuilder::new()
        .subgraph("sg00", |sg| sg.output("y", f32s(&[1]).var_id(5)))
        .write_to(&mut Vec::new());
    let err = refusal(gap.err().unwrap());
    assert!(
        err.contains("G20a Unexpected var_ids set! max=5, size=1"),
        "{err}"
    );
    let twice = NeffBuilder::new()
        .subgraph("sg00", |sg| {
            sg.output("y", f32s(&[1]).var_id(0))
                .input("x", f32s(&[1]).var_id(0))
        })
        .write_to(&mut Vec::new());
    let err = refusal(twice.err().unwrap());
    assert!(err.starts_with("G20a Unexpected var_ids set!"), "{err}");
}

#[test]
fn neff_json_and_kelf_describe_the_model() {
    let build = model().target(Target::MARIANA).build().unwrap();
    let graph: NeffJson = build.manifest("neff.json").unwrap();
    assert_eq!(graph.arg_nodes, vec![0, 1]);
    assert_eq!(graph.node_row_ptr, vec![0, 1, 2, 4]);
    assert_eq!(graph.nodes.len(), 3);
    assert_eq!(graph.nodes[0].name, "a");
    assert_eq!(graph.nodes[0].op, "null");
    assert_eq!(graph.kelf_node(), Some(2));
    let kelf_node = &graph.nodes[2];
    assert_eq!(kelf_node.op, "tvm_op");
    let attrs = kelf_node.attrs.as_ref().unwrap();
    assert_eq!(attrs.func_name.as_deref(), Some("__kelf"));
    assert_eq!(attrs.kelf.as_deref(), Some("kelf-0.json"));
    assert_eq!(attrs.num_inputs.as_deref(), Some("2"));
    assert_eq!(attrs.num_outputs.as_deref(), Some("2"));
    assert_eq!(kelf_node.output_names, Some(vec!["y".into(), "z".into()]));
    assert_eq!(
        graph.attrs.dltype.1,
        vec![
            Dtype::Float32,
            Dtype::Int32,
            Dtype::Float32,
            Dtype::Bfloat16
        ]
    );
    assert_eq!(
        graph.attrs.shape.1,
        vec![vec![2, 2], vec![3], vec![4], vec![8]]
    );
    assert_eq!(graph.output_entry(1), Some(3));

    let kelf: KelfDescriptor = build.manifest("kelf-0.json").unwrap();
    assert_eq!(kelf.target(), Some(Target::MARIANA));
    assert_eq!(kelf.version, "0.5");
    assert_eq!(kelf.graphs.len(), 1);
    assert_eq!(kelf.graphs[0].definition, "sg00/def.json");

    let pe: EngineJson = build.manifest("sg00/pe.json").unwrap();
    assert_eq!(pe.instr.as_deref(), Some("pe.bin"));
    assert_eq!(build.len_of("sg00/pe.bin"), Some(0));
    assert_eq!(
        build.bytes("sg00/pe.json").unwrap(),
        b"{\n  \"dma\": [],\n  \"instr\": \"pe.bin\",\n  \"name\": \"pe_array_json\"\n}"
    );
}

#[test]
fn built_models_pass_every_gate_and_are_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.neff");
    let b = dir.path().join("b.neff");
    let outcome = model().write_to_path(&a).unwrap();
    assert!(outcome.report.accepted, "{}", outcome.report.summary());
    model().write_to_path(&b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let verdict = verify_file(&a, &RuntimeProfile::default()).unwrap();
    assert!(verdict.accepted, "{}", verdict.report().summary());
    assert_eq!(outcome.header.name.as_clean_str(), Some("m"));
    assert_eq!(outcome.header.feature_bits, 0);
    assert_eq!(outcome.header.vnc_size, 1);
}

#[test]
fn header_fields_win_over_the_model_in_any_call_order() {
    let patch = HeaderPatch {
        name: Some(neff_schema::header::Text::new("from-header").unwrap()),
        ..HeaderPatch::default()
    };
    let built = |b: NeffBuilder| b.write_to(&mut Vec::new()).unwrap().header;
    let h = built(model().header(patch.clone()).level(6));
    assert_eq!(h.name.as_clean_str(), Some("from-header"));
    let h = built(
        model()
            .level(6)
            .header(patch)
            .framing(neff_schema::FramingPreset::NeuronxCc),
    );
    assert_eq!(h.name.as_clean_str(), Some("from-header"));
    // A level set before the framing preset is kept.
    let b = model()
        .level(6)
        .framing(neff_schema::FramingPreset::NeuronxCc);
    assert_eq!(b.build().unwrap().options().level(), 6);
    let bits = model().feature_bits(0x4 | 0x1000).build().unwrap();
    assert_eq!(bits.options().header.feature_bits, Some(0x1004));
}

fn ucode_model() -> NeffBuilder {
    NeffBuilder::new()
        .target(Target::CAYMAN)
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[4]))
                .output("y", f32s(&[4]))
                .carveout(Carveout::evtaccel())
                .ucode_lib(
                    UcodeLib::new("libtopk.so", "1.21.1.0")
                        .total_cpus(8)
                        .function("topk")
                        .function("sort"),
                    b"\x7fELF\x01\x01\x01placeholder".to_vec(),
                )
                .ucode_lib(
                    UcodeLib::new("libmine.so", "1.0").function("mine"),
                    b"\x7fELF\x01\x01\x01other".to_vec(),
                )
        })
}

#[test]
fn ucode_libraries_are_written_inline_standalone_and_as_members() {
    let build = ucode_model().build().unwrap();
    let def: DefJson = build.manifest("sg00/def.json").unwrap();
    let inline = def.ucode_lib.clone().unwrap();
    let standalone: UcodeLibJson = build.manifest("sg00/ucode_lib.json").unwrap();
    assert_eq!(standalone.ucode_lib, inline, "the two forms agree");
    assert_eq!(inline.len(), 2);
    let functions: Vec<(String, i64, Option<u64>)> = inline
        .iter()
        .flat_map(|l| l.functions.clone().unwrap())
        .map(|f| (f.name, f.opcode, f.sub_opcode))
        .collect();
    assert_eq!(
        functions,
        vec![
            ("topk".into(), 133, Some(0)),
            ("sort".into(), 133, Some(1)),
            ("mine".into(), 133, Some(2))
        ]
    );
    assert_eq!(inline[0].cpu_id, Some(0));
    assert_eq!(
        build.bytes("sg00/libtopk.so").unwrap(),
        b"\x7fELF\x01\x01\x01placeholder"
    );
    assert!(build.bytes("sg00/libmine.so").is_some());
    assert_eq!(
        def.runtime_statebuffer_reservation,
        Some(vec![Carveout::evtaccel()])
    );
    assert_eq!(
        build.options().header.feature_bits,
        Some(features::CUSTOM_OPS)
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.neff");
    let outcome = ucode_model().write_to_path(&out).unwrap();
    assert!(outcome.report.accepted, "{}", outcome.report.summary());
    assert_eq!(
        outcome.header.feature_bits & features::CUSTOM_OPS,
        features::CUSTOM_OPS
    );
}

#[test]
fn two_subgraphs_set_vnc_size_and_share_the_model_io() {
    let sg = |sg: neff_writer::builder::Subgraph| {
        sg.input("x", f32s(&[4]))
            .output("y", f32s(&[4]))
            .instructions(Engine::Pe, vec![0u8; 64])
    };
    let build = NeffBuilder::new()
        .subgraph("sg00", sg)
        .subgraph("sg01", sg)
        .build()
        .unwrap();
    assert_eq!(build.options().header.vnc_size, Some(2));
    assert_eq!(build.options().header.feature_bits, Some(features::VNC));
    let kelf: KelfDescriptor = build.manifest("kelf-0.json").unwrap();
    let names: Vec<&str> = kelf.graphs.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["sg00", "sg01"]);
    let graph: NeffJson = build.manifest("neff.json").unwrap();
    assert_eq!(graph.arg_nodes, vec![0]);
    assert_eq!(graph.heads.len(), 1);
    assert_eq!(build.len_of("sg01/pe.bin"), Some(64));

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("two.neff");
    let outcome = NeffBuilder::new()
        .subgraph("sg00", sg)
        .subgraph("sg01", sg)
        .write_to_path(&out)
        .unwrap();
    assert!(outcome.report.accepted, "{}", outcome.report.summary());

    let clash = NeffBuilder::new()
        .subgraph("sg00", sg)
        .subgraph("sg01", |s| s.input("x", f32s(&[5])).output("y", f32s(&[4])))
        .build();
    assert!(clash
        .err()
        .unwrap()
        .to_string()
        .contains("earlier subgraph"));
}

#[test]
fn weights_from_npy_and_raw_files_are_streamed_members() {
    let dir = tempfile::tempdir().unwrap();
    let npy_path = dir.path().join("w.npy");
    let data: Vec<u8> = (0..24u8).collect();
    std::fs::write(&npy_path, encode_v1("<f4", &[2, 3], &data)).unwrap();
    let bin_path = dir.path().join("b.bin");
    std::fs::write(&bin_path, [1u8; 16]).unwrap();
    let table = encode_v1("|u1", &[3], &[7, 8, 9]);
    let build = NeffBuilder::new()
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[4]))
                .output("y", f32s(&[4]))
                .weight("w", Weight::npy(npy_path.clone()))
                .weight(
                    "bias",
                    Weight::raw(bin_path.clone())
                        .tensor(Tensor::new(Dtype::Float32, [4]))
                        .file_name("bias.bin"),
                )
                .weight(
                    "table",
                    Weight::npy(MemberSource::Reader {
                        len: table.len() as u64,
                        reader: Box::new(std::io::Cursor::new(table.clone())),
                    }),
                )
        })
        .build()
        .unwrap();
    let def: DefJson = build.manifest("sg00/def.json").unwrap();
    let w = &def.var["w"];
    assert_eq!(w.kind, "file");
    assert_eq!(w.file_name.as_deref(), Some("w.npy"));
    assert_eq!(w.dtype, Some(Dtype::Float32));
    assert_eq!(w.shape, Some(vec![2, 3]));
    assert_eq!(def.var["bias"].file_name.as_deref(), Some("bias.bin"));
    assert_eq!(def.var["table"].dtype, Some(Dtype::Uint8));
    assert_eq!(
        ids(&def)[2..]
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["w", "bias", "table"]
    );
    assert_eq!(
        build.bytes("sg00/w.npy"),
        None,
        "files are streamed, not loaded"
    );
    assert_eq!(build.len_of("sg00/w.npy"), Some(128 + 24));
    assert_eq!(build.len_of("sg00/bias.bin"), Some(16));

    let out = dir.path().join("w.neff");
    let (packager, options) = build.into_packager().unwrap();
    let outcome = packager.write_to_path(&out, &options).unwrap();
    assert!(outcome.report.accepted, "{}", outcome.report.summary());
    let loaded = load_file(&out, &RuntimeProfile::default()).unwrap();
    assert!(loaded.report.accepted);
}

#[test]
fn malformed_npy_is_refused_when_checked_and_written_when_not() {
    let mut bad = encode_v1("<f4", &[2], &[0; 8]);
    bad[0] = b'X';
    let describe = |sg: neff_writer::builder::Subgraph, w: Vec<u8>| {
        sg.input("x", f32s(&[1]))
            .output("y", f32s(&[1]))
            .weight("w", Weight::npy(w))
    };
    let err = NeffBuilder::new()
        .subgraph("sg00", |sg| describe(sg, bad.clone()))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("subgraph sg00: var \"w\""), "{err}");
    assert!(err.contains("0x4e93"), "{err}");
    let short = encode_v1("<f4", &[4], &[0; 8]);
    let err = NeffBuilder::new()
        .subgraph("sg00", |sg| describe(sg, short.clone()))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("promises 16 data bytes"), "{err}");

    // Unchecked: written, and the loader's G19 refuses it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad.neff");
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .subgraph("sg00", |sg| describe(sg, bad.clone()))
        .write_to_path(&out)
        .unwrap();
    assert!(!outcome.report.accepted);
    assert_eq!(outcome.report.gate_id(), Some("G19"));
}

#[test]
fn weight_data_must_be_as_long_as_its_dtype_and_shape() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("w.bin");
    std::fs::write(&bin, [0u8; 16]).unwrap();
    let with = |w: Weight| {
        NeffBuilder::new()
            .subgraph("sg00", |sg| {
                sg.input("x", f32s(&[4]))
                    .output("y", f32s(&[4]))
                    .weight("w", w)
            })
            .build()
    };
    let err = with(Weight::raw(bin.clone()).tensor(f32s(&[1000])))
        .err()
        .unwrap()
        .to_string();
    let shown = bin.display().to_string();
    for needle in ["var \"w\"", &shown, "4000 bytes", "has 16"] {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    // A declared dtype and shape must fit an .npy file's data too.
    let npy = encode_v1("<f4", &[4], &[0; 16]);
    let err = with(Weight::npy(npy.clone()).tensor(f32s(&[8])))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("32 bytes but the file has 16 data bytes after its 128-byte npy header"),
        "{err}"
    );
    // Sizes that match, a reshape of the same bytes, and unchecked builds pass.
    assert!(with(Weight::raw(bin.clone()).tensor(f32s(&[2, 2]))).is_ok());
    assert!(with(Weight::npy(npy).tensor(Tensor::new(Dtype::Int8, [16]))).is_ok());
    let unchecked = NeffBuilder::new().unchecked(true).subgraph("sg00", |sg| {
        sg.input("x", f32s(&[4]))
            .output("y", f32s(&[4]))
            .weight("w", Weight::raw(bin.clone()).tensor(f32s(&[1000])))
    });
    assert!(unchecked.build().is_ok());
}

#[test]
fn shapes_whose_size_overflows_are_refused_with_the_reason() {
    let base =
        |sg: neff_writer::builder::Subgraph| sg.input("x", f32s(&[1])).output("y", f32s(&[1]));
    let huge = [1u64 << 32, 1 << 32, 2];
    let cases: Vec<(neff_writer::builder::Subgraph, &str)> = vec![
        (
            base(neff_writer::builder::Subgraph::new("sg00")).input("big", f32s(&huge)),
            "var \"big\": shape [4294967296, 4294967296, 2]: the element count overflows 64 bits",
        ),
        (
            base(neff_writer::builder::Subgraph::new("sg00"))
                .state_buffer("sb", Tensor::default().shape(huge)),
            "var \"sb\": shape [4294967296, 4294967296, 2]: the element count overflows",
        ),
        (
            base(neff_writer::builder::Subgraph::new("sg00"))
                .tmp_buf("t", f32s(&[1 << 62]).size(64)),
            "var \"t\": shape [4611686018427387904] of float32: the byte size (4611686018427387904 elements × 4 bytes) overflows 64 bits",
        ),
        (
            base(neff_writer::builder::Subgraph::new("sg00")).output("o", f32s(&[1 << 62])),
            "var \"o\": shape [4611686018427387904] of float32: the byte size",
        ),
    ];
    for (sg, needle) in cases {
        let err = NeffBuilder::new().add_subgraph(sg).build().err().unwrap();
        let err = refusal(err);
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
}

#[test]
fn checked_rules_name_the_subgraph_and_key() {
    let base =
        |sg: neff_writer::builder::Subgraph| sg.input("x", f32s(&[1])).output("y", f32s(&[1]));
    let cases: Vec<(NeffBuilder, &str)> = vec![
        (NeffBuilder::new(), "subgraphs: no subgraphs"),
        (
            NeffBuilder::new().subgraph("sg00", |sg| sg.input("x", f32s(&[1]))),
            "G20b Invalid NEFF: graph sg00/def.json has no Outputs",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| base(sg).tmp_buf("x", Tensor::bytes(4))),
            "declared twice",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| base(sg).input("t", Tensor::bytes(4))),
            "needs a dtype and a shape",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| base(sg).tmp_buf("t", Tensor::default())),
            "G19 Failed to parse, key: size",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| base(sg).output("big", f32s(&[1; 33]))),
            "G14 Too many dimensions (33)",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).dma_queue(
                    "q",
                    DmaQueue::new(Engine::Pool, QueueType::In)
                        .key("queue_instances", serde_json::json!(["q_0", "q_1"])),
                )
            }),
            "G21c Invalid Neff: Queue set instances are not supported for input queues (q)",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).dma_queue(
                    "q",
                    DmaQueue::new(Engine::Pool, QueueType::Data).key("owner", "pe"),
                )
            }),
            "",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                let mut q = DmaQueue::new(Engine::Pool, QueueType::Data);
                q.owner = Some("gpsimd".into());
                base(sg).dma_queue("q", q)
            }),
            "G21a Invalid owner 'gpsimd' for DMA queue q",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).dma_queue(
                    "q",
                    DmaQueue::new(Engine::Act, QueueType::Data).semaphore_set(vec![0; 33]),
                )
            }),
            "G21d Runtime supports maximum of 32 semaphores",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).engine_dma(
                    Engine::Pool,
                    DmaBlock::new("q", 0).desc(DmaDesc::copy("x", "y").from_ap([0], [1])),
                )
            }),
            "G26 Size cannot be 0",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).ucode_lib(UcodeLib::new("l.so", "2.0.0"), vec![])
            }),
            "G24b Mismatch between GPSIMD lib version",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg)
                    .ucode_lib(UcodeLib::new("l.so", "1.0"), vec![])
                    .ucode_lib(UcodeLib::new("l.so", "1.0"), vec![])
            }),
            "G24e UCode Library l.so has already been added",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                let mut lib = UcodeLib::new("l.so", "1.0");
                for i in 0..29 {
                    lib = lib.function(format!("f{i}"));
                }
                base(sg).ucode_lib(lib, vec![])
            }),
            "G31 Number of ucode functions: 29 per core exceeded the maximum allowed 28",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                let mut c = Carveout::evtaccel();
                c.offset = 0x1000;
                base(sg).carveout(c)
            }),
            "G30 Event Accel carveout SB partition offset must start at 0x37ff8",
        ),
        (
            NeffBuilder::new()
                .subgraph("sg00", base)
                .subgraph("sg00", base),
            "G18 /opt/workspace/KaenaRuntime/kelf/kelf.cpp:217: Assertion `graphs.count(name) == 1' failed.",
        ),
        (
            NeffBuilder::new().subgraph("a/b", base),
            "one non-empty path component",
        ),
        (
            NeffBuilder::new().kelf_version("5").subgraph("sg00", base),
            "G15 invalid string (.) in 5",
        ),
        (
            NeffBuilder::new()
                .subgraph("sg00", base)
                .member("sg00/def.json", b"{}".to_vec()),
            "use a raw member",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).weight("pe", Weight::raw(vec![1u8]).file_name("pe.bin"))
            }),
            "both named sg00/pe.bin",
        ),
        (
            NeffBuilder::new().subgraph("sg00", |sg| {
                base(sg).weight("w", Weight::raw(vec![1u8]).file_name("w.npy"))
            }),
            "ends in .npy",
        ),
        (
            NeffBuilder::new()
                .name("n".repeat(300))
                .subgraph("sg00", base),
            "name \"nnn",
        ),
    ];
    for (builder, needle) in cases {
        // The builder's own rules refuse at build, the gates at the write.
        let result = builder.write_to(&mut Vec::new());
        if needle.is_empty() {
            assert!(result.is_ok(), "extra keys are not checked");
            continue;
        }
        let err = match result {
            Ok(_) => panic!("expected an error containing {needle:?}"),
            Err(e) => refusal(e),
        };
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
}

#[test]
fn the_unchecked_path_writes_what_the_gates_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad.neff");

    // Checked: the loader's refusal is an error and nothing is written.
    let refused = NeffBuilder::new()
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[1])).output("y", f32s(&[1]))
        })
        .raw_member(
            "kelf-0.json",
            br#"{"graphs": [], "version": "05", "target": "*"}"#.to_vec(),
        )
        .write_to_path(&out);
    match refused {
        Err(e) if e.report().is_some() => {
            let report = e.report().unwrap();
            assert_eq!(report.gate_id(), Some("G15"), "{}", report.summary())
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the gates should refuse it"),
    }
    assert!(!out.exists());

    // Unchecked: the raw member replaces the generated one and is written.
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[1])).output("y", f32s(&[1]))
        })
        .raw_member(
            "kelf-0.json",
            br#"{"graphs": [], "version": "05", "target": "*"}"#.to_vec(),
        )
        .write_to_path(&out)
        .unwrap();
    assert_eq!(outcome.report.gate_id(), Some("G15"));
    assert!(out.exists());

    // Omitting neff.json: G13.
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[1])).output("y", f32s(&[1]))
        })
        .omit_member("neff.json")
        .write_to_path(&out)
        .unwrap();
    assert_eq!(outcome.report.gate_id(), Some("G13"));

    // Rules the builder would refuse are written as they are: no output (G20b).
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .subgraph("sg00", |sg| sg.input("x", f32s(&[1])))
        .write_to_path(&out)
        .unwrap();
    assert_eq!(outcome.report.gate_id(), Some("G20b"));

    // Extra keys override generated values: a var_id that is not a number (G19).
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[1]).key("var_id", "zero"))
                .output("y", f32s(&[1]))
        })
        .write_to_path(&out)
        .unwrap();
    assert_eq!(outcome.report.gate_id(), Some("G19"));

    // A header patch wins over computed fields.
    let outcome = NeffBuilder::new()
        .unchecked(true)
        .keep_refused(true)
        .header(HeaderPatch {
            neff_version_major: Some(3),
            ..HeaderPatch::default()
        })
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[1])).output("y", f32s(&[1]))
        })
        .write_to_path(&out)
        .unwrap();
    assert_eq!(outcome.report.gate_id(), Some("G4"));
}

#[test]
fn engine_programs_and_extra_members() {
    let pool = DmaBlock::new("q_in", 0).desc(
        DmaDesc::copy("x", "t")
            .from_ap([4, 1], [1, 4])
            .to_ap([4, 1], [1, 4]),
    );
    let build = NeffBuilder::new()
        .member("hlo_stats.json", br#"{"mac_count": 0}"#.to_vec())
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[4]))
                .output("y", f32s(&[4]))
                .tmp_buf("t", Tensor::bytes(16))
                .dma_queue(
                    "q_in",
                    DmaQueue::new(Engine::Pool, QueueType::In).semaphore(10),
                )
                .engine(
                    Engine::Pool,
                    EngineProgram::new()
                        .instructions(vec![0xC1; 64])
                        .dma(pool.clone())
                        .label("my_pool"),
                )
                .engine_key(Engine::Act, "act_semaphore", 9)
                .def_name("definition")
                .def_version("0.6-")
                .key("git_version", "")
        })
        .build()
        .unwrap();
    let pool_json: EngineJson = build.manifest("sg00/pool.json").unwrap();
    assert_eq!(pool_json.dma, Some(vec![pool]));
    assert_eq!(pool_json.name.as_deref(), Some("my_pool"));
    let act: EngineJson = build.manifest("sg00/act.json").unwrap();
    assert_eq!(act.act_semaphore, Some(9));
    let def: DefJson = build.manifest("sg00/def.json").unwrap();
    assert_eq!(def.name.as_deref(), Some("definition"));
    assert_eq!(def.version.as_deref(), Some("0.6-"));
    assert_eq!(def.extra["git_version"], "");
    assert_eq!(def.dma_queue.unwrap()["q_in"].semaphore, Some(10));
    assert!(build.bytes("hlo_stats.json").is_some());
    let mut reader = std::io::Cursor::new(build.bytes("sg00/pool.bin").unwrap().to_vec());
    let mut first = [0u8; 1];
    reader.read_exact(&mut first).unwrap();
    assert_eq!(first[0], 0xC1);
}

#[test]
fn the_checked_builder_takes_the_real_compilers_queue_and_descriptor_forms() {
    // What neuronx-cc / neuron-cc write (spec §11.4): num_queues 16 on an in
    // queue, a dynamic queue, a pinned queue with no owner, cast and
    // transpose descriptors.
    let mut pinned = DmaQueue::new(Engine::Pool, QueueType::Data).key("pinned", true);
    pinned.owner = None;
    let pool = DmaBlock::new("q_in", 0)
        .desc(
            DmaDesc::copy("x", "y")
                .op("cast")
                .from_ap([4], [1])
                .to_ap([4], [1])
                .key("from_dtype", "float32")
                .key("to_dtype", "float16"),
        )
        .desc(
            DmaDesc::copy("x", "y")
                .from_ap([4], [1])
                .to_ap([4], [1])
                .key("transpose_op", "WZXY")
                .key("transpose_shape", serde_json::json!([1, 1, 2, 2]))
                .key("transpose_element_size", 4),
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("real-forms.neff");
    NeffBuilder::new()
        .member("hlo_stats.json", br#"{"mac_count": 0}"#.to_vec())
        .subgraph("sg00", |sg| {
            sg.input("x", f32s(&[4]))
                .output("y", f32s(&[4]))
                .dma_queue(
                    "q_in",
                    DmaQueue::new(Engine::Pool, QueueType::In)
                        .num_queues(16)
                        .semaphore_set(vec![0; 16]),
                )
                .dma_queue(
                    "q_dyn",
                    DmaQueue::new(Engine::Act, QueueType::Dynamic).num_queues(16).key(
                        "dynamic_dma",
                        serde_json::json!({"SB_scratch_partition_offset": 0, "SB_scratch_partition_size": 16384}),
                    ),
                )
                .dma_queue("q_pinned", pinned)
                .engine(Engine::Pool, EngineProgram::new().dma(pool))
        })
        .write_to_path(&path)
        .unwrap();
    let verdict = verify_file(&path, &RuntimeProfile::default()).unwrap();
    assert!(verdict.accepted, "{:#?}", verdict.report());
}

#[test]
fn info_json_matches_the_header_in_every_framing() {
    for preset in neff_schema::FramingPreset::ALL {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.neff");
        model()
            .framing(preset)
            .write_to_path(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", preset.name()));
        let bytes = std::fs::read(&path).unwrap();
        let header = neff_schema::NeffHeader::from_prefix(&bytes).unwrap();
        let loaded = load_file(&path, &RuntimeProfile::default()).unwrap();
        let container = loaded.container.unwrap();
        let info = container.member(b"info.json").unwrap().data.unwrap();
        let info: serde_json::Value = serde_json::from_slice(info).unwrap();
        let per_node: Vec<u64> = header
            .tpb_per_node()
            .iter()
            .map(|&b| u64::from(b))
            .collect();
        assert_eq!(
            info["num_tpb"],
            u64::from(header.unused_0()),
            "{}",
            preset.name()
        );
        assert_eq!(
            info["num_tpb_requested"],
            u64::from(header.requested_tpb_count()),
            "{}",
            preset.name()
        );
        assert_eq!(
            info["num_tpb_per_node"],
            serde_json::json!(per_node),
            "{}",
            preset.name()
        );
        if preset.is_compiler_like() {
            assert_eq!(per_node[0], 1);
            assert_eq!(header.major(), 1, "no feature bits: major 1");
            assert_eq!(
                &bytes[0xDC..0xE4],
                b"m\0\0\0\0\0\0\0",
                "an explicit name wins"
            );
        } else {
            assert_eq!(header.major(), 2);
        }
    }
}

/// The checked build's verdict and the loader's on the same model written
/// through the unchecked path: `(checked accepted, loader accepted, gates)`.
fn both_verdicts(
    builder: impl Fn() -> NeffBuilder,
) -> (bool, bool, Option<String>, Option<String>) {
    let checked = builder().write_to(&mut Vec::new());
    let mut out = Vec::new();
    let outcome = builder()
        .unchecked(true)
        .keep_refused(true)
        .write_to(&mut out)
        .unwrap();
    let gate = match &checked {
        Err(e) if e.report().is_some() => e.report().unwrap().gate_id().map(str::to_string),
        Err(e) => panic!("not a loader refusal: {e}"),
        Ok(_) => None,
    };
    (
        checked.is_ok(),
        outcome.report.accepted,
        gate,
        outcome.report.gate_id().map(str::to_string),
    )
}

#[test]
fn an_in_queue_with_one_queue_is_accepted_by_both() {
    for n in [1, 16] {
        let verdicts = both_verdicts(|| {
            NeffBuilder::new().subgraph("sg00", |sg| {
                sg.input("x", f32s(&[1]))
                    .output("y", f32s(&[1]))
                    .dma_queue("q", DmaQueue::new(Engine::Pe, QueueType::In).num_queues(n))
            })
        });
        assert_eq!(verdicts, (true, true, None, None), "num_queues {n}");
    }
}

#[test]
fn the_ucode_abi_major_comes_from_the_profile() {
    let abi2 = RuntimeProfile {
        ucode_abi: "2.0.0.0".into(),
        ..RuntimeProfile::default()
    };
    for (profile, version, accepted) in [
        (RuntimeProfile::default(), "1.21.1.0", true),
        (RuntimeProfile::default(), "2.0.0", false),
        (abi2.clone(), "2.3.0.0", true),
        (abi2, "1.21.1.0", false),
    ] {
        let verdicts = both_verdicts(|| {
            NeffBuilder::new()
                .profile(profile.clone())
                .subgraph("sg00", |sg| {
                    sg.input("x", f32s(&[1]))
                        .output("y", f32s(&[1]))
                        .ucode_lib(UcodeLib::new("l.so", version).function("f"), vec![0u8; 8])
                })
        });
        let gate = (!accepted).then(|| "G24b".to_string());
        assert_eq!(
            verdicts,
            (accepted, accepted, gate.clone(), gate),
            "{version} under ucode ABI {}",
            profile.ucode_abi
        );
    }
}

#[test]
fn owners_are_judged_by_the_loader_on_the_bytes_written() {
    for owner in ["pe", "pool", "PE", " pe", "gpsimd", ""] {
        for as_key in [false, true] {
            let verdicts = both_verdicts(|| {
                NeffBuilder::new().subgraph("sg00", |sg| {
                    let mut q = DmaQueue::new(Engine::Pool, QueueType::Data);
                    if as_key {
                        q = q.key("owner", owner);
                    } else {
                        q.owner = Some(owner.into());
                    }
                    sg.input("x", f32s(&[1]))
                        .output("y", f32s(&[1]))
                        .dma_queue("q", q)
                })
            });
            let (checked, loaded, checked_gate, loaded_gate) = verdicts.clone();
            assert_eq!(
                checked, loaded,
                "owner {owner:?} (as key: {as_key}): {verdicts:?}"
            );
            assert_eq!(checked_gate, loaded_gate, "owner {owner:?}");
            let valid = ["pe", "pool"].contains(&owner);
            if !as_key {
                assert_eq!(checked, valid, "owner {owner:?}");
            }
        }
    }
}
