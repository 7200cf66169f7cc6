use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match catalock::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Usage errors are "could not decide" (2), like diff(1); --help and --version are 0.
            return ExitCode::from(if e.use_stderr() {
                catalock::EXIT_TROUBLE
            } else {
                catalock::EXIT_SAME
            });
        }
    };
    // anstream drops colour when the stream is not a terminal, or NO_COLOR is set, and keeps
    // it when CLICOLOR_FORCE is; files written with --format text=PATH never get any.
    let code = catalock::app::run(
        &cli,
        &mut anstream::stdout().lock(),
        &mut anstream::stderr().lock(),
    );
    ExitCode::from(code)
}
