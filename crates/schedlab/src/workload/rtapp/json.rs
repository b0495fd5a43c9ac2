//! The JSON layer of the rt-app reader: the syntax is parsed by the `jsonc-parser`
//! crate (dprint's JSON-with-comments parser); this module only turns its syntax tree
//! into the small [`JNode`] tree that `rtapp/mod.rs` validates.
//!
//! **Why this crate.** rt-app files need what `serde_json::Value` loses: object keys
//! in file order (rt-app events run in the order they are written), duplicate keys
//! (kept, so the caller decides: repeated event keys in a phase are legal), and the
//! byte offset of every value (so an error can name its line). `jsonc-parser`'s AST
//! keeps all three: `Object::properties` is a `Vec` in file order, duplicates
//! included, and every node carries its byte `Range`. It also parses comments, which
//! rt-app files may hold, and its error kinds come with the byte range of the fault.
//!
//! **What is accepted.** rt-app reads its file with json-c in json-c's default
//! (non-strict) mode. Of the crate's JSON extensions we switch on exactly those that
//! mode also accepts: `/* */` and `//` comments, a trailing comma before `]` or `}`,
//! and single-quoted strings (`'…'`, keys too). Unquoted keys, missing commas,
//! hexadecimal, `+1`, `.5`, `NaN`/`Infinity` and JSON5 escapes stay errors. What
//! json-c would take and this reader refuses: text after the first value (json-c
//! ignores it), `TRUE`/`False` in other cases, `NaN`/`Infinity`, and leading zeros.
//!
//! **Numbers.** The crate gives a number's text; an integer that fits is
//! [`JVal::Int`] (rt-app's values are integers), anything with a
//! fraction or an exponent, or too large for `i64`, is [`JVal::Float`]; a number
//! too large for `f64` is an error.
//!
//! **Nesting.** The crate parses recursively, one call chain per level, and stops
//! itself only past 512 levels (an internal limit); measured, those 512 levels take
//! about 1.1 MiB of stack in a debug build, more than a small thread stack holds.
//! So [`parse`] first runs the crate's own tokenizer ([`Scanner`], a flat loop that
//! knows strings and comments) over the text and counts open brackets: a file
//! nested deeper than 64 levels is refused there, before any recursion (rt-app
//! files nest 5 or 6 deep). The `deep_input_cannot_overflow_the_stack` test checks
//! this on a 512 KiB stack.

use jsonc_parser::ast::Value;
use jsonc_parser::common::Ranged;
use jsonc_parser::tokens::Token;
use jsonc_parser::{parse_to_ast, CollectOptions, ParseOptions, Scanner, ScannerOptions};

/// A JSON value and the byte offset where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct JNode {
    pub pos: usize,
    pub val: JVal,
}

#[derive(Clone, Debug, PartialEq)]
pub enum JVal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<JNode>),
    /// Members in file order, duplicates included: (key, key offset, value).
    Object(Vec<(String, usize, JNode)>),
}

impl JVal {
    /// How an error message names the value's type.
    pub(crate) fn describe(&self) -> String {
        match self {
            JVal::Null => "null".into(),
            JVal::Bool(b) => b.to_string(),
            JVal::Int(i) => i.to_string(),
            JVal::Float(f) => f.to_string(),
            JVal::Str(s) => format!("{s:?}"),
            JVal::Array(_) => "an array".into(),
            JVal::Object(_) => "an object".into(),
        }
    }
}

/// A syntax error: message and byte offset.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub pos: usize,
    pub msg: String,
}

const MAX_DEPTH: usize = 64;

/// The crate's extensions that json-c's non-strict mode also has (see the module
/// essay). Every field is named so that a new extension in a later crate version
/// is a compile error here rather than silently accepted.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_single_quoted_strings: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parse a whole document (one value, then only whitespace and comments).
pub fn parse(text: &str) -> Result<JNode, SyntaxError> {
    check_depth(text)?;
    let ast =
        parse_to_ast(text, &CollectOptions::default(), &options()).map_err(|e| SyntaxError {
            pos: e.range().start,
            msg: e.kind().to_string(),
        })?;
    match ast.value {
        Some(v) => convert(v),
        None => Err(SyntaxError {
            pos: text.len(),
            msg: "unexpected end of file, expected a value".into(),
        }),
    }
}

/// Refuse more than [`MAX_DEPTH`] nested arrays/objects, without recursion. A
/// token error stops the count: the parser then reports it (or an earlier error).
fn check_depth(text: &str) -> Result<(), SyntaxError> {
    let o = options();
    let mut scanner = Scanner::new(
        text,
        &ScannerOptions {
            allow_single_quoted_strings: o.allow_single_quoted_strings,
            allow_hexadecimal_numbers: o.allow_hexadecimal_numbers,
            allow_unary_plus_numbers: o.allow_unary_plus_numbers,
            allow_bare_decimal_point_numbers: o.allow_bare_decimal_point_numbers,
            allow_non_finite_numbers: o.allow_non_finite_numbers,
            allow_extended_string_escapes: o.allow_extended_string_escapes,
        },
    );
    let mut depth = 0usize;
    while let Ok(Some(token)) = scanner.scan() {
        match token {
            Token::OpenBrace | Token::OpenBracket => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(SyntaxError {
                        pos: scanner.token_start(),
                        msg: format!("nesting deeper than {MAX_DEPTH} levels"),
                    });
                }
            }
            Token::CloseBrace | Token::CloseBracket => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The crate's AST to ours (recursion bounded by [`check_depth`]).
fn convert(v: Value<'_>) -> Result<JNode, SyntaxError> {
    let pos = v.start();
    let val = match v {
        Value::NullKeyword(_) => JVal::Null,
        Value::BooleanLit(b) => JVal::Bool(b.value),
        Value::StringLit(s) => JVal::Str(s.value.into_owned()),
        Value::NumberLit(n) => number(n.value, pos)?,
        Value::Array(a) => JVal::Array(
            a.elements
                .into_iter()
                .map(convert)
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => JVal::Object(
            o.properties
                .into_iter()
                .map(|p| {
                    let kpos = p.name.start();
                    let key = p.name.into_string();
                    Ok((key, kpos, convert(p.value)?))
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(JNode { pos, val })
}

/// A number token's text (JSON grammar: the options exclude the other forms).
fn number(text: &str, pos: usize) -> Result<JVal, SyntaxError> {
    if !text.contains(['.', 'e', 'E']) {
        if let Ok(i) = text.parse::<i64>() {
            return Ok(JVal::Int(i));
        }
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(JVal::Float(f)),
        _ => Err(SyntaxError {
            pos,
            msg: format!("number `{text}` out of range"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: JNode) -> Vec<(String, usize, JNode)> {
        match v.val {
            JVal::Object(m) => m,
            v => panic!("not an object: {v:?}"),
        }
    }

    #[test]
    fn keeps_order_duplicates_and_offsets() {
        let t = "{ \"b\": 1, /* c */ \"a\": [true, null, -2.5e1],\n // x\n \"b\": \"\\u00e9\\n\" }";
        let v = parse(t).unwrap();
        assert_eq!(v.pos, 0);
        let m = obj(v);
        let keys: Vec<&str> = m.iter().map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(m[0].2.val, JVal::Int(1));
        assert_eq!(m[2].2.val, JVal::Str("é\n".into()));
        assert_eq!(&t[m[2].1..m[2].1 + 3], "\"b\"");
        assert_eq!(&t[m[1].2.pos..m[1].2.pos + 5], "[true");
        let JVal::Array(a) = &m[1].2.val else {
            panic!("array")
        };
        assert_eq!(a[1].val, JVal::Null);
        assert_eq!(&t[a[1].pos..a[1].pos + 4], "null");
        assert_eq!(a[2].val, JVal::Float(-25.0));
    }

    #[test]
    fn integers_and_floats_stay_distinct() {
        let t = "[1, -0, 1.0, 1e2, 9223372036854775807, -9223372036854775808, 9223372036854775808]";
        let JVal::Array(a) = parse(t).unwrap().val else {
            panic!("array")
        };
        let v: Vec<JVal> = a.into_iter().map(|n| n.val).collect();
        assert_eq!(
            v,
            [
                JVal::Int(1),
                JVal::Int(0),
                JVal::Float(1.0),
                JVal::Float(100.0),
                JVal::Int(i64::MAX),
                JVal::Int(i64::MIN),
                JVal::Float(9_223_372_036_854_775_808.0),
            ]
        );
        let e = parse("[1, 1e400]").unwrap_err();
        assert_eq!((e.pos, e.msg.as_str()), (4, "number `1e400` out of range"));
    }

    #[test]
    fn json_c_extensions_are_accepted() {
        // Trailing commas and single-quoted strings, as json-c's non-strict mode.
        let m = obj(parse("{'a': 'x\\'y', \"b\": [1, 2,],\n}").unwrap());
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].0.as_str(), m[0].1), ("a", 1));
        assert_eq!(m[0].2.val, JVal::Str("x'y".into()));
        let JVal::Array(a) = &m[1].2.val else {
            panic!("array")
        };
        assert_eq!(a.len(), 2);
        // A file of comments only holds no value.
        let e = parse("// nothing\n").unwrap_err();
        assert_eq!(e.pos, 11);
        assert!(e.msg.contains("expected a value"), "{e:?}");
    }

    #[test]
    fn syntax_errors_have_offsets_and_the_crate_messages() {
        for (t, at, msg) in [
            (
                "{\"a\" 1}",
                5,
                "Expected colon after the string or word in object property",
            ),
            (
                "{\"a\":1} x",
                8,
                "Text cannot contain more than one JSON value",
            ),
            ("\"abc", 0, "Unterminated string literal"),
            ("/* x", 0, "Unterminated comment block"),
            ("[1 2]", 2, "Expected comma"),
            ("{a: 1}", 1, "Expected string for object property"),
            ("[0x10]", 1, "Hexadecimal numbers are not allowed"),
            ("[+1]", 1, "Unary plus on numbers is not allowed"),
            ("[NaN]", 1, "Unexpected token"),
            ("[1,,2]", 3, "Unexpected comma"),
            ("{\"a\": 1", 0, "Unterminated object"),
            ("", 0, "unexpected end of file, expected a value"),
        ] {
            let e = parse(t).unwrap_err();
            assert_eq!((e.pos, e.msg.as_str()), (at, msg), "{t}");
        }
    }

    #[test]
    fn nesting_is_limited_to_64_levels() {
        let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(parse(&nest(64)).is_ok());
        let e = parse(&nest(65)).unwrap_err();
        assert_eq!(
            (e.pos, e.msg.as_str()),
            (64, "nesting deeper than 64 levels")
        );
        let objs = "{\"a\":".repeat(70) + "1" + &"}".repeat(70);
        let e = parse(&objs).unwrap_err();
        assert_eq!(
            (e.pos, e.msg.as_str()),
            (64 * 5, "nesting deeper than 64 levels")
        );
        // Brackets inside strings and comments are not nesting.
        let quoted = format!(
            "[\"{}\", // {}\n '{}' /* {} */]",
            "[".repeat(99),
            "{".repeat(99),
            "[".repeat(99),
            "{".repeat(99)
        );
        assert!(parse(&quoted).is_ok(), "{:?}", parse(&quoted));
        // Unbalanced closers do not hide later depth.
        let e = parse(&("]]]]".to_string() + &nest(65))).unwrap_err();
        assert_eq!(e.msg, "nesting deeper than 64 levels");
    }

    #[test]
    fn deep_input_cannot_overflow_the_stack() {
        // The crate recurses per level down to 512; the pre-scan must stop a hostile
        // file first, and 64 levels must fit a small (512 KiB) stack.
        let r = std::thread::Builder::new()
            .stack_size(512 << 10)
            .spawn(|| {
                assert!(parse(&("[".repeat(64) + &"]".repeat(64))).is_ok());
                assert!(parse(&("{\"a\":".repeat(63) + "[1]" + &"}".repeat(63))).is_ok());
                let arrays = parse(&"[".repeat(1 << 20)).unwrap_err();
                let objects = parse(&"{\"a\":".repeat(1 << 18)).unwrap_err();
                let closed = parse(&("[".repeat(100_000) + &"]".repeat(100_000))).unwrap_err();
                [arrays.msg, objects.msg, closed.msg]
            })
            .unwrap()
            .join()
            .expect("no stack overflow");
        for m in r {
            assert_eq!(m, "nesting deeper than 64 levels");
        }
    }
}
