//! The `headroom-memory` command of the Python wheel: the same tool as `headroom`
//! ([`headroom_cli::main`]) under a name that is the wheel's alone, so that another package's
//! `headroom` command (headroom-ai installs one into the same `bin/`) can neither replace nor,
//! when it is uninstalled, delete the binary the Python package runs. Built only with the
//! `wheel-command` feature, which `python/pyproject.toml` turns on.

use std::process::ExitCode;

fn main() -> ExitCode {
    headroom_cli::main()
}
