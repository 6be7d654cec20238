//! `toolhost new --lang rust|python|js NAME`: write a ready-to-build tool
//! project in `./NAME`.
//!
//! Every project holds one working tool (`NAME` in snake_case: count the
//! lines, words and bytes of a file in the work dir), the contract
//! (`wit/plugin.wit`, embedded from this repository's `wit/`), a `build.sh`
//! that produces `TOOL.wasm` in the project, and a README whose test
//! invocation the end-to-end tests run. The templates live in
//! `host/templates/<lang>/` and are embedded with `include_str!`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

/// The contract every project gets a copy of.
const PLUGIN_WIT: &str = include_str!("../../../wit/plugin.wit");

/// The SDK of the checkout this binary was built from; the default Rust
/// dependency when it still exists (`toolhost-guest` is not on crates.io).
const BUILT_FROM_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk");

/// The docs of the checkout this binary was built from (the walkthroughs).
const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs");

/// A file of a project template: where it goes, its text (with `{{name}}`,
/// `{{tool}}` and `{{sdk}}` placeholders), and whether it is a script.
struct Template {
    path: &'static str,
    text: &'static str,
    executable: bool,
}

const fn file(path: &'static str, text: &'static str) -> Template {
    Template { path, text, executable: false }
}

const fn script(path: &'static str, text: &'static str) -> Template {
    Template { path, text, executable: true }
}

const RUST: &[Template] = &[
    file("Cargo.toml", include_str!("../../templates/rust/Cargo.toml.in")),
    file("src/lib.rs", include_str!("../../templates/rust/src/lib.rs")),
    script("build.sh", include_str!("../../templates/rust/build.sh")),
    file("README.md", include_str!("../../templates/rust/README.md")),
    file(".gitignore", include_str!("../../templates/rust/gitignore")),
    file("wit/plugin.wit", PLUGIN_WIT),
];

const PYTHON: &[Template] = &[
    file("tool.py", include_str!("../../templates/python/tool.py")),
    script("build.sh", include_str!("../../templates/python/build.sh")),
    file("README.md", include_str!("../../templates/python/README.md")),
    file(".gitignore", include_str!("../../templates/python/gitignore")),
    file("wit/plugin.wit", PLUGIN_WIT),
];

const JS: &[Template] = &[
    file("tool.js", include_str!("../../templates/js/tool.js")),
    file("package.json", include_str!("../../templates/js/package.json")),
    script("build.sh", include_str!("../../templates/js/build.sh")),
    file("README.md", include_str!("../../templates/js/README.md")),
    file(".gitignore", include_str!("../../templates/js/gitignore")),
    file("wit/world.wit", include_str!("../../templates/js/wit/world.wit")),
    file("wit/deps/toolhost-plugin/plugin.wit", PLUGIN_WIT),
    file("wit/deps/wasi-io/package.wit", include_str!("../../templates/js/wit/deps/wasi-io/package.wit")),
    file(
        "wit/deps/wasi-clocks/package.wit",
        include_str!("../../templates/js/wit/deps/wasi-clocks/package.wit"),
    ),
    file(
        "wit/deps/wasi-filesystem/package.wit",
        include_str!("../../templates/js/wit/deps/wasi-filesystem/package.wit"),
    ),
];

/// The language of the new tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Lang {
    /// Rust with the `toolhost-guest` SDK (cargo, target wasm32-wasip2).
    Rust,
    /// Python with componentize-py 0.25.1.
    Python,
    /// JavaScript with componentize-js 0.23.0.
    Js,
}

impl Lang {
    /// The name of its walkthrough: `docs/walkthrough-NAME.md`.
    fn doc_name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }
}

/// `toolhost new` arguments.
#[derive(Args, Clone, Debug)]
pub(crate) struct NewArgs {
    /// The language of the tool.
    #[arg(long)]
    lang: Lang,
    /// The project directory to create (`./NAME`); the tool is NAME in
    /// snake_case. Lowercase letters, digits, `-` and `_`, starting with a letter.
    name: String,
    /// Rust: depend on the toolhost-guest SDK at this path (the `guest-sdk/`
    /// of a toolhost checkout). Default: the checkout this binary was built from.
    #[arg(long, value_name = "DIR", conflicts_with = "sdk_git")]
    sdk_path: Option<PathBuf>,
    /// Rust: depend on the toolhost-guest SDK in this git repository.
    #[arg(long, value_name = "URL")]
    sdk_git: Option<String>,
}

/// Names cargo refuses for a package, or that shadow a crate every tool uses.
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "try",
    "gen",
    "std",
    "core",
    "alloc",
    "proc_macro",
    "test",
    "serde",
    "schemars",
    "toolhost_guest",
    "build",
];

/// Check `name` and return the tool name (`-` → `_`), which must also be a
/// valid toolhost tool name.
pub(crate) fn tool_name(name: &str) -> anyhow::Result<String> {
    let ok_chars =
        name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    let starts = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    let ends = name.bytes().last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !(ok_chars && starts && ends && name.len() <= 64) {
        bail!(
            "invalid NAME {name:?}: use 1-64 lowercase letters, digits, `-` or `_`, starting with a letter \
             and ending with a letter or digit (e.g. word-count)"
        );
    }
    let tool = name.replace('-', "_");
    if RESERVED.contains(&tool.as_str()) {
        bail!(
            "invalid NAME {name:?}: it is a Rust keyword or the name of a crate the tool uses; pick another"
        );
    }
    Ok(tool)
}

/// The `toolhost-guest = …` dependency of a Rust project, as TOML.
fn sdk_dependency(args: &NewArgs) -> anyhow::Result<String> {
    if let Some(url) = &args.sdk_git {
        return Ok(inline_table("git", url));
    }
    let (dir, given) = match &args.sdk_path {
        Some(dir) => (dir.clone(), true),
        None => (PathBuf::from(BUILT_FROM_SDK), false),
    };
    let manifest = dir.join("Cargo.toml");
    let is_sdk = std::fs::read_to_string(&manifest).is_ok_and(|t| t.contains("name = \"toolhost-guest\""));
    if !is_sdk {
        if given {
            bail!("--sdk-path {}: no toolhost-guest crate there (expected its Cargo.toml)", dir.display());
        }
        bail!(
            "the toolhost-guest SDK is not on crates.io and the checkout this toolhost was built from is gone: \
             pass --sdk-path DIR (the guest-sdk/ of a toolhost checkout) or --sdk-git URL"
        );
    }
    let dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
    let dir = dir.to_str().with_context(|| format!("the SDK path {} is not UTF-8", dir.display()))?;
    Ok(inline_table("path", dir))
}

/// `{ key = "value" }` as TOML, the string quoted and escaped by `toml_edit`.
fn inline_table(key: &str, value: &str) -> String {
    let mut table = toml_edit::InlineTable::new();
    table.insert(key, value.into());
    table.fmt();
    table.to_string()
}

/// `toolhost new`: create `./NAME` and write the project into it.
pub(crate) fn run(args: &NewArgs) -> anyhow::Result<ExitCode> {
    let tool = tool_name(&args.name)?;
    let (templates, sdk) = match args.lang {
        Lang::Rust => (RUST, sdk_dependency(args)?),
        Lang::Python | Lang::Js if args.sdk_path.is_some() || args.sdk_git.is_some() => {
            bail!("--sdk-path and --sdk-git are for --lang rust only")
        }
        Lang::Python => (PYTHON, String::new()),
        Lang::Js => (JS, String::new()),
    };
    let root = Path::new(&args.name);
    if root.symlink_metadata().is_ok() {
        bail!("{} already exists; refusing to overwrite it (pick another NAME or remove it)", root.display());
    }
    // `create_dir`, not `create_dir_all`: it fails if the directory appeared meanwhile.
    std::fs::create_dir(root).with_context(|| format!("creating {}", root.display()))?;
    for template in templates {
        let text =
            template.text.replace("{{name}}", &args.name).replace("{{tool}}", &tool).replace("{{sdk}}", &sdk);
        write(&root.join(template.path), &text, template.executable)?;
    }
    let stub = if args.lang == Lang::Python { " --stub-sockets" } else { "" };
    println!("created {}/ ({:?} tool `{tool}`)", args.name, args.lang);
    println!("next:\n  cd {} && ./build.sh", args.name);
    println!("  toolhost call {tool} '{{\"path\": \"README.md\"}}' --plugin {tool}.wasm{stub}");
    let walkthrough = Path::new(DOCS).join(format!("walkthrough-{}.md", args.lang.doc_name()));
    if let Ok(walkthrough) = walkthrough.canonicalize() {
        println!("a read-only tool and a network tool, step by step: {}", walkthrough.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str, executable: bool) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(tool_name("word-count").unwrap(), "word_count");
        assert_eq!(tool_name("wc2").unwrap(), "wc2");
        for bad in ["", "Word", "2wc", "wc-", "a b", "../x", "a/b", "self", "std", &"a".repeat(65)] {
            assert!(tool_name(bad).is_err(), "{bad:?}");
        }
        // Nothing that would need quoting in Cargo.toml, package.json or a shell line.
        for bad in ["a\"b", "a\\b", "a'b", "a\u{1b}b", "a\nb", "wörd", "a$b"] {
            let err = tool_name(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("invalid NAME {bad:?}: use 1-64 lowercase")), "{err}");
            assert!(!err.contains('\u{1b}') && !err.contains('\n'), "the name is shown escaped: {err:?}");
        }
    }

    #[test]
    fn the_sdk_dependency_is_valid_toml_whatever_its_path() {
        let manifest = RUST.iter().find(|t| t.path == "Cargo.toml").unwrap().text;
        let odd = ["C:\\a \"b\" 'c'", "esc \u{1b} nl \n tab \t del \u{7f} é ✓", "'''\"\"\"", "\\u0041"];
        for path in odd {
            for key in ["path", "git"] {
                let sdk = inline_table(key, path);
                let text =
                    manifest.replace("{{name}}", "wc").replace("{{tool}}", "wc").replace("{{sdk}}", &sdk);
                let parsed: toml::Table =
                    toml::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}\n{text}"));
                let dependency = &parsed["dependencies"]["toolhost-guest"];
                assert_eq!(dependency.get(key).and_then(|v| v.as_str()), Some(path), "{text}");
                assert!(!sdk.contains('\u{1b}'), "no raw control character: {sdk:?}");
            }
        }
        assert_eq!(inline_table("path", "/a/guest-sdk"), r#"{ path = "/a/guest-sdk" }"#);
    }

    #[test]
    fn every_placeholder_is_known() {
        for template in RUST.iter().chain(PYTHON).chain(JS) {
            let text = template.text.replace("{{name}}", "").replace("{{tool}}", "").replace("{{sdk}}", "");
            assert!(!text.contains("{{"), "{} has an unknown placeholder", template.path);
        }
    }
}
