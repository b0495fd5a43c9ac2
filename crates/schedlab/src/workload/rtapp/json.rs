//! A small JSON reader that keeps what rt-app files need and `serde_json::Value` loses:
//! object keys in file order (rt-app events run in the order they are written),
//! duplicate keys (kept, so the caller decides), and the byte offset of every value
//! (so an error can name its line).
//!
//! It accepts strict JSON (RFC 8259) plus the C (`/* */`) and C++ (`//`) comments
//! that rt-app's parser, json-c, accepts in its default non-strict mode. Nesting is
//! limited to 64 levels so a hostile file cannot overflow the stack.

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
    pub fn describe(&self) -> String {
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

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

/// Parse a whole document (one value, then only whitespace and comments).
pub fn parse(text: &str) -> Result<JNode, SyntaxError> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws()?;
    if p.i < p.s.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(v)
}

impl P<'_> {
    fn err(&self, msg: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos: self.i,
            msg: msg.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Skip whitespace and comments.
    fn ws(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.i += 1,
                Some(b'/') => match self.s.get(self.i + 1) {
                    Some(b'/') => {
                        while let Some(c) = self.peek() {
                            if c == b'\n' {
                                break;
                            }
                            self.i += 1;
                        }
                    }
                    Some(b'*') => {
                        let start = self.i;
                        self.i += 2;
                        loop {
                            if self.i + 1 >= self.s.len() {
                                self.i = start;
                                return Err(self.err("unterminated /* comment"));
                            }
                            if self.s[self.i] == b'*' && self.s[self.i + 1] == b'/' {
                                self.i += 2;
                                break;
                            }
                            self.i += 1;
                        }
                    }
                    _ => return Err(self.err("unexpected `/`")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<JNode, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting deeper than 64 levels"));
        }
        self.ws()?;
        let pos = self.i;
        let val = match self.peek() {
            None => return Err(self.err("unexpected end of file, expected a value")),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws()?;
                if self.peek() == Some(b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws()?;
                        let kpos = self.i;
                        if self.peek() != Some(b'"') {
                            return Err(self.err("expected a string key"));
                        }
                        let k = self.string()?;
                        self.ws()?;
                        if self.peek() != Some(b':') {
                            return Err(self.err("expected `:` after an object key"));
                        }
                        self.i += 1;
                        let v = self.value(depth + 1)?;
                        members.push((k, kpos, v));
                        self.ws()?;
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(self.err("expected `,` or `}` in an object")),
                        }
                    }
                }
                JVal::Object(members)
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws()?;
                if self.peek() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.ws()?;
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(self.err("expected `,` or `]` in an array")),
                        }
                    }
                }
                JVal::Array(items)
            }
            Some(b'"') => JVal::Str(self.string()?),
            Some(b't') => self.word("true", JVal::Bool(true))?,
            Some(b'f') => self.word("false", JVal::Bool(false))?,
            Some(b'n') => self.word("null", JVal::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(c) => return Err(self.err(format!("unexpected character `{}`", c as char))),
        };
        Ok(JNode { pos, val })
    }

    fn word(&mut self, w: &str, v: JVal) -> Result<JVal, SyntaxError> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(self.err("unexpected word (expected true, false or null)"))
        }
    }

    fn number(&mut self) -> Result<JVal, SyntaxError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.i;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.i += 1;
            }
            p.i - s
        };
        if digits(self) == 0 {
            return Err(self.err("expected digits"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.err("expected digits after `.`"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            float = true;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("expected exponent digits"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII digits");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(JVal::Int(i));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(JVal::Float(f)),
            _ => Err(SyntaxError {
                pos: start,
                msg: format!("number `{text}` out of range"),
            }),
        }
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(h)
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.i;
        self.i += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                self.i = start;
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or_else(|| self.err("unterminated string"))?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut u = self.hex4()?;
                            if (0xD800..0xDC00).contains(&u) && self.s[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("bad surrogate pair"));
                                }
                                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            char::from_u32(u).ok_or_else(|| self.err("bad \\u escape"))?
                        }
                        _ => return Err(self.err("bad escape in string")),
                    };
                    let mut b = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                c if c < 0x20 => return Err(self.err("control character in string")),
                c => out.push(c),
            }
        }
        // The input is a &str and escapes produce valid UTF-8.
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_duplicates_and_offsets() {
        let t = "{ \"b\": 1, /* c */ \"a\": [true, null, -2.5e1],\n // x\n \"b\": \"\\u00e9\\n\" }";
        let v = parse(t).unwrap();
        let JVal::Object(m) = v.val else {
            panic!("object")
        };
        let keys: Vec<&str> = m.iter().map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(m[0].2.val, JVal::Int(1));
        assert_eq!(m[2].2.val, JVal::Str("é\n".into()));
        assert_eq!(&t[m[2].1..m[2].1 + 3], "\"b\"");
        let JVal::Array(a) = &m[1].2.val else {
            panic!("array")
        };
        assert_eq!(a[2].val, JVal::Float(-25.0));
    }

    #[test]
    fn syntax_errors_have_offsets() {
        for (t, at) in [
            ("{\"a\" 1}", 5),
            ("[1,]", 3),
            ("{\"a\":1} x", 8),
            ("\"abc", 0),
            ("/* x", 0),
            ("[01x]", 3),
            ("", 0),
        ] {
            let e = parse(t).unwrap_err();
            assert_eq!(e.pos, at, "{t}: {e:?}");
        }
        let deep = "[".repeat(100);
        assert!(parse(&deep).unwrap_err().msg.contains("nesting"));
    }
}
