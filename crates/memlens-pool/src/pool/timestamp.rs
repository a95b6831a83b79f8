//! Timestamps as the pool writes them into `ChunkMeta::timestamp`: RFC 3339 in UTC, the form
//! the trace importers meet most, which `memlens_core::time::timestamp_secs` reads back. The
//! pool reads no clock: the hosts hand it seconds since the epoch (their clock, or the caller's
//! time), or a text this module reads as the importers read theirs.

use super::PoolError;
use memlens_core::time::timestamp_secs;
use std::fmt::Write;

/// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in microseconds: RFC 3339 writes four-digit
/// years only.
const MIN_MICROS: i64 = -62_167_219_200_000_000;
const END_MICROS: i64 = 253_402_300_800_000_000;
const DAY_MICROS: i64 = 86_400_000_000;

/// Reads a timestamp given as text, as the importers read the ones in trace files: RFC 3339 /
/// ISO 8601 (UTC when it has no offset) or Unix time as digits (seconds, milliseconds, ... by
/// magnitude). Returns seconds since the epoch.
pub fn parse_timestamp(text: &str) -> Result<f64, PoolError> {
    timestamp_secs(text).ok_or_else(|| {
        PoolError::Timestamp(format!(
            "{text:?} is neither an ISO 8601 date-time (\"2025-06-02T18:46:59Z\") nor Unix time digits"
        ))
    })
}

/// `secs` (since the epoch) as RFC 3339 text to the microsecond (shorter when whole
/// milliseconds or seconds), with the seconds that text reads back as: ages are measured from
/// what the chunk carries, as a replay of the trace measures them.
pub(super) fn format_timestamp(secs: f64) -> Result<(String, f64), PoolError> {
    let micros = (secs * 1e6).round();
    if !micros.is_finite() || micros < MIN_MICROS as f64 || micros >= END_MICROS as f64 {
        return Err(PoolError::Timestamp(format!(
            "{secs} seconds since the epoch is not a date-time between the years 0 and 9999"
        )));
    }
    // In range, so exact as an integer.
    let micros = micros as i64;
    let (days, in_day) = (micros.div_euclid(DAY_MICROS), micros.rem_euclid(DAY_MICROS));
    let (year, month, day) = civil_from_days(days);
    let (secs_of_day, frac) = (in_day / 1_000_000, in_day % 1_000_000);
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    );
    // Writing to a String cannot fail.
    let _ = match frac {
        0 => Ok(()),
        f if f % 1000 == 0 => write!(text, ".{:03}", f / 1000),
        f => write!(text, ".{f:06}"),
    };
    text.push('Z');
    let read = timestamp_secs(&text).unwrap_or(micros as f64 / 1e6);
    Ok((text, read))
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): the `time` crate is built for parsing only here.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn written_timestamps_read_back_as_the_same_time() {
        for (secs, text) in [
            (0.0, "1970-01-01T00:00:00Z"),
            (1_748_890_019.5, "2025-06-02T18:46:59.500Z"),
            (951_782_400.0, "2000-02-29T00:00:00Z"),
            (-1.0, "1969-12-31T23:59:59Z"),
            (1_700_000_000.000_123, "2023-11-14T22:13:20.000123Z"),
            (-62_167_219_200.0, "0000-01-01T00:00:00Z"),
            (253_402_300_799.0, "9999-12-31T23:59:59Z"),
        ] {
            let (written, read) = format_timestamp(secs).unwrap();
            assert_eq!(written, text);
            assert!((read - secs).abs() < 1e-6, "{secs} read back as {read}");
            assert_eq!(timestamp_secs(&written), Some(read));
        }
        // Every day of four centuries (leap years of every kind), at an odd time of day.
        for day in -400 * 366..400 * 366 {
            let secs = f64::from(day) * 86_400.0 + 45_296.25;
            let (written, read) = format_timestamp(secs).unwrap();
            assert_eq!(read, secs, "{written}");
        }
    }

    #[test]
    fn times_rfc_3339_cannot_write_are_errors() {
        for bad in [f64::NAN, f64::INFINITY, -1e12, 253_402_300_800.0, 1e300] {
            let e = format_timestamp(bad).unwrap_err().to_string();
            assert!(e.starts_with("invalid timestamp:"), "{e}");
        }
        assert_eq!(parse_timestamp("1970-01-01T00:01:00Z").unwrap(), 60.0);
        assert_eq!(parse_timestamp("60000").unwrap(), 60_000.0);
        let e = parse_timestamp("yesterday").unwrap_err().to_string();
        assert!(e.contains("\"yesterday\" is neither"), "{e}");
    }
}
