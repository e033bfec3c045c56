//! `#[derive(Key)]`.

use crate::attrs::{KeyAttrs, Target};
use crate::codegen::{Layout, ks};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::DeriveInput;

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let attrs = KeyAttrs::parse(&input.attrs, Target::Key)?;
    let layout = Layout::new(input, attrs.template, attrs.hash_tag.as_ref(), false, "Key")?;
    let ks = ks();
    let krate = crate::codegen::core();
    let (value, kind, marker) = match (attrs.value, attrs.collection) {
        (Some(value), None) => (
            value,
            quote!(::std::option::Option::None),
            quote!(#ks::PlainKey),
        ),
        (None, Some((kind, codec))) => {
            let (variant, marker) = match kind.to_string().as_str() {
                "set" => (quote!(Set), quote!(#ks::SetKey)),
                "hash" => (quote!(Map), quote!(#ks::MapKey)),
                _ => (quote!(List), quote!(#ks::ListKey)),
            };
            (
                codec,
                quote!(::std::option::Option::Some(#krate::CollectionKind::#variant)),
                marker,
            )
        }
        (Some(_), Some((kind, _))) => {
            return Err(syn::Error::new(
                kind.span(),
                "a key holds either a plain `value` or a collection (`set`, `hash`, `list`), not both",
            ));
        }
        (None, None) => {
            return Err(syn::Error::new(
                Span::call_site(),
                "#[derive(Key)] needs the value codec: `#[kv(value = Json<Config>)]`, or a \
                 collection's member codec: `#[kv(set = Text)]`, `hash = ..`, `list = ..`",
            ));
        }
    };
    let name = &input.ident;
    let lit = &layout.lit;
    let hash_tag = match &attrs.hash_tag {
        Some(tag) => quote!(::std::option::Option::Some(#tag)),
        None => quote!(::std::option::Option::None),
    };
    let directory_of = attrs
        .directory_of
        .iter()
        .map(|ty| quote!(<#ty as #ks::Key>::TEMPLATE));
    let write = layout.write_body();
    let parse = layout.parse_body();
    let fields = layout.fields_body();
    let infos = layout.fields.iter().map(|f| {
        let (ty, name) = (&f.ty, &f.name);
        quote!(#ks::FieldInfo::of::<#ty>(#name))
    });
    let agrees = match &attrs.agrees {
        Some(check) => quote! {
            fn check_value(
                &self,
                value: &<<Self as #ks::Key>::Value as #ks::Codec>::Value,
            ) -> ::std::result::Result<(), ::std::string::String> {
                #check(self, value)
            }
        },
        None => TokenStream::new(),
    };
    let strategy = if attrs.no_strategy {
        TokenStream::new()
    } else {
        crate::strategy::fields_strategy("KeyStrategy", name, &layout.fields)
    };
    let template_fn = layout.template_fn(name, attrs.read_only);
    Ok(quote! {
        #[automatically_derived]
        impl #ks::Key for #name {
            const TEMPLATE: &'static str = #lit;
            const HASH_TAG: ::std::option::Option<&'static str> = #hash_tag;
            const DIRECTORY_OF: &'static [&'static str] = &[#(#directory_of),*];
            const KIND: ::std::option::Option<#krate::CollectionKind> = #kind;
            type Value = #value;

            #template_fn

            fn write(&self, out: &mut ::std::string::String) {
                #write
            }

            fn parse(__raw: &str) -> ::std::result::Result<Self, #ks::KeyError> {
                let __t = <Self as #ks::Key>::template();
                #parse
            }

            fn fields(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                #fields
            }

            fn field_infos() -> ::std::vec::Vec<#ks::FieldInfo> {
                ::std::vec![#(#infos),*]
            }

            #agrees

            fn info() -> #ks::TemplateInfo {
                let mut info = #ks::TemplateInfo::of_key::<Self>();
                info.value.json_schema = {
                    #[allow(unused_imports)]
                    use #krate::derive_support::json_schema::*;
                    (&&Probe::<#value>::new()).json_schema()
                }
                .map(::std::sync::Arc::new);
                info
            }
        }

        #[automatically_derived]
        impl #marker for #name {}

        #strategy
    })
}
