//! Timestamps as the traces carry them, read into seconds since the Unix epoch. The core reads
//! no clock: "now" is always the newest timestamp seen in the trace.
//!
//! ```
//! use memlens_core::time::timestamp_secs;
//!
//! assert_eq!(timestamp_secs("1970-01-01T00:01:00Z"), Some(60.0));
//! assert_eq!(timestamp_secs("2025-06-02T18:46:59.5+02:00"), Some(1_748_882_819.5));
//! assert_eq!(timestamp_secs("1748882819500"), Some(1_748_882_819.5)); // milliseconds
//! assert_eq!(timestamp_secs("1:56 pm on 8 May, 2023"), None);
//! ```

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Seconds since the epoch of an RFC 3339 / ISO 8601 date-time (`2025-06-02T18:46:59.937Z`, a
/// space instead of the `T` accepted) or a Unix time as digits, whose magnitude says the unit
/// (seconds, milliseconds, microseconds or nanoseconds, as exporters write them). `None` for
/// anything else.
pub fn timestamp_secs(text: &str) -> Option<f64> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let n: f64 = text.parse().ok()?;
        let scale = match n {
            n if n >= 1e17 => 1e9,
            n if n >= 1e14 => 1e6,
            n if n >= 1e11 => 1e3,
            _ => 1.0,
        };
        return Some(n / scale);
    }
    let parsed = OffsetDateTime::parse(text, &Rfc3339).or_else(|_| {
        // `2025-06-02 18:46:59Z`: RFC 3339 allows the space; the parser wants the `T`.
        match text.as_bytes().get(10) {
            Some(b' ') => {
                OffsetDateTime::parse(&format!("{}T{}", &text[..10], &text[11..]), &Rfc3339)
            }
            _ => OffsetDateTime::parse(&format!("{text}Z"), &Rfc3339),
        }
    });
    let t = parsed.ok()?;
    Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::timestamp_secs;

    #[test]
    fn forms_the_importers_meet() {
        assert_eq!(
            timestamp_secs("2025-06-02 18:46:59Z"),
            timestamp_secs("2025-06-02T18:46:59Z")
        );
        // No offset: read as UTC.
        assert_eq!(
            timestamp_secs("2025-06-02T18:46:59"),
            timestamp_secs("2025-06-02T18:46:59Z")
        );
        assert_eq!(
            timestamp_secs("1748890019"),
            timestamp_secs("2025-06-02T18:46:59Z")
        );
        assert_eq!(timestamp_secs("1748890019000000000"), Some(1_748_890_019.0));
        for bad in [
            "",
            "yesterday",
            "2025-13-02T00:00:00Z",
            "１２３",
            "2025-06-0",
        ] {
            assert_eq!(timestamp_secs(bad), None, "{bad:?}");
        }
    }
}
