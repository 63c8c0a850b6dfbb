//! Compile errors of `#[rpc]` point at the span that causes them; a well-formed trait
//! compiles (`ui/*.rs`, their expected messages in `ui/*.stderr`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
