//! The native JSON Lines reader, whole and as a growing file: `follow::Follower` fed the same
//! bytes in pieces (the web app's live follow) must never panic, and once the file ends with a
//! newline it must hold what a whole import holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlens_import::follow::Follower;
use memlens_import::{import, ImportOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let options = ImportOptions {
        format: Some("memlens".into()),
        model: None,
    };
    let whole = import("fuzz.jsonl", bytes, &options);
    let mut follower = Follower::new("fuzz.jsonl", &ImportOptions::default());
    // Pieces of a size the first byte picks (1..=64 bytes), as appends arrive.
    let step = usize::from(cut % 64) + 1;
    let mut failed = false;
    for piece in bytes.chunks(step) {
        if follower.push(piece).is_err() {
            failed = true;
            break;
        }
    }
    assert!(
        follower.bytes() <= bytes.len() as u64,
        "read more bytes than were appended"
    );
    if let (Ok(whole), false) = (whole, failed) {
        if bytes.ends_with(b"\n") && follower.format() == Some("memlens") {
            let followed = follower.traces();
            assert_eq!(
                followed.len(),
                whole.traces.len(),
                "a followed file lost traces"
            );
            for (a, b) in followed.iter().zip(&whole.traces) {
                assert_eq!(
                    a.chunks.len(),
                    b.chunks.len(),
                    "a followed file lost chunks"
                );
                assert_eq!(a.calls.len(), b.calls.len(), "a followed file lost calls");
            }
        }
    }
});
