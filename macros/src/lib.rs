//! `#[rpc]`: a typed JSON-RPC API from one trait, for sansrpc.
//!
//! The attribute turns a trait whose methods are marked `#[method(...)]` or
//! `#[subscription(...)]` into a server trait (`NameServer`, mounted on a
//! `sansrpc_futures::AsyncRouter`; `NameSyncServer` for the core `Router` and the blocking
//! adapter) and a client extension (`NameClient`, implemented for
//! every `AsRef<sansrpc_futures::Client>`). Use it through `sansrpc_futures::rpc` or
//! `sansrpc_tokio::rpc` or `sansrpc_wasm::rpc` (their `macros` feature); the guide is `docs/methods.md` of the
//! sansrpc crate.
//!
//! A signature the server or the client could not serve (a method without `&self`, a
//! method that is not `async`, a return that is not a `Result` or an alias of one) and a
//! wire name used twice are compile errors at the span that causes them.
//!
//! A method or subscription may set its own `namespace` (several in one trait); the
//! clients leave trailing `Option` arguments that are `None` out of positional params.

use std::collections::BTreeMap;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, ItemTrait, Lit, LitStr, Meta,
    MetaNameValue, Pat, PathArguments, ReturnType, Token, TraitItem, TraitItemFn, Type,
};

/// Turns a trait into a server trait and a client extension; see the crate docs of
/// `sansrpc_futures` (`rpc`) and `docs/methods.md`.
///
/// Arguments: `server` (async, on the `AsyncRouter`), `sync` (plain methods and
/// subscriptions, on the core `Router`: the blocking adapter serves it), `client`,
/// `blocking_client` (on `sansrpc_blocking::Client`; at least one of the four), `namespace = "eth"` (wire names become
/// `eth_name`), `crate = path` (where the generated code finds the adapter, default
/// `::sansrpc_futures`).
#[proc_macro_attribute]
pub fn rpc(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args.into(), item.into(), "::sansrpc_futures").into()
}

/// `rpc` as `sansrpc_tokio` re-exports it: the generated code goes through
/// `::sansrpc_tokio`, so a crate that depends only on `sansrpc-tokio` can use it.
#[proc_macro_attribute]
pub fn rpc_tokio(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args.into(), item.into(), "::sansrpc_tokio").into()
}

/// `rpc` as `sansrpc_wasm` re-exports it: the generated code goes through `::sansrpc_wasm`,
/// so a page that depends only on `sansrpc-wasm` can use it.
#[proc_macro_attribute]
pub fn rpc_wasm(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args.into(), item.into(), "::sansrpc_wasm").into()
}

fn expand(args: TokenStream2, item: TokenStream2, default_crate: &str) -> TokenStream2 {
    match expand_or_error(args, item, default_crate) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

/// The attribute's arguments.
struct Args {
    server: bool,
    /// A server trait of plain methods, mounted on the core `Router`.
    sync: bool,
    /// A client extension of `sansrpc_blocking::Client`.
    blocking_client: bool,
    client: bool,
    namespace: Option<String>,
    krate: syn::Path,
}

fn parse_args(args: TokenStream2, default_crate: &str) -> syn::Result<Args> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut parsed = Args {
        server: false,
        sync: false,
        blocking_client: false,
        client: false,
        namespace: None,
        krate: syn::parse_str(default_crate)?,
    };
    for meta in metas {
        match &meta {
            Meta::Path(p) if p.is_ident("server") => parsed.server = true,
            Meta::Path(p) if p.is_ident("client") => parsed.client = true,
            Meta::Path(p) if p.is_ident("sync") => parsed.sync = true,
            Meta::Path(p) if p.is_ident("blocking_client") => parsed.blocking_client = true,
            Meta::NameValue(nv) if nv.path.is_ident("namespace") => {
                let ns = string_value(&nv.value)?;
                if ns.is_empty() {
                    return Err(syn::Error::new(nv.value.span(), "an empty namespace"));
                }
                parsed.namespace = Some(ns);
            }
            Meta::NameValue(nv) if nv.path.is_ident("crate") => {
                parsed.krate = match &nv.value {
                    Expr::Path(p) => p.path.clone(),
                    other => syn::parse_str(&string_value(other)?)?,
                };
            }
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown argument: expected `server`, `sync`, `client`, `blocking_client`, `namespace = \"...\"` or `crate = path`",
                ))
            }
        }
    }
    if !parsed.server && !parsed.client && !parsed.sync && !parsed.blocking_client {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[rpc] needs `server`, `sync`, `client` or `blocking_client` (or several)",
        ));
    }
    Ok(parsed)
}

fn string_value(expr: &Expr) -> syn::Result<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        other => Err(syn::Error::new(other.span(), "expected a string literal")),
    }
}

/// How a method's params go on the wire.
#[derive(Clone, Copy, PartialEq)]
enum ParamKind {
    /// A JSON array, in declared order (the default).
    Array,
    /// A JSON object, by name.
    Map,
}

/// One argument of a method, besides `&self`.
struct Param {
    name: Ident,
    ty: Type,
}

enum Kind {
    Method {
        /// `T` of `Result<T, E>` as written; `None` for another path, perhaps an alias
        /// (`RpcResult<T>`): see [`ok_type`].
        ok: Option<Type>,
        /// The whole return type, as written.
        ret: Type,
    },
    Subscription {
        item: Type,
        /// The pending subscription's argument.
        pending: Param,
        notification: String,
        unsubscribe: (String, Span),
        ids: Option<Ident>,
        lag: Option<Ident>,
        /// The queue's bound in bytes (`capacity = 4 << 20`).
        capacity: Option<Box<Expr>>,
        /// sansrpc's notices (`notices = true`).
        notices: Option<syn::LitBool>,
    },
}

/// One method or subscription of the trait.
struct Rpc {
    func: TraitItemFn,
    /// The attributes kept on the generated methods (docs, cfgs).
    attrs: Vec<Attribute>,
    wire: String,
    wire_span: Span,
    params: Vec<Param>,
    param_kind: ParamKind,
    kind: Kind,
}

fn expand_or_error(
    args: TokenStream2,
    item: TokenStream2,
    default_crate: &str,
) -> syn::Result<TokenStream2> {
    let args = parse_args(args, default_crate)?;
    let item: ItemTrait = syn::parse2(item)?;
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            item.generics.span(),
            "an #[rpc] trait cannot be generic",
        ));
    }
    if !item.supertraits.is_empty() {
        return Err(syn::Error::new(
            item.supertraits.span(),
            "an #[rpc] trait cannot have supertraits",
        ));
    }
    let mut rpcs = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(f) => match parse_rpc(f, args.namespace.as_deref()) {
                Ok(rpc) => rpcs.push(rpc),
                Err(e) => push(e),
            },
            other => push(syn::Error::new(
                other.span(),
                "an #[rpc] trait holds only methods marked #[method(...)] or #[subscription(...)]",
            )),
        }
    }
    // Every name the router registers is unique, and none is reserved.
    let mut seen: BTreeMap<String, Ident> = BTreeMap::new();
    for rpc in &rpcs {
        let mut names = vec![(rpc.wire.clone(), rpc.wire_span)];
        if let Kind::Subscription { unsubscribe, .. } = &rpc.kind {
            names.push(unsubscribe.clone());
        }
        for (name, span) in names {
            if name.starts_with("rpc.") {
                push(syn::Error::new(
                    span,
                    format!("`{name}`: names beginning with `rpc.` are reserved"),
                ));
            }
            match seen.get(&name) {
                Some(first) => push(syn::Error::new(
                    span,
                    format!("duplicate method name `{name}` (also used by `{first}`)"),
                )),
                None => {
                    seen.insert(name, rpc.func.sig.ident.clone());
                }
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }

    let krate = &args.krate;
    let support = quote!(#krate::__macros);
    let mut out = TokenStream2::new();
    out.extend(hidden_items(&item.ident, &rpcs, &support));
    if args.server {
        out.extend(server(&item, &rpcs, &support));
    }
    if args.sync {
        out.extend(sync_server(&item, &rpcs, &support));
    }
    if args.client {
        out.extend(client(&item, &rpcs, &support));
    }
    if args.blocking_client {
        out.extend(blocking_client(&item, &rpcs, &support));
    }
    Ok(out)
}

/// The `name = ...`, `param_kind = ...` style arguments of `#[method]` / `#[subscription]`.
fn attr_args(attr: &Attribute) -> syn::Result<Vec<MetaNameValue>> {
    match &attr.meta {
        Meta::Path(_) => Ok(Vec::new()),
        Meta::List(list) => Ok(list
            .parse_args_with(Punctuated::<MetaNameValue, Token![,]>::parse_terminated)?
            .into_iter()
            .collect()),
        Meta::NameValue(nv) => Err(syn::Error::new(
            nv.span(),
            "expected `#[method(name = \"...\")]`",
        )),
    }
}

/// An identifier or a string: `param_kind = map` or `param_kind = "map"`.
fn word(expr: &Expr) -> syn::Result<Ident> {
    match expr {
        Expr::Path(p) if p.path.get_ident().is_some() => Ok(p.path.get_ident().unwrap().clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse(),
        other => Err(syn::Error::new(other.span(), "expected a word")),
    }
}

fn wire_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}_{name}"),
        None => name.to_owned(),
    }
}

fn parse_rpc(f: &TraitItemFn, namespace: Option<&str>) -> syn::Result<Rpc> {
    let mut marker = None;
    let mut attrs = Vec::new();
    for attr in &f.attrs {
        if attr.path().is_ident("method") || attr.path().is_ident("subscription") {
            if marker.is_some() {
                return Err(syn::Error::new(
                    attr.span(),
                    "one #[method] or #[subscription] per method",
                ));
            }
            marker = Some(attr);
        } else {
            attrs.push(attr.clone());
        }
    }
    let Some(marker) = marker else {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "mark this method #[method(name = \"...\")] or #[subscription(name = \"...\", item = Type)]",
        ));
    };
    let is_subscription = marker.path().is_ident("subscription");
    if let Some(body) = &f.default {
        return Err(syn::Error::new(
            body.span(),
            "an #[rpc] method has no body: the server implements it",
        ));
    }
    let sig = &f.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span,
            "an #[rpc] method must be `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "an #[rpc] method cannot be generic",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(v.span(), "variadic arguments"));
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {}
        Some(other) => {
            return Err(syn::Error::new(
                other.span(),
                "the first argument of an #[rpc] method must be `&self`",
            ))
        }
        None => {
            return Err(syn::Error::new(
                sig.paren_token.span.join(),
                "an #[rpc] method takes `&self` first",
            ))
        }
    }
    let mut params = Vec::new();
    for input in inputs {
        let FnArg::Typed(pt) = input else {
            unreachable!("a receiver after the first argument does not parse")
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(
                pt.pat.span(),
                "an #[rpc] method's arguments are plain names (`number: u64`)",
            ));
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            return Err(syn::Error::new(
                pt.pat.span(),
                "an #[rpc] method's arguments are plain names (`number: u64`)",
            ));
        }
        if let Type::Reference(r) = &*pt.ty {
            return Err(syn::Error::new(
                r.span(),
                "an #[rpc] method's arguments are owned (`String`, not `&str`): they are decoded from the request",
            ));
        }
        params.push(Param {
            name: pi.ident.clone(),
            ty: (*pt.ty).clone(),
        });
    }

    let mut name = sig.ident.to_string();
    let mut name_span = sig.ident.span();
    let mut param_kind = ParamKind::Array;
    let mut item = None;
    let mut notification = None;
    let mut unsubscribe = None;
    let mut ids = None;
    let mut lag = None;
    let mut capacity = None;
    let mut notices = None;
    // The trait's namespace, unless this method names its own (`""`: none).
    let mut namespace = namespace.map(str::to_owned);
    for nv in attr_args(marker)? {
        let key = nv
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => {
                name = string_value(&nv.value)?;
                name_span = nv.value.span();
            }
            "namespace" => {
                let ns = string_value(&nv.value)?;
                namespace = (!ns.is_empty()).then_some(ns);
            }
            "param_kind" => {
                let w = word(&nv.value)?;
                param_kind = match w.to_string().as_str() {
                    "map" => ParamKind::Map,
                    "array" => ParamKind::Array,
                    _ => return Err(syn::Error::new(w.span(), "expected `array` or `map`")),
                };
            }
            "item" if is_subscription => {
                item = Some(syn::parse2::<Type>(nv.value.to_token_stream())?)
            }
            "notification" if is_subscription => {
                notification = Some(string_value(&nv.value)?);
            }
            "unsubscribe" if is_subscription => {
                unsubscribe = Some((string_value(&nv.value)?, nv.value.span()));
            }
            "ids" if is_subscription => {
                let w = word(&nv.value)?;
                let variant = match w.to_string().as_str() {
                    "hex" => "Hex",
                    "string" => "String",
                    "number" => "Number",
                    _ => {
                        return Err(syn::Error::new(
                            w.span(),
                            "expected `hex`, `string` or `number`",
                        ))
                    }
                };
                ids = Some(Ident::new(variant, w.span()));
            }
            "lag" if is_subscription => {
                let w = word(&nv.value)?;
                let variant = match w.to_string().as_str() {
                    "disconnect" => "Disconnect",
                    "drop_oldest" => "DropOldest",
                    "close" => "Close",
                    _ => {
                        return Err(syn::Error::new(
                            w.span(),
                            "expected `disconnect`, `drop_oldest` or `close`",
                        ))
                    }
                };
                lag = Some(Ident::new(variant, w.span()));
            }
            "capacity" if is_subscription => capacity = Some(Box::new(nv.value.clone())),
            "notices" if is_subscription => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => notices = Some(b.clone()),
                other => return Err(syn::Error::new(other.span(), "expected `true` or `false`")),
            },
            _ => {
                let expected = if is_subscription {
                    "`name`, `namespace`, `item`, `notification`, `unsubscribe`, `param_kind`, `ids`, `lag`, `capacity` or `notices`"
                } else {
                    "`name`, `namespace` or `param_kind`"
                };
                return Err(syn::Error::new(
                    nv.path.span(),
                    format!("unknown argument: expected {expected}"),
                ));
            }
        }
    }
    let namespace = namespace.as_deref();
    let wire = wire_name(namespace, &name);

    let kind = if is_subscription {
        let Some(item) = item else {
            return Err(syn::Error::new(
                marker.span(),
                "a #[subscription] needs `item = Type` (what each notification carries)",
            ));
        };
        match &sig.output {
            ReturnType::Default => {}
            ReturnType::Type(_, ty) if matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()) => {}
            ReturnType::Type(_, ty) => {
                return Err(syn::Error::new(
                    ty.span(),
                    "a #[subscription] method returns nothing: it accepts or rejects its `PendingSubscription`",
                ))
            }
        }
        if params.is_empty() {
            return Err(syn::Error::new(
                sig.paren_token.span.join(),
                "a #[subscription] method takes the `PendingSubscription` after `&self`",
            ));
        }
        let pending = params.remove(0);
        let (Some(notification), Some((unsubscribe, unsubscribe_span))) =
            (notification, unsubscribe)
        else {
            return Err(syn::Error::new(
                marker.span(),
                "a #[subscription] needs `notification = \"...\"` and `unsubscribe = \"...\"`",
            ));
        };
        let unsubscribe = (wire_name(namespace, &unsubscribe), unsubscribe_span);
        let notification = wire_name(namespace, &notification);
        Kind::Subscription {
            item,
            pending,
            notification,
            unsubscribe,
            ids,
            lag,
            capacity,
            notices,
        }
    } else {
        let ReturnType::Type(_, ret) = &sig.output else {
            return Err(syn::Error::new(sig.paren_token.span.join(), RETURNS));
        };
        // `Result<T, E>` as written; any other path may be an alias of it (`RpcResult<T>`),
        // which only the compiler can see through: `T` is then asked of the type itself.
        let ok = match (result_ok(ret), &**ret) {
            (Some(ok), _) => Some(ok),
            (None, Type::Path(_)) => None,
            _ => return Err(syn::Error::new(ret.span(), RETURNS)),
        };
        Kind::Method {
            ok,
            ret: (**ret).clone(),
        }
    };
    Ok(Rpc {
        func: f.clone(),
        attrs,
        wire,
        wire_span: name_span,
        params,
        param_kind,
        kind,
    })
}

/// `T` of a method's return: as written, or asked of the type (an alias of `Result`)
/// through the support trait, whose error says what to write when it is no `Result`.
fn ok_type(ok: &Option<Type>, ret: &Type, support: &TokenStream2) -> TokenStream2 {
    match ok {
        Some(ok) => quote!(#ok),
        None => quote_spanned! {ret.span()=> <#ret as #support::RpcReturn>::Ok},
    }
}

/// What an #[rpc] method returns, said where it returns something else.
const RETURNS: &str = "an #[rpc] method returns `Result<T, E>` (E: Into<ErrorObject<'static>>), or an alias of it (`RpcResult<T>`)";

/// `T` of a `Result<T, E>` (any path ending in `Result` with two arguments).
fn result_ok(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    });
    let ok = types.next()?;
    types.next()?;
    Some(ok)
}

/// True for `Option<T>` as written (any path ending in `Option` with one argument).
fn is_option(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    p.path.segments.last().is_some_and(|last| {
        last.ident == "Option"
            && matches!(&last.arguments, PathArguments::AngleBracketed(a) if a.args.len() == 1)
    })
}

/// The type of a method's args by position: `()` without any (no params sent), else the
/// args struct ([`positional_args`]).
fn args_type(args: &Ident, rpc: &Rpc) -> TokenStream2 {
    match rpc.params.is_empty() {
        true => quote!(()),
        false => quote!(#args),
    }
}

/// The args of `rpc` by position, as the client builds them: `()` or the args struct.
fn args_value(args: &Ident, rpc: &Rpc) -> TokenStream2 {
    let names = rpc.params.iter().map(|p| &p.name);
    match rpc.params.is_empty() {
        true => quote!(()),
        false => quote!(#args( #( #names, )* )),
    }
}

/// The struct a client sends `rpc`'s args by position in: a JSON array in declared order
/// whose trailing `Option` args that are `None` are left out (`["newHeads"]`, not
/// `["newHeads", null]`: go-ethereum refuses more args than a method takes).
fn positional_args(args: &Ident, rpc: &Rpc, support: &TokenStream2) -> TokenStream2 {
    if rpc.params.is_empty() {
        return TokenStream2::new();
    }
    let types = rpc.params.iter().map(|p| &p.ty);
    let n = rpc.params.len();
    let indexes: Vec<syn::Index> = (0..n).map(syn::Index::from).collect();
    // From the last arg back, while they are `Option`s: each `None` shortens the array.
    let trailing = rpc
        .params
        .iter()
        .rev()
        .take_while(|p| is_option(&p.ty))
        .count();
    let shorten = (n - trailing..n).rev().map(|i| {
        let index = syn::Index::from(i);
        quote! {
            if len == #i + 1 && ::core::option::Option::is_none(&self.#index) {
                len = #i;
            }
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        struct #args( #( #types, )* );

        impl #support::serde::Serialize for #args {
            fn serialize<S: #support::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                use #support::serde::ser::SerializeSeq as _;
                #[allow(unused_mut)]
                let mut len: usize = #n;
                #( #shorten )*
                let mut seq = serializer.serialize_seq(::core::option::Option::Some(len))?;
                #(
                    if #indexes < len {
                        seq.serialize_element(&self.#indexes)?;
                    }
                )*
                seq.end()
            }
        }
    }
}

/// Names of the hidden items of one method.
struct Hidden {
    /// The params struct (by name and by position on the server; by name on the client).
    params: Ident,
    /// The `Method` type the server registers (params: the struct).
    method: Ident,
    /// The `Method` type a by-position client calls (params: a tuple).
    positional: Ident,
    /// The subscription's declaration.
    declaration: Ident,
    /// The args by position, as the client sends them (trailing `None`s left out).
    args: Ident,
}

fn hidden(trait_name: &Ident, rpc: &Rpc) -> Hidden {
    let base = format!("__Sansrpc{}_{}", trait_name, rpc.func.sig.ident);
    let span = Span::call_site();
    Hidden {
        params: Ident::new(&format!("{base}_Params"), span),
        method: Ident::new(&format!("{base}_Method"), span),
        positional: Ident::new(&format!("{base}_Positional"), span),
        declaration: Ident::new(&format!("{base}_DECLARATION").to_uppercase(), span),
        args: Ident::new(&format!("{base}_Args"), span),
    }
}

/// The params structs, `Method` types and subscription declarations, shared by the server
/// trait and the client extension.
fn hidden_items(trait_name: &Ident, rpcs: &[Rpc], support: &TokenStream2) -> TokenStream2 {
    let serde_path = quote!(#support::serde).to_string();
    let mut out = TokenStream2::new();
    for rpc in rpcs {
        let h = hidden(trait_name, rpc);
        let (params, method, positional) = (&h.params, &h.method, &h.positional);
        let wire = &rpc.wire;
        let types: Vec<_> = rpc.params.iter().map(|p| &p.ty).collect();
        // Every type the trait names, so its imports are used whichever sides are made (a
        // client alone drops the error type and the pending subscription).
        let declared = Ident::new(
            &format!("__Sansrpc{}_{}_Declared", trait_name, rpc.func.sig.ident),
            Span::call_site(),
        );
        let (pending, ret) = match &rpc.kind {
            Kind::Method { ret, .. } => (None, quote!(#ret)),
            Kind::Subscription { pending, .. } => {
                let ty = &pending.ty;
                (Some(quote!(#ty,)), quote!(()))
            }
        };
        out.extend(quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            type #declared = fn(#pending #( #types ),*) -> #ret;
        });
        // By name, an `Option` that is `None` is left out, as by position at the end.
        let fields = rpc.params.iter().map(|p| {
            let (name, ty) = (&p.name, &p.ty);
            match is_option(ty) {
                true => quote! {
                    #[serde(skip_serializing_if = "::core::option::Option::is_none")]
                    #name: #ty
                },
                false => quote!(#name: #ty),
            }
        });
        out.extend(quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #[derive(#support::serde::Serialize, #support::serde::Deserialize)]
            #[serde(crate = #serde_path)]
            struct #params { #( #fields, )* }
        });
        out.extend(positional_args(&h.args, rpc, support));
        let Kind::Method { ok, ret } = &rpc.kind else {
            continue;
        };
        let ok = ok_type(ok, ret, support);
        let args = args_type(&h.args, rpc);
        out.extend(quote! {

            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            enum #method {}
            impl #support::Method for #method {
                const NAME: &'static str = #wire;
                type Params = #params;
                type Result = #ok;
            }

            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            enum #positional {}
            impl #support::Method for #positional {
                const NAME: &'static str = #wire;
                type Params = #args;
                type Result = #ok;
            }
        });
    }
    for rpc in rpcs {
        let h = hidden(trait_name, rpc);
        let wire = &rpc.wire;
        if let Kind::Subscription {
            notification,
            unsubscribe,
            ids,
            lag,
            capacity,
            notices,
            ..
        } = &rpc.kind
        {
            let declaration = &h.declaration;
            let unsubscribe = &unsubscribe.0;
            let ids = ids
                .as_ref()
                .map(|ids| quote!(.with_ids(#support::IdStyle::#ids)));
            let lag = lag
                .as_ref()
                .map(|lag| quote!(.with_lag(#support::LagPolicy::#lag)));
            let capacity = capacity
                .as_ref()
                .map(|bytes| quote_spanned!(bytes.span()=> .with_capacity(#bytes)));
            let notices = notices.as_ref().map(|on| quote!(.with_notices(#on)));
            out.extend(quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                const #declaration: #support::MethodSubscription =
                    #support::MethodSubscription::new(#wire, #notification, #unsubscribe) #ids #lag #capacity #notices;
            });
        }
    }
    out
}

/// The server trait: one async method per method of the trait, and `mount` / `into_router`.
fn server(item: &ItemTrait, rpcs: &[Rpc], support: &TokenStream2) -> TokenStream2 {
    let vis = &item.vis;
    let name = format_ident!("{}Server", item.ident);
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let mut methods = TokenStream2::new();
    let mut mounts = TokenStream2::new();
    for rpc in rpcs {
        let h = hidden(&item.ident, rpc);
        let attrs = &rpc.attrs;
        let ident = &rpc.func.sig.ident;
        let names: Vec<_> = rpc.params.iter().map(|p| &p.name).collect();
        let types: Vec<_> = rpc.params.iter().map(|p| &p.ty).collect();
        let params = &h.params;
        match &rpc.kind {
            Kind::Method { ret, .. } => {
                let method = &h.method;
                methods.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = #ret> + ::core::marker::Send;
                });
                // A wrong error type is reported at the return type the trait wrote.
                let into = quote_spanned! {ret.span()=>
                    |e| -> #support::ErrorObject<'static> { ::core::convert::Into::into(e) }
                };
                mounts.extend(quote! {
                    {
                        let this = ::std::sync::Arc::clone(&this);
                        router.method::<#method, _, _>(move |params: #params| {
                            let this = ::std::sync::Arc::clone(&this);
                            async move {
                                let result = this.#ident(#( params.#names ),*).await;
                                #support::RpcReturn::into_result(result).map_err(#into)
                            }
                        })?;
                    }
                });
            }
            Kind::Subscription { pending, .. } => {
                let (pending_name, pending_ty) = (&pending.name, &pending.ty);
                let declaration = &h.declaration;
                methods.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #pending_name: #pending_ty, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = ()> + ::core::marker::Send;
                });
                mounts.extend(quote! {
                    {
                        let this = ::std::sync::Arc::clone(&this);
                        router.subscription(#declaration, move |pending: #support::PendingSubscription, params: #params| {
                            let this = ::std::sync::Arc::clone(&this);
                            async move { this.#ident(pending, #( params.#names ),*).await }
                        })?;
                    }
                });
            }
        }
    }
    quote! {
        #(#docs)*
        #vis trait #name: ::core::marker::Send + ::core::marker::Sync + 'static {
            #methods

            /// Registers every method and subscription of this API on `router`, served by
            /// `self`; fails when a name is already taken there.
            fn mount(self, router: &mut #support::AsyncRouter) -> ::core::result::Result<(), #support::RegisterError>
            where
                Self: ::core::marker::Sized,
            {
                let this = ::std::sync::Arc::new(self);
                #mounts
                let _ = this;
                ::core::result::Result::Ok(())
            }

            /// A new router serving this API (and the core router's `rpc.discover`).
            fn into_router(self) -> ::core::result::Result<#support::AsyncRouter, #support::RegisterError>
            where
                Self: ::core::marker::Sized,
            {
                let mut router = #support::AsyncRouter::new();
                self.mount(&mut router)?;
                ::core::result::Result::Ok(router)
            }
        }
    }
}

/// The sync server trait: one plain method per method of the trait, and `mount_sync` /
/// `into_sync_router` on the core `Router` (what the blocking adapter and a sans-I/O loop
/// serve).
fn sync_server(item: &ItemTrait, rpcs: &[Rpc], support: &TokenStream2) -> TokenStream2 {
    let vis = &item.vis;
    let name = format_ident!("{}SyncServer", item.ident);
    let mut methods = TokenStream2::new();
    let mut mounts = TokenStream2::new();
    for rpc in rpcs {
        let h = hidden(&item.ident, rpc);
        let attrs = &rpc.attrs;
        let ident = &rpc.func.sig.ident;
        let names: Vec<_> = rpc.params.iter().map(|p| &p.name).collect();
        let types: Vec<_> = rpc.params.iter().map(|p| &p.ty).collect();
        let (params, method) = (&h.params, &h.method);
        let ret = match &rpc.kind {
            Kind::Method { ret, .. } => ret,
            Kind::Subscription { pending, .. } => {
                // The core router's pending subscription, whose `accept` blocks the worker
                // thread the handler runs on.
                let pending_name = &pending.name;
                let declaration = &h.declaration;
                methods.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #pending_name: #support::SyncPendingSubscription, #( #names: #types ),*);
                });
                mounts.extend(quote! {
                    {
                        let this = ::std::sync::Arc::clone(&this);
                        #support::SubscriptionRouter::subscription(&mut *router, #declaration, move |pending: #support::SyncPendingSubscription, params: #params| {
                            this.#ident(pending, #( params.#names ),*)
                        })?;
                    }
                });
                continue;
            }
        };
        methods.extend(quote! {
            #(#attrs)*
            fn #ident(&self, #( #names: #types ),*) -> #ret;
        });
        let into = quote_spanned! {ret.span()=>
            |e| -> #support::ErrorObject<'static> { ::core::convert::Into::into(e) }
        };
        mounts.extend(quote! {
            {
                let this = ::std::sync::Arc::clone(&this);
                router.method::<#method, _>(move |params: #params| {
                    let result = this.#ident(#( params.#names ),*);
                    #support::RpcReturn::into_result(result).map_err(#into)
                })?;
            }
        });
    }
    let doc = format!(
        "The server side of `{}`'s API with plain (not async) methods, for the core `Router`.",
        item.ident
    );
    quote! {
        #[doc = #doc]
        #vis trait #name: ::core::marker::Send + ::core::marker::Sync + 'static {
            #methods

            /// Registers every method and subscription of this API on the core `router`,
            /// served by `self`; fails when a name is already taken there.
            fn mount_sync(self, router: &mut #support::Router) -> ::core::result::Result<(), #support::RegisterError>
            where
                Self: ::core::marker::Sized,
            {
                let this = ::std::sync::Arc::new(self);
                #mounts
                let _ = this;
                ::core::result::Result::Ok(())
            }

            /// A new core router serving this API.
            fn into_sync_router(self) -> ::core::result::Result<#support::Router, #support::RegisterError>
            where
                Self: ::core::marker::Sized,
            {
                let mut router = #support::Router::new();
                self.mount_sync(&mut router)?;
                ::core::result::Result::Ok(router)
            }
        }
    }
}

/// The blocking client extension: a typed call per method on `sansrpc_blocking::Client`.
fn blocking_client(item: &ItemTrait, rpcs: &[Rpc], support: &TokenStream2) -> TokenStream2 {
    let vis = &item.vis;
    let name = format_ident!("{}BlockingClient", item.ident);
    let doc = format!(
        "The client side of `{}`'s API on a `sansrpc_blocking::Client`: typed calls that block, and subscriptions read as iterators.",
        item.ident
    );
    let mut decls = TokenStream2::new();
    let mut impls = TokenStream2::new();
    for rpc in rpcs {
        let h = hidden(&item.ident, rpc);
        let attrs = &rpc.attrs;
        let ident = &rpc.func.sig.ident;
        let names: Vec<_> = rpc.params.iter().map(|p| &p.name).collect();
        let types: Vec<_> = rpc.params.iter().map(|p| &p.ty).collect();
        let params = &h.params;
        let (method, build) = match rpc.param_kind {
            ParamKind::Array => (&h.positional, args_value(&h.args, rpc)),
            ParamKind::Map => (&h.method, quote!(#params { #( #names ),* })),
        };
        let ok = match &rpc.kind {
            Kind::Method { ok, ret } => ok_type(ok, ret, support),
            Kind::Subscription { item: ty, .. } => {
                let declaration = &h.declaration;
                let output = quote!(::core::result::Result<::sansrpc_blocking::Subscription<#ty>, #support::CallError>);
                decls.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #( #names: #types ),*) -> #output;
                });
                impls.extend(quote! {
                    fn #ident(&self, #( #names: #types ),*) -> #output {
                        ::sansrpc_blocking::Client::subscribe(self, &#declaration, &#build)
                    }
                });
                continue;
            }
        };
        let output = quote!(::core::result::Result<#ok, #support::CallError>);
        decls.extend(quote! {
            #(#attrs)*
            fn #ident(&self, #( #names: #types ),*) -> #output;
        });
        impls.extend(quote! {
            fn #ident(&self, #( #names: #types ),*) -> #output {
                ::sansrpc_blocking::Client::call::<#method>(self, &#build)
            }
        });
    }
    quote! {
        #[doc = #doc]
        #vis trait #name {
            #decls
        }

        impl #name for ::sansrpc_blocking::Client {
            #impls
        }
    }
}

/// The client extension: a typed call per method, a typed subscription per subscription.
fn client(item: &ItemTrait, rpcs: &[Rpc], support: &TokenStream2) -> TokenStream2 {
    let vis = &item.vis;
    let name = format_ident!("{}Client", item.ident);
    let doc = format!(
        "The client side of [`{}`]'s API: typed calls on any `AsRef<Client>`.",
        item.ident
    );
    let doc = LitStr::new(&doc, Span::call_site());
    let mut decls = TokenStream2::new();
    let mut impls = TokenStream2::new();
    for rpc in rpcs {
        let h = hidden(&item.ident, rpc);
        let attrs = &rpc.attrs;
        let ident = &rpc.func.sig.ident;
        let names: Vec<_> = rpc.params.iter().map(|p| &p.name).collect();
        let types: Vec<_> = rpc.params.iter().map(|p| &p.ty).collect();
        let params = &h.params;
        let build = match rpc.param_kind {
            ParamKind::Array => args_value(&h.args, rpc),
            ParamKind::Map => quote!(#params { #( #names ),* }),
        };
        match &rpc.kind {
            Kind::Method { ok, ret } => {
                let ok = ok_type(ok, ret, support);
                let method = match rpc.param_kind {
                    ParamKind::Array => &h.positional,
                    ParamKind::Map => &h.method,
                };
                let output = quote!(::core::result::Result<#ok, #support::CallError>);
                decls.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send;
                });
                impls.extend(quote! {
                    fn #ident(&self, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
                    {
                        let __sansrpc_client: &#support::Client = ::core::convert::AsRef::as_ref(self);
                        __sansrpc_client.call::<#method>(&#build)
                    }
                });
            }
            Kind::Subscription { item: ty, .. } => {
                let declaration = &h.declaration;
                let output = quote!(::core::result::Result<#support::Subscription<#ty>, #support::CallError>);
                decls.extend(quote! {
                    #(#attrs)*
                    fn #ident(&self, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send;
                });
                impls.extend(quote! {
                    fn #ident(&self, #( #names: #types ),*)
                        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
                    {
                        let __sansrpc_client: &#support::Client = ::core::convert::AsRef::as_ref(self);
                        let __sansrpc_params = #build;
                        async move {
                            __sansrpc_client.subscribe(&#declaration, &__sansrpc_params).await
                        }
                    }
                });
            }
        }
    }
    quote! {
        #[doc = #doc]
        #vis trait #name {
            #decls
        }

        impl<C> #name for C
        where
            C: ::core::convert::AsRef<#support::Client> + ::core::marker::Sync,
        {
            #impls
        }
    }
}
