//! Proptest strategy impls for derived types, emitted inside keyplane-core's `__kv_if_proptest!`
//! so that they exist exactly when keyplane-core is built with feature `proptest`.

use crate::codegen::{Field, core, ks};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Type};

fn proptest() -> TokenStream {
    let core = core();
    quote!(#core::derive_support::proptest)
}

/// `tokens`, expanded only when keyplane-core has feature `proptest`.
fn if_proptest(tokens: TokenStream) -> TokenStream {
    let core = core();
    quote!(#core::__kv_if_proptest! { #tokens })
}

/// `impl KeyStrategy/PrefixStrategy for name`, composing the fields' segment strategies.
pub(crate) fn fields_strategy(trait_name: &str, name: &Ident, fields: &[Field]) -> TokenStream {
    let ks = ks();
    let pt = proptest();
    let trait_ident = Ident::new(trait_name, proc_macro2::Span::call_site());
    let body = match fields.len() {
        0 => quote!(#pt::strategy::Strategy::boxed(#pt::strategy::Just(#name {}))),
        n => {
            // Right-nested pairs, so that any number of fields fits proptest's tuple impls.
            let strategy = |f: &Field| {
                let ty = &f.ty;
                quote!(#ks::segment::<#ty>())
            };
            let local = |f: &Field| {
                let ident = &f.ident;
                quote!(#ident)
            };
            let mut strategies = strategy(&fields[n - 1]);
            let mut pattern = local(&fields[n - 1]);
            for f in fields[..n - 1].iter().rev() {
                let (s, p) = (strategy(f), local(f));
                strategies = quote!((#s, #strategies));
                pattern = quote!((#p, #pattern));
            }
            let idents = fields.iter().map(|f| &f.ident);
            quote! {
                #pt::strategy::Strategy::boxed(#pt::strategy::Strategy::prop_map(
                    #strategies,
                    |#pattern| #name { #(#idents),* },
                ))
            }
        }
    };
    // Bounds on the fields' types, under a binder that nothing uses: a bound a type does not
    // meet then leaves the impl out instead of failing the build (a bound without generics
    // would be checked where it is written). So a key with a segment of its own that has no
    // strategy compiles whether or not some crate in the graph turns `proptest` on; it just
    // has no strategy.
    let bounds = fields.iter().map(|f| {
        let ty = &f.ty;
        quote!(for<'__kv> #ty: #ks::SegmentStrategy)
    });
    if_proptest(quote! {
        #[automatically_derived]
        impl #ks::#trait_ident for #name
        where
            #(#bounds,)*
        {
            fn strategy() -> #pt::strategy::BoxedStrategy<Self> {
                #body
            }
        }
    })
}

/// `impl KeyspaceStrategy for name`: a union of every variant's key strategy.
pub(crate) fn keyspace_strategy(name: &Ident, variants: &[(Ident, Type)]) -> TokenStream {
    let ks = ks();
    let pt = proptest();
    let arms = variants.iter().map(|(ident, ty)| {
        quote! {
            #pt::strategy::Strategy::boxed(#pt::strategy::Strategy::prop_map(
                <#ty as #ks::KeyStrategy>::strategy(),
                #name::#ident,
            ))
        }
    });
    // As for keys: a variant without a strategy leaves the keyspace without one.
    let bounds = variants
        .iter()
        .map(|(_, ty)| quote!(for<'__kv> #ty: #ks::KeyStrategy));
    if_proptest(quote! {
        #[automatically_derived]
        impl #ks::KeyspaceStrategy for #name
        where
            #(#bounds,)*
        {
            fn strategy() -> #pt::strategy::BoxedStrategy<Self> {
                #pt::strategy::Strategy::boxed(#pt::strategy::Union::new(::std::vec![#(#arms),*]))
            }
        }
    })
}
