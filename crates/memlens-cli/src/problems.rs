//! Reporting on stderr what went wrong short of an error: the inputs that could not be read (the
//! others were) and what an import warned about.

use memlens_import::Import;
use std::process::ExitCode;

/// Prints the inputs that could not be read (the others were): exit status 1 when there are
/// any, 0 when not.
pub(crate) fn report_unreadable(errors: &[String]) -> ExitCode {
    for e in errors {
        eprintln!("memlens: error: {e}");
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The first warnings in full, then, when there were more, every kind with its count (all of
/// them, also those past the ones an import keeps).
pub(crate) fn print_warnings(result: &Import) {
    const SHOWN: usize = 10;
    for w in result.warnings.iter().take(SHOWN) {
        eprintln!("warning: {w}");
    }
    if result.warning_count > SHOWN {
        eprintln!(
            "warning: {} warning(s) in all, by kind:",
            result.warning_count
        );
        let mut kinds: Vec<(&String, &usize)> = result.warning_kinds.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (kind, n) in kinds {
            eprintln!("warning: {n:>7} x {kind}");
        }
    }
}
