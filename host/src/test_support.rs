//! What the library's tests share.

use proptest::test_runner::Config;

/// A property's configuration: `default` cases, or as many as `PROPTEST_CASES`
/// says when it is set (a longer run).
pub(crate) fn proptest_config(default: u32) -> Config {
    match std::env::var_os("PROPTEST_CASES") {
        Some(_) => Config::default(),
        None => Config::with_cases(default),
    }
}
