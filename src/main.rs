//! The `headroom` command: the library's [`headroom_cli::main`].

use std::process::ExitCode;

fn main() -> ExitCode {
    headroom_cli::main()
}
