//! The harness of the test binaries that have no libtest harness (they run themselves as a
//! child process, whose stdout must carry nothing of libtest's): lists its tests the way
//! libtest does (`--list --format terse`, which cargo-nextest asks for; none with
//! `--ignored`: no test here is ignored) and runs the ones its arguments select (`NAME
//! --exact` one, as nextest runs each test; none given, all, as `cargo test` does).
#![allow(dead_code)]

/// Lists or runs `tests` (name, test) as the command line says; a failing test panics,
/// which fails the process.
pub fn run(tests: &[(&str, fn())]) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--list") {
        if !has("--ignored") {
            for (name, _) in tests {
                println!("{name}: test");
            }
        }
        return;
    }
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let selected = |name: &str| {
        !has("--ignored")
            && (filters.is_empty()
                || filters.iter().any(|f| {
                    if has("--exact") {
                        name == *f
                    } else {
                        name.contains(f)
                    }
                }))
    };
    let mut passed = 0;
    for (name, test) in tests.iter().filter(|(name, _)| selected(name)) {
        test();
        println!("test {name} ... ok");
        passed += 1;
    }
    println!(
        "\ntest result: ok. {passed} passed; 0 failed; 0 ignored; 0 measured; {} filtered out\n",
        tests.len() - passed
    );
}
