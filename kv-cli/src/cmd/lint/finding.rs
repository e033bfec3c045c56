//! What lint reports: a [`Finding`] per broken rule, with the [`Repair`] that is safe to make.

/// One thing lint found.
pub(super) struct Finding {
    pub(super) key: String,
    pub(super) rule: &'static str,
    pub(super) message: String,
    pub(super) fix: String,
    pub(super) repair: Option<Repair>,
    pub(super) fixed: bool,
}

/// A repair that is safe to make: it changes only what lint read, or adds what is missing.
pub(super) enum Repair {
    /// Delete the key if it is unchanged since read.
    Delete { key: Vec<u8>, mod_revision: i64 },
    /// Add a member to a set.
    SetAdd { key: Vec<u8>, member: Vec<u8> },
}

impl Finding {
    pub(super) fn new(
        key: &str,
        rule: &'static str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Finding {
            key: key.to_owned(),
            rule,
            message: message.into(),
            fix: fix.into(),
            repair: None,
            fixed: false,
        }
    }

    pub(super) fn with_repair(mut self, repair: Repair) -> Self {
        self.repair = Some(repair);
        self
    }
}
