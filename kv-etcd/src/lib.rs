//! EtcdStore.
#![deny(missing_docs)]
