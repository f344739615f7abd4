//! `neff barrier`: golden outputs, round trips through the CLI, and refusals.

use crate::common::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/barrier")
}

/// Compares `actual` with tests/golden/barrier/`name`.
#[track_caller]
fn golden(name: &str, actual: &[u8]) {
    crate::common::golden(&format!("barrier/{name}"), actual);
}

#[track_caller]
fn ok(out: &Output) -> Vec<u8> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout.clone()
}

#[track_caller]
fn refused(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

#[test]
fn tables_golden() {
    golden("tables.txt", &ok(&neff(&["barrier", "tables"])));
    let json = ok(&neff(&["barrier", "tables", "--json"]));
    golden("tables.json", &json);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["default"]["step_sizes"], serde_json::json!([1, 4, 4, 1]));
    assert_eq!(v["switch-v1"]["image"].as_str().unwrap().len(), 256);
}

/// A device barrier with host-CC and three leaders.
const COMPOSE_ARGS: [&str; 24] = [
    "barrier",
    "compose",
    "--device-barrier",
    "--host-cc",
    "--leader-base",
    "0x8280000000",
    "--leader-base",
    "0x8280010000",
    "--leader-base",
    "0x8280020000",
    "--dma-sync-sema",
    "0x8280000010",
    "--dma-sync-value",
    "3",
    "--dma-engines",
    "0xF",
    "--queue-id",
    "5",
    "--tdrbp",
    "0x123456789000",
    "--desc-count",
    "8",
    "--total-desc-n",
    "16",
];

#[test]
fn compose_decode_encode_golden_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("b.bin");
    let mut args: Vec<&str> = COMPOSE_ARGS.to_vec();
    args.extend(["-o", s(&bin), "--json"]);
    let out = neff(&args);
    let json = ok(&out);
    golden("compose-device-hostcc.json", &json);
    golden("compose-device-hostcc.bin", &fs::read(&bin).unwrap());
    // The human summary, with the temp path masked.
    let mut human_args: Vec<&str> = COMPOSE_ARGS.to_vec();
    let human_bin = dir.path().join("human.bin");
    human_args.extend(["-o", s(&human_bin)]);
    let human = neff(&human_args);
    ok(&human);
    let text = String::from_utf8_lossy(&human.stderr).replace(s(&human_bin), "OUT.bin");
    golden("compose-device-hostcc.txt", text.as_bytes());
    assert_eq!(fs::read(&human_bin).unwrap(), fs::read(&bin).unwrap());
    golden(
        "decode-device-hostcc.txt",
        &ok(&neff(&["barrier", "decode", s(&bin)])),
    );
    assert_eq!(ok(&neff(&["barrier", "decode", s(&bin), "--json"])), json);
    // JSON → bytes gives the same bytes.
    let json_file = dir.path().join("b.json");
    fs::write(&json_file, &json).unwrap();
    let again = dir.path().join("again.bin");
    ok(&neff(&[
        "barrier",
        "encode",
        s(&json_file),
        "-o",
        s(&again),
    ]));
    assert_eq!(fs::read(&again).unwrap(), fs::read(&bin).unwrap());

    // Host-only on the switch fabric, from a spec file.
    let spec = dir.path().join("spec.json");
    fs::write(
        &spec,
        r#"{"fabric": "switch-v1", "leader_sema_bases": [4096], "host_barrier_done": 8192}"#,
    )
    .unwrap();
    let host = dir.path().join("h.bin");
    let json = ok(&neff(&[
        "barrier",
        "compose",
        "--spec",
        s(&spec),
        "-o",
        s(&host),
        "--json",
    ]));
    golden("compose-host-switch.json", &json);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["execute_device_barrier"], "0x0");
    assert_eq!(
        v["host_barrier"]["barrier_start"]["addr"]["soc_addr"],
        "0x0000000000001018"
    );
    assert_eq!(
        v["host_barrier"]["barrier_done"]["addr"]["soc_addr"],
        "0x0000000000002000"
    );
}

#[test]
fn a_hand_written_fixture_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("f.json");
    fs::write(
        &json,
        r#"{"execute_device_barrier": "0x0", "__reserved0": 3, "__reserved": "0a0b0c",
            "host_barrier": {"barrier_start": {"addr": {"soc_addr": "0xAB"}}, "barrier_done": {"addr": {"soc_addr": "0xCD"}}}}"#,
    )
    .unwrap();
    let bin = dir.path().join("f.bin");
    ok(&neff(&["barrier", "encode", s(&json), "-o", s(&bin)]));
    let bytes = fs::read(&bin).unwrap();
    assert_eq!(bytes.len(), 296);
    assert_eq!(bytes[0], 0xAB);
    assert_eq!(bytes[8], 0xCD);
    assert_eq!(&bytes[0x124..], &[3 << 1, 0x0a, 0x0b, 0x0c]);
}

#[test]
fn bad_input_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.bin");
    fs::write(&short, [0u8; 100]).unwrap();
    refused(
        &neff(&["barrier", "decode", s(&short)]),
        "296 (0x128) bytes; got 100",
    );

    let json = dir.path().join("bad.json");
    let out = dir.path().join("o.bin");
    fs::write(&json, r#"{"execute_device_barrier": "0x0", "bogus": 1}"#).unwrap();
    refused(
        &neff(&["barrier", "encode", s(&json), "-o", s(&out)]),
        "unknown field `bogus`",
    );
    let mut v: serde_json::Value = serde_json::from_slice(&ok(&neff(&[
        "barrier",
        "decode",
        s(&golden_dir().join("compose-device-hostcc.bin")),
        "--json",
    ])))
    .unwrap();
    v["device_barrier"]["queue_id"] = 256.into();
    fs::write(&json, v.to_string()).unwrap();
    refused(
        &neff(&["barrier", "encode", s(&json), "-o", s(&out)]),
        "256",
    );
    assert!(!out.exists(), "nothing written on refusal");

    let five: Vec<String> = (0..5)
        .map(|i| format!("--leader-base={}", 0x1000 * (i + 1)))
        .collect();
    let mut args = vec!["barrier", "compose", "-o", s(&out)];
    args.extend(five.iter().map(String::as_str));
    refused(&neff(&args), "1 to 4 leader SPs");
    refused(
        &neff(&["barrier", "compose", "-o", s(&out)]),
        "has 0 entries",
    );
    let spec = dir.path().join("spec.json");
    fs::write(&spec, r#"{"leader_sema_bases": [1], "leader": 2}"#).unwrap();
    refused(
        &neff(&["barrier", "compose", "--spec", s(&spec), "-o", s(&out)]),
        "unknown field `leader`",
    );
}

#[test]
fn help_golden() {
    for sub in ["", "decode", "encode", "compose", "tables"] {
        let mut args = vec!["barrier"];
        if !sub.is_empty() {
            args.push(sub);
        }
        args.push("--help");
        let name = if sub.is_empty() {
            "help.txt".to_string()
        } else {
            format!("help-{sub}.txt")
        };
        golden(&name, &ok(&neff(&args)));
    }
}

#[test]
fn a_builder_can_attach_a_config_that_inspect_decodes() {
    use neff::schema::barrier::{BarrierConfigs, HostBarrier};
    use neff::schema::manifest::Dtype;
    use neff::writer::builder::Tensor;
    use neff::writer::NeffBuilder;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.neff");
    let mut configs = BarrierConfigs::default();
    configs.set_host_barrier(&HostBarrier {
        barrier_start: 0x10,
        barrier_done: 0x20,
    });
    NeffBuilder::new()
        .subgraph("sg00", |sg| {
            sg.input("x", Tensor::new(Dtype::Float32, [4]))
                .output("y", Tensor::new(Dtype::Float32, [4]))
        })
        .barrier_config(&configs)
        .write_to_path(&path)
        .unwrap();
    let out = neff(&["inspect", s(&path), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&ok(&out)).unwrap();
    let b = &v["barrier_config"]["Ok"];
    assert_eq!(
        b["host_barrier"]["barrier_done"]["addr"]["soc_addr"],
        "0x0000000000000020"
    );
    // The builder's own member, not an unreferenced one.
    assert!(v["model"]["builder_members"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["member"] == "barrier_config.json"));
    assert!(!v["model"]["unreferenced_members"]
        .as_array()
        .unwrap()
        .contains(&"barrier_config.json".into()));
    assert_eq!(v["verdict"]["accepted"], true);
    // The text names the verbs that read the member: cat prints the JSON,
    // encode turns it into bytes (it once said "decode it with encode").
    let text = String::from_utf8(ok(&neff(&["inspect", s(&path)]))).unwrap();
    let hint = format!("`neff cat {} barrier_config.json` prints it", s(&path));
    assert!(text.contains(&hint), "{text}");
    assert!(!text.contains("decode it with"), "{text}");
}
