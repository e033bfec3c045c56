//! Segments: the typed pieces a key is made of, and their rules as data.
//!
//! The [`Segment`] trait and its vocabulary ([`Separator`], [`SegmentError`]), the built-in
//! segment types (integers, [`Padded`], [`uuid::Uuid`], [`HostPort`], text newtypes under a
//! [`TextRule`] and its [`Charset`]), the percent-escaping text segments share, and
//! [`SegmentSpec`], a segment type's rule as data that tools check raw text against.

mod charset;
mod escape;
mod hostport;
mod int;
mod padded;
mod spec;
mod spec_check;
mod text;
mod traits;
mod uuid;

pub use charset::Charset;
pub use escape::{escape_into, path_escape, should_escape, unescape_strict};
pub use hostport::{Host, HostPort};
pub use padded::{Padded, PaddedInt};
pub use spec::SegmentSpec;
pub use text::{TextPolicy, TextRule, TextSegment};
pub use traits::{EncodeSegment, Segment, SegmentError, Separator, check_not_reserved};
