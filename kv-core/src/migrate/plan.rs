//! [`Migrator::plan`]: the dry run.

use super::state::*;
use super::*;
use crate::Result;

impl Migrator {
    /// The dry run: what `apply` would do from the current checkpoint. Writes nothing.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn plan(&self) -> Result<ApplyReport> {
        let (state, _) = self.state().await?;
        let mut report = ApplyReport::default();
        let mut cursor = Cursor::from(&state)?;
        while let Some(batch) = self.scan(&mut cursor).await? {
            for read in &batch {
                for target in self.targets(read, &mut report).await? {
                    match target {
                        Target::Create(_) => report.created += 1,
                        Target::Already => report.already += 1,
                        Target::Conflict(c) => report.conflicts.push(c),
                    }
                }
            }
        }
        report.complete = true;
        Ok(report)
    }
}
