//! The `#[kv(...)]` attributes of the three derives.

use crate::template::Template;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Token, Type};

/// A checked template with the literal it came from (for error spans).
pub(crate) struct TemplateAttr {
    pub(crate) lit: LitStr,
    pub(crate) template: Template,
}

/// The attributes of `#[derive(Key)]` and `#[derive(Prefix)]`.
#[derive(Default)]
pub(crate) struct KeyAttrs {
    pub(crate) template: Option<TemplateAttr>,
    /// `value = Codec` (keys).
    pub(crate) value: Option<Type>,
    /// `set = Codec`, `hash = Codec` or `list = Codec` instead of `value` (keys): a collection
    /// key, with the codec of its members, field values or items.
    pub(crate) collection: Option<(Ident, Type)>,
    /// `key = KeyType` (prefixes).
    pub(crate) key: Option<Type>,
    pub(crate) hash_tag: Option<LitStr>,
    /// `directory_of(KeyA, KeyB)` (keys).
    pub(crate) directory_of: Vec<Type>,
    /// `no_strategy`: no generated proptest strategy (the type has a hand-written one).
    pub(crate) no_strategy: bool,
    /// `read_only`: an old layout's template, read and migrated but never written; it may
    /// have empty segments (`jxt//tenants/{id}/meta`).
    pub(crate) read_only: bool,
    /// `agrees = path::to::fn` (keys): `fn(&Key, &Value) -> Result<(), String>`, the check
    /// that a value repeats the key's segments it holds.
    pub(crate) agrees: Option<syn::Path>,
}

/// Which derive is reading the attributes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Key,
    Prefix,
}

fn duplicate<T>(slot: &Option<T>, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    match slot {
        Some(_) => Err(meta.error("duplicate attribute")),
        None => Ok(()),
    }
}

impl KeyAttrs {
    /// Reads every `#[kv(...)]` attribute of a key or prefix struct.
    pub(crate) fn parse(attrs: &[Attribute], target: Target) -> syn::Result<Self> {
        let mut out = KeyAttrs::default();
        let mut template: Option<LitStr> = None;
        for attr in attrs.iter().filter(|a| a.path().is_ident("kv")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("template") {
                    duplicate(&template, &meta)?;
                    template = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("read_only") {
                    out.read_only = true;
                } else if meta.path.is_ident("no_strategy") {
                    out.no_strategy = true;
                } else if meta.path.is_ident("hash_tag") {
                    duplicate(&out.hash_tag, &meta)?;
                    out.hash_tag = Some(meta.value()?.parse()?);
                } else if target == Target::Key && meta.path.is_ident("value") {
                    duplicate(&out.value, &meta)?;
                    out.value = Some(meta.value()?.parse()?);
                } else if target == Target::Key
                    && ["set", "hash", "list"]
                        .iter()
                        .any(|kind| meta.path.is_ident(kind))
                {
                    duplicate(&out.collection, &meta)?;
                    let kind = meta
                        .path
                        .get_ident()
                        .cloned()
                        .ok_or_else(|| meta.error("a kind"))?;
                    out.collection = Some((kind, meta.value()?.parse()?));
                } else if target == Target::Key && meta.path.is_ident("agrees") {
                    duplicate(&out.agrees, &meta)?;
                    out.agrees = Some(meta.value()?.parse()?);
                } else if target == Target::Key && meta.path.is_ident("directory_of") {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let types = Punctuated::<Type, Token![,]>::parse_terminated(&content)?;
                    out.directory_of.extend(types);
                } else if target == Target::Prefix && meta.path.is_ident("key") {
                    duplicate(&out.key, &meta)?;
                    out.key = Some(meta.value()?.parse()?);
                } else {
                    let known = match target {
                        Target::Key => {
                            "`template`, `value` (or `set`, `hash`, `list`), `hash_tag`, \
                             `directory_of(..)`, `agrees`, `read_only`, `no_strategy`"
                        }
                        Target::Prefix => {
                            "`template`, `key`, `hash_tag`, `read_only`, `no_strategy`"
                        }
                    };
                    return Err(meta.error(format!("unknown attribute; expected {known}")));
                }
                Ok(())
            })?;
        }
        if let Some(lit) = template {
            let parsed = Template::parse(&lit.value(), out.read_only)
                .map_err(|message| syn::Error::new(lit.span(), message))?;
            out.template = Some(TemplateAttr {
                lit,
                template: parsed,
            });
        }
        if out.read_only
            && let Some(tag) = &out.hash_tag
        {
            return Err(syn::Error::new(
                tag.span(),
                "a read-only template has no hash tag: it describes keys another program wrote",
            ));
        }
        Ok(out)
    }
}

/// The attributes of `#[derive(Keyspace)]`.
#[derive(Default)]
pub(crate) struct KeyspaceAttrs {
    /// `naming = "[a-z0-9_-]"`: the character class every literal follows.
    pub(crate) naming: Option<LitStr>,
    /// `allow_dir(Parent, Child)`: keys of variant `Child` may live under keys of `Parent`.
    pub(crate) allow_dir: Vec<(Ident, Ident)>,
    /// `no_strategy`: no generated proptest strategy.
    pub(crate) no_strategy: bool,
    /// `value_enum = Name`: generate the value enum `Name` and the `KeyspaceValues` impl.
    pub(crate) value_enum: Option<Ident>,
}

impl KeyspaceAttrs {
    /// Reads every `#[kv(...)]` attribute of a keyspace enum.
    pub(crate) fn parse(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut out = KeyspaceAttrs::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("kv")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("naming") {
                    duplicate(&out.naming, &meta)?;
                    let lit: LitStr = meta.value()?.parse()?;
                    check_class(&lit.value())
                        .map_err(|message| syn::Error::new(lit.span(), message))?;
                    out.naming = Some(lit);
                } else if meta.path.is_ident("no_strategy") {
                    out.no_strategy = true;
                } else if meta.path.is_ident("value_enum") {
                    duplicate(&out.value_enum, &meta)?;
                    out.value_enum = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("allow_dir") {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
                    let [parent, child]: [Ident; 2] =
                        names.into_iter().collect::<Vec<_>>().try_into().map_err(|_| {
                            meta.error("`allow_dir` takes two variants: `allow_dir(Parent, Child)`")
                        })?;
                    out.allow_dir.push((parent, child));
                } else {
                    return Err(meta.error(
                        "unknown attribute; expected `naming = \"[..]\"`, `allow_dir(Parent, Child)`, \
                         `value_enum = Name` or `no_strategy`",
                    ));
                }
                Ok(())
            })?;
        }
        Ok(out)
    }
}

/// Reads the `#[kv(...)]` attributes of one keyspace variant: whether it is `raw` (its value
/// variant keeps the stored bytes). Returns the attribute's span too, for the error when the
/// keyspace generates no value enum.
pub(crate) fn variant_raw(attrs: &[Attribute]) -> syn::Result<Option<proc_macro2::Span>> {
    let mut raw = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("kv")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("raw") {
                raw = Some(meta.path.span());
                Ok(())
            } else {
                Err(meta.error("unknown attribute; a keyspace variant takes only `raw`"))
            }
        })?;
    }
    Ok(raw)
}

/// Checks a character class with the grammar of keyplane-core's `Charset`: optional brackets, a
/// leading `^`, ranges `a-z`, `\` escaping the next character.
fn check_class(class: &str) -> Result<(), String> {
    let inner = class
        .strip_prefix('[')
        .and_then(|c| c.strip_suffix(']'))
        .unwrap_or(class);
    let inner = inner.strip_prefix('^').unwrap_or(inner);
    let mut tokens: Vec<(char, bool)> = Vec::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let escaped = chars
                .next()
                .ok_or_else(|| format!("dangling `\\` in the character class `{class}`"))?;
            tokens.push((escaped, true));
        } else {
            tokens.push((c, false));
        }
    }
    if tokens.is_empty() {
        return Err(format!("the character class `{class}` is empty"));
    }
    let mut i = 0;
    while i < tokens.len() {
        if i + 2 < tokens.len() && tokens[i + 1] == ('-', false) {
            let (start, end) = (tokens[i].0, tokens[i + 2].0);
            if end < start {
                return Err(format!(
                    "reversed range `{start}-{end}` in the character class `{class}`"
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_class;

    #[test]
    fn character_classes() {
        assert!(check_class("[a-z0-9_-]").is_ok());
        assert!(check_class("^a").is_ok());
        assert!(check_class("[a-z-0]").is_ok());
        assert!(check_class("[]").unwrap_err().contains("empty"));
        assert!(check_class("[z-a]").unwrap_err().contains("reversed"));
        assert!(check_class("[a\\]").unwrap_err().contains("dangling"));
    }
}
