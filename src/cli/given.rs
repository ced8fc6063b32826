//! Which flags the user gave on the command line (not their defaults): `trace replay` judges
//! a run by the limits its trace recorded, and a flag given overrides one of them.

use std::sync::OnceLock;

use clap::parser::ValueSource;
use clap::ArgMatches;

static MATCHES: OnceLock<ArgMatches> = OnceLock::new();

/// Keeps the parsed command line for [`given`] (once, at the start).
pub fn remember(matches: ArgMatches) {
    let _ = MATCHES.set(matches);
}

/// Of the flags `ids` (clap's ids: the field names) of the subcommand at `path` (`["trace",
/// "replay"]`), those given on the command line.
pub fn given<'a>(path: &[&str], ids: &[&'a str]) -> Vec<&'a str> {
    let Some(mut matches) = MATCHES.get() else {
        return Vec::new();
    };
    for name in path {
        match matches.subcommand_matches(name) {
            Some(sub) => matches = sub,
            None => return Vec::new(),
        }
    }
    ids.iter()
        .copied()
        .filter(|id| {
            matches!(
                matches
                    .try_get_raw(id)
                    .ok()
                    .flatten()
                    .and(matches.value_source(id)),
                Some(ValueSource::CommandLine)
            )
        })
        .collect()
}
