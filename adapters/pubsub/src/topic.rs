//! Topics and subscription patterns with NATS semantics (WebSocket seed §10.4–10.5), and a
//! token trie that finds every pattern matching a topic.
//!
//! A topic is dot-separated tokens: `stock.prices.AAPL`. A pattern may also use `*` for
//! exactly one token and `>` for one or more trailing tokens, `>` only as the last token:
//! `events.*` matches `events.user` but not `events.user.login`; `events.>` matches both,
//! and not `events` alone. A token is non-empty, has no whitespace or control characters,
//! and is a wildcard only when it is `*` or `>` alone (`a*` is refused, not a literal, so no
//! one mistakes it for a prefix match).

use core::fmt;
use std::collections::BTreeMap;
use std::string::String;
use std::vec::Vec;

/// Bounds on topics and patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicLimits {
    /// Most bytes in a topic or pattern (default 256).
    pub max_len: usize,
    /// Most tokens in a topic or pattern (default 16).
    pub max_tokens: usize,
}

impl Default for TopicLimits {
    fn default() -> Self {
        TopicLimits {
            max_len: 256,
            max_tokens: 16,
        }
    }
}

/// Why a topic or pattern was refused; peers see it as `-32602` with this text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicError {
    /// Empty, or a token between two dots (or at either end) is empty.
    EmptyToken,
    /// Longer than [`TopicLimits::max_len`].
    TooLong,
    /// More tokens than [`TopicLimits::max_tokens`].
    TooManyTokens,
    /// Whitespace or a control character.
    BadCharacter,
    /// `*` or `>` inside a token (`a*`), which is neither a literal nor a wildcard.
    PartialWildcard,
    /// `>` before the last token.
    TailNotLast,
    /// A wildcard where only an exact topic is allowed (publishing; persistent
    /// subscriptions).
    Wildcard,
}

impl fmt::Display for TopicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TopicError::EmptyToken => "a topic is non-empty dot-separated non-empty tokens",
            TopicError::TooLong => "the topic is too long",
            TopicError::TooManyTokens => "the topic has too many tokens",
            TopicError::BadCharacter => "a topic has no whitespace or control characters",
            TopicError::PartialWildcard => "`*` and `>` are wildcards only as a whole token",
            TopicError::TailNotLast => "`>` may only be the last token",
            TopicError::Wildcard => "wildcards are not allowed here: an exact topic is needed",
        })
    }
}

impl std::error::Error for TopicError {}

/// Checks a subscription pattern (wildcards allowed).
pub fn validate_pattern(pattern: &str, limits: &TopicLimits) -> Result<(), TopicError> {
    if pattern.len() > limits.max_len {
        return Err(TopicError::TooLong);
    }
    let mut count = 0;
    let mut tokens = pattern.split('.').peekable();
    while let Some(token) = tokens.next() {
        count += 1;
        if count > limits.max_tokens {
            return Err(TopicError::TooManyTokens);
        }
        if token.is_empty() {
            return Err(TopicError::EmptyToken);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TopicError::BadCharacter);
        }
        match token {
            "*" => {}
            ">" if tokens.peek().is_some() => return Err(TopicError::TailNotLast),
            ">" => {}
            t if t.contains(['*', '>']) => return Err(TopicError::PartialWildcard),
            _ => {}
        }
    }
    Ok(())
}

/// Checks an exact topic: a valid pattern without wildcards.
pub fn validate_topic(topic: &str, limits: &TopicLimits) -> Result<(), TopicError> {
    validate_pattern(topic, limits)?;
    if topic.split('.').any(|t| t == "*" || t == ">") {
        return Err(TopicError::Wildcard);
    }
    Ok(())
}

/// Whether valid `pattern` matches valid exact `topic`, token by token: the reference
/// semantics the [`Trie`] is tested against.
pub fn matches(pattern: &str, topic: &str) -> bool {
    let mut p = pattern.split('.');
    let mut t = topic.split('.');
    loop {
        match (p.next(), t.next()) {
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Patterns mapped to subscriber keys, organised by token so that finding the subscribers
/// of a topic visits only the branches that can match it: the cost grows with the topic's
/// depth and the number of matching wildcard branches, never with the number of
/// subscriptions.
///
/// Patterns are assumed valid ([`validate_pattern`]); a key is stored at most once per
/// pattern.
#[derive(Debug, Clone)]
pub struct Trie<K> {
    root: Node<K>,
    len: usize,
}

#[derive(Debug, Clone)]
struct Node<K> {
    literal: BTreeMap<String, Node<K>>,
    star: Option<std::boxed::Box<Node<K>>>,
    /// Keys whose pattern ends here.
    here: Vec<K>,
    /// Keys whose pattern has `>` as the next (last) token.
    tail: Vec<K>,
}

impl<K> Default for Node<K> {
    fn default() -> Self {
        Node {
            literal: BTreeMap::new(),
            star: None,
            here: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<K> Node<K> {
    fn is_empty(&self) -> bool {
        self.literal.is_empty()
            && self.star.is_none()
            && self.here.is_empty()
            && self.tail.is_empty()
    }
}

impl<K> Default for Trie<K> {
    fn default() -> Self {
        Trie {
            root: Node::default(),
            len: 0,
        }
    }
}

impl<K: Ord + Copy> Trie<K> {
    /// An empty trie.
    pub fn new() -> Self {
        Trie::default()
    }

    /// Number of (pattern, key) entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `key` under `pattern`; false if it was already there.
    pub fn insert(&mut self, pattern: &str, key: K) -> bool {
        let mut node = &mut self.root;
        let mut tokens = pattern.split('.').peekable();
        let list = loop {
            let Some(token) = tokens.next() else {
                break &mut node.here;
            };
            node = match token {
                ">" => break &mut node.tail,
                "*" => node.star.get_or_insert_with(Default::default),
                t => node.literal.entry(t.into()).or_default(),
            };
        };
        match list.binary_search(&key) {
            Ok(_) => false,
            Err(at) => {
                list.insert(at, key);
                self.len += 1;
                true
            }
        }
    }

    /// Removes `key` from `pattern`, pruning branches left empty; false if it was not there.
    pub fn remove(&mut self, pattern: &str, key: K) -> bool {
        let tokens: Vec<&str> = pattern.split('.').collect();
        let removed = remove_in(&mut self.root, &tokens, key);
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Calls `f` with every key whose pattern matches exact `topic`. A key subscribed under
    /// several matching patterns is seen once per pattern.
    pub fn for_each_match(&self, topic: &str, mut f: impl FnMut(K)) {
        let mut tokens: tokens::Tokens<'_> = tokens::Tokens::new();
        for t in topic.split('.') {
            tokens.push(t);
        }
        visit(&self.root, tokens.as_slice(), &mut f);
    }
}

fn visit<K: Copy>(node: &Node<K>, tokens: &[&str], f: &mut impl FnMut(K)) {
    let Some((first, rest)) = tokens.split_first() else {
        node.here.iter().for_each(|&k| f(k));
        return;
    };
    node.tail.iter().for_each(|&k| f(k));
    if let Some(next) = node.literal.get(*first) {
        visit(next, rest, f);
    }
    if let Some(star) = &node.star {
        visit(star, rest, f);
    }
}

fn remove_in<K: Ord + Copy>(node: &mut Node<K>, tokens: &[&str], key: K) -> bool {
    let remove = |list: &mut Vec<K>| match list.binary_search(&key) {
        Ok(at) => {
            list.remove(at);
            true
        }
        Err(_) => false,
    };
    match tokens.split_first() {
        None => remove(&mut node.here),
        Some((&">", _)) => remove(&mut node.tail),
        Some((&"*", rest)) => {
            let Some(star) = node.star.as_deref_mut() else {
                return false;
            };
            let removed = remove_in(star, rest, key);
            if star.is_empty() {
                node.star = None;
            }
            removed
        }
        Some((token, rest)) => {
            let Some(next) = node.literal.get_mut(*token) else {
                return false;
            };
            let removed = remove_in(next, rest, key);
            if next.is_empty() {
                node.literal.remove(*token);
            }
            removed
        }
    }
}

/// A topic's tokens on the stack for the usual depths, so matching allocates nothing.
mod tokens {
    const INLINE: usize = 16;

    pub(super) struct Tokens<'a> {
        inline: [&'a str; INLINE],
        len: usize,
        spill: std::vec::Vec<&'a str>,
    }

    impl<'a> Tokens<'a> {
        pub(super) fn new() -> Self {
            Tokens {
                inline: [""; INLINE],
                len: 0,
                spill: std::vec::Vec::new(),
            }
        }

        pub(super) fn push(&mut self, t: &'a str) {
            if self.len < INLINE && self.spill.is_empty() {
                self.inline[self.len] = t;
                self.len += 1;
            } else {
                if self.spill.is_empty() {
                    self.spill.extend_from_slice(&self.inline[..self.len]);
                }
                self.spill.push(t);
            }
        }

        pub(super) fn as_slice(&self) -> &[&'a str] {
            if self.spill.is_empty() {
                &self.inline[..self.len]
            } else {
                &self.spill
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn validation() {
        let l = TopicLimits::default();
        for ok in [
            "a",
            "chat.messages",
            "events.*",
            "events.>",
            "*",
            ">",
            "*.b.>",
            "ü.ö",
        ] {
            assert_eq!(validate_pattern(ok, &l), Ok(()), "{ok}");
        }
        let bad = [
            ("", TopicError::EmptyToken),
            ("a..b", TopicError::EmptyToken),
            (".a", TopicError::EmptyToken),
            ("a.", TopicError::EmptyToken),
            ("a b", TopicError::BadCharacter),
            ("a.\u{7}", TopicError::BadCharacter),
            ("a*", TopicError::PartialWildcard),
            ("a.b>", TopicError::PartialWildcard),
            (">.a", TopicError::TailNotLast),
        ];
        for (pattern, e) in bad {
            assert_eq!(validate_pattern(pattern, &l), Err(e), "{pattern:?}");
        }
        let long = "a".repeat(257);
        assert_eq!(validate_pattern(&long, &l), Err(TopicError::TooLong));
        let deep = vec!["a"; 17].join(".");
        assert_eq!(validate_pattern(&deep, &l), Err(TopicError::TooManyTokens));
        assert_eq!(validate_topic("a.*", &l), Err(TopicError::Wildcard));
        assert_eq!(validate_topic("a.>", &l), Err(TopicError::Wildcard));
        assert_eq!(validate_topic("a.b", &l), Ok(()));
    }

    #[test]
    fn seed_examples() {
        assert!(matches("events.*", "events.user"));
        assert!(matches("events.*", "events.admin"));
        assert!(!matches("events.*", "events.user.login"));
        assert!(matches("events.>", "events.user"));
        assert!(matches("events.>", "events.user.login"));
        assert!(!matches("events.>", "events"));
    }

    #[test]
    fn trie_insert_match_remove() {
        let mut t = Trie::new();
        assert!(t.insert("events.*", 1));
        assert!(!t.insert("events.*", 1));
        assert!(t.insert("events.>", 2));
        assert!(t.insert("events.user", 3));
        assert!(t.insert(">", 4));
        let seen = |t: &Trie<i32>, topic| {
            let mut v = Vec::new();
            t.for_each_match(topic, |k| v.push(k));
            v.sort();
            v
        };
        assert_eq!(seen(&t, "events.user"), [1, 2, 3, 4]);
        assert_eq!(seen(&t, "events.user.login"), [2, 4]);
        assert_eq!(seen(&t, "events"), [4]);
        assert!(t.remove("events.*", 1));
        assert!(!t.remove("events.*", 1));
        assert!(!t.remove("nothing.here", 1));
        assert_eq!(seen(&t, "events.admin"), [2, 4]);
        for (p, k) in [("events.>", 2), ("events.user", 3), (">", 4)] {
            assert!(t.remove(p, k));
        }
        assert!(t.is_empty());
        assert!(t.root.is_empty(), "every branch is pruned");
    }
}
