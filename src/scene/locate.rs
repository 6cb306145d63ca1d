//! Maps field paths of a RON document (`materials[0].young`) to their line and column, so that
//! validation errors found after deserialisation still point into the file (CONVENTIONS.md:
//! errors carry file:line:col and the field path). A tolerant recursive-descent scan of the RON
//! grammar: syntax errors are ron's to report, this only records positions.

use crate::error::Error;
use std::collections::BTreeMap;

/// Deepest nesting of brackets the scanner (and ron's parser, given the same limit) follows:
/// both descend recursively, and a document of 100 000 `[` would overflow the stack. Scene
/// files nest about 5 deep.
pub const MAX_DEPTH: usize = 128;

/// Most paths recorded: a document of millions of list elements would otherwise cost ~100
/// bytes of map per element (a 16 MiB scene: over 1 GB). Later elements are located by their
/// closest recorded ancestor.
const MAX_PATHS: usize = 1 << 18;

type Pos = (usize, usize);

/// Positions (1-based line, column) of every field and list element, by path.
#[derive(Debug, Default)]
pub struct Locations {
    map: BTreeMap<String, Pos>,
    /// Where each recorded value ends (just after its last character).
    ends: BTreeMap<String, Pos>,
    /// Second occurrences of a field in one struct: path → position of the repeat.
    dups: BTreeMap<String, Pos>,
    /// The bracket that exceeds [`MAX_DEPTH`], if any (the scan stops there).
    pub too_deep: Option<Pos>,
    /// The opening `/*` of a block comment that never closes, if any.
    pub unclosed_comment: Option<Pos>,
}

impl Locations {
    pub fn scan(text: &str) -> Self {
        let mut s = Scanner {
            c: text.chars().collect(),
            i: 0,
            line: 1,
            col: 1,
            depth: 0,
            out: Locations::default(),
        };
        s.value("");
        s.out
    }

    /// The innermost recorded value whose text spans (line, col), its end excluded: the
    /// struct a missing field belongs to (ron reports it at the struct's closing bracket, which
    /// is past the end of its last field's value).
    pub fn enclosing(&self, line: usize, col: usize) -> Option<&str> {
        let pos = (line, col);
        self.map
            .iter()
            .filter(|(k, &start)| start <= pos && self.ends.get(*k).is_some_and(|&e| pos < e))
            .max_by(|a, b| a.1.cmp(b.1).then(a.0.len().cmp(&b.0.len())))
            .map(|(k, _)| k.as_str())
    }

    /// The repeated field `field` of the struct at `outer` (or any struct, when `outer` has
    /// none), at or before (line, col): its path and position.
    pub fn duplicate(
        &self,
        outer: Option<&str>,
        field: &str,
        line: usize,
        col: usize,
    ) -> Option<(&str, Pos)> {
        self.dups
            .iter()
            .filter(|(k, &p)| {
                p <= (line, col)
                    && match outer {
                        Some(o) if !o.is_empty() => k.as_str() == format!("{o}.{field}"),
                        _ => k.as_str() == field || k.ends_with(&format!(".{field}")),
                    }
            })
            .max_by_key(|(_, &p)| p)
            .map(|(k, &p)| (k.as_str(), p))
    }

    /// The deepest path recorded at or before (line, col): the field a parse error is in.
    pub fn path_at(&self, line: usize, col: usize) -> Option<&str> {
        self.map
            .iter()
            .filter(|(_, &p)| p <= (line, col))
            .max_by(|a, b| a.1.cmp(b.1).then(a.0.len().cmp(&b.0.len())))
            .map(|(k, _)| k.as_str())
            .filter(|k| !k.is_empty())
    }

    /// Whether `path` itself was recorded.
    pub fn has(&self, path: &str) -> bool {
        self.map.contains_key(path)
    }

    /// Position of `path`, or of its closest recorded ancestor, or (1, 1).
    pub fn find(&self, path: &str) -> (usize, usize) {
        let mut p = path.to_string();
        loop {
            if let Some(&pos) = self.map.get(&p) {
                return pos;
            }
            match p.rfind(['.', '[']) {
                Some(k) => p.truncate(k),
                None => return (1, 1),
            }
        }
    }
}

struct Scanner {
    c: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    /// Brackets open around the current position.
    depth: usize,
    out: Locations,
}

impl Scanner {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }
    fn peek2(&self) -> Option<char> {
        self.c.get(self.i + 1).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let ch = self.peek()?;
        self.i += 1;
        if ch == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(ch)
    }
    fn skip_ws(&mut self) {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => self.block_comment(),
                _ => return,
            }
        }
    }
    /// A block comment; they nest, as in ron (`/* a /* b */ c */`).
    fn block_comment(&mut self) {
        let open = (self.line, self.col);
        let mut nest = 0usize;
        loop {
            match (self.peek(), self.peek2()) {
                (None, _) => {
                    self.out.unclosed_comment.get_or_insert(open);
                    return;
                }
                (Some('/'), Some('*')) => {
                    nest += 1;
                    self.bump();
                }
                (Some('*'), Some('/')) => {
                    nest -= 1;
                    self.bump();
                    if nest == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn ident(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c.is_alphanumeric() || c == '_' {
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        s
    }
    fn record(&mut self, path: &str, pos: Pos) {
        if self.out.map.len() < MAX_PATHS {
            self.out.map.entry(path.to_string()).or_insert(pos);
        }
    }

    /// Open a bracket: false (and the scan ends here) beyond [`MAX_DEPTH`].
    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.out.too_deep.get_or_insert((self.line, self.col));
            self.i = self.c.len(); // every loop of the scan ends at the end of the text
            return false;
        }
        true
    }

    fn value(&mut self, path: &str) {
        self.skip_ws();
        let pos = (self.line, self.col);
        self.record(path, pos);
        self.value_body(path);
        if self.out.ends.len() < MAX_PATHS && self.out.map.contains_key(path) {
            self.out
                .ends
                .entry(path.to_string())
                .or_insert((self.line, self.col));
        }
    }

    fn value_body(&mut self, path: &str) {
        match self.peek() {
            Some('(') => self.paren(path),
            Some('[') => self.list(path, ']'),
            Some('{') => self.list(path, '}'),
            Some('"') => self.string(),
            Some('\'') => {
                self.bump();
                while !matches!(self.peek(), None | Some('\'')) {
                    if self.bump() == Some('\\') {
                        self.bump();
                    }
                }
                self.bump();
            }
            Some(c) if c.is_alphabetic() || c == '_' => {
                let id = self.ident();
                if id == "r" && matches!(self.peek(), Some('"') | Some('#')) {
                    self.raw_string();
                    return;
                }
                self.skip_ws();
                if self.peek() == Some('(') {
                    self.paren(path);
                }
            }
            Some(_) => {
                // number or anything else: up to a delimiter
                while let Some(c) = self.peek() {
                    if c == ',' || c == ')' || c == ']' || c == '}' || c == ':' || c.is_whitespace()
                    {
                        break;
                    }
                    self.bump();
                }
            }
            None => {}
        }
    }

    fn string(&mut self) {
        self.bump();
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '"' => break,
                _ => {}
            }
        }
    }

    fn raw_string(&mut self) {
        let mut hashes = 0;
        while self.peek() == Some('#') {
            hashes += 1;
            self.bump();
        }
        self.bump(); // opening quote
        'outer: while let Some(c) = self.bump() {
            if c == '"' {
                for k in 0..hashes {
                    if self.c.get(self.i + k) != Some(&'#') {
                        continue 'outer;
                    }
                }
                for _ in 0..hashes {
                    self.bump();
                }
                break;
            }
        }
    }

    /// Is the next token `ident :` (a struct field), not `ident ::`?
    fn at_field(&self) -> bool {
        let mut k = self.i;
        match self.c.get(k) {
            Some(c) if c.is_alphabetic() || *c == '_' => {}
            _ => return false,
        }
        while matches!(self.c.get(k), Some(c) if c.is_alphanumeric() || *c == '_') {
            k += 1;
        }
        while matches!(self.c.get(k), Some(c) if c.is_whitespace()) {
            k += 1;
        }
        self.c.get(k) == Some(&':') && self.c.get(k + 1) != Some(&':')
    }

    fn paren(&mut self, path: &str) {
        if !self.enter() {
            return;
        }
        self.paren_body(path);
        self.depth -= 1;
    }

    fn paren_body(&mut self, path: &str) {
        self.bump();
        let mut idx = 0;
        loop {
            self.skip_ws();
            match self.peek() {
                None => return,
                Some(')') => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            if self.at_field() {
                let pos = (self.line, self.col);
                let name = self.ident();
                let sub = if path.is_empty() {
                    name
                } else {
                    format!("{path}.{name}")
                };
                if self.out.map.contains_key(&sub) && self.out.dups.len() < MAX_PATHS {
                    self.out.dups.entry(sub.clone()).or_insert(pos);
                }
                self.record(&sub, pos);
                self.skip_ws();
                self.bump(); // ':'
                self.value(&sub);
            } else {
                let before = self.i;
                self.value(&format!("{path}[{idx}]"));
                idx += 1;
                if self.i == before {
                    self.bump(); // make progress on garbage
                }
            }
            self.skip_ws();
            if self.peek() == Some(',') {
                self.bump();
            }
        }
    }

    fn list(&mut self, path: &str, close: char) {
        if !self.enter() {
            return;
        }
        self.list_body(path, close);
        self.depth -= 1;
    }

    fn list_body(&mut self, path: &str, close: char) {
        self.bump();
        let mut idx = 0;
        loop {
            self.skip_ws();
            match self.peek() {
                None => return,
                Some(c) if c == close => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            let before = self.i;
            self.value(&format!("{path}[{idx}]"));
            idx += 1;
            self.skip_ws();
            if self.peek() == Some(':') {
                self.bump();
                self.value(&format!("{path}[{}]", idx - 1));
            }
            if self.i == before {
                self.bump();
            }
            self.skip_ws();
            if self.peek() == Some(',') {
                self.bump();
            }
        }
    }
}

/// Where a source stands in the scene file, for errors found after parsing.
#[derive(Clone, Debug)]
pub struct SourceLoc {
    pub file: String,
    pub line: usize,
    pub col: usize,
    /// `spheres[k]`.
    pub path: String,
}

impl SourceLoc {
    pub fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::Scene {
            file: self.file.clone(),
            line: self.line,
            col: self.col,
            msg: format!("{}: {msg}", self.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_fields() {
        let t = "Scene(\n  // comment ( [\n  materials: [\n    Frict(name: \"a\\\"(\", young: -1),\n    Frict(\n      name: \"b\",\n      young: 2)\n  ],\n  gravity: (0, 0, -9.81),\n)";
        let l = Locations::scan(t);
        assert_eq!(l.find("materials[0].young"), (4, 25));
        assert_eq!(l.find("materials[1].young"), (7, 7));
        assert_eq!(l.find("materials[1]"), (5, 5));
        assert_eq!(l.find("gravity"), (9, 3));
        assert_eq!(l.find("materials[1].nonexistent"), (5, 5));
        assert_eq!(l.find("zzz"), (1, 1));
    }

    /// Nesting beyond MAX_DEPTH stops the scan at the bracket that exceeds it (no recursion
    /// without limit: 100 000 brackets overflowed the stack).
    #[test]
    fn depth_is_limited() {
        let t = format!("S(a: {}", "[".repeat(100_000));
        let l = Locations::scan(&t);
        // `(` is level 1, the k-th `[` (column 5 + k) level k + 1
        assert_eq!(l.too_deep, Some((1, 5 + MAX_DEPTH)));
        let ok = format!("{}{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(Locations::scan(&ok).too_deep, None);
    }

    #[test]
    fn comments_nest_and_unclosed_ones_are_found() {
        let l = Locations::scan("S(\n a: 1, /* x /* y */ z */ b: 2,\n  /* open\n c: 3)");
        assert_eq!(l.find("b"), (2, 26));
        assert_eq!(l.unclosed_comment, Some((3, 3)));
    }

    /// The struct around a position (a missing field's), and a repeated field.
    #[test]
    fn enclosing_struct_and_duplicates() {
        let t = "S(\n w: [W(p: (1, 2), n: (0, 0, 1))],\n k: 1,\n k: 2)";
        let l = Locations::scan(t);
        // the closing bracket of W(...) (line 2, col 31): inside w[0], past its field n
        assert_eq!(l.enclosing(2, 31), Some("w[0]"));
        assert_eq!(l.duplicate(Some(""), "k", 4, 7), Some(("k", (4, 2))));
    }
}
