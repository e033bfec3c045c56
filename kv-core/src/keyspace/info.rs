//! [`TemplateInfo`] and [`FieldInfo`]: what the schema checker and `kvctl schema` know of a
//! template and its variables.

use super::segment::{Segment, Separator};
use super::template::Template;
use std::fmt;

/// One variable of a template: its name and what its type accepts.
#[derive(Clone)]
pub struct FieldInfo {
    /// The variable's name.
    pub name: &'static str,
    /// The Rust type's name.
    pub type_name: &'static str,
    /// The segment rule in words ([`Segment::describe`]).
    pub rule: String,
    /// Whether encodings sort like values ([`Segment::ORDERED`]).
    pub ordered: bool,
    /// [`Segment::can_produce`] of the type.
    pub can_produce: fn(&str, Separator) -> bool,
}

impl FieldInfo {
    /// The description of variable `name` of type `T`.
    pub fn of<T: Segment>(name: &'static str) -> Self {
        FieldInfo {
            name,
            type_name: std::any::type_name::<T>(),
            rule: T::describe(),
            ordered: T::ORDERED,
            can_produce: T::can_produce,
        }
    }
}

impl fmt::Debug for FieldInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FieldInfo")
            .field("name", &self.name)
            .field("type_name", &self.type_name)
            .field("rule", &self.rule)
            .field("ordered", &self.ordered)
            .finish_non_exhaustive()
    }
}

/// What the schema checker and `kvctl schema` know about one template.
#[derive(Debug, Clone)]
pub struct TemplateInfo {
    /// The Rust type of the key.
    pub type_name: &'static str,
    /// The parsed template.
    pub template: &'static Template,
    /// The variables, in template order.
    pub fields: Vec<FieldInfo>,
    /// The Rust type of the value codec (of the members, for a collection key).
    pub value_type: &'static str,
    /// Whether the value codec seals what it stores ([`Codec::ENCRYPTED`](super::Codec::ENCRYPTED)).
    pub encrypted: bool,
    /// The value (of the members, for a collection key): its format, JSON Schema and check.
    pub value: super::ValueInfo,
    /// What the key holds: `None` for a plain value, else the kind of collection.
    pub kind: Option<crate::collections::CollectionKind>,
    /// Templates (as written) allowed to nest under keys of this template.
    pub directory_of: &'static [&'static str],
}

impl TemplateInfo {
    /// The [`FieldInfo`] of variable `name`.
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }
}
