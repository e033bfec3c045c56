//! Code shared by `#[derive(Key)]` and `#[derive(Prefix)]`: the struct's fields checked against
//! its template, and the specialised `write` and `parse` bodies.

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

/// The path of `kv_core::keyspace` in generated code.
pub(crate) fn ks() -> TokenStream {
    quote!(::kv_core::keyspace)
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

    fn field(&self, name: &str) -> &Field {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .expect("variables are fields")
    }

    /// `::kv_core::keyspace::Separator::Slash` or `::Colon`.
    pub(crate) fn sep_path(&self) -> TokenStream {
        let ks = ks();
        match self.template.sep {
            Sep::Slash => quote!(#ks::Separator::Slash),
            Sep::Colon => quote!(#ks::Separator::Colon),
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

    /// The body of `parse(__raw: &str) -> Result<Self, KeyError>`; `__t` is the template.
    pub(crate) fn parse_body(&self) -> TokenStream {
        let ks = ks();
        let sep = self.template.sep.char();
        let depth = self.template.segments.len();
        let shape = |message: &str| {
            quote!(return ::core::result::Result::Err(__t.error(__raw, 0,
                #ks::KeyErrorReason::Shape(::std::string::String::from(#message)))))
        };
        let leading = if self.template.leading {
            let err = shape("no leading separator");
            quote!(let Some(__body) = __raw.strip_prefix(#sep) else { #err };)
        } else {
            let err = shape("unexpected leading separator");
            quote!(if __raw.starts_with(#sep) { #err } let __body = __raw;)
        };
        let trailing = if self.prefix {
            let err = shape("a prefix ends with the separator");
            quote!(let Some(__body) = __body.strip_suffix(#sep) else { #err };)
        } else {
            quote!()
        };
        let depth_error = |position: usize| {
            quote!(return ::core::result::Result::Err(__t.error(__raw, #position,
                #ks::KeyErrorReason::Depth { expected: #depth, found: __body.split(#sep).count() })))
        };
        let segments = (0..depth).map(|index| {
            let err = depth_error(index);
            let body = self.segment_parse(index);
            quote! {
                let Some(__piece) = __pieces.next() else { #err };
                #body
            }
        });
        let extra = depth_error(depth);
        let construct = self.construct();
        quote! {
            #leading
            #trailing
            let mut __pieces = __body.split(#sep);
            #(#segments)*
            if __pieces.next().is_some() { #extra }
            ::core::result::Result::Ok(#construct)
        }
    }

    fn segment_parse(&self, index: usize) -> TokenStream {
        let ks = ks();
        let expected = self.template.segment_text(index);
        let literal_error = quote!(return ::core::result::Result::Err(__t.error(__raw, #index,
        #ks::KeyErrorReason::Literal {
            expected: ::std::string::String::from(#expected),
            found: ::std::string::String::from(__piece),
        })));
        let untag = if self.tag == Some(index) {
            quote! {
                let Some(__piece) = __piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else {
                    return ::core::result::Result::Err(__t.error(__raw, #index,
                        #ks::KeyErrorReason::Shape(::std::string::String::from("missing hash tag braces"))));
                };
            }
        } else {
            quote!()
        };
        let mut parts: &[Part] = &self.template.segments[index];
        if let [Part::Lit(text)] = parts {
            return quote! { #untag if __piece != #text { #literal_error } };
        }
        let mut affixes = TokenStream::new();
        if let [Part::Lit(first), rest @ ..] = parts {
            affixes.extend(quote! {
                let Some(__m) = __m.strip_prefix(#first) else { #literal_error };
            });
            parts = rest;
        }
        if let [rest @ .., Part::Lit(last)] = parts {
            affixes.extend(quote! {
                let Some(__m) = __m.strip_suffix(#last) else { #literal_error };
            });
            parts = rest;
        }
        let vars: Vec<&Field> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Var(v) => Some(self.field(v)),
                Part::Lit(_) => None,
            })
            .collect();
        let delims: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Lit(l) => Some(l.as_str()),
                Part::Var(_) => None,
            })
            .collect();
        let split = if vars.len() == 1 {
            let decode = self.decode(vars[0], index, quote!(__m));
            quote!(#decode)
        } else {
            self.split_vars(index, &vars, &delims, &literal_error)
        };
        quote! {
            #untag
            let __m = __piece;
            #affixes
            #split
        }
    }

    fn decode(&self, field: &Field, index: usize, text: TokenStream) -> TokenStream {
        let ks = ks();
        let (ty, name) = (&field.ty, &field.name);
        let local = local(name);
        quote_spanned! {ty.span()=>
            let #local = #ks::decode_field::<#ty>(__t, __raw, #index, #name, #text)?;
        }
    }

    /// Splits `__m` into several variables: each variable but the last ends at the first
    /// occurrence of the delimiter after it, as `Template::captures` matches (a value that
    /// holds its delimiter does not round-trip, and the invariant harness reports it).
    fn split_vars(
        &self,
        index: usize,
        vars: &[&Field],
        delims: &[&str],
        literal_error: &TokenStream,
    ) -> TokenStream {
        let n = vars.len();
        let cuts = (0..n - 1).map(|i| {
            let delim = delims[i];
            let decode = self.decode(vars[i], index, quote!(&__m[..__i]));
            quote! {
                let Some(__i) = __m.find(#delim) else { #literal_error };
                #decode
                let __m = &__m[__i + #delim.len()..];
            }
        });
        let last = self.decode(vars[n - 1], index, quote!(__m));
        quote! {
            #(#cuts)*
            #last
        }
    }
}

/// The local variable holding a decoded field.
fn local(name: &str) -> Ident {
    format_ident!("__kv_{}", name)
}
