//! Templates that must compile do, and their keys encode as the layouts say: the seed
//! systems' templates (escaped braces, a hash tag, a directory with keys under it) and the
//! read-only legacy layouts. (The templates that must not compile are in
//! `derive_compile_fail.rs`.)

#[path = "derive_pass/read_only_templates.rs"]
mod read_only_templates;
#[path = "derive_pass/seed_templates.rs"]
mod seed_templates;

#[test]
fn the_seed_templates_compile_and_encode() {
    seed_templates::check();
}

#[test]
fn the_read_only_templates_compile_and_encode() {
    read_only_templates::check();
}
