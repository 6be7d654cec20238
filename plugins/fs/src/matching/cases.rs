//! The table of failed-edit shapes seen in model traffic, each with the
//! matcher that must land it (and the text it must leave) or the code that
//! must refuse it.

use toolhost_guest::codes;

use super::{Limits, Matcher, apply};

/// What a case must come to.
enum Expect {
    Lands(Matcher, &'static str),
    Refused(&'static str),
}
use Expect::{Lands, Refused};

struct Case {
    name: &'static str,
    file: &'static str,
    old: &'static str,
    new: &'static str,
    replace_all: bool,
    expect: Expect,
}

const fn case(
    name: &'static str,
    file: &'static str,
    old: &'static str,
    new: &'static str,
    expect: Expect,
) -> Case {
    Case { name, file, old, new, replace_all: false, expect }
}

const NOT_FOUND: Expect = Refused(codes::OLD_STRING_NOT_FOUND);
const NOT_UNIQUE: Expect = Refused(codes::OLD_STRING_NOT_UNIQUE);

/// Two impls whose `fmt` bodies differ in one word.
const TWO_IMPLS: &str = "impl Display for A {\n    fn fmt(&self, f: &mut Formatter) -> Result {\n        \
    write!(f, \"Alpha\")\n    }\n}\nimpl Display for B {\n    fn fmt(&self, f: &mut Formatter) -> Result {\n        \
    write!(f, \"Beta\")\n    }\n}\n";

const CASES: &[Case] = &[
    // Exact, as before.
    case("exact single line", "a\nb\nc\n", "b", "B", Lands(Matcher::Exact, "a\nB\nc\n")),
    case("exact block", "a\nb\nc\n", "a\nb", "x\ny\nz", Lands(Matcher::Exact, "x\ny\nz\nc\n")),
    case("exact substring several times", "x = 1; x = 2;\n", "x =", "y =", NOT_UNIQUE),
    case(
        "an exact unique match wins though line-trimmed finds two",
        "    bar();\nbar();\n",
        "    bar();",
        "    baz();",
        Lands(Matcher::Exact, "    baz();\nbar();\n"),
    ),
    case(
        "exact several is refused, no fuzzy matcher picks one of them",
        "    foo()\nx = foo() + 1\n",
        "foo()",
        "bar()",
        NOT_UNIQUE,
    ),
    case(
        "CRLF file, LF old_string",
        "a\r\nb\r\nc\r\n",
        "a\nb",
        "x\ny",
        Lands(Matcher::Exact, "x\r\ny\r\nc\r\n"),
    ),
    // Indentation.
    case(
        "old_string without the file's indentation",
        "fn f() {\n    let a = 1;\n    let b = 2;\n}\n",
        "let a = 1;\nlet b = 2;",
        "let a = 10;\nlet b = 20;",
        Lands(Matcher::LineTrimmed, "fn f() {\n    let a = 10;\n    let b = 20;\n}\n"),
    ),
    case(
        "old_string indented more than the file",
        "fn f() {\n    x();\n    y();\n}\n",
        "        x();\n        y();",
        "        x();\n        z();\n        y();",
        Lands(Matcher::LineTrimmed, "fn f() {\n    x();\n    z();\n    y();\n}\n"),
    ),
    case(
        "two spaces short, nested",
        "mod m {\n    fn f() {\n        go();\n    }\n}\n",
        "  fn f() {\n      go();\n  }",
        "  fn f() {\n      go();\n      stop();\n  }",
        Lands(Matcher::LineTrimmed, "mod m {\n    fn f() {\n        go();\n        stop();\n    }\n}\n"),
    ),
    case(
        "file uses tabs, old_string four spaces",
        "\tif x {\n\t\ty()\n\t}\n",
        "    if x {\n        y()\n    }",
        "    if x {\n        z()\n    }",
        Lands(Matcher::LineTrimmed, "\tif x {\n\t\tz()\n\t}\n"),
    ),
    case(
        "file uses four spaces, old_string tabs",
        "    if x {\n        y()\n    }\n",
        "\tif x {\n\t\ty()\n\t}",
        "\tif x {\n\t\tz()\n\t}",
        Lands(Matcher::LineTrimmed, "    if x {\n        z()\n    }\n"),
    ),
    case(
        "python method without its class indentation",
        "class A:\n    @property\n    def x(self):\n        return 1\n",
        "@property\ndef x(self):\n    return 1",
        "@property\ndef x(self):\n    return 2",
        Lands(Matcher::LineTrimmed, "class A:\n    @property\n    def x(self):\n        return 2\n"),
    ),
    case(
        "yaml keys without their parent's indentation",
        "spec:\n  replicas: 2\n  image: app:1\n",
        "replicas: 2\nimage: app:1",
        "replicas: 3\nimage: app:2",
        Lands(Matcher::LineTrimmed, "spec:\n  replicas: 3\n  image: app:2\n"),
    ),
    case(
        "no constant offset: new_string kept as given",
        "    a\n b\n",
        "a\n  b",
        "a\n  c",
        Lands(Matcher::LineTrimmed, "a\n  c\n"),
    ),
    case(
        "relative indentation picks one of two line-trimmed twins",
        "if a:\n    b()\n    c()\nif a:\n    b()\nc()\n",
        "  if a:\n      b()\n      c()",
        "  if a:\n      b()\n      d()",
        Lands(Matcher::IndentationFlexible, "if a:\n    b()\n    d()\nif a:\n    b()\nc()\n"),
    ),
    case(
        "same block twice under two indentations",
        "  a()\n  b()\n\n    a()\n    b()\n",
        "a()\nb()",
        "c()",
        NOT_UNIQUE,
    ),
    // Trailing whitespace and whitespace inside lines.
    case(
        "trailing spaces in the file",
        "a = 1;   \nb = 2;\n",
        "a = 1;\nb = 2;",
        "a = 1;\nb = 3;",
        Lands(Matcher::LineTrimmed, "a = 1;\nb = 3;\n"),
    ),
    case(
        "trailing spaces in old_string",
        "a = 1;\nb = 2;\n",
        "a = 1;  \nb = 2;\t",
        "a = 1;\nb = 3;",
        Lands(Matcher::LineTrimmed, "a = 1;\nb = 3;\n"),
    ),
    case(
        "doubled spaces inside a line",
        "let  x =  compute(a,  b);\nnext();\n",
        "let x = compute(a, b);",
        "let x = compute(a, c);",
        Lands(Matcher::WhitespaceNormalized, "let x = compute(a, c);\nnext();\n"),
    ),
    case(
        "a tab inside a line",
        "    match x {\n        Some(v)\t=> v,\n        None => 0,\n    }\n",
        "        Some(v) => v,\n        None => 0,",
        "        Some(v) => v + 1,\n        None => 0,",
        Lands(
            Matcher::WhitespaceNormalized,
            "    match x {\n        Some(v) => v + 1,\n        None => 0,\n    }\n",
        ),
    ),
    case(
        "non-ASCII text with odd spacing",
        "    let café = \"naïve\";\n",
        "let  café =  \"naïve\";",
        "let café = \"sage\";",
        Lands(Matcher::WhitespaceNormalized, "    let café = \"sage\";\n"),
    ),
    case("a space inside a token is not tolerated", "f(a, b);\n", "f (a, b);", "g();", NOT_FOUND),
    case("two lines that normalize the same", "x  = 1;\nx =  1;\n", "x = 1;", "y = 1;", NOT_UNIQUE),
    // Block anchor.
    case(
        "a stale comment in the middle",
        "fn run() {\n    // Start the server.\n    let s = Server::new();\n    s.listen();\n}\n",
        "fn run() {\n    // Start the old server.\n    let s = Server::new();\n    s.listen();\n}",
        "fn run() {\n    let s = Server::new();\n    s.listen_on(8080);\n}",
        Lands(Matcher::BlockAnchor, "fn run() {\n    let s = Server::new();\n    s.listen_on(8080);\n}\n"),
    ),
    case(
        "the file has a line more in the middle",
        "fn run() {\n    init();\n    log(\"start\");\n    serve();\n}\nrest\n",
        "fn run() {\n    init();\n    serve();\n}",
        "fn run() {\n    serve();\n}",
        Lands(Matcher::BlockAnchor, "fn run() {\n    serve();\n}\nrest\n"),
    ),
    case(
        "the file lost a line in the middle",
        "fn run() {\n    init();\n    serve();\n}\n",
        "fn run() {\n    init();\n    check();\n    serve();\n}",
        "fn run() {}",
        Lands(Matcher::BlockAnchor, "fn run() {}\n"),
    ),
    case(
        "stale middle and tabs for spaces",
        "\tfn a() {\n\t\t// old\n\t\tgo();\n\t}\n",
        "    fn a() {\n        // new\n        go();\n    }",
        "    fn a() {\n        go_now();\n    }",
        Lands(Matcher::BlockAnchor, "\tfn a() {\n\t\tgo_now();\n\t}\n"),
    ),
    case(
        "stale middle in a CRLF file, old_string's own indentation kept",
        "fn a() {\r\n    // one\r\n    go();\r\n}\r\n",
        "fn a() {\n  // two\n  go();\n}",
        "fn a() {\n  go_now();\n}",
        Lands(Matcher::BlockAnchor, "fn a() {\r\n  go_now();\r\n}\r\n"),
    ),
    case(
        "two anchored blocks, one clearly closer",
        TWO_IMPLS,
        "    fn fmt(&self, f: &mut Formatter) -> Result {\n        write!(f, \"Alphaa\")\n    }",
        "    fn fmt(&self, f: &mut Formatter) -> Result {\n        f.write_str(\"Alpha\")\n    }",
        Lands(
            Matcher::BlockAnchor,
            "impl Display for A {\n    fn fmt(&self, f: &mut Formatter) -> Result {\n        \
             f.write_str(\"Alpha\")\n    }\n}\nimpl Display for B {\n    fn fmt(&self, f: &mut Formatter) -> \
             Result {\n        write!(f, \"Beta\")\n    }\n}\n",
        ),
    ),
    case(
        "two anchored blocks that tie",
        TWO_IMPLS,
        "    fn fmt(&self, f: &mut Formatter) -> Result {\n        write!(f, \"Gamma\")\n    }",
        "    fn fmt(&self, f: &mut Formatter) -> Result {\n        write!(f, \"?\")\n    }",
        NOT_UNIQUE,
    ),
    case(
        "two anchored blocks, both far off",
        "{\n  alpha beta gamma\n}\n{\n  delta epsilon\n}\n",
        "{\n  zzzzzzzzzzzzzzzzzz\n}",
        "{}",
        NOT_UNIQUE,
    ),
    case(
        "one anchored block with another middle",
        "fn main() {\n    run();\n}\n",
        "fn main() {\n    println!(\"hi\");\n}",
        "fn main() {\n    start();\n}",
        Lands(Matcher::BlockAnchor, "fn main() {\n    start();\n}\n"),
    ),
    case(
        "anchors too far apart",
        "fn a() {\n 1\n 2\n 3\n 4\n 5\n 6\n}\n",
        "fn a() {\n 9\n}",
        "fn a() {}",
        NOT_FOUND,
    ),
    // Escapes written literally.
    case(
        "escaped newlines",
        "fn a() {\n    x();\n}\n",
        "fn a() {\\n    x();\\n}",
        "fn a() {\\n    y();\\n}",
        Lands(Matcher::EscapeNormalized, "fn a() {\n    y();\n}\n"),
    ),
    case(
        "escaped quotes",
        "say(\"hi\");\n",
        "say(\\\"hi\\\");",
        "say(\\\"bye\\\");",
        Lands(Matcher::EscapeNormalized, "say(\"bye\");\n"),
    ),
    case("escaped tab", "a\tb\n", "a\\tb", "a\\tc", Lands(Matcher::EscapeNormalized, "a\tc\n")),
    case(
        "escaped newlines and no indentation",
        "    x();\n    y();\n",
        "x();\\ny();",
        "x();\\nz();",
        Lands(Matcher::EscapeNormalized, "    x();\n    z();\n"),
    ),
    case(
        "escaped old_string, real line breaks in new_string",
        "a\nb\n",
        "a\\nb",
        "a\nc",
        Lands(Matcher::EscapeNormalized, "a\nc\n"),
    ),
    case("escaped string found twice", "q(\"a\")\nq(\"a\")\n", "q(\\\"a\\\")", "r()", NOT_UNIQUE),
    // Whitespace around old_string.
    case(
        "spaces around a fragment",
        "let v = compute(a) + 1;\n",
        "  compute(a) ",
        "  compute(b) ",
        Lands(Matcher::TrimmedBoundary, "let v = compute(b) + 1;\n"),
    ),
    case(
        "blank lines around a line",
        "a\nfoo(1);\nb\n",
        "\n\nfoo(1);\n\n",
        "\n\nfoo(2);\n\n",
        Lands(Matcher::TrimmedBoundary, "a\nfoo(2);\nb\n"),
    ),
    // Context.
    case(
        "a changed signature line, the body the same",
        "fn load(path: &Path) -> Result<()> {\n    let data = read(path)?;\n    parse(&data)?;\n    Ok(())\n}\n",
        "fn load(path: &str) -> Result<()> {\n    let data = read(path)?;\n    parse(&data)?;\n    Ok(())\n}",
        "fn load(path: &Path) -> Result<()> {\n    parse(&read(path)?)?;\n    Ok(())\n}",
        Lands(
            Matcher::ContextAware,
            "fn load(path: &Path) -> Result<()> {\n    parse(&read(path)?)?;\n    Ok(())\n}\n",
        ),
    ),
    case(
        "a changed last line, the rest the same",
        "items = [\n    1,\n    2,\n]  # end\n",
        "items = [\n    1,\n    2,\n]  # the end",
        "items = [1, 2]",
        Lands(Matcher::ContextAware, "items = [1, 2]\n"),
    ),
    case(
        "two blocks of the same context",
        "fn a(x: u8) {\n    one();\n    two();\n}\nfn a(y: u8) {\n    one();\n    two();\n}\n",
        "fn a() {\n    one();\n    two();\n}",
        "fn a() {}",
        NOT_UNIQUE,
    ),
    // Line endings and the last line.
    case(
        "CRLF file, LF old_string with another indentation",
        "    a\r\n    b\r\n",
        "a\nb",
        "a\nc",
        Lands(Matcher::LineTrimmed, "    a\r\n    c\r\n"),
    ),
    case(
        "CRLF old_string, LF file",
        "  a\n  b\n",
        "a\r\nb",
        "x\r\ny",
        Lands(Matcher::LineTrimmed, "  x\n  y\n"),
    ),
    case(
        "deleting a line given with its line ending",
        "a\n\tb\nc\n",
        "  b\n",
        "",
        Lands(Matcher::LineTrimmed, "a\nc\n"),
    ),
    case("the last line has no line ending", "a\n  b", "b\n", "B\n", Lands(Matcher::LineTrimmed, "a\n  B")),
    // Refusals.
    case("nothing like it", "alpha\nbeta\n", "gamma", "delta", NOT_FOUND),
    case("only whitespace", "a\nb\n", "   \n", "x", NOT_FOUND),
    case("case differs", "Hello\n", "hello", "bye", NOT_FOUND),
    case(
        "read_file line-number prefixes copied",
        "let x = 1;\n",
        "     1\tlet x = 1;",
        "let x = 2;",
        NOT_FOUND,
    ),
    Case {
        name: "replace_all matches exactly only",
        file: "    a\n    a\n",
        old: "a\na",
        new: "b\nb",
        replace_all: true,
        expect: NOT_FOUND,
    },
    Case {
        name: "replace_all replaces every exact one",
        file: "x = 1; x = 2;\n",
        old: "x =",
        new: "y =",
        replace_all: true,
        expect: Lands(Matcher::Exact, "y = 1; y = 2;\n"),
    },
];

#[test]
fn failed_edit_shapes() {
    assert!(CASES.len() >= 40, "{} cases", CASES.len());
    let mut failures = Vec::new();
    for c in CASES {
        let got = apply(c.file, c.old, c.new, c.replace_all, &Limits::default());
        let ok = match (&c.expect, &got) {
            (Lands(matcher, text), Ok(edit)) => edit.matcher == *matcher && edit.text == *text,
            (Refused(code), Err(refusal)) => refusal.code() == *code,
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {got:?}", c.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn every_fuzzy_matcher_is_covered() {
    for matcher in Matcher::CASCADE {
        assert!(
            CASES.iter().any(|c| matches!(c.expect, Lands(m, _) if m == matcher)),
            "no case lands with {matcher}"
        );
    }
}

/// A 200 MB file: exact matching runs (and finds nothing), the fuzzy
/// matchers are skipped at once.
#[test]
fn a_huge_file_skips_the_fuzzy_matchers() {
    let text = "    let value = compute(input); // an ordinary line\n".repeat(4_000_000);
    assert!(text.len() > 200_000_000);
    let got = apply(&text, "let value = compute(input);\nnever", "x", false, &Limits::default());
    let limits = Limits::default();
    let refusal = got.unwrap_err();
    assert_eq!(
        refusal,
        super::Refusal::NotFound {
            gave_up: Some(super::GaveUp::TextTooLarge { bytes: text.len(), max: limits.max_text_bytes }),
            replace_all: false
        }
    );
    assert_eq!(refusal.code(), codes::OLD_STRING_NOT_FOUND);
    let message = refusal.message("big.rs");
    assert!(
        message.contains("the tolerant matching was skipped: the file is 198.4 MiB, over the 4.0 MiB"),
        "{message}"
    );
    // Exact matching still works on it.
    let mut text = text;
    text.push_str("unique_tail();\n");
    let edit = apply(&text, "unique_tail();", "tail();", false, &limits).unwrap();
    assert_eq!(edit.matcher, Matcher::Exact);
    assert!(edit.text.ends_with("\ntail();\n"));
}

/// A huge old_string is not searched for fuzzily.
#[test]
fn a_huge_old_string_skips_the_fuzzy_matchers() {
    let old = "x\n".repeat(100_000);
    let got = apply("a\nb\n", &old, "y", false, &Limits::default()).unwrap_err();
    assert!(matches!(got, super::Refusal::NotFound { gave_up: Some(super::GaveUp::OldTooLarge { .. }), .. }));
    assert!(got.message("f").contains("old_string is 195.3 KiB, over the 64.0 KiB"), "{}", got.message("f"));
}

/// Inside the size bounds, a file of one repeated line and an old_string of
/// that line repeated (each block start compares thousands of lines before it
/// fails) stops at the work budget.
#[test]
fn a_repetitive_file_stops_at_the_work_budget() {
    let text = "a\n".repeat(2_000_000);
    let old = format!("{}b", " a\n".repeat(2_000));
    let limits = Limits::default();
    assert!(text.len() <= limits.max_text_bytes && old.len() <= limits.max_old_bytes);
    let got = apply(&text, &old, "c", false, &limits).unwrap_err();
    assert_eq!(
        got,
        super::Refusal::NotFound {
            gave_up: Some(super::GaveUp::WorkExhausted { budget: limits.work }),
            replace_all: false
        }
    );
    assert!(
        got.message("f").contains("used up their budget of 40000000 comparisons"),
        "{}",
        got.message("f")
    );
}

/// Similarity scores cost `a × b`: blocks of long lines between common
/// anchors use up the budget too.
#[test]
fn long_anchored_blocks_stop_at_the_work_budget() {
    let block = format!("{{\n{}\n}}\n", "y".repeat(30_000));
    let text = block.repeat(100);
    let old = format!("{{\n{}\n}}", "z".repeat(30_000));
    let got = apply(&text, &old, "c", false, &Limits::default()).unwrap_err();
    assert!(
        matches!(got, super::Refusal::NotFound { gave_up: Some(super::GaveUp::WorkExhausted { .. }), .. }),
        "{got:?}"
    );
}
