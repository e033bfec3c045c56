//! [`TemplateInfo`] and [`FieldInfo`]: what the schema checker and `kvctl schema` know of a
//! template and its variables.

use super::segment::{Segment, SegmentError, SegmentSpec, Separator};
use super::template::Template;
use std::fmt;

/// One variable of a template: its name and what its type accepts.
#[derive(Clone)]
pub struct FieldInfo {
    /// The variable's name.
    pub name: &'static str,
    /// The Rust type's name (as a manifest names it, for a field known only from one).
    pub type_name: &'static str,
    /// The segment rule in words ([`Segment::describe`]).
    pub rule: String,
    /// Whether encodings sort like values ([`Segment::ORDERED`]).
    pub ordered: bool,
    /// The segment rule as data ([`Segment::spec`]), what a manifest records.
    pub spec: SegmentSpec,
    /// How the rule is applied: by the type itself when there is one, else by the spec.
    checks: FieldChecks,
}

/// The rule a [`FieldInfo`] applies: a Rust type's own functions, or only its spec (a field
/// known from a manifest has no type, so no function to point at).
#[derive(Clone)]
enum FieldChecks {
    /// [`Segment::can_produce`] and [`Segment::decode`] of the type.
    Typed {
        can_produce: fn(&str, Separator) -> bool,
        decode: fn(&str, Separator) -> Result<(), SegmentError>,
    },
    /// [`SegmentSpec::check`] of the field's spec.
    Spec,
}

/// `T::decode`, the value dropped: whether `raw` is a segment of `T`.
fn decode_ok<T: Segment>(raw: &str, sep: Separator) -> Result<(), SegmentError> {
    T::decode(raw, sep).map(drop)
}

impl FieldInfo {
    /// The description of variable `name` of type `T`.
    pub fn of<T: Segment>(name: &'static str) -> Self {
        FieldInfo {
            name,
            type_name: std::any::type_name::<T>(),
            rule: T::describe(),
            ordered: T::ORDERED,
            spec: T::spec(),
            checks: FieldChecks::Typed {
                can_produce: T::can_produce,
                decode: decode_ok::<T>,
            },
        }
    }

    /// The description of variable `name` known only from a manifest: its type's name and
    /// rule as data. Its checks are [`SegmentSpec::check`], which for a
    /// [`SegmentSpec::Custom`] rule accepts more than the type would.
    pub fn from_spec(name: &'static str, type_name: &'static str, spec: SegmentSpec) -> Self {
        FieldInfo {
            name,
            type_name,
            rule: spec.describe(),
            ordered: spec.ordered(),
            spec,
            checks: FieldChecks::Spec,
        }
    }

    /// Whether some value of the field's type encodes to exactly `literal`
    /// ([`Segment::can_produce`]); the schema checker uses it to find a variable that can
    /// produce a sibling template's literal.
    pub fn can_produce(&self, literal: &str, sep: Separator) -> bool {
        match &self.checks {
            FieldChecks::Typed { can_produce, .. } => can_produce(literal, sep),
            FieldChecks::Spec => self.spec.check(literal, sep).is_ok(),
        }
    }

    /// Checks a raw segment of a key separated by `sep`: the type's [`Segment::decode`], or
    /// the spec's check for a field known only from a manifest.
    ///
    /// # Errors
    /// [`SegmentError`] naming the rule `raw` breaks.
    pub fn check(&self, raw: &str, sep: Separator) -> Result<(), SegmentError> {
        match &self.checks {
            FieldChecks::Typed { decode, .. } => decode(raw, sep),
            FieldChecks::Spec => self.spec.check(raw, sep),
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
            .field("spec", &self.spec)
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
    pub kind: Option<crate::CollectionKind>,
    /// Templates (as written) allowed to nest under keys of this template.
    pub directory_of: &'static [&'static str],
}

impl TemplateInfo {
    /// The [`FieldInfo`] of variable `name`.
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }
}
