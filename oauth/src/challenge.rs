//! The `WWW-Authenticate` header (RFC 9110 §11.6.1, RFC 6750 §3): challenges, each a scheme
//! with a token68 or parameters, several per field value and several field values per answer.
//!
//! The parser is bounded (a field value over [`MAX_FIELD`] bytes, more than
//! [`MAX_CHALLENGES`] challenges or more than [`MAX_PARAMS`] parameters in one is an error),
//! never panics, and is lenient where servers are known to stray: an unquoted value may
//! hold `:` and `/` (`resource_metadata=https://…`), and a parameter after a comma belongs
//! to the challenge before it (`Bearer, realm="x"`).

use std::fmt;

/// The longest field value parsed, in bytes.
pub const MAX_FIELD: usize = 16 * 1024;
/// The most challenges taken from one field value.
pub const MAX_CHALLENGES: usize = 32;
/// The most parameters taken in one challenge.
pub const MAX_PARAMS: usize = 64;

/// One challenge: an authentication scheme and its token68 or parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme as sent (`Bearer`); compare it without case.
    pub scheme: String,
    /// The token68 after the scheme, if that is its form (`Negotiate abc==`).
    pub token68: Option<String>,
    /// The parameters in order, names in lowercase, quoted values unescaped. A name sent
    /// twice keeps its first value.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of the parameter `name` (any case).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scheme is `scheme` (any case).
    pub fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }
}

/// Why a field value could not be parsed: the byte offset and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeError {
    /// Byte offset in the field value.
    pub at: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

impl fmt::Display for ChallengeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed WWW-Authenticate at byte {}: {}",
            self.at, self.reason
        )
    }
}

impl std::error::Error for ChallengeError {}

/// What a `Bearer` challenge says (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: the URL of the protected resource's metadata (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, `invalid_request`…
    pub error: Option<String>,
    /// `error_description`: the server's words.
    pub error_description: Option<String>,
    /// `realm`.
    pub realm: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` challenge among the `WWW-Authenticate` field values `fields` (an
    /// answer may carry several fields, each with several challenges). A field that does not
    /// parse is skipped; `None` when no field holds a `Bearer` challenge.
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = &'a str>) -> Option<BearerChallenge> {
        fields
            .into_iter()
            .filter_map(|field| parse(field).ok())
            .flatten()
            .find(|c| c.is("Bearer"))
            .map(|c| BearerChallenge {
                resource_metadata: c.param("resource_metadata").map(str::to_owned),
                scope: c.param("scope").map(str::to_owned),
                error: c.param("error").map(str::to_owned),
                error_description: c.param("error_description").map(str::to_owned),
                realm: c.param("realm").map(str::to_owned),
            })
    }

    /// Whether `error` is `insufficient_scope` (RFC 6750 §3.1): a step-up is asked for.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Parses one `WWW-Authenticate` field value into its challenges.
///
/// Empty list elements are skipped (`, Bearer`); an empty value gives no challenge.
pub fn parse(field: &str) -> Result<Vec<Challenge>, ChallengeError> {
    if field.len() > MAX_FIELD {
        return Err(ChallengeError {
            at: MAX_FIELD,
            reason: "the field value is longer than the parser takes",
        });
    }
    let mut p = Parser {
        s: field.as_bytes(),
        i: 0,
    };
    let mut out: Vec<Challenge> = Vec::new();
    loop {
        p.skip_list_separators();
        if p.at_end() {
            return Ok(out);
        }
        if out.len() == MAX_CHALLENGES {
            return Err(p.error("more challenges than the parser takes"));
        }
        let scheme = p.token().ok_or_else(|| p.error("expected a scheme"))?;
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            token68: None,
            params: Vec::new(),
        };
        let spaces = p.skip_ws();
        if !p.at_end() && p.peek() != Some(b',') {
            if spaces == 0 {
                return Err(p.error("expected a space after the scheme"));
            }
            if let Some(token68) = p.token68() {
                challenge.token68 = Some(token68.to_owned());
            } else {
                p.param_into(&mut challenge)?;
            }
        }
        // Further parameters: list elements that look like `name=` belong to this
        // challenge; anything else starts the next one.
        loop {
            p.skip_ws();
            if p.at_end() {
                break;
            }
            if p.peek() != Some(b',') {
                return Err(p.error("expected a comma"));
            }
            let mark = p.i;
            p.skip_list_separators();
            if challenge.token68.is_none() && p.looks_like_param() {
                p.param_into(&mut challenge)?;
            } else {
                p.i = mark;
                break;
            }
        }
        out.push(challenge);
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Whitespace between elements: SP, HTAB, and CR/LF of a folded field.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 9110 `token68` characters (before the trailing `=`).
fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

impl<'a> Parser<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn error(&self, reason: &'static str) -> ChallengeError {
        ChallengeError { at: self.i, reason }
    }

    /// Skips whitespace (spaces and tabs, and the line breaks of an obsolete folded
    /// field, which RFC 9110 §5.5 lets a recipient read as spaces); how much.
    fn skip_ws(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(is_ws) {
            self.i += 1;
        }
        self.i - start
    }

    /// Skips whitespace and commas (empty list elements).
    fn skip_list_separators(&mut self) {
        while self.peek().is_some_and(|b| is_ws(b) || b == b',') {
            self.i += 1;
        }
    }

    /// A token at the cursor, consumed.
    fn token(&mut self) -> Option<&'a str> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        // Only ASCII bytes were taken: a whole UTF-8 sequence.
        (self.i > start)
            .then(|| std::str::from_utf8(&self.s[start..self.i]).ok())
            .flatten()
    }

    /// A token68 at the cursor (consumed) if what follows is one: token68 characters, then
    /// `=` padding, then the end, whitespace or a comma, and not `name=value`.
    fn token68(&mut self) -> Option<&'a str> {
        let start = self.i;
        let mut j = start;
        while self.s.get(j).copied().is_some_and(is_token68_char) {
            j += 1;
        }
        if j == start {
            return None;
        }
        while self.s.get(j) == Some(&b'=') {
            j += 1;
        }
        let mut k = j;
        while self.s.get(k).copied().is_some_and(is_ws) {
            k += 1;
        }
        if k < self.s.len() && self.s[k] != b',' {
            return None;
        }
        self.i = j;
        std::str::from_utf8(&self.s[start..j]).ok()
    }

    /// Whether the cursor is at `token BWS "="` (a parameter).
    fn looks_like_param(&self) -> bool {
        let mut j = self.i;
        while self.s.get(j).copied().is_some_and(is_tchar) {
            j += 1;
        }
        if j == self.i {
            return false;
        }
        while self.s.get(j).copied().is_some_and(is_ws) {
            j += 1;
        }
        self.s.get(j) == Some(&b'=')
    }

    /// `name BWS "=" BWS value`, pushed onto `challenge` (a repeated name keeps its first
    /// value).
    fn param_into(&mut self, challenge: &mut Challenge) -> Result<(), ChallengeError> {
        if challenge.params.len() == MAX_PARAMS {
            return Err(self.error("more parameters than the parser takes"));
        }
        let name = self
            .token()
            .ok_or_else(|| self.error("expected a parameter name"))?;
        self.skip_ws();
        if self.peek() != Some(b'=') {
            return Err(self.error("expected '=' after a parameter name"));
        }
        self.i += 1;
        self.skip_ws();
        let value = if self.peek() == Some(b'"') {
            self.quoted()?
        } else {
            self.unquoted()?
        };
        let name = name.to_ascii_lowercase();
        if !challenge.params.iter().any(|(n, _)| *n == name) {
            challenge.params.push((name, value));
        }
        Ok(())
    }

    /// A quoted-string at the cursor (at its `"`), unescaped.
    fn quoted(&mut self) -> Result<String, ChallengeError> {
        self.i += 1;
        let mut value = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated quoted string")),
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b) if b == b'\t' || b >= 0x20 && b != 0x7f => {
                            value.push(b);
                            self.i += 1;
                        }
                        _ => return Err(self.error("bad escape in a quoted string")),
                    }
                }
                Some(b) if b == b'\t' || b >= 0x20 && b != 0x7f => {
                    value.push(b);
                    self.i += 1;
                }
                Some(_) => return Err(self.error("control character in a quoted string")),
            }
        }
        // The input is UTF-8 and only ASCII backslashes were dropped.
        String::from_utf8(value).map_err(|_| self.error("a quoted string is not UTF-8"))
    }

    /// An unquoted value: a token, or (leniently) anything up to whitespace or a comma.
    fn unquoted(&mut self) -> Result<String, ChallengeError> {
        let start = self.i;
        while let Some(b) = self.peek() {
            if b == b' ' || b == b'\t' || b == b',' || b == b'"' || b < 0x20 || b == 0x7f {
                break;
            }
            self.i += 1;
        }
        if self.i == start {
            return Err(self.error("expected a parameter value"));
        }
        // Stopped only at ASCII bytes: a whole UTF-8 sequence.
        std::str::from_utf8(&self.s[start..self.i])
            .map(str::to_owned)
            .map_err(|_| self.error("a value is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(field: &str) -> Challenge {
        let mut all = parse(field).unwrap();
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn the_mcp_examples() {
        let c = one(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource",
                         scope="files:read""#,
        );
        assert!(c.is("bearer"));
        assert_eq!(
            c.param("resource_metadata"),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.param("scope"), Some("files:read"));

        let b = BearerChallenge::from_fields([r#"Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required""#]).unwrap();
        assert!(b.is_insufficient_scope());
        assert_eq!(
            b.scope.as_deref(),
            Some("files:read files:write user:profile")
        );
        assert_eq!(
            b.error_description.as_deref(),
            Some("Additional file write permission required")
        );
    }

    #[test]
    fn several_challenges_in_one_field_and_across_fields() {
        let all =
            parse(r#"Basic realm="a b", Bearer realm="x", error=invalid_token, Negotiate abc+/=="#)
                .unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].param("realm"), Some("a b"));
        assert_eq!(all[1].param("error"), Some("invalid_token"));
        assert_eq!(all[2].token68.as_deref(), Some("abc+/=="));

        let b = BearerChallenge::from_fields(["Basic realm=x", "Bearer scope=\"a\""]).unwrap();
        assert_eq!(b.scope.as_deref(), Some("a"));
        assert_eq!(BearerChallenge::from_fields(["Basic realm=x"]), None);
    }

    #[test]
    fn quoted_pairs_and_commas_inside_quotes() {
        let c = one(r#"Bearer error_description="say \"no\", then \\leave", scope="a,b""#);
        assert_eq!(
            c.param("error_description"),
            Some(r#"say "no", then \leave"#)
        );
        assert_eq!(c.param("scope"), Some("a,b"));
    }

    #[test]
    fn lenient_forms_servers_send() {
        let c = one(
            "Bearer resource_metadata=https://h.example/.well-known/oauth-protected-resource/mcp",
        );
        assert_eq!(
            c.param("resource_metadata"),
            Some("https://h.example/.well-known/oauth-protected-resource/mcp")
        );
        let c = one(r#"Bearer, realm = "x" ,, scope=a"#);
        assert_eq!(c.param("realm"), Some("x"));
        assert_eq!(c.param("scope"), Some("a"));
        let c = one("Bearer");
        assert!(c.params.is_empty());
        assert_eq!(
            one(r#"Bearer Scope="a", scope="b""#).param("scope"),
            Some("a")
        );
        assert!(parse("").unwrap().is_empty());
        assert!(parse(" , ").unwrap().is_empty());
    }

    #[test]
    fn malformed_values_are_errors() {
        assert!(parse(r#"Bearer scope="open"#).is_err());
        assert!(parse("Bearer scope=, x=y").is_err());
        assert!(parse("Bearer =x").is_err());
        assert!(parse("=x").is_err());
        assert!(parse("Bearer a=b c=d").is_err());
        assert!(parse("Bearer scope=\"a\u{1}\"").is_err());
        assert!(parse(&"a".repeat(MAX_FIELD + 1)).is_err());
        let many = vec!["Basic"; MAX_CHALLENGES + 1].join(", ");
        assert!(parse(&many).is_err());
    }
}
