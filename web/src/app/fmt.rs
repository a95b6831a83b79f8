//! Number formatting for display.

/// `1234567` as `1,234,567`.
pub fn int(n: impl Into<i128>) -> String {
    let n: i128 = n.into();
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Dollars: `$1.23`, `$0.0042`, `<$0.0001`, or `unpriced`.
pub fn usd(v: Option<f64>) -> String {
    match v {
        None => "unpriced".into(),
        Some(0.0) => "$0".into(),
        Some(v) if v.abs() < 0.0001 => "<$0.0001".into(),
        Some(v) if v.abs() < 1.0 => format!("${v:.4}"),
        Some(v) => format!("${v:.2}"),
    }
}

/// A share as a percentage with one decimal.
pub fn pct(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "–".into();
    }
    format!("{:.1}%", part * 100.0 / whole)
}

/// Megabytes with one decimal.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(int(0u32), "0");
        assert_eq!(int(1234567u64), "1,234,567");
        assert_eq!(int(-1234i64), "-1,234");
        assert_eq!(usd(None), "unpriced");
        assert_eq!(usd(Some(0.00001)), "<$0.0001");
        assert_eq!(usd(Some(0.5)), "$0.5000");
        assert_eq!(usd(Some(12.345)), "$12.35");
        assert_eq!(pct(1.0, 4.0), "25.0%");
        assert_eq!(pct(1.0, 0.0), "–");
    }
}
