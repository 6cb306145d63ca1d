//! Maps field paths of a RON document (`materials[0].young`) to their line and column, so that
//! validation errors found after deserialisation still point into the file (CONVENTIONS.md:
//! errors carry file:line:col and the field path). A tolerant recursive-descent scan of the RON
//! grammar: syntax errors are ron's to report, this only records positions.

use std::collections::BTreeMap;

/// Positions (1-based line, column) of every field and list element, by path.
#[derive(Debug, Default)]
pub struct Locations {
    map: BTreeMap<String, (usize, usize)>,
}

impl Locations {
    pub fn scan(text: &str) -> Self {
        let mut s = Scanner {
            c: text.chars().collect(),
            i: 0,
            line: 1,
            col: 1,
            out: Locations::default(),
        };
        s.value("");
        s.out
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
                (Some('/'), Some('*')) => {
                    self.bump();
                    self.bump();
                    while !(self.peek().is_none()
                        || (self.peek() == Some('*') && self.peek2() == Some('/')))
                    {
                        self.bump();
                    }
                    self.bump();
                    self.bump();
                }
                _ => return,
            }
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
    fn record(&mut self, path: &str, pos: (usize, usize)) {
        self.out.map.entry(path.to_string()).or_insert(pos);
    }

    fn value(&mut self, path: &str) {
        self.skip_ws();
        let pos = (self.line, self.col);
        self.record(path, pos);
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
}
