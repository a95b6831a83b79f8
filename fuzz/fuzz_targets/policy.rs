//! The policy parser (JSON and TOML): any text is a policy or an error, and a policy that reads
//! is exported (`to_json`) to text that reads back as the same policy.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlens_core::policy::PolicyConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for parsed in [
        PolicyConfig::parse(text),
        PolicyConfig::from_json(text),
        PolicyConfig::from_toml(text),
    ] {
        let Ok(policy) = parsed else {
            continue;
        };
        let exported = policy.to_json();
        let back = PolicyConfig::from_json(&exported)
            .unwrap_or_else(|e| panic!("an exported policy must read back: {e}\n{exported}"));
        assert_eq!(
            back, policy,
            "the exported policy reads back different\n{exported}"
        );
    }
});
