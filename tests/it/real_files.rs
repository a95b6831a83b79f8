//! Real session files from public repositories (tests/fixtures/real/<format>/, sources and
//! licences in tests/fixtures/SOURCES.md) import with no error and sniff as their format.

use crate::{import_path, root};

#[test]
fn real_files_import_without_errors_as_their_format() {
    let dir = root().join("tests/fixtures/real");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/real exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for format_dir in entries {
        let format = format_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<_> = std::fs::read_dir(&format_dir)
            .expect("readable")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e != "md"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no real files", format_dir.display());
        for file in files {
            let result = import_path(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(result.format, format, "{} sniffed as", file.display());
            assert!(
                result.traces.iter().any(|t| !t.chunks.is_empty()),
                "{}: no content imported",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no real files found");
}
