//! The generated `parse` of keys and prefixes: strict matching of the separator, depth and
//! literals, and strict decoding of each variable, with a `KeyError` naming the segment.

use crate::codegen::{Field, Layout, ks, local};
use crate::template::Part;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

impl Layout {
    /// The body of `parse(__raw: &str) -> Result<Self, KeyError>`; `__t` is the template.
    pub(crate) fn parse_body(&self) -> TokenStream {
        let ks = ks();
        let sep = self.template.sep.char();
        let depth = self.template.segments.len();
        let shape = |message: &str| {
            quote!(return ::std::result::Result::Err(__t.error(__raw, 0,
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
            quote!(return ::std::result::Result::Err(__t.error(__raw, #position,
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
            ::std::result::Result::Ok(#construct)
        }
    }

    fn segment_parse(&self, index: usize) -> TokenStream {
        let ks = ks();
        let expected = self.template.segment_text(index);
        let literal_error = quote!(return ::std::result::Result::Err(__t.error(__raw, #index,
        #ks::KeyErrorReason::Literal {
            expected: ::std::string::String::from(#expected),
            found: ::std::string::String::from(__piece),
        })));
        let untag = if self.tag == Some(index) {
            quote! {
                let Some(__piece) = __piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else {
                    return ::std::result::Result::Err(__t.error(__raw, #index,
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
