//! A TOML document with positions, for two-step input validation.
//!
//! Scenario files are read in two steps: first into this tree, where every value
//! remembers the byte span it came from (and `--set KEY=VALUE` overrides are spliced
//! in with no span), then into typed, validated structures by the code that owns each
//! section. Every error can therefore name the file and line of the offending key,
//! or say that it came from the command line.

use crate::error::{line_of, InputError};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One value and where it was written (`None`: from the command line).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub span: Option<Range<usize>>,
    pub val: Val,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Node>),
    Table(BTreeMap<String, Node>),
}

impl Val {
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "a string",
            Val::Int(_) => "an integer",
            Val::Float(_) => "a float",
            Val::Bool(_) => "a boolean",
            Val::Array(_) => "an array",
            Val::Table(_) => "a table",
        }
    }
}

/// A parsed document: the tree plus the text and file name for error positions.
/// The keys of `[machine]` that say where the machine comes from (exactly one).
pub const MACHINE_SOURCES: [&str; 3] = ["preset", "file", "sysfs"];

#[derive(Clone, Debug)]
pub struct Doc {
    pub file: PathBuf,
    pub text: String,
    pub root: Node,
}

fn convert(v: &toml::Spanned<toml::de::DeValue<'_>>) -> Result<Node, String> {
    use toml::de::DeValue;
    let span = Some(v.span());
    let val = match v.get_ref() {
        DeValue::String(s) => Val::Str(s.to_string()),
        DeValue::Integer(i) => {
            let s = i.as_str().replace('_', "");
            let parsed = match i.radix() {
                10 => s.parse::<i64>(),
                r => i64::from_str_radix(&s, r),
            };
            Val::Int(parsed.map_err(|_| format!("integer `{}` out of range", i.as_str()))?)
        }
        DeValue::Float(f) => Val::Float(
            f.as_str()
                .replace('_', "")
                .parse::<f64>()
                .map_err(|_| format!("bad float `{}`", f.as_str()))?,
        ),
        DeValue::Boolean(b) => Val::Bool(*b),
        DeValue::Datetime(_) => return Err("datetimes are not accepted here".into()),
        DeValue::Array(a) => Val::Array(a.iter().map(convert).collect::<Result<_, _>>()?),
        DeValue::Table(t) => {
            let mut m = BTreeMap::new();
            for (k, v) in t.iter() {
                m.insert(k.get_ref().to_string(), convert(v)?);
            }
            Val::Table(m)
        }
    };
    Ok(Node { span, val })
}

impl Doc {
    /// Parse TOML text. Syntax errors carry the line.
    pub fn parse(text: &str, file: &Path) -> Result<Doc, InputError> {
        let parsed = toml::de::DeTable::parse(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            InputError::in_file(file, line, e.message().trim().to_string())
        })?;
        let mut m = BTreeMap::new();
        for (k, v) in parsed.get_ref().iter() {
            let node = convert(v).map_err(|msg| {
                InputError::in_file(file, Some(line_of(text, v.span().start)), msg)
            })?;
            m.insert(k.get_ref().to_string(), node);
        }
        Ok(Doc {
            file: file.to_path_buf(),
            text: text.to_string(),
            root: Node {
                span: None,
                val: Val::Table(m),
            },
        })
    }

    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<Doc, InputError> {
        let text = crate::input::read_text(path)?;
        Doc::parse(&text, path)
    }

    /// An error located at `node` (its line, or "from --set").
    pub fn err(&self, node: &Node, msg: impl Into<String>) -> InputError {
        match &node.span {
            Some(s) => InputError::in_file(&self.file, Some(line_of(&self.text, s.start)), msg),
            None => InputError::new(format!("--set: {}", msg.into())),
        }
    }

    /// An error about the file as a whole.
    pub fn err_file(&self, msg: impl Into<String>) -> InputError {
        InputError::in_file(&self.file, None, msg)
    }

    /// Apply `dotted.key=value` (value parsed as a TOML value; a bare word that is
    /// not valid TOML is taken as a string). Setting one of `machine.preset`,
    /// `machine.file`, `machine.sysfs` removes the other two.
    pub fn set(&mut self, assignment: &str) -> Result<(), InputError> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| InputError::new(format!("--set `{assignment}`: expected KEY=VALUE")))?;
        let key = key.trim();
        let value = value.trim();
        let val = match toml::de::DeValue::parse(value) {
            Ok(v) => {
                let mut n =
                    convert(&v).map_err(|m| InputError::new(format!("--set {key}: {m}")))?;
                strip_spans(&mut n);
                n.val
            }
            Err(_) => Val::Str(value.to_string()),
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(InputError::new(format!(
                "--set `{assignment}`: bad key `{key}`"
            )));
        }
        let mut cur = &mut self.root;
        for (i, p) in parts.iter().enumerate() {
            let Val::Table(t) = &mut cur.val else {
                return Err(InputError::new(format!(
                    "--set {key}: `{}` is not a table",
                    parts[..i].join(".")
                )));
            };
            if i + 1 == parts.len() {
                // `[machine]` takes one of preset / file / sysfs: setting one
                // replaces whichever the file gave.
                if i == 1 && parts[0] == "machine" && MACHINE_SOURCES.contains(p) {
                    t.retain(|k, _| !MACHINE_SOURCES.contains(&k.as_str()));
                }
                t.insert(
                    p.to_string(),
                    Node {
                        span: None,
                        val: val.clone(),
                    },
                );
                return Ok(());
            }
            cur = t.entry(p.to_string()).or_insert(Node {
                span: None,
                val: Val::Table(BTreeMap::new()),
            });
        }
        Ok(())
    }
}

fn strip_spans(n: &mut Node) {
    n.span = None;
    match &mut n.val {
        Val::Array(a) => a.iter_mut().for_each(strip_spans),
        Val::Table(t) => t.values_mut().for_each(strip_spans),
        _ => {}
    }
}

/// Typed access to a table node with unknown-key checking.
pub struct TableReader<'a> {
    pub doc: &'a Doc,
    pub node: &'a Node,
    pub name: String,
    table: &'a BTreeMap<String, Node>,
    used: std::cell::RefCell<Vec<&'a str>>,
}

impl<'a> TableReader<'a> {
    pub fn new(doc: &'a Doc, node: &'a Node, name: &str) -> Result<Self, InputError> {
        match &node.val {
            Val::Table(t) => Ok(TableReader {
                doc,
                node,
                name: name.to_string(),
                table: t,
                used: Default::default(),
            }),
            v => Err(doc.err(
                node,
                format!("`{name}` must be a table, found {}", v.type_name()),
            )),
        }
    }

    fn path(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }

    pub fn get(&self, key: &'a str) -> Option<&'a Node> {
        let n = self.table.get(key);
        if n.is_some() {
            self.used.borrow_mut().push(key);
        }
        n
    }

    pub fn keys(&self) -> impl Iterator<Item = &'a String> + 'a {
        self.table.keys()
    }

    pub fn str(&self, key: &'a str) -> Result<Option<&'a str>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match &n.val {
                Val::Str(s) => Ok(Some(s.as_str())),
                v => Err(self.at(
                    key,
                    n,
                    format!(
                        "`{}` must be a string, found {}",
                        self.path(key),
                        v.type_name()
                    ),
                )),
            },
        }
    }

    pub fn int(&self, key: &'a str) -> Result<Option<i64>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match &n.val {
                Val::Int(i) => Ok(Some(*i)),
                v => Err(self.at(
                    key,
                    n,
                    format!(
                        "`{}` must be an integer, found {}",
                        self.path(key),
                        v.type_name()
                    ),
                )),
            },
        }
    }

    /// A non-negative integer within `[lo, hi]`.
    pub fn uint(&self, key: &'a str, lo: u64, hi: u64) -> Result<Option<u64>, InputError> {
        match self.int(key)? {
            None => Ok(None),
            Some(i) if i >= lo as i64 && (i as u64) <= hi => Ok(Some(i as u64)),
            Some(i) => Err(self.at(
                key,
                self.table.get(key).unwrap_or(self.node),
                format!("`{}` = {i} is outside {lo}..={hi}", self.path(key)),
            )),
        }
    }

    pub fn bool(&self, key: &'a str) -> Result<Option<bool>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match &n.val {
                Val::Bool(b) => Ok(Some(*b)),
                v => Err(self.at(
                    key,
                    n,
                    format!(
                        "`{}` must be true or false, found {}",
                        self.path(key),
                        v.type_name()
                    ),
                )),
            },
        }
    }

    pub fn table(&self, key: &'a str) -> Result<Option<TableReader<'a>>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => TableReader::new(self.doc, n, &self.path(key)).map(Some),
        }
    }

    pub fn array(&self, key: &'a str) -> Result<Option<&'a [Node]>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match &n.val {
                Val::Array(a) => Ok(Some(a.as_slice())),
                v => Err(self.at(
                    key,
                    n,
                    format!(
                        "`{}` must be an array, found {}",
                        self.path(key),
                        v.type_name()
                    ),
                )),
            },
        }
    }

    /// An error located at `key` (or at the table when absent).
    pub fn err(&self, key: &str, msg: impl Into<String>) -> InputError {
        self.at(key, self.table.get(key).unwrap_or(self.node), msg)
    }

    /// An error located at `node`, about `key` of this table.
    fn at(&self, key: &str, node: &Node, msg: impl Into<String>) -> InputError {
        self.doc.err(node, msg).with_key(self.path(key))
    }

    /// Reject keys nobody asked for.
    pub fn finish(&self) -> Result<(), InputError> {
        let used = self.used.borrow();
        for (k, n) in self.table {
            if !used.contains(&k.as_str()) {
                return Err(self.at(k, n, format!("unknown key `{}`", self.path(k))));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_give_lines_and_unknown_keys_are_rejected() {
        let doc = Doc::parse(
            "[run]\nseed = 3\n\n[machine]\npreset = 5\nbogus = 1\n",
            Path::new("s.toml"),
        )
        .unwrap();
        let root = TableReader::new(&doc, &doc.root, "").unwrap();
        let run = root.table("run").unwrap().unwrap();
        assert_eq!(run.int("seed").unwrap(), Some(3));
        run.finish().unwrap();
        let m = root.table("machine").unwrap().unwrap();
        let e = m.str("preset").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml:5: `machine.preset` must be a string, found an integer"
        );
        let e = m.finish().unwrap_err();
        assert_eq!(e.to_string(), "s.toml:6: unknown key `machine.bogus`");
    }

    #[test]
    fn set_overrides_and_creates_tables() {
        let mut doc = Doc::parse("[machine]\npreset = \"xeon-88\"\n", Path::new("s.toml")).unwrap();
        doc.set("machine.preset=juno-r0").unwrap();
        doc.set("run.seed=7").unwrap();
        doc.set("kernel.features=[\"NO_SIS_PROP\"]").unwrap();
        let root = TableReader::new(&doc, &doc.root, "").unwrap();
        assert_eq!(
            root.table("machine")
                .unwrap()
                .unwrap()
                .str("preset")
                .unwrap(),
            Some("juno-r0")
        );
        assert_eq!(
            root.table("run").unwrap().unwrap().int("seed").unwrap(),
            Some(7)
        );
        let e = root.table("run").unwrap().unwrap().str("seed").unwrap_err();
        assert!(e.to_string().starts_with("--set: "), "{e}");
        assert!(doc.set("novalue").is_err());
        assert!(doc.set("machine.preset.x=1").is_err());
        // A machine source replaces the file's.
        doc.set("machine.file=host.toml").unwrap();
        let m = TableReader::new(&doc, &doc.root, "").unwrap();
        let m = m.table("machine").unwrap().unwrap();
        assert_eq!(m.str("preset").unwrap(), None);
        assert_eq!(m.str("file").unwrap(), Some("host.toml"));
    }

    #[test]
    fn syntax_errors_have_lines() {
        let e = Doc::parse("a = 1\nb = \n", Path::new("x.toml")).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }
}
