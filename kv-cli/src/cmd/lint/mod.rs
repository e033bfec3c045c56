//! `kvctl lint [PREFIX] [--fix]`: scans a live store against the schema catalog and reports
//! every key that breaks it, with the rule and how to fix it; `--fix` repairs the findings
//! that are safe to repair.

mod balancer;
mod contents;
mod finding;

use super::Ctx;
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, outln, print_json};
use crate::values;
use contents::{fields, members};
use finding::{Finding, Repair};
use keyplane::keyspace::ParsedKey;
use keyplane::keyspace::Separator;
use keyplane::{
    CollectionKind, CollectionOp, CollectionResult, Compare, CompareOp, Entry, RangeOptions, Store,
    Txn, TxnOp,
};
use serde_json::{Value, json};

pub(crate) async fn run(ctx: &Ctx, prefix: Option<&str>, fix: bool) -> CliResult<()> {
    let prefix = prefix.unwrap_or("");
    let store = ctx.store_for_listing(prefix).await?;
    let mut findings = Vec::new();
    let bar = crate::output::progress("keys linted");
    let mut opts = RangeOptions::prefix(prefix.as_bytes())
        .with_collections()
        .limit(500);
    loop {
        let page = store.range(opts.clone()).await?;
        for entry in &page.entries {
            lint_plain(&*store, entry, &mut findings).await?;
        }
        for c in &page.collections {
            lint_collection(
                &*store,
                &String::from_utf8_lossy(&c.key),
                c.kind,
                &mut findings,
            )
            .await?;
        }
        bar.inc((page.entries.len() + page.collections.len()) as u64);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    bar.finish_and_clear();
    if fix {
        for finding in &mut findings {
            if let Some(repair) = &finding.repair {
                finding.fixed = apply(&*store, repair).await?;
            }
        }
    }
    let open = findings.iter().filter(|f| !f.fixed).count();
    match ctx.format {
        Format::Json => print_json(&Value::Array(
            findings
                .iter()
                .map(|f| {
                    json!({
                        "key": f.key, "rule": f.rule, "message": f.message, "fix": f.fix,
                        "fixable": f.repair.is_some(), "fixed": f.fixed,
                    })
                })
                .collect(),
        )),
        Format::Table => {
            for f in &findings {
                let state = if f.fixed { " (fixed)" } else { "" };
                outln!(
                    "{}\n  {}: {}{state}\n  fix: {}",
                    f.key,
                    f.rule,
                    f.message,
                    f.fix
                );
            }
            outln!(
                "{} findings, {} fixed, {open} left",
                findings.len(),
                findings.len() - open
            );
        }
    }
    if open > 0 {
        return Err(CliError::new(
            code::FOUND,
            format!("lint: {open} findings left"),
        ));
    }
    Ok(())
}

/// Makes a repair; `false` when what it would change changed since lint read it.
async fn apply(store: &dyn Store, repair: &Repair) -> CliResult<bool> {
    let txn = match repair {
        Repair::Delete { key, mod_revision } => Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, *mod_revision)])
            .and_then([TxnOp::delete(key)]),
        Repair::SetAdd { key, member } => {
            Txn::new().and_then([TxnOp::Collection(CollectionOp::SetAdd {
                key: key.clone(),
                member: member.clone(),
            })])
        }
    };
    Ok(store.txn(txn).await?.succeeded)
}

fn field<'p>(parsed: &'p ParsedKey, name: &str) -> &'p str {
    parsed
        .fields
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The key parsed by the catalog, or the finding that it matches no template.
fn parse(key: &str, findings: &mut Vec<Finding>) -> Option<ParsedKey> {
    match crate::catalog::parse_any(key) {
        Ok(parsed) if parsed.read_only => {
            // The migration of an old layout has the schema's name.
            findings.push(Finding::new(
                key,
                "legacy-layout",
                format!(
                    "a key of the old layout {} (template {}), which the current layout replaces",
                    parsed.schema, parsed.template
                ),
                format!(
                    "migrate it: `kvctl migrate plan {0}`, then `apply`, `verify` and `finalize`",
                    parsed.schema
                ),
            ));
            None
        }
        Ok(parsed) => Some(parsed),
        Err(reasons) => {
            findings.push(Finding::new(
                key,
                "unknown-key",
                format!("matches no template; {}", super::parse::closest(&reasons)),
                "move it to a key of its template, or delete it if nothing reads it",
            ));
            None
        }
    }
}

async fn lint_plain(
    store: &dyn Store,
    entry: &Entry,
    findings: &mut Vec<Finding>,
) -> CliResult<()> {
    let key = String::from_utf8_lossy(&entry.key).into_owned();
    let Some(parsed) = parse(&key, findings) else {
        return Ok(());
    };
    if let Some(kind) = values::collection_kind(&parsed) {
        findings.push(Finding::new(
            &key,
            "wrong-kind",
            format!(
                "a plain value where `{}` declares a {kind:?}",
                parsed.template
            ),
            "delete it and write the collection through its schema's operations",
        ));
        return Ok(());
    }
    if values::is_encrypted(&parsed) {
        // Encrypted: without the keyring there is nothing to check.
        return Ok(());
    }
    if let Err(e) = values::check(&parsed, &key, &entry.value) {
        let finding = if e.kind() == keyplane::ErrorKind::InvalidValue {
            Finding::new(
                &key,
                "key-value-mismatch",
                e.message().to_owned(),
                "rewrite the value to agree with its key, or move it to the key it names",
            )
        } else {
            Finding::new(
                &key,
                "undecodable-value",
                format!(
                    "the value does not decode as `{}` declares: {}",
                    parsed.template,
                    e.message()
                ),
                "rewrite the value in the template's format (kvctl put checks it)",
            )
        };
        findings.push(finding);
        return Ok(());
    }
    let json: Value = serde_json::from_slice(&entry.value).unwrap_or(Value::Null);
    match parsed.template {
        "jxt/tenants/_index/by-code/{code}" => {
            let tenant = number(&json, "id");
            let meta = meta_of(store, tenant).await?;
            let ok = meta
                .as_ref()
                .is_some_and(|m| m["code"] == field(&parsed, "code"));
            dangling(
                &key,
                entry,
                ok,
                "the tenant it names does not exist or has another code",
                findings,
            );
        }
        "jxt/tenants/_index/by-name/{name}" => {
            let tenant = number(&json, "id");
            let meta = meta_of(store, tenant).await?;
            let name =
                keyplane::keyspace::unescape_strict(field(&parsed, "name"), Separator::Slash);
            let ok = meta
                .as_ref()
                .is_some_and(|m| name.as_deref().is_ok_and(|n| m["name"] == n));
            dangling(
                &key,
                entry,
                ok,
                "the tenant it names does not exist or has another name",
                findings,
            );
        }
        "jxt/tenants/_index/ftp-user/{username}" => {
            let tenant = number(&json, "tenantId");
            let user = format!("jxt/tenants/{tenant}/ftp/{}", field(&parsed, "username"));
            let ok = store.get(user.as_bytes()).await?.is_some();
            dangling(
                &key,
                entry,
                ok,
                "the tenant it names has no such FTP user",
                findings,
            );
        }
        "jxt/tenants/_index/host/{host}" => {
            let tenant = number(&json, "tenantId");
            let host =
                keyplane::keyspace::unescape_strict(field(&parsed, "host"), Separator::Slash)
                    .unwrap_or_default();
            let ok = tenant_domains(store, tenant).await?.contains(&host);
            dangling(
                &key,
                entry,
                ok,
                "the tenant it names has no such domain",
                findings,
            );
        }
        "nxc:map:{realm}:{provider}:default" => {
            let map = key.trim_end_matches(":default").as_bytes().to_vec();
            let member = entry.value.clone();
            let contains = store
                .collection(CollectionOp::SetContains { key: map, member })
                .await?;
            if contains != CollectionResult::Contains(true) {
                findings.push(Finding::new(
                    &key,
                    "default-not-member",
                    format!(
                        "names `{}`, which is not in the realm's map",
                        String::from_utf8_lossy(&entry.value)
                    ),
                    "set_default_profile to a member, or create the profile first",
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

async fn lint_collection(
    store: &dyn Store,
    key: &str,
    kind: CollectionKind,
    findings: &mut Vec<Finding>,
) -> CliResult<()> {
    let Some(parsed) = parse(key, findings) else {
        return Ok(());
    };
    let declared = values::collection_kind(&parsed);
    if declared != Some(kind) {
        let what = declared.map_or_else(|| "a plain value".to_owned(), |d| format!("a {d:?}"));
        findings.push(Finding::new(
            key,
            "wrong-kind",
            format!("a {kind:?} where `{}` declares {what}", parsed.template),
            "delete it and write it as its template declares",
        ));
        return Ok(());
    }
    match parsed.template {
        "nxc:map:{realm}:{provider}" => {
            for member in members(store, key).await? {
                let inst = format!("{key}:{}", String::from_utf8_lossy(&member)).replacen(
                    "nxc:map:",
                    "nxc:inst:",
                    1,
                );
                if fields(store, &inst).await?.is_empty() {
                    findings.push(Finding::new(
                        key,
                        "member-without-instance",
                        format!(
                            "profile `{}` has no instance `{inst}`",
                            String::from_utf8_lossy(&member)
                        ),
                        "create the profile's instance, or delete_profile it",
                    ));
                }
            }
        }
        "group:{id}:keys:active" => {
            balancer::active_list(store, key, field(&parsed, "id"), findings).await?;
        }
        "key:{id}" => balancer::key_object(store, key, findings).await?,
        _ => {}
    }
    Ok(())
}

/// A dangling index entry unless `ok`: safe to delete, as nothing it names exists.
fn dangling(key: &str, entry: &Entry, ok: bool, why: &str, findings: &mut Vec<Finding>) {
    if !ok {
        findings.push(
            Finding::new(
                key,
                "dangling-index",
                why,
                "delete the entry (--fix does, if unchanged)",
            )
            .with_repair(Repair::Delete {
                key: entry.key.clone(),
                mod_revision: entry.mod_revision,
            }),
        );
    }
}

fn number(json: &Value, name: &str) -> u64 {
    json[name].as_u64().unwrap_or_default()
}

async fn meta_of(store: &dyn Store, tenant: u64) -> CliResult<Option<Value>> {
    let key = format!("jxt/tenants/{tenant}/meta");
    Ok(store
        .get(key.as_bytes())
        .await?
        .and_then(|e| serde_json::from_slice(&e.value).ok()))
}

async fn tenant_domains(store: &dyn Store, tenant: u64) -> CliResult<Vec<String>> {
    let mut domains = Vec::new();
    for name in ["primary", "internal"] {
        if let Some(e) = store
            .get(format!("jxt/tenants/{tenant}/domain/{name}").as_bytes())
            .await?
        {
            domains.push(String::from_utf8_lossy(&e.value).into_owned());
        }
    }
    if let Some(e) = store
        .get(format!("jxt/tenants/{tenant}/domain/aliases").as_bytes())
        .await?
    {
        let aliases: Vec<String> = serde_json::from_slice(&e.value).unwrap_or_default();
        domains.extend(aliases);
    }
    Ok(domains)
}
