//! Number and text formatting shared by the CLI's reports.

/// Dollars: cents above a cent, four decimals below, `<$0.0001` for less, `unpriced` for none.
pub fn usd(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() >= 0.01 => format!("${x:.2}"),
        Some(x) if x.abs() >= 0.0001 => format!("${x:.4}"),
        Some(x) if x != 0.0 => "<$0.0001".to_string(),
        Some(_) => "$0".to_string(),
        None => "unpriced".to_string(),
    }
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
