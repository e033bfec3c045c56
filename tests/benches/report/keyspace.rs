//! Typed keys against hand-written strings: building `tenants/{tenant}/services/{id}` into a
//! reused buffer against `format!`, and a validated typed parse against a naive
//! `split('/')` parser.

use crate::measure::{Budget, Goal, Measure, Report, paired_ns};
use keyplane_core::keyspace::{Key, Text};
use std::fmt::Write;
use std::hint::black_box;

keyplane_core::text_segment!(
    /// A tenant code.
    pub TenantCode, charset = "[a-z0-9_-]", max_len = 64, policy = Reject
);

/// `tenants/{tenant}/services/{id}`
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "tenants/{tenant}/services/{id}", value = Text)]
struct ServiceKey {
    tenant: TenantCode,
    id: u64,
}

/// The naive parser a call site would write: split, compare literals, parse the number.
fn naive_parse(raw: &str) -> Option<(String, u64)> {
    let parts: Vec<&str> = raw.split('/').collect();
    if parts.len() != 4 || parts[0] != "tenants" || parts[2] != "services" {
        return None;
    }
    Some((parts[1].to_owned(), parts[3].parse().ok()?))
}

pub fn run(budget: Budget, report: &mut Report) {
    const BATCH: usize = 20_000;
    let key = ServiceKey {
        tenant: TenantCode::new("acme_prod").unwrap(),
        id: 1_234_567,
    };
    let tenant = "acme_prod".to_owned();
    let mut typed = String::with_capacity(64);
    let mut formatted = String::with_capacity(64);
    let pair = paired_ns(
        budget,
        BATCH,
        |i| {
            typed.clear();
            let key = ServiceKey {
                tenant: key.tenant.clone(),
                id: key.id + i,
            };
            black_box(&key).write(&mut typed);
            black_box(typed.len());
        },
        |i| {
            formatted.clear();
            let tenant = black_box(&tenant).clone();
            write!(
                formatted,
                "tenants/{}/services/{}",
                tenant,
                black_box(1_234_567 + i)
            )
            .unwrap();
            black_box(formatted.len());
        },
    );
    report.add(
        Measure::paired(
            "keyspace: typed build vs format!",
            pair,
            "ns/key",
            Goal::AtMost(1.0),
        )
        .note("both write into a reused String; both clone the tenant text"),
    );

    let raw_key = "tenants/acme_prod/services/1234567";
    assert_eq!(ServiceKey::parse(raw_key).unwrap().id, 1_234_567);
    assert!(naive_parse(raw_key).is_some());
    let pair = paired_ns(
        budget,
        BATCH,
        |_| {
            black_box(ServiceKey::parse(black_box(raw_key)).is_ok());
        },
        |_| {
            black_box(naive_parse(black_box(raw_key)).is_some());
        },
    );
    report.add(Measure::paired(
        "keyspace: typed validated parse vs naive split",
        pair,
        "ns/key",
        Goal::AtMost(2.0),
    ));
}
