//! Numbers and text as MemLens prints them (the report, the CLI and the web app alike), and HTML
//! escaping.

/// `1234567` as `1,234,567`.
pub fn int(n: impl Into<i128>) -> String {
    let n: i128 = n.into();
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
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

/// `part / whole` as a percentage with one decimal, `–` when `whole` is not positive.
pub fn pct(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "–".into();
    }
    format!("{:.1}%", part * 100.0 / whole)
}

/// Axis ticks: `950`, `12k`, `1.5M`.
pub(crate) fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Text for HTML element content and attribute values: trace content is shown as text, never
/// interpreted as markup.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// At most `max` characters, with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
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
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(1500.0), "1.5k");
        assert_eq!(compact(12_000.0), "12k");
        assert_eq!(compact(2_500_000.0), "2.5M");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }
}
