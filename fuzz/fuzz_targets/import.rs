//! Every importer through `memlens_import::import`: the first byte names the format (or asks for
//! sniffing), the rest is the file. An import must end in traces or an error, never a panic; and
//! what it imports must survive the native format (written, read back, same traces).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlens_import::{import, native, ImportOptions, IMPORTERS};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    // Half the inputs are sniffed, as a user's file is; the rest go to one importer each.
    let format = IMPORTERS
        .get(usize::from(pick) % (2 * IMPORTERS.len()))
        .map(|i| i.name().to_string());
    let options = ImportOptions {
        format,
        model: None,
    };
    let Ok(first) = import("fuzz.json", bytes, &options) else {
        return;
    };
    let text = native::write(&first.traces);
    let back = import("fuzz.jsonl", text.as_bytes(), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("the native file written from an import must read back: {e}"));
    assert_eq!(
        back.traces.len(),
        first.traces.len(),
        "traces lost in the native round trip"
    );
    for (a, b) in first.traces.iter().zip(&back.traces) {
        assert_eq!(
            a.chunks.len(),
            b.chunks.len(),
            "chunks lost in the native round trip"
        );
        assert_eq!(
            a.calls.len(),
            b.calls.len(),
            "calls lost in the native round trip"
        );
        for (x, y) in a.chunks.iter().zip(&b.chunks) {
            assert_eq!(
                x.content, y.content,
                "chunk content changed in the native round trip"
            );
            assert_eq!(
                x.tokens, y.tokens,
                "chunk tokens changed in the native round trip"
            );
        }
    }
});
