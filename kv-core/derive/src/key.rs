//! `#[derive(Key)]`.

use crate::attrs::{KeyAttrs, Target};
use crate::codegen::{Layout, ks};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::DeriveInput;

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let attrs = KeyAttrs::parse(&input.attrs, Target::Key)?;
    let layout = Layout::new(input, attrs.template, attrs.hash_tag.as_ref(), false, "Key")?;
    let Some(value) = attrs.value else {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[derive(Key)] needs the value codec: `#[kv(value = Json<Config>)]`",
        ));
    };
    let ks = ks();
    let name = &input.ident;
    let lit = &layout.lit;
    let sep_path = layout.sep_path();
    let hash_tag = match &attrs.hash_tag {
        Some(tag) => quote!(::core::option::Option::Some(#tag)),
        None => quote!(::core::option::Option::None),
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
    let text = &layout.template.text;
    let strategy = if attrs.no_strategy {
        TokenStream::new()
    } else {
        crate::strategy::fields_strategy("KeyStrategy", name, &layout.fields)
    };
    Ok(quote! {
        #[automatically_derived]
        impl #ks::Key for #name {
            const TEMPLATE: &'static str = #lit;
            const HASH_TAG: ::core::option::Option<&'static str> = #hash_tag;
            const DIRECTORY_OF: &'static [&'static str] = &[#(#directory_of),*];
            type Value = #value;

            fn template() -> &'static #ks::Template {
                static TEMPLATE: ::std::sync::LazyLock<#ks::Template> =
                    ::std::sync::LazyLock::new(|| {
                        #ks::Template::with_separator(
                            <#name as #ks::Key>::TEMPLATE,
                            #ks::TemplateKind::Key,
                            #sep_path,
                            <#name as #ks::Key>::HASH_TAG,
                        )
                        .expect(::core::concat!("template `", #text, "` was checked at compile time"))
                    });
                &TEMPLATE
            }

            fn write(&self, out: &mut ::std::string::String) {
                #write
            }

            fn parse(__raw: &str) -> ::core::result::Result<Self, #ks::KeyError> {
                let __t = <Self as #ks::Key>::template();
                #parse
            }

            fn fields(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                #fields
            }

            fn field_infos() -> ::std::vec::Vec<#ks::FieldInfo> {
                ::std::vec![#(#infos),*]
            }
        }

        #strategy
    })
}
