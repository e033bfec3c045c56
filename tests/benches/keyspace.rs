//! Typed keys against hand-written strings, in the same run: building a 4-segment key
//! (`tenants/{tenant}/services/{id}`) into a reused buffer against `format!`, and parsing it
//! with full validation against a naive `split('/')` parser.

use criterion::{Criterion, criterion_group, criterion_main};
use keyplane_core::keyspace::{Key, Text};
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

fn build(c: &mut Criterion) {
    let key = ServiceKey {
        tenant: TenantCode::new("acme_prod").unwrap(),
        id: 1_234_567,
    };
    let (tenant, id) = ("acme_prod".to_owned(), 1_234_567u64);
    let mut group = c.benchmark_group("keyspace/build");
    group.bench_function("format!", |b| {
        b.iter(|| format!("tenants/{}/services/{}", black_box(&tenant), black_box(id)))
    });
    let mut buffer = String::with_capacity(64);
    group.bench_function("typed write (reused buffer)", |b| {
        b.iter(|| {
            buffer.clear();
            black_box(&key).write(&mut buffer);
            black_box(buffer.len())
        })
    });
    group.bench_function("typed encode (new String)", |b| {
        b.iter(|| black_box(&key).encode())
    });
    group.finish();
}

fn parse(c: &mut Criterion) {
    let raw = "tenants/acme_prod/services/1234567";
    assert_eq!(naive_parse(raw), Some(("acme_prod".to_owned(), 1_234_567)));
    assert_eq!(ServiceKey::parse(raw).unwrap().id, 1_234_567);
    let mut group = c.benchmark_group("keyspace/parse");
    group.bench_function("naive split('/')", |b| {
        b.iter(|| naive_parse(black_box(raw)))
    });
    group.bench_function("typed parse (validated)", |b| {
        b.iter(|| ServiceKey::parse(black_box(raw)))
    });
    group.finish();
}

criterion_group!(benches, build, parse);
criterion_main!(benches);
