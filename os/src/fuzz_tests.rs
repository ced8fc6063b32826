//! Property tests of the unit parsers (sizes, durations, percentages): whatever the input,
//! they return a value or an error, never panic, and what Headroom writes it reads back.
//! Cases per property: `HEADROOM_FUZZ_CASES` (200 by default; `scripts/fuzz-parsers` runs a
//! million inputs in all). The `/proc` readers are fuzzed in `counters/linux/tests.rs`;
//! traces and settings files in headroom-core, command-line flags in the CLI's own tests.

use proptest::prelude::*;

use headroom_model::units::{format_bytes, parse_bytes, parse_duration, parse_percent};

/// The property tests' configuration: [`crate::testdata::fuzz_cases`] cases, nothing
/// written to disk.
pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        cases: crate::testdata::fuzz_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn regex(pattern: &str) -> impl Strategy<Value = String> {
    proptest::string::string_regex(pattern).expect("a valid regex")
}

/// Near-valid units: numbers with signs, exponents, many digits, units in any case, spaces.
fn unit_text() -> impl Strategy<Value = String> {
    prop_oneof![
        regex("[ \\t]{0,2}[-+]?[0-9]{0,25}(\\.[0-9]{0,25})?([eE][-+]?[0-9]{0,4})?[ ]?([kKmMgGtTpPeE]i?[bB]?|ms|s|m|h|d|%|µs|ns)?[ \\t]{0,2}"),
        regex("(inf|NaN|nan|-0|0x1F|1_000|9{30}|\\PC{0,12})"),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_units_never_panic(text in unit_text()) {
        let _ = parse_bytes(&text);
        let _ = parse_duration(&text);
        if let Ok(p) = parse_percent(&text) {
            prop_assert!(p.is_finite(), "{text:?} -> {p}");
        }
    }

    #[test]
    fn fuzz_sizes_round_trip(bytes in any::<u64>()) {
        // What Headroom writes, it reads back (rounded as written, never an error).
        prop_assert!(parse_bytes(&format_bytes(bytes)).is_ok(), "{}", format_bytes(bytes));
    }
}
