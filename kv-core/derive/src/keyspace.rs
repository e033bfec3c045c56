//! `#[derive(Keyspace)]`.

use crate::attrs::KeyspaceAttrs;
use crate::codegen::ks;
use crate::values::{ValueVariant, value_enum};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Type};

struct Variant {
    ident: Ident,
    ty: Type,
    /// `#[kv(raw)]`: the value variant keeps the stored bytes.
    raw: Option<proc_macro2::Span>,
    docs: Vec<syn::Attribute>,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let attrs = KeyspaceAttrs::parse(&input.attrs)?;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "#[derive(Keyspace)] applies to an enum whose variants each wrap one key type",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "#[derive(Keyspace)] does not support generic enums",
        ));
    }
    let mut variants: Vec<Variant> = Vec::new();
    for v in &data.variants {
        let ty = match &v.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => f.unnamed[0].ty.clone(),
            _ => {
                return Err(syn::Error::new(
                    v.span(),
                    "a keyspace variant wraps exactly one key type: `Meta(TenantMetaKey)`",
                ));
            }
        };
        let text = ty.to_token_stream().to_string();
        if let Some(other) = variants
            .iter()
            .find(|o| o.ty.to_token_stream().to_string() == text)
        {
            return Err(syn::Error::new(
                ty.span(),
                format!(
                    "variants `{}` and `{}` wrap the same key type `{text}`",
                    other.ident, v.ident
                ),
            ));
        }
        let raw = crate::attrs::variant_raw(&v.attrs)?;
        if let (Some(span), None) = (raw, &attrs.value_enum) {
            return Err(syn::Error::new(
                span,
                "`raw` describes a variant of the value enum: add `#[kv(value_enum = Name)]` \
                 to the keyspace",
            ));
        }
        variants.push(Variant {
            ident: v.ident.clone(),
            ty,
            raw,
            docs: v
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("doc"))
                .cloned()
                .collect(),
        });
    }
    if variants.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "a keyspace needs at least one key variant",
        ));
    }
    let ks = ks();
    let name = &input.ident;
    let find = |ident: &Ident| -> syn::Result<&Variant> {
        variants.iter().find(|v| &v.ident == ident).ok_or_else(|| {
            syn::Error::new(
                ident.span(),
                format!("`{ident}` is not a variant of `{name}`"),
            )
        })
    };
    for (parent, child) in &attrs.allow_dir {
        find(parent)?;
        find(child)?;
    }

    let tries = variants.iter().map(|v| {
        let (ident, ty) = (&v.ident, &v.ty);
        quote! {
            if __root_matches(<#ty as #ks::Key>::template(), __raw) {
                if let ::std::result::Result::Ok(__key) = <#ty as #ks::Key>::parse(__raw) {
                    return ::std::result::Result::Ok(#name::#ident(__key));
                }
            }
        }
    });
    let attempts = variants.iter().map(|v| {
        let ty = &v.ty;
        quote!(<#ty as #ks::Key>::parse(__raw).err())
    });
    let arms = |body: TokenStream| {
        let arms = variants.iter().map(move |v| {
            let ident = &v.ident;
            quote!(#name::#ident(__key) => #body)
        });
        quote!(match self { #(#arms,)* })
    };
    let write = arms(quote!(#ks::Key::write(__key, out)));
    let fields = arms(quote!(#ks::Key::fields(__key)));
    let sources = variants.iter().map(|v| {
        let (ident, ty) = (&v.ident, &v.ty);
        quote!(#name::#ident(_) => <#ty as #ks::Key>::TEMPLATE)
    });
    let infos = variants.iter().map(|v| {
        let ty = &v.ty;
        let children: Vec<&Type> = attrs
            .allow_dir
            .iter()
            .filter(|(parent, _)| parent == &v.ident)
            .filter_map(|(_, child)| find(child).ok().map(|c| &c.ty))
            .collect();
        if children.is_empty() {
            return quote!(<#ty as #ks::Key>::info());
        }
        quote! {{
            static DIRECTORY_OF: ::std::sync::LazyLock<::std::vec::Vec<&'static str>> =
                ::std::sync::LazyLock::new(|| {
                    let mut all = <#ty as #ks::Key>::DIRECTORY_OF.to_vec();
                    all.extend([#(<#children as #ks::Key>::TEMPLATE),*]);
                    all
                });
            let mut info = <#ty as #ks::Key>::info();
            info.directory_of = ::std::sync::LazyLock::force(&DIRECTORY_OF).as_slice();
            info
        }}
    });
    let naming = match &attrs.naming {
        Some(class) => quote! {
            ::std::option::Option::Some(
                #ks::NamingRule::charset(#class).expect("naming rule checked at compile time"),
            )
        },
        None => quote!(::std::option::Option::None),
    };
    let froms = variants.iter().map(|v| {
        let (ident, ty) = (&v.ident, &v.ty);
        quote! {
            #[automatically_derived]
            impl ::std::convert::From<#ty> for #name {
                fn from(key: #ty) -> Self {
                    #name::#ident(key)
                }
            }
        }
    });
    let strategy = if attrs.no_strategy {
        TokenStream::new()
    } else {
        let pairs: Vec<(Ident, Type)> = variants
            .iter()
            .map(|v| (v.ident.clone(), v.ty.clone()))
            .collect();
        crate::strategy::keyspace_strategy(name, &pairs)
    };
    let values = match &attrs.value_enum {
        Some(value) => {
            let variants: Vec<ValueVariant<'_>> = variants
                .iter()
                .map(|v| ValueVariant {
                    ident: &v.ident,
                    ty: &v.ty,
                    raw: v.raw.is_some(),
                    docs: v.docs.iter().collect(),
                })
                .collect();
            value_enum(name, &input.vis, value, &variants)
        }
        None => TokenStream::new(),
    };
    Ok(quote! {
        #[automatically_derived]
        impl #ks::Keyspace for #name {
            fn parse(__raw: &str) -> ::std::result::Result<Self, #ks::NoMatch> {
                // A template whose literal root differs is skipped without building an error;
                // errors are built only when no template matches.
                fn __root_matches(t: &#ks::Template, raw: &str) -> bool {
                    let sep = t.separator().as_char();
                    let body = if t.leading_separator() {
                        match raw.strip_prefix(sep) {
                            ::std::option::Option::Some(body) => body,
                            ::std::option::Option::None => return false,
                        }
                    } else {
                        raw
                    };
                    match t.root() {
                        ::std::option::Option::Some(root) if t.hash_tag() != ::std::option::Option::Some(0) => {
                            body.strip_prefix(root).is_some_and(|rest| rest.is_empty() || rest.starts_with(sep))
                        }
                        _ => true,
                    }
                }
                #(#tries)*
                ::std::result::Result::Err(#ks::NoMatch::from_attempts(
                    __raw,
                    [#(#attempts),*].into_iter().flatten(),
                ))
            }

            fn write(&self, out: &mut ::std::string::String) {
                #write
            }

            fn template_source(&self) -> &'static str {
                match self { #(#sources,)* }
            }

            fn fields(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                #fields
            }

            fn templates() -> ::std::vec::Vec<#ks::TemplateInfo> {
                ::std::vec![#(#infos),*]
            }

            fn naming_rule() -> ::std::option::Option<#ks::NamingRule> {
                #naming
            }
        }

        #(#froms)*

        #strategy

        #values
    })
}
