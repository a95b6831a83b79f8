//! `memlens formats` and `memlens policies`: what MemLens reads, and the built-in policies.

use crate::out::outln;
use memlens_core::policy::{PolicyConfig, BUILTIN};
use memlens_import::IMPORTERS;
use std::process::ExitCode;

/// Lists the formats MemLens reads, each with its description.
pub(crate) fn formats() -> ExitCode {
    for i in IMPORTERS {
        outln!("{:<15} {}", i.name(), i.description());
    }
    ExitCode::SUCCESS
}

/// Lists the built-in policies, or prints the one named as JSON.
pub(crate) fn policies(name: Option<&str>) -> Result<ExitCode, String> {
    match name {
        Some(name) => {
            let p = PolicyConfig::builtin(name).map_err(|e| e.to_string())?;
            outln!("{}", p.to_json());
        }
        None => {
            for name in BUILTIN {
                outln!("{name}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
