//! The host's modules stay layered one way, and no two of its files need each
//! other: read from the `crate::`, `super::` and `self::` paths in `host/src` (the
//! library, and apart from it the binary's `main.rs` and `cli/`, which sit above
//! everything and are checked for cycles only).
//!
//! The layers, top to bottom. A module may use the ones below it, never one above.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

const LAYERS: &[&str] = &[
    "serve", "call", "hooks", "journal", "native", "servers", "load", "output", "policy", "oci", "sandbox",
    "imports", "engine", "protect", "bindings", "limits", "dirs", "error",
];

type Module = Vec<String>;

/// Which crate's files: the library's (`lib.rs` and everything but the
/// binary's), or the binary's (`main.rs` and `cli/`).
#[derive(Clone, Copy, PartialEq)]
enum Crate {
    Library,
    Binary,
}

/// Every source file of `krate` as its module path (`imports/exec/mod.rs` is `imports::exec`).
fn modules(src: &Path, krate: Crate) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(src).unwrap().to_path_buf();
            let binary = rel.starts_with("cli") || rel == Path::new("main.rs");
            if binary != (krate == Crate::Binary) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            // Test-only files (`#[cfg(test)] #[path = …]`).
            if !name.ends_with(".rs")
                || name.ends_with("_tests.rs")
                || name.ends_with("_props.rs")
                || name == "test_support.rs"
            {
                continue;
            }
            let mut module: Module = rel
                .parent()
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let stem = name.trim_end_matches(".rs");
            if stem != "mod" && stem != "lib" && stem != "main" {
                module.push(stem.to_string());
            }
            out.insert(module, path);
        }
    }
    out
}

/// The code of a file without comments and without its `#[cfg(test)]` tail.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    let comment = Regex::new(r"(?m)//.*$").unwrap();
    let strings = Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    strings.replace_all(&comment.replace_all(text, ""), "\"\"").into_owned()
}

/// Expand `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else { return vec![tree] };
    let (prefix, rest) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&rest[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&rest[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).flat_map(|p| expand(&format!("{prefix}{p}"))).collect()
}

/// The paths a file names, each as the module path it starts from plus its segments.
fn paths(module: &Module, code: &str) -> Vec<Module> {
    let uses = Regex::new(r"\buse\s+((?:crate|super|self)::[^;]*);").unwrap();
    let inline = Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    let mut found: Vec<String> = uses.captures_iter(code).flat_map(|c| expand(&c[1])).collect();
    found.extend(inline.find_iter(&uses.replace_all(code, "")).map(|m| m.as_str().to_string()));
    // A `mod.rs` is its folder's module, so `super` is the module above either way.
    let own = module;
    found
        .into_iter()
        .filter_map(|path| {
            let mut segments = path.split("::").map(str::to_string);
            let mut base = match segments.next()?.as_str() {
                "crate" => Vec::new(),
                "self" => own.clone(),
                _ => own[..own.len().saturating_sub(1)].to_vec(),
            };
            for segment in segments {
                if segment == "super" {
                    base.pop();
                } else {
                    base.push(segment);
                }
            }
            Some(base)
        })
        .collect()
}

/// The file edges: which module uses which (the longest module prefix of each path),
/// leaving out a module's uses of its own descendants (declaring and re-exporting them).
fn edges(src: &Path, krate: Crate) -> (BTreeMap<Module, BTreeSet<Module>>, Vec<String>) {
    let modules = modules(src, krate);
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (module, path) in &modules {
        for named in paths(module, &code(path)) {
            let target =
                (0..=named.len()).rev().map(|n| named[..n].to_vec()).find(|m| modules.contains_key(m));
            let Some(target) = target else { continue };
            if target.is_empty() && !module.is_empty() {
                problems.push(format!(
                    "{}: names `{}` through the crate root",
                    module.join("::"),
                    named.join("::")
                ));
                continue;
            }
            if target.starts_with(module) {
                continue;
            }
            graph.entry(module.clone()).or_default().insert(target);
        }
    }
    (graph, problems)
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, mut problems) = edges(&src, Crate::Library);
    let rank = |m: &Module| m.first().and_then(|top| LAYERS.iter().position(|l| l == top));
    for (from, targets) in &graph {
        if from.is_empty() {
            continue;
        }
        let Some(from_rank) = rank(from) else {
            problems.push(format!("{}: not in a layer (add it to LAYERS)", from.join("::")));
            continue;
        };
        for to in targets {
            let Some(to_rank) = rank(to) else { continue };
            if to_rank < from_rank {
                problems.push(format!("{} uses {}, a layer above it", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(problems.is_empty(), "the layering is broken:\n{}", problems.join("\n"));
}

/// The cycles of `graph`, each as its files in order of name.
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeSet<String> {
    // Every cycle shows up as a path back to where it started; report each file once.
    let mut cycles = BTreeSet::new();
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, trail)) = stack.pop() {
            for next in graph.get(&at).into_iter().flatten() {
                if next == start {
                    let mut names: Vec<String> = trail.iter().map(|m| m.join("::")).collect();
                    names.sort();
                    cycles.insert(names.join(" ↔ "));
                } else if seen.insert(next.clone()) {
                    let mut trail = trail.clone();
                    trail.push(next.clone());
                    stack.push((next.clone(), trail));
                }
            }
        }
    }
    cycles
}

/// No two files of the library, nor of the binary (`main.rs` and `cli/`), need each other.
#[test]
fn no_two_files_need_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for krate in [Crate::Library, Crate::Binary] {
        let (graph, _) = edges(&src, krate);
        let found = cycles(&graph);
        assert!(
            found.is_empty(),
            "files that need each other:\n{}",
            found.into_iter().collect::<Vec<_>>().join("\n")
        );
    }
}

/// The binary's files are read: `cli::plugins` uses its neighbours through
/// `super::`, so a cycle among them would be seen.
#[test]
fn the_binary_files_are_read() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, _) = edges(&src, Crate::Binary);
    let plugins = vec!["cli".to_string(), "plugins".to_string()];
    assert!(graph.get(&plugins).is_some_and(|uses| !uses.is_empty()), "{graph:?}");
}

/// ARCHITECTURE.md stays one page (80 lines of at most 160 characters), every
/// path it names in backticks exists, and its table of `host/src/` folders is
/// the tree's: each folder and top-level file of the library named, none that
/// is not there.
#[test]
fn the_architecture_page_is_one_page_and_true() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let page = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut problems = Vec::new();
    let lines: Vec<&str> = page.lines().collect();
    if lines.len() > 80 {
        problems.push(format!("{} lines, more than 80", lines.len()));
    }
    for (n, line) in lines.iter().enumerate() {
        if line.chars().count() > 160 {
            problems.push(format!("line {} has {} characters, more than 160", n + 1, line.chars().count()));
        }
    }
    // A path: a backticked token with a slash or a file extension, no spaces.
    let path = Regex::new(r"`([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]*)+|[A-Za-z0-9_\-]+\.(?:rs|md|wit|toml))`")
        .unwrap();
    let section = |heading: &str| {
        let start = page.find(heading).unwrap_or_else(|| panic!("ARCHITECTURE.md has no {heading:?}"));
        let rest = &page[start + heading.len()..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
    };
    let layer_table = section("## The host by layer");
    let src = root.join("host/src");
    // Paths in a row of the layer table may also be inside that row's folder.
    let mut row_dirs: Vec<(String, PathBuf)> = Vec::new();
    for row in layer_table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap().trim_start_matches("| ");
        let dir = path.captures(first).map(|c| src.join(&c[1])).unwrap_or_else(|| src.clone());
        row_dirs.push((row.to_string(), dir));
    }
    for line in page.lines() {
        let own = row_dirs.iter().find(|(row, _)| row == line).map(|(_, dir)| dir.clone());
        for found in path.captures_iter(line) {
            let named = &found[1];
            let mut candidates = vec![root.join(named), src.join(named)];
            candidates.extend(own.iter().map(|dir| dir.join(named)));
            if !candidates.iter().any(|p| p.exists()) && !named.starts_with("target/") {
                problems.push(format!("`{named}` does not exist"));
            }
        }
    }
    // The layer table's first column: the library's folders and top-level files.
    let mut listed = BTreeSet::new();
    for row in layer_table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap();
        listed.extend(path.captures_iter(first).map(|c| c[1].trim_end_matches('/').to_string()));
    }
    let mut tree = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let library = !matches!(name.as_str(), "cli" | "main.rs" | "lib.rs" | "test_support.rs");
        if library && (entry.path().is_dir() || name.ends_with(".rs")) {
            tree.insert(name);
        }
    }
    for missing in tree.difference(&listed) {
        problems.push(format!("host/src/{missing} is not in the layer table"));
    }
    for extra in listed.difference(&tree) {
        problems.push(format!("the layer table names host/src/{extra}, which is not there"));
    }
    // The layers test's own order names the same folders.
    let layers: BTreeSet<String> = LAYERS.iter().map(|l| l.to_string()).collect();
    let stems: BTreeSet<String> = tree.iter().map(|n| n.trim_end_matches(".rs").to_string()).collect();
    for differs in layers.symmetric_difference(&stems) {
        problems.push(format!("{differs} is in LAYERS or in host/src, not both"));
    }
    assert!(problems.is_empty(), "ARCHITECTURE.md:\n{}", problems.join("\n"));
}
