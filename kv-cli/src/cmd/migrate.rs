//! `kvctl migrate list|plan|apply|verify|finalize|rollback NAME`: the schemas' migrations
//! from the documents' old layouts, run by `keyplane::migrate::Migrator` with its
//! progress kept in the store (`keyplane/migrations/NAME`).

use super::Ctx;
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, outln, print_json};
use keyplane::Store;
use keyplane::migrate::{
    ApplyReport, Conflict, Migration, Migrator, Phase, Unmapped, VerifyReport,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// What to do with a migration.
#[derive(clap::Subcommand)]
pub(crate) enum Action {
    /// List the migrations and where each stands in this store.
    List,
    /// Show what `apply` would do (writes nothing).
    Plan {
        /// The migration's name.
        name: String,
    },
    /// Migrate (resumable; a second run writes nothing).
    Apply {
        /// The migration's name.
        name: String,
        /// Stop after this many transactions (a later `apply` resumes).
        #[arg(long)]
        batches: Option<usize>,
        /// Old items read per transaction, at most (128 by default).
        #[arg(long)]
        batch_size: Option<usize>,
    },
    /// Check every old item's twins (exit code 6 when something is missing or differs).
    Verify {
        /// The migration's name.
        name: String,
    },
    /// Delete the old items whose twins verify (no rollback after this).
    Finalize {
        /// The migration's name.
        name: String,
    },
    /// Delete what the migration created (unless changed since) and forget its progress.
    Rollback {
        /// The migration's name.
        name: String,
    },
}

/// The migrations kvctl knows, with what each moves.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        keyplane_schemas::tenant::TenantLegacy::NAME,
        "tenant: the old jxt//... layout of the document's §3 (the FTP array split per user)",
    ),
    (
        keyplane_schemas::nxc::NxcLegacy::NAME,
        "nxc: nexus:config:group|index|{provider}:{realm} into the map, marker and instance layers",
    ),
];

fn migration(name: &str) -> CliResult<Arc<dyn Migration>> {
    match name {
        keyplane_schemas::tenant::TenantLegacy::NAME => {
            Ok(Arc::new(keyplane_schemas::tenant::TenantLegacy))
        }
        keyplane_schemas::nxc::NxcLegacy::NAME => {
            Ok(Arc::new(keyplane_schemas::nxc::NxcLegacy::new()))
        }
        other => Err(CliError::invalid(format!(
            "no migration named {other:?}; `kvctl migrate list` names them"
        ))),
    }
}

/// The store, with every source prefix of `migration` reconciled on Redis (so that keys
/// other programs wrote are scanned).
async fn store_for(ctx: &Ctx, migration: &dyn Migration) -> CliResult<Arc<dyn Store>> {
    let mut store = None;
    for source in migration.sources() {
        let prefix = String::from_utf8_lossy(&source).into_owned();
        store = Some(ctx.store_for_listing(&prefix).await?);
    }
    match store {
        Some(store) => Ok(store),
        None => ctx.store().await,
    }
}

pub(crate) async fn run(ctx: &Ctx, action: Action) -> CliResult<()> {
    let name = match &action {
        Action::List => return list(ctx).await,
        Action::Plan { name }
        | Action::Apply { name, .. }
        | Action::Verify { name }
        | Action::Finalize { name }
        | Action::Rollback { name } => name.clone(),
    };
    let migration = migration(&name)?;
    let store = store_for(ctx, &*migration).await?;
    let migrator = Migrator::new(store, migration);
    match action {
        Action::List => Ok(()),
        Action::Plan { .. } => {
            let report = migrator.plan().await?;
            show_apply(ctx, &name, "plan", &report);
            Ok(())
        }
        Action::Apply {
            batches,
            batch_size,
            ..
        } => {
            let migrator = match batch_size {
                Some(n) => migrator.page_size(n),
                None => migrator,
            };
            apply(ctx, &name, &migrator, batches).await
        }
        Action::Verify { .. } => {
            let report = migrator.verify().await?;
            show_verify(ctx, &name, &report);
            if report.is_clean() {
                Ok(())
            } else {
                Err(CliError::new(
                    code::FOUND,
                    format!("{name}: the migration does not verify"),
                ))
            }
        }
        Action::Finalize { .. } => {
            let report = migrator.finalize().await?;
            let done = format!("{name}: deleted {} old items", report.deleted);
            show_deletions(ctx, &name, &done, "kept", report.deleted, &report.kept);
            Ok(())
        }
        Action::Rollback { .. } => {
            let report = migrator.rollback().await?;
            let done = format!("{name}: rolled back, deleted {} new items", report.deleted);
            let kept = "kept (changed since)";
            show_deletions(ctx, &name, &done, kept, report.deleted, &report.kept);
            Ok(())
        }
    }
}

async fn list(ctx: &Ctx) -> CliResult<()> {
    let store = ctx.store().await?;
    let mut rows = Vec::new();
    for (name, what) in MIGRATIONS {
        let migration = migration(name)?;
        let declared = migration.rows();
        let migrator = Migrator::new(store.clone(), migration);
        rows.push((name, what, migrator.phase().await?, declared));
    }
    match ctx.format {
        Format::Json => print_json(&Value::Array(
            rows.iter()
                .map(|(name, what, phase, declared)| {
                    let declared: Vec<Value> = declared
                        .iter()
                        .map(|r| json!({ "old": r.old, "new": r.new, "change": r.change }))
                        .collect();
                    json!({
                        "name": name, "moves": what, "phase": phase_name(*phase),
                        "rows": declared,
                    })
                })
                .collect(),
        )),
        Format::Table => {
            for (name, what, phase, _) in rows {
                outln!("{name:<12} {:<10} {what}", phase_name(phase));
            }
        }
    }
    Ok(())
}

/// Applies batch by batch, so that a terminal shows progress.
async fn apply(
    ctx: &Ctx,
    name: &str,
    migrator: &Migrator,
    batches: Option<usize>,
) -> CliResult<()> {
    let bar = crate::output::progress("old items migrated");
    let step = migrator.clone().max_batches(1);
    let mut total = ApplyReport::default();
    loop {
        if batches.is_some_and(|n| total.batches >= n) {
            break;
        }
        let report = step.apply().await?;
        bar.inc(report.old as u64);
        total.old += report.old;
        total.created += report.created;
        total.already += report.already;
        total.batches += report.batches;
        total.conflicts.extend(report.conflicts);
        total.unmappable.extend(report.unmappable);
        if report.complete {
            total.complete = true;
            break;
        }
    }
    bar.finish_and_clear();
    show_apply(ctx, name, "apply", &total);
    Ok(())
}

fn show_apply(ctx: &Ctx, name: &str, what: &str, report: &ApplyReport) {
    match ctx.format {
        Format::Json => print_json(&json!({
            "migration": name,
            "old": report.old,
            "created": report.created,
            "already": report.already,
            "batches": report.batches,
            "complete": report.complete,
            "conflicts": conflicts(&report.conflicts),
            "unmappable": unmapped(&report.unmappable),
        })),
        Format::Table => {
            let verb = if what == "plan" {
                "would create"
            } else {
                "created"
            };
            if what == "apply" && report.created == 0 && report.batches == 0 {
                outln!("{name}: nothing to do");
            } else {
                outln!(
                    "{name}: {} old items, {verb} {} new items, {} already in place{}",
                    report.old,
                    report.created,
                    report.already,
                    if report.complete {
                        ""
                    } else {
                        " (stopped early: apply again to resume)"
                    }
                );
            }
            for c in &report.conflicts {
                outln!(
                    "  conflict: {} holds newer data (from {}), kept",
                    text(&c.new),
                    text(&c.old)
                );
            }
            for u in &report.unmappable {
                outln!("  cannot map {}: {}", text(&u.key), u.reason);
            }
        }
    }
}

/// What finalize or rollback deleted and kept.
fn show_deletions(
    ctx: &Ctx,
    name: &str,
    done: &str,
    kept_label: &str,
    deleted: usize,
    kept: &[Vec<u8>],
) {
    match ctx.format {
        Format::Json => print_json(&json!({
            "migration": name,
            "deleted": deleted,
            "kept": keys(kept),
        })),
        Format::Table => {
            outln!("{done}");
            for key in kept {
                outln!("  {kept_label} {}", text(key));
            }
        }
    }
}

fn show_verify(ctx: &Ctx, name: &str, report: &VerifyReport) {
    match ctx.format {
        Format::Json => print_json(&json!({
            "migration": name,
            "checked": report.checked,
            "clean": report.is_clean(),
            "missing": conflicts(&report.missing),
            "differs": conflicts(&report.differs),
            "unmappable": unmapped(&report.unmappable),
        })),
        Format::Table => {
            outln!("{name}: {} new items checked", report.checked);
            for c in &report.missing {
                outln!("  missing {} (from {})", text(&c.new), text(&c.old));
            }
            for c in &report.differs {
                outln!("  differs {} (from {})", text(&c.new), text(&c.old));
            }
            for u in &report.unmappable {
                outln!("  cannot map {}: {}", text(&u.key), u.reason);
            }
        }
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::New => "new",
        Phase::Applying => "applying",
        Phase::Applied => "applied",
        Phase::Finalized => "finalized",
    }
}

fn text(key: &[u8]) -> String {
    keyplane::raw::escape_bytes(key).to_string()
}

fn keys(keys: &[Vec<u8>]) -> Value {
    keys.iter().map(|k| Value::String(text(k))).collect()
}

fn conflicts(list: &[Conflict]) -> Value {
    list.iter()
        .map(|c| json!({ "old": text(&c.old), "new": text(&c.new) }))
        .collect()
}

fn unmapped(list: &[Unmapped]) -> Value {
    list.iter()
        .map(|u| json!({ "key": text(&u.key), "reason": u.reason }))
        .collect()
}
