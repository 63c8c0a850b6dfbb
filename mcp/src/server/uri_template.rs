//! Matching URIs against resource templates: RFC 6570 simple (`{var}`) and reserved
//! (`{+var}`) expressions, the forms MCP servers use.

use std::collections::BTreeMap;

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A variable; `reserved` (`{+var}`) values may contain `/`, `?` and `#`.
    Var {
        name: String,
        reserved: bool,
    },
}

impl UriTemplate {
    /// Parses `template`; an unclosed brace, an empty or unsupported expression, or two
    /// variables with nothing between them is an error.
    pub fn parse(template: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or("an expression is not closed")?
                + open;
            let expr = &rest[open + 1..close];
            let (name, reserved) = match expr.strip_prefix('+') {
                Some(name) => (name, true),
                None => (expr, false),
            };
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !valid {
                return Err(format!("unsupported expression {{{expr}}}"));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err("two variables with nothing between them".into());
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("a closing brace without an opening one".into());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// The variables' values when `uri` matches the template (each non-empty; a simple
    /// variable's value has no `/`, `?` or `#`), else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        match_from(&self.parts, uri, &mut vars).then_some(vars)
    }
}

fn match_from(parts: &[Part], uri: &str, vars: &mut BTreeMap<String, String>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_from(rest, tail, vars)),
        Some((Part::Var { name, reserved }, rest)) => {
            // The shortest value that lets the rest match (the next literal bounds it).
            let allowed = |c: char| *reserved || !matches!(c, '/' | '?' | '#');
            let mut end = 0;
            for (i, c) in uri.char_indices() {
                if !allowed(c) {
                    break;
                }
                end = i + c.len_utf8();
                if match_from(rest, &uri[end..], vars) {
                    vars.insert(name.clone(), uri[..end].to_owned());
                    return true;
                }
            }
            let _ = end;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_what_they_describe() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let vars = t.matches("test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/123/data/x").is_none());
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(t.matches("file:///a/b.rs").unwrap()["path"], "a/b.rs");
        let t = UriTemplate::parse("w://{city}.{unit}").unwrap();
        let vars = t.matches("w://paris.metric").unwrap();
        assert_eq!(
            (vars["city"].as_str(), vars["unit"].as_str()),
            ("paris", "metric")
        );
        for bad in ["a{", "a{}", "a{b c}", "{a}{b}", "a}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
