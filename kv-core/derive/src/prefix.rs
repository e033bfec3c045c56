//! `#[derive(Prefix)]`.

use crate::attrs::{KeyAttrs, Target};
use crate::codegen::{Layout, ks};
use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let attrs = KeyAttrs::parse(&input.attrs, Target::Prefix)?;
    let layout = Layout::new(
        input,
        attrs.template,
        attrs.hash_tag.as_ref(),
        true,
        "Prefix",
    )?;
    let ks = ks();
    let name = &input.ident;
    let lit = &layout.lit;
    let hash_tag = match &attrs.hash_tag {
        Some(tag) => quote!(::std::option::Option::Some(#tag)),
        None => quote!(::std::option::Option::None),
    };
    let write = layout.write_body();
    let parse = layout.parse_body();
    let fields = layout.fields_body();
    let text = &layout.template.text;
    let strategy = if attrs.no_strategy {
        TokenStream::new()
    } else {
        crate::strategy::fields_strategy("PrefixStrategy", name, &layout.fields)
    };
    // A format string: the template's braces are escaped.
    let not_prefix = format!(
        "the template of the key listed by `{name}` does not start with `{}` (or its hash tag differs)",
        text.replace('{', "{{").replace('}', "}}")
    );
    // With the key type it lists: the `ListPrefix` impl, and a compile-time check that the
    // key's template extends this one, with the same hash tag.
    let listed = match &attrs.key {
        None => TokenStream::new(),
        Some(key) => quote! {
            #[automatically_derived]
            impl #ks::ListPrefix for #name {
                type Key = #key;
            }

            const _: () = {
                const fn starts_with(s: &[u8], p: &[u8]) -> bool {
                    if p.len() > s.len() {
                        return false;
                    }
                    let mut i = 0;
                    while i < p.len() {
                        if s[i] != p[i] {
                            return false;
                        }
                        i += 1;
                    }
                    true
                }
                const fn same_tag(a: ::std::option::Option<&str>, b: ::std::option::Option<&str>) -> bool {
                    match (a, b) {
                        (::std::option::Option::None, ::std::option::Option::None) => true,
                        (::std::option::Option::Some(a), ::std::option::Option::Some(b)) => {
                            a.len() == b.len() && starts_with(a.as_bytes(), b.as_bytes())
                        }
                        _ => false,
                    }
                }
                ::std::assert!(
                    starts_with(
                        <#key as #ks::Key>::TEMPLATE.as_bytes(),
                        <#name as #ks::Prefix>::TEMPLATE.as_bytes(),
                    ) && same_tag(<#key as #ks::Key>::HASH_TAG, <#name as #ks::Prefix>::HASH_TAG),
                    #not_prefix
                );
            };
        },
    };
    let template_fn = layout.template_fn(name, attrs.read_only);
    Ok(quote! {
        #[automatically_derived]
        impl #ks::Prefix for #name {
            const TEMPLATE: &'static str = #lit;
            const HASH_TAG: ::std::option::Option<&'static str> = #hash_tag;

            #template_fn

            fn write(&self, out: &mut ::std::string::String) {
                #write
            }

            fn parse(__raw: &str) -> ::std::result::Result<Self, #ks::KeyError> {
                let __t = <Self as #ks::Prefix>::template();
                #parse
            }

            fn fields(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                #fields
            }
        }

        #listed

        #strategy
    })
}
