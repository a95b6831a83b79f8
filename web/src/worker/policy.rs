//! TOML policies, read for the page (which is built without TOML's parser): a TOML text as the
//! JSON text the page reads.

/// A TOML policy as JSON text, for the page to read (`Ctx::read_policy`): the worker parses
/// TOML into a table and writes the table as JSON, so neither side instantiates toml's
/// deserializer for every policy type (memlens-core's `from_toml`, which the CLI uses, does:
/// three times the code). A number that is not finite (`inf`, `nan`, a literal too large) is
/// refused here, with its path: JSON would write it as `null`.
#[cfg(feature = "toml")]
pub(super) fn toml_policy_as_json(text: &str) -> Result<String, String> {
    let invalid = |message: String| format!("invalid policy (toml): {message}");
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
    if let Some(path) = non_finite_float(&toml::Value::Table(table.clone()), "") {
        return Err(invalid(format!("{path} is not a finite number")));
    }
    serde_json::to_string(&table).map_err(|e| invalid(e.to_string()))
}

/// Without the `toml` feature (the page's build, which never reads TOML itself).
#[cfg(not(feature = "toml"))]
pub(super) fn toml_policy_as_json(_text: &str) -> Result<String, String> {
    Err("invalid policy (toml): this build reads JSON policies only".into())
}

/// The dotted path of the first float in `v` that is not finite.
#[cfg(feature = "toml")]
fn non_finite_float(v: &toml::Value, path: &str) -> Option<String> {
    let at = |key: &str| match path {
        "" => key.to_string(),
        _ => format!("{path}.{key}"),
    };
    match v {
        toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| non_finite_float(v, &at(k))),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite_float(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}
