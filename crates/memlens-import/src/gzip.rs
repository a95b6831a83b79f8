//! Gzipped trace files (`x.traj.json.gz`, `x.jsonl.gz`): recognised by their magic bytes, not their
//! name, and decompressed before decoding, never past a limit on the decompressed size, so a
//! small file that inflates to gigabytes (a gzip bomb) is an error rather than the machine's
//! memory. Decompressing needs the `gzip` feature (the CLI, npm and Python builds); without it a
//! gzipped file is a clear error (the web app decompresses in the browser before importing).

use crate::ImportError;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

/// The two bytes every gzip member starts with (RFC 1952).
pub const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `bytes` are gzip-compressed (by their magic bytes: JSON never starts with 0x1f).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// The default for [`limit`]: importing takes about three times the input in memory, so a third
/// of wasm32's 4 GiB address space there; elsewhere 4 GiB, the CLI's figure where the machine's
/// memory is unknown (hosts that know it set theirs with [`set_limit`]).
pub const DEFAULT_LIMIT: u64 = if cfg!(target_pointer_width = "32") {
    1 << 30
} else {
    4 << 30
};

/// Process-wide, as memory is: a host sets it once from the machine (see [`limit_for_memory`]).
static LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_LIMIT);

/// The most bytes [`crate::import`] decompresses a file to.
pub fn limit() -> u64 {
    LIMIT.load(Ordering::Relaxed)
}

/// Sets [`limit`] for this process (the Python module does at load, from [`limit_for_memory`]).
pub fn set_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The largest input a host should read into memory, and why: `MEMLENS_MAX_INPUT_BYTES` when set
/// (its value is `env`), else a third of the memory available (`MemAvailable` in `meminfo`, the
/// text of `/proc/meminfo`), since importing takes about three times the input (RELIABILITY.md),
/// else 4 GiB. Pure: the host reads the variable and the file, so the CLI and the Python module
/// apply one rule.
pub fn limit_for_memory(env: Option<&str>, meminfo: Option<&str>) -> (u64, &'static str) {
    if let Some(n) = env.and_then(|v| v.trim().parse::<u64>().ok()) {
        return (n, "MEMLENS_MAX_INPUT_BYTES");
    }
    let available_kb = meminfo.and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    match available_kb {
        Some(kb) => (
            kb.saturating_mul(1024) / 3,
            "a third of the memory available, since importing takes about three times the file",
        ),
        None => (4 << 30, "the default where the available memory is unknown"),
    }
}

/// `bytes` decompressed when they are gzip ([`is_gzip`]; every member of a multi-member file),
/// else `bytes` as they are. A corrupt or truncated stream is [`ImportError::Compressed`]; more
/// than `limit` bytes out is [`ImportError::TooLarge`], found as soon as the output passes it.
pub fn decompress<'a>(
    file: &str,
    bytes: &'a [u8],
    limit: u64,
) -> Result<Cow<'a, [u8]>, ImportError> {
    if !is_gzip(bytes) {
        return Ok(Cow::Borrowed(bytes));
    }
    inflate(file, bytes, limit).map(Cow::Owned)
}

#[cfg(feature = "gzip")]
fn inflate(file: &str, bytes: &[u8], limit: u64) -> Result<Vec<u8>, ImportError> {
    use std::io::Read;
    let error = |message: String| ImportError::Compressed {
        file: file.to_string(),
        message,
    };
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    grow(&mut out, capacity_hint(bytes, limit), cap).map_err(error)?;
    let mut decoder = flate2::bufread::MultiGzDecoder::new(bytes);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(error(format!(
                    "not a readable gzip file (corrupt or truncated): {e}"
                )))
            }
        };
        if out.len().saturating_add(n) > cap {
            return Err(ImportError::TooLarge {
                file: file.to_string(),
                limit,
            });
        }
        if out.capacity() - out.len() < n {
            let doubled = out.capacity().saturating_mul(2);
            grow(&mut out, doubled, cap).map_err(error)?;
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Grows `out` to hold `wanted` bytes, never past `cap`: a buffer that doubled as it filled
/// would hold twice the limit at its last step (in wasm32, more than the memory there is).
#[cfg(feature = "gzip")]
fn grow(out: &mut Vec<u8>, wanted: usize, cap: usize) -> Result<(), String> {
    let wanted = wanted.max(out.len() + (1 << 16)).min(cap);
    out.try_reserve_exact(wanted.saturating_sub(out.len()))
        .map_err(|_| format!("not enough memory to decompress {wanted} bytes"))
}

/// The output's size as the last member's trailer gives it (modulo 4 GiB, and only that member),
/// capped by the limit and by deflate's best ratio (about 1032 to 1): reserving it up front
/// saves the copies of a growing buffer.
#[cfg(feature = "gzip")]
fn capacity_hint(bytes: &[u8], limit: u64) -> usize {
    let trailer = bytes
        .len()
        .checked_sub(4)
        .and_then(|at| bytes.get(at..))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes);
    let most = (bytes.len() as u64).saturating_mul(1032).min(limit);
    usize::try_from(u64::from(trailer).min(most)).unwrap_or(0)
}

#[cfg(not(feature = "gzip"))]
fn inflate(file: &str, _bytes: &[u8], _limit: u64) -> Result<Vec<u8>, ImportError> {
    Err(ImportError::Compressed {
        file: file.to_string(),
        message: "the file is gzip-compressed and this build reads no gzip: decompress it first \
                  (gunzip)"
            .to_string(),
    })
}

#[cfg(all(test, feature = "gzip"))]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    }

    #[test]
    fn only_the_magic_bytes_mean_gzip() {
        assert!(is_gzip(&gz(b"{}")));
        assert!(!is_gzip(b"{\"a\": 1}"));
        assert!(!is_gzip(&[0x1f]));
        assert!(!is_gzip(b""));
        // Not gzip: the very same bytes back, not a copy.
        let plain = b"[1, 2]";
        assert!(matches!(decompress("a.json", plain, 10), Ok(Cow::Borrowed(b)) if b == plain));
    }

    #[test]
    fn round_trips_and_reads_every_member() {
        let data = b"{\"role\": \"user\"}\n".repeat(1000);
        let packed = gz(&data);
        let out = decompress("a.jsonl.gz", &packed, 1 << 20).expect("decompresses");
        assert_eq!(out.as_ref(), data.as_slice());
        // `cat a.gz b.gz`: one file of two members, as pigz and log rotation write.
        let mut two = gz(b"{\"a\": 1}\n");
        two.extend(gz(b"{\"b\": 2}\n"));
        let out = decompress("two.jsonl.gz", &two, 1 << 20).expect("both members");
        assert_eq!(out.as_ref(), b"{\"a\": 1}\n{\"b\": 2}\n");
    }

    #[test]
    fn import_reads_a_gzipped_file_as_its_plain_copy() {
        let plain = br#"{"model": "gpt-4o", "messages": [
            {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]}"#;
        let options = crate::ImportOptions::default();
        let packed = crate::import("chat.json.gz", &gz(plain), &options).expect("gzipped");
        let unpacked = crate::import("chat.json", plain, &options).expect("plain");
        assert_eq!(packed.format, "openai");
        assert_eq!(packed.traces, unpacked.traces);
        let e = crate::import("cut.json.gz", &gz(plain)[..20], &options).expect_err("cut");
        assert!(
            e.to_string()
                .starts_with("cut.json.gz: not a readable gzip"),
            "{e}"
        );
    }

    #[test]
    fn corrupt_or_truncated_input_is_an_error_naming_the_file() {
        let whole = gz(&b"{\"role\": \"user\", \"content\": \"hello\"}\n".repeat(500));
        for cut in [2, 10, whole.len() / 2, whole.len() - 1] {
            let e = decompress("cut.json.gz", &whole[..cut], 1 << 20).expect_err("truncated");
            assert!(matches!(e, ImportError::Compressed { .. }), "{cut}: {e}");
            assert!(e.to_string().starts_with("cut.json.gz: "), "{e}");
        }
        let mut flipped = whole.clone();
        flipped[20] ^= 0xff;
        flipped[21] ^= 0xff;
        let e = decompress("bad.json.gz", &flipped, 1 << 20).expect_err("corrupt");
        assert!(e.to_string().contains("corrupt or truncated"), "{e}");
    }

    #[test]
    fn output_past_the_limit_is_refused() {
        let zeros = gz(&vec![b' '; 100_000]);
        assert!(decompress("ok.gz", &zeros, 100_000).is_ok());
        let e = decompress("bomb.gz", &zeros, 99_999).expect_err("too large");
        assert_eq!(
            e,
            ImportError::TooLarge {
                file: "bomb.gz".into(),
                limit: 99_999
            }
        );
        // A trailer claiming 4 GiB reserves no more than the limit allows.
        let mut lying = zeros.clone();
        let n = lying.len();
        lying[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(capacity_hint(&lying, 1000) <= 1000);
        // Many members, each small: the buffer grows to the limit, never to twice it.
        let member = gz(&[b' '; 4096]);
        let many: Vec<u8> = member
            .iter()
            .copied()
            .cycle()
            .take(member.len() * 300)
            .collect();
        let out = decompress("many.gz", &many, 300 * 4096).expect("at the limit");
        assert_eq!(out.len(), 300 * 4096);
        assert!(matches!(out, Cow::Owned(ref v) if v.capacity() <= 300 * 4096));
        let e = decompress("many.gz", &many, 300 * 4096 - 1).expect_err("one byte over");
        assert!(matches!(e, ImportError::TooLarge { .. }));
    }

    #[test]
    fn the_memory_rule_prefers_the_variable_then_a_third_of_what_is_available() {
        let meminfo = "MemTotal: 100 kB\nMemAvailable:    3000 kB\n";
        assert_eq!(limit_for_memory(Some(" 42 "), Some(meminfo)).0, 42);
        assert_eq!(limit_for_memory(None, Some(meminfo)).0, 1000 * 1024);
        assert_eq!(limit_for_memory(Some("lots"), None).0, 4 << 30);
    }
}

#[cfg(all(test, not(feature = "gzip")))]
mod tests_without_the_feature {
    use super::*;

    #[test]
    fn gzip_is_a_clear_error_and_plain_bytes_pass() {
        let e = decompress("a.json.gz", &[0x1f, 0x8b, 8, 0], 1 << 20).expect_err("no gzip");
        assert!(
            e.to_string()
                .starts_with("a.json.gz: the file is gzip-compressed"),
            "{e}"
        );
        assert!(decompress("a.json", b"{}", 1 << 20).is_ok());
    }
}
