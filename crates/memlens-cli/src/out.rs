//! Writing to stdout without panicking on a closed pipe.
//!
//! `println!` panics when stdout is closed (`memlens inspect big.json | head`). Like ripgrep,
//! MemLens ends quietly instead: a broken pipe exits with status 0, any other write error is
//! reported on stderr with status 2.

use std::io::{ErrorKind, Write};

/// Writes formatted text to stdout; see the module docs for what happens on errors.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args) {
        exit_on(&e);
    }
}

/// Writes bytes to stdout as they are.
pub fn bytes(data: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(data).and_then(|()| stdout.flush()) {
        exit_on(&e);
    }
}

/// Writes a value as JSON and a newline to stdout.
pub fn json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    match serde_json::to_writer(&mut stdout, value) {
        Err(e) if e.is_io() => exit_on(&std::io::Error::from(e)),
        Err(e) => return Err(format!("writing JSON: {e}")),
        Ok(()) => {}
    }
    if let Err(e) = writeln!(stdout) {
        exit_on(&e);
    }
    Ok(())
}

fn exit_on(e: &std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("memlens: error: writing to stdout: {e}");
    std::process::exit(2);
}

/// `println!` to stdout that ends quietly on a closed pipe.
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to stdout that ends quietly on a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write(format_args!($($arg)*)) };
}

pub(crate) use {out, outln};
