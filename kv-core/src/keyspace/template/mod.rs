//! Templates: a key layout parsed from its text, and raw keys matched against it.
//!
//! [`Template`] is the parsed layout (separator, leading separator, literals, variables, hash
//! tag), made of [`TemplateSegment`]s and their [`Part`]s; parsing builds it and matching
//! captures the variables' raw text from a key.

mod layout;
mod matcher;
mod parse;
mod part;

pub use layout::{Template, TemplateError, TemplateKind};
pub use part::{Part, TemplateSegment};
