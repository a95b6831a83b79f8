//! Decisions unchanged: one line per (trace file, policy, budget) with the first 16 hex digits of
//! the sha256 of `memlens simulate --json` (per-call input tokens, cached prefix, evictions,
//! compressions, retrievals, misses, violations) on the real tau-bench and LoCoMo files, plus
//! one line for `memlens bench-evidence --json` on LoCoMo with its timings and path left out. A change
//! to how MemLens decides changes a line: review it, then accept the new lines with
//! `INSTA_UPDATE=always cargo test -p memlens-cli --test decisions` (and say why in the commit).

use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::Command;

const BUDGETS: [u32; 3] = [2000, 4000, 8000];

fn data(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(rel);
    assert!(
        p.exists(),
        "{} is missing: the real data must sit at ../shared",
        p.display()
    );
    p
}

fn memlens(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_memlens"))
        .args(args)
        .output()
        .expect("memlens runs");
    assert!(
        out.status.success(),
        "memlens {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[test]
fn decisions_are_unchanged_on_the_real_data() {
    let tau = data("traces/tau-bench-gpt-4o-airline.json");
    let locomo = data("locomo/locomo10.json");
    let policies: Vec<String> = String::from_utf8(memlens(&["policies"]))
        .expect("UTF-8")
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let mut jobs = Vec::new();
    for p in &policies {
        for b in BUDGETS {
            for f in [&tau, &locomo] {
                jobs.push((p.clone(), b, f.clone()));
            }
        }
    }
    // Two at a time: each run is one process, and the machines this runs on have two cores.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let chunk = jobs.len().div_ceil(threads);
    let mut lines: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(p, b, f)| {
                            let path = f.to_str().expect("UTF-8 path");
                            let b_text = b.to_string();
                            let args = ["simulate", path, "--policy", p, "--budget", &b_text];
                            let out = memlens(&[&args[..], &["--json"]].concat());
                            let name = f.file_name().expect("file").to_string_lossy();
                            format!("{name} {p} {b} {}", digest(&out))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("no panic"))
            .collect()
    });
    let evidence = memlens(&["bench-evidence", locomo.to_str().expect("UTF-8"), "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&evidence).expect("JSON");
    let mut canonical = String::new();
    python_json(&without_timings(value), &mut canonical);
    canonical.push('\n');
    lines.push(format!(
        "locomo10.json bench-evidence {}",
        digest(canonical.as_bytes())
    ));
    insta::assert_snapshot!(lines.join("\n"));
}

/// Timings (`*_ms`, `*_us`, `*_us_per_turn`, `*per_second`) differ run to run, and `file` is the
/// path as given (where the checkout is); nothing else may differ.
fn without_timings(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| {
                    k != "file"
                        && !["_ms", "_us", "_us_per_turn", "per_second"]
                            .iter()
                            .any(|s| k.ends_with(s))
                })
                .map(|(k, v)| (k, without_timings(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_timings).collect()),
        other => other,
    }
}

/// JSON text as Python's `json.dumps(v, sort_keys=True)` writes it (the digest's form since it
/// was a shell script): `", "` and `": "`, keys sorted, non-ASCII escaped, floats as `repr`.
fn python_json(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_f64() => out.push_str(&python_float(n.as_f64().unwrap_or(0.0))),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(x, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_string(k, out);
                out.push_str(": ");
                python_json(&map[k], out);
            }
            out.push('}');
        }
    }
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that round-trip, positional from 1e-4 to 1e16,
/// else `d.ddde-05`.
fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = format!("{x:e}"); // shortest round-trip digits: `-1.2345e-5`
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{x}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

#[test]
fn floats_and_strings_read_as_python_writes_them() {
    for (x, py) in [
        (0.0, "0.0"),
        (1.0, "1.0"),
        (0.729, "0.729"),
        (1e-05, "1e-05"),
        (0.0001, "0.0001"),
        (1.5e16, "1.5e+16"),
        (123456.789, "123456.789"),
        (-2.5e-7, "-2.5e-07"),
    ] {
        assert_eq!(python_float(x), py);
    }
    let mut s = String::new();
    python_string("a\"é😀\n", &mut s);
    assert_eq!(s, r#""a\"\u00e9\ud83d\ude00\n""#);
}
