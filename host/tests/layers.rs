//! The host's modules stay layered one way, and no two of its files need each
//! other: read from the `crate::`, `super::` and `self::` paths in `host/src` (the
//! library, and apart from it the binary's `main.rs` and `cli/`, which sit above
//! everything and are checked for cycles only). The sandbox crate (`confine/src`)
//! is checked for cycles too, and never names the host; `unsafe` code is only
//! where ARCHITECTURE.md says.
//!
//! The layers, top to bottom. A module may use the ones below it, never one above.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

const LAYERS: &[&str] = &[
    "serve", "call", "hooks", "journal", "native", "servers", "load", "output", "policy", "oci", "sandbox",
    "imports", "engine", "bindings", "limits", "dirs", "error",
];

type Module = Vec<String>;

/// Which crate's files: the library's (`lib.rs` and everything but the
/// binary's), the binary's (`main.rs` and `cli/`), or all of another crate's
/// (`confine/src`, `search/src`).
#[derive(Clone, Copy, PartialEq)]
enum Crate {
    Library,
    Binary,
    Whole,
}

/// Every source file of `krate` as its module path (`imports/exec/mod.rs` is `imports::exec`).
fn modules(src: &Path, krate: Crate) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(src).unwrap().to_path_buf();
            let binary = krate != Crate::Whole && (rel.starts_with("cli") || rel == Path::new("main.rs"));
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

/// The sandbox crate's sources.
fn confine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("confine/src")
}

/// The search crate's sources.
fn search_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("search/src")
}

/// No two files of the library, of the binary (`main.rs` and `cli/`), of the
/// sandbox crate or of the search crate need each other.
#[test]
fn no_two_files_need_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (src, krate) in [
        (src.clone(), Crate::Library),
        (src, Crate::Binary),
        (confine_src(), Crate::Whole),
        (search_src(), Crate::Whole),
    ] {
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

/// The sandbox crate's files are read: its runtime uses its neighbours, and the
/// cycle check sees a cycle put among them.
#[test]
fn the_sandbox_files_are_read() {
    let (graph, _) = edges(&confine_src(), Crate::Whole);
    let runtime = vec!["runtime".to_string()];
    assert!(graph.get(&runtime).is_some_and(|uses| uses.contains(&vec!["spawn".to_string()])), "{graph:?}");
    let mut cyclic = graph.clone();
    cyclic.entry(vec!["spawn".to_string()]).or_default().insert(runtime);
    assert!(!cycles(&cyclic).is_empty());
}

/// The sandbox crate never names the host (its dependencies, its code), and the host
/// reaches Landlock, seccomp, namespaces and cgroups only through it.
#[test]
fn the_sandbox_crate_stands_below_the_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut problems = Vec::new();
    let manifest = std::fs::read_to_string(root.join("confine/Cargo.toml")).unwrap();
    let host_dep = Regex::new(r#"(?m)^\s*toolhost\s*[.=]|package\s*=\s*"toolhost""#).unwrap();
    if host_dep.is_match(&manifest) {
        problems.push("confine/Cargo.toml depends on the host crate `toolhost`".to_string());
    }
    let host_path = Regex::new(r"\btoolhost\s*::|\bextern\s+crate\s+toolhost\b").unwrap();
    for (module, path) in modules(&confine_src(), Crate::Whole) {
        if host_path.is_match(&without_comments(&std::fs::read_to_string(&path).unwrap())) {
            problems.push(format!("confine::{} names the host crate", module.join("::")));
        }
    }
    let host_manifest = std::fs::read_to_string(root.join("host/Cargo.toml")).unwrap();
    let sandbox_dep = Regex::new(r"(?m)^\s*(landlock|seccompiler)\s*=").unwrap();
    if let Some(dep) = sandbox_dep.find(&host_manifest) {
        problems.push(format!("host/Cargo.toml depends on {} itself", dep.as_str().trim()));
    }
    let sandbox_calls = Regex::new(
        r"\b(landlock|seccompiler)::|\blibc::(clone3?|unshare|setns|mount|umount2|pivot_root|prctl|setrlimit|syscall)\b",
    )
    .unwrap();
    for (src, krate) in [(root.join("host/src"), Crate::Library), (root.join("host/src"), Crate::Binary)] {
        for path in modules(&src, krate).into_values() {
            let code = without_comments(&std::fs::read_to_string(&path).unwrap());
            if let Some(call) = sandbox_calls.find(&code) {
                problems.push(format!("{} calls `{}`: that is confine's", path.display(), call.as_str()));
            }
        }
    }
    assert!(problems.is_empty(), "the sandbox crate's boundary:\n{}", problems.join("\n"));
}

/// Text with comments and string literals blanked (test code kept).
fn without_comments(text: &str) -> String {
    let comment = Regex::new(r"(?m)//.*$").unwrap();
    let strings = Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    strings.replace_all(&comment.replace_all(text, ""), "\"\"").into_owned()
}

/// The `.rs` files beneath `dir`, leaving out build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && name != "target" && !name.starts_with('.') {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `unsafe` code is where ARCHITECTURE.md's one line says, and nowhere else in the
/// crates that ship (the host, the sandbox, the error codes, the guest SDK, the
/// builtins, the build support): every listed file has some, and `unsafe_code`
/// stays denied for the whole workspace.
#[test]
fn unsafe_code_is_only_where_the_architecture_page_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let page = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let start = page.find("`unsafe` is denied").expect("ARCHITECTURE.md lists where `unsafe` lives");
    let claim = &page[start..page[start..].find("\n\n").map_or(page.len(), |end| start + end)];
    let file = Regex::new(r"`([A-Za-z0-9_./\-]+\.rs)`").unwrap();
    // The files named, less this test where the line says who checks it.
    let listed: BTreeSet<PathBuf> = file
        .captures_iter(claim)
        .filter(|c| !c[1].starts_with("host/tests/"))
        .map(|c| root.join(&c[1]))
        .collect();
    assert!(!listed.is_empty(), "no file in {claim:?}");
    let mut files = Vec::new();
    for dir in ["host/src", "confine/src", "search/src", "codes", "guest-sdk", "plugins", "build-support"] {
        rust_files(&root.join(dir), &mut files);
    }
    let uses =
        Regex::new(r"\bunsafe\s*(\{|fn\b|impl\b|extern\b|trait\b)|\ballow\s*\(\s*unsafe_code\s*\)").unwrap();
    let mut problems = Vec::new();
    for path in &files {
        let has = uses.is_match(&without_comments(&std::fs::read_to_string(path).unwrap()));
        if has && !listed.contains(path) {
            problems.push(format!(
                "{} has `unsafe` code and is not listed",
                path.strip_prefix(&root).unwrap().display()
            ));
        }
        if !has && listed.contains(path) {
            problems.push(format!(
                "{} is listed and has no `unsafe` code",
                path.strip_prefix(&root).unwrap().display()
            ));
        }
    }
    for path in listed.iter().filter(|p| !files.contains(p)) {
        problems.push(format!("{} is listed and is not a shipped source file", path.display()));
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    if !manifest.contains("unsafe_code = \"deny\"") {
        problems.push("the workspace no longer denies unsafe_code".to_string());
    }
    for krate in [
        "host",
        "confine",
        "search",
        "codes",
        "guest-sdk",
        "plugins/fs",
        "plugins/web",
        "plugins/sys",
        "build-support",
    ] {
        let own = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
        if !own.contains("[lints]\nworkspace = true") {
            problems.push(format!("{krate}/Cargo.toml does not take the workspace's lints"));
        }
    }
    assert!(problems.is_empty(), "`unsafe` code:\n{}", problems.join("\n"));
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

/// The library's surface is named items: `lib.rs` declares a public module only when
/// the module is an API of its own and says so in its doc ("public module"), such a
/// module re-exports its items flat (no public module beneath it), and the binary
/// names the library at most one module deep (`toolhost::Item`, `toolhost::oci::Item`).
#[test]
fn the_library_surface_is_flat_and_the_binary_uses_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = code(&src.join("lib.rs"));
    let mut problems = Vec::new();
    let public = Regex::new(r"(?m)^pub mod (\w+);").unwrap();
    let nested = Regex::new(r"(?m)^pub mod (\w+)").unwrap();
    let mut seen = 0;
    for name in public.captures_iter(&lib).map(|c| c[1].to_string()) {
        seen += 1;
        let file = [src.join(&name).join("mod.rs"), src.join(format!("{name}.rs"))]
            .into_iter()
            .find(|f| f.is_file())
            .unwrap_or_else(|| panic!("no file for `pub mod {name}`"));
        let text = std::fs::read_to_string(&file).unwrap();
        let doc: String = text.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
        if !doc.contains("public module") {
            problems
                .push(format!("lib.rs: `pub mod {name}` without its doc saying why it is a public module"));
        }
        for inner in nested.captures_iter(&code(&file)) {
            problems.push(format!("{name}: `pub mod {}` (re-export its items instead)", &inner[1]));
        }
    }
    assert!(seen > 0, "lib.rs read: no public module at all is unlikely");
    let deep = Regex::new(r"toolhost::[a-z_]+::[a-z_]+::").unwrap();
    let mut files = vec![src.join("main.rs")];
    rust_files(&src.join("cli"), &mut files);
    for file in files {
        for (n, line) in code(&file).lines().enumerate() {
            if let Some(m) = deep.find(line) {
                problems.push(format!(
                    "{}:{}: `{}` reaches into the library",
                    file.display(),
                    n + 1,
                    m.as_str()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The store, the linker and the load-time check name no capability: they read
/// the one list in `imports/mod.rs` (`capabilities!`), so adding a capability
/// touches none of them.
#[test]
fn the_sandbox_and_the_load_check_name_no_capability() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let capabilities: BTreeSet<String> = std::fs::read_dir(src.join("imports"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|name| !matches!(name.as_str(), "mod" | "capability" | "access"))
        .collect();
    assert!(capabilities.len() >= 9, "{capabilities:?}");
    let (graph, _) = edges(&src, Crate::Library);
    let readers = |module: &Module| {
        module.first().is_some_and(|m| m == "sandbox")
            || *module == ["load", "capabilities"].map(String::from).to_vec()
    };
    let mut problems = Vec::new();
    for (module, targets) in graph.iter().filter(|(m, _)| readers(m)) {
        for target in targets {
            if target.len() >= 2 && target[0] == "imports" && capabilities.contains(&target[1]) {
                problems.push(format!("{} names {}", module.join("::"), target.join("::")));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
