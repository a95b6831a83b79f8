//! Number formatting for display: the report's own (the app and the exported report print the
//! same figures the same way), plus file sizes.

pub use memlens_report::fmt::{int, pct, usd};

/// Megabytes with one decimal.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(int(1234567u64), "1,234,567");
        assert_eq!(usd(Some(0.5)), "$0.5000");
        assert_eq!(mb(2_345_678), "2.3 MB");
    }
}
