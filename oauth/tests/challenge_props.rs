//! The `WWW-Authenticate` parser on arbitrary input: it never panics, what it returns is
//! bounded (by its limits and by the input's length), and well-formed challenges written
//! with any spacing, commas, quoting and escapes come back as they were.

use proptest::prelude::*;
use sansrpc_oauth::challenge::{parse, BearerChallenge, MAX_CHALLENGES, MAX_FIELD, MAX_PARAMS};

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}"
}

/// A parameter value: a token, or any text (quoted when written).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![token(), "[ -~\u{a0}-\u{24f}]{0,24}"]
}

#[derive(Clone, Debug)]
struct Written {
    scheme: String,
    params: Vec<(String, String)>,
}

fn challenge() -> impl Strategy<Value = Written> {
    (
        token(),
        prop::collection::btree_map("[a-z][a-z0-9_]{0,10}", value(), 0..6),
    )
        .prop_map(|(scheme, params)| Written {
            scheme,
            params: params.into_iter().collect(),
        })
}

/// Optional whitespace, as senders write it.
fn ows() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_owned()),
        Just("\t ".to_owned())
    ]
}

fn quote(v: &str) -> String {
    let mut out = String::from("\"");
    for c in v.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `challenges` written out; a value that is a token is written bare or quoted as
/// `forms` says.
fn write(challenges: &[Written], spacing: &[String], forms: &[bool]) -> String {
    let mut out = String::new();
    let mut k = 0;
    let mut next_space = || {
        k += 1;
        spacing[k % spacing.len()].clone()
    };
    for (i, c) in challenges.iter().enumerate() {
        if i > 0 {
            out.push_str(&next_space());
            out.push(',');
            out.push_str(&next_space());
        }
        out.push_str(&c.scheme);
        for (j, (name, value)) in c.params.iter().enumerate() {
            if j == 0 {
                out.push(' ');
            } else {
                out.push_str(&next_space());
                out.push(',');
                out.push_str(&next_space());
            }
            out.push_str(name);
            out.push_str(&next_space());
            out.push('=');
            out.push_str(&next_space());
            let bare = forms[(i + j) % forms.len()]
                && !value.is_empty()
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+.^_`|~-".contains(&b));
            if bare {
                out.push_str(value);
            } else {
                out.push_str(&quote(value));
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_and_gives_back_bounded_output(s in "\\PC{0,300}") {
        check_bounded(&s);
    }

    #[test]
    fn text_made_of_the_grammars_characters_never_panics(s in "[A-Za-z0-9 =,\"\\\\\t\r\n/+~.:_-]{0,200}") {
        check_bounded(&s);
    }

    #[test]
    fn written_challenges_come_back_as_they_were(
        challenges in prop::collection::vec(challenge(), 1..5),
        spacing in prop::collection::vec(ows(), 1..4),
        forms in prop::collection::vec(any::<bool>(), 1..4),
    ) {
        let field = write(&challenges, &spacing, &forms);
        let parsed = parse(&field).map_err(|e| TestCaseError::fail(format!("{e} in {field:?}")))?;
        prop_assert_eq!(parsed.len(), challenges.len(), "{:?}", field);
        for (got, want) in parsed.iter().zip(&challenges) {
            prop_assert_eq!(&got.scheme, &want.scheme);
            prop_assert_eq!(&got.params, &want.params, "{:?}", field);
            prop_assert!(got.token68.is_none());
        }
        let bearer = challenges.iter().position(|c| c.scheme.eq_ignore_ascii_case("bearer"));
        let found = BearerChallenge::from_fields([field.as_str()]);
        prop_assert_eq!(found.is_some(), bearer.is_some());
    }
}

fn check_bounded(s: &str) {
    let _ = BearerChallenge::from_fields([s, s]);
    if let Ok(challenges) = parse(s) {
        assert!(challenges.len() <= MAX_CHALLENGES);
        let mut total = 0;
        for c in &challenges {
            assert!(c.params.len() <= MAX_PARAMS);
            assert!(!c.scheme.is_empty());
            total += c.scheme.len() + c.token68.as_ref().map_or(0, String::len);
            total += c
                .params
                .iter()
                .map(|(n, v)| n.len() + v.len())
                .sum::<usize>();
        }
        // Nothing is made up: the output is no longer than the input.
        assert!(total <= s.len(), "{s:?} gave {challenges:?}");
    }
}

#[test]
fn a_field_over_the_limit_is_refused_without_being_read() {
    let long = format!("Bearer scope=\"{}\"", "a".repeat(MAX_FIELD));
    assert!(parse(&long).is_err());
    let many_params = format!(
        "Bearer {}",
        (0..=MAX_PARAMS)
            .map(|i| format!("p{i}=v"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(parse(&many_params).is_err());
}
