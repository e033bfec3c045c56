//! Template mistakes are compile errors that point at the template or the field (the seed
//! layouts compile: `derive_pass.rs`). The expected messages are in `tests/ui/*.stderr`
//! (regenerate with `TRYBUILD=overwrite cargo test -p keyplane-core --test derive_compile_fail`).

#[test]
fn template_checks() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail_*.rs");
}
