//! [`ReaderOptions`]: how the crate's readers keep their mirrors.

use keyplane_core::mirror::MirrorBuilder;
use std::time::Duration;

/// How a reader of this crate ([`TenantProvider`](crate::tenant::TenantProvider),
/// [`ResolverCache`](crate::nxc::ResolverCache)) keeps its [`Mirror`](keyplane_core::mirror::Mirror):
/// the period of its full resync and the keys per page of its listings. What is not set is
/// the reader's default (its documented resync period; 1000 keys per page).
///
/// ```
/// use keyplane_core::keyspace::TypedStore;
/// use keyplane_schemas::ReaderOptions;
/// use keyplane_schemas::tenant::TenantProvider;
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let options = ReaderOptions::default()
///     .resync_every(Duration::from_secs(600))
///     .page_size(200);
/// let provider = TenantProvider::start_with(&typed, options).await?;
/// assert_eq!(provider.health().relists, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderOptions {
    resync_every: Option<Duration>,
    page_size: Option<usize>,
}

impl ReaderOptions {
    /// Lists the whole range again every `period` and repairs any difference
    /// ([`MirrorBuilder::resync_every`]).
    pub fn resync_every(mut self, period: Duration) -> Self {
        self.resync_every = Some(period);
        self
    }

    /// Keys per page of every listing: the first, the relists after a watch that could not
    /// resume, the resyncs ([`MirrorBuilder::page_size`]; at least 1).
    pub fn page_size(mut self, keys: usize) -> Self {
        self.page_size = Some(keys);
        self
    }

    /// `builder` with these options, `default_resync` when no resync period is set.
    pub(crate) fn apply<K, V>(
        self,
        builder: MirrorBuilder<K, V>,
        default_resync: Duration,
    ) -> MirrorBuilder<K, V>
    where
        K: Clone + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let builder = builder.resync_every(self.resync_every.unwrap_or(default_resync));
        match self.page_size {
            Some(keys) => builder.page_size(keys),
            None => builder,
        }
    }
}
