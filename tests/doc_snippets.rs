//! Every snippet the docs credit to a file is that file's code. A `rust,ignore` block (one
//! the doctests do not compile) whose paragraph links `.rs` files must be, line for line
//! (indentation aside), lines of those files: the whole file, or a marked excerpt whose
//! parts, separated by `// ...` lines, are each consecutive lines of one of them, in the
//! file's order. The README's `weather.rs` block is checked the same way (and in full, by
//! `adapters/tokio/tests/mcp_weather.rs`).

use std::path::{Path, PathBuf};

/// The docs: the README and every page of `docs/`.
fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// A `rust,ignore` block: where it starts (1-based line of its fence), its lines, and the
/// `.rs` files its paragraph links.
struct Block {
    line: usize,
    lines: Vec<String>,
    credited: Vec<PathBuf>,
}

/// The `.rs` targets of the markdown links in `text`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if target.ends_with(".rs") {
                found.push(target.to_owned());
            }
        }
    }
    found
}

fn blocks(doc: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(doc).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| panic!("{}:{}: a fence never closed", doc.display(), i + 1));
        if info.starts_with("rust") && info.contains("ignore") {
            // The paragraph right above the fence (blank lines between skipped).
            let mut top = i;
            while top > 0 && lines[top - 1].trim().is_empty() {
                top -= 1;
            }
            let bottom = top;
            while top > 0 && !lines[top - 1].trim().is_empty() && !lines[top - 1].starts_with("```")
            {
                top -= 1;
            }
            let paragraph = lines[top..bottom].join("\n");
            let dir = doc.parent().unwrap();
            out.push(Block {
                line: i + 1,
                lines: lines[i + 1..end].iter().map(|l| (*l).to_owned()).collect(),
                credited: links(&paragraph).iter().map(|t| dir.join(t)).collect(),
            });
        }
        i = end + 1;
    }
    out
}

/// Where `part` (trimmed lines) stands as consecutive lines of `file`, at or after `from`.
fn find(file: &[String], part: &[String], from: usize) -> Option<usize> {
    (from..=file.len().saturating_sub(part.len())).find(|&at| file[at..at + part.len()] == *part)
}

/// Why `block` is not its files' code, if it is not.
fn mismatch(block: &Block) -> Option<String> {
    let files: Vec<(PathBuf, Vec<String>)> = block
        .credited
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (
                path.clone(),
                text.lines().map(|l| l.trim().to_owned()).collect(),
            )
        })
        .collect();
    let mut parts: Vec<Vec<String>> = vec![Vec::new()];
    for line in &block.lines {
        if line.trim() == "// ..." {
            parts.push(Vec::new());
        } else {
            parts.last_mut().unwrap().push(line.trim().to_owned());
        }
    }
    // Where each file was read up to: its parts come in its order.
    let mut read = vec![0; files.len()];
    for part in parts.iter().filter(|p| !p.is_empty()) {
        let found = files
            .iter()
            .enumerate()
            .find_map(|(n, (_, lines))| Some((n, find(lines, part, read[n])?)));
        match found {
            Some((n, at)) => read[n] = at + part.len(),
            None => {
                let names: Vec<String> =
                    files.iter().map(|(p, _)| p.display().to_string()).collect();
                return Some(format!(
                    "this part is not consecutive lines of {names:?} (after what the block showed before):\n{}",
                    part.join("\n")
                ));
            }
        }
    }
    None
}

#[test]
fn every_snippet_credited_to_a_file_is_that_files_code() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for doc in docs() {
        for block in blocks(&doc).iter().filter(|b| !b.credited.is_empty()) {
            checked += 1;
            if let Some(why) = mismatch(block) {
                wrong.push(format!("{}:{}: {why}", doc.display(), block.line));
            }
        }
    }
    assert!(checked >= 10, "only {checked} credited snippets found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn the_check_finds_a_changed_line() {
    let dir = std::env::temp_dir().join(format!("doc-snippets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ex.rs"), "fn a() {\n    one();\n    two();\n}\n").unwrap();
    let block = |lines: &[&str]| Block {
        line: 1,
        lines: lines.iter().map(|l| (*l).to_owned()).collect(),
        credited: vec![dir.join("ex.rs")],
    };
    assert!(mismatch(&block(&["fn a() {", "one();", "two();", "}"])).is_none());
    assert!(mismatch(&block(&["fn a() {", "// ...", "}"])).is_none());
    assert!(
        mismatch(&block(&["fn a() {", "two();"])).is_some(),
        "a gap not marked"
    );
    assert!(
        mismatch(&block(&["two();", "// ...", "one();"])).is_some(),
        "out of order"
    );
    assert!(mismatch(&block(&["three();"])).is_some(), "not in the file");
    let _ = std::fs::remove_dir_all(&dir);
}
