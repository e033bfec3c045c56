//! `kvctl` never panics on any arguments: random argument vectors built from its commands,
//! flags, addresses and arbitrary text end with one of its exit codes and no panic message.

mod common;

use common::kvctl;
use std::time::Duration;

const WORDS: &[&str] = &[
    "get",
    "put",
    "ls",
    "rm",
    "parse",
    "schema",
    "export",
    "import",
    "lint",
    "migrate",
    "balancer",
    "reencrypt",
    "demo",
    "completions",
    "man",
    "help",
    "--raw",
    "--rev",
    "-1",
    "0",
    "99999999999999999999",
    "-o",
    "json",
    "table",
    "--prefix",
    "--create",
    "--if-mod-revision",
    "--lease-ttl",
    "30s",
    "0s",
    "tenant.meta",
    "id=1",
    "id=",
    "id=-1",
    "nxc.pool",
    "provider=",
    "jxt/tenants/1/meta",
    "jxt//",
    "nxc:map:a:b:c",
    "",
    "💥",
    "%",
    "{",
    "}",
    "-",
    "--keyring",
    "/nonexistent",
    "--timeout",
    "1e400",
    "plan",
    "apply",
    "tenant-legacy",
    "load",
    "--all",
    "--fix",
    "--overwrite",
    "--leases",
    "bash",
    "--accept-unbound",
    "registry",
    "-v",
];

/// SplitMix64, so that a failing vector can be replayed from its seed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn arguments(seed: u64) -> Vec<String> {
    let mut state = seed;
    let count = next(&mut state) % 6;
    (0..count)
        .map(|_| {
            let pick = next(&mut state);
            if pick.is_multiple_of(5) {
                // Arbitrary printable text (a NUL cannot be passed as an argument).
                (0..pick % 9)
                    .map(|i| char::from(32 + ((pick >> (i * 7)) % 95) as u8))
                    .collect()
            } else {
                WORDS[(pick % WORDS.len() as u64) as usize].to_owned()
            }
        })
        .collect()
}

#[test]
fn kvctl_answers_any_arguments_with_an_exit_code() {
    for seed in 0..300u64 {
        let args = arguments(seed);
        let out = kvctl("mem://")
            .args(&args)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=6)),
            "seed {seed}: {args:?} ended with {code:?}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked"),
            "seed {seed}: {args:?} panicked: {stderr}"
        );
    }
}
