//! The `toolhost` command: a thin layer over the library. Parses arguments,
//! runs the command, maps the outcome to an exit status (0 ok, 1 the tool
//! failed, 2 usage or load error).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
