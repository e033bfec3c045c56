//! `kvctl` with the bundled schemas; see the library (`keyplane_cli::Kvctl`) to build one
//! with a team's own schemas.

fn main() -> std::process::ExitCode {
    keyplane_cli::Kvctl::new().run()
}
