//! Matching URIs against resource templates: RFC 6570 simple (`{var}`) and reserved
//! (`{+var}`) expressions, the forms MCP servers use.

use std::collections::BTreeMap;

/// A parsed URI template, matched in time linear in the URI's length (it compiles to a
/// `regex` automaton, which never backtracks).
#[derive(Debug, Clone)]
pub struct UriTemplate {
    names: Vec<String>,
    pattern: regex::Regex,
}

impl UriTemplate {
    /// Parses `template`; an unclosed brace, an empty or unsupported expression, or two
    /// variables with nothing between them is an error.
    pub fn parse(template: &str) -> Result<Self, String> {
        let mut names = Vec::new();
        let mut pattern = String::from("^");
        let mut rest = template;
        let mut last_was_var = false;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pattern.push_str(&regex::escape(&rest[..open]));
                last_was_var = false;
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
            if last_was_var {
                return Err("two variables with nothing between them".into());
            }
            // The shortest non-empty value that lets the rest match; a simple variable's
            // value has no `/`, `?` or `#`.
            pattern.push_str(if reserved { "(.+?)" } else { "([^/?#]+?)" });
            names.push(name.to_owned());
            last_was_var = true;
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("a closing brace without an opening one".into());
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        let pattern = regex::Regex::new(&pattern).map_err(|e| e.to_string())?;
        Ok(UriTemplate { names, pattern })
    }

    /// The variables' values when `uri` matches the template (each non-empty; a simple
    /// variable's value has no `/`, `?` or `#`), else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let captures = self.pattern.captures(uri)?;
        let values = captures
            .iter()
            .skip(1)
            .map(|c| c.map_or("", |m| m.as_str()));
        Some(
            self.names
                .iter()
                .cloned()
                .zip(values.map(str::to_owned))
                .collect(),
        )
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
        // Regex characters in the literal parts are literal.
        let t = UriTemplate::parse("q://a.b*/{x}").unwrap();
        assert!(t.matches("q://aXb*/1").is_none());
        assert_eq!(t.matches("q://a.b*/1").unwrap()["x"], "1");
        // Three variables over a long URI that almost matches: linear, not cubic (a
        // backtracking matcher takes minutes here).
        let t = UriTemplate::parse("w://{+a}.{+b}.{+c}!").unwrap();
        let long = format!("w://{}", ".".repeat(8 * 1024));
        assert!(t.matches(&long).is_none());
    }
}
