//! Code shared by `#[derive(Key)]` and `#[derive(Prefix)]`: the struct's fields checked against
//! its template, and the specialised `write` body (`parse` is in `codegen_parse`).

use crate::attrs::TemplateAttr;
use crate::template::{Part, Sep, Template};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Type};

/// One named field of the struct.
pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) name: String,
    pub(crate) ty: Type,
}

/// A struct whose fields are exactly its template's variables.
pub(crate) struct Layout {
    pub(crate) template: Template,
    pub(crate) lit: LitStr,
    /// Fields in template order.
    pub(crate) fields: Vec<Field>,
    /// The segment wrapped in a hash tag.
    pub(crate) tag: Option<usize>,
    /// Whether this is a prefix (the template ends with the separator).
    pub(crate) prefix: bool,
}

/// The path of `keyplane_core::keyspace` in generated code.
pub(crate) fn ks() -> TokenStream {
    let core = core();
    quote!(#core::keyspace)
}

/// The path of the `keyplane_core` crate in generated code, as the deriving crate names it: its
/// `keyplane-core` dependency under whatever name it was given, else the `keyplane` facade (which
/// re-exports it), else `::keyplane_core`.
pub(crate) fn core() -> TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    let named = |name: String| {
        let ident = proc_macro2::Ident::new(&name, proc_macro2::Span::call_site());
        quote!(::#ident)
    };
    match crate_name("keyplane-core") {
        Ok(FoundCrate::Name(name)) => named(name),
        Ok(FoundCrate::Itself) => quote!(::keyplane_core),
        Err(_) => match crate_name("keyplane") {
            Ok(FoundCrate::Name(name)) => named(name),
            _ => quote!(::keyplane_core),
        },
    }
}

impl Layout {
    /// Checks the struct against its template: named fields, no generics, every variable a
    /// field, every field a variable, a trailing separator exactly for prefixes, a hash tag
    /// naming a segment.
    pub(crate) fn new(
        input: &DeriveInput,
        attr: Option<TemplateAttr>,
        hash_tag: Option<&LitStr>,
        prefix: bool,
        what: &str,
    ) -> syn::Result<Layout> {
        let Some(TemplateAttr { lit, template }) = attr else {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("#[derive({what})] needs `#[kv(template = \"...\")]`"),
            ));
        };
        if !input.generics.params.is_empty() {
            return Err(syn::Error::new(
                input.generics.span(),
                format!("#[derive({what})] does not support generic structs"),
            ));
        }
        let named = match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(f) => {
                    return Err(syn::Error::new(
                        f.span(),
                        format!("#[derive({what})] needs named fields, one per template variable"),
                    ));
                }
            },
            _ => {
                return Err(syn::Error::new(
                    input.ident.span(),
                    format!("#[derive({what})] applies to structs"),
                ));
            }
        };
        let sep = template.sep.char();
        match (prefix, template.trailing) {
            (true, false) => {
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "prefix template `{}` must end with its separator `{sep}`, so that `tenants/1/` never matches `tenants/10/`",
                        template.text
                    ),
                ));
            }
            (false, true) => {
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "key template `{}` must not end with its separator `{sep}`; a directory is a #[derive(Prefix)]",
                        template.text
                    ),
                ));
            }
            _ => {}
        }
        let mut fields = Vec::new();
        for var in template.vars() {
            let Some(field) = named
                .iter()
                .find(|f| f.ident.as_ref().is_some_and(|i| i.unraw() == var))
            else {
                let names: Vec<String> = named
                    .iter()
                    .filter_map(|f| f.ident.as_ref().map(|i| i.unraw().to_string()))
                    .collect();
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "template variable `{{{var}}}` is not a field of `{}` (fields: {})",
                        input.ident,
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    ),
                ));
            };
            let ident = field.ident.clone().expect("named field");
            fields.push(Field {
                name: ident.unraw().to_string(),
                ident,
                ty: field.ty.clone(),
            });
        }
        for field in &named {
            let ident = field.ident.as_ref().expect("named field");
            if !fields.iter().any(|f| &f.ident == ident) {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "field `{}` does not appear in the template `{}`; every field of a key is one of its variables",
                        ident.unraw(),
                        template.text
                    ),
                ));
            }
        }
        let tag = match hash_tag {
            None => None,
            Some(tag_lit) => {
                let tag = tag_lit.value();
                let index = template.tag_segment(&tag).ok_or_else(|| {
                    syn::Error::new(
                        tag_lit.span(),
                        format!(
                            "hash tag `{tag}` names neither a variable nor a literal segment of `{}`",
                            template.text
                        ),
                    )
                })?;
                if template.has_literal_brace() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a template with a hash tag must not contain literal braces: Redis Cluster would hash the first `{...}` instead of the tag",
                    ));
                }
                Some(index)
            }
        };
        Ok(Layout {
            template,
            lit,
            fields,
            tag,
            prefix,
        })
    }

    pub(crate) fn field(&self, name: &str) -> &Field {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .expect("variables are fields")
    }

    /// `::keyplane_core::keyspace::Separator::Slash` or `::Colon`.
    pub(crate) fn sep_path(&self) -> TokenStream {
        let ks = ks();
        match self.template.sep {
            Sep::Slash => quote!(#ks::Separator::Slash),
            Sep::Colon => quote!(#ks::Separator::Colon),
        }
    }

    /// The `template()` fn of the `Key` or `Prefix` impl of `name`: the runtime template,
    /// built once, with the separator the derive inferred (`read_only`: an old layout's,
    /// which may have empty segments and has no hash tag).
    pub(crate) fn template_fn(&self, name: &Ident, read_only: bool) -> TokenStream {
        let ks = ks();
        let sep_path = self.sep_path();
        let text = &self.template.text;
        let (tr, kind) = if self.prefix {
            (quote!(#ks::Prefix), quote!(#ks::TemplateKind::Prefix))
        } else {
            (quote!(#ks::Key), quote!(#ks::TemplateKind::Key))
        };
        let constructor = if read_only {
            quote!(#ks::Template::read_only(
                <#name as #tr>::TEMPLATE,
                #kind,
                ::std::option::Option::Some(#sep_path),
            ))
        } else {
            quote!(#ks::Template::with_separator(
                <#name as #tr>::TEMPLATE,
                #kind,
                #sep_path,
                <#name as #tr>::HASH_TAG,
            ))
        };
        quote! {
            fn template() -> &'static #ks::Template {
                static TEMPLATE: ::std::sync::LazyLock<#ks::Template> =
                    ::std::sync::LazyLock::new(|| {
                        #constructor
                        .expect(::std::concat!("template `", #text, "` was checked at compile time"))
                    });
                &TEMPLATE
            }
        }
    }

    /// The body of `write(&self, out: &mut String)`: literals pushed as whole strings, each
    /// field encoded in place.
    pub(crate) fn write_body(&self) -> TokenStream {
        let ks = ks();
        let sep_path = self.sep_path();
        let sep = self.template.sep.char();
        let mut pending = String::new();
        let mut steps = Vec::new();
        let flush = |pending: &mut String, steps: &mut Vec<TokenStream>| {
            if !pending.is_empty() {
                let text = std::mem::take(pending);
                steps.push(quote!(out.push_str(#text);));
            }
        };
        if self.template.leading {
            pending.push(sep);
        }
        for (index, segment) in self.template.segments.iter().enumerate() {
            if index > 0 {
                pending.push(sep);
            }
            let tagged = self.tag == Some(index);
            if tagged {
                pending.push('{');
            }
            for part in segment {
                match part {
                    Part::Lit(text) => pending.push_str(text),
                    Part::Var(name) => {
                        flush(&mut pending, &mut steps);
                        let field = self.field(name);
                        let (ident, ty) = (&field.ident, &field.ty);
                        steps.push(quote_spanned! {ty.span()=>
                            <#ty as #ks::Segment>::encode(&self.#ident, #sep_path, out);
                        });
                    }
                }
            }
            if tagged {
                pending.push('}');
            }
        }
        if self.prefix {
            pending.push(sep);
        }
        flush(&mut pending, &mut steps);
        quote!(#(#steps)*)
    }

    /// The body of `fields(&self)`.
    pub(crate) fn fields_body(&self) -> TokenStream {
        let ks = ks();
        let sep_path = self.sep_path();
        let items = self.fields.iter().map(|f| {
            let (ident, ty, name) = (&f.ident, &f.ty, &f.name);
            quote!((#name, <#ty as #ks::Segment>::to_segment_string(&self.#ident, #sep_path)))
        });
        quote!(::std::vec![#(#items),*])
    }

    /// The constructor from the decoded locals.
    pub(crate) fn construct(&self) -> TokenStream {
        let inits = self.fields.iter().map(|f| {
            let ident = &f.ident;
            let local = local(&f.name);
            quote!(#ident: #local)
        });
        quote!(Self { #(#inits),* })
    }
}

/// The local variable holding a decoded field.
pub(crate) fn local(name: &str) -> Ident {
    format_ident!("__kv_{}", name)
}
