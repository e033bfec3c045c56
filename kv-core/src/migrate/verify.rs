//! [`Migrator::verify`]: every old item has its new twins.

use super::state::*;
use super::*;
use crate::Result;

impl Migrator {
    /// Checks that every old item has its twins with the expected contents. Writes
    /// nothing.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        let mut cursor = Cursor::start();
        while let Some(batch) = self.scan(&mut cursor).await? {
            for read in &batch {
                let Some(twins) = self.twins(read, &mut report.unmappable).await? else {
                    continue;
                };
                for twin in twins {
                    report.checked += 1;
                    let pair = Conflict {
                        old: read.item.key.clone(),
                        new: twin.key.clone(),
                    };
                    match self.read_item(&twin.key, twin.value.kind()).await? {
                        None => report.missing.push(pair),
                        Some((value, _)) if value != twin.value => report.differs.push(pair),
                        Some(_) => {}
                    }
                }
            }
        }
        Ok(report)
    }
}
